package indexer

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"math/rand/v2"
	"time"

	"github.com/icebloom/icebloom/catalog/catalogtest"

	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// BenchmarkReadFilesLocal reads and hashes 200 small local files (a unique
// id and a string column, 2,000 rows each) with two workers, reading ahead
// (defaultRequestsInFlight) and with each worker reading its own files: on
// a local disk, reading ahead must cost nothing.
func BenchmarkReadFilesLocal(b *testing.B) {
	tcs := []testColumn{
		{primitive(b, "id", 1, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
			func(i int) any { return int64(i)*2654435761 + 17 }},
		{primitive(b, "s", 2, parquet.Types.ByteArray, schema.StringLogicalType{}, -1), iceberg.PrimitiveTypes.String,
			func(i int) any { return parquet.ByteArray(fmt.Sprintf("user-%016x", uint64(i)*0x9e3779b97f4a7c15)) }},
	}
	cols := buildColumns(tcs)
	var files []dataFile
	for range 200 {
		path := writeColumns(b, tcs, 1, 2000)
		files = append(files, dataFile{path: path, size: fileSize(b, path)})
	}
	for _, bc := range []struct {
		name  string
		ahead int64
	}{{"ahead", prefetchBytesOf(256 << 20)}, {"workers", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			rc := readConfig{fs: icebergio.LocalFS{}, cols: cols, maxFilterBytes: defaultMaxFilterBytes,
				parallel: 2, requests: defaultRequestsInFlight, prefetchBytes: bc.ahead}
			for b.Loop() {
				for r := range readFiles(b.Context(), files, rc) {
					if r.err != nil {
						b.Fatal(r.err)
					}
				}
			}
			b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}

// BenchmarkBuildS3 builds the index of a table of 100 data files (2,000
// rows each) on the in-process S3 server answering each request after
// 10 ms, as a remote object store would: reading ahead with the default
// requests in flight, and with two workers reading their own files (the
// build before reading ahead). `icebloom bench --s3-floor` compares the
// same with the network floor.
func BenchmarkBuildS3(b *testing.B) {
	s3 := catalogtest.NewS3(b)
	rows := make([]int, 100)
	for i := range rows {
		rows[i] = 2000
	}
	cat, ident, _ := s3Table(b, s3, rows)
	s3.SetDelay(10 * time.Millisecond)
	for _, bc := range []struct {
		name string
		o    Options
	}{{"ahead", Options{Parallel: 2}}, {"workers", Options{Parallel: 2, knobs: knobs{DisablePrefetch: true}}}} {
		b.Run(bc.name, func(b *testing.B) {
			bc.o.Columns, bc.o.FailFast = []string{"id", "tag"}, true
			for b.Loop() {
				if _, err := Build(b.Context(), cat, ident, bc.o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}

// BenchmarkBuildLocal builds the index of a table of 200 data files (2,000
// rows each) in a local warehouse, reading ahead and with two workers
// reading their own files: on a local disk reading ahead gains nothing and
// must cost nothing.
func BenchmarkBuildLocal(b *testing.B) {
	cat := catalogtest.NewCatalog(b)
	tbl := cat.NewTable(b, "prefetch", prefetchSchema, nil)
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	txn := tbl.NewTransaction()
	for f := range 200 {
		rec := prefetchRecord(as, rand.New(rand.NewPCG(uint64(f), 1)), 2000)
		at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
		err := txn.AppendTable(b.Context(), at, rec.NumRows(), nil)
		at.Release()
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := txn.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		o    Options
	}{{"ahead", Options{Parallel: 2}}, {"workers", Options{Parallel: 2, knobs: knobs{DisablePrefetch: true}}}} {
		b.Run(bc.name, func(b *testing.B) {
			bc.o.Columns, bc.o.FailFast = []string{"id", "tag"}, true
			for b.Loop() {
				if _, err := Build(b.Context(), cat, tbl.Identifier(), bc.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
