package catalog_test

// The Hadoop catalog: iceberg-go's catalog/hadoop on a local warehouse
// directory, opened through catalog.Open as the command's --catalog hadoop
// --warehouse flags open it. It keeps no database: a table is its directory,
// and a commit publishes the next metadata/vN.metadata.json by an atomic
// rename (and rewrites version-hint.text), so what every commit left behind
// is checked on disk, file by file.

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// hadoopWarehouse is a Hadoop catalog's warehouse directory of a test.
type hadoopWarehouse struct {
	dir string
}

func newHadoopWarehouse(t *testing.T) hadoopWarehouse {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml: the options alone
	return hadoopWarehouse{dir: t.TempDir()}
}

// open opens a new handle on the warehouse's catalog, as another process
// would, closed at the end of the test.
func (w hadoopWarehouse) open(t *testing.T) icecatalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(t.Context(), catalog.Options{Type: "hadoop", Warehouse: "file://" + filepath.ToSlash(w.dir)})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(icecatalog.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	if cat.CatalogType() != icecatalog.Hadoop {
		t.Fatalf("catalog type %s, want hadoop", cat.CatalogType())
	}
	return cat
}

// checkMetadata fails the test unless the Hadoop catalog's metadata
// directory of tbl is whole and names tbl as current (see
// catalogtest.CheckHadoopMetadata). It returns the number of versions and
// the newest as read from disk.
func (w hadoopWarehouse) checkMetadata(t *testing.T, tbl *table.Table) (int, table.Metadata) {
	t.Helper()
	if dir := filepath.Join(w.dir, "db", "events", "metadata"); filepath.Dir(tbl.MetadataLocation()) != dir {
		t.Fatalf("table metadata at %s, want it in %s", tbl.MetadataLocation(), dir)
	}
	return catalogtest.CheckHadoopMetadata(t, tbl)
}

// checkStatisticsOnly fails the test unless after differs from before in
// statistics files at most: an icebloom commit never changes the table's
// snapshots, schema, partitioning, properties or location.
func checkStatisticsOnly(t *testing.T, what string, before, after table.Metadata) {
	t.Helper()
	switch {
	case !slices.Equal(snapshotIDs(before), snapshotIDs(after)):
		t.Errorf("%s changed the snapshots: %v, then %v", what, snapshotIDs(before), snapshotIDs(after))
	case before.CurrentSnapshot().SnapshotID != after.CurrentSnapshot().SnapshotID:
		t.Errorf("%s changed the current snapshot", what)
	case before.CurrentSchema().ID != after.CurrentSchema().ID || !before.CurrentSchema().Equals(after.CurrentSchema()):
		t.Errorf("%s changed the schema", what)
	case before.DefaultPartitionSpec() != after.DefaultPartitionSpec():
		t.Errorf("%s changed the partition spec", what)
	case !maps.Equal(before.Properties(), after.Properties()):
		t.Errorf("%s changed the properties: %v, then %v", what, before.Properties(), after.Properties())
	case before.Location() != after.Location():
		t.Errorf("%s changed the location", what)
	}
}

// snapshotIDs returns the ids of meta's snapshots, in order.
func snapshotIDs(meta table.Metadata) []int64 {
	var ids []int64
	for _, s := range meta.Snapshots() {
		ids = append(ids, s.SnapshotID)
	}
	return ids
}

