package indexer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icebloom/icebloom/catalog/catalogtest"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// loadIndex loads the table's index, failing on any problem.
func loadIndex(t *testing.T, tbl *table.Table) *index.TableIndex {
	t.Helper()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return ix
}

// filtersOfField counts the index's filters of field by data file.
func filtersOfField(t *testing.T, tbl *table.Table, field int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for file, byField := range filtersPerFileAndField(t, tbl) {
		if n := byField[field]; n > 0 {
			out[file] = n
		}
	}
	return out
}

// coveredOnce checks that every live file has exactly one filter of field
// and that no other file has one.
func coveredOnce(t *testing.T, tbl *table.Table, field int) {
	t.Helper()
	n := filtersOfField(t, tbl, field)
	live := liveFiles(t, tbl)
	for _, df := range live {
		if n[df.FilePath()] != 1 {
			t.Errorf("%s has %d filters of field %d, want 1", df.FilePath(), n[df.FilePath()], field)
		}
	}
	if len(n) != len(live) {
		t.Errorf("%d files have filters, %d are live", len(n), len(live))
	}
}

// syncID syncs the table's id column, its segments left uncompacted so
// the test sees what each run and sync linked.
func syncID(t *testing.T, cat icecatalog.Catalog, ident table.Identifier) *indexer.Summary {
	t.Helper()
	sum, err := indexer.Sync(ctx, cat, ident, indexer.Options{Columns: []string{"id"}, CompactAbove: -1})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// linksCompleteRun checks that the table has one statistics file and that
// its directory item records run-1 as 4 of 4 shards, linked: what a
// complete run of four shards leaves in the table metadata.
func linksCompleteRun(t *testing.T, tbl *table.Table) {
	t.Helper()
	stats := statisticsFiles(tbl)
	if len(stats) != 1 {
		t.Fatalf("%d statistics files, want the one linking the shards", len(stats))
	}
	dirItem := stats[0].BlobMetadata[len(stats[0].BlobMetadata)-1]
	if got := dirItem.Properties[indexfile.PropShardRuns]; got != `{"run-1":{"committed":4,"count":4}}` || dirItem.Properties["links"] != "4" {
		t.Fatalf("directory item properties %v", dirItem.Properties)
	}
}

// indexHoldsEachFileOnce reloads the table and checks what every test of
// runs and syncs ends on: each live file covered once, and no lookup
// drops the file holding its row.
func indexHoldsEachFileOnce(t *testing.T, cat icecatalog.Catalog, ident table.Identifier, rowsByFile [][]row) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
}

// lookupsKeepTrueFiles looks the first ids of every file up and checks
// that some file is a candidate, that the index pruned others, and that it
// was read without problems. The table is planned once and the index
// consulted per id (lookup.Prune), as a server does: planning per id
// decoded every manifest 200 times a call.
func lookupsKeepTrueFiles(t *testing.T, tbl *table.Table, rowsByFile [][]row) {
	t.Helper()
	tasks, err := lookup.PlanFiles(ctx, tbl, nil, iceberg.AlwaysTrue{}, false)
	if err != nil {
		t.Fatal(err)
	}
	o := lookup.Options{Cache: index.NewFooterCache(16)}
	for _, rows := range rowsByFile {
		for _, r := range rows[:5] {
			res, err := lookup.Prune(ctx, tbl, tasks, iceberg.EqualTo(iceberg.Reference("id"), r.id), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.IndexErrors) > 0 {
				t.Fatal(res.IndexErrors)
			}
			if len(res.Candidates) == 0 || len(res.Candidates) == len(tasks) && len(tasks) > 4 {
				t.Fatalf("id %d: %d candidates of %d files", r.id, len(res.Candidates), len(tasks))
			}
		}
	}
}

// commits counts the commits the table's metadata log records.
func commits(tbl *table.Table) int {
	n := 0
	for range tbl.Metadata().PreviousFiles() {
		n++
	}
	return n
}

