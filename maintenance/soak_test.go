package maintenance_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// soakDuration is how long TestSoak runs its loops: a few seconds in CI,
// ICEBLOOM_SOAK (a Go duration, e.g. 10m) by hand.
func soakDuration(t *testing.T) time.Duration {
	if s := os.Getenv("ICEBLOOM_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ICEBLOOM_SOAK=%q: %v", s, err)
		}
		return d
	}
	return 20 * time.Second
}

// soakCounts are what the loops did, by loop and outcome.
type soakCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *soakCounts) add(loop string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := loop + ": ok"
	if err != nil {
		key = loop + ": " + soakCause(err)
	}
	c.n[key]++
}

// soakCause names an error's kind, for the counts: the failures a run may
// meet while others change the table under it.
func soakCause(err error) string {
	msg := err.Error()
	for _, cause := range []string{
		"vanished after the commit", "was expired while it was being indexed", "kept changing",
		"other commits raced it", "has changed", "database is locked", "no such file", "gave up after",
		"statistics files changed during compaction",
	} {
		if strings.Contains(msg, cause) {
			return cause
		}
	}
	return msg
}

func (c *soakCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.n))
	for k := range c.n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %6d  %s\n", c.n[k], k)
	}
	return b.String()
}

// TestSoak runs every maintenance loop at once on one table — an appender,
// three syncs, compact-index, expire, gc forced to zero grace, sharded
// runs, maintain, and damage to index files and to what table metadata
// says of them — and then checks what must hold whatever happened: after a
// final maintain the column is still indexed, no referenced index file is
// missing, every live file is covered, and verification re-reading every
// live data file finds every value in its filter (no false negative),
// every checksum intact, what table metadata says of each index file true
// and no file covered twice. Failures of single
// runs under contention are expected and only counted; a panic or a broken
// end state fails the test. ICEBLOOM_SOAK=10m runs it longer.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test")
	}
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "soak", catalogtest.IDSchema, nil)
	ident := tbl.Identifier()
	catalogtest.AppendIDs(t, tbl, 1, 2, 3)
	opts := indexer.Options{Columns: []string{"id"}, Parallel: 1}
	if _, err := indexer.Build(bg, cat, ident, opts); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithTimeout(bg, soakDuration(t))
	defer stop()
	counts := &soakCounts{n: map[string]int{}}
	var wg sync.WaitGroup
	loop := func(name string, pause time.Duration, run func(context.Context) error) {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := run(ctx)
				if ctx.Err() != nil && err != nil {
					return // stopped midway: not a failure of the run
				}
				counts.add(name, err)
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var rngMu sync.Mutex
	loop("append", 50*time.Millisecond, func(ctx context.Context) error {
		rngMu.Lock()
		ids := []int64{rng.Int64N(1 << 40), rng.Int64N(1 << 40), rng.Int64N(1 << 40)}
		rngMu.Unlock()
		return appendIDs(ctx, cat, ident, ids)
	})
	for i := range 3 {
		loop(fmt.Sprintf("sync %d", i), 30*time.Millisecond, func(ctx context.Context) error {
			_, err := indexer.Sync(ctx, cat, ident, opts)
			return err
		})
	}
	loop("compact-index", 200*time.Millisecond, func(ctx context.Context) error {
		_, err := indexer.Compact(ctx, cat, ident, indexer.CompactOptions{})
		return err
	})
	loop("expire", 300*time.Millisecond, func(ctx context.Context) error {
		_, err := maintenance.Expire(ctx, cat, ident, maintenance.ExpireOptions{OlderThan: new(time.Duration), RetainLast: 3})
		return err
	})
	loop("gc --older-than 0s --force", 100*time.Millisecond, func(ctx context.Context) error {
		_, err := maintenance.GC(ctx, cat, ident, maintenance.GCOptions{OlderThan: maintenance.NoGrace, Force: true})
		return err
	})
	runs := 0
	loop("sharded run of 3", 150*time.Millisecond, func(ctx context.Context) error {
		runs++
		run := fmt.Sprintf("soak-%d", runs)
		for i := range 3 {
			so := opts
			so.CompactAbove = -1 // merges are left to maintain
			so.Shard = &indexer.Shard{Index: i, Count: 3, Run: run}
			if _, err := indexer.Build(ctx, cat, ident, so); err != nil {
				return err
			}
		}
		return nil
	})
	loop("maintain", 250*time.Millisecond, func(ctx context.Context) error {
		if r := maintenance.MaintainTable(ctx, cat, ident, maintenance.MaintainOptions{Index: indexer.Options{Parallel: 1}}); r.Failed() {
			return errors.New(r.Error)
		}
		return nil
	})
	loop("damage", 400*time.Millisecond, func(ctx context.Context) error {
		rngMu.Lock()
		which := rng.IntN(2)
		rngMu.Unlock()
		return damageIndex(ctx, cat, ident, which)
	})
	wg.Wait()

	// Runs the stop cut short are live: their shards are run again (a
	// complete run refuses them), so that they complete, as a Job's pods
	// retried would.
	for r := 1; r <= runs; r++ {
		for i := range 3 {
			so := opts
			so.CompactAbove = -1
			so.Shard = &indexer.Shard{Index: i, Count: 3, Run: fmt.Sprintf("soak-%d", r)}
			if _, err := indexer.Build(bg, cat, ident, so); err != nil && !errors.Is(err, indexer.ErrRunComplete) {
				t.Logf("run soak-%d, shard %d again: %v", r, i, err)
			}
		}
	}
	// The end state: a final maintain (repair and sync; a run that finds a
	// dangling reference repairs it and fails, so it may take two), then
	// the checks.
	var err error
	for range 3 {
		if r := maintenance.MaintainTable(bg, cat, ident, maintenance.MaintainOptions{Index: indexer.Options{Parallel: 1}}); r.Failed() {
			err = errors.New(r.Error)
		} else if err = nil; r.Sync == nil || strings.Join(r.Sync.Columns, ",") != "id" {
			t.Fatalf("the final maintain indexed %+v: the column id was lost", r.Sync)
		} else {
			break
		}
	}
	if err != nil {
		t.Fatalf("final maintain: %v", err)
	}
	tbl, err = cat.LoadTable(bg, ident)
	if err != nil {
		t.Fatal(err)
	}
	for sf := range tbl.Metadata().Statistics() {
		if _, err := os.Stat(strings.TrimPrefix(sf.StatisticsPath, "file://")); err != nil {
			t.Errorf("table metadata references a missing index file: %v", err)
		}
	}
	cov := covered(t, tbl)
	for f, ok := range cov {
		if !ok {
			t.Errorf("%s is not covered after the final sync", f)
		}
	}
	rep, err := verify.Table(bg, cat, ident, verify.Options{Sample: len(cov)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Sampled) != len(cov) {
		t.Errorf("verify of every live file: %d re-read of %d, problems %v", len(rep.Sampled), len(cov), rep.Problems)
	}
	t.Logf("%d live files, %d snapshots, %d segments after %s; runs by outcome:\n%s",
		len(cov), len(tbl.Metadata().Snapshots()), len(rep.Segments), soakDuration(t), counts)
}

// damageIndex damages the table's index as storage and careless tools
// do, a random index file of it: which 0 deletes the file, 1 removes the
// items of its statistics entry in table metadata. The next maintain
// repairs either (verify reports both).
func damageIndex(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, which int) error {
	_, err := catalog.CommitStatistics(ctx, cat, ident, func(_ context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
		var change catalog.StatisticsChange
		for sf := range tbl.Metadata().Statistics() {
			if !index.HoldsEntries(sf) {
				continue
			}
			if which == 0 {
				os.Remove(strings.TrimPrefix(sf.StatisticsPath, "file://"))
				return change, func() {}, nil
			}
			sf.BlobMetadata = []table.BlobMetadata{}
			change.Set = append(change.Set, sf)
			return change, func() {}, nil
		}
		return change, func() {}, nil
	})
	return err
}

// appendIDs appends one data file of ids to the table as it is now,
// returning the error instead of failing the test (it runs in a loop's
// goroutine).
func appendIDs(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, ids []int64) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	defer at.Release()
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, at, rec.NumRows(), nil); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	if err != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
