package filescan

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
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
func prefetchFiles(t *testing.T, n int) ([]File, []Column) {
	t.Helper()
	tcs := append(lowCardinality(t), testColumn{primitive(t, "id", 7, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
		func(i int) any { return int64(i)*2654435761 + 17 }})
	var files []File
	for i := range n {
		path := writeColumns(t, tcs, 3, 4000+500*i, parquet.WithDictionaryDefault(i%2 == 0), parquet.WithDataPageSize(4096))
		files = append(files, File{Path: path, Size: fileSize(t, path)})
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

// readAll runs ReadFiles and returns the results by data file path.
func readAll(t *testing.T, files []File, rc Config) map[string]Result {
	t.Helper()
	out := map[string]Result{}
	for r := range ReadFiles(t.Context(), files, rc) {
		if _, dup := out[r.File.Path]; dup {
			t.Fatalf("%s: two results", r.File.Path)
		}
		out[r.File.Path] = r
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
	want := map[string][]ColumnFilter{}
	for _, df := range files {
		_, want[df.Path] = indexWith(t, df.Path, cols, true)
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
			got := readAll(t, files, Config{FS: cio, Columns: cols, MaxFilterBytes: testMaxFilterBytes,
				Parallel: tc.parallel, Requests: tc.requests, PrefetchBytes: tc.prefetchBytes, stats: stats})
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
				r := got[df.Path]
				if r.Err != nil {
					t.Fatalf("%s: %v", df.Path, r.Err)
				}
				sameFilters(t, cols, want[df.Path], r.Filters)
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
	bad := files[1].Path
	want := map[string][]ColumnFilter{}
	for _, df := range files {
		_, want[df.Path] = indexWith(t, df.Path, cols, true)
	}
	rc := Config{Columns: cols, MaxFilterBytes: testMaxFilterBytes, Parallel: 2, Requests: 4, PrefetchBytes: 64 << 20}

	rc.FS = &countingIO{fail: func(path string, _ int64, _ int) bool { return path == bad }}
	got := readAll(t, files, rc)
	for _, df := range files {
		r := got[df.Path]
		if df.Path == bad {
			if r.Err == nil || !strings.Contains(r.Err.Error(), "injected read failure") {
				t.Errorf("%s: error %v, want the read failure", df.Path, r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Fatalf("%s: %v", df.Path, r.Err)
		}
		sameFilters(t, cols, want[df.Path], r.Filters)
	}

	// Transient failures of reads ahead: of the end read with the footer
	// (the first read of each file), or of the chunk ranges the prefetcher
	// plans, once each (the worker's own reads succeed).
	planned := map[string]bool{}
	p := newPrefetcher(icebergio.LocalFS{}, rc)
	for _, df := range files {
		rdr, err := file.OpenParquetFile(df.Path, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.plan(rdr.MetaData(), df.Size-min(df.Size, footerReadSize)) {
			planned[fmt.Sprint(df.Path, r.off, r.end-r.off)] = true
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
			rc.FS = cio
			stats := &prefetchStats{}
			rc.stats = stats
			got := readAll(t, files, rc)
			for _, df := range files {
				r := got[df.Path]
				if r.Err != nil {
					t.Fatalf("%s: %v", df.Path, r.Err)
				}
				for _, f := range r.Filters {
					if f.Err != nil {
						t.Errorf("%s: %v", df.Path, f.Err)
					}
				}
				sameFilters(t, cols, want[df.Path], r.Filters)
			}
			if cio.failures == 0 {
				t.Fatal("no read failed")
			}
		})
	}
}
