package filescan

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebloom/icebloom/index/internal/testfixture"
)

// testColumn is a column of a generated Parquet file: its node, the Iceberg
// type it is indexed as, and its value at each row (nil for NULL) in the
// physical Go type of the node.
type testColumn struct {
	node  *schema.PrimitiveNode
	typ   iceberg.PrimitiveType
	value func(row int) any
}

func primitive(t testing.TB, name string, id int32, phys parquet.Type, lt schema.LogicalType, typeLen int) *schema.PrimitiveNode {
	t.Helper()
	n, err := schema.NewPrimitiveNodeLogical(name, parquet.Repetitions.Optional, lt, phys, typeLen, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// nullEvery makes every k-th row NULL.
func nullEvery(k int, f func(int) any) func(int) any {
	return func(i int) any {
		if i%k == 0 {
			return nil
		}
		return f(i)
	}
}

// flba9 is v as a 9-byte big-endian two's complement (a decimal(20, s)).
func flba9(v int64) parquet.FixedLenByteArray {
	b := make([]byte, 9)
	for i := 8; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// lowCardinality are dictionary-friendly columns of several physical and
// Iceberg types, with NULLs.
func lowCardinality(t testing.TB) []testColumn {
	return []testColumn{
		{primitive(t, "s", 1, parquet.Types.ByteArray, schema.StringLogicalType{}, -1), iceberg.PrimitiveTypes.String,
			nullEvery(11, func(i int) any { return parquet.ByteArray(fmt.Sprintf("value-%d", i%7)) })},
		{primitive(t, "l", 2, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
			nullEvery(5, func(i int) any { return int64(i%13)*1e12 - 5 })},
		{primitive(t, "p", 3, parquet.Types.Int32, nil, -1), iceberg.PrimitiveTypes.Int64, // int promoted to long
			nullEvery(7, func(i int) any { return int32(i%5 - 2) })},
		{primitive(t, "d", 4, parquet.Types.Int64, schema.NewDecimalLogicalType(12, 2), -1), iceberg.DecimalTypeOf(12, 2),
			nullEvery(3, func(i int) any { return int64(i%9) * -1234 })},
		{primitive(t, "w", 5, parquet.Types.FixedLenByteArray, schema.NewDecimalLogicalType(20, 2), 9), iceberg.DecimalTypeOf(20, 2),
			nullEvery(4, func(i int) any { return flba9(int64(i%6) * -98765) })},
		{primitive(t, "day", 6, parquet.Types.Int32, schema.DateLogicalType{}, -1), iceberg.PrimitiveTypes.Date,
			nullEvery(9, func(i int) any { return int32(19000 + i%30) })},
	}
}

// writeColumns writes rowGroups row groups of rows rows each and returns the
// file's path.
func writeColumns(t testing.TB, cols []testColumn, rowGroups, rows int, props ...parquet.WriterProperty) string {
	t.Helper()
	fields := make(schema.FieldList, len(cols))
	for i, c := range cols {
		fields[i] = c.node
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dict.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := file.NewParquetWriter(f, root, file.WithWriterProps(parquet.NewWriterProperties(props...)))
	for rg := range rowGroups {
		rgw, err := w.AppendRowGroupChecked()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			cw, err := rgw.NextColumn()
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]any, rows)
			def := make([]int16, rows)
			for i := range vals {
				if vals[i] = c.value(rg*rows + i); vals[i] != nil {
					def[i] = 1
				}
			}
			switch w := cw.(type) {
			case *file.Int32ColumnChunkWriter:
				_, err = w.WriteBatch(nonNull[int32](vals), def, nil)
			case *file.Int64ColumnChunkWriter:
				_, err = w.WriteBatch(nonNull[int64](vals), def, nil)
			case *file.ByteArrayColumnChunkWriter:
				_, err = w.WriteBatch(nonNull[parquet.ByteArray](vals), def, nil)
			case *file.FixedLenByteArrayColumnChunkWriter:
				_, err = w.WriteBatch(nonNull[parquet.FixedLenByteArray](vals), def, nil)
			default:
				t.Fatalf("unexpected writer %T", cw)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := cw.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rgw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func nonNull[T any](vals []any) []T {
	var out []T
	for _, v := range vals {
		if v != nil {
			out = append(out, v.(T))
		}
	}
	return out
}

// distinct counts the distinct non-null values of c over n rows.
func distinct(c testColumn, n int) int64 {
	seen := map[string]bool{}
	for i := range n {
		if v := c.value(i); v != nil {
			seen[fmt.Sprint(v)] = true
		}
	}
	return int64(len(seen))
}

func buildColumns(cols []testColumn) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		out[i] = Column{
			Field: iceberg.NestedField{ID: int(c.node.FieldID()), Name: c.node.Name(), Type: c.typ},
			Name:  c.node.Name(), Type: c.typ, FPP: testFPP,
		}
	}
	return out
}

// indexWith indexes the file's columns with or without the shortcut.
func indexWith(t testing.TB, path string, cols []Column, shortcut bool) (*Scanner, []ColumnFilter) {
	t.Helper()
	x := NewScanner(icebergio.LocalFS{}, cols, nil, testMaxFilterBytes, !shortcut)
	out, err := x.Scan(context.Background(), File{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return x, out
}

// sameFilters fails unless both builds gave byte-identical filters.
func sameFilters(t *testing.T, cols []Column, a, b []ColumnFilter) {
	t.Helper()
	for i := range a {
		if a[i].NDV != b[i].NDV || !bytes.Equal(a[i].Filter.Bytes(), b[i].Filter.Bytes()) {
			t.Errorf("column %s: shortcut ndv %d, decoded ndv %d, filters equal %v", cols[i].Name,
				a[i].NDV, b[i].NDV, bytes.Equal(a[i].Filter.Bytes(), b[i].Filter.Bytes()))
		}
	}
}

func TestDictionaryShortcutMatchesDecoding(t *testing.T) {
	const rowGroups, rows = 3, 3000
	tcs := lowCardinality(t)
	// Small data pages: every chunk has many, all of them skipped.
	path := writeColumns(t, tcs, rowGroups, rows, parquet.WithDictionaryDefault(true), parquet.WithDataPageSize(1024))
	cols := buildColumns(tcs)

	dict, withShortcut := indexWith(t, path, cols, true)
	dec, decoded := indexWith(t, path, cols, false)
	sameFilters(t, cols, withShortcut, decoded)
	for i, c := range tcs {
		if want := distinct(c, rowGroups*rows); decoded[i].NDV != want {
			t.Errorf("column %s: ndv %d, want %d", cols[i].Name, decoded[i].NDV, want)
		}
	}
	// The shortcut really skipped the data pages: no ReadBatch at all.
	if want := len(tcs) * rowGroups; dict.dictChunks != want || dict.readBatches != 0 || dict.dictFallbacks != 0 {
		t.Errorf("shortcut: %d chunks from dictionaries (want %d), %d ReadBatch calls, %d fallbacks",
			dict.dictChunks, want, dict.readBatches, dict.dictFallbacks)
	}
	if dec.dictChunks != 0 || dec.readBatches == 0 {
		t.Errorf("disabled: %d chunks from dictionaries, %d ReadBatch calls", dec.dictChunks, dec.readBatches)
	}
}

func TestDictionaryFallbackToPlainIsDecoded(t *testing.T) {
	const rowGroups, rows = 2, 5000
	tcs := []testColumn{{
		primitive(t, "s", 1, parquet.Types.ByteArray, schema.StringLogicalType{}, -1), iceberg.PrimitiveTypes.String,
		nullEvery(10, func(i int) any { return parquet.ByteArray(fmt.Sprintf("value-%d", i%1500)) }),
	}}
	// A dictionary page limit far below the distinct values: the writer
	// falls back to PLAIN data pages after the first ones.
	path := writeColumns(t, tcs, rowGroups, rows, parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryPageSizeLimit(256), parquet.WithDataPageSize(1024))

	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	for rg := range rdr.NumRowGroups() {
		md, err := rdr.RowGroup(rg).MetaData().ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		if !md.HasDictionaryPage() || dictionaryOnly(md) {
			t.Fatalf("row group %d: dictionary page %v, dictionary only %v (stats %v, encodings %v): the test needs a fallback",
				rg, md.HasDictionaryPage(), dictionaryOnly(md), md.EncodingStats(), md.Encodings())
		}
	}

	cols := buildColumns(tcs)
	x, withShortcut := indexWith(t, path, cols, true)
	_, decoded := indexWith(t, path, cols, false)
	sameFilters(t, cols, withShortcut, decoded)
	if want := distinct(tcs[0], rowGroups*rows); withShortcut[0].NDV != want {
		t.Errorf("ndv %d, want %d", withShortcut[0].NDV, want)
	}
	if x.dictChunks != 0 || x.readBatches == 0 {
		t.Errorf("%d chunks from dictionaries, %d ReadBatch calls: the chunks must be decoded", x.dictChunks, x.readBatches)
	}
}

func TestPlainDecodingRefusesShortPages(t *testing.T) {
	for name, decode := range map[string]func(*plain) error{
		"int32":      func(p *plain) error { _, err := p.int32(); return err },
		"int64":      func(p *plain) error { _, err := p.int64(); return err },
		"int96":      func(p *plain) error { _, err := p.int96(); return err },
		"byte array": func(p *plain) error { _, err := p.byteArray(); return err },
		"flba":       func(p *plain) error { p.width = 4; _, err := p.fixedLenByteArray(); return err },
	} {
		// A 4-byte length prefix claiming more bytes than follow, or
		// fewer bytes than a fixed-width value.
		p := &plain{data: []byte{9, 0, 0, 0, 1, 2}[:3]}
		if name == "byte array" {
			p.data = []byte{9, 0, 0, 0, 1, 2}
		}
		if err := decode(p); err == nil {
			t.Errorf("%s: no error on a short page", name)
		}
	}
}

func TestDictionaryShortcutOnIcebergFiles(t *testing.T) {
	_, tbl := testfixture.DictionaryTable(t)
	var cols []Column
	for _, name := range []string{"id", "tag", "n", "amount", "day"} {
		f, ok := tbl.Schema().FindFieldByName(name)
		if !ok {
			t.Fatalf("no column %s", name)
		}
		cols = append(cols, Column{Field: f, Name: name, Type: f.Type.(iceberg.PrimitiveType), FPP: testFPP})
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		df := File{Path: task.File.FilePath()}
		run := func(shortcut bool) (*Scanner, []ColumnFilter) {
			x := NewScanner(fs, cols, nil, testMaxFilterBytes, !shortcut)
			out, err := x.Scan(context.Background(), df)
			if err != nil {
				t.Fatal(err)
			}
			return x, out
		}
		x, withShortcut := run(true)
		_, decoded := run(false)
		sameFilters(t, cols, withShortcut, decoded)
		t.Logf("%s: %d chunks from dictionaries, %d shortcut failures, %d ReadBatch calls",
			filepath.Base(df.Path), x.dictChunks, x.dictFallbacks, x.readBatches)
		if x.dictChunks < 4 { // tag, n, amount, day at least
			t.Errorf("only %d chunks took the shortcut", x.dictChunks)
		}
	}
}