// TestShardedBuild: four shards of one run, started at once, each index
// the files their shard holds into a segment of their own, without
// committing; the one that finds all four complete makes the run's one
// commit linking them (exactly one commit lands), without copying any
// filter, and together they cover every live file exactly once; the index
// records the run's four shards; gc keeps the linked files; compaction
// merges them into one segment.
func TestShardedBuild(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 16, 40, nil)
	before := commits(tbl)
	const shards = 4
	sums := make([]*indexer.Summary, shards)
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			sums[i], errs[i] = indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{
				Columns: []string{"id"}, CompactAbove: -1,
				Shard: &indexer.Shard{Index: i, Count: shards, Run: "run-1"},
			})
		})
	}
	wg.Wait()
	total := 0
	want := map[int]int{}
	for _, df := range liveFiles(t, tbl) {
		want[indexer.ShardOf(df.FilePath(), shards)]++
	}
	for i, sum := range sums {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if sum.FilesTotal != want[i] || sum.FilesIndexed != want[i] || sum.BytesCopied != 0 || sum.Shard == nil || sum.Shard.Index != i {
			t.Errorf("shard %d: summary %+v, want %d files and nothing copied", i, sum, want[i])
		}
		total += sum.FilesIndexed
	}
	if total != 16 {
		t.Fatalf("the shards indexed %d files, want 16", total)
	}
	linkers := 0
	for _, sum := range sums {
		if sum.Shard.Linked {
			linkers++
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	// Two shards finding the run complete at once may both land a commit
	// (statistics commits do not conflict), the second carrying the first.
	if n := commits(tbl) - before; n < 1 || n > 2 || linkers < 1 {
		t.Fatalf("%d commits for the run, %d shards linked it; want 1 or 2 commits", n, linkers)
	}
	// The table metadata tells the run and its shards without the index.
	linksCompleteRun(t, tbl)
	ix := loadIndex(t, tbl)
	if runs := indexer.ShardsCommitted(ix); runs["run-1"] != (indexfile.RunShards{Committed: 4, Count: 4}) {
		t.Fatalf("runs %+v", runs)
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
	rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 16})
	if err != nil || !rep.OK() || len(rep.Segments) != shards+1 || len(rep.Sampled) != 16 {
		t.Fatalf("verify of the linked index: %+v, %v", rep, err)
	}

	// gc with no grace keeps the files the index links.
	gcs, err := maintenance.GC(ctx, cat, tbl.Identifier(), maintenance.GCOptions{OlderThan: -1, Force: true, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if gcs.Referenced != shards+1 || len(gcs.Deleted) > 1 {
		t.Fatalf("gc %+v: want the linking file and the %d linked ones referenced, at most a second linker's file deleted", gcs, shards)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredOnce(t, tbl, 1)

	cs, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs.SegmentsBefore != shards+1 || cs.SegmentsAfter != 1 || cs.EntriesKept != 16 || cs.EntriesDropped != 0 {
		t.Fatalf("compaction %+v", cs)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	ix = loadIndex(t, tbl)
	if segs := ix.Segments(); len(segs) != 1 || len(segs[0].Links()) != 0 {
		t.Fatalf("%d segments after compaction, want one without links", len(segs))
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
}

// TestLastShardMerges: the shard that finishes last sees its run complete,
// links it and, the index having more segments than CompactAbove, merges
// them; the others commit nothing.
func TestLastShardMerges(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 8, 30, nil)
	for i := range 3 {
		sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: 2, Shard: &indexer.Shard{Index: i, Count: 3}})
		if err != nil {
			t.Fatal(err)
		}
		wantRun := indexer.DefaultRun(tbl.CurrentSnapshot().SnapshotID, 3)
		if sum.Shard.Run != wantRun || sum.Shard.Committed != i+1 || sum.Shard.Linked != (i == 2) || sum.Shard.Merged != (i == 2) || (sum.Compacted != nil) != (i == 2) {
			t.Fatalf("shard %d: %+v", i, sum.Shard)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if segs := loadIndex(t, tbl).Segments(); len(segs) != 1 || len(segs[0].Links()) != 0 {
		t.Fatalf("%d segments after the last shard, want one without links", len(segs))
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
}

// TestShardedRebuildKeepsOtherShards: no shard of a rebuild removes the
// old index or another shard's segment (until the run is complete nothing
// is committed); the last one links the run and keeps only the run's
// filters, so the index is then the rebuilt one.
func TestShardedRebuildKeepsOtherShards(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 8, 30, nil)
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, FPP: 0.01}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		sum, err := indexer.Rebuild(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, FPP: 0.05, Shard: &indexer.Shard{Index: i, Count: 4, Run: "rebuild"}})
		if err != nil {
			t.Fatal(err)
		}
		tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
		n := filtersOfField(t, tbl, 1)
		for _, df := range liveFiles(t, tbl) {
			if n[df.FilePath()] == 0 {
				t.Fatalf("after shard %d, %s lost its filter", i, df.FilePath())
			}
		}
		if sum.Shard.Committed != i+1 || sum.Shard.Linked != (i == 3) || sum.Shard.Merged != (i == 3) {
			t.Fatalf("after shard %d: %+v", i, sum.Shard)
		}
	}
	coveredOnce(t, tbl, 1)
	for _, seg := range loadIndex(t, tbl).Segments() {
		for f := range seg.Filters() {
			if f.FPP != 0.05 {
				t.Fatalf("%s kept a filter of the old index (fpp %v)", f.DataFile, f.FPP)
			}
		}
	}
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
}

// TestSyncKeepsLinks: a plain sync of the snapshot a sharded run linked
// segments to carries the links (never dropping or copying the shards'
// filters), and a sharded sync indexes only its shard's new files.
func TestSyncKeepsLinks(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 8, 30, nil)
	for i := range 4 {
		if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 4, Run: "r"}}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	linked := indexer.ShardsCommitted(loadIndex(t, tbl))["r"].Committed
	tbl = appendRows(t, tbl, 10)
	sum := syncID(t, cat, tbl.Identifier())
	if sum.FilesIndexed != 1 || sum.BytesCopied != 0 {
		t.Fatalf("sync %+v: want the one new file, nothing copied", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredOnce(t, tbl, 1)
	if r := indexer.ShardsCommitted(loadIndex(t, tbl))["r"]; r.Committed != linked || linked == 0 {
		t.Fatalf("the sync lost links: %+v, had %d", r, linked)
	}

	// A sharded sync after an append reads only its shard's new files.
	for range 5 {
		tbl = appendRows(t, tbl, 10)
	}
	var indexed int
	for i := range 2 {
		sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, Shard: &indexer.Shard{Index: i, Count: 2, Run: "s"}})
		if err != nil {
			t.Fatal(err)
		}
		indexed += sum.FilesIndexed
	}
	if indexed != 5 {
		t.Fatalf("the sharded sync indexed %d files, want the 5 new ones", indexed)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredOnce(t, tbl, 1)
}

