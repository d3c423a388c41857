package wire

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// benchTasks is n tasks of an unpartitioned table (id long, ts timestamp,
// name string) whose files carry what a writer's manifest does (counts,
// bounds, split offsets), all with residual: a warm point lookup's
// surviving files, which share the request's filter.
func benchTasks(b *testing.B, n int, residual func(meta table.Metadata) iceberg.BooleanExpression) (table.Metadata, []table.FileScanTask) {
	b.Helper()
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String})
	meta, err := table.NewMetadata(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://bucket/warehouse/db/events", iceberg.Properties{"format-version": "2"})
	if err != nil {
		b.Fatal(err)
	}
	res := residual(meta)
	tasks := make([]table.FileScanTask, n)
	for i := range tasks {
		path := fmt.Sprintf("s3://bucket/warehouse/db/events/data/00%03d-%d-3f1c2a9e-5b7d-4e2f-9a61-0c8d4b7e%04x-00001.parquet", i%1000, i, i)
		bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 100_000, 4<<20)
		if err != nil {
			b.Fatal(err)
		}
		lo, hi := iceberg.Int64Literal(int64(i)*1000), iceberg.Int64Literal(int64(i)*1000+999)
		lob, _ := lo.MarshalBinary()
		hib, _ := hi.MarshalBinary()
		bld.ColumnSizes(map[int]int64{1: 800_000, 2: 800_000, 3: 2_000_000}).
			ValueCounts(map[int]int64{1: 100_000, 2: 100_000, 3: 100_000}).
			NullValueCounts(map[int]int64{1: 0, 2: 10, 3: 0}).
			LowerBoundValues(map[int][]byte{1: lob}).UpperBoundValues(map[int][]byte{1: hib}).
			SplitOffsets([]int64{4})
		tasks[i] = table.FileScanTask{File: bld.Build(), Residual: res, Length: 4 << 20}
	}
	return meta, tasks
}

// BenchmarkScanTasks: an envelope of 4,000 tasks sharing one residual (a
// point lookup's on an unpartitioned table), with no column statistics
// asked for, as a warm plan's page of a large table is.
//
//	go test -run - -bench BenchmarkScanTasks -count 6 ./index/serve/wire
func BenchmarkScanTasks(b *testing.B) {
	meta, tasks := benchTasks(b, 4000, func(meta table.Metadata) iceberg.BooleanExpression {
		bound, err := iceberg.BindExpr(meta.CurrentSchema(), iceberg.EqualTo(iceberg.Reference("id"), int64(123_456_789)), true)
		if err != nil {
			b.Fatal(err)
		}
		return bound
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ScanTasks(meta, tasks, nil); err != nil {
			b.Fatal(err)
		}
	}
}
