package catalog_test

// The SQL catalog on PostgreSQL, against the real server the environment
// names (catalogtest.PostgresDSN): opened through catalog.Open with the
// options the command's --catalog sql --sql-driver pgx --sql-dialect postgres
// flags give, the whole life of an index on it, and concurrent commits, where
// PostgreSQL differs from SQLite: writers do not take turns on a database
// lock, each blocks on the table's row and then finds it moved.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

var pgEvents = table.Identifier{"db", "events"}

// pgServer is a fresh schema on the test server: its DSN and a warehouse
// directory for the tables of catalogs opened on it.
type pgServer struct {
	dsn       string
	warehouse string
}

func newPGServer(t *testing.T) pgServer {
	t.Helper()
	dsn := catalogtest.PostgresDSN(t)
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml: the options alone
	return pgServer{dsn: dsn, warehouse: "file://" + filepath.ToSlash(t.TempDir())}
}

// options are the catalog options selecting the server's SQL catalog.
func (s pgServer) options() catalog.Options {
	return catalog.Options{
		Type:       "sql",
		URI:        s.dsn,
		Warehouse:  s.warehouse,
		SQLDriver:  catalogtest.PostgresDriver,
		SQLDialect: catalogtest.PostgresDialect,
	}
}

// open opens a new handle on the server's catalog, as another process
// would, closed at the end of the test.
func (s pgServer) open(t *testing.T) icecatalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(t.Context(), s.options())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(icecatalog.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	if cat.CatalogType() != icecatalog.SQL {
		t.Fatalf("catalog type %s, want sql", cat.CatalogType())
	}
	return cat
}

