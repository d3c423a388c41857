package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// icebloom runs the command in-process, as the binary would.
func icebloom(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestQuickstartThenCommands runs the README's first command on a fresh
// directory, then the other commands against its embedded catalog: the
// JSON outputs carry the promised keys, a present value keeps its file, an
// absent one prunes (nearly) everything, scan with and without the index
// returns the same rows, and inspect reports full coverage.
func TestQuickstartThenCommands(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	stdout, stderr, code := icebloom(t, "--output", "json", "quickstart", "--files", "12", "--rows", "300")
	if code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	var qs QuickstartOutput
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatalf("quickstart output %q: %v", stdout, err)
	}
	if qs.Build.FilesIndexed != 12 || qs.Present.Rows != 1 || qs.Present.Candidates < 1 || qs.Absent.Rows != 0 ||
		qs.Present.FilesTotal != 12 || qs.Absent.Candidates > 3 {
		t.Fatalf("quickstart %+v", qs)
	}
	if filepath.Dir(qs.Catalog) != filepath.Join(dir, "warehouse") {
		t.Fatalf("catalog at %s, want the embedded default ./warehouse", qs.Catalog)
	}

	// The embedded default needs no flags.
	where := qs.Present.Where
	stdout, stderr, code = icebloom(t, "--output", "json", "lookup", "demo.events", "--where", where)
	if code != 0 {
		t.Fatalf("lookup exited %d: %s", code, stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"snapshot_id", "files_total", "files_after_stats", "candidates", "unindexed"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("lookup JSON lacks %q: %s", key, stdout)
		}
	}
	var lk LookupOutput
	json.Unmarshal([]byte(stdout), &lk)
	if lk.FilesTotal != 12 || len(lk.Candidates) != qs.Present.Candidates || len(lk.Unindexed) != 0 {
		t.Fatalf("lookup %+v", lk)
	}
	for _, c := range lk.Candidates {
		if !strings.HasPrefix(c, "file://") || !strings.HasSuffix(c, ".parquet") {
			t.Fatalf("candidate %q is not a data file location as the manifests list it", c)
		}
	}

	withIndex, _, code := icebloom(t, "--output", "json", "scan", "demo.events", "--where", where)
	if code != 0 {
		t.Fatal("scan failed")
	}
	without, _, code := icebloom(t, "--output", "json", "scan", "demo.events", "--where", where, "--no-index")
	if code != 0 {
		t.Fatal("scan --no-index failed")
	}
	var a, b ScanOutput
	json.Unmarshal([]byte(withIndex), &a)
	json.Unmarshal([]byte(without), &b)
	if len(a.Rows) != 1 || len(b.Rows) != 1 || a.FilesRead >= b.FilesRead || b.FilesRead != 12 {
		t.Fatalf("scan with index %+v, without %+v", a, b)
	}

	stdout, _, code = icebloom(t, "--output", "json", "inspect", "demo.events")
	var in InspectOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &in) != nil {
		t.Fatalf("inspect: %d %s", code, stdout)
	}
	if len(in.Segments) != 1 || len(in.Columns) != 3 || in.LiveFiles != 12 {
		t.Fatalf("inspect %+v", in)
	}
	for _, col := range in.Columns {
		if col.Covered != 12 || col.Uncovered != 0 || col.IndexBytes == 0 {
			t.Errorf("column %+v", col)
		}
	}

	// sync with nothing new reads nothing and commits nothing.
	stdout, _, code = icebloom(t, "--output", "json", "sync", "demo.events")
	var sync map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &sync) != nil {
		t.Fatalf("sync: %d %s", code, stdout)
	}
	for key, want := range map[string]float64{"files_indexed": 0, "files_covered": 12, "segments": 1, "bytes_copied": 0} {
		if got, ok := sync[key].(float64); !ok || got != want {
			t.Errorf("sync %s = %v, want %v", key, sync[key], want)
		}
	}

	// Text output of build, and a second quickstart replaces the demo table.
	stdout, stderr, code = icebloom(t, "build", "demo.events", "--columns", "user_id")
	if code != 0 || !strings.Contains(stdout, "indexed 12 of 12 data files of demo.events") {
		t.Fatalf("build: %d %s %s", code, stdout, stderr)
	}
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "10"); code != 0 {
		t.Fatalf("second quickstart: %s", stderr)
	}
}

