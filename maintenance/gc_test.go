package maintenance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/segment"
)

var ctx = context.Background()

var ident = table.Identifier{"db", "t"}

// newTable makes a SQLite catalog in a temporary directory with table db.t
// of two appended data files.
func newTable(t *testing.T) *sqlcat.Catalog {
	t.Helper()
	cat := catalogtest.NewCatalog(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	tbl := cat.NewTable(t, ident[1], sc, nil)
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for f := range 2 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		for i := range 50 {
			b.Field(0).(*array.Int64Builder).Append(int64(f*1000 + i))
			b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i))
		}
		rec := b.NewRecordBatch()
		b.Release()
		tbl = catalogtest.Append(t, tbl, rec)
		rec.Release()
	}
	return cat.Catalog
}

// buildIndex runs the real job and returns the statistics file it committed.
func buildIndex(t *testing.T, cat *sqlcat.Catalog) table.StatisticsFile {
	t.Helper()
	sum, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	tbl := load(t, cat)
	sf, ok := catalog.StatisticsFileOf(tbl.Metadata(), sum.SnapshotID)
	if !ok || sf.StatisticsPath != sum.StatisticsPath {
		t.Fatalf("build committed %s, metadata has %+v", sum.StatisticsPath, sf)
	}
	return sf
}

func load(t *testing.T, cat *sqlcat.Catalog) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// local is the local path of a file:// location.
func local(loc string) string { return strings.TrimPrefix(loc, "file://") }

