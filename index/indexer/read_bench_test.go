package indexer

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

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
