package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNoIndexSaysSo: inspect, compact-index and verify on a table without
// an index say that it has none, how to build one, and why their exit
// codes differ: inspect and compact-index have nothing to do (0), verify,
// a check, has nothing to vouch for (1).
func TestNoIndexSaysSo(t *testing.T) {
	it := newIDTable(t, 2)
	for _, c := range []struct {
		cmd  string
		code int
		why  string
	}{
		{"inspect", 0, "nothing to inspect (exit 0: a table without an index is a state to report; verify, a check, fails)"},
		{"compact-index", 0, "nothing to compact (exit 0: there was nothing to do, as for inspect; verify, a check, fails)"},
		{"verify", 1, "nothing to verify (exit 1, where inspect and compact-index exit 0: they have nothing to do, a check has nothing to vouch for)"},
	} {
		stdout, stderr, code := icebloom(t, it.args(c.cmd, "db.ids")...)
		said := stdout
		if c.code != 0 {
			said = failure(t, stderr)
		}
		if code != c.code || !strings.Contains(said, "db.ids has no icebloom index") || !strings.Contains(said, "icebloom build db.ids") ||
			!strings.Contains(said, c.why) {
			t.Errorf("%s without an index: exit %d, %q %s; want %d, how to build one and %q", c.cmd, code, stdout, stderr, c.code, c.why)
		}
	}
}

// TestOneVocabulary: log records name things as the JSON outputs do —
// statistics_path (Iceberg's statistics-path), never statistics_file —
// write lists of names as lists ([] for none, not null) and dropped
// columns as text, not a Go struct ("[{Name:email FieldID:2 ...}]").
func TestOneVocabulary(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "20"); code != 0 {
		t.Fatal(stderr)
	}
	_, stderr, code := icebloom(t, "columns", "demo.events", "--disable", "email")
	changed := find(logRecords(t, stderr), "columns changed")
	if code != 0 || len(changed) != 1 || changed[0]["enabled"] == nil || changed[0]["disabled"] == nil {
		t.Errorf("columns --disable email: exit %d, records %v; want enabled [] and disabled [email]", code, changed)
	}
	_, stderr, code = icebloom(t, "compact-index", "demo.events", "--drop-columns", "email")
	compacted := find(logRecords(t, stderr), "index compacted")
	if code != 0 || len(compacted) != 1 || compacted[0]["dropped_columns"] != "email (2 filters)" ||
		compacted[0]["statistics_path"] == nil || compacted[0]["statistics_file"] != nil {
		t.Errorf("compact-index --drop-columns email: exit %d, records %v", code, compacted)
	}
	_, stderr, _ = icebloom(t, "sync", "demo.events")
	for _, r := range logRecords(t, stderr) {
		if r["statistics_file"] != nil {
			t.Errorf("sync: a record says statistics_file: %v", r)
		}
	}
	stdout, _, _ := icebloom(t, "--output", "json", "rebuild", "demo.events")
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out["statistics_path"] == nil {
		t.Errorf("rebuild --output json: %v, %s; want statistics_path", err, stdout)
	}
}

// TestFilesFailedIsAListItsCountSaysSo: files_failed is always the list
// of what could not be read, files_failed_count always a count — at the
// top level of build's JSON, per column, and in the summary record (before,
// per_column's files_failed was a count and the record's one too, while
// the top level's was a list).
func TestFilesFailedIsAListItsCountSaysSo(t *testing.T) {
	it := newIDTable(t, 3)
	bad := it.corrupt(t)
	stdout, stderr, code := icebloom(t, it.args("--output", "json", "build", "db.ids")...)
	if code != 0 {
		t.Fatalf("build exited %d: %s", code, stderr)
	}
	var out struct {
		FilesFailed []map[string]any `json:"files_failed"`
		PerColumn   []map[string]any `json:"per_column"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("build --output json: %v: %s", err, stdout)
	}
	if len(out.FilesFailed) != 1 || out.FilesFailed[0]["path"] != bad {
		t.Errorf("files_failed %v; want the list of the one unreadable file", out.FilesFailed)
	}
	if len(out.PerColumn) != 1 || out.PerColumn[0]["files_failed_count"] != 0.0 || out.PerColumn[0]["files_failed"] != nil {
		t.Errorf("per_column %v; want files_failed_count 0 (the whole file failed, not its column) and no files_failed", out.PerColumn)
	}
	built := find(logRecords(t, stderr), "index built")
	if len(built) != 1 || built[0]["files_failed_count"] != 1.0 || built[0]["files_failed"] != nil {
		t.Errorf("summary record %v; want files_failed_count 1 and no files_failed", built)
	}
}