// TestShardFlag: --shard's form and bounds.
func TestShardFlag(t *testing.T) {
	for _, s := range []string{"0/4", " 3 / 4 "} {
		if _, _, err := indexer.ParseShard(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"4/4", "-1/4", "0/0", "1", "a/b", ""} {
		if _, _, err := indexer.ParseShard(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	// The hash is documented (docs/scale.md): pin it.
	const shardOfDoc = 34
	if got := indexer.ShardOf("s3://bucket/db/t/data/00000-0-a.parquet", 64); got != shardOfDoc {
		t.Errorf("ShardOf changed: %d, documented %d", got, shardOfDoc)
	}
}

// TestMissingShardSegment: a linked shard segment that vanished leaves its
// files candidates (reported as an index error), verify reports it, and the
// next sync indexes its files again and compacts the link away.
func TestMissingShardSegment(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 8, 30, nil)
	for i := range 2 {
		if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 2, Run: "r"}}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	var lost index.Segment
	for _, seg := range loadIndex(t, tbl).Segments() {
		if seg.Link != nil && seg.Directory().Files.Len() > 0 {
			lost = seg
		}
	}
	if err := os.Remove(strings.TrimPrefix(lost.File.StatisticsPath, "file://")); err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	for _, path := range lost.Directory().Files.All() {
		gone[string(path)] = true
	}
	for _, rows := range rowsByFile {
		res, err := lookup.Plan(ctx, tbl, iceberg.EqualTo(iceberg.Reference("id"), rows[0].id), lookup.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.IndexErrors) == 0 {
			t.Fatal("a missing linked segment is not reported")
		}
		kept := 0
		for _, task := range res.Candidates {
			if gone[task.File.FilePath()] {
				kept++
			}
		}
		if kept != len(gone) {
			t.Fatalf("%d of the %d files of the missing segment kept", kept, len(gone))
		}
	}
	if rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{}); err != nil || rep.OK() {
		t.Fatalf("verify of an index missing a linked segment: %+v, %v", rep, err)
	}
	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != len(gone) || sum.Compacted == nil || !slices.Contains(sum.Compacted.BrokenFiles, lost.File.StatisticsPath) {
		t.Fatalf("sync %+v, compaction %+v: want the lost files indexed again and the link removed", sum, sum.Compacted)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
}

// TestExpireFoldsLinks: expiring the snapshot a sharded run linked its
// segments to folds them into a retained one first: every live file stays
// covered, and gc then deletes the shard segments no index links anymore.
func TestExpireFoldsLinks(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 8, 30, nil)
	for i := range 3 {
		if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 3, Run: "r"}}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	tbl = appendRows(t, tbl, 10)
	syncID(t, cat, tbl.Identifier())
	zero := time.Duration(0)
	if _, err := maintenance.Expire(ctx, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: &zero, RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after the expiry", n)
	}
	coveredOnce(t, tbl, 1)
	gcs, err := maintenance.GC(ctx, cat, tbl.Identifier(), maintenance.GCOptions{OlderThan: -1, Force: true, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if gcs.Referenced != len(loadIndex(t, tbl).Segments()) || len(gcs.Deleted) < 3 {
		t.Fatalf("gc %+v: want the 3 shard segments deleted", gcs)
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
}

// commitHooks runs hooks[i] right before the i-th commit reaches the
// catalog: other runs' whole commits land between this run's load and its
// commit.
type commitHooks struct {
	*catalogtest.Catalog
	hooks []func()
	n     int
}

func (c *commitHooks) CommitTable(ctx2 context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if c.n < len(c.hooks) && c.hooks[c.n] != nil {
		c.hooks[c.n]()
	}
	c.n++
	return c.Catalog.CommitTable(ctx2, ident, reqs, ups)
}

// TestRunLinkedOnce: two shards find their run complete at once (here: a
// rerun of the last shard links the run between the first finder's load
// and its commit, which replaces the rerun's file unseen). The first
// finder finds, planning on the file it replaced, that it linked the run
// already, and puts it back: every live file is covered exactly once,
// whichever segment of shard 2 each commit saw.
func TestRunLinkedOnce(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 12, 20, nil)
	shard := func(c icecatalog.Catalog, i int) (*indexer.Summary, error) {
		return indexer.Build(ctx, c, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 3, Run: "r"}})
	}
	for i := range 2 {
		if _, err := shard(cat, i); err != nil {
			t.Fatal(err)
		}
	}
	var rerun *indexer.Summary
	hooked := &commitHooks{Catalog: cat, hooks: []func(){func() {
		var err error
		if rerun, err = shard(cat, 2); err != nil {
			t.Error(err)
		}
	}}}
	sum, err := shard(hooked, 2)
	if err != nil {
		t.Fatal(err)
	}
	if hooked.n < 1 || rerun == nil || !rerun.Shard.Linked || !sum.Shard.Linked {
		t.Fatalf("%d commits, rerun %+v, first %+v: the race did not happen", hooked.n, rerun, sum.Shard)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	// The first finder's commit replaced the rerun's file, which linked
	// the run already: it put that file back rather than lose it.
	if stats := statisticsFiles(tbl); len(stats) != 1 || stats[0].StatisticsPath != rerun.StatisticsPath || sum.StatisticsPath != rerun.StatisticsPath {
		t.Fatalf("statistics %+v, want the rerun's file %s put back", stats, rerun.StatisticsPath)
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
	// And a shard of the run after that is refused: the run is complete.
	if _, err := shard(cat, 1); !errors.Is(err, indexer.ErrRunComplete) || !strings.Contains(err.Error(), "run r") {
		t.Fatalf("a shard of a complete run: %v", err)
	}
}

// TestRunShardCountFixed: a shard of a run with another shard count is
// refused, naming both counts and the run, before it reads anything; the
// run completes with its own count.
func TestRunShardCountFixed(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 6, 20, nil)
	shard := func(i, n int) (*indexer.Summary, error) {
		return indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, Shard: &indexer.Shard{Index: i, Count: n, Run: "job-7"}})
	}
	if _, err := shard(0, 4); err != nil {
		t.Fatal(err)
	}
	_, err := shard(2, 3)
	if !errors.Is(err, indexer.ErrRunShards) || !strings.Contains(err.Error(), "job-7") || !strings.Contains(err.Error(), "4 shards") || !strings.Contains(err.Error(), "says 3") {
		t.Fatalf("a shard of 3 in a run of 4: %v", err)
	}
	for i := 1; i < 4; i++ {
		if _, err := shard(i, 4); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredOnce(t, tbl, 1)
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Shard: &indexer.Shard{Index: 0, Count: 1, Run: "../x"}}); err == nil || !strings.Contains(err.Error(), "run id") {
		t.Fatalf("a run id naming another directory: %v", err)
	}
}

