package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/lookup"
)

// LookupCmd is `icebloom lookup TABLE --where EXPR`.
type LookupCmd struct {
	Table    string `arg:"positional,required" help:"table identifier, ns.table"`
	Where    string `arg:"--where,required" help:"filter: col = literal, col IN (l1, ...), AND, OR, parentheses"`
	Snapshot int64  `arg:"--snapshot" help:"snapshot to plan [default: current]"`
}

// LookupOutput is the JSON output of lookup.
type LookupOutput struct {
	SnapshotID      int64    `json:"snapshot_id"`
	FilesTotal      int      `json:"files_total"`
	FilesAfterStats int      `json:"files_after_stats"`
	Candidates      []string `json:"candidates"`
	Unindexed       []string `json:"unindexed"`
	IndexErrors     []string `json:"index_errors"`
	BlocksRead      int64    `json:"index_blocks_read"`
	BytesRead       int64    `json:"index_bytes_read"`
	Requests        int64    `json:"index_requests"`
	ElapsedMillis   float64  `json:"elapsed_ms"`
}

// plan loads the table, parses the filter and plans it with the index.
func plan(ctx context.Context, e *env, tableName, where string, snapshot int64) (*table.Table, iceberg.BooleanExpression, *lookup.Result, error) {
	filter, err := lookup.ParseWhere(where)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--where: %w", err)
	}
	tbl, err := e.table(ctx, tableName)
	if err != nil {
		return nil, nil, nil, err
	}
	var opts lookup.Options
	if snapshot != 0 {
		opts.SnapshotID = &snapshot
	}
	res, err := lookup.Plan(ctx, tbl, filter, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return tbl, filter, res, nil
}

func (c *LookupCmd) run(ctx context.Context, e *env) error {
	start := time.Now()
	_, _, res, err := plan(ctx, e, c.Table, c.Where, c.Snapshot)
	if err != nil {
		return err
	}
	out := LookupOutput{
		SnapshotID:      res.SnapshotID,
		FilesTotal:      res.FilesTotal,
		FilesAfterStats: len(dataFiles(res.AfterStats)),
		Candidates:      dataFiles(res.Candidates),
		Unindexed:       append([]string{}, res.Unindexed...),
		IndexErrors:     []string{},
		BlocksRead:      res.BlocksRead,
		BytesRead:       res.BytesRead,
		Requests:        res.Requests,
		ElapsedMillis:   float64(time.Since(start).Microseconds()) / 1000,
	}
	for _, err := range res.IndexErrors {
		out.IndexErrors = append(out.IndexErrors, err.Error())
	}
	if e.json {
		return e.printJSON(out)
	}
	for _, f := range out.Candidates {
		e.printf("%s\n", f)
	}
	fmt.Fprintf(e.stderr, "%d candidate files of %d (%d after statistics), snapshot %d, %s\n",
		len(out.Candidates), out.FilesTotal, out.FilesAfterStats, out.SnapshotID, durationText(time.Since(start)))
	if len(out.Unindexed) > 0 {
		fmt.Fprintf(e.stderr, "%d candidate files are not indexed\n", len(out.Unindexed))
	}
	for _, msg := range out.IndexErrors {
		fmt.Fprintf(e.stderr, "index problem (files kept): %s\n", msg)
	}
	return nil
}

// dataFiles lists the data files of tasks once each, in order: a large
// file may be planned as several tasks.
func dataFiles(tasks []table.FileScanTask) []string {
	seen := map[string]bool{}
	files := []string{}
	for _, t := range tasks {
		if p := t.File.FilePath(); !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	return files
}
