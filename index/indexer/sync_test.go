package indexer_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
)

// TestSyncIndexesOnlyNewFiles: after a build and an append, sync reads only
// the new file, attaches a segment to the new snapshot, and leaves every
// live file covered; a second sync with nothing new commits nothing; a sync
// of the same snapshot that indexes more (a newly configured column) keeps
// the earlier sync's entries, which set-statistics would otherwise replace.
func TestSyncIndexesOnlyNewFiles(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 3, 100, nil)
	opts := indexer.Options{Columns: []string{"id", "email"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	rec := eventsRecord(t, tbl.Schema(), randomRows(newRand(), 50))
	tbl = catalogtest.Append(t, tbl, rec)
	rec.Release()

	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 1 || sum.FilesCovered != 3 || sum.FilesTotal != 4 || sum.Blobs != 2 {
		t.Fatalf("sync %+v, want only the appended file read", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	segments := 0
	for range tbl.Metadata().Statistics() {
		segments++
	}
	if segments != 2 {
		t.Fatalf("%d statistics files, want the build's and the sync's", segments)
	}
	_, entries := indexOf(t, tbl) // the current snapshot's segment: the new file only
	if len(entries) != 1 {
		t.Fatalf("the sync's segment holds %d files, want 1", len(entries))
	}
	coveredByAll(t, tbl, 1, 2)

	before := tbl.MetadataLocation()
	again, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.FilesIndexed != 0 || again.FilesCovered != 4 || again.StatisticsPath != "" {
		t.Fatalf("second sync %+v, want nothing to do", again)
	}
	if tbl, _ = cat.LoadTable(ctx, tbl.Identifier()); tbl.MetadataLocation() != before {
		t.Fatal("a sync with nothing new committed")
	}

	// A column added to the configuration makes every file uncovered.
	wider, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	if wider.FilesIndexed != 4 {
		t.Fatalf("sync with a new column %+v", wider)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries = indexOf(t, tbl)
	if len(entries) != 4 {
		t.Fatalf("the current snapshot's segment covers %d files, want its earlier entries kept and 3 more", len(entries))
	}
	coveredByAll(t, tbl, 1, 2, 5)
}

// coveredByAll checks, through the table's whole index (all segments),
// that every live data file has an applicable entry for each field.
func coveredByAll(t *testing.T, tbl *table.Table, fieldIDs ...int) {
	t.Helper()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, df := range liveFiles(t, tbl) {
		for _, id := range fieldIDs {
			if _, ok := ix.Lookup(df.FilePath(), df.FileSizeBytes(), id); !ok {
				t.Errorf("%s is not covered for field %d", df.FilePath(), id)
			}
		}
	}
}

// racingCatalog runs before() once, right before the first commit reaches
// the catalog: another run's whole commit lands between this run's load
// and its commit.
type racingCatalog struct {
	*catalogtest.Catalog
	before func()
}

func (c *racingCatalog) CommitTable(ctx2 context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if c.before != nil {
		before := c.before
		c.before = nil
		before()
	}
	return c.Catalog.CommitTable(ctx2, ident, reqs, ups)
}

// TestConcurrentSyncsKeepBothCommits: two syncs of the same snapshot index
// different columns at once. The second to commit replaces the first's
// statistics file without having seen it (Iceberg cannot refuse that), then
// notices from the metadata it replaced and commits again with both, so no
// commit is lost.
func TestConcurrentSyncsKeepBothCommits(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 50, nil)
	racing := &racingCatalog{Catalog: cat, before: func() {
		if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"email"}}); err != nil {
			t.Error(err)
		}
	}}
	sum, err := indexer.Sync(ctx, racing, tbl.Identifier(), indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 {
		t.Fatalf("sync %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1, 2)
	n := 0
	for range tbl.Metadata().Statistics() {
		n++
	}
	if n != 1 {
		t.Fatalf("%d statistics files, want the one merged segment of the snapshot", n)
	}
}
