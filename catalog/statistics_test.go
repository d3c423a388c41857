package catalog

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

var events = table.Identifier{"db", "events"}

// fixture is an embedded catalog in dir holding the table events with two
// snapshots, s1 and s2.
type fixture struct {
	dir    string
	cat    icecatalog.Catalog
	s1, s2 int64
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{dir: t.TempDir()}
	f.cat = openEmbedded(t, f.dir)
	createTable(t, f.cat, events)
	f.s1 = appendT(t, f.cat, events)
	f.s2 = appendT(t, f.cat, events)
	return f
}

// reload loads events through a new catalog instance, so what it returns is
// what the catalog persisted.
func (f fixture) reload(t *testing.T) *table.Table {
	t.Helper()
	tbl, err := openEmbedded(t, f.dir).LoadTable(t.Context(), events)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// statsFile is a plausible statistics file of snapshot id at path.
func statsFile(id int64, path string) table.StatisticsFile {
	return table.StatisticsFile{
		SnapshotID: id, StatisticsPath: path, FileSizeInBytes: 1000, FileFooterSizeInBytes: 200,
		BlobMetadata: []table.BlobMetadata{{
			Type: "split-block-bloom-filter-v1", SnapshotID: id, SequenceNumber: 1,
			Fields: []int32{1}, Properties: map[string]string{"entry-count": "3"},
		}},
	}
}

// statistics returns the statistics files of meta by snapshot id.
func statistics(meta table.Metadata) []table.StatisticsFile {
	return slices.SortedFunc(meta.Statistics(), func(a, b table.StatisticsFile) int {
		return cmp.Compare(a.SnapshotID, b.SnapshotID)
	})
}

// checkStatistics fails the test unless tbl has exactly the statistics files
// want.
func checkStatistics(t *testing.T, tbl *table.Table, want ...table.StatisticsFile) {
	t.Helper()
	slices.SortFunc(want, func(a, b table.StatisticsFile) int { return cmp.Compare(a.SnapshotID, b.SnapshotID) })
	if got := statistics(tbl.Metadata()); !reflect.DeepEqual(got, want) {
		t.Errorf("statistics files:\n got %+v\nwant %+v", got, want)
	}
}

// set is a Prepare that sets the given files and writes nothing.
func set(files ...table.StatisticsFile) Prepare {
	return func(context.Context, *table.Table) (StatisticsChange, func(), error) {
		return StatisticsChange{Set: files}, nil, nil
	}
}

// commit commits what prepare builds to events in cat, without waiting
// between attempts.
func commit(t *testing.T, cat icecatalog.Catalog, prepare Prepare, opts ...CommitOption) (*table.Table, error) {
	t.Helper()
	opts = append([]CommitOption{WithSleep(func(context.Context, time.Duration) error { return nil })}, opts...)
	return CommitStatistics(t.Context(), cat, events, prepare, opts...)
}

// commitT is commit failing the test on error.
func commitT(t *testing.T, cat icecatalog.Catalog, prepare Prepare) *table.Table {
	t.Helper()
	tbl, err := commit(t, cat, prepare)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestCommitStatistics shows that statistics files are set, replaced and
// removed as the change says, that the catalog persists them, and that the
// table CommitStatistics returns is the committed one.
func TestCommitStatistics(t *testing.T) {
	f := newFixture(t)
	a, b, c := statsFile(f.s1, "/wh/a.puffin"), statsFile(f.s1, "/wh/b.puffin"), statsFile(f.s2, "/wh/c.puffin")

	tbl := commitT(t, f.cat, set(a))
	checkStatistics(t, f.reload(t), a)
	if got, ok := StatisticsFileOf(tbl.Metadata(), f.s1); !ok || !reflect.DeepEqual(got, a) {
		t.Errorf("StatisticsFileOf(s1) = %+v, %v; want %+v", got, ok, a)
	}
	if _, ok := StatisticsFileOf(tbl.Metadata(), f.s2); ok {
		t.Error("StatisticsFileOf(s2) found a file; s2 has none")
	}

	commitT(t, f.cat, set(b, c)) // replaces s1's, adds s2's
	checkStatistics(t, f.reload(t), b, c)

	tbl = commitT(t, f.cat, func(context.Context, *table.Table) (StatisticsChange, func(), error) {
		return StatisticsChange{Remove: []int64{f.s1}}, nil, nil
	})
	persisted := f.reload(t)
	checkStatistics(t, persisted, c)
	if tbl.MetadataLocation() != persisted.MetadataLocation() || !tbl.Metadata().Equals(persisted.Metadata()) {
		t.Errorf("returned table at %s differs from the committed one at %s", tbl.MetadataLocation(), persisted.MetadataLocation())
	}
}

// TestCommitStatisticsNilBlobMetadata shows that a file without blob metadata
// is committed with an empty list, which the spec requires, not null.
func TestCommitStatisticsNilBlobMetadata(t *testing.T) {
	f := newFixture(t)
	file := statsFile(f.s1, "/wh/a.puffin")
	file.BlobMetadata = nil
	commitT(t, f.cat, set(file))
	got, _ := StatisticsFileOf(f.reload(t).Metadata(), f.s1)
	if got.BlobMetadata == nil {
		t.Error("blob metadata persisted as null")
	}
}

// withoutStatistics returns meta as JSON fields, less those a statistics
// commit changes: the statistics, the update time and the metadata log.
func withoutStatistics(t *testing.T, meta table.Metadata) map[string]any {
	t.Helper()
	b, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"statistics", "last-updated-ms", "metadata-log"} {
		delete(fields, k)
	}
	return fields
}

// TestCommitStatisticsChangesNothingElse shows that a commit leaves all of
// the table's metadata but its statistics as it was: snapshots, schemas,
// properties, refs and the current snapshot.
func TestCommitStatisticsChangesNothingElse(t *testing.T) {
	f := newFixture(t)
	before := f.reload(t).Metadata()
	commitT(t, f.cat, set(statsFile(f.s1, "/wh/a.puffin"), statsFile(f.s2, "/wh/b.puffin")))
	after := f.reload(t).Metadata()

	if !reflect.DeepEqual(withoutStatistics(t, before), withoutStatistics(t, after)) {
		t.Errorf("metadata changed beyond statistics:\nbefore %v\n after %v", withoutStatistics(t, before), withoutStatistics(t, after))
	}
	if len(after.Snapshots()) != 2 || after.CurrentSnapshot().SnapshotID != f.s2 {
		t.Errorf("after: %d snapshots, current %d; want 2, %d", len(after.Snapshots()), after.CurrentSnapshot().SnapshotID, f.s2)
	}
}

// TestCommitStatisticsInvalid shows that a change that cannot be right is
// refused before it reaches the catalog: nothing is committed, prepare is not
// called again and its files are discarded.
func TestCommitStatisticsInvalid(t *testing.T) {
	f := newFixture(t)
	before := f.reload(t).MetadataLocation()
	good := statsFile(f.s1, "/wh/a.puffin")
	with := func(edit func(*table.StatisticsFile)) table.StatisticsFile {
		file := statsFile(f.s2, "/wh/b.puffin")
		edit(&file)
		return file
	}

	tests := []struct {
		change StatisticsChange
		want   string
	}{
		{StatisticsChange{Set: []table.StatisticsFile{good, statsFile(42, "/wh/c.puffin")}}, "snapshot 42 is not in the table"},
		{StatisticsChange{Remove: []int64{42}}, "snapshot 42 is not in the table"},
		{StatisticsChange{Set: []table.StatisticsFile{with(func(s *table.StatisticsFile) { s.StatisticsPath = "" })}}, "has no path"},
		{StatisticsChange{Set: []table.StatisticsFile{with(func(s *table.StatisticsFile) { s.FileSizeInBytes = 0 })}}, "size 0"},
		{StatisticsChange{Set: []table.StatisticsFile{with(func(s *table.StatisticsFile) { s.FileFooterSizeInBytes = 0 })}}, "footer size 0"},
		{StatisticsChange{Set: []table.StatisticsFile{with(func(s *table.StatisticsFile) { s.FileFooterSizeInBytes = s.FileSizeInBytes })}}, "footer size 1000 does not fit in file size 1000"},
		{StatisticsChange{Set: []table.StatisticsFile{good, good}}, fmt.Sprintf("snapshot %d is changed twice", f.s1)},
		{StatisticsChange{Set: []table.StatisticsFile{good}, Remove: []int64{f.s1}}, fmt.Sprintf("snapshot %d is changed twice", f.s1)},
	}
	for _, tt := range tests {
		calls, discards := 0, 0
		_, err := commit(t, f.cat, func(context.Context, *table.Table) (StatisticsChange, func(), error) {
			calls++
			return tt.change, func() { discards++ }, nil
		})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "db.events") {
			t.Errorf("change %+v: error %v, want one about db.events containing %q", tt.change, err, tt.want)
		}
		if calls != 1 || discards != 1 {
			t.Errorf("change %+v: prepare called %d times, discard %d; want 1, 1", tt.change, calls, discards)
		}
	}
	if after := f.reload(t).MetadataLocation(); after != before {
		t.Errorf("metadata moved from %s to %s", before, after)
	}
}

