package indexer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
)

// BadColumnRows is how many rows WriteBadColumnFile writes.
const BadColumnRows = 1000

// BadColumnValues are the values of row i of the file WriteBadColumnFile
// writes: the id, in the column that stays readable, and the n of the
// column that is damaged.
func BadColumnValues(i int) (id int64, n int32) { return int64(i)*7919 + 1, int32(i * 3) }

// Damage is how WriteBadColumnFile damages its file. Each is one byte.
type Damage int

const (
	// Undamaged leaves the file as written.
	Undamaged Damage = iota
	// DeltaTooWide makes the deltas of column n 33 bits wide, which
	// arrow-go refuses for INT32 ("delta bit width 33 exceeds decoder width
	// 32"): how DuckDB's v2 files whose deltas overflow 32 bits look to it.
	// Reading n fails with an error.
	DeltaTooWide
	// PageTypeV2 marks n's data page DATA_PAGE_V2 while its header holds a
	// v1 data page header: arrow-go's page reader dereferences the missing
	// v2 header and panics.
	PageTypeV2
	// NegativeChildren gives the footer's root schema element -64
	// children: arrow-go panics building the schema (makeslice), so
	// the file cannot be opened at all.
	NegativeChildren
)

// WriteBadColumnFile writes a Parquet file of one row group with two
// required columns, "id" (INT64, field 1, dictionary-encoded) and "n"
// (INT32, field 2, DELTA_BINARY_PACKED, one data page), into dir, damaged as
// damage says, and returns its path. Only the damaged byte differs from a
// good file, so the file's size is that of the good one.
func WriteBadColumnFile(t testing.TB, dir string, damage Damage) string {
	t.Helper()
	id, err := schema.NewPrimitiveNode("id", parquet.Repetitions.Required, parquet.Types.Int64, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	n, err := schema.NewPrimitiveNode("n", parquet.Repetitions.Required, parquet.Types.Int32, 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{id, n}, -1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, root, file.WithWriterProps(parquet.NewWriterProperties(
		parquet.WithDictionaryFor("n", false), parquet.WithEncodingFor("n", parquet.Encodings.DeltaBinaryPacked))))
	rgw, err := w.AppendRowGroupChecked()
	if err != nil {
		t.Fatal(err)
	}
	ids, ns := make([]int64, BadColumnRows), make([]int32, BadColumnRows)
	for i := range ids {
		ids[i], ns[i] = BadColumnValues(i)
	}
	cw, err := rgw.NextColumn()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(ids, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if cw, err = rgw.NextColumn(); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch(ns, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rgw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()

	// n's chunk, from the footer.
	rdr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	md, err := rdr.MetaData().RowGroup(0).ColumnChunk(1)
	if err != nil {
		t.Fatal(err)
	}
	if md.HasDictionaryPage() || md.Compression() != 0 {
		t.Fatalf("column n: dictionary page %v, compression %v", md.HasDictionaryPage(), md.Compression())
	}
	chunk := raw[md.DataPageOffset() : md.DataPageOffset()+md.TotalCompressedSize()]
	switch damage {
	case DeltaTooWide:
		// The page's delta header: block size 128, 4 miniblocks, the
		// value count (ULEB128), then the first value and the block's
		// minimum delta (zigzag ULEB128), then a bit width per miniblock.
		header := []byte{0x80, 0x01, 0x04, 0xe8, 0x07} // 128, 4, 1000
		at := bytes.Index(chunk, header)
		if at < 0 || bytes.Count(chunk, header) != 1 {
			t.Fatal("the delta header of column n is not in its chunk once")
		}
		p := at + len(header)
		for range 2 {
			for chunk[p]&0x80 != 0 {
				p++
			}
			p++
		}
		chunk[p] = 33
	case PageTypeV2:
		// The page header (Thrift compact) starts with field 1, the page
		// type: an i32 (0x15), DATA_PAGE (0) as zigzag varint 0x00.
		if chunk[0] != 0x15 || chunk[1] != 0x00 {
			t.Fatalf("column n's page header starts % x, not a data page type", chunk[:2])
		}
		chunk[1] = 0x06 // DATA_PAGE_V2 (3)
	case NegativeChildren:
		// The root element: name (field 4, binary, 0x48) "schema", then
		// num_children (field 5, i32, 0x15) 2 as zigzag varint 0x04.
		at := bytes.LastIndex(raw, []byte("\x48\x06schema\x15\x04"))
		if at < 0 {
			t.Fatal("the root schema element is not in the footer")
		}
		raw[at+9] = 0x7f // -64
	}
	path := filepath.Join(dir, fmt.Sprintf("bad-%d.parquet", damage))
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// badFileColumns are the indexed columns of WriteBadColumnFile's file.
func badFileColumns() []Column {
	id := iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}
	n := iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true}
	return []Column{
		{Field: id, Name: "id", Type: iceberg.PrimitiveTypes.Int64, FPP: DefaultFPP},
		{Field: n, Name: "n", Type: iceberg.PrimitiveTypes.Int32, FPP: DefaultFPP},
	}
}

// TestColumnsFailOneByOne: in a file where one column chunk cannot be
// decoded — arrow-go refuses it with an error, or panics reading it — that
// column gets an error naming it and its cause and no filter, while the
// other column's filter is built in full, with or without the dictionary
// shortcut. The worker's indexer then reads the next file as if nothing had
// happened.
func TestColumnsFailOneByOne(t *testing.T) {
	good := WriteBadColumnFile(t, t.TempDir(), Undamaged)
	_, want := indexWith(t, good, badFileColumns(), true)
	for _, tc := range []struct {
		name   string
		damage Damage
		cause  string
	}{
		{"error", DeltaTooWide, "delta bit width 33 exceeds decoder width 32"},
		{"panic", PageTypeV2, "panic while reading: runtime error"},
	} {
		for _, shortcut := range []bool{true, false} {
			for _, nFirst := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/shortcut=%v/nFirst=%v", tc.name, shortcut, nFirst), func(t *testing.T) {
					path := WriteBadColumnFile(t, t.TempDir(), tc.damage)
					cols := badFileColumns()
					if nFirst { // the damaged column read first, the good one after it
						cols[0], cols[1] = cols[1], cols[0]
					}
					x := newFileIndexer(icebergio.LocalFS{}, cols, nil, defaultMaxFilterBytes, !shortcut)
					out, err := x.index(t.Context(), dataFile{path: path})
					if err != nil {
						t.Fatalf("the file failed: %v", err)
					}
					if len(out) != 2 || out[0].col != 0 || out[1].col != 1 {
						t.Fatalf("results %+v, want one per column in order", out)
					}
					id, n := out[0], out[1]
					if nFirst {
						id, n = n, id
					}
					if id.err != nil || id.ndv != BadColumnRows {
						t.Fatalf("column id: ndv %d, error %v; want %d distinct values", id.ndv, id.err, BadColumnRows)
					}
					for i := range BadColumnRows {
						if v, _ := BadColumnValues(i); !id.filter.Check(hashing.Int64(v)) {
							t.Fatalf("column id: present %d is pruned", v)
						}
					}
					if n.err == nil || n.filter.Bytes() != nil || n.ndv != 0 {
						t.Fatalf("column n: error %v, %d filter bytes, ndv %d; want an error and no filter", n.err, len(n.filter.Bytes()), n.ndv)
					}
					if msg := n.err.Error(); !strings.HasPrefix(msg, "column n: ") || !strings.Contains(msg, tc.cause) {
						t.Fatalf("column n: error %q, want it to name the column and %q", msg, tc.cause)
					}

					// The same worker, next file: the filters of a fresh one.
					got, err := x.index(t.Context(), dataFile{path: good})
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range got {
						if f.err != nil {
							t.Fatalf("next file: %v", f.err)
						}
					}
					if nFirst {
						got[0], got[1] = got[1], got[0]
					}
					sameFilters(t, badFileColumns(), want, got)
				})
			}
		}
	}
}