// filesOfShards counts the table's live files that the given shards of
// count hold.
func filesOfShards(t *testing.T, tbl *table.Table, count int, shards ...int) int {
	t.Helper()
	n := 0
	for _, df := range liveFiles(t, tbl) {
		if slices.Contains(shards, indexer.ShardOf(df.FilePath(), count)) {
			n++
		}
	}
	return n
}

// TestSyncLeavesLiveRun: while a sharded run is live (two of its four
// shards done, the others working), a sync indexes only the files added
// after the run's snapshot and leaves the run's to it; the run then links
// every shard, and no file is covered twice. After the lease of a stalled
// run has expired, a sync links its finished shards' segments and indexes
// the others' files, and the run's late linking commit links nothing the
// sync covered: its segments' other filters are copied.
func TestSyncLeavesLiveRun(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 12, 20, nil)
	shard := func(run string, i int) *indexer.Summary {
		t.Helper()
		sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 4, Run: run}})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	shard("live", 0)
	shard("live", 2)
	tbl = appendRows(t, tbl, 10)
	sum := syncID(t, cat, tbl.Identifier())
	if sum.FilesIndexed != 1 || sum.FilesLeftToRuns != 12 || sum.FilesCovered != 0 {
		t.Fatalf("sync during a live run: %+v, want the 1 new file indexed, 12 left to the run, none covered before", sum)
	}
	shard("live", 1)
	if last := shard("live", 3); !last.Shard.Linked || last.Shard.Copied != 0 {
		t.Fatalf("the last shard: %+v", last.Shard)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)

	// A stalled run: two shards, then nothing for longer than the lease.
	cat, tbl, rowsByFile = eventsTable(t, 12, 20, nil)
	shard("stalled", 0)
	shard("stalled", 1)
	later := time.Now().Add(indexer.RunLease + time.Minute)
	restore := indexer.SetClock(func() time.Time { return later })
	defer restore()
	sum = syncID(t, cat, tbl.Identifier())
	if want := filesOfShards(t, tbl, 4, 2, 3); sum.FilesIndexed != want || sum.FilesFromRuns != 12-want || sum.FilesLeftToRuns != 0 {
		t.Fatalf("sync after the lease expired: %+v, want the %d files of the unfinished shards indexed, the others linked", sum, want)
	}
	shard("stalled", 2)
	last := shard("stalled", 3)
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
	if last.Shard.Linked || !last.Shard.LinkedBefore {
		t.Fatalf("the late run's last shard: %+v, want nothing to link", last.Shard)
	}
}

