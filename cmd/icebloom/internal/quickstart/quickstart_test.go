package quickstart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramName: the "try it yourself" command starts as this process
// was started, or with go run when go run built it (its binary is gone
// once it ends).
func TestProgramName(t *testing.T) {
	module := t.TempDir()
	os.MkdirAll(filepath.Join(module, "cmd", "icebloom"), 0o755)
	os.WriteFile(filepath.Join(module, "cmd", "icebloom", "main.go"), []byte("package main\n"), 0o644)
	goRunExe := filepath.Join(os.TempDir(), "go-build1234567", "b001", "exe", "icebloom")
	cached := filepath.Join("/root/.cache/go-build/1d", strings.Repeat("1d6af7dc", 8)+"-d", "icebloom")
	for _, c := range []struct {
		arg0, exe, wd, version, want string
	}{
		{goRunExe, goRunExe, module, "(devel)", "go run ./cmd/icebloom"},                  // the README's step
		{goRunExe, goRunExe, t.TempDir(), "(devel)", "go run " + goRunPackage},            // go run from elsewhere in the module
		{goRunExe, goRunExe, t.TempDir(), "v0.2.0", "go run " + goRunPackage + "@v0.2.0"}, // go run pkg@version
		{"icebloom", "/usr/local/bin/icebloom", module, "v0.2.0", "icebloom"},
		{"./icebloom", filepath.Join(module, "icebloom"), module, "(devel)", "./icebloom"},
		{"/opt/ice bloom/icebloom", "/opt/ice bloom/icebloom", module, "", "'/opt/ice bloom/icebloom'"},
		{"/tmp/exe/icebloom", "/tmp/exe/icebloom", module, "", "/tmp/exe/icebloom"}, // "exe" alone is no go run
		{cached, cached, module, "(devel)", "go run ./cmd/icebloom"},                // go run's cached link (Go 1.24 on)
	} {
		if got := programName(c.arg0, c.exe, c.wd, c.version); got != c.want {
			t.Errorf("programName(%q, %q, %q, %q) = %q, want %q", c.arg0, c.exe, c.wd, c.version, got, c.want)
		}
	}
	for in, want := range map[string]string{"abc": "abc", "user_id = 5": "'user_id = 5'", "it's": `'it'\''s'`, "": "''",
		"file:/a/b.db": "file:/a/b.db"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