// TestCommitStatisticsEmpty shows that an empty change commits nothing and
// returns the table as loaded.
func TestCommitStatisticsEmpty(t *testing.T) {
	f := newFixture(t)
	before := f.reload(t).MetadataLocation()
	discards := 0
	tbl := commitT(t, f.cat, func(context.Context, *table.Table) (StatisticsChange, func(), error) {
		return StatisticsChange{}, func() { discards++ }, nil
	})
	if tbl.MetadataLocation() != before || f.reload(t).MetadataLocation() != before || discards != 1 {
		t.Errorf("empty change: returned %s, persisted %s, %d discards; want %s twice and 1 discard",
			tbl.MetadataLocation(), f.reload(t).MetadataLocation(), discards, before)
	}
}

// writer is a Prepare that writes a file per call, standing in for a Puffin
// file, and sets it as the statistics file of snapshot; its discard removes
// the file. It records what it was called with.
type writer struct {
	dir      string
	snapshot int64
	before   func(call int) // runs at the start of every call, if set

	calls    int
	discards int
	tables   []*table.Table // the tables it was called with
	paths    []string       // the files it wrote
}

func (w *writer) prepare(ctx context.Context, tbl *table.Table) (StatisticsChange, func(), error) {
	w.calls++
	w.tables = append(w.tables, tbl)
	if w.before != nil {
		w.before(w.calls)
	}
	path := filepath.Join(w.dir, fmt.Sprintf("stats-%d-%d.puffin", w.snapshot, w.calls))
	if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
		return StatisticsChange{}, nil, err
	}
	w.paths = append(w.paths, path)
	discard := func() {
		w.discards++
		os.Remove(path)
	}
	return StatisticsChange{Set: []table.StatisticsFile{statsFile(w.snapshot, path)}}, discard, nil
}