// TestRunMergedTwice: two shards of a rebuild may both find their run
// complete; the second compaction, keeping only the run's segments, finds
// them merged already by the first and must keep the index, not drop it
// (it once committed an empty index).
func TestRunMergedTwice(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 6, 20, nil)
	for i := range 2 {
		if _, err := indexer.Rebuild(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, Shard: &indexer.Shard{Index: i, Count: 2, Run: "r"}}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{OnlyRun: "r"})
	if err != nil || cs.StatisticsPath != "" {
		t.Fatalf("the second merge of the run: %+v, %v; want nothing to do", cs, err)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
}

// commitHook is a catalog that runs before once, right before the first
// table commit passes through it: what a commit of another process lands
// in the meantime.
type commitHook struct {
	icecatalog.Catalog
	before func()
	once   sync.Once
}

func (c *commitHook) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c.once.Do(c.before)
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestSyncRacingALateRun: a sync that starts after a stalled run's lease
// expired indexes the run's files; the run's last shards link them while
// the sync is on its way to commit, and the sync's commit, which replaces
// the run's linking file unseen, is made again without its filters of the
// files the run now covers: no file is covered twice (before, all 12 were).
func TestSyncRacingALateRun(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 12, 20, nil)
	shard := func(i int) *indexer.Summary {
		t.Helper()
		sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 4, Run: "stalled"}})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	shard(0)
	shard(1)
	later := time.Now().Add(indexer.RunLease + time.Minute)
	restore := indexer.SetClock(func() time.Time { return later })
	defer restore()
	var last *indexer.Summary
	hooked := &commitHook{Catalog: cat, before: func() {
		shard(2)
		last = shard(3)
	}}
	sum := syncID(t, hooked, tbl.Identifier())
	if want := filesOfShards(t, tbl, 4, 2, 3); sum.FilesIndexed != want || sum.FilesFromRuns != 12-want || last == nil || !last.Shard.Linked {
		t.Fatalf("sync %+v, the run's last shard %+v: want the sync to index the %d files of shards 2 and 3, link the others, and the run to link before it commits", sum, last, want)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
}

// TestSyncsAcrossACommit: a sync of the table's snapshot is on its way to
// commit when the table gets a new snapshot and another sync indexes that
// one, files of the first included; the first sync's commit, of the older
// snapshot's statistics file, is made again without the filters the other
// now holds: no file is covered twice (before, the first 12 were).
func TestSyncsAcrossACommit(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 12, 20, nil)
	var other *indexer.Summary
	hooked := &commitHook{Catalog: cat, before: func() {
		now := appendRows(t, tbl, 10)
		other = syncID(t, cat, now.Identifier())
	}}
	sum := syncID(t, hooked, tbl.Identifier())
	if sum.FilesIndexed != 12 || other == nil || other.FilesIndexed != 13 {
		t.Fatalf("the first sync %+v, the other %+v: want 12 files and 13 indexed", sum, other)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
}

// TestEmptyShardsLinked: a run of four shards over two files has at least
// two shards with no file; their segments are linked all the same, so the
// table metadata records the complete run as four of four shards (before,
// a run whose shard held no file read "3 of 4" for good), and the index
// still covers each file once and verifies clean.
func TestEmptyShardsLinked(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 2, 40, nil)
	const shards = 4
	empty := 0
	for i := range shards {
		sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{
			Columns: []string{"id"}, CompactAbove: -1,
			Shard: &indexer.Shard{Index: i, Count: shards, Run: "run-1"},
		})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if sum.FilesTotal == 0 {
			empty++
		}
	}
	if empty < 2 {
		t.Fatalf("%d empty shards, want at least 2 of 4 over 2 files", empty)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	linksCompleteRun(t, tbl)
	if runs := indexer.ShardsCommitted(loadIndex(t, tbl)); runs["run-1"] != (indexfile.RunShards{Committed: 4, Count: 4}) {
		t.Fatalf("runs %+v", runs)
	}
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
	rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 2})
	if err != nil || !rep.OK() || len(rep.Segments) != shards+1 {
		t.Fatalf("verify of the linked index: %+v, %v", rep, err)
	}
	cs, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil || cs.SegmentsAfter != 1 || cs.EntriesKept != 2 {
		t.Fatalf("compaction %+v, %v", cs, err)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
}

