package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// logRecords parses stderr as JSON log records, one a line, failing on any
// other line: when stderr is no terminal, nothing else may be written to it.
func logRecords(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("stderr line %q is not a JSON record: %v", line, err)
		}
		for _, key := range []string{"time", "level", "msg"} {
			if _, ok := r[key]; !ok {
				t.Fatalf("record %q lacks %q", line, key)
			}
		}
		out = append(out, r)
	}
	return out
}

// find returns the records with the message.
func find(records []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range records {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestLogsAreJSONWhenNotATerminal: with stderr a buffer, as under a
// scheduler, every diagnostic is a JSON record with its attributes — the
// unreadable data file as a warning naming table, snapshot, file and
// error, the build's summary — and stdout keeps the result alone.
// --log-level filters them.
func TestLogsAreJSONWhenNotATerminal(t *testing.T) {
	it := newIDTable(t, 3)
	bad := it.corrupt(t)
	stdout, stderr, code := icebloom(t, it.args("build", "db.ids")...)
	if code != 0 {
		t.Fatalf("build exited %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "indexed 2 of 3 data files of db.ids") || strings.Contains(stdout, `"level"`) {
		t.Fatalf("stdout %q: want the text result and no log records", stdout)
	}
	records := logRecords(t, stderr)
	warns := find(records, "data file not indexed; it is never pruned")
	if len(warns) != 1 {
		t.Fatalf("%d warnings for the unreadable file, want 1: %s", len(warns), stderr)
	}
	w := warns[0]
	if w["level"] != "WARN" || w["table"] != "db.ids" || w["command"] != "build" || w["file"] != bad ||
		w["snapshot"] == nil || !strings.Contains(w["error"].(string), "Parquet") {
		t.Errorf("warning %v", w)
	}
	built := find(records, "index built")
	if len(built) != 1 {
		t.Fatalf("no summary record: %s", stderr)
	}
	b := built[0]
	if b["level"] != "INFO" || b["files_indexed"] != 2.0 || b["files_failed_count"] != 1.0 || !hasUnit(b["duration"]) ||
		b["statistics_path"] == nil || b["columns"].([]any)[0] != "id" {
		t.Errorf("summary record %v", b)
	}
	if len(find(records, "data file done")) != 0 {
		t.Error("debug records at the default level info")
	}

	// debug: a record per data file done; warn: no info records.
	_, stderr, _ = icebloom(t, it.args("--log-level", "debug", "sync", "db.ids")...)
	if reads := find(logRecords(t, stderr), "data file done"); len(reads) != 1 || reads[0]["file"] != bad || reads[0]["table"] != "db.ids" {
		t.Errorf("debug records of the sync retrying the unreadable file: %v", reads)
	}
	_, stderr, _ = icebloom(t, it.args("--log-level", "WARN", "sync", "db.ids")...)
	for _, r := range logRecords(t, stderr) {
		if r["level"] != "WARN" {
			t.Errorf("--log-level warn let through %v", r)
		}
	}
	if _, stderr, code := icebloomTTY(t, "--log-level", "verbose", "inspect", "db.ids"); code != 2 || !strings.Contains(stderr, `"verbose"`) {
		t.Errorf("--log-level verbose: exit %d, %s", code, stderr)
	}

	// A failed command: a record with its attributes, and nothing else
	// (logRecords refuses any line that is not a record).
	_, stderr, code = icebloom(t, it.args("build", "db.missing")...)
	failed := find(logRecords(t, stderr), "command failed")
	if code != 1 || len(failed) != 1 || failed[0]["level"] != "ERROR" || failed[0]["table"] != "db.missing" ||
		failed[0]["command"] != "build" || !strings.Contains(failed[0]["error"].(string), "db.missing") || !hasUnit(failed[0]["duration"]) {
		t.Errorf("failed build: exit %d, records %v", code, failed)
	}
}

// hasUnit tells whether a record's value is a duration written with its
// unit, as time.ParseDuration reads it ("1.5s", "340.12ms"; not 1500000000).
func hasUnit(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	d, err := time.ParseDuration(s)
	return err == nil && d > 0 && strings.TrimLeft(s, "0123456789.") != ""
}

// failure returns the error a failed command reported on stderr that is no
// terminal: its one "command failed" record.
func failure(t *testing.T, stderr string) string {
	t.Helper()
	failed := find(logRecords(t, stderr), "command failed")
	if len(failed) != 1 {
		t.Fatalf("%d failure records in %q, want 1", len(failed), stderr)
	}
	return failed[0]["error"].(string)
}

// TestFailureIsSaidOnce: a failed command says so once — as one JSON
// record when stderr is no terminal (no "icebloom: …" line besides it), as
// the "icebloom: …" line on a terminal (no record besides it).
func TestFailureIsSaidOnce(t *testing.T) {
	it := newIDTable(t, 1)
	_, stderr, code := icebloom(t, it.args("lookup", "db.missing", "--where", "id = 1")...)
	if code != 1 || strings.Contains(stderr, "icebloom: ") || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(failure(t, stderr), "load table db.missing") {
		t.Errorf("not a terminal: exit %d, stderr %q; want one record naming db.missing in its table and error", code, stderr)
	}

	var stdout, errOut bytes.Buffer
	code = runOn(context.Background(), it.args("lookup", "db.missing", "--where", "id = 1"), &stdout, &errOut, true, 100, time.Now)
	lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "icebloom: load table db.missing") {
		t.Errorf("terminal: exit %d, stderr %q; want the one line icebloom: load table db.missing…", code, errOut.String())
	}
}

// TestNoticesGoThroughTheLogger: what lookup, scan and inspect say besides
// their results — a summary, an index problem that kept files — are log
// records on stderr (JSON when it is no terminal), never bare lines, and
// stdout holds the result alone; durations carry their unit.
func TestNoticesGoThroughTheLogger(t *testing.T) {
	it := newIDTable(t, 3)
	if _, stderr, code := icebloom(t, it.args("build", "db.ids")...); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := icebloom(t, it.args("lookup", "db.ids", "--where", "id = 11")...)
	done := find(logRecords(t, stderr), "lookup done")
	if code != 0 || strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, ".parquet\n") || len(done) != 1 ||
		done[0]["candidates"] != 1.0 || done[0]["files_total"] != 3.0 || done[0]["files_after_stats"] != 1.0 ||
		done[0]["table"] != "db.ids" || done[0]["unindexed"] != 0.0 || !hasUnit(done[0]["duration"]) {
		t.Fatalf("lookup: exit %d, stdout %q, records %v", code, stdout, done)
	}
	_, stderr, _ = icebloom(t, it.args("scan", "db.ids", "--where", "id = 11")...)
	if done := find(logRecords(t, stderr), "scan done"); len(done) != 1 || done[0]["rows"] != 1.0 || done[0]["files_read"] != 1.0 ||
		!hasUnit(done[0]["duration"]) {
		t.Fatalf("scan: records %v", done)
	}

	// The index file gone: every command keeps the files and warns.
	stdout, _, _ = icebloom(t, it.args("--output", "json", "inspect", "db.ids")...)
	var in InspectOutput
	if err := json.Unmarshal([]byte(stdout), &in); err != nil || len(in.Segments) != 1 {
		t.Fatalf("inspect: %s", stdout)
	}
	if err := os.Remove(strings.TrimPrefix(in.Segments[0].Path, "file://")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"lookup", "db.ids", "--where", "id = 11 OR id = 1"},
		{"scan", "db.ids", "--where", "id = 11 OR id = 1"},
		{"inspect", "db.ids"},
		{"--output", "json", "lookup", "db.ids", "--where", "id = 11 OR id = 1"},
	} {
		stdout, stderr, code := icebloom(t, it.args(args...)...)
		warns := find(logRecords(t, stderr), indexProblem)
		if code != 0 || len(warns) != 1 || warns[0]["level"] != "WARN" || warns[0]["table"] != "db.ids" ||
			!strings.Contains(warns[0]["error"].(string), in.Segments[0].Path) {
			t.Errorf("%v with the index file gone: exit %d, warnings %v, stderr %s", args, code, warns, stderr)
		}
		if strings.Contains(stdout, "index problem") {
			t.Errorf("%v: the index problem is on stdout: %s", args, stdout)
		}
	}
}

