package main

import (
	"cmp"
	"context"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// modulePath is icebloom's module, which version reports.
const modulePath = "github.com/icebloom/icebloom"

// VersionCmd is `icebloom version` (and `icebloom --version`).
type VersionCmd struct{}

// VersionOutput is the JSON output of version: what runtime/debug's build
// information says about the binary.
type VersionOutput struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	// Revision, Time and Modified are the VCS stamp go build records when
	// it builds from a checkout (empty when it did not, as under go test).
	Revision  string `json:"vcs_revision,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	Modified  bool   `json:"vcs_modified"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// buildVersion reads the binary's build information.
func buildVersion() VersionOutput {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionOf(info)
}

// versionOf is the version build information info describes; nil is a
// binary built without (module support), whose version is unknown.
func versionOf(info *debug.BuildInfo) VersionOutput {
	v := VersionOutput{Module: modulePath, Version: "(unknown)", GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		return v
	}
	if info.GoVersion != "" {
		v.GoVersion = info.GoVersion
	}
	// go build of a checkout records "(devel)" or a pseudo-version from
	// the VCS; go install module@version the version.
	v.Version = cmp.Or(info.Main.Version, "(devel)")
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified, _ = strconv.ParseBool(s.Value)
		}
	}
	return v
}

// text is the version as one line: "icebloom v0.1.0 (abc123…, 2026-12-03T…,
// modified) go1.26 linux/amd64".
func (v VersionOutput) text() string {
	var vcs []string
	if v.Revision != "" {
		vcs = append(vcs, "revision "+v.Revision)
	}
	if v.Time != "" {
		vcs = append(vcs, v.Time)
	}
	if v.Modified {
		vcs = append(vcs, "modified")
	}
	s := "icebloom " + v.Version
	if len(vcs) > 0 {
		s += " (" + strings.Join(vcs, ", ") + ")"
	}
	return s + " " + v.GoVersion + " " + v.Platform
}

func (c *VersionCmd) run(_ context.Context, e *env) error {
	v := buildVersion()
	if e.json {
		return e.printJSON(v)
	}
	e.printf("%s\n", v.text())
	return nil
}
