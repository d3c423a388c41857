package main

import (
	"strings"
	"testing"
)

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{plural(1, "file"), "1 file"}, {plural(2, "file"), "2 files"}, {plural(0, "file"), "0 files"},
		{plural(int64(1), "data file"), "1 data file"}, {plural(int64(-1), "row"), "-1 rows"},
		{plural(1, "entry"), "1 entry"}, {plural(3, "entry"), "3 entries"}, {plural(2, "day"), "2 days"},
		{plural(2, "match"), "2 matches"}, {plural(2, "box"), "2 boxes"}, {plural(2, "bus"), "2 buses"},
		{plural(1, "file holds", "files hold"), "1 file holds"}, {plural(5, "file holds", "files hold"), "5 files hold"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// TestSingularInTextOutput: text output counts one thing in the singular —
// maintain, rebuild, inspect, verify and sync of a table of one data file.
func TestSingularInTextOutput(t *testing.T) {
	it := newIDTable(t, 1)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"maintain", "db.ids"}, []string{"db.ids: synced 1 new data file (0 covered already)"}},
		{[]string{"rebuild", "db.ids"}, []string{"indexed 1 of 1 data file of db.ids", "  1 filter, ", " 3 distinct values, ", "(1 segment in all)"}},
		{[]string{"inspect", "db.ids"}, []string{": 1 live data file\n", "1 segment holds index entries\n", ", 1 group): 1 entry, 0 blobs of other tools, ",
			"hashed as long): 1 file covered, 0 not covered", "fpp 0.01\n"}},
		{[]string{"verify", "db.ids", "--sample", "1"}, []string{"snapshot ", ", 1 index file\n", "(format v2, 1 group, 1 filter, ", "1 live file covered",
			"1 data file re-read (seed "}},
		{[]string{"sync", "db.ids"}, []string{"  1 data file was already covered; "}},
	} {
		stdout, stderr, code := icebloom(t, it.args(c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, stdout)
			}
		}
	}
}