func exists(t *testing.T, loc string) bool {
	t.Helper()
	_, err := os.Stat(local(loc))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// age sets a file's modification time to d ago.
func age(t *testing.T, loc string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(local(loc), old, old); err != nil {
		t.Fatal(err)
	}
}

func in(days int) func() time.Time {
	return func() time.Time { return time.Now().Add(time.Duration(days) * 24 * time.Hour) }
}

func runGC(t *testing.T, cat *sqlcat.Catalog, o GCOptions) *GCSummary {
	t.Helper()
	sum, err := GC(ctx, cat, ident, o)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// checkIndexReadable loads the table's index from its current statistics
// file, reading the Puffin file.
func checkIndexReadable(t *testing.T, cat *sqlcat.Catalog, want string) {
	t.Helper()
	tbl := load(t, cat)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) != 0 {
		t.Fatalf("index of the table: %v", errs)
	}
	segs := ix.Segments()
	if len(segs) != 1 || segs[0].File.StatisticsPath != want || len(slices.Collect(segs[0].Filters())) != 2 {
		t.Fatalf("index segments %+v, want one of 2 entries at %s", segs, want)
	}
}

// TestGCReplacedIndexFile: a second build on the same snapshot leaves the
// first file unreferenced; it is kept through the grace period, reported by
// a dry run, then deleted, and the table's index still reads.
func TestGCReplacedIndexFile(t *testing.T) {
	cat := newTable(t)
	first := buildIndex(t, cat)
	second := buildIndex(t, cat)
	if first.StatisticsPath == second.StatisticsPath || !exists(t, first.StatisticsPath) {
		t.Fatalf("second build %s, first %s", second.StatisticsPath, first.StatisticsPath)
	}

	sum := runGC(t, cat, GCOptions{})
	if sum.Scanned != 2 || sum.Referenced != 1 || len(sum.Deleted) != 0 ||
		!slices.Equal(sum.Kept, []string{first.StatisticsPath}) || sum.BytesDeleted != 0 {
		t.Fatalf("default grace: %+v", sum)
	}

	sum = runGC(t, cat, GCOptions{Now: in(4), DryRun: true})
	if !sum.DryRun || !slices.Equal(sum.Deleted, []string{first.StatisticsPath}) ||
		sum.BytesDeleted != first.FileSizeInBytes || len(sum.Kept) != 0 || !exists(t, first.StatisticsPath) {
		t.Fatalf("dry run: %+v", sum)
	}

	// Within a longer grace period four days on, it is still kept.
	sum = runGC(t, cat, GCOptions{Now: in(4), OlderThan: 5 * 24 * time.Hour})
	if len(sum.Deleted) != 0 || len(sum.Kept) != 1 || !exists(t, first.StatisticsPath) {
		t.Fatalf("5 day grace: %+v", sum)
	}

	sum = runGC(t, cat, GCOptions{Now: in(4)})
	if sum.DryRun || sum.Scanned != 2 || sum.Referenced != 1 || len(sum.Kept) != 0 ||
		!slices.Equal(sum.Deleted, []string{first.StatisticsPath}) || sum.BytesDeleted != first.FileSizeInBytes {
		t.Fatalf("after the grace period: %+v", sum)
	}
	if exists(t, first.StatisticsPath) || !exists(t, second.StatisticsPath) {
		t.Fatal("the replaced file should be gone and the referenced one stay")
	}
	checkIndexReadable(t, cat, second.StatisticsPath)

	sum = runGC(t, cat, GCOptions{Now: in(4)})
	if sum.Scanned != 1 || sum.Referenced != 1 || len(sum.Deleted) != 0 {
		t.Fatalf("second run: %+v", sum)
	}
}

// TestGCKeepsRecentlyReplaced: a file written long ago but referenced until
// a moment ago stays through the grace period, since readers that loaded
// the previous metadata may still read it.
func TestGCKeepsRecentlyReplaced(t *testing.T) {
	cat := newTable(t)
	first := buildIndex(t, cat)
	age(t, first.StatisticsPath, 10*24*time.Hour)
	buildIndex(t, cat)

	sum := runGC(t, cat, GCOptions{})
	if !slices.Equal(sum.Kept, []string{first.StatisticsPath}) || len(sum.Deleted) != 0 {
		t.Fatalf("%+v", sum)
	}
	sum = runGC(t, cat, GCOptions{Now: in(4)})
	if !slices.Equal(sum.Deleted, []string{first.StatisticsPath}) || exists(t, first.StatisticsPath) {
		t.Fatalf("four days on: %+v", sum)
	}
}

// TestGCOnlyIndexFiles: files not named as icebloom names its index files
// are never deleted, however old and unreferenced; nor is anything in a
// subdirectory. An old referenced file is never deleted.
func TestGCOnlyIndexFiles(t *testing.T) {
	cat := newTable(t)
	sf := buildIndex(t, cat)
	dir := filepath.Dir(local(sf.StatisticsPath))
	const uuid = "5b1c2a7e-1d2f-4e3a-9b8c-0123456789ab"
	foreign := []string{
		"trino-stats.puffin",
		"icebloom-notanumber.puffin",
		"icebloom-12-" + uuid + ".puffin.tmp",
		"icebloom-12-" + strings.ToUpper(uuid) + ".puffin",
		"x-icebloom-12-" + uuid + ".puffin",
		"00099-" + uuid + ".metadata.json",
		"sub/icebloom-12-" + uuid + ".puffin",
	}
	for _, name := range foreign {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not ours"), 0o644); err != nil {
			t.Fatal(err)
		}
		age(t, p, 30*24*time.Hour)
	}
	ours := filepath.Join(dir, "icebloom-12-"+uuid+".puffin")
	if err := os.WriteFile(ours, []byte("orphan"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, ours, 30*24*time.Hour)
	entries, _ := os.ReadDir(dir)
	var metadataFiles []string
	for _, e := range entries {
		if !e.IsDir() {
			age(t, filepath.Join(dir, e.Name()), 30*24*time.Hour)
			metadataFiles = append(metadataFiles, e.Name())
		}
	}

	sum := runGC(t, cat, GCOptions{Now: in(30)})
	if sum.Scanned != 2 || sum.Referenced != 1 || !slices.Equal(sum.Deleted, []string{"file://" + ours}) ||
		sum.BytesDeleted != int64(len("orphan")) || len(sum.Kept) != 0 {
		t.Fatalf("%+v", sum)
	}
	for _, name := range append(foreign, filepath.Base(local(sf.StatisticsPath))) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range metadataFiles {
		if name != filepath.Base(ours) {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	checkIndexReadable(t, cat, sf.StatisticsPath)
}

// TestGCRecheck: a file that a commit references after GC listed it (a
// build in flight committing, or someone restoring it) is not deleted.
func TestGCRecheck(t *testing.T) {
	cat := newTable(t)
	first := buildIndex(t, cat)
	second := buildIndex(t, cat)
	restore := func(ctx context.Context) error {
		_, err := catalog.CommitStatistics(ctx, cat, ident, func(ctx context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
			return catalog.StatisticsChange{Set: []table.StatisticsFile{first}}, nil, nil
		})
		return err
	}
	sum, err := gc(ctx, cat, ident, GCOptions{Now: in(4)}, restore)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Deleted) != 0 || sum.Referenced != 2 || len(sum.Kept) != 0 {
		t.Fatalf("%+v", sum)
	}
	if !exists(t, first.StatisticsPath) || !exists(t, second.StatisticsPath) {
		t.Fatal("a file was deleted")
	}
	checkIndexReadable(t, cat, first.StatisticsPath)
	// The next run deletes the file the restore replaced, once it is old.
	sum = runGC(t, cat, GCOptions{Now: in(4)})
	if !slices.Equal(sum.Deleted, []string{second.StatisticsPath}) {
		t.Fatalf("next run: %+v", sum)
	}
}

// TestGCDeleteFailure: a file that cannot be deleted is reported, the run
// deletes the others, and the error names the table and the file.
func TestGCDeleteFailure(t *testing.T) {
	cat := newTable(t)
	a := buildIndex(t, cat)
	b := buildIndex(t, cat)
	buildIndex(t, cat)
	failing := &failingCatalog{Catalog: cat, fail: a.StatisticsPath}
	sum, err := GC(ctx, failing, ident, GCOptions{Now: in(4)})
	if err == nil || !strings.Contains(err.Error(), "db.t") || !strings.Contains(err.Error(), a.StatisticsPath) {
		t.Fatalf("error %v", err)
	}
	if sum == nil || !slices.Equal(sum.Deleted, []string{b.StatisticsPath}) || len(sum.Failed) != 1 ||
		sum.Failed[0].Path != a.StatisticsPath || !exists(t, a.StatisticsPath) || exists(t, b.StatisticsPath) {
		t.Fatalf("%+v", sum)
	}
}

// failingCatalog serves tables whose storage refuses to delete one file.
type failingCatalog struct {
	*sqlcat.Catalog
	fail string
}

func (c *failingCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wrapped := failingFS{ListableIO: fs.(icebergio.ListableIO), fail: c.fail}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return wrapped, nil }, c), nil
}

