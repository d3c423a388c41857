package main

import (
	"context"
	"fmt"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/indexer"
)

// indexFlags are the flags of the commands that index data files.
type indexFlags struct {
	Table    string  `arg:"positional,required" help:"table identifier, ns.table"`
	Columns  string  `arg:"--columns" help:"comma-separated columns to index [default: those with write.parquet.bloom-filter-enabled.column.<name>=true]"`
	FPP      float64 `arg:"--fpp" help:"target false-positive rate [default: write.parquet.bloom-filter-fpp.column.<name>, else 0.01]"`
	Parallel int     `arg:"--parallel" help:"data files read at once [default: number of CPUs]"`
	FailFast bool    `arg:"--fail-fast" help:"fail on a data file that cannot be read instead of leaving it unindexed"`
	memoryFlag
	requestsFlag
}

// requestsFlag bounds the storage requests a run has in flight, reading
// the next data files ahead of the CPU workers (--parallel).
type requestsFlag struct {
	RequestsInFlight *int `arg:"--requests-in-flight" placeholder:"N" help:"storage requests in flight at most, reading the next data files' footers and chunks ahead of the workers [default: 32]"`
}

// requests returns the flag as indexer.Options takes it, 0 for the default.
func (f requestsFlag) requests() int {
	if f.RequestsInFlight == nil {
		return 0
	}
	return *f.RequestsInFlight
}

// check refuses fewer than one request in flight.
func (f requestsFlag) check() error {
	if f.RequestsInFlight != nil && *f.RequestsInFlight < 1 {
		return fmt.Errorf("--requests-in-flight %d: want at least 1 request", *f.RequestsInFlight)
	}
	return nil
}

// memoryFlag bounds the index bytes a run holds, whatever the table's size.
type memoryFlag struct {
	MemoryMiB int `arg:"--memory-budget-mib" help:"MiB of filters held before they are written as groups (merges: buffers) [default: 256]"`
}

// budget returns the flag in bytes, 0 for the default.
func (f memoryFlag) budget() int64 { return int64(f.MemoryMiB) << 20 }

// check refuses a negative budget.
func (f memoryFlag) check() error {
	if f.MemoryMiB < 0 {
		return fmt.Errorf("--memory-budget-mib %d: want a positive number of MiB (or 0 for the default)", f.MemoryMiB)
	}
	return nil
}

func (f indexFlags) options() indexer.Options {
	var cols []string
	for _, name := range strings.Split(f.Columns, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cols = append(cols, name)
		}
	}
	return indexer.Options{Columns: cols, FPP: f.FPP, Parallel: f.Parallel, RequestsInFlight: f.requests(),
		FailFast: f.FailFast, MemoryBudget: f.budget()}
}

// runIndex runs build, sync or rebuild (command) with a progress bar on a
// terminal, logs and records what it did, and prints its summary.
func (f indexFlags) runIndex(ctx context.Context, e *env, command string, o indexer.Options,
	job func(context.Context, icecat.Catalog, table.Identifier, indexer.Options) (*indexer.Summary, error)) error {
	if err := f.memoryFlag.check(); err != nil {
		return err
	}
	if err := f.requestsFlag.check(); err != nil {
		return err
	}
	start := e.now()
	tr := e.track(&o, f.Table)
	sum, err := func() (*indexer.Summary, error) {
		cat, ident, err := e.tableRef(ctx, f.Table)
		if err != nil {
			return nil, err
		}
		return job(ctx, cat, ident, o)
	}()
	tr.finish()
	if e.metrics != nil {
		end := e.now()
		e.metrics.indexed(runLabels{command, f.Table}, sum, tr.last.Bytes, end.Sub(start), end)
	}
	if err != nil {
		return err
	}
	logIndexed(e.log, command, f.Table, sum)
	if e.json {
		return e.printJSON(sum)
	}
	printBuildSummary(e, f.Table, sum)
	return nil
}

// BuildCmd is `icebloom build TABLE`.
type BuildCmd struct {
	indexFlags
	Snapshot int64 `arg:"--snapshot" help:"snapshot to index [default: current]"`
}

func (c *BuildCmd) run(ctx context.Context, e *env) error {
	o := c.options()
	o.SnapshotID = c.Snapshot
	return c.runIndex(ctx, e, "build", o, indexer.Build)
}

// SyncCmd is `icebloom sync TABLE`: index the live data files no entry
// covers yet, as after appends and compactions.
type SyncCmd struct {
	indexFlags
	CompactAbove int `arg:"--compact-above" help:"compact the index when it has more segments than this; negative: never [default: 8]"`
}

func (c *SyncCmd) run(ctx context.Context, e *env) error {
	o := c.options()
	o.CompactAbove = c.CompactAbove
	return c.runIndex(ctx, e, "sync", o, indexer.Sync)
}

func printBuildSummary(e *env, table string, sum *indexer.Summary) {
	e.printf("indexed %d of %d data files of %s (snapshot %d), columns %s\n",
		sum.FilesIndexed, sum.FilesTotal, table, sum.SnapshotID, strings.Join(sum.Columns, ", "))
	if sum.FilesCovered > 0 {
		e.printf("  %d data files were already covered; %s of entries carried over\n", sum.FilesCovered, bytesText(sum.BytesCopied))
	}
	e.printf("  %d filters, %s of index, %d distinct values, %s\n",
		sum.Blobs, bytesText(sum.IndexBytes), sum.DistinctValues, durationText(sum.Duration))
	switch {
	case sum.StatisticsPath != "":
		e.printf("  statistics file %s (%d segments in all)\n", sum.StatisticsPath, sum.Segments)
	case sum.FilesIndexed == 0 && len(sum.FilesFailed) == 0:
		e.printf("  nothing to index: nothing committed\n")
	default:
		e.printf("  nothing committed: no data file could be indexed\n")
	}
	for _, f := range sum.FilesFailed {
		e.printf("  not indexed (never pruned): %s: %s\n", f.Path, f.Error)
	}
}
