package testfixture

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
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