// TestBadInput: errors name the problem and exit non-zero; nothing needs a
// catalog to be refused.
func TestBadInput(t *testing.T) {
	t.Chdir(t.TempDir())
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--output", "yaml", "inspect", "a.b"}, 2, `--output "yaml"`},
		{[]string{"lookup", "a.b"}, 2, "--where or --where-file is required"},
		{[]string{"scan", "a.b"}, 1, "no catalog at"}, // scan needs no filter
		{[]string{"scan", "a.b", "--where", "x = 1", "--where-file", "f.sql"}, 2, "--where and --where-file: give one of them"},
		{[]string{"lookup", "db.t", "--where-file", "missing.sql"}, 1, "--where-file missing.sql: no such file or directory"},
		{[]string{"scan", "db.t", "--where-file", "."}, 1, "--where-file .: is a directory"},
		{[]string{"lookup", "db.t", "--where", "x > 1 AND NOT"}, 2, "--where: position 14: expected a column or ("},
		{[]string{"lookup", "nonamespace", "--where", "x = 1"}, 1, "nonamespace"},
		{[]string{"lookup", "db.t", "--where", "x = "}, 2, "position"},
		{[]string{"build", "db.missing"}, 1, "db.missing"},
		{[]string{"frobnicate"}, 2, "frobnicate"},
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

// TestWhereFile: a filter too long for a command line (10,000 literals) is
// read from --where-file, or from stdin with -, and plans as the same
// filter given with --where (in-process, where arguments have no limit); comparisons, BETWEEN, NOT and IS NULL
// filter the rows a scan returns, with and without the index; problems
// with the file name it.
func TestWhereFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	stdout, stderr, code := icebloom(t, "--output", "json", "quickstart", "--files", "4", "--rows", "50")
	if code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	var qs QuickstartOutput
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatal(err)
	}
	needle, ok := strings.CutPrefix(qs.Present.Where, "user_id = ")
	if !ok {
		t.Fatalf("quickstart's filter %q", qs.Present.Where)
	}
	// Ids beyond the demo's range, one a line, then the one present.
	var b strings.Builder
	b.WriteString("user_id IN (\n")
	for i := range 10_000 {
		fmt.Fprintf(&b, "  %d,\n", 2_000_000_000_000+i)
	}
	b.WriteString("  " + needle + "\n)\n")
	long := filepath.Join(dir, "ids.sql")
	if err := os.WriteFile(long, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lookupJSON := func(stdin string, args ...string) LookupOutput {
		t.Helper()
		var out, errOut bytes.Buffer
		argv := append([]string{"--output", "json", "lookup", "demo.events"}, args...)
		if code := runFrom(context.Background(), argv, strings.NewReader(stdin), &out, &errOut, false, 0, time.Now); code != 0 {
			t.Fatalf("%v exited %d: %s", argv, code, errOut.String())
		}
		var lk LookupOutput
		if err := json.Unmarshal(out.Bytes(), &lk); err != nil {
			t.Fatal(err)
		}
		return lk
	}
	want := lookupJSON("", "--where", b.String()) // in-process, no limit on arguments
	present := lookupJSON("", "--where", qs.Present.Where)
	if !slices.Contains(want.Candidates, present.Candidates[0]) {
		t.Fatalf("IN of 10,000 absent ids and %s keeps %v, not %s's file", needle, want.Candidates, qs.Present.Where)
	}
	for _, got := range []LookupOutput{lookupJSON("", "--where-file", long), lookupJSON(b.String(), "--where-file", "-")} {
		if !slices.Equal(got.Candidates, want.Candidates) || got.FilesAfterStats != want.FilesAfterStats || got.BlocksRead != want.BlocksRead {
			t.Errorf("IN of 10,000 absent ids and %s from a file: %+v, want as with --where: %+v", needle, got, want)
		}
	}

	scanRows := func(stdin string, args ...string) int {
		t.Helper()
		var out, errOut bytes.Buffer
		argv := append([]string{"--output", "json", "scan", "demo.events", "--limit", "0"}, args...)
		if code := runFrom(context.Background(), argv, strings.NewReader(stdin), &out, &errOut, false, 0, time.Now); code != 0 {
			t.Fatalf("%v exited %d: %s", argv, code, errOut.String())
		}
		var sc ScanOutput
		if err := json.Unmarshal(out.Bytes(), &sc); err != nil {
			t.Fatal(err)
		}
		return len(sc.Rows)
	}
	for where, rows := range map[string]int{
		"user_id BETWEEN " + needle + " AND " + needle:          1,
		"NOT (user_id <> " + needle + ") AND email IS NOT NULL": 1,
		"user_id != " + needle + " OR email IS NULL":            199,
		"user_id NOT IN (" + needle + ")":                       199,
		"user_id < " + needle + " OR user_id > " + needle:       199,
		"user_id <= " + needle + " AND user_id >= " + needle:    1,
		"user_id = " + needle + ".5":                            0,
		"user_id IS NULL":                                       0,
	} {
		withIndex := scanRows(where, "--where-file", "-")
		without := scanRows("", "--where", where, "--no-index")
		if withIndex != rows || without != rows {
			t.Errorf("scan %s: %d rows with the index, %d without, want %d", where, withIndex, without, rows)
		}
	}

	bad := filepath.Join(dir, "bad.sql")
	os.WriteFile(bad, []byte("user_id = 1 AND\n  email = 5 5\n"), 0o644)
	// A filter that does not parse is a bad command line (exit 2), shown
	// with its line and a caret; a file that cannot be read fails (1).
	for stdin, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"":       {[]string{"lookup", "demo.events", "--where-file", bad}, 2, "--where-file " + bad + `: line 2, column 13: expected AND, OR or the end of the filter, found "5"` + "\n    email = 5 5\n              ^"},
		"\n\t\n": {[]string{"scan", "demo.events", "--where-file", "-"}, 2, "--where-file stdin: line 3, column 1: expected a column or (, found the end of the filter\n  \n  ^"},
		"\xff":   {[]string{"lookup", "demo.events", "--where-file", "-"}, 1, "--where-file stdin: not UTF-8 text"},
	} {
		var out, errOut bytes.Buffer
		code := runFrom(context.Background(), c.args, strings.NewReader(stdin), &out, &errOut, false, 0, time.Now)
		var said string
		if code == 1 {
			said = failure(t, errOut.String())
		} else if bad := find(logRecords(t, errOut.String()), "bad command line"); len(bad) == 1 {
			said, _ = bad[0]["error"].(string)
		}
		if code != c.code || said != c.want {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), c.code, c.want)
		}
	}
}
