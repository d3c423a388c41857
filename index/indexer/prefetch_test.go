package indexer

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// countingIO is local storage that counts the calls in flight that may be
// requests (Open, ReadAt, Read, Seek, Stat) and the most at once, and fails
// the reads fail picks. Each ReadAt takes a little while, as a request to
// object storage would, so that reads issued together overlap.
type countingIO struct {
	icebergio.LocalFS
	fail func(path string, off int64, n int) bool

	mu              sync.Mutex
	inFlight, peak  int
	reads, failures int
}

func (c *countingIO) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight++
	c.peak = max(c.peak, c.inFlight)
}

func (c *countingIO) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	c.enter()
	defer c.leave()
	f, err := c.LocalFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, io: c, path: name}, nil
}

type countedFile struct {
	icebergio.File
	io   *countingIO
	path string
}

func (f *countedFile) ReadAt(p []byte, off int64) (int, error) {
	f.io.enter()
	defer f.io.leave()
	time.Sleep(time.Millisecond) // a round trip: not asserted on, only makes reads overlap
	f.io.mu.Lock()
	f.io.reads++
	fail := f.io.fail != nil && f.io.fail(f.path, off, len(p))
	if fail {
		f.io.failures++
	}
	f.io.mu.Unlock()
	if fail {
		return 0, errors.New("injected read failure")
	}
	return f.File.ReadAt(p, off)
}

func (f *countedFile) Seek(offset int64, whence int) (int64, error) {
	f.io.enter()
	defer f.io.leave()
	return f.File.Seek(offset, whence)
}

func (f *countedFile) Stat() (iofs.FileInfo, error) {
	f.io.enter()
	defer f.io.leave()
	return f.File.Stat()
}

func (f *countedFile) Read(p []byte) (int, error) {
	f.io.enter()
	defer f.io.leave()
	return f.File.Read(p)
}