// TestLinkRacingASync: the last shard of a stalled run has written its
// linking file when a sync of a newer snapshot, the run's lease expired,
// indexes every file and commits; the link then commits on top. The link
// finds that another snapshot's statistics file changed under it and
// commits again without the filters the sync holds: every file is covered
// once (before, linkRun re-checked only its own snapshot's statistics file
// and all 12 files of the run were covered twice).
func TestLinkRacingASync(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 12, 20, nil)
	shard := func(c icecatalog.Catalog, i int) *indexer.Summary {
		t.Helper()
		sum, err := indexer.Build(ctx, c, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 4, Run: "late"}})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	for i := range 3 {
		shard(cat, i)
	}
	later := time.Now().Add(indexer.RunLease + time.Minute)
	restore := indexer.SetClock(func() time.Time { return later })
	defer restore()
	var synced *indexer.Summary
	hooked := &commitHook{Catalog: cat, before: func() {
		// Leases are files' modification times: on this clock, the last
		// shard's expired already.
		now := appendRows(t, tbl, 10)
		synced = syncID(t, cat, now.Identifier())
	}}
	last := shard(hooked, 3)
	// The sync covers all 13 files: the new one indexed, the run's 12
	// through the finished shards' segments it links.
	if synced == nil || synced.FilesIndexed != 1 || synced.FilesFromRuns != 12 || !last.Shard.Linked && !last.Shard.LinkedBefore {
		t.Fatalf("sync %+v, the last shard %+v: want the sync to cover all 13 files before the link commits", synced, last.Shard)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
	rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 2})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// linkedRun builds a run of four shards over 12 files, left linked (not