// TestHadoopIndexLifecycle runs an index's whole life on a Hadoop catalog
// opened through catalog.Open, on a table created and appended to through
// iceberg-go: a build, lookups of present and absent values, an append and a
// sync, index compaction, expiry of the older snapshots, gc of the segments
// the compaction replaced, and verify. Each icebloom commit is the next
// metadata version on disk, holds the statistics files the run reported,
// changes nothing else, and is what another catalog handle loads; the
// metadata directory stays whole throughout.
func TestHadoopIndexLifecycle(t *testing.T) {
	ctx := t.Context()
	wh := newHadoopWarehouse(t)
	cat := wh.open(t)
	tbl, files := newEventsTable(t, cat)
	version, _ := wh.checkMetadata(t, tbl)
	if version != 5 {
		t.Fatalf("%d metadata versions after the create and 4 appends, want 5", version)
	}
	// committed checks what the icebloom command what committed: one more
	// metadata version, loaded by another handle, whose statistics files
	// are want and which changed nothing else. It returns the table as
	// loaded.
	committed := func(what string, before *table.Table, want ...string) *table.Table {
		t.Helper()
		after := load(t, wh.open(t))
		n, onDisk := wh.checkMetadata(t, after)
		if n != version+1 {
			t.Fatalf("%s: %d metadata versions, want %d: one commit", what, n, version+1)
		}
		version = n
		slices.Sort(want)
		if got := statisticsPaths(after); !slices.Equal(got, want) {
			t.Fatalf("%s: statistics files %v, want %v", what, got, want)
		}
		var paths []string
		for sf := range onDisk.Statistics() {
			paths = append(paths, sf.StatisticsPath)
		}
		if slices.Sort(paths); !slices.Equal(paths, want) {
			t.Fatalf("%s: v%d.metadata.json lists statistics files %v, want %v", what, n, paths, want)
		}
		checkStatisticsOnly(t, what, before.Metadata(), after.Metadata())
		return after
	}

	opts := indexer.Options{Columns: []string{"id"}, Parallel: 2}
	built, err := indexer.Build(ctx, cat, eventsIdent, opts)
	if err != nil {
		t.Fatal(err)
	}
	if built.FilesIndexed != 4 || built.FilesTotal != 4 || len(built.FilesFailed) != 0 || built.Blobs != 4 || built.StatisticsPath == "" {
		t.Fatalf("build %+v, want the 4 files indexed", built)
	}
	tbl = committed("build", tbl, built.StatisticsPath)
	checkCandidates(t, tbl, 8*25+1, files[1:2]) // present in file 1 only
	checkCandidates(t, tbl, 8*25+5, nil)        // in no file: all four pruned
	checkCandidates(t, tbl, 8*60+3, files[3:4])

	// An append of the ids 8j+5: kept unindexed until the sync.
	tbl = appendResidue(t, tbl, 5)
	version++
	files = append(files, newestFile(t, tbl, files))
	checkCandidates(t, tbl, 8*25+5, files[4:5], files[4])
	other := wh.open(t)
	synced, err := indexer.Sync(ctx, other, eventsIdent, opts)
	if err != nil {
		t.Fatal(err)
	}
	if synced.FilesIndexed != 1 || synced.FilesCovered != 4 || synced.FilesTotal != 5 || synced.Segments != 2 {
		t.Fatalf("sync %+v, want the appended file alone indexed, in a second segment", synced)
	}
	tbl = committed("sync", tbl, built.StatisticsPath, synced.StatisticsPath)
	checkCandidates(t, tbl, 8*25+5, files[4:5])
	checkCandidates(t, tbl, 8*25+1, files[1:2])
	checkCandidates(t, tbl, 8*25+6, nil)

	compacted, err := indexer.Compact(ctx, cat, eventsIdent, indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if compacted.SegmentsBefore != 2 || compacted.SegmentsAfter != 1 || compacted.EntriesKept != 5 || compacted.EntriesDropped != 0 {
		t.Fatalf("compact-index %+v, want the 2 segments merged into 1 of 5 entries", compacted)
	}
	tbl = committed("compact-index", tbl, compacted.StatisticsPath)
	checkCandidates(t, tbl, 8*25+5, files[4:5])
	checkCandidates(t, tbl, 8*25+7, nil)

	// Expiry keeps the current snapshot alone; its segment covers all five
	// files, so every one is still found by its ids and pruned otherwise.
	expired, err := maintenance.Expire(ctx, other, eventsIdent, maintenance.ExpireOptions{OlderThan: new(time.Duration), RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(expired.SnapshotsExpired) != 4 {
		t.Fatalf("expire %+v, want the 4 snapshots before the current one expired", expired)
	}
	tbl = load(t, wh.open(t))
	version, _ = wh.checkMetadata(t, tbl)
	if got := snapshotIDs(tbl.Metadata()); len(got) != 1 || got[0] != synced.SnapshotID {
		t.Fatalf("snapshots after expiry %v, want the current %d alone", got, synced.SnapshotID)
	}
	if got := statisticsPaths(tbl); !slices.Equal(got, []string{compacted.StatisticsPath}) {
		t.Fatalf("statistics files after expiry %v, want the compaction's %s", got, compacted.StatisticsPath)
	}
	for i, k := range []int64{0, 1, 2, 3, 5} {
		checkCandidates(t, tbl, 8*30+k, files[i:i+1])
	}
	checkCandidates(t, tbl, 8*30+4, nil)

	// gc deletes the build's and the sync's segments, which the compaction
	// replaced, and keeps the one the table references.
	gc, err := maintenance.GC(ctx, cat, eventsIdent, maintenance.GCOptions{OlderThan: maintenance.NoGrace, Force: true,
		// A second later: metadata the rebuild's last commit replaced in
		// the same millisecond as gc's clock reads counts as current within
		// the grace period, and keeps the files it references.
		Now: func() time.Time { return time.Now().Add(time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	deleted := slices.Sorted(slices.Values(gc.Deleted))
	replaced := slices.Sorted(slices.Values([]string{built.StatisticsPath, synced.StatisticsPath}))
	if gc.Scanned != 3 || gc.Referenced != 1 || !slices.Equal(deleted, replaced) || len(gc.Kept) != 0 || len(gc.Failed) != 0 {
		t.Fatalf("gc %+v, want the replaced segments %v deleted", gc, replaced)
	}
	for _, p := range replaced {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("gc left %s: %v", p, err)
		}
	}
	if _, err := os.Stat(compacted.StatisticsPath); err != nil {
		t.Errorf("the referenced segment: %v", err)
	}

	rep, err := verify.Table(ctx, other, eventsIdent, verify.Options{Sample: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Sampled) != 5 || len(rep.Columns) != 1 || rep.Columns[0].Covered != 5 || rep.Columns[0].Uncovered != 0 {
		t.Fatalf("verify %+v, want no problem, the 5 files covered and re-read", rep)
	}
	if n, _ := wh.checkMetadata(t, load(t, wh.open(t))); n != version {
		t.Fatalf("gc or verify committed: %d metadata versions, want %d", n, version)
	}
}

// commitHook is a catalog whose CommitTable first runs before, once: a
// commit of another writer that lands after this writer loaded the table
// and prepared its change, and before the catalog applies it.
type commitHook struct {
	icecatalog.Catalog
	before func()
}

func (c *commitHook) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if before := c.before; before != nil {
		c.before = nil
		before()
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestHadoopConcurrentSyncs: two syncs on two Hadoop catalog handles index
// different columns of the same snapshot, the second committing between the
// first's prepare and its commit. The Hadoop catalog applies the first's
// set-statistics to the metadata as it finds it, replacing the second's
// statistics file of that snapshot unseen (Iceberg has no requirement that
// could refuse it); the first sync finds that out after its commit and
// merges the other's entries back, so every file is covered for both
// columns, from one segment.
func TestHadoopConcurrentSyncs(t *testing.T) {
	ctx := t.Context()
	wh := newHadoopWarehouse(t)
	cat := wh.open(t)
	if err := cat.CreateNamespace(ctx, icecatalog.NamespaceFromIdent(eventsIdent), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, eventsIdent, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "id2", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	))
	if err != nil {
		t.Fatal(err)
	}
	for k := range int64(3) {
		tbl = appendPairs(t, tbl, residues(8, k, 50))
	}

	var second *indexer.Summary
	first := &commitHook{Catalog: wh.open(t), before: func() {
		var err error
		if second, err = indexer.Sync(ctx, wh.open(t), eventsIdent, indexer.Options{Columns: []string{"id2"}, Parallel: 1}); err != nil {
			t.Error(err)
		}
	}}
	sum, err := indexer.Sync(ctx, first, eventsIdent, indexer.Options{Columns: []string{"id"}, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if second == nil || second.FilesIndexed != 3 || sum.FilesIndexed != 3 {
		t.Fatalf("syncs %+v and %+v, want each to index the 3 files", sum, second)
	}

	tbl = load(t, wh.open(t))
	wh.checkMetadata(t, tbl)
	if n := len(statisticsPaths(tbl)); n != 1 {
		t.Fatalf("%d statistics files, want the snapshot's one", n)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, task := range mustPlan(t, tbl) {
		for _, field := range []int{1, 2} {
			if _, ok := ix.Lookup(task.File.FilePath(), task.File.FileSizeBytes(), field); !ok {
				t.Errorf("%s is not covered for field %d: a sync's entries were lost", task.File.FilePath(), field)
			}
		}
	}
	// Both columns prune: the file of the ids 8j+1 holds 161 and 1161.
	byID, _ := candidates(t, tbl, "id", 8*20+1)
	byID2, _ := candidates(t, tbl, "id2", 8*20+1+1000)
	if len(byID) != 1 || !slices.Equal(byID, byID2) {
		t.Errorf("lookups id = 161 and id2 = 1161: %v and %v, want the same one file", byID, byID2)
	}
	checkLookup(t, tbl, "id2", 8*20+5+1000) // in no file
}
