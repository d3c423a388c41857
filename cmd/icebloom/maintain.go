package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/cmd/internal/metricsfile"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// CompactIndexCmd is `icebloom compact-index TABLE`.
type CompactIndexCmd struct {
	Table       string `arg:"positional,required" help:"table identifier, ns.table"`
	DropColumns string `arg:"--drop-columns" placeholder:"COLS" help:"comma-separated columns to remove from the index (a name with a comma in double quotes): their filters are left out, lookups on them keep every file, and sync no longer indexes them"`
	memoryFlag
}

func (c *CompactIndexCmd) run(ctx context.Context, e *env) error {
	start := e.now()
	sum, err := func() (*indexer.CompactSummary, error) {
		cat, ident, err := e.tableRef(ctx, c.Table)
		if err != nil {
			return nil, err
		}
		return indexer.Compact(ctx, cat, ident, indexer.CompactOptions{Logger: e.log, MemoryBudget: c.budget(), DropColumns: columnList("--drop-columns", c.DropColumns)})
	}()
	if e.metrics != nil {
		end := e.now()
		e.metrics.Compacted(metricsfile.Labels{Command: "compact-index", Table: c.Table}, sum, end.Sub(start), end)
	}
	if err != nil {
		return err
	}
	e.log.Info("index compacted", "command", "compact-index", "table", c.Table,
		"segments_before", sum.SegmentsBefore, "segments_after", sum.SegmentsAfter,
		"entries_kept", sum.EntriesKept, "entries_dropped", sum.EntriesDropped,
		"bytes_copied", sum.BytesCopied, "statistics_path", sum.StatisticsPath, "duration", sum.Duration,
		"dropped_columns", droppedText(sum.DroppedColumns))
	if e.json {
		return e.printJSON(sum)
	}
	if sum.SegmentsBefore == 0 && sum.StatisticsPath == "" {
		e.printf("%s; nothing to compact (exit 0: there was nothing to do, as for inspect; verify, a check, fails)\n", noIndex(c.Table))
		return nil
	}
	if sum.StatisticsPath == "" {
		e.printf("%s: the index is one segment of the current snapshot already: nothing committed\n", c.Table)
		return nil
	}
	e.printf("%s: %s merged into %d, %s kept, %d dropped, %s copied, %s\n  statistics file %s\n",
		c.Table, plural(sum.SegmentsBefore, "segment"), sum.SegmentsAfter, plural(sum.EntriesKept, "entry"), sum.EntriesDropped,
		cli.BytesText(sum.BytesCopied), cli.DurationText(sum.Duration), sum.StatisticsPath)
	if n := len(sum.BrokenFiles) + len(sum.BrokenGroups); n > 0 {
		// Their data files are unindexed now (never pruned) until a sync.
		e.printf("  %d broken index files removed, %d broken groups left out: `icebloom sync %s` indexes their data files again\n",
			len(sum.BrokenFiles), len(sum.BrokenGroups), c.Table)
	}
	for _, d := range sum.DroppedColumns {
		e.printf("  column %s dropped from the index: filters left out %d\n", d.Name, d.Filters)
	}
	return nil
}

// droppedText writes the columns a compaction dropped for a log record,
// "email (3 filters), ssn (1 filter)", where slog printed the Go structs.
func droppedText(cols []indexer.DroppedColumn) string {
	parts := make([]string, len(cols))
	for i, d := range cols {
		parts[i] = fmt.Sprintf("%s (%s)", d.Name, plural(d.Filters, "filter"))
	}
	return strings.Join(parts, ", ")
}

// RebuildCmd is `icebloom rebuild TABLE`: the manual full rebuild.
type RebuildCmd struct {
	indexFlags
}

func (c *RebuildCmd) run(ctx context.Context, e *env) error {
	return c.runIndex(ctx, e, "rebuild", c.options(), indexer.Rebuild)
}

// ExpireCmd is `icebloom expire TABLE`.
type ExpireCmd struct {
	Table      string `arg:"positional,required" help:"table identifier, ns.table"`
	OlderThan  *gcAge `arg:"--older-than" placeholder:"DUR" help:"expire snapshots older than this (a Go duration or days such as 7d); 0s expires every snapshot but the retained ones (required)"`
	RetainLast int    `arg:"--retain-last" default:"1" help:"always keep this many most recent snapshots"`
	RunLease   *gcAge `arg:"--run-lease" placeholder:"DUR" help:"a sharded run counts as live this long after a shard last touched its lease, and the snapshot it indexes is kept; at least 5m [default: 10m]"`
	memoryFlag
}

// runLease is the duration of a --run-lease flag, 0 when not given.
func runLease(flag *gcAge) time.Duration {
	if flag == nil {
		return 0
	}
	return flag.d
}

