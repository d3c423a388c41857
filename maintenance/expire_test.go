package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

var bg = context.Background()

// covered reports, per live data file of the current snapshot, whether the
// table's index covers it for field 1.
func covered(t *testing.T, tbl *table.Table) map[string]bool {
	t.Helper()
	fs, _ := tbl.FS(bg)
	ix, errs := index.Load(bg, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tasks, err := tbl.Scan().PlanFiles(bg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, task := range tasks {
		_, _, ok := ix.Lookup(task.File.FilePath(), task.File.FileSizeBytes(), 1)
		out[task.File.FilePath()] = ok
	}
	return out
}

func overwrite(t *testing.T, tbl *table.Table, ids ...int64) *table.Table {
	t.Helper()
	as, _ := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	defer at.Release()
	txn := tbl.NewTransaction()
	if err := txn.OverwriteTable(bg, at, rec.NumRows(), nil); err != nil {
		t.Fatal(err)
	}
	out, err := txn.Commit(bg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExpireFoldsSegments: segments attached to snapshots about to expire
// are folded into the current snapshot's before iceberg-go expires them (and
// deletes their statistics files), so every live file stays covered, and
// the entry of a file only expired snapshots held is dropped.
func TestExpireFoldsSegments(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	sync := func() {
		t.Helper()
		if _, err := indexer.Sync(bg, cat, tbl.Identifier(), opts); err != nil {
			t.Fatal(err)
		}
		tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	}
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2, 3)
	sync()
	tbl = overwrite(t, tbl, 4, 5) // the first file is no longer live
	sync()
	tbl = catalogtest.AppendIDs(t, tbl, 6)
	sync()
	if n := len(tbl.Metadata().Snapshots()); n != 3 {
		t.Fatalf("%d snapshots", n)
	}

	sum, err := maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: new(time.Nanosecond), RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.SnapshotsExpired) != 2 || sum.Folded == nil || sum.Folded.EntriesDropped != 1 || sum.Folded.EntriesKept != 2 {
		t.Fatalf("expire %+v (folded %+v)", sum, sum.Folded)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry", n)
	}
	cov := covered(t, tbl)
	if len(cov) != 2 {
		t.Fatalf("%d live files", len(cov))
	}
	for f, ok := range cov {
		if !ok {
			t.Errorf("%s lost its coverage", f)
		}
	}
	n := 0
	for sf := range tbl.Metadata().Statistics() {
		if sf.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			t.Errorf("a statistics file of expired snapshot %d remains", sf.SnapshotID)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d statistics files after expiry", n)
	}

	// Nothing left to expire: nothing happens.
	again, err := maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: new(time.Nanosecond), RetainLast: 1})
	if err != nil || len(again.SnapshotsExpired) != 0 || again.Folded != nil {
		t.Fatalf("second expiry %+v, %v", again, err)
	}
}

// TestSyncAfterForeignExpiry: another engine expired snapshots and took
// their segments with it; the next sync notices the uncovered files and
// indexes only those.
func TestSyncAfterForeignExpiry(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2)
	if _, err := indexer.Sync(bg, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	tbl = catalogtest.AppendIDs(t, tbl, 3)
	if _, err := indexer.Sync(bg, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	// iceberg-go's own expiry, without the fold.
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(time.Nanosecond), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, _ = txn.Commit(bg); tbl == nil {
		t.Fatal("expiry failed")
	}
	lost := 0
	for _, ok := range covered(t, tbl) {
		if !ok {
			lost++
		}
	}
	if lost != 1 {
		t.Fatalf("%d files uncovered after a plain expiry, want the first one", lost)
	}
	sum, err := indexer.Sync(bg, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 1 || sum.FilesCovered != 1 {
		t.Fatalf("sync %+v: want only the uncovered file read", sum)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	for f, ok := range covered(t, tbl) {
		if !ok {
			t.Errorf("%s not covered", f)
		}
	}
}

// TestExpireOlderThanZero: an age of 0 is now, as gc's --older-than 0s is:
// every snapshot but those retained expires (not iceberg-go's 5-day default,
// which is what an age left unset gets).
func TestExpireOlderThanZero(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	for id := range int64(3) {
		tbl = catalogtest.AppendIDs(t, tbl, id)
	}
	// Unset: the default age keeps these young snapshots.
	sum, err := maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{RetainLast: 1})
	if err != nil || len(sum.SnapshotsExpired) != 0 {
		t.Fatalf("expiry with no age: %+v, %v; want nothing expired", sum, err)
	}
	sum, err = maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: new(time.Duration(0)), RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.SnapshotsExpired) != 2 {
		t.Fatalf("expired %v, want the 2 snapshots before the current one", sum.SnapshotsExpired)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	if snaps := tbl.Metadata().Snapshots(); len(snaps) != 1 || snaps[0].SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatalf("snapshots left %v, want the current one", snaps)
	}
}