type failingFS struct {
	icebergio.ListableIO
	fail string
}

func (f failingFS) Remove(name string) error {
	if name == f.fail {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrPermission}
	}
	return f.ListableIO.Remove(name)
}

// unlistableCatalog serves tables whose storage cannot list.
type unlistableCatalog struct{ *sqlcat.Catalog }

type unlistableFS struct{ icebergio.IO }

func (c unlistableCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return unlistableFS{fs}, nil }, c), nil
}

func TestGCErrors(t *testing.T) {
	cat := newTable(t)
	buildIndex(t, cat)
	if _, err := GC(ctx, unlistableCatalog{cat}, ident, GCOptions{}); err == nil ||
		!strings.Contains(err.Error(), "db.t") || !strings.Contains(err.Error(), "cannot list") {
		t.Errorf("unlistable storage: %v", err)
	}
	if _, err := GC(ctx, cat, table.Identifier{"db", "missing"}, GCOptions{}); err == nil ||
		!strings.Contains(err.Error(), "db.missing") {
		t.Errorf("missing table: %v", err)
	}
}

// TestGCNoGrace deletes an unreferenced file however recent, when forced:
// a grace period under MinGCGrace is refused otherwise, as it could delete
// a file a run in flight is about to commit.
func TestGCNoGrace(t *testing.T) {
	cat := newTable(t)
	first := buildIndex(t, cat)
	buildIndex(t, cat)
	for _, grace := range []time.Duration{NoGrace, time.Minute, MinGCGrace - time.Second} {
		if _, err := GC(ctx, cat, ident, GCOptions{OlderThan: grace}); err == nil || !strings.Contains(err.Error(), "force it") {
			t.Fatalf("gc with a grace of %s, not forced: %v", grace, err)
		}
	}
	if !exists(t, first.StatisticsPath) {
		t.Fatal("a refused gc deleted a file")
	}
	// The metadata that still referenced first was current until the
	// second build's commit, a time in milliseconds: a cutoff in that same
	// millisecond counts it as current then and keeps first (a fresh-clone
	// CI run was that fast once).
	time.Sleep(5 * time.Millisecond)
	sum := runGC(t, cat, GCOptions{OlderThan: NoGrace, Force: true})
	if !slices.Equal(sum.Deleted, []string{first.StatisticsPath}) || exists(t, first.StatisticsPath) {
		t.Fatalf("%+v", sum)
	}
}

