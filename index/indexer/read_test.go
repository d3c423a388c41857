package indexer

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/internal/testfixture"
)

// blobsOf reads every blob of the current snapshot's statistics file.
func blobsOf(t *testing.T, tbl *table.Table) map[string][]byte {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(context.Background(), fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	out := map[string][]byte{}
	for _, seg := range ix.Segments() {
		if seg.File.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			continue
		}
		f, err := fs.Open(seg.File.StatisticsPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for flt := range seg.Filters() {
			raw, err := index.ReadFilter(f, flt)
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprint(flt.DataFile, flt.FieldID, flt.NDV, flt.ValueType)] = raw
		}
	}
	if len(out) == 0 {
		t.Fatal("no filter for the current snapshot")
	}
	return out
}

func TestBuildWithoutDictionaryShortcutSameEntries(t *testing.T) {
	cat, _ := testfixture.DictionaryTable(t)
	ident := table.Identifier{"db", "dict"}
	cols := []string{"id", "tag", "n", "amount", "day"}
	var blobs []map[string][]byte
	for _, disable := range []bool{false, true} {
		if _, err := Build(context.Background(), cat, ident, Options{Columns: cols, knobs: knobs{DisableDictionaryShortcut: disable}}); err != nil {
			t.Fatal(err)
		}
		loaded, err := cat.LoadTable(context.Background(), ident)
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, blobsOf(t, loaded))
	}
	if len(blobs[0]) != len(blobs[1]) || len(blobs[0]) < 2*len(cols) {
		t.Fatalf("%d blobs with the shortcut, %d without", len(blobs[0]), len(blobs[1]))
	}
	for k, b := range blobs[0] {
		if !bytes.Equal(b, blobs[1][k]) {
			t.Errorf("blob %s differs", k)
		}
	}
}

// prefetchSchema is the schema of s3Table: a unique id, which dictionary
// encoding may give up on, and low-cardinality columns of several types.
var prefetchSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "tag", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
	iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
)

var prefetchColumns = []string{"id", "tag", "n", "amount", "day"}

// s3Table creates db.prefetch in the S3 server's bucket, catalogued by a
// SQL catalog on a local SQLite file, with one data file written by
// iceberg-go per entry of rows (that many rows): small files lie whole in
// the end a build reads with the footer, large ones do not.
func s3Table(t testing.TB, s3 *catalogtest.S3, rows []int) (icecatalog.Catalog, table.Identifier, []string) {
	t.Helper()
	cat, err := catalog.Open(t.Context(), catalog.Options{Type: "sql", URI: filepath.Join(t.TempDir(), "catalog.db"),
		Warehouse: s3.Location("warehouse"), Properties: s3.Properties()})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(icecatalog.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "prefetch"}
	tbl, err := cat.CreateTable(t.Context(), ident, prefetchSchema)
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 17))
	for _, n := range rows {
		rec := prefetchRecord(as, rng, n)
		tbl = catalogtest.Append(t, tbl, rec)
		rec.Release()
	}
	var keys []string
	for _, f := range liveDataFilesOf(t, tbl) {
		key, ok := s3.Key(f)
		if !ok {
			t.Fatalf("data file %s is not in the bucket", f)
		}
		keys = append(keys, key)
	}
	return cat, ident, keys
}

// prefetchRecord makes n rows of prefetchSchema.
func prefetchRecord(as *arrow.Schema, rng *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(rng.Int64())
		if i%10 == 0 {
			for c := 1; c < 5; c++ {
				b.Field(c).AppendNull()
			}
			continue
		}
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("tag-%d", rng.IntN(20)))
		b.Field(2).(*array.Int32Builder).Append(int32(rng.IntN(1000)))
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i%8) * 125))
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32(19000 + i%31))
	}
	return b.NewRecordBatch()
}

// liveDataFilesOf lists the current snapshot's data file locations.
func liveDataFilesOf(t testing.TB, tbl *table.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		paths = append(paths, task.File.FilePath())
	}
	return paths
}

// dataRequests counts the requests of data files among reqs, and the HEAD
// requests among them.
func dataRequests(reqs []catalogtest.S3Request) (all, heads int) {
	for _, r := range reqs {
		if strings.HasSuffix(r.Key, ".parquet") {
			all++
			if r.Method == http.MethodHead {
				heads++
			}
		}
	}
	return all, heads
}

