package main

import (
	"strings"
	"testing"
)

// TestUsageErrorsAreJSON: when stderr is no terminal a usage error is a
// JSON record like every other message — level ERROR, the command, the
// error, the usage in a field — one per problem, and nothing else.
func TestUsageErrorsAreJSON(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args     []string
		command  string
		problems []string
	}{
		{[]string{"build"}, "build", []string{"TABLE is required"}},
		{[]string{"build", "db.t", "--fpp", "0", "--parallel", "0"}, "build", []string{"--fpp 0: want", "--parallel 0: want"}},
		{[]string{"--output", "yaml", "inspect", "db.t"}, "inspect", []string{`--output "yaml": want text or json`}},
		{nil, "", []string{"a command is required"}},
	} {
		stdout, stderr, code := icebloom(t, c.args...)
		records := logRecords(t, stderr) // fails on a line that is not JSON
		bad := find(records, "bad command line")
		if code != 2 || stdout != "" || len(bad) != len(c.problems) || len(records) != len(bad) {
			t.Errorf("%v: exit %d, %q\n%s", c.args, code, stdout, stderr)
			continue
		}
		for i, r := range bad {
			if r["level"] != "ERROR" || r["command"] != c.command || !strings.HasPrefix(r["error"].(string), c.problems[i]) {
				t.Errorf("%v: record %v, want %q", c.args, r, c.problems[i])
			}
			if usage, _ := r["usage"].(string); c.command == "build" && !strings.HasPrefix(usage, "Usage: icebloom build") {
				t.Errorf("%v: usage %q", c.args, usage)
			}
		}
	}
}

// TestHelpCommand: icebloom help CMD is icebloom CMD --help; icebloom help
// is icebloom --help.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"scan", "columns", "list"} {
		want, _, _ := icebloom(t, cmd, "--help")
		got, stderr, code := icebloom(t, "help", cmd)
		if code != 0 || got != want || !strings.HasPrefix(got, "icebloom "+cmd+": ") {
			t.Errorf("help %s: exit %d, %q (%s); want %q", cmd, code, got, stderr, want)
		}
	}
	want, _, _ := icebloom(t, "--help")
	if got, _, code := icebloom(t, "help"); code != 0 || got != want {
		t.Errorf("help: exit %d, %q", code, got)
	}
	if _, stderr, code := icebloom(t, "help", "frobnicate"); code != 2 || !strings.Contains(stderr, "frobnicate") {
		t.Errorf("help frobnicate: exit %d, %s", code, stderr)
	}
}