// db opens the schema's database directly, for what the catalog API hides.
func (s pgServer) db(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open(catalogtest.PostgresDriver, s.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// metadataLocation is where the catalog's row for ident in PostgreSQL says
// the table's metadata is.
func (s pgServer) metadataLocation(t *testing.T, ident table.Identifier) string {
	t.Helper()
	var loc string
	err := s.db(t).QueryRowContext(t.Context(),
		`SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3`,
		catalog.DefaultName, ident[0], ident[1]).Scan(&loc)
	if err != nil {
		t.Fatalf("the catalog row of %v: %v", ident, err)
	}
	return loc
}

// TestPostgresIndexLifecycle runs an index's life on a PostgreSQL catalog
// opened through catalog.Open: build, lookups of a present and an absent
// value, an append and sync, a rebuild and gc of the files it left
// unreferenced. Every commit is in PostgreSQL (its catalog row points at
// the metadata the commit returned) and another catalog handle, as another
// process, reads the same index.
func TestPostgresIndexLifecycle(t *testing.T) {
	ctx := t.Context()
	srv := newPGServer(t)
	cat := srv.open(t)
	tbl, files := newEventsTable(t, cat)
	if got := srv.metadataLocation(t, pgEvents); got != tbl.MetadataLocation() {
		t.Fatalf("PostgreSQL's catalog row has %s, the last append committed %s", got, tbl.MetadataLocation())
	}

	opts := indexer.Options{Columns: []string{"id"}, Parallel: 2}
	sum, err := indexer.Build(ctx, cat, pgEvents, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 4 || sum.FilesTotal != 4 || len(sum.FilesFailed) != 0 || sum.Blobs != 4 || sum.StatisticsPath == "" {
		t.Fatalf("build %+v, want the 4 files indexed", sum)
	}
	// Another handle sees the commit: it is in PostgreSQL, not in a cache.
	other := srv.open(t)
	tbl = load(t, other)
	if got := statisticsPaths(tbl); !slices.Equal(got, []string{sum.StatisticsPath}) {
		t.Fatalf("statistics files %v, want the build's %s", got, sum.StatisticsPath)
	}
	if got := srv.metadataLocation(t, pgEvents); got != tbl.MetadataLocation() {
		t.Fatalf("PostgreSQL's catalog row has %s, the loaded table %s", got, tbl.MetadataLocation())
	}
	checkCandidates(t, tbl, 8*25+1, files[1:2]) // present in file 1 only
	checkCandidates(t, tbl, 8*25+5, nil)        // in no file: all four pruned
	checkCandidates(t, tbl, 8*60+3, files[3:4])

	// An append of the ids 8j+5: not indexed yet, so kept, then synced.
	tbl = appendResidue(t, load(t, cat), 5)
	files = append(files, newestFile(t, tbl, files))
	checkCandidates(t, tbl, 8*25+5, files[4:5], files[4])
	synced, err := indexer.Sync(ctx, other, pgEvents, opts)
	if err != nil {
		t.Fatal(err)
	}
	if synced.FilesIndexed != 1 || synced.FilesCovered != 4 || synced.FilesTotal != 5 || synced.Segments != 2 {
		t.Fatalf("sync %+v, want the appended file alone indexed, in a second segment", synced)
	}
	tbl = load(t, cat)
	checkCandidates(t, tbl, 8*25+5, files[4:5])
	checkCandidates(t, tbl, 8*25+1, files[1:2])
	checkCandidates(t, tbl, 8*25+6, nil)
	if again, err := indexer.Sync(ctx, cat, pgEvents, opts); err != nil || again.FilesIndexed != 0 || again.StatisticsPath != "" {
		t.Fatalf("second sync %+v, %v: want nothing to do", again, err)
	}
	if got := srv.metadataLocation(t, pgEvents); got != tbl.MetadataLocation() {
		t.Fatal("a sync with nothing to do committed")
	}

	// A rebuild leaves one segment; gc deletes the build's and the sync's
	// it replaced, and whatever else the rebuild wrote on the way, keeping
	// the one the table references.
	before := statisticsPaths(tbl)
	rebuilt, err := indexer.Rebuild(ctx, cat, pgEvents, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt.FilesIndexed != 5 || rebuilt.Segments != 1 {
		t.Fatalf("rebuild %+v, want one segment of all 5 files", rebuilt)
	}
	gc, err := maintenance.GC(ctx, other, pgEvents, maintenance.GCOptions{OlderThan: maintenance.NoGrace, Force: true,
		// A second later: metadata the rebuild's last commit replaced in
		// the same millisecond as gc's clock reads counts as current within
		// the grace period, and keeps the files it references.
		Now: func() time.Time { return time.Now().Add(time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	if gc.Referenced != 1 || gc.Scanned != len(gc.Deleted)+1 || slices.Contains(gc.Deleted, rebuilt.StatisticsPath) ||
		len(gc.Kept) != 0 || len(gc.Failed) != 0 {
		t.Fatalf("gc %+v, want every index file deleted but the rebuild's %s", gc, rebuilt.StatisticsPath)
	}
	for _, p := range before {
		if !slices.Contains(gc.Deleted, p) {
			t.Errorf("gc kept the replaced segment %s", p)
		}
	}
	for _, p := range gc.Deleted {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("gc left %s: %v", p, err)
		}
	}
	tbl = load(t, srv.open(t))
	if got := statisticsPaths(tbl); !slices.Equal(got, []string{rebuilt.StatisticsPath}) {
		t.Fatalf("statistics files after gc %v, want the rebuild's %s", got, rebuilt.StatisticsPath)
	}
	checkCandidates(t, tbl, 8*25+5, files[4:5])
	checkCandidates(t, tbl, 8*25+7, nil)
}

// rowLock holds the row lock of db.events's catalog row in PostgreSQL, so
// that every commit to the table blocks in its UPDATE until release, having
// loaded the table, prepared its change and written its metadata file. It
// is how two commits are made to race for certain: both block on the same
// metadata location, and when the lock goes one of them finds the row moved.
type rowLock struct {
	db  *sql.DB
	tx  *sql.Tx
	pid int
}

func lockRow(t *testing.T, srv pgServer) *rowLock {
	t.Helper()
	l := &rowLock{db: srv.db(t)}
	tx, err := l.db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.tx = tx
	t.Cleanup(func() { l.release() })
	var locked int
	err = tx.QueryRowContext(t.Context(), `SELECT count(*) FROM (SELECT 1 FROM iceberg_tables
		WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3 FOR UPDATE) AS row`,
		catalog.DefaultName, pgEvents[0], pgEvents[1]).Scan(&locked)
	if err != nil || locked != 1 {
		t.Fatalf("lock the catalog row of db.events: %d rows, %v", locked, err)
	}
	if err := tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&l.pid); err != nil {
		t.Fatal(err)
	}
	return l
}

// waitBlocked waits until n sessions wait for the row lock, directly or
// behind another waiter, or until a writer fails or the wait times out.
func (l *rowLock) waitBlocked(t *testing.T, n int, failed <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang is a failure, not a timing
	defer cancel()
	for {
		// The first waiter waits for the lock's transaction, the others for
		// the first waiter's tuple lock.
		var blocked int
		err := l.db.QueryRowContext(ctx, `WITH RECURSIVE blocked(pid) AS (
				SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
				UNION
				SELECT a.pid FROM pg_stat_activity a JOIN blocked b ON b.pid = ANY(pg_blocking_pids(a.pid))
			) SELECT count(*) FROM blocked`, l.pid).Scan(&blocked)
		if err != nil {
			t.Fatalf("waiting for %d commits to block on the catalog row: %v", n, err)
		}
		if blocked == n {
			return
		}
		select {
		case <-failed:
			t.Fatalf("a writer ended before %d commits blocked on the catalog row", n)
		case <-ctx.Done():
			t.Fatalf("%d commits blocked on the catalog row, want %d: %v", blocked, n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// release releases the row lock; releasing it again does nothing.
func (l *rowLock) release() error {
	if err := l.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// race runs the writers at once, each on its own goroutine, while l holds
// the catalog row: when all have blocked in their commit, it releases the
// row and waits for them, returning their errors.
func race(t *testing.T, l *rowLock, writers ...func() error) []error {
	t.Helper()
	errs := make([]error, len(writers))
	failed := make(chan struct{}, len(writers))
	var wg sync.WaitGroup
	defer wg.Wait() // also when the wait below fails the test
	defer l.release()
	for i, w := range writers {
		wg.Go(func() {
			if errs[i] = w(); errs[i] != nil {
				failed <- struct{}{}
			}
		})
	}
	l.waitBlocked(t, len(writers), failed)
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// statsWriter is a Prepare setting a statistics file of one snapshot; it
// counts its calls and discards, and every call's file is distinct.
type statsWriter struct {
	dir      string
	snapshot int64
	calls    int
	discards int
	last     table.StatisticsFile
}

func (w *statsWriter) prepare(ctx context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
	w.calls++
	path := filepath.Join(w.dir, fmt.Sprintf("stats-%d-%d.puffin", w.snapshot, w.calls))
	if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
		return catalog.StatisticsChange{}, nil, err
	}
	w.last = table.StatisticsFile{
		SnapshotID: w.snapshot, StatisticsPath: "file://" + filepath.ToSlash(path), FileSizeInBytes: 1000, FileFooterSizeInBytes: 200,
		BlobMetadata: []table.BlobMetadata{{Type: table.BlobType(index.BlobType), SnapshotID: w.snapshot, SequenceNumber: 1, Fields: []int32{1}}},
	}
	return catalog.StatisticsChange{Set: []table.StatisticsFile{w.last}}, func() { w.discards++; os.Remove(path) }, nil
}

// TestPostgresConcurrentCommitStatistics: two writers, each with its own
// catalog handle as two processes would have, commit statistics files of
// different snapshots at once. Both block on the table's catalog row with
// the same metadata loaded; when it is released one commits and PostgreSQL
// finds the other's row moved, which the catalog reports as
// table.ErrCommitFailed. CommitStatistics retries that one on the reloaded
// table, and both files end up in the table.
func TestPostgresConcurrentCommitStatistics(t *testing.T) {
	srv := newPGServer(t)
	cat := srv.open(t)
	tbl, _ := newEventsTable(t, cat)
	var snapshots []int64
	for _, s := range tbl.Metadata().Snapshots() {
		snapshots = append(snapshots, s.SnapshotID)
	}
	dir := t.TempDir()
	writers := []*statsWriter{{dir: dir, snapshot: snapshots[1]}, {dir: dir, snapshot: snapshots[3]}}
	handles := []icecatalog.Catalog{srv.open(t), srv.open(t)}

	lock := lockRow(t, srv)
	commit := func(i int) func() error {
		return func() error {
			_, err := catalog.CommitStatistics(t.Context(), handles[i], pgEvents, writers[i].prepare)
			return err
		}
	}
	errs := race(t, lock, commit(0), commit(1))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	calls := []int{writers[0].calls, writers[1].calls}
	discards := []int{writers[0].discards, writers[1].discards}
	slices.Sort(calls)
	slices.Sort(discards)
	if !slices.Equal(calls, []int{1, 2}) || !slices.Equal(discards, []int{0, 1}) {
		t.Fatalf("prepare calls %v, discards %v; want one writer to commit at once and the other to conflict once and retry",
			[]int{writers[0].calls, writers[1].calls}, []int{writers[0].discards, writers[1].discards})
	}
	tbl = load(t, srv.open(t))
	want := []string{writers[0].last.StatisticsPath, writers[1].last.StatisticsPath}
	slices.Sort(want)
	if got := statisticsPaths(tbl); !slices.Equal(got, want) {
		t.Fatalf("statistics files %v, want both writers' last %v", got, want)
	}
	if len(tbl.Metadata().Snapshots()) != 4 || tbl.CurrentSnapshot().SnapshotID != snapshots[3] {
		t.Fatal("the statistics commits changed the snapshots")
	}
}

// TestPostgresConcurrentSyncs: two syncs on two catalog handles index
// different columns of the same snapshot at once, racing as in
// TestPostgresConcurrentCommitStatistics. Both replace the snapshot's
// statistics file; the one that conflicts is retried, reads the file the
// other committed and carries its entries over, so neither run's entries are
// lost: every file is covered for both columns, from one segment.
func TestPostgresConcurrentSyncs(t *testing.T) {
	srv := newPGServer(t)
	cat := srv.open(t)
	ctx := t.Context()
	if err := cat.CreateNamespace(ctx, icecatalog.NamespaceFromIdent(pgEvents), nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "id2", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	)
	tbl, err := cat.CreateTable(ctx, pgEvents, sc)
	if err != nil {
		t.Fatal(err)
	}
	for k := range int64(3) {
		tbl = appendPairs(t, tbl, residues(8, k, 50))
	}

	lock := lockRow(t, srv)
	handles := []icecatalog.Catalog{srv.open(t), srv.open(t)}
	sums := make([]*indexer.Summary, 2)
	sync := func(i int, column string) func() error {
		return func() (err error) {
			sums[i], err = indexer.Sync(ctx, handles[i], pgEvents, indexer.Options{Columns: []string{column}, Parallel: 1})
			return err
		}
	}
	if err := errors.Join(race(t, lock, sync(0, "id"), sync(1, "id2"))...); err != nil {
		t.Fatal(err)
	}
	for i, s := range sums {
		if s.FilesIndexed != 3 || s.Segments != 1 {
			t.Errorf("sync %d: %+v, want 3 files indexed into the snapshot's one segment", i, s)
		}
	}

	tbl = load(t, srv.open(t))
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
				t.Errorf("%s is not covered for field %d: a run's entries were lost", task.File.FilePath(), field)
			}
		}
	}
}

func mustPlan(t *testing.T, tbl *table.Table) []table.FileScanTask {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatal("no data files")
	}
	return tasks
}
