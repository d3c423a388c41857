package maintenance_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
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
		_, ok := ix.Lookup(task.File.FilePath(), task.File.FileSizeBytes(), 1)
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

// appendingCatalog lands an append to the table, through the catalog it
// wraps, right before the first commit that removes snapshots, as a writer
// appending while expire runs would. The tables it loads commit through it.
type appendingCatalog struct {
	*catalogtest.Catalog
	t        *testing.T
	appended int64
}

func (c *appendingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *appendingCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.appended == 0 && slices.ContainsFunc(updates, func(u table.Update) bool { return u.Action() == table.UpdateRemoveSnapshots }) {
		tbl, err := c.Catalog.LoadTable(ctx, ident)
		if err != nil {
			return nil, "", err
		}
		c.appended = catalogtest.AppendIDs(c.t, tbl, 99).CurrentSnapshot().SnapshotID
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestExpireRetriesConflict: an append lands between expire's plan and its
// commit, which the catalog refuses ("requirement failed: branch "main" has
// changed"). Expire plans again on the table with the append, commits, and
// logs the retry.
func TestExpireRetriesConflict(t *testing.T) {
	cat := &appendingCatalog{Catalog: catalogtest.NewCatalog(t), t: t}
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	for id := range int64(3) {
		tbl = catalogtest.AppendIDs(t, tbl, id)
	}
	var logged bytes.Buffer
	sum, err := maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{
		OlderThan: new(time.Duration(0)), RetainLast: 1, Logger: slog.New(slog.NewJSONHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if cat.appended == 0 || len(sum.SnapshotsExpired) != 3 {
		t.Fatalf("expired %v (appended %d), want the 3 snapshots before the append's", sum.SnapshotsExpired, cat.appended)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	if snaps := tbl.Metadata().Snapshots(); len(snaps) != 1 || snaps[0].SnapshotID != cat.appended {
		t.Fatalf("snapshots left %v, want the append's %d", snaps, cat.appended)
	}
	if n := strings.Count(logged.String(), `"level":"WARN"`); n != 1 || !strings.Contains(logged.String(), "has changed") {
		t.Errorf("retries logged as %s, want one warning naming the conflict", logged.String())
	}
}

// TestExpireRetriesTransient: on a REST catalog whose server answers the
// first load of the table with 429 and the expiry's commit with 503, expire
// retries both and expires.
func TestExpireRetriesTransient(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	cat, err := catalog.Open(bg, catalog.Options{Type: "rest", URI: srv.URL, Credential: srv.Credential})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
	ident := table.Identifier{"db", "events"}
	tbl, err := cat.CreateTable(bg, ident, catalogtest.IDSchema)
	if err != nil {
		t.Fatal(err)
	}
	for id := range int64(3) {
		tbl = catalogtest.AppendIDs(t, tbl, id)
	}
	var loads, commits atomic.Int64
	srv.Fault = func(r *http.Request) int {
		if !strings.HasSuffix(r.URL.Path, "/namespaces/db/tables/events") {
			return 0
		}
		switch {
		case r.Method == http.MethodGet && loads.Add(1) == 1:
			return http.StatusTooManyRequests
		case r.Method == http.MethodPost && commits.Add(1) == 1:
			return http.StatusServiceUnavailable
		}
		return 0
	}
	var logged bytes.Buffer
	sum, err := maintenance.Expire(bg, cat, ident, maintenance.ExpireOptions{
		OlderThan: new(time.Duration(0)), RetainLast: 1, Logger: slog.New(slog.NewJSONHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.SnapshotsExpired) != 2 {
		t.Fatalf("expired %v, want the 2 snapshots before the current one", sum.SnapshotsExpired)
	}
	backing, err := srv.Catalog.LoadTable(bg, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(backing.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots left, want 1", n)
	}
	if n := strings.Count(logged.String(), `"level":"WARN"`); n != 2 {
		t.Errorf("retries logged as %s, want 2 warnings", logged.String())
	}
}

// syncingCatalog lands an append and its sync right before the expiry's
// fold loads the table (the second load of the expiry): the fold then sees
// a snapshot, and a segment, that the expiry's plan did not.
type syncingCatalog struct {
	*catalogtest.Catalog
	t      *testing.T
	loads  int
	synced string // the appended file
}

func (c *syncingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	if c.loads++; c.loads == 2 {
		tbl, err := c.Catalog.LoadTable(ctx, ident)
		if err != nil {
			return nil, err
		}
		tbl = catalogtest.AppendIDs(c.t, tbl, 77)
		if _, err := indexer.Sync(ctx, c.Catalog, ident, indexer.Options{Columns: []string{"id"}, CompactAbove: -1}); err != nil {
			c.t.Fatal(err)
		}
		tasks, _ := tbl.Scan().PlanFiles(ctx)
		for _, task := range tasks {
			if task.File.Count() == 1 {
				c.synced = task.File.FilePath()
			}
		}
	}
	return c.Catalog.LoadTable(ctx, ident)
}

// TestExpireFoldKeepsAFileSyncedMeanwhile: the fold decides which entries
// to keep from the table it commits on, not from the expiry's plan, so a
// file appended and synced between the two keeps its filter.
func TestExpireFoldKeepsAFileSyncedMeanwhile(t *testing.T) {
	cat := &syncingCatalog{Catalog: catalogtest.NewCatalog(t), t: t}
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	for _, id := range []int64{1, 2, 3} {
		tbl = catalogtest.AppendIDs(t, tbl, id, id+10)
		if _, err := indexer.Sync(bg, cat.Catalog, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, CompactAbove: -1}); err != nil {
			t.Fatal(err)
		}
		tbl, _ = cat.Catalog.LoadTable(bg, tbl.Identifier())
	}
	sum, err := maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: new(time.Duration), RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cat.synced == "" || sum.Folded == nil {
		t.Fatalf("expire %+v: the append and sync did not land inside it (%q)", sum, cat.synced)
	}
	tbl, _ = cat.Catalog.LoadTable(bg, tbl.Identifier())
	cov := covered(t, tbl)
	if len(cov) != 4 || !cov[cat.synced] {
		t.Fatalf("coverage after the expiry %v: the file synced during it (%s) lost its filter", cov, cat.synced)
	}
	for f, ok := range cov {
		if !ok {
			t.Errorf("%s lost its coverage", f)
		}
	}
}

// TestExpireNotBlockedByABrokenIndexFile: an index file of a snapshot due
// to expire is missing, and the current snapshot's is zeroed. Expiry
// neither blocks nor fails: the fold removes the missing file's reference
// and replaces the zeroed one, reporting both, and the next sync indexes
// the files they covered, so every live file is covered again.
func TestExpireNotBlockedByABrokenIndexFile(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	opts := indexer.Options{Columns: []string{"id"}, CompactAbove: -1}
	var files []string
	for _, id := range []int64{1, 2, 3} {
		tbl = catalogtest.AppendIDs(t, tbl, id)
		sum, err := indexer.Sync(bg, cat, tbl.Identifier(), opts)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, strings.TrimPrefix(sum.StatisticsPath, "file://"))
		tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(files[2])
	if err := os.WriteFile(files[2], make([]byte, st.Size()), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := maintenance.Expire(bg, cat, tbl.Identifier(), maintenance.ExpireOptions{OlderThan: new(time.Duration), RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.SnapshotsExpired) != 2 || sum.Folded == nil || len(sum.Folded.BrokenFiles) != 2 {
		t.Fatalf("expire %+v (folded %+v)", sum, sum.Folded)
	}
	synced, err := indexer.Sync(bg, cat, tbl.Identifier(), opts)
	if err != nil || synced.FilesIndexed != 2 {
		t.Fatalf("sync after the repair: %+v, %v", synced, err)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	for f, ok := range covered(t, tbl) {
		if !ok {
			t.Errorf("%s is not covered", f)
		}
	}
}

// TestSyncReplacesABrokenCurrentFile: the current snapshot's index file is
// missing; sync neither fails nor carries it: it indexes the files it
// covered into the segment that replaces it, and reports it.
func TestSyncReplacesABrokenCurrentFile(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2)
	built, err := indexer.Build(bg, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(strings.TrimPrefix(built.StatisticsPath, "file://")); err != nil {
		t.Fatal(err)
	}
	sum, err := indexer.Sync(bg, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 1 || !slices.Equal(sum.BrokenFiles, []string{built.StatisticsPath}) || sum.Segments != 1 {
		t.Fatalf("sync %+v", sum)
	}
	tbl, _ = cat.LoadTable(bg, tbl.Identifier())
	for f, ok := range covered(t, tbl) {
		if !ok {
			t.Errorf("%s is not covered", f)
		}
	}
}
