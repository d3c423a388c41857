package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/rowscan"
)

// ScanCmd is `icebloom scan TABLE --where EXPR`.
type ScanCmd struct {
	Table string `arg:"positional,required" help:"table identifier, ns.table"`
	whereFlags
	Limit    int64 `arg:"--limit" default:"100" help:"rows to print at most (0: all)"`
	Snapshot int64 `arg:"--snapshot" help:"snapshot to read [default: current]"`
	NoIndex  bool  `arg:"--no-index" help:"read every file statistics leave, ignoring the index (for comparison)"`
}

// ScanOutput is the JSON output of scan. Rows hold values with JSON's
// types (values.go says how each SQL type is written).
type ScanOutput struct {
	SnapshotID int64            `json:"snapshot_id"`
	FilesTotal int              `json:"files_total"`
	FilesRead  int              `json:"files_read"`
	Rows       []map[string]any `json:"rows"`
	// Truncated says that more rows match than --limit let through.
	Truncated     bool    `json:"truncated"`
	ElapsedMillis float64 `json:"elapsed_ms"`
}

// scanResult is what a scan read.
type scanResult struct {
	snapshotID int64
	filesTotal int
	filesRead  int
	schema     *arrow.Schema
	// rows are the cells of each row: valueJSON's values when e.json,
	// valueText's strings otherwise.
	rows [][]any
	// truncated: more rows match than the limit let through.
	truncated bool
	// indexErrors are the index's problems planning met; their files were
	// kept.
	indexErrors []error
	elapsed     time.Duration
}

// scanRows plans the filter of --where (with or without the index) and
// reads the planned files with iceberg-go's reader, which applies the
// filter to rows.
func scanRows(ctx context.Context, e *env, tableName, where string, snapshot, limit int64, noIndex bool) (*scanResult, error) {
	filter, err := lookup.ParseWhere(where)
	if err != nil {
		return nil, fmt.Errorf("--where: %w", err)
	}
	return scanFilter(ctx, e, tableName, filter, snapshot, limit, noIndex)
}

// scanFilter is scanRows with the filter parsed. A limit above 0 keeps that
// many rows; one more is read to tell whether the limit cut any.
func scanFilter(ctx context.Context, e *env, tableName string, filter iceberg.BooleanExpression, snapshot, limit int64, noIndex bool) (*scanResult, error) {
	start := time.Now()
	tbl, _, res, err := planFilter(ctx, e, tableName, filter, snapshot)
	if err != nil {
		return nil, err
	}
	tasks := res.Candidates
	if noIndex {
		tasks = res.AfterStats
	}
	readLimit := limit
	if limit > 0 {
		readLimit = limit + 1 // one more tells whether the limit cut any
	}
	// The rows are filtered with the plan's own binding (one binding for
	// lookup and scan), partly by iceberg-go, partly by rowscan.
	schema, records, err := rowscan.Read(ctx, tbl, res.Schema, res.Bound, tasks,
		rowscan.Options{Limit: readLimit, SnapshotID: res.SnapshotID})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", tableName, err)
	}
	out := &scanResult{snapshotID: res.SnapshotID, filesTotal: res.FilesTotal,
		filesRead: len(dataFiles(tasks)), schema: schema, indexErrors: res.IndexErrors}
	cell := func(a arrow.Array, i int) any { return valueText(a, i) }
	if e.json {
		cell = valueJSON
	}
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", tableName, err)
		}
		for i := range int(rec.NumRows()) {
			if limit > 0 && int64(len(out.rows)) >= limit {
				out.truncated = true
				break
			}
			row := make([]any, rec.NumCols())
			for c, col := range rec.Columns() {
				row[c] = cell(col, i)
			}
			out.rows = append(out.rows, row)
		}
		rec.Release()
	}
	out.elapsed = time.Since(start)
	return out, nil
}

func (c *ScanCmd) run(ctx context.Context, e *env) error {
	filter, err := c.filter(e)
	if err != nil {
		return err
	}
	res, err := scanFilter(ctx, e, c.Table, filter, c.Snapshot, c.Limit, c.NoIndex)
	if err != nil {
		return err
	}
	logIndexErrors(e.log, "scan", c.Table, res.indexErrors)
	if e.json {
		out := ScanOutput{SnapshotID: res.snapshotID, FilesTotal: res.filesTotal, FilesRead: res.filesRead,
			Rows: []map[string]any{}, Truncated: res.truncated, ElapsedMillis: float64(res.elapsed.Microseconds()) / 1000}
		for _, row := range res.rows {
			m := map[string]any{}
			for i, f := range res.schema.Fields() {
				m[f.Name] = row[i]
			}
			out.Rows = append(out.Rows, m)
		}
		return e.printJSON(out)
	}
	var names []string
	for _, f := range res.schema.Fields() {
		names = append(names, f.Name)
	}
	e.printf("%s\n", strings.Join(names, "\t"))
	cells := make([]string, len(names))
	for _, row := range res.rows {
		for i, v := range row {
			cells[i] = v.(string)
		}
		e.printf("%s\n", strings.Join(cells, "\t"))
	}
	e.log.Info("scan done", "command", "scan", "table", c.Table, "snapshot", res.snapshotID, "rows", len(res.rows),
		"files_read", res.filesRead, "files_total", res.filesTotal, "duration", res.elapsed)
	if res.truncated {
		e.log.Warn("more rows match: output cut at --limit", "command", "scan", "table", c.Table, "limit", c.Limit)
	}
	return nil
}
