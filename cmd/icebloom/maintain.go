package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/build"
	"github.com/icebloom/icebloom/maintenance"
)

// CompactIndexCmd is `icebloom compact-index TABLE`.
type CompactIndexCmd struct {
	Table string `arg:"positional,required" help:"table identifier, ns.table"`
}

func (c *CompactIndexCmd) run(ctx context.Context, e *env) error {
	cat, ident, err := e.tableRef(ctx, c.Table)
	if err != nil {
		return err
	}
	sum, err := build.Compact(ctx, cat, ident, build.CompactOptions{})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(sum)
	}
	if sum.StatisticsPath == "" {
		e.printf("%s: the index is one segment of the current snapshot already: nothing committed\n", c.Table)
		return nil
	}
	e.printf("%s: %d segments merged into %d, %d entries kept, %d dropped, %s copied, %s\n  statistics file %s\n",
		c.Table, sum.SegmentsBefore, sum.SegmentsAfter, sum.EntriesKept, sum.EntriesDropped,
		bytesText(sum.BytesCopied), durationText(sum.Duration), sum.StatisticsPath)
	return nil
}

// RebuildCmd is `icebloom rebuild TABLE`: the manual full rebuild.
type RebuildCmd struct {
	indexFlags
}

func (c *RebuildCmd) run(ctx context.Context, e *env) error {
	return c.runIndex(ctx, e, c.options(), build.Rebuild)
}

// ExpireCmd is `icebloom expire TABLE`.
type ExpireCmd struct {
	Table      string `arg:"positional,required" help:"table identifier, ns.table"`
	OlderThan  *gcAge `arg:"--older-than,required" placeholder:"DUR" help:"expire snapshots older than this (a Go duration or days such as 7d)"`
	RetainLast int    `arg:"--retain-last" default:"1" help:"always keep this many most recent snapshots"`
}

func (c *ExpireCmd) run(ctx context.Context, e *env) error {
	cat, ident, err := e.tableRef(ctx, c.Table)
	if err != nil {
		return err
	}
	sum, err := maintenance.Expire(ctx, cat, ident, maintenance.ExpireOptions{OlderThan: c.OlderThan.d, RetainLast: c.RetainLast})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(sum)
	}
	e.printf("%s: %d snapshots expired\n", c.Table, len(sum.SnapshotsExpired))
	if f := sum.Folded; f != nil {
		e.printf("  index folded first: %d entries kept in the current snapshot's segment, %d of files only expired snapshots held dropped\n",
			f.EntriesKept, f.EntriesDropped)
	}
	return nil
}

// MaintainCmd is `icebloom maintain [TABLE ...]`: the scheduled job.
type MaintainCmd struct {
	Tables          []string `arg:"positional" help:"tables to maintain [default: every table with indexed columns configured]"`
	Namespace       string   `arg:"--namespace" help:"maintain the tables of this namespace"`
	ExpireOlderThan *gcAge   `arg:"--expire-older-than" placeholder:"DUR" help:"also expire snapshots older than this, folding their index segments first"`
	RetainLast      int      `arg:"--retain-last" default:"1" help:"with --expire-older-than: keep this many most recent snapshots"`
	GCOlderThan     *gcAge   `arg:"--gc-older-than" placeholder:"DUR" help:"grace period of orphan index files [default: 3d]"`
	CompactAbove    int      `arg:"--compact-above" help:"compact a table's index when it has more segments than this [default: 8]"`
	Parallel        int      `arg:"--parallel" help:"data files read at once [default: number of CPUs]"`
	Every           *gcAge   `arg:"--every" placeholder:"DUR" help:"keep running, once every DUR"`
}

// MaintainOutput is the JSON output of one maintenance round.
type MaintainOutput struct {
	Round  int                       `json:"round"`
	Tables []maintenance.TableReport `json:"tables"`
	Failed int                       `json:"failed"`
}

func (c *MaintainCmd) run(ctx context.Context, e *env) error {
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	o := maintenance.MaintainOptions{Index: build.Options{Parallel: c.Parallel}, CompactAbove: c.CompactAbove}
	if c.ExpireOlderThan != nil {
		o.Expire = &maintenance.ExpireOptions{OlderThan: c.ExpireOlderThan.d, RetainLast: c.RetainLast}
	}
	o.GC.OlderThan = c.GCOlderThan.grace()
	failedRounds := 0
	for round := 1; ; round++ {
		tables, err := c.tables(ctx, e)
		if err != nil {
			if ctx.Err() != nil {
				break // stopped while listing: nothing was started
			}
			return err
		}
		reports := maintenance.Maintain(ctx, cat, tables, o)
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
			e.printf(" synced %d new data files (%d covered already)", r.Sync.FilesIndexed, r.Sync.FilesCovered)
		}
		if r.Compact != nil {
			e.printf(", compacted %d segments into %d", r.Compact.SegmentsBefore, r.Compact.SegmentsAfter)
		}
		if r.Expire != nil {
			e.printf(", expired %d snapshots", len(r.Expire.SnapshotsExpired))
		}
		if r.GC != nil {
			e.printf(", deleted %d orphan index files", len(r.GC.Deleted))
		}
		e.printf("\n")
	}
}