// merged), and returns the table and its linking statistics entry.
func linkedRun(t *testing.T) (*catalogtest.Catalog, *table.Table, [][]row, table.StatisticsFile) {
	t.Helper()
	cat, tbl, rowsByFile := eventsTable(t, 12, 20, nil)
	for i := range 4 {
		if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1,
			Shard: &indexer.Shard{Index: i, Count: 4, Run: "run-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	linksCompleteRun(t, tbl)
	return cat, tbl, rowsByFile, statisticsFiles(tbl)[0]
}

// editEntry registers sf edited in its place, as a careless tool would.
func editEntry(t *testing.T, cat icecatalog.Catalog, ident table.Identifier, sf table.StatisticsFile, edit func(*table.StatisticsFile)) {
	t.Helper()
	var items []table.BlobMetadata
	for _, bm := range sf.BlobMetadata {
		bm.Properties = maps.Clone(bm.Properties)
		items = append(items, bm)
	}
	sf.BlobMetadata = items
	edit(&sf)
	if _, err := catalog.CommitStatistics(ctx, cat, ident, func(context.Context, *table.Table) (catalog.StatisticsChange, func(), error) {
		return catalog.StatisticsChange{Set: []table.StatisticsFile{sf}}, func() {}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// directoryItem returns the directory's item of a statistics entry.
func directoryItem(sf *table.StatisticsFile) *table.BlobMetadata {
	for i := range sf.BlobMetadata {
		if sf.BlobMetadata[i].Type == table.BlobType(segment.DirectoryBlobType) {
			return &sf.BlobMetadata[i]
		}
	}
	return nil
}

// entryDamages are the ways a careless tool misdescribes a linking file
// in table metadata (issue 36, item 5).
var entryDamages = []struct {
	name string
	edit func(*table.StatisticsFile)
}{
	{"links removed", func(sf *table.StatisticsFile) { delete(directoryItem(sf).Properties, segment.PropLinks) }},
	{"links wrong", func(sf *table.StatisticsFile) { directoryItem(sf).Properties[segment.PropLinks] = "3" }},
	{"shard-runs wrong", func(sf *table.StatisticsFile) {
		directoryItem(sf).Properties[indexfile.PropShardRuns] = `{"run-1":{"committed":3,"count":4}}`
	}},
	{"directory-offset removed", func(sf *table.StatisticsFile) { delete(directoryItem(sf).Properties, segment.PropDirectoryOffset) }},
	{"blob-metadata removed", func(sf *table.StatisticsFile) { sf.BlobMetadata = []table.BlobMetadata{} }},
}

// TestVerifyReportsEntryDamage: each way table metadata misdescribes a
// run's linking file fails verify, naming the file; one maintain registers
// the file again as it says, indexing nothing again, and verify passes
// with every file covered once (before, verify passed every one, and with
// the blob-metadata removed all 12 files were uncovered).
func TestVerifyReportsEntryDamage(t *testing.T) {
	for _, damage := range entryDamages {
		t.Run(damage.name, func(t *testing.T) {
			cat, tbl, rowsByFile, linking := linkedRun(t)
			editEntry(t, cat, tbl.Identifier(), linking, damage.edit)
			rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || !strings.Contains(rep.Problems[0], linking.StatisticsPath) {
				t.Fatalf("verify of the damaged entry: %q", rep.Problems)
			}
			r := maintenance.MaintainTable(ctx, cat, tbl.Identifier(), maintenance.MaintainOptions{})
			if r.Failed() || r.Repair == nil || !slices.Equal(r.Repair.Reregistered, []string{linking.StatisticsPath}) || r.Sync.FilesIndexed != 0 {
				t.Fatalf("maintain %+v, repair %+v, sync %+v", r, r.Repair, r.Sync)
			}
			if rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 1}); err != nil || !rep.OK() {
				t.Fatalf("verify after maintain: %+v, %v", rep, err)
			}
			tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
			linksCompleteRun(t, tbl)
			indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
		})
	}
}

// TestGCKeepsLinksOfAnEntryWithoutItems: with the linking file's
// blob-metadata removed, a forced gc without grace deletes none of the
// shard segments its directory links (before, it deleted all four).
func TestGCKeepsLinksOfAnEntryWithoutItems(t *testing.T) {
	cat, tbl, _, linking := linkedRun(t)
	ix := loadIndex(t, tbl)
	var linked []string
	for _, seg := range ix.Segments() {
		if seg.Link != nil {
			linked = append(linked, seg.File.StatisticsPath)
		}
	}
	if len(linked) != 4 {
		t.Fatalf("%d linked segments, want 4", len(linked))
	}
	editEntry(t, cat, tbl.Identifier(), linking, entryDamages[4].edit)
	gcs, err := maintenance.GC(ctx, cat, tbl.Identifier(), maintenance.GCOptions{OlderThan: maintenance.NoGrace, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range linked {
		if slices.Contains(gcs.Deleted, path) {
			t.Errorf("gc deleted %s, which the linking file links", path)
		}
		if _, err := os.Stat(strings.TrimPrefix(path, "file://")); err != nil {
			t.Errorf("linked segment: %v", err)
		}
	}
}

// TestMaintainMergesALinkedRun: a run of 16 shards that left its merge to
// maintain (--compact-above=-1) leaves 17 segments, the linking file and
// the 16 it links; the next maintain counts them all and merges them into
// one, by default and with --compact-above 8 (before, it counted one
// segment and made no commit).
func TestMaintainMergesALinkedRun(t *testing.T) {
	for _, above := range []int{0, 8} {
		t.Run(fmt.Sprintf("compact-above %d", above), func(t *testing.T) {
			cat, tbl, rowsByFile := eventsTable(t, 32, 10, nil)
			const shards = 16
			for i := range shards {
				if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1,
					Shard: &indexer.Shard{Index: i, Count: shards, Run: "wide"}}); err != nil {
					t.Fatal(err)
				}
			}
			tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
			if n := len(loadIndex(t, tbl).Segments()); n != shards+1 {
				t.Fatalf("%d segments after the run, want %d", n, shards+1)
			}
			before := commits(tbl)
			r := maintenance.MaintainTable(ctx, cat, tbl.Identifier(), maintenance.MaintainOptions{CompactAbove: above})
			if r.Failed() || r.Compact == nil || r.Compact.SegmentsBefore != shards+1 || r.Compact.SegmentsAfter != 1 {
				t.Fatalf("maintain %+v, compaction %+v", r, r.Compact)
			}
			tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
			if n := len(loadIndex(t, tbl).Segments()); n != 1 || commits(tbl) != before+1 {
				t.Fatalf("%d segments and %d commits after maintain, want 1 and 1", n, commits(tbl)-before)
			}
			indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
		})
	}
}

// TestSyncLinksFinishedShardsOfAStalledRun: a run of 8 shards stalls with
// 6 finished; once its lease has expired, a sync links the 6 finished
// shards' segments and indexes only the files of the 2 missing shards
// (before, it indexed all 40 files again and never used the segments);
// the late shards then complete the run adding nothing, and every file is
// covered once.
func TestSyncLinksFinishedShardsOfAStalledRun(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 40, 10, nil)
	shard := func(i int) *indexer.Summary {
		t.Helper()
		sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 8, Run: "stalled"}})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	var finished []int
	for i := range 6 {
		if shard(i).FilesTotal > 0 {
			finished = append(finished, i)
		}
	}
	later := time.Now().Add(indexer.RunLease + time.Minute)
	restore := indexer.SetClock(func() time.Time { return later })
	defer restore()
	sum := syncID(t, cat, tbl.Identifier())
	missing := filesOfShards(t, tbl, 8, 6, 7)
	if sum.FilesIndexed != missing || sum.ShardSegmentsLinked != len(finished) || sum.FilesFromRuns != 40-missing {
		t.Fatalf("sync after the lease expired: %+v, want the %d files of shards 6 and 7 indexed and %d segments linked", sum, missing, len(finished))
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
	shard(6)
	if last := shard(7); last.Shard.Linked || !last.Shard.LinkedBefore {
		t.Fatalf("the late run's last shard: %+v, want nothing to link", last.Shard)
	}
	indexHoldsEachFileOnce(t, cat, tbl.Identifier(), rowsByFile)
	if rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 2}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// inspect credits the run with the files of its linked segments only:
	// the sync's own filters cover shards 6 and 7 (before: all 40).
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	fs, _ := tbl.FS(ctx)
	var live []segment.File
	for _, df := range liveFiles(t, tbl) {
		live = append(live, segment.File{Path: df.FilePath(), Size: df.FileSizeBytes()})
	}
	runs, err := indexer.Runs(tbl, fs, loadIndex(t, tbl), live, []int{1})
	if err != nil || len(runs) != 1 || !runs[0].Complete || runs[0].FilesCovered != 40-missing {
		t.Fatalf("runs %+v, %v: want the run complete, credited with %d files", runs, err, 40-missing)
	}
}