// TestPrefetchOnS3SameFilters: on object storage, a build reading ahead
// with many requests in flight commits the same filters, byte for byte, as
// one with a single request in flight and as one whose workers read their
// own files (no reading ahead); it asks no data file for its size (the
// manifest gives it), where workers reading their own files send a HEAD
// each; and it sends fewer requests of data files.
func TestPrefetchOnS3SameFilters(t *testing.T) {
	s3 := catalogtest.NewS3(t)
	cat, ident, keys := s3Table(t, s3, []int{300, 20000, 2000, 20000, 100})
	var blobs []map[string][]byte
	var reqs, heads []int
	for _, o := range []Options{
		{Parallel: 2, RequestsInFlight: 1},
		{Parallel: 2}, // DefaultRequestsInFlight
		{Parallel: 2, knobs: knobs{DisablePrefetch: true}},
	} {
		o.Columns, o.FailFast = prefetchColumns, true
		s3.Reset()
		sum, err := Build(t.Context(), cat, ident, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if sum.FilesIndexed != len(keys) {
			t.Fatalf("%+v: %d files indexed, want %d", o, sum.FilesIndexed, len(keys))
		}
		all, h := dataRequests(s3.Requests())
		reqs, heads = append(reqs, all), append(heads, h)
		tbl, err := cat.LoadTable(t.Context(), ident)
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, blobsOf(t, tbl))
	}
	if len(blobs[0]) != len(keys)*len(prefetchColumns) {
		t.Fatalf("%d filters, want %d", len(blobs[0]), len(keys)*len(prefetchColumns))
	}
	for i, name := range []string{"default requests in flight", "no reading ahead"} {
		if len(blobs[i+1]) != len(blobs[0]) {
			t.Errorf("%s: %d filters, %d with one request in flight", name, len(blobs[i+1]), len(blobs[0]))
		}
		for k, b := range blobs[0] {
			if !bytes.Equal(b, blobs[i+1][k]) {
				t.Errorf("%s: filter %s differs from the one of one request in flight", name, k)
			}
		}
	}
	if heads[0] != 0 || heads[1] != 0 {
		t.Errorf("reading ahead sent %d and %d HEAD requests of data files, want none", heads[0], heads[1])
	}
	if heads[2] != len(keys) {
		t.Errorf("workers reading their own files sent %d HEAD requests, want one per data file (%d)", heads[2], len(keys))
	}
	if reqs[1] >= reqs[2] {
		t.Errorf("reading ahead sent %d requests of data files, workers reading their own files %d", reqs[1], reqs[2])
	}
}

// TestPrefetchOnS3BrokenFile: on object storage, a data file that is not
// Parquet fails alone, reported with its path; the others are indexed.
func TestPrefetchOnS3BrokenFile(t *testing.T) {
	s3 := catalogtest.NewS3(t)
	cat, ident, keys := s3Table(t, s3, []int{300, 20000, 500, 300})
	s3.Put(t, keys[1], bytes.Repeat([]byte("not parquet "), 3000))
	sum, err := Build(t.Context(), cat, ident, Options{Columns: prefetchColumns, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != len(keys)-1 || len(sum.FilesFailed) != 1 || sum.FilesFailed[0].Path != s3.Location(keys[1]) ||
		sum.FilesFailed[0].Column != "" {
		t.Fatalf("summary: %d indexed, failed %+v; want %d indexed and %s failed", sum.FilesIndexed, sum.FilesFailed, len(keys)-1, keys[1])
	}
}

// TestLocalReadsNothingAhead: a table on the local file system reads
// nothing ahead unless forced (bench --s3-floor measured reading ahead
// there at 1.7x the CPU of workers reading their own files); object
// storage does (TestPrefetchOnS3SameFilters: no HEAD of a data file).
func TestLocalReadsNothingAhead(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := catalogtest.AppendIDs(t, cat.NewTable(t, "ids", catalogtest.IDSchema, nil), 1, 2, 3)
	for _, force := range []bool{false, true} {
		j, err := newJob(t.Context(), cat, tbl.Identifier(), Options{Columns: []string{"id"}, knobs: knobs{ForcePrefetch: force}})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := j.readConfig()
		if err != nil {
			t.Fatal(err)
		}
		if ahead := rc.PrefetchBytes > 0; ahead != force {
			t.Errorf("ForcePrefetch %v on a local table: reads ahead %v", force, ahead)
		}
	}
}
