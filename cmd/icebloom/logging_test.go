package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// logRecords parses stderr as JSON log records, one a line, failing on any
// other line except the command's final "icebloom: error" line.
func logRecords(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" || strings.HasPrefix(line, "icebloom: ") {
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
	if b["level"] != "INFO" || b["files_indexed"] != 2.0 || b["files_failed"] != 1.0 || b["duration"].(float64) <= 0 ||
		b["statistics_file"] == nil || b["columns"].([]any)[0] != "id" {
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
	if _, stderr, code := icebloom(t, "--log-level", "verbose", "inspect", "db.ids"); code != 2 || !strings.Contains(stderr, `"verbose"`) {
		t.Errorf("--log-level verbose: exit %d, %s", code, stderr)
	}

	// A failed command: a record with its attributes, and the error line.
	_, stderr, code = icebloom(t, it.args("build", "db.missing")...)
	failed := find(logRecords(t, stderr), "command failed")
	if code != 1 || len(failed) != 1 || failed[0]["level"] != "ERROR" || failed[0]["table"] != "db.missing" ||
		failed[0]["command"] != "build" || !strings.Contains(failed[0]["error"].(string), "db.missing") {
		t.Errorf("failed build: exit %d, records %v", code, failed)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "icebloom: ") || !strings.Contains(last, "db.missing") {
		t.Errorf("last stderr line %q, want the plain error", last)
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
