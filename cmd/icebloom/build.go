package main

import (
	"context"
	"strings"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/build"
)

// BuildCmd is `icebloom build TABLE`.
type BuildCmd struct {
	Table    string  `arg:"positional,required" help:"table identifier, ns.table"`
	Columns  string  `arg:"--columns" help:"comma-separated columns to index [default: those with write.parquet.bloom-filter-enabled.column.<name>=true]"`
	FPP      float64 `arg:"--fpp" help:"target false-positive rate [default: write.parquet.bloom-filter-fpp.column.<name>, else 0.01]"`
	Snapshot int64   `arg:"--snapshot" help:"snapshot to index [default: current]"`
	Parallel int     `arg:"--parallel" help:"data files read at once [default: number of CPUs]"`
	FailFast bool    `arg:"--fail-fast" help:"fail on a data file that cannot be read instead of leaving it unindexed"`
}

func (c *BuildCmd) run(ctx context.Context, e *env) error {
	ident, err := catalog.ParseIdentifier(c.Table)
	if err != nil {
		return err
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	var cols []string
	for _, name := range strings.Split(c.Columns, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cols = append(cols, name)
		}
	}
	sum, err := build.Build(ctx, cat, ident, build.Options{
		Columns: cols, FPP: c.FPP, SnapshotID: c.Snapshot, Parallel: c.Parallel, FailFast: c.FailFast,
	})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(sum)
	}
	printBuildSummary(e, c.Table, sum)
	return nil
}

func printBuildSummary(e *env, table string, sum *build.Summary) {
	e.printf("indexed %d of %d data files of %s (snapshot %d), columns %s\n",
		sum.FilesIndexed, sum.FilesTotal, table, sum.SnapshotID, strings.Join(sum.Columns, ", "))
	e.printf("  %d filters, %s of index, %d distinct values, %s\n",
		sum.Blobs, bytesText(sum.IndexBytes), sum.DistinctValues, durationText(sum.Duration))
	if sum.StatisticsPath != "" {
		e.printf("  statistics file %s\n", sum.StatisticsPath)
	} else {
		e.printf("  nothing committed: no data file could be indexed\n")
	}
	for _, f := range sum.FilesFailed {
		e.printf("  not indexed (never pruned): %s: %s\n", f.Path, f.Error)
	}
}