// exist reports which of paths exist.
func exist(paths []string) []bool {
	var ok []bool
	for _, p := range paths {
		_, err := os.Stat(p)
		ok = append(ok, err == nil)
	}
	return ok
}

// TestCommitStatisticsAppendDuringPrepare shows that a commit to the table
// after it was loaded, here an append while prepare runs, is no conflict: the
// catalog applies the statistics to the table as it has it, so the append is
// kept and prepare runs once.
func TestCommitStatisticsAppendDuringPrepare(t *testing.T) {
	f := newFixture(t)
	var appended int64
	w := &writer{dir: f.dir, snapshot: f.s1, before: func(int) { appended = appendT(t, f.cat, events) }}
	commitT(t, f.cat, w.prepare)

	tbl := f.reload(t)
	if w.calls != 1 || w.discards != 0 {
		t.Errorf("prepare called %d times, discard %d; want 1, 0", w.calls, w.discards)
	}
	if tbl.CurrentSnapshot().SnapshotID != appended {
		t.Errorf("current snapshot %d, want the append's %d", tbl.CurrentSnapshot().SnapshotID, appended)
	}
	checkStatistics(t, tbl, statsFile(f.s1, w.paths[0]))
}

// TestCommitStatisticsConflict shows the retry after a real conflict: another
// writer commits an append while the catalog commits the statistics, so the
// catalog's compare-and-swap of the metadata location fails. The attempt's
// file is discarded, prepare runs again on the reloaded table, and the end
// state has both the append and the statistics.
func TestCommitStatisticsConflict(t *testing.T) {
	f := newFixture(t)
	var appended int64
	raced := racedCatalog(t, f.dir, func() {
		if appended == 0 {
			appended = appendT(t, f.cat, events)
		}
	})
	w := &writer{dir: f.dir, snapshot: f.s1}
	var waits []time.Duration
	var logged bytes.Buffer
	_, err := CommitStatistics(t.Context(), raced, events, w.prepare, WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}), WithLogger(slog.New(slog.NewJSONHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Level, Table, Error string
		Attempt, Of         int
	}
	if err := json.Unmarshal(logged.Bytes(), &rec); err != nil || rec.Level != "WARN" || rec.Table != strings.Join(events, ".") ||
		rec.Attempt != 2 || rec.Of != DefaultCommitAttempts || rec.Error == "" {
		t.Errorf("retry logged as %q (%v), want one warning naming the table, attempt 2 and the conflict", logged.String(), err)
	}

	if w.calls != 2 || w.discards != 1 {
		t.Fatalf("prepare called %d times, discard %d; want 2, 1", w.calls, w.discards)
	}
	if len(waits) != 1 || waits[0] < 0 || waits[0] > firstBackoff {
		t.Errorf("waited %v, want once, at most %v", waits, firstBackoff)
	}
	if w.tables[1].SnapshotByID(appended) == nil {
		t.Error("the second prepare did not get the table with the append")
	}
	if got := exist(w.paths); !slices.Equal(got, []bool{false, true}) {
		t.Errorf("files of the attempts exist: %v, want the discarded first one gone", got)
	}
	tbl := f.reload(t)
	if tbl.CurrentSnapshot().SnapshotID != appended {
		t.Errorf("current snapshot %d, want the append's %d", tbl.CurrentSnapshot().SnapshotID, appended)
	}
	checkStatistics(t, tbl, statsFile(f.s1, w.paths[1]))
}