// validate requires --older-than: go-arg would name a missing required
// flag by its placeholder ("DUR is required"), not by the flag.
func (c *ExpireCmd) validate() error {
	if c.OlderThan == nil {
		return errors.New("--older-than is required")
	}
	return runLeaseError(c.RunLease)
}

// runLeaseError refuses a --run-lease that a working shard could outlive
// between two touches of its lease.
func runLeaseError(flag *gcAge) error {
	if err := indexer.CheckRunLease(runLease(flag)); err != nil {
		return fmt.Errorf("--run-lease: %w", err)
	}
	return nil
}

func (c *ExpireCmd) run(ctx context.Context, e *env) error {
	cat, ident, err := e.tableRef(ctx, c.Table)
	if err != nil {
		return err
	}
	sum, err := maintenance.Expire(ctx, cat, ident, maintenance.ExpireOptions{OlderThan: new(c.OlderThan.d), RetainLast: c.RetainLast, Logger: e.log,
		MemoryBudget: c.budget(), RunLease: runLease(c.RunLease)})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(sum)
	}
	e.printf("%s: %s expired\n", c.Table, plural(len(sum.SnapshotsExpired), "snapshot"))
	if len(sum.KeptForRuns) > 0 {
		e.printf("  kept for live sharded runs: %s and every later snapshot\n", plural(len(sum.KeptForRuns), "snapshot"))
	}
	if f := sum.Folded; f != nil {
		e.printf("  index folded first: %s kept in the current snapshot's segment, %d of files only expired snapshots held dropped\n",
			plural(f.EntriesKept, "entry"), f.EntriesDropped)
	}
	return nil
}

// MaintainCmd is `icebloom maintain [TABLE ...]`: the scheduled job.
type MaintainCmd struct {
	Tables          []string `arg:"positional" help:"tables to maintain [default: every table with an icebloom index or indexed columns enabled by its properties]"`
	Namespace       string   `arg:"--namespace" help:"maintain the tables of this namespace"`
	ExpireOlderThan *gcAge   `arg:"--expire-older-than" placeholder:"DUR" help:"also expire snapshots older than this, folding their index segments first; 0s expires every snapshot but the retained ones"`
	RetainLast      int      `arg:"--retain-last" default:"1" help:"with --expire-older-than: keep this many most recent snapshots"`
	GCOlderThan     *gcAge   `arg:"--gc-older-than" placeholder:"DUR" help:"grace period of orphan index files, at least 1h [default: 3d]"`
	CompactAbove    *int     `arg:"--compact-above" help:"compact a table's index when it has more segments than this; negative: never [default: 8]"`
	Parallel        *int     `arg:"--parallel" help:"data files read at once, 1 or more [default: number of CPUs]"`
	requestsFlag
	memoryFlag
	Every        *gcAge `arg:"--every" placeholder:"DUR" help:"keep running, once every DUR (more than 0s)"`
	VerifySample *int   `arg:"--verify-sample" placeholder:"N" help:"verify each table's index last (as icebloom verify), re-reading N sampled data files; a problem fails the table"`
	NoRepair     bool   `arg:"--no-repair" help:"skip the checksum pass over each table's whole index that finds and rewrites damaged index files (it reads every index byte once)"`
	RunLease     *gcAge `arg:"--run-lease" placeholder:"DUR" help:"a sharded run counts as live this long after a shard last touched its lease: its files are left to it and its snapshot is kept; at least 5m [default: 10m]"`
}

// MaintainOutput is the JSON output of one maintenance round.
type MaintainOutput struct {
	Round  int                       `json:"round"`
	Tables []maintenance.TableReport `json:"tables"`
	Failed int                       `json:"failed"`
}

