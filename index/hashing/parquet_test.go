package hashing_test

import (
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/icebloom/icebloom/index/hashing"
)

// Helpers that write real Parquet files with arrow-go's column chunk writers
// and read them back through its column chunk readers, hashing each batch
// with a hashing.Column as an index builder does.

// node returns an optional primitive column with a logical annotation (nil
// for none); typeLen is the FIXED_LEN_BYTE_ARRAY length, else -1.
func node(t testing.TB, name string, phys parquet.Type, lt schema.LogicalType, typeLen int) *schema.PrimitiveNode {
	t.Helper()
	n, err := schema.NewPrimitiveNodeLogical(name, parquet.Repetitions.Optional, lt, phys, typeLen, -1)
	if err != nil {
		t.Fatalf("column %s: %v", name, err)
	}
	return n
}

// schemaColumn returns the column of a one-column schema holding n.
func schemaColumn(t testing.TB, n schema.Node) *schema.Column {
	t.Helper()
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{n}, -1)
	if err != nil {
		t.Fatal(err)
	}
	return schema.NewSchema(root).Column(0)
}

// physical turns a test's logical value into what the column stores:
// integers are int64 and decimals *big.Int (unscaled) whatever the physical
// type, INT96 columns take int64 nanoseconds since the epoch.
func physical(n *schema.PrimitiveNode, v any) any {
	switch n.PhysicalType() {
	case parquet.Types.Int32:
		if d, ok := v.(*big.Int); ok {
			return int32(d.Int64())
		}
		return int32(v.(int64))
	case parquet.Types.Int64:
		if d, ok := v.(*big.Int); ok {
			return d.Int64()
		}
		return v.(int64)
	case parquet.Types.Int96:
		return int96(v.(int64))
	case parquet.Types.ByteArray:
		switch v := v.(type) {
		case string:
			return parquet.ByteArray(v)
		case *big.Int:
			return parquet.ByteArray(twosComplement(v, (v.BitLen()+8)/8))
		}
		return parquet.ByteArray(v.([]byte))
	case parquet.Types.FixedLenByteArray:
		if d, ok := v.(*big.Int); ok {
			return parquet.FixedLenByteArray(twosComplement(d, n.TypeLength()))
		}
		return parquet.FixedLenByteArray(v.([]byte))
	}
	return v // bool, float32, float64
}

// int96 encodes nanoseconds since the epoch as a legacy INT96 timestamp the
// way arrow-go's pqarrow writer does: nanoseconds within the (floored) day,
// then the Julian day.
func int96(ns int64) parquet.Int96 {
	const nsPerDay = 86_400_000_000_000
	days, rem := ns/nsPerDay, ns%nsPerDay
	if rem < 0 {
		days--
		rem += nsPerDay
	}
	var v parquet.Int96
	v.SetNanoSeconds(rem)
	julian := uint32(days + 2_440_588)
	v[8], v[9], v[10], v[11] = byte(julian), byte(julian>>8), byte(julian>>16), byte(julian>>24)
	return v
}

// stored converts the non-null values of vals to the column's physical Go
// type and returns them with the definition levels.
func stored[T any](n *schema.PrimitiveNode, vals []any) ([]T, []int16) {
	def := make([]int16, len(vals))
	var out []T
	for i, v := range vals {
		if v != nil {
			def[i] = 1
			out = append(out, physical(n, v).(T))
		}
	}
	return out, def
}

// batchWriter is arrow-go's typed column chunk writer for values of type T.
type batchWriter[T any] interface {
	WriteBatch(values []T, defLevels, repLevels []int16) (int64, error)
}

func writeBatch[T any](w batchWriter[T], n *schema.PrimitiveNode, vals []any) error {
	v, def := stored[T](n, vals)
	_, err := w.WriteBatch(v, def, nil)
	return err
}

