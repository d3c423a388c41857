package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/cmd/icebloom/internal/rowformat"
	"github.com/icebloom/icebloom/index/rowscan"
)

// ScanCmd is `icebloom scan TABLE [--where EXPR] [--select COLS]`.
type ScanCmd struct {
	Table string `arg:"positional,required" help:"table identifier, ns.table"`
	whereFlags
	Select   string `arg:"--select" placeholder:"COLS" help:"comma-separated columns to print, in this order; a struct field by its full name, as in --where (st.x) [default: every column]"`
	Format   string `arg:"--format" placeholder:"FORMAT" help:"rows as text (aligned on a terminal, tab-separated otherwise), tsv, csv or jsonl (one JSON object a line), written as they are read [default: text; with --output json one JSON document]"`
	Limit    *int64 `arg:"--limit" help:"rows to print at most (0: all) [default: 100, with a warning when more rows match]"`
	Snapshot int64  `arg:"--snapshot" help:"snapshot to read [default: current]"`
	NoIndex  bool   `arg:"--no-index" help:"read every file statistics leave, ignoring the index (for comparison)"`
}

// defaultScanLimit is the rows scan prints without --limit.
const defaultScanLimit = 100

// limit is --limit, or defaultScanLimit without it.
func (c *ScanCmd) limit() int64 {
	if c.Limit == nil {
		return defaultScanLimit
	}
	return *c.Limit
}

// scanFormats are the values of --format.
var scanFormats = []string{"text", "tsv", "csv", "jsonl"}

// validate: a scan without a filter reads every row (up to --limit); the
// two filter flags exclude each other.
func (c *ScanCmd) validate() error {
	if f := strings.ToLower(c.Format); f != "" && !slices.Contains(scanFormats, f) {
		return fmt.Errorf("--format %q: want %s", c.Format, strings.Join(scanFormats, ", "))
	}
	if c.Where == "" && c.WhereFile == "" {
		return nil
	}
	return c.whereFlags.validate()
}

// ScanOutput is the JSON output of scan. Rows hold values with JSON's
// types (values.go says how each SQL type is written), their keys in the
// order of the columns.
type ScanOutput struct {
	SnapshotID int64 `json:"snapshot_id"`
	FilesTotal int   `json:"files_total"`
	FilesRead  int   `json:"files_read"`
	// Columns are the names of the rows' columns, in order.
	Columns []string         `json:"columns"`
	Rows    []map[string]any `json:"rows"`
	// Truncated says that more rows match than --limit let through.
	Truncated     bool    `json:"truncated"`
	ElapsedMillis float64 `json:"elapsed_ms"`
}

func (c *ScanCmd) run(ctx context.Context, e *env) error {
	start := time.Now()
	format := strings.ToLower(c.Format)
	switch {
	case format == "" && e.json:
		format = "json"
	case format == "":
		format = "text"
	}
	selected, err := splitColumns("--select", c.Select)
	if err != nil {
		return err
	}
	var filter iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	if c.Where != "" || c.WhereFile != "" {
		if filter, err = c.filter(e); err != nil {
			return err
		}
	}
	tbl, _, res, err := planFilter(ctx, e, c.Table, filter, c.Snapshot)
	if err != nil {
		return err
	}
	logIndexErrors(e.log, "scan", c.Table, res.IndexErrors)
	tasks := res.Candidates
	if c.NoIndex {
		tasks = res.AfterStats
	}
	limit := c.limit()
	readLimit := limit
	if readLimit > 0 {
		readLimit++ // one more tells whether the limit cut any
	}
	// The rows are filtered with the plan's own binding (one binding for
	// lookup and scan), partly by iceberg-go, partly by rowscan.
	schema, records, err := rowscan.Read(ctx, tbl, res.Schema, res.Bound, tasks,
		rowscan.Options{Select: selected, Limit: readLimit, SnapshotID: res.SnapshotID})
	if err != nil {
		return fmt.Errorf("read %s: %w", c.Table, filterError(c.Table, tbl, err))
	}
	filesRead := len(dataFiles(tasks))
	w := rowformat.NewWriter(e.stdout, e.stdoutTTY, format, schema,
		rowformat.Head{SnapshotID: res.SnapshotID, FilesTotal: res.FilesTotal, FilesRead: filesRead})
	if err := w.Begin(); err != nil {
		return err
	}
	var rows int64
	truncated := false
read:
	for rec, err := range records {
		if err != nil {
			return fmt.Errorf("read %s: %w", c.Table, err)
		}
		for i := range int(rec.NumRows()) {
			if limit > 0 && rows >= limit {
				truncated = true
				rec.Release()
				break read
			}
			if err := w.Row(rec, i); err != nil {
				rec.Release()
				return fmt.Errorf("write rows: %w", err)
			}
			rows++
		}
		rec.Release()
	}
	elapsed := time.Since(start)
	if err := w.End(rows, truncated, elapsed); err != nil {
		return fmt.Errorf("write rows: %w", err)
	}
	if e.stdoutTTY && format == "text" {
		// Said on stdout, where a person looks, not only in a log record.
		if rows == 0 {
			e.printf("(0 rows; %d of %s may match)\n", filesRead, plural(res.FilesTotal, "data file"))
		} else {
			e.printf("(%s)\n", plural(rows, "row"))
		}
	}
	if format == "json" {
		return nil // the document says it all, truncated included
	}
	e.log.Info("scan done", "command", "scan", "table", c.Table, "snapshot", res.SnapshotID, "rows", rows,
		"files_read", filesRead, "files_total", res.FilesTotal, "duration", elapsed)
	if truncated && c.Limit == nil {
		// An explicit --limit cut where asked; the default may surprise.
		e.log.Warn("more rows match: output cut at the default limit (--limit 0 prints all)", "command", "scan", "table", c.Table, "limit", limit)
	}
	return nil
}