// TestExpireKeepsALiveRunsSnapshot: an expiry that would remove the
// snapshot a live run indexes keeps it (and the later ones); the run's
// late shards then finish and link it (before, the snapshot expired and
// the late shard failed on a missing manifest list). With a lease term
// shorter than the time since the shards last worked, the run is no
// longer live, and the snapshot expires.
func TestExpireKeepsALiveRunsSnapshot(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 8, 20, nil)
	// The expiry keeps the run's snapshot by age, with a second to spare:
	// the older snapshots, which it expires, are older than that.
	time.Sleep(1500 * time.Millisecond)
	tbl = appendRows(t, tbl, 10)
	runSnapshot := tbl.CurrentSnapshot().SnapshotID
	shard := func(i int) (*indexer.Summary, error) {
		return indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1, Shard: &indexer.Shard{Index: i, Count: 4, Run: "slow"}})
	}
	for i := range 2 {
		if _, err := shard(i); err != nil {
			t.Fatal(err)
		}
	}
	tbl = appendRows(t, tbl, 10)
	appendRows(t, tbl, 10)
	zero := time.Duration(0)
	exp, err := maintenance.Expire(ctx, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: &zero, RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(exp.KeptForRuns, []int64{runSnapshot}) || slices.Contains(exp.SnapshotsExpired, runSnapshot) || len(exp.SnapshotsExpired) == 0 {
		t.Fatalf("expire %+v: want the run's snapshot %d kept, older ones expired", exp, runSnapshot)
	}
	for i := 2; i < 4; i++ {
		if _, err := shard(i); err != nil {
			t.Fatalf("a late shard after the expiry: %v", err)
		}
	}
	syncID(t, cat, tbl.Identifier())
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)

	// The lease term is an option: past it, the run is not live.
	cat, tbl, _ = eventsTable(t, 4, 20, nil)
	runSnapshot = tbl.CurrentSnapshot().SnapshotID
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, Shard: &indexer.Shard{Index: 0, Count: 2, Run: "stalled"}}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, tbl, 10)
	later := time.Now().Add(indexer.MinRunLease + time.Minute)
	restore := indexer.SetClock(func() time.Time { return later })
	defer restore()
	if _, err := maintenance.Expire(ctx, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: &zero, RetainLast: 1, RunLease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if tbl.SnapshotByID(runSnapshot) == nil {
		t.Fatal("within a lease of an hour the run is live: its snapshot must stay")
	}
	exp, err = maintenance.Expire(ctx, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: &zero, RetainLast: 1, RunLease: indexer.MinRunLease})
	if err != nil || !slices.Contains(exp.SnapshotsExpired, runSnapshot) {
		t.Fatalf("expire past the lease: %+v, %v: want the run's snapshot expired", exp, err)
	}
	if _, err := maintenance.Expire(ctx, cat, tbl.Identifier(), maintenance.ExpireOptions{RunLease: time.Minute}); err == nil || !strings.Contains(err.Error(), "run lease 1m0s") {
		t.Fatalf("a lease shorter than MinRunLease: %v", err)
	}
}