// TestMaintainLogs: maintain logs each table as it finishes — maintained,
// or failed with its error — and each round.
func TestMaintainLogs(t *testing.T) {
	it := newIDTable(t, 2)
	stdout, stderr, code := icebloom(t, it.args("--output", "json", "maintain", "db.ids", "db.missing")...)
	if code != 1 || !strings.Contains(stdout, `"round"`) {
		t.Fatalf("maintain: exit %d, stdout %s", code, stdout)
	}
	records := logRecords(t, stderr)
	ok := find(records, "table maintained")
	if len(ok) != 1 || ok[0]["table"] != "db.ids" || ok[0]["files_indexed"] != 2.0 || ok[0]["round"] != 1.0 ||
		ok[0]["command"] != "maintain" || ok[0]["duration"] == nil || ok[0]["snapshot"] == nil {
		t.Errorf("maintained records %v", ok)
	}
	bad := find(records, "table maintenance failed")
	if len(bad) != 1 || bad[0]["level"] != "ERROR" || bad[0]["table"] != "db.missing" || !strings.Contains(bad[0]["error"].(string), "db.missing") {
		t.Errorf("failed records %v", bad)
	}
	if rounds := find(records, "maintenance round done"); len(rounds) != 1 || rounds[0]["failed"] != 1.0 || rounds[0]["tables"] != 2.0 {
		t.Errorf("round records %v", rounds)
	}
}