// TestCommitStatisticsGivesUp shows that a commit that conflicts on every
// attempt fails with table.ErrCommitFailed after the attempts set, having
// discarded every attempt's files and committed nothing.
func TestCommitStatisticsGivesUp(t *testing.T) {
	f := newFixture(t)
	raced := racedCatalog(t, f.dir, func() { appendT(t, f.cat, events) })
	w := &writer{dir: f.dir, snapshot: f.s1}
	_, err := commit(t, raced, w.prepare, WithAttempts(3))
	if !errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %v, want ErrCommitFailed after 3 attempts", err)
	}
	if w.calls != 3 || w.discards != 3 || slices.Contains(exist(w.paths), true) {
		t.Errorf("prepare called %d times, discard %d, files left %v; want 3, 3, none", w.calls, w.discards, exist(w.paths))
	}
	checkStatistics(t, f.reload(t))
}

// TestCommitStatisticsNotRetried shows that errors other than conflicts end
// the commit at once. A commit the catalog refused for another reason keeps
// its files: in general the outcome of such a commit is unknown, and deleting
// a file the table may now name would break its statistics.
func TestCommitStatisticsNotRetried(t *testing.T) {
	t.Run("table replaced", func(t *testing.T) {
		f := newFixture(t)
		// Replacing the table under the commit makes its table UUID
		// requirement fail: not the same table, not a conflict.
		w := &writer{dir: f.dir, snapshot: f.s1, before: func(int) {
			if err := f.cat.DropTable(t.Context(), events); err != nil {
				t.Fatal(err)
			}
			if _, err := f.cat.CreateTable(t.Context(), events, testSchema); err != nil {
				t.Fatal(err)
			}
		}}
		_, err := commit(t, f.cat, w.prepare)
		if err == nil || errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "db.events") {
			t.Errorf("error %v, want one about db.events that is not ErrCommitFailed", err)
		}
		if w.calls != 1 || w.discards != 0 || !slices.Equal(exist(w.paths), []bool{true}) {
			t.Errorf("prepare called %d times, discard %d, file kept %v; want 1, 0, kept", w.calls, w.discards, exist(w.paths))
		}
	})
	t.Run("prepare fails", func(t *testing.T) {
		f := newFixture(t)
		calls := 0
		failure := fmt.Errorf("read statistics file: %w", table.ErrCommitFailed) // even this one
		_, err := commit(t, f.cat, func(context.Context, *table.Table) (StatisticsChange, func(), error) {
			calls++
			return StatisticsChange{}, nil, failure
		})
		if !errors.Is(err, failure) || calls != 1 {
			t.Errorf("error %v after %d calls, want %v after 1", err, calls, failure)
		}
	})
}

// TestCommitStatisticsCancel shows that cancelling the context stops the
// retries: the wait after a conflict returns the context's error.
func TestCommitStatisticsCancel(t *testing.T) {
	f := newFixture(t)
	raced := racedCatalog(t, f.dir, func() { appendT(t, f.cat, events) })
	w := &writer{dir: f.dir, snapshot: f.s1}
	ctx, cancel := context.WithCancel(t.Context())
	_, err := CommitStatistics(ctx, raced, events, w.prepare, WithSleep(func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleep(ctx, time.Hour)
	}))
	if !errors.Is(err, context.Canceled) || w.calls != 1 {
		t.Errorf("error %v after %d calls, want context.Canceled after 1", err, w.calls)
	}
}