func TestGCNormalizeLocation(t *testing.T) {
	same := [][]string{
		{"file:///w/db/t/metadata/a.puffin", "/w/db/t/metadata/a.puffin", "file://localhost/w/db/t/metadata/a.puffin",
			"file:/w/db/t/metadata/a.puffin", "/w/db/t//metadata/./a.puffin", "FILE:///w/db/t/metadata/a.puffin"},
		{"file:///w/a%20b.puffin", "/w/a b.puffin"},
		{"s3://bucket/w/a.puffin", "S3://bucket/w/a.puffin"},
	}
	for _, group := range same {
		for _, loc := range group[1:] {
			if normalizeLocation(loc) != normalizeLocation(group[0]) {
				t.Errorf("%s normalizes to %s, %s to %s", loc, normalizeLocation(loc), group[0], normalizeLocation(group[0]))
			}
		}
	}
	differ := [][2]string{
		{"s3://bucket/w/a.puffin", "s3://other/w/a.puffin"},
		{"s3://bucket/w//a.puffin", "s3://bucket/w/a.puffin"}, // object keys are opaque
		{"file://host/w/a.puffin", "/w/a.puffin"},
		{"s3://bucket/w/a.puffin", "/w/a.puffin"},
	}
	for _, d := range differ {
		if normalizeLocation(d[0]) == normalizeLocation(d[1]) {
			t.Errorf("%s and %s both normalize to %s", d[0], d[1], normalizeLocation(d[0]))
		}
	}
}

func TestGCIndexFileName(t *testing.T) {
	for name, want := range map[string]bool{
		"icebloom-3055729675574597004-5b1c2a7e-1d2f-4e3a-9b8c-0123456789ab.puffin": true,
		"icebloom--5b1c2a7e-1d2f-4e3a-9b8c-0123456789ab.puffin":                    false,
		"icebloom-1-5b1c2a7e-1d2f-4e3a-9b8c-0123456789a.puffin":                    false,
		"icebloom-notanumber.puffin":                                               false,
		"trino-stats.puffin":                                                       false,
	} {
		if IsIndexFileName(name) != want {
			t.Errorf("%s: %v", name, !want)
		}
	}
}