// TestFileThatPanicsOnOpen: a footer that makes arrow-go panic while the
// file is opened is an error of the file, not a crash of the worker.
func TestFileThatPanicsOnOpen(t *testing.T) {
	path := WriteBadColumnFile(t, t.TempDir(), NegativeChildren)
	x := newFileIndexer(icebergio.LocalFS{}, badFileColumns(), nil, defaultMaxFilterBytes, false)
	out, err := x.index(t.Context(), dataFile{path: path})
	if err == nil || !strings.Contains(err.Error(), "panic while reading") || out != nil {
		t.Fatalf("results %+v, error %v; want a file error saying arrow-go panicked", out, err)
	}
}

// TestCorruptFilterIsColumnError: a filter with no bit set although its
// column has distinct values (which only a bug could make: here its inserts
// are lost) is an error of that column, never a filter that would prune
// every lookup. An all-NULL column's empty filter is not corrupt.
func TestCorruptFilterIsColumnError(t *testing.T) {
	tcs := lowCardinality(t)
	tcs = append(tcs, testColumn{primitive(t, "none", 7, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
		func(int) any { return nil }})
	path := writeColumns(t, tcs, 1, 500)
	cols := buildColumns(tcs)
	var pool filterPool
	x := newFileIndexer(icebergio.LocalFS{}, cols, nil, defaultMaxFilterBytes, false)
	x.filters = &pool
	calls := 0
	x.insertHook = func(f sbbf.Filter, hs []uint64) {
		if calls++; calls != 2 { // the second column's inserts are lost
			f.InsertMany(hs)
		}
	}
	out, err := x.index(t.Context(), dataFile{path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range out {
		switch {
		case i == 1:
			if f.err == nil || !strings.Contains(f.err.Error(), "column l: corrupt filter") || f.filter.Bytes() != nil {
				t.Errorf("column l: error %v, %d filter bytes; want a corrupt filter error and no filter", f.err, len(f.filter.Bytes()))
			}
		case f.err != nil:
			t.Errorf("column %s: %v", cols[i].Name, f.err)
		case i == len(out)-1:
			if f.ndv != 0 || !allZero(f.filter.Bytes()) {
				t.Errorf("all-NULL column: ndv %d", f.ndv)
			}
		case f.ndv == 0 || allZero(f.filter.Bytes()):
			t.Errorf("column %s: ndv %d, empty filter", cols[i].Name, f.ndv)
		}
	}
}
