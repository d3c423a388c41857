package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// logLevel is the --log-level value.
type logLevel struct{ slog.Level }

// UnmarshalText accepts exactly the four level names the flag documents
// (any case, and "warning" for warn): slog's own parser also takes offsets
// such as "info+2", which would only be a way to mistype a level.
func (l *logLevel) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "debug":
		l.Level = slog.LevelDebug
	case "info":
		l.Level = slog.LevelInfo
	case "warn", "warning":
		l.Level = slog.LevelWarn
	case "error":
		l.Level = slog.LevelError
	default:
		return fmt.Errorf("%q is not a log level: want debug, info, warn or error", b)
	}
	return nil
}

// newLogger returns the logger of a run writing to stderr: text for people
// when stderr is a terminal, one JSON object a line for log collectors
// otherwise (a container's or a CronJob's stderr, and tests).
func newLogger(stderr io.Writer, level slog.Level, terminal bool) *slog.Logger {
	o := &slog.HandlerOptions{Level: level, ReplaceAttr: durationWithUnit}
	if terminal {
		return slog.New(slog.NewTextHandler(stderr, o))
	}
	return slog.New(slog.NewJSONHandler(stderr, o))
}

// reportFailure says once that the command failed. On a terminal, the
// conventional "icebloom: error" line for the person reading it; otherwise
// stderr is a log collector's, and every line on it is a JSON record, this
// one with the command's attributes and the error.
func reportFailure(e *env, tty bool, command, table string, d time.Duration, err error) {
	if tty {
		var w io.Writer = e.stderr
		if e.status != nil {
			w = e.status // below a progress bar still drawn
		}
		fmt.Fprintln(w, "icebloom:", err)
		return
	}
	attrs := []any{"command", command, "duration", d, "error", err.Error()}
	if table != "" {
		attrs = append(attrs, "table", table)
	}
	e.log.Error("command failed", attrs...)
}

// durationWithUnit writes a duration as people read it, with its unit
// ("1.234s", "340.5ms"), where slog would write the JSON handler's bare
// nanoseconds or the text handler's every digit. Results on stdout keep
// their integers, in fields named *_ns.
func durationWithUnit(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(cli.DurationText(a.Value.Duration()))
	}
	return a
}

// indexProblem is the message of the warning about a problem of the index
// that a lookup, scan or inspect met: the index is advisory, so a lookup
// keeps the files it concerns.
const indexProblem = "index problem; the files it concerns are never pruned"

// logIndexErrors logs a warning per index problem a command met.
func logIndexErrors(log *slog.Logger, command, table string, errs []error) {
	for _, err := range errs {
		log.Warn(indexProblem, "command", command, "table", table, "error", err.Error())
	}
}

// logIndexed logs what a build, sync or rebuild of table did: a warning per
// data file it could not read, then the summary.
func logIndexed(log *slog.Logger, command, table string, sum *indexer.Summary) {
	for _, f := range sum.FilesFailed {
		log.Warn("data file not indexed; it is never pruned",
			"command", command, "table", table, "snapshot", sum.SnapshotID, "file", f.Path, "error", f.Error)
	}
	attrs := []any{
		"command", command, "table", table, "snapshot", sum.SnapshotID, "columns", sum.Columns,
		"files_total", sum.FilesTotal, "files_covered", sum.FilesCovered, "files_indexed", sum.FilesIndexed,
		"files_failed_count", len(sum.FilesFailed), "blobs", sum.Blobs, "index_bytes", sum.IndexBytes,
		"segments", sum.Segments, "duration", sum.Duration,
	}
	if sum.StatisticsPath != "" {
		attrs = append(attrs, "statistics_path", sum.StatisticsPath) // as in the JSON, and Iceberg's statistics-path
	}
	if c := sum.Compacted; c != nil {
		attrs = append(attrs, "segments_compacted", c.SegmentsBefore)
	}
	log.Info("index "+indexVerb(command), attrs...)
}

func indexVerb(command string) string {
	switch command {
	case "sync":
		return "synced"
	case "rebuild":
		return "rebuilt"
	}
	return "built"
}

// logGCFailures logs a warning per orphan index file gc could not delete.
func logGCFailures(log *slog.Logger, command, table string, sum *maintenance.GCSummary) {
	for _, f := range sum.Failed {
		log.Warn("orphan index file not deleted", "command", command, "table", table, "file", f.Path, "error", f.Error)
	}
}

// logMaintained logs one table's maintenance: the steps' warnings, then
// what was done, why it was skipped, or the step that failed.
func logMaintained(log *slog.Logger, r maintenance.TableReport, round int, dur time.Duration) {
	log = log.With("command", "maintain", "round", round, "table", r.Table)
	if r.Sync != nil {
		for _, f := range r.Sync.FilesFailed {
			log.Warn("data file not indexed; it is never pruned", "snapshot", r.Sync.SnapshotID, "file", f.Path, "error", f.Error)
		}
	}
	if r.GC != nil {
		for _, f := range r.GC.Failed {
			log.Warn("orphan index file not deleted", "file", f.Path, "error", f.Error)
		}
	}
	switch {
	case r.Failed():
		log.Error("table maintenance failed", "duration", dur, "error", r.Error)
		return
	case r.Skipped != "":
		log.Info("table skipped", "reason", r.Skipped)
		return
	}
	attrs := []any{"duration", dur}
	if s := r.Sync; s != nil {
		attrs = append(attrs, "snapshot", s.SnapshotID, "files_indexed", s.FilesIndexed,
			"files_covered", s.FilesCovered, "files_failed_count", len(s.FilesFailed), "segments", s.Segments)
	}
	if c := r.Compact; c != nil {
		attrs = append(attrs, "segments_compacted", c.SegmentsBefore)
	}
	if x := r.Repair; x != nil && x.Compacted != nil {
		attrs = append(attrs, "index_files_repaired", len(x.Damaged), "groups_dropped", len(x.Compacted.BrokenGroups))
	}
	if x := r.Expire; x != nil {
		attrs = append(attrs, "snapshots_expired", len(x.SnapshotsExpired))
	}
	if g := r.GC; g != nil {
		attrs = append(attrs, "orphans_deleted", len(g.Deleted))
	}
	log.Info("table maintained", attrs...)
}