// TestGCKeepsLiveRun: a shard segment of a sharded run that is not linked
// yet, older than the grace period, is kept while its run was touched
// within it (the run's linking commit will link it), and deleted with the
// run's markers and leases once the run has been dead for the grace
// period; the run's record stays.
func TestGCKeepsLiveRun(t *testing.T) {
	cat := newTable(t)
	sum, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}, Shard: &indexer.Shard{Index: 0, Count: 2, Run: "r"}})
	if err != nil || sum.Shard.Linked {
		t.Fatalf("shard 0 of 2: %+v, %v", sum, err)
	}
	tbl := load(t, cat)
	var segment string
	dir := filepath.Join(local(tbl.Location()), "metadata")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if IsIndexFileName(e.Name()) {
			segment = filepath.Join(dir, e.Name())
		}
	}
	if segment == "" {
		t.Fatal("no shard segment written")
	}
	age(t, segment, 3*time.Hour)
	gcs := runGC(t, cat, GCOptions{OlderThan: MinGCGrace})
	if !exists(t, segment) || len(gcs.Deleted) != 0 || len(gcs.RunFilesDeleted) != 0 {
		t.Fatalf("gc of a live run's segment: %+v", gcs)
	}
	runDir := filepath.Join(dir, indexer.RunsDir, "r")
	for _, name := range []string{"run.json", "shard-0-of-2.json", "shard-0-of-2.lease"} {
		age(t, filepath.Join(runDir, name), 3*time.Hour)
	}
	gcs = runGC(t, cat, GCOptions{OlderThan: MinGCGrace})
	if exists(t, segment) || len(gcs.Deleted) != 1 || len(gcs.RunFilesDeleted) != 2 {
		t.Fatalf("gc of a dead run's segment: %+v", gcs)
	}
	if _, err := os.Stat(filepath.Join(runDir, "run.json")); err != nil {
		t.Fatalf("the run's record: %v", err)
	}
}

// TestGCReadsLinksFromDirectories: gc learns what a linking segment links
// from its directory, which docs/format.md calls authoritative, not from
// the informative `links` property of table metadata: with the property
// gone, a zero-grace gc keeps the shard's linked segment (it deleted it).
// A linking file whose directory cannot be read makes gc delete nothing
// and say which file.
func TestGCReadsLinksFromDirectories(t *testing.T) {
	cat := newTable(t)
	// One shard of one: its run's linking commit links its segment (a
	// shard of more commits nothing until its run is complete).
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}, CompactAbove: -1,
		Shard: &indexer.Shard{Index: 0, Count: 1, Run: "r"}}); err != nil {
		t.Fatal(err)
	}
	tbl := load(t, cat)
	var linking table.StatisticsFile
	for sf := range tbl.Metadata().Statistics() {
		linking = sf
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := index.ReadSegment(fs, linking)
	if err != nil || len(seg.Links()) != 1 {
		t.Fatalf("the shard's commit links %v (%v), want its segment", seg, err)
	}
	linked := seg.Links()[0].Path

	// Table metadata loses the links property: the directory still links.
	stripped := linking
	stripped.BlobMetadata = nil
	for _, b := range linking.BlobMetadata {
		props := map[string]string{}
		for k, v := range b.Properties {
			if k != segment.PropLinks {
				props[k] = v
			}
		}
		b.Properties = props
		stripped.BlobMetadata = append(stripped.BlobMetadata, b)
	}
	if _, _, err := cat.CommitTable(ctx, ident, nil, []table.Update{table.NewSetStatisticsUpdate(stripped)}); err != nil {
		t.Fatal(err)
	}
	if index.LinksSegments(stripped) {
		t.Fatal("the links property is still there")
	}
	sum := runGC(t, cat, GCOptions{OlderThan: NoGrace, Force: true, Now: in(1)})
	if slices.Contains(sum.Deleted, linked) || !exists(t, linked) {
		t.Fatalf("gc deleted the linked segment %s: %+v", linked, sum)
	}

	// A linking file that cannot be read: nothing is deleted.
	if err := os.WriteFile(local(linking.StatisticsPath), []byte("not a Puffin file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = GC(ctx, cat, ident, GCOptions{OlderThan: NoGrace, Force: true, Now: in(1)})
	if err == nil || !strings.Contains(err.Error(), linking.StatisticsPath) || !strings.Contains(err.Error(), "nothing deleted") {
		t.Fatalf("gc with an unreadable linking file: %v", err)
	}
	if !exists(t, linked) {
		t.Fatal("gc deleted the linked segment of an unreadable linking file")
	}
}
