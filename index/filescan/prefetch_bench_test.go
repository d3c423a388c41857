package filescan

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// BenchmarkReadFilesLocal reads and hashes 200 small local files (a unique
// id and a string column, 2,000 rows each) with two workers, reading ahead
// (DefaultRequestsInFlight) and with each worker reading its own files: on
// a local disk, reading ahead must cost nothing.
func BenchmarkReadFilesLocal(b *testing.B) {
	tcs := []testColumn{
		{primitive(b, "id", 1, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
			func(i int) any { return int64(i)*2654435761 + 17 }},
		{primitive(b, "s", 2, parquet.Types.ByteArray, schema.StringLogicalType{}, -1), iceberg.PrimitiveTypes.String,
			func(i int) any { return parquet.ByteArray(fmt.Sprintf("user-%016x", uint64(i)*0x9e3779b97f4a7c15)) }},
	}
	cols := buildColumns(tcs)
	var files []File
	for range 200 {
		path := writeColumns(b, tcs, 1, 2000)
		files = append(files, File{Path: path, Size: fileSize(b, path)})
	}
	for _, bc := range []struct {
		name  string
		ahead int64
	}{{"ahead", PrefetchBytesOf(256 << 20)}, {"workers", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			rc := Config{FS: icebergio.LocalFS{}, Columns: cols, MaxFilterBytes: testMaxFilterBytes,
				Parallel: 2, Requests: DefaultRequestsInFlight, PrefetchBytes: bc.ahead}
			for b.Loop() {
				for r := range ReadFiles(b.Context(), files, rc) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}