func (c *MaintainCmd) run(ctx context.Context, e *env) error {
	if err := runLeaseError(c.RunLease); err != nil {
		return err
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		c.failedBeforeTables(e, e.now())
		return err
	}
	o := maintenance.MaintainOptions{Index: indexer.Options{RequestsInFlight: c.requests(), Logger: e.log, MemoryBudget: c.budget()}, NoRepair: c.NoRepair,
		RunLease: runLease(c.RunLease)}
	if c.Parallel != nil {
		o.Index.Parallel = *c.Parallel
	}
	if c.CompactAbove != nil {
		o.CompactAbove = *c.CompactAbove
	}
	if c.ExpireOlderThan != nil {
		o.Expire = &maintenance.ExpireOptions{OlderThan: new(c.ExpireOlderThan.d), RetainLast: c.RetainLast, Logger: e.log}
	}
	o.GC.OlderThan = c.GCOlderThan.grace()
	if c.VerifySample != nil {
		o.Verify = &verify.Options{Sample: *c.VerifySample}
	}
	failedRounds := 0
	for round := 1; ; round++ {
		start := e.now()
		tables, err := c.tables(ctx, e)
		if err != nil {
			if ctx.Err() != nil {
				break // stopped while listing: nothing was started
			}
			c.failedBeforeTables(e, start)
			return err
		}
		reports := c.maintain(ctx, e, cat, tables, o, round)
		if len(reports) == 0 && len(tables) > 0 {
			break // stopped before the round's first table: nothing to report
		}
		out := MaintainOutput{Round: round, Tables: reports}
		for _, r := range reports {
			if r.Failed() {
				out.Failed++
			}
		}
		if out.Failed > 0 {
			failedRounds++
		}
		c.print(e, out)
		e.log.Info("maintenance round done", "command", "maintain", "round", round,
			"tables", len(reports), "failed", out.Failed, "duration", e.now().Sub(start))
		if e.metrics != nil && c.Every != nil {
			// Each round's file, for a scheduler that keeps running; a
			// write that fails is logged and the rounds go on (run writes
			// the file once more at the end and reports the error then).
			if err := e.metrics.Write(); err != nil {
				e.log.Error("metrics file not written", "command", "maintain", "round", round, "error", err)
			}
		}
		if c.Every == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.Every.d):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failedRounds > 0 {
		return fmt.Errorf("maintenance failed for some tables in %d rounds", failedRounds)
	}
	return nil
}

// maintain runs maintenance.MaintainTable on each table in turn, as
// maintenance.Maintain does (stopping between tables when ctx ends), with a
// progress bar for each table's sync and a log record and metrics per
// table as it finishes rather than when the round does.
func (c *MaintainCmd) maintain(ctx context.Context, e *env, cat icecatalog.Catalog, tables []table.Identifier,
	o maintenance.MaintainOptions, round int) []maintenance.TableReport {
	reports := make([]maintenance.TableReport, 0, len(tables))
	for _, ident := range tables {
		if ctx.Err() != nil {
			break
		}
		to := o
		tr := e.track(&to.Index, strings.Join(ident, "."))
		start := e.now()
		r := maintenance.MaintainTable(ctx, cat, ident, to)
		tr.finish()
		end := e.now()
		logMaintained(e.log, r, round, end.Sub(start))
		if e.metrics != nil {
			e.metrics.Maintained(r, tr.last.Bytes, end.Sub(start), end)
		}
		reports = append(reports, r)
	}
	return reports
}

// failedBeforeTables records a round that failed before any table (the
// catalog could not be opened or listed) in the metrics, under table "".
func (c *MaintainCmd) failedBeforeTables(e *env, start time.Time) {
	if e.metrics != nil {
		end := e.now()
		e.metrics.Run(metricsfile.Labels{Command: "maintain"}, end.Sub(start), end, true)
	}
}

// tables returns the tables named, or those of the namespace, or all.
func (c *MaintainCmd) tables(ctx context.Context, e *env) ([]table.Identifier, error) {
	if len(c.Tables) > 0 {
		var out []table.Identifier
		for _, name := range c.Tables {
			ident, err := catalog.ParseIdentifier(name)
			if err != nil {
				return nil, err
			}
			out = append(out, ident)
		}
		return out, nil
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var ns table.Identifier
	if c.Namespace != "" {
		if ns, err = catalog.ParseNamespace(c.Namespace); err != nil {
			return nil, err
		}
	}
	return maintenance.Tables(ctx, cat, ns)
}

func (c *MaintainCmd) print(e *env, out MaintainOutput) {
	if e.json {
		e.printJSON(out)
		return
	}
	for _, r := range out.Tables {
		switch {
		case r.Skipped != "":
			e.printf("%s: skipped, %s\n", r.Table, r.Skipped)
			continue
		case r.Failed():
			e.printf("%s: FAILED: %s\n", r.Table, r.Error)
			continue
		}
		e.printf("%s:", r.Table)
		if r.Sync != nil {
			e.printf(" synced %s (%d covered already)", plural(r.Sync.FilesIndexed, "new data file"), r.Sync.FilesCovered)
		}
		if r.Compact != nil {
			e.printf(", compacted %s into %d", plural(r.Compact.SegmentsBefore, "segment"), r.Compact.SegmentsAfter)
		}
		if r.Repair != nil && r.Repair.Compacted != nil {
			e.printf(", repaired %s (%s indexed again)", plural(len(r.Repair.Damaged), "damaged index file"),
				plural(len(r.Repair.Compacted.BrokenGroups), "broken group"))
		}
		if r.Expire != nil {
			e.printf(", expired %s", plural(len(r.Expire.SnapshotsExpired), "snapshot"))
		}
		if r.GC != nil {
			e.printf(", deleted %s", plural(len(r.GC.Deleted), "orphan index file"))
		}
		if r.Verify != nil {
			e.printf(", verified (%s re-read)", plural(len(r.Verify.Sampled), "data file"))
		}
		e.printf("\n")
	}
}
