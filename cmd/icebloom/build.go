package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/cmd/internal/metricsfile"
	"github.com/icebloom/icebloom/index/indexer"
)

// indexFlags are the flags of the commands that index data files.
type indexFlags struct {
	Table    string   `arg:"positional,required" help:"table identifier, ns.table"`
	Columns  string   `arg:"--columns" help:"comma-separated columns to index besides those the index already holds and those with write.parquet.bloom-filter-enabled.column.<name>=true (remove one with compact-index --drop-columns); a name with a comma in double quotes"`
	FPP      *float64 `arg:"--fpp" help:"target false-positive rate, between 0 and 1 [default: write.parquet.bloom-filter-fpp.column.<name>, else the rate the column's filters already target, else 0.01]"`
	Parallel *int     `arg:"--parallel" help:"data files read at once, 1 or more [default: number of CPUs]"`
	FailFast bool     `arg:"--fail-fast" help:"fail on a data file that cannot be read instead of leaving it unindexed"`
	memoryFlag
	shardFlags
	requestsFlag
}

// shardFlags make a run one shard of a sharded run: one machine of many
// indexing a big table together (a Kubernetes Indexed Job, an AWS Batch
// array job).
type shardFlags struct {
	Shard  string `arg:"--shard" placeholder:"I/N" help:"index only shard I of N (0 <= I < N) of the data files into a segment of this shard; the shard that finds all N written makes the run's one commit linking them"`
	Shards int    `arg:"--shards,env:ICEBLOOM_SHARDS" placeholder:"N" help:"shard count, this shard's index taken from JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch array job)"`
	RunID  string `arg:"--run-id,env:ICEBLOOM_RUN_ID" placeholder:"ID" help:"the sharded run's name, the same for all its shards [default: from the snapshot and the shard count]"`
}

// shardIndexEnv are the variables orchestrators set to a task's index, in
// the order they are consulted.
var shardIndexEnv = []string{"JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"}