// TestCommitStatisticsConcurrent shows that two writers, each with its own
// catalog instance as two processes would have, committing statistics of
// different snapshots of the same table at the same time both succeed and
// both files end up in the table.
func TestCommitStatisticsConcurrent(t *testing.T) {
	f := newFixture(t)
	// Both load the table before either commits.
	var loaded sync.WaitGroup
	loaded.Add(2)
	writers := []*writer{{dir: f.dir, snapshot: f.s1}, {dir: f.dir, snapshot: f.s2}}
	errs := make([]error, len(writers))
	var done sync.WaitGroup
	for i, w := range writers {
		cat := openEmbedded(t, f.dir)
		w.before = func(call int) {
			if call == 1 {
				loaded.Done()
				loaded.Wait()
			}
		}
		done.Go(func() {
			_, errs[i] = CommitStatistics(t.Context(), cat, events, w.prepare)
		})
	}
	done.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("prepare calls: %d, %d (more than one is a conflict retried)", writers[0].calls, writers[1].calls)
	checkStatistics(t, f.reload(t),
		statsFile(f.s1, writers[0].paths[len(writers[0].paths)-1]),
		statsFile(f.s2, writers[1].paths[len(writers[1].paths)-1]))
}

// lockedCatalog opens a SQL catalog on SQLite with no busy timeout, so that
// a lock another connection holds fails its statements at once with
// SQLITE_BUSY, and creates events in it with one snapshot. lock takes an
// exclusive lock on its database through another connection, which keeps
// readers out too, and unlock releases it.
func lockedCatalog(t *testing.T) (dir string, cat icecatalog.Catalog, s1 int64, lock, unlock func()) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	dir = t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	cat = openT(t, Options{Type: "sql", URI: "file:" + path + "?_busy_timeout=0", Warehouse: fileURI(dir)})
	createTable(t, cat, events)
	s1 = appendT(t, cat, events)
	db, err := sql.Open(sqliteshim.ShimName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	exec := func(stmt string) {
		if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
			t.Error(err)
		}
	}
	return dir, cat, s1, func() { exec("BEGIN EXCLUSIVE") }, func() { exec("ROLLBACK") }
}

// TestCommitStatisticsBusy shows transient failures retried: another
// writer locks the catalog's database during the first attempt, whose commit
// fails with SQLITE_BUSY, and the reload of the second; the third, after
// the lock is released, commits. The first attempt's file is kept (its
// commit's outcome is not known in general), and each retry is logged.
func TestCommitStatisticsBusy(t *testing.T) {
	dir, cat, s1, lock, unlock := lockedCatalog(t)
	w := &writer{dir: dir, snapshot: s1, before: func(call int) {
		if call == 1 {
			lock()
		}
	}}
	var waits int
	var logged bytes.Buffer
	tbl, err := CommitStatistics(t.Context(), cat, events, w.prepare, WithSleep(func(context.Context, time.Duration) error {
		if waits++; waits == 2 {
			unlock()
		}
		return nil
	}), WithLogger(slog.New(slog.NewJSONHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if w.calls != 2 || w.discards != 0 || waits != 2 {
		t.Fatalf("prepare called %d times, discard %d, %d waits; want 2, 0, 2", w.calls, w.discards, waits)
	}
	if got := exist(w.paths); !slices.Equal(got, []bool{true, true}) {
		t.Errorf("files of the attempts exist: %v, want both kept", got)
	}
	checkStatistics(t, tbl, statsFile(s1, w.paths[1]))
	if n := strings.Count(logged.String(), `"level":"WARN"`); n != 2 || strings.Count(logged.String(), "database is locked") != 2 {
		t.Errorf("retries logged as %s, want 2 warnings naming the lock", logged.String())
	}
}

// TestCommitStatisticsRetryProperties shows the table's commit.retry.*
// properties honoured, as iceberg-go's own commits honour them: a commit
// that always conflicts is tried num-retries+1 times, with waits below
// ceilings of min-wait-ms doubling up to max-wait-ms.
func TestCommitStatisticsRetryProperties(t *testing.T) {
	f := newFixture(t)
	txn := f.reload(t).NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{
		"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "3", "commit.retry.max-wait-ms": "5",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	raced := racedCatalog(t, f.dir, func() { appendT(t, f.cat, events) })
	w := &writer{dir: f.dir, snapshot: f.s1}
	var waits []time.Duration
	_, err := CommitStatistics(t.Context(), raced, events, w.prepare, WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}))
	if !errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %v, want ErrCommitFailed after 3 attempts", err)
	}
	if w.calls != 3 || len(waits) != 2 || waits[0] > 3*time.Millisecond || waits[1] > 5*time.Millisecond {
		t.Errorf("prepare called %d times, waits %v; want 3 calls, waits within 3 ms and 5 ms", w.calls, waits)
	}
}
