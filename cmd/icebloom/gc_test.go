package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/icebloom/icebloom/maintenance"
)

// TestGC runs gc against the embedded catalog: after a second build of the
// quickstart table, the first index file is unreferenced; gc keeps it
// through the grace period, a dry run reports it, --older-than 0s deletes it,
// and the table's index still reads.
func TestGC(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir) // no ~/.iceberg-go.yaml: the embedded catalog
	stdout, stderr, code := icebloom(t, "--output", "json", "quickstart", "--files", "2", "--rows", "20")
	if code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	var qs QuickstartOutput
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatal(err)
	}
	first := qs.Build.StatisticsPath
	if _, stderr, code := icebloom(t, "build", "demo.events", "--columns", "user_id"); code != 0 {
		t.Fatalf("build: %s", stderr)
	}

	gcJSON := func(args ...string) maintenance.GCSummary {
		t.Helper()
		stdout, stderr, code := icebloom(t, append([]string{"gc", "demo.events", "--output", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("gc %v exited %d: %s", args, code, stderr)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
			t.Fatalf("gc output %q: %v", stdout, err)
		}
		for _, key := range []string{"scanned", "referenced", "deleted", "kept", "failed", "bytes_deleted", "dry_run"} {
			if _, ok := raw[key]; !ok {
				t.Errorf("gc JSON lacks %q: %s", key, stdout)
			}
		}
		var sum maintenance.GCSummary
		json.Unmarshal([]byte(stdout), &sum)
		return sum
	}
	sum := gcJSON("--dry-run")
	if !sum.DryRun || sum.Scanned != 2 || sum.Referenced != 1 || len(sum.Deleted) != 0 ||
		len(sum.Kept) != 1 || sum.Kept[0] != first {
		t.Fatalf("dry run, default grace: %+v", sum)
	}
	sum = gcJSON("--dry-run", "--older-than", "0s", "--force")
	if !sum.DryRun || len(sum.Deleted) != 1 || sum.Deleted[0] != first || sum.BytesDeleted == 0 || !exists(first) {
		t.Fatalf("dry run, no grace: %+v", sum)
	}

	stdout, stderr, code = icebloom(t, "gc", "demo.events", "--older-than", "3d")
	if code != 0 || !strings.Contains(stdout, "kept (inside the grace period) "+first) ||
		!strings.Contains(stdout, "demo.events: 2 index files, 1 referenced, 1 kept inside the grace period, deleted 0") {
		t.Fatalf("gc --older-than 3d: %d %q %s", code, stdout, stderr)
	}
	// Under the minimum grace, gc refuses unless forced: it could delete a
	// file a run in flight is about to commit.
	stdout, stderr, code = icebloom(t, "gc", "demo.events", "--older-than", "0s")
	if code != 1 || !strings.Contains(stderr, "shorter than 1h0m0s") || !exists(first) {
		t.Fatalf("gc --older-than 0s without --force: %d %q %s", code, stdout, stderr)
	}
	stdout, stderr, code = icebloom(t, "gc", "demo.events", "--older-than", "0s", "--force")
	if code != 0 || !strings.Contains(stdout, "deleted "+first+"\n") || !strings.Contains(stdout, "deleted 1 (") || exists(first) {
		t.Fatalf("gc --older-than 0s: %d %q %s", code, stdout, stderr)
	}

	stdout, _, code = icebloom(t, "--output", "json", "inspect", "demo.events")
	var in InspectOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &in) != nil || len(in.Segments) != 1 || len(in.IndexErrors) != 0 ||
		in.Columns[0].Covered != 2 {
		t.Fatalf("inspect after gc: %d %s", code, stdout)
	}
	if sum := gcJSON("--older-than", "0s", "--force"); sum.Scanned != 1 || sum.Referenced != 1 || len(sum.Deleted) != 0 {
		t.Fatalf("gc again: %+v", sum)
	}
}

func exists(loc string) bool {
	_, err := os.Stat(strings.TrimPrefix(loc, "file://"))
	return err == nil
}

func TestGCBadInput(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gc", "db.t", "--older-than", "3x"}, 2, `"3x"`},
		{[]string{"gc", "db.t", "--older-than=-1h"}, 2, `"-1h"`},
		{[]string{"gc", "db.t", "--older-than", "d"}, 2, `"d"`},
		{[]string{"gc"}, 2, "TABLE is required"},
		{[]string{"gc", "nonamespace"}, 1, "nonamespace"},
		{[]string{"gc", "db.missing"}, 1, "db.missing"},
	}
	for _, c := range cases {
		run := icebloom
		if c.code == 2 {
			run = icebloomTTY // the usage error as text
		}
		_, stderr, code := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestParseAge(t *testing.T) {
	good := map[string]time.Duration{
		"0":     0,
		"0s":    0,
		"90m":   90 * time.Minute,
		"36h":   36 * time.Hour,
		"1h30m": 90 * time.Minute,
		"3d":    72 * time.Hour,
		"0d":    0,
		"1.5d":  36 * time.Hour,
		"2d12h": 60 * time.Hour,
		"1d30m": 24*time.Hour + 30*time.Minute,
		" 7d ":  7 * 24 * time.Hour,
		"+1h":   time.Hour,
		"100ms": 100 * time.Millisecond,
		"365d":  365 * 24 * time.Hour,
		"0.25d": 6 * time.Hour,
	}
	for s, want := range good {
		got, err := parseAge(s)
		if err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "3", "3x", "-1h", "-3d", "3d-1h", "1e3d", "infd", "nand", "3dd", "1d2d",
		"d3", "3 d", "999999999d", "1.5", "0x10d"} {
		if got, err := parseAge(s); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", s, got)
		} else if !strings.Contains(err.Error(), `"`+s+`"`) {
			t.Errorf("parseAge(%q): error %q does not name the value", s, err)
		}
	}
}