// shard returns the shard the flags and environment select, nil for a run
// that is not sharded.
func (f shardFlags) shard() (*indexer.Shard, error) {
	if f.Shard == "" && f.Shards == 0 {
		if f.RunID != "" {
			return nil, fmt.Errorf("--run-id %q names a sharded run, but neither --shard nor --shards is given", f.RunID)
		}
		return nil, nil
	}
	if f.Shards < 0 {
		return nil, fmt.Errorf("--shards %d: want at least 1", f.Shards)
	}
	if f.Shard != "" {
		i, n, err := indexer.ParseShard(f.Shard)
		if err != nil {
			return nil, fmt.Errorf("--shard: %w", err)
		}
		if f.Shards != 0 && f.Shards != n {
			return nil, fmt.Errorf("--shard %s and --shards %d (or ICEBLOOM_SHARDS) disagree on the shard count", f.Shard, f.Shards)
		}
		return &indexer.Shard{Index: i, Count: n, Run: f.RunID}, nil
	}
	for _, name := range shardIndexEnv {
		v, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 || i >= f.Shards {
			return nil, fmt.Errorf("%s=%q is not a shard index of --shards %d (0 to %d)", name, v, f.Shards, f.Shards-1)
		}
		return &indexer.Shard{Index: i, Count: f.Shards, Run: f.RunID}, nil
	}
	return nil, fmt.Errorf("--shards %d needs this shard's index: --shard I/%d, or %s set by the orchestrator", f.Shards, f.Shards, strings.Join(shardIndexEnv, " or "))
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

// checkValues refuses fewer than one request in flight.
func (f requestsFlag) checkValues() error {
	if f.RequestsInFlight != nil && *f.RequestsInFlight < 1 {
		return fmt.Errorf("--requests-in-flight %d: want at least 1 request", *f.RequestsInFlight)
	}
	return nil
}

// memoryFlag bounds the index bytes a run holds, whatever the table's size.
type memoryFlag struct {
	MemoryMiB *int `arg:"--memory-budget-mib" help:"MiB of filters held before they are written as groups (merges: buffers) [default: 256]"`
}

// budget returns the flag in bytes, 0 for the default.
func (f memoryFlag) budget() int64 {
	if f.MemoryMiB == nil {
		return 0
	}
	return int64(*f.MemoryMiB) << 20
}

func (f indexFlags) options() indexer.Options {
	o := indexer.Options{Columns: columnList("--columns", f.Columns), RequestsInFlight: f.requests(), FailFast: f.FailFast, MemoryBudget: f.budget()}
	if f.FPP != nil {
		o.FPP = *f.FPP
	}
	if f.Parallel != nil {
		o.Parallel = *f.Parallel
	}
	return o
}

// columnList splits a list of column names that checkFlags has checked
// (splitColumns: names with commas double-quoted).
func columnList(flag, s string) []string {
	cols, _ := splitColumns(flag, s) // checked with the other flags
	return cols
}

// runIndex runs build, sync or rebuild (command) with a progress bar on a
// terminal, logs and records what it did, and prints its summary.
func (f indexFlags) runIndex(ctx context.Context, e *env, command string, o indexer.Options,
	job func(context.Context, icecatalog.Catalog, table.Identifier, indexer.Options) (*indexer.Summary, error)) error {
	var err error
	if o.Shard, err = f.shard(); err != nil { // checked with the other flags: reads the environment again
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
		e.metrics.Indexed(metricsfile.Labels{Command: command, Table: f.Table}, sum, tr.last.Bytes, end.Sub(start), end)
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
	Snapshot     int64 `arg:"--snapshot" help:"snapshot to index [default: current]"`
	CompactAbove *int  `arg:"--compact-above" help:"with --shard(s): the one shard that links its complete run compacts the index when it has more segments than this, each shard's counting; negative: never, left to the next maintain [default: 8]"`
}

func (c *BuildCmd) run(ctx context.Context, e *env) error {
	o := c.options()
	o.SnapshotID = c.Snapshot
	if c.CompactAbove != nil {
		o.CompactAbove = *c.CompactAbove
	}
	return c.runIndex(ctx, e, "build", o, indexer.Build)
}

// SyncCmd is `icebloom sync TABLE`: index the live data files no entry
// covers yet, as after appends and compactions.
type SyncCmd struct {
	indexFlags
	CompactAbove *int   `arg:"--compact-above" help:"compact the index when it has more segments than this; negative: never [default: 8]"`
	RunLease     *gcAge `arg:"--run-lease" placeholder:"DUR" help:"a sharded run counts as live this long after a shard last touched its lease: its files are left to it; past it, the sync links the finished shards' segments and indexes the rest; at least 5m [default: 10m]"`
}

func (c *SyncCmd) run(ctx context.Context, e *env) error {
	o := c.options()
	if c.CompactAbove != nil {
		o.CompactAbove = *c.CompactAbove
	}
	o.RunLease = runLease(c.RunLease)
	return c.runIndex(ctx, e, "sync", o, indexer.Sync)
}

func printBuildSummary(e *env, table string, sum *indexer.Summary) {
	e.printf("indexed %d of %s of %s (snapshot %d), columns %s\n",
		sum.FilesIndexed, plural(sum.FilesTotal, "data file"), table, sum.SnapshotID, strings.Join(sum.Columns, ", "))
	if sum.FilesLeftToRuns > 0 {
		e.printf("  %s left to live sharded runs\n", plural(sum.FilesLeftToRuns, "data file"))
	}
	if sum.FilesCovered > 0 {
		e.printf("  %s already covered; %s of entries carried over\n", plural(sum.FilesCovered, "data file was", "data files were"), cli.BytesText(sum.BytesCopied))
	}
	e.printf("  %s, %s of index, %s, %s\n",
		plural(sum.Blobs, "filter"), cli.BytesText(sum.IndexBytes), plural(sum.DistinctValues, "distinct value"), cli.DurationText(sum.Duration))
	for _, c := range sum.PerColumn {
		// Counts after the words: right for 1 as for 5, with no plurals.
		e.printf("  column %s (%s): filters written %d", c.Name, strings.Join(c.Sources, ", "), c.FilesIndexed)
		if c.FilesCovered > 0 {
			e.printf(", data files covered already (not read) %d", c.FilesCovered)
		}
		if c.FilesFailedCount > 0 {
			e.printf(", data files failed %d", c.FilesFailedCount)
		}
		e.printf("\n")
	}
	for _, n := range sum.NotIndexed {
		e.printf("  column %s (field id %d) no longer indexed: %s; its filters stay until compact-index --drop-columns removes them\n",
			n.Name, n.FieldID, n.Reason)
	}
	switch {
	case sum.StatisticsPath != "":
		e.printf("  statistics file %s (%s in all)\n", sum.StatisticsPath, plural(sum.Segments, "segment"))
	case sum.FilesIndexed == 0 && len(sum.FilesFailed) == 0:
		e.printf("  nothing to index: nothing committed\n")
	default:
		e.printf("  nothing committed: no data file could be indexed\n")
	}
	if sh := sum.Shard; sh != nil {
		e.printf("  shard %d of %d of run %s: %d of %d shards' segments written\n", sh.Index, sh.Count, sh.Run, sh.Committed, sh.Count)
		switch {
		case sh.Merged:
			e.printf("  the run is complete: this shard linked it and merged the index\n")
		case sh.Linked:
			e.printf("  the run is complete: this shard linked it (%s copied instead of linked)\n", plural(sh.Copied, "segment"))
		case sh.LinkedBefore:
			e.printf("  the run is complete: another shard linked it\n")
		default:
			e.printf("  the shard that finds all written links the run\n")
		}
	}
	for _, f := range sum.FilesFailed {
		e.printf("  not indexed (never pruned): %s: %s\n", f.Path, f.Error)
	}
}
