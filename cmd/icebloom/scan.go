package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/lookup"
)

// ScanCmd is `icebloom scan TABLE --where EXPR`.
type ScanCmd struct {
	Table string `arg:"positional,required" help:"table identifier, ns.table"`
	whereFlags
	Limit    int64 `arg:"--limit" default:"100" help:"rows to print at most (0: all)"`
	Snapshot int64 `arg:"--snapshot" help:"snapshot to read [default: current]"`
	NoIndex  bool  `arg:"--no-index" help:"read every file statistics leave, ignoring the index (for comparison)"`
}

// ScanOutput is the JSON output of scan.
type ScanOutput struct {
	SnapshotID    int64            `json:"snapshot_id"`
	FilesTotal    int              `json:"files_total"`
	FilesRead     int              `json:"files_read"`
	Rows          []map[string]any `json:"rows"`
	ElapsedMillis float64          `json:"elapsed_ms"`
}

// scanResult is what a scan read.
type scanResult struct {
	snapshotID int64
	filesTotal int
	filesRead  int
	schema     *arrow.Schema
	rows       [][]any
	elapsed    time.Duration
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

// scanFilter is scanRows with the filter parsed.
func scanFilter(ctx context.Context, e *env, tableName string, filter iceberg.BooleanExpression, snapshot, limit int64, noIndex bool) (*scanResult, error) {
	start := time.Now()
	tbl, filter, res, err := planFilter(ctx, e, tableName, filter, snapshot)
	if err != nil {
		return nil, err
	}
	tasks := res.Candidates
	if noIndex {
		tasks = res.AfterStats
	}
	opts := []table.ScanOption{table.WithRowFilter(filter), table.WithSnapshotID(res.SnapshotID)}
	scan := tbl.Scan(opts...)
	schema, records, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", tableName, err)
	}
	out := &scanResult{snapshotID: res.SnapshotID, filesTotal: res.FilesTotal,
		filesRead: len(dataFiles(tasks)), schema: schema}
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", tableName, err)
		}
		for i := range int(rec.NumRows()) {
			if limit > 0 && int64(len(out.rows)) >= limit {
				break
			}
			row := make([]any, rec.NumCols())
			for c, col := range rec.Columns() {
				row[c] = col.GetOneForMarshal(i)
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
	if e.json {
		out := ScanOutput{SnapshotID: res.snapshotID, FilesTotal: res.filesTotal, FilesRead: res.filesRead,
			Rows: []map[string]any{}, ElapsedMillis: float64(res.elapsed.Microseconds()) / 1000}
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
	for _, row := range res.rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = fmt.Sprint(v)
		}
		e.printf("%s\n", strings.Join(cells, "\t"))
	}
	fmt.Fprintf(e.stderr, "%d rows from %d of %d data files in %s\n", len(res.rows), res.filesRead, res.filesTotal, durationText(res.elapsed))
	return nil
}