// TestTextLogsAndBarOnATerminal: on a terminal the records are slog's
// text, and a build draws its bar on stderr and takes it off again before
// the result; --output json draws none.
func TestTextLogsAndBarOnATerminal(t *testing.T) {
	it := newIDTable(t, 3)
	var stdout, stderr bytes.Buffer
	code := runOn(context.Background(), it.args("build", "db.ids"), &stdout, &stderr, true, 120, time.Now)
	if code != 0 {
		t.Fatalf("build exited %d: %s", code, stderr.String())
	}
	errText := stderr.String()
	if !strings.Contains(errText, `level=INFO msg="index built" command=build table=db.ids`) {
		t.Errorf("stderr %q: want a text record", errText)
	}
	if !strings.Contains(errText, "db.ids [") || !strings.Contains(errText, "3/3 files") {
		t.Errorf("stderr %q: want the bar at 3 of 3 files", errText)
	}
	// The bar was cleared before the record was written, and not put back.
	if i := strings.LastIndex(errText, eraseLine); i < 0 || strings.Contains(errText[i:], "db.ids [") {
		t.Errorf("stderr %q: the bar is still on the line at the end", errText)
	}
	if strings.Contains(stdout.String(), "\r") || !strings.Contains(stdout.String(), "indexed 3 of 3") {
		t.Errorf("stdout %q", stdout.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := runOn(context.Background(), it.args("--output", "json", "rebuild", "db.ids"), &stdout, &stderr, true, 120, time.Now); code != 0 {
		t.Fatal(stderr.String())
	}
	if strings.Contains(stderr.String(), "\r") || strings.Contains(stderr.String(), "files  ") {
		t.Errorf("--output json drew a bar: %q", stderr.String())
	}
}

func TestLogLevelFlag(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn,
		"Warning": slog.LevelWarn, "error": slog.LevelError} {
		var l logLevel
		if err := l.UnmarshalText([]byte(in)); err != nil || l.Level != want {
			t.Errorf("%q: %v %v, want %v", in, l.Level, err, want)
		}
	}
	for _, in := range []string{"", "info+2", "trace", "4"} {
		var l logLevel
		if err := l.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q accepted as %v", in, l.Level)
		}
	}
}
