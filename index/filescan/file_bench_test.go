package filescan

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// BenchmarkIndexFile indexes a low-cardinality dictionary-encoded string
// column of about a million rows (four row groups), with the dictionary
// shortcut and with every value decoded.
func BenchmarkIndexFile(b *testing.B) {
	const rowGroups, rows = 4, 1 << 18
	tcs := []testColumn{{
		primitive(b, "s", 1, parquet.Types.ByteArray, schema.StringLogicalType{}, -1), iceberg.PrimitiveTypes.String,
		nullEvery(50, func(i int) any { return parquet.ByteArray(fmt.Sprintf("country-%d", i*7919%200)) }),
	}}
	path := writeColumns(b, tcs, rowGroups, rows, parquet.WithDictionaryDefault(true))
	cols := buildColumns(tcs)
	for _, bc := range []struct {
		name     string
		shortcut bool
	}{{"dictionary", true}, {"decode", false}} {
		b.Run(bc.name, func(b *testing.B) {
			x, _ := indexWith(b, path, cols, bc.shortcut) // warm the buffers
			if bc.shortcut != (x.dictChunks == rowGroups) {
				b.Fatalf("%d chunks from dictionaries", x.dictChunks)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.Scan(b.Context(), File{Path: path}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rowGroups*rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