// prefetchFiles writes n Parquet files of the lowCardinality columns and a
// unique id column, with several row groups and small pages, alternately
// dictionary-encoded (the shortcut reads the dictionary pages only) or not,
// and large enough that their chunks lie outside the end read with the
// footer.
func prefetchFiles(t *testing.T, n int) ([]dataFile, []Column) {
	t.Helper()
	tcs := append(lowCardinality(t), testColumn{primitive(t, "id", 7, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
		func(i int) any { return int64(i)*2654435761 + 17 }})
	var files []dataFile
	for i := range n {
		path := writeColumns(t, tcs, 3, 4000+500*i, parquet.WithDictionaryDefault(i%2 == 0), parquet.WithDataPageSize(4096))
		files = append(files, dataFile{path: path, size: fileSize(t, path)})
	}
	return files, buildColumns(tcs)
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := icebergio.LocalFS{}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer info.Close()
	st, err := info.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// readAll runs readFiles and returns the results by data file path.
func readAll(t *testing.T, files []dataFile, rc readConfig) map[string]fileResult {
	t.Helper()
	out := map[string]fileResult{}
	for r := range readFiles(t.Context(), files, rc) {
		if _, dup := out[r.file.path]; dup {
			t.Fatalf("%s: two results", r.file.path)
		}
		out[r.file.path] = r
	}
	if len(out) != len(files) {
		t.Fatalf("%d results for %d files", len(out), len(files))
	}
	return out
}

// TestPrefetchBoundsRequestsInFlight: reading ahead, no more requests are
// ever in flight than the limit, the workers' own included, however many
// workers and files; the bytes held ahead stay within their bound (chunks
// that do not fit are left to the workers); and every file's filters are
// those of a worker reading the file alone, byte for byte.
func TestPrefetchBoundsRequestsInFlight(t *testing.T) {
	files, cols := prefetchFiles(t, 8)
	want := map[string][]filterOf{}
	for _, df := range files {
		_, want[df.path] = indexWith(t, df.path, cols, true)
	}
	for _, tc := range []struct {
		name                string
		requests, parallel  int
		prefetchBytes       int64
		wantLeft, wantAhead bool // chunk ranges left to the workers, read ahead
	}{
		{"one request", 1, 2, 64 << 20, false, true},
		{"three requests", 3, 2, 64 << 20, false, true},
		{"more workers than requests", 2, 4, 64 << 20, false, true},
		{"small memory bound", 8, 2, 1 << 20, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cio := &countingIO{}
			stats := &prefetchStats{}
			got := readAll(t, files, readConfig{fs: cio, cols: cols, maxFilterBytes: defaultMaxFilterBytes,
				parallel: tc.parallel, requests: tc.requests, prefetchBytes: tc.prefetchBytes, stats: stats})
			if cio.peak > tc.requests {
				t.Errorf("%d requests in flight at once, limit %d", cio.peak, tc.requests)
			}
			if tc.requests > 1 && cio.peak < 2 {
				t.Errorf("at most %d request in flight with a limit of %d: nothing was read ahead in parallel", cio.peak, tc.requests)
			}
			if p := stats.peak.Load(); p > tc.prefetchBytes || p == 0 {
				t.Errorf("%d bytes held ahead at most, bound %d", p, tc.prefetchBytes)
			}
			if h := stats.held.Load(); h != 0 {
				t.Errorf("%d bytes still held after the run", h)
			}
			if left := stats.left.Load() > 0; left != tc.wantLeft {
				t.Errorf("%d chunk ranges left to the workers", stats.left.Load())
			}
			if ahead := stats.ahead.Load() > 0; ahead != tc.wantAhead {
				t.Errorf("%d chunk ranges read ahead", stats.ahead.Load())
			}
			for _, df := range files {
				r := got[df.path]
				if r.err != nil {
					t.Fatalf("%s: %v", df.path, r.err)
				}
				sameFilters(t, cols, want[df.path], r.filters)
			}
		})
	}
}

// TestPrefetchReadErrors: a data file whose reads all fail fails alone, with
// the error of a worker reading it itself, and the other files are indexed
// as always; a read ahead that fails once (a transient error) is read
// again by the worker, and the file is indexed as if nothing had failed.
func TestPrefetchReadErrors(t *testing.T) {
	files, cols := prefetchFiles(t, 4)
	bad := files[1].path
	want := map[string][]filterOf{}
	for _, df := range files {
		_, want[df.path] = indexWith(t, df.path, cols, true)
	}
	rc := readConfig{cols: cols, maxFilterBytes: defaultMaxFilterBytes, parallel: 2, requests: 4, prefetchBytes: 64 << 20}

	rc.fs = &countingIO{fail: func(path string, _ int64, _ int) bool { return path == bad }}
	got := readAll(t, files, rc)
	for _, df := range files {
		r := got[df.path]
		if df.path == bad {
			if r.err == nil || !strings.Contains(r.err.Error(), "injected read failure") {
				t.Errorf("%s: error %v, want the read failure", df.path, r.err)
			}
			continue
		}
		if r.err != nil {
			t.Fatalf("%s: %v", df.path, r.err)
		}
		sameFilters(t, cols, want[df.path], r.filters)
	}

	// Transient failures of reads ahead: of the end read with the footer
	// (the first read of each file), or of the chunk ranges the prefetcher
	// plans, once each (the worker's own reads succeed).
	planned := map[string]bool{}
	p := newPrefetcher(icebergio.LocalFS{}, rc)
	for _, df := range files {
		rdr, err := file.OpenParquetFile(df.path, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.plan(rdr.MetaData(), df.size-min(df.size, footerReadSize)) {
			planned[fmt.Sprint(df.path, r.off, r.end-r.off)] = true
		}
		rdr.Close()
	}
	if len(planned) == 0 {
		t.Fatal("no chunk range planned")
	}
	for _, tc := range []struct {
		name string
		fail func(first bool, path string, off int64, n int) bool
	}{
		{"end with the footer", func(first bool, path string, off int64, n int) bool { return first }},
		{"chunks", func(first bool, path string, off int64, n int) bool { return planned[fmt.Sprint(path, off, n)] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]bool{}
			cio := &countingIO{fail: func(path string, off int64, n int) bool {
				mu.Lock()
				defer mu.Unlock()
				k := fmt.Sprint(path, off, n)
				again := seen[k]
				first := !seen[path]
				seen[k], seen[path] = true, true
				return !again && tc.fail(first, path, off, n)
			}}
			rc.fs = cio
			stats := &prefetchStats{}
			rc.stats = stats
			got := readAll(t, files, rc)
			for _, df := range files {
				r := got[df.path]
				if r.err != nil {
					t.Fatalf("%s: %v", df.path, r.err)
				}
				for _, f := range r.filters {
					if f.err != nil {
						t.Errorf("%s: %v", df.path, f.err)
					}
				}
				sameFilters(t, cols, want[df.path], r.filters)
			}
			if cio.failures == 0 {
				t.Fatal("no read failed")
			}
		})
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
		{Parallel: 2}, // defaultRequestsInFlight
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
		if ahead := rc.prefetchBytes > 0; ahead != force {
			t.Errorf("ForcePrefetch %v on a local table: reads ahead %v", force, ahead)
		}
	}
}
