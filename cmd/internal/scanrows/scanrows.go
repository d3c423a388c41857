// Package scanrows times a scan as `icebloom scan` runs one — plan the
// filter with the index, read the planned files with iceberg-go's reader —
// and counts the rows it returns, with or without the index. The demo
// (quickstart) and the bench compare the two; this package neither prints
// rows nor keeps them. Plan is the scan's first step alone.
package scanrows

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/rowscan"
	"github.com/icebloom/icebloom/index/where"
)

// Result is what one scan read.
type Result struct {
	// Rows counts the rows matching the filter.
	Rows int64
	// Elapsed is the whole scan: loading the table, planning, reading.
	Elapsed time.Duration
}

// Count loads the table ident of cat, plans the filter where (the WHERE
// language of where.Parse) with the index or, with noIndex, keeps
// every file min/max statistics leave (as scan --no-index), and reads the
// planned files as scan does (index/rowscan).
func Count(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, where string, noIndex bool) (Result, error) {
	start := time.Now()
	name := strings.Join(ident, ".")
	tbl, _, res, err := Plan(ctx, cat, ident, where)
	if err != nil {
		return Result{}, err
	}
	tasks := res.Candidates
	if noIndex {
		tasks = res.AfterStats
	}
	// As icebloom scan reads: with the plan's binding, iceberg-go filtering
	// what it evaluates correctly and rowscan the rest.
	_, records, err := rowscan.Read(ctx, tbl, res.Schema, res.Bound, tasks, rowscan.Options{SnapshotID: res.SnapshotID})
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", name, err)
	}
	var out Result
	for rec, err := range records {
		if err != nil {
			return Result{}, fmt.Errorf("read %s: %w", name, err)
		}
		out.Rows += rec.NumRows()
		rec.Release()
	}
	out.Elapsed = time.Since(start)
	return out, nil
}

// Plan parses whereText (the WHERE language of where.Parse), loads the
// table ident of cat and plans the filter with the index, as a scan starts.
func Plan(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, whereText string) (*table.Table, iceberg.BooleanExpression, *lookup.Result, error) {
	name := strings.Join(ident, ".")
	filter, err := where.Parse(whereText)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--where: %w", err)
	}
	tbl, err := catalog.LoadTable(ctx, cat, ident)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load table %s: %w", name, err)
	}
	res, err := lookup.Plan(ctx, tbl, filter, lookup.Options{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("plan %s on %s: %w", whereText, name, err)
	}
	return tbl, filter, res, nil
}
