package filescan

import (
	"errors"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	icebergio "github.com/apache/iceberg-go/io"
)

// readRecordingIO opens local files whose ReadAt calls are recorded, and
// fails the reads fail picks, as an object store's range GETs would fail.
type readRecordingIO struct {
	icebergio.LocalFS
	reads []byteRange
	fail  func(byteRange) bool
}

type byteRange struct{ off, n int64 }

func (r *readRecordingIO) Open(name string) (icebergio.File, error) {
	f, err := r.LocalFS.Open(name)
	return recordedFile{f, r}, err
}

type recordedFile struct {
	icebergio.File
	io *readRecordingIO
}

func (f recordedFile) ReadAt(p []byte, off int64) (int, error) {
	rg := byteRange{off, int64(len(p))}
	f.io.reads = append(f.io.reads, rg)
	if f.io.fail != nil && f.io.fail(rg) {
		return 0, errors.New("injected read failure")
	}
	return f.File.ReadAt(p, off)
}

// chunkRanges returns the byte range of every column chunk of the file, and
// of its dictionary page alone, in row group then column order.
func chunkRanges(t *testing.T, path string) (chunks, dicts []byteRange) {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	for rg := range rdr.NumRowGroups() {
		g := rdr.MetaData().RowGroup(rg)
		for c := range g.NumColumns() {
			md, err := g.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			start := md.DataPageOffset()
			if md.HasDictionaryPage() {
				start = md.DictionaryPageOffset()
				dicts = append(dicts, byteRange{start, md.DataPageOffset() - start})
			}
			chunks = append(chunks, byteRange{start, md.TotalCompressedSize()})
		}
	}
	return chunks, dicts
}

// readsWithin returns the recorded reads that fall inside r.
func readsWithin(reads []byteRange, r byteRange) []byteRange {
	var in []byteRange
	for _, x := range reads {
		if x.off >= r.off && x.off+x.n <= r.off+r.n {
			in = append(in, x)
		}
	}
	return in
}

// TestChunkReaderOneReadPerChunk: every column chunk a build decodes is one
// read of the file, whatever its page count, and with the dictionary
// shortcut one read of the dictionary page and the stream's first buffer,
// so an object store is asked for one range per chunk instead of one per
// 16 KiB of buffered stream, and no more than the shortcut needs.
func TestChunkReaderOneReadPerChunk(t *testing.T) {
	const rowGroups, rows = 2, 60000
	tcs := lowCardinality(t)
	cols := buildColumns(tcs)
	for _, tc := range []struct {
		name     string
		shortcut bool
	}{{"decode", false}, {"dictionary", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeColumns(t, tcs, rowGroups, rows, parquet.WithDictionaryDefault(true), parquet.WithDataPageSize(1024))
			chunks, dicts := chunkRanges(t, path)
			if len(dicts) != len(chunks) || len(chunks) != rowGroups*len(tcs) {
				t.Fatalf("%d chunks, %d with a dictionary page, want %d of each", len(chunks), len(dicts), rowGroups*len(tcs))
			}
			want := chunks
			if tc.shortcut {
				want = make([]byteRange, len(chunks))
				partial := 0
				for i, c := range chunks {
					want[i] = byteRange{c.off, min(c.n, max(dicts[i].n, readerProperties().BufferSize))}
					if want[i].n < c.n {
						partial++
					}
				}
				if partial == 0 {
					t.Fatal("no chunk is larger than its dictionary page and one stream buffer")
				}
			}
			rec := &readRecordingIO{}
			x := NewScanner(rec, cols, nil, testMaxFilterBytes, !tc.shortcut)
			got, err := x.Scan(t.Context(), File{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range chunks {
				in := readsWithin(rec.reads, r)
				if len(in) != 1 || in[0] != want[i] {
					t.Errorf("chunk %d at %v: reads %v, want one read of %v", i, r, in, want[i])
				}
			}
			for i, f := range got {
				if d := distinct(tcs[i], rowGroups*rows); f.NDV != d {
					t.Errorf("column %s: ndv %d, want %d", cols[i].Name, f.NDV, d)
				}
			}
		})
	}
}

// TestChunkReaderFetchFailure: when reading a chunk whole fails, the chunk
// is read page by page from the file, and the filters are those of a build
// whose reads all succeed.
func TestChunkReaderFetchFailure(t *testing.T) {
	const rowGroups, rows = 2, 5000
	tcs := lowCardinality(t)
	cols := buildColumns(tcs)
	path := writeColumns(t, tcs, rowGroups, rows, parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(1024))
	chunks, _ := chunkRanges(t, path)
	whole := map[byteRange]bool{}
	for _, r := range chunks {
		whole[r] = true
	}
	_, want := indexWith(t, path, cols, false)

	rec := &readRecordingIO{fail: func(r byteRange) bool { return whole[r] }}
	x := NewScanner(rec, cols, nil, testMaxFilterBytes, true)
	got, err := x.Scan(t.Context(), File{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	sameFilters(t, cols, want, got)
	for i, r := range chunks {
		if in := readsWithin(rec.reads, r); len(in) < 2 {
			t.Errorf("chunk %d at %v: reads %v, want the failed whole read and then the pages", i, r, in)
		}
	}
}

// TestChunkReaderReadsOutsideFetch: reads outside the fetched chunk, such
// as the footer's, are the file's bytes.
func TestChunkReaderReadsOutsideFetch(t *testing.T) {
	tcs := lowCardinality(t)
	path := writeColumns(t, tcs, 1, 1000)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := icebergio.LocalFS{}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf []byte
	cr := newChunkReader(f, readerProperties(), &buf)
	rdr, err := file.NewParquetReader(cr)
	if err != nil {
		t.Fatal(err)
	}
	md, err := rdr.MetaData().RowGroup(0).ColumnChunk(1)
	if err != nil {
		t.Fatal(err)
	}
	cr.Fetch(md, false)
	for _, r := range []byteRange{{0, 4}, {int64(len(raw)) - 8, 8}, {md.DataPageOffset(), 16}, {md.DataPageOffset() - 2, 4}} {
		p := make([]byte, r.n)
		if n, err := cr.ReadAt(p, r.off); n != len(p) || err != nil || string(p) != string(raw[r.off:r.off+r.n]) {
			t.Errorf("read %v: %d bytes, %v, %q, want %q", r, n, err, p, raw[r.off:r.off+r.n])
		}
	}
}