func writeChunk(t testing.TB, cw file.ColumnChunkWriter, n *schema.PrimitiveNode, vals []any) {
	t.Helper()
	var err error
	switch w := cw.(type) {
	case *file.BooleanColumnChunkWriter:
		err = writeBatch[bool](w, n, vals)
	case *file.Int32ColumnChunkWriter:
		err = writeBatch[int32](w, n, vals)
	case *file.Int64ColumnChunkWriter:
		err = writeBatch[int64](w, n, vals)
	case *file.Int96ColumnChunkWriter:
		err = writeBatch[parquet.Int96](w, n, vals)
	case *file.Float32ColumnChunkWriter:
		err = writeBatch[float32](w, n, vals)
	case *file.Float64ColumnChunkWriter:
		err = writeBatch[float64](w, n, vals)
	case *file.ByteArrayColumnChunkWriter:
		err = writeBatch[parquet.ByteArray](w, n, vals)
	case *file.FixedLenByteArrayColumnChunkWriter:
		err = writeBatch[parquet.FixedLenByteArray](w, n, vals)
	default:
		t.Fatalf("column %s: unexpected writer %T", n.Name(), cw)
	}
	if err != nil {
		t.Fatalf("write %s: %v", n.Name(), err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeParquet writes the columns (padded with NULLs to a common length) to
// a file in two row groups and returns its path.
func writeParquet(t testing.TB, nodes []*schema.PrimitiveNode, vals [][]any) string {
	t.Helper()
	fields := make(schema.FieldList, len(nodes))
	rows := 0
	for i, n := range nodes {
		fields[i] = n
		rows = max(rows, len(vals[i]))
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "columns.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := file.NewParquetWriter(f, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithStats(true))))
	for _, rg := range [][2]int{{0, rows / 2}, {rows / 2, rows}} {
		rgw, err := w.AppendRowGroupChecked()
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range nodes {
			cw, err := rgw.NextColumn()
			if err != nil {
				t.Fatal(err)
			}
			col := append(vals[i], make([]any, rows-len(vals[i]))...)
			writeChunk(t, cw, n, col[rg[0]:rg[1]])
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

func openParquet(t testing.TB, path string) *file.Reader {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdr.Close() })
	return rdr
}

// eachBatch reads a column chunk's non-null values in batches with a typed
// ReadBatch and passes each batch on while its values are still valid.
func eachBatch[T any](t testing.TB, read func(int64, []T, []int16, []int16) (int64, int, error), hash func([]T) error) {
	t.Helper()
	const batch = 256
	vals := make([]T, batch)
	def := make([]int16, batch)
	for {
		levels, n, err := read(batch, vals, def, nil)
		if err != nil {
			t.Fatal(err)
		}
		if levels == 0 {
			return
		}
		if err := hash(vals[:n]); err != nil {
			t.Fatal(err)
		}
	}
}

// hashChunk hashes the non-null values of column i of a row group with c.
func hashChunk(t testing.TB, rg *file.RowGroupReader, i int, c *hashing.Column, hs []uint64) []uint64 {
	t.Helper()
	cr, err := rg.Column(i)
	if err != nil {
		t.Fatal(err)
	}
	var hashErr error
	switch cr := cr.(type) {
	case *file.BooleanColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []bool) error { hs, hashErr = c.Bools(hs, v); return hashErr })
	case *file.Int32ColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []int32) error { hs, hashErr = c.Int32s(hs, v); return hashErr })
	case *file.Int64ColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []int64) error { hs, hashErr = c.Int64s(hs, v); return hashErr })
	case *file.Int96ColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []parquet.Int96) error { hs, hashErr = c.Int96s(hs, v); return hashErr })
	case *file.Float32ColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []float32) error { hs, hashErr = c.Float32s(hs, v); return hashErr })
	case *file.Float64ColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []float64) error { hs, hashErr = c.Float64s(hs, v); return hashErr })
	case *file.ByteArrayColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []parquet.ByteArray) error { hs, hashErr = c.ByteArrays(hs, v); return hashErr })
	case *file.FixedLenByteArrayColumnChunkReader:
		eachBatch(t, cr.ReadBatch, func(v []parquet.FixedLenByteArray) error {
			hs, hashErr = c.FixedLenByteArrays(hs, v)
			return hashErr
		})
	default:
		t.Fatalf("unexpected reader %T", cr)
	}
	return hs
}

// hashFileColumn hashes column i of every row group of a file with c.
func hashFileColumn(t testing.TB, rdr *file.Reader, i int, c *hashing.Column) []uint64 {
	t.Helper()
	var hs []uint64
	for g := range rdr.NumRowGroups() {
		hs = hashChunk(t, rdr.RowGroup(g), i, c, hs)
	}
	return hs
}
