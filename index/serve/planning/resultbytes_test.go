package planning

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/wire"
)

// TestResultSizeMeasuredFullPages: what TestResultSizeMeasured checks, for
// pages that carry everything a task can (a partitioned table's files, each
// with its column statistics asked for, key metadata, split offsets, a
// first row id, a position and an equality delete file, and a residual per
// partition): the walk charges at least what the pages hold on the heap,
// and not more than twice that.
func TestResultSizeMeasuredFullPages(t *testing.T) {
	if !measureAlone(t) {
		return
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 16}},
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "ts_day", Transform: iceberg.DayTransform{}})
	meta, err := table.NewMetadata(schema, &spec, table.UnsortedSortOrder, "s3://bucket/warehouse/db/events", iceberg.Properties{"format-version": "3"})
	if err != nil {
		t.Fatal(err)
	}
	spec = meta.PartitionSpec()
	build := func(content iceberg.ManifestEntryContent, path string, i int, set func(*iceberg.DataFileBuilder)) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, content, path, iceberg.ParquetFile,
			map[int]any{1000: int32(i % 16), 1001: iceberg.Date(19000 + i%30)}, nil, nil, 100_000, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		if set != nil {
			set(b)
		}
		return b.Build()
	}
	const files, perPage = 4000, 1000
	residuals := map[int]iceberg.BooleanExpression{}
	tasks := make([]table.FileScanTask, files)
	for i := range tasks {
		path := fmt.Sprintf("s3://bucket/warehouse/db/events/data/id_bucket=%d/ts_day=%d/00%03d-%d-3f1c2a9e-5b7d-4e2f-9a61-0c8d4b7e%04x.parquet", i%16, i%30, i%1000, i, i)
		lo, hi := iceberg.Int64Literal(int64(i)*1000), iceberg.Int64Literal(int64(i)*1000+999)
		lob, _ := lo.MarshalBinary()
		hib, _ := hi.MarshalBinary()
		data := build(iceberg.EntryContentData, path, i, func(b *iceberg.DataFileBuilder) {
			b.ColumnSizes(map[int]int64{1: 800_000, 2: 800_000, 3: 2_000_000}).
				ValueCounts(map[int]int64{1: 100_000, 2: 100_000, 3: 100_000}).
				NullValueCounts(map[int]int64{1: 0, 2: 10, 3: 0}).
				LowerBoundValues(map[int][]byte{1: lob, 3: []byte("aardvark")}).UpperBoundValues(map[int][]byte{1: hib, 3: []byte("zebra")}).
				KeyMetadata([]byte{0xde, 0xad, 0xbe, 0xef}).SplitOffsets([]int64{4, 2 << 20}).FirstRowID(int64(i) * 100_000)
		})
		pos := build(iceberg.EntryContentPosDeletes, path+".deletes.parquet", i, nil)
		eq := build(iceberg.EntryContentEqDeletes, fmt.Sprintf("s3://bucket/warehouse/db/events/data/eq-%d.parquet", i/10), i, func(b *iceberg.DataFileBuilder) {
			b.EqualityFieldIDs([]int{1})
		})
		if residuals[i%16] == nil {
			bound, err := iceberg.BindExpr(schema, iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("id"), int64(i)), iceberg.EqualTo(iceberg.Reference("name"), "x")), true)
			if err != nil {
				t.Fatal(err)
			}
			residuals[i%16] = bound
		}
		tasks[i] = table.FileScanTask{File: data, DeleteFiles: []iceberg.DataFile{pos}, EqualityDeleteFiles: []iceberg.DataFile{eq}, Residual: residuals[i%16], Length: 4 << 20}
	}
	stats := map[int]bool{1: true, 2: true, 3: true}
	plan := func() *PlanResult {
		res := &PlanResult{TableUUID: "0f4c2a9e-5b7d-4e2f-9a61-0c8d4b7e0001", MetadataLocation: "s3://bucket/warehouse/db/events/metadata/00001-x.metadata.json"}
		for _, page := range pageTasks(tasks, perPage) {
			env, err := wire.ScanTasks(meta, page, stats)
			if err != nil {
				t.Fatal(err)
			}
			res.spans = append(res.spans, KeyRange{PathKey(page[0].File.FilePath()), PathKey(page[len(page)-1].File.FilePath())})
			res.Pages = append(res.Pages, env)
		}
		return res
	}
	plan() // what the files make on first use (iceberg-go's maps of their statistics) is made before the weighing
	before := liveHeap()
	res := plan()
	charged := res.heldBytes()
	held := int64(liveHeap()) - int64(before)
	runtime.KeepAlive(res)
	runtime.KeepAlive(tasks)
	body, err := json.Marshal(res.Pages)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a result of %d files with everything: charged %d bytes (%d a file), holds %d (%d a file); its JSON is %d", files, charged, charged/files, held, held/files, len(body))
	checkCharged(t, fmt.Sprintf("a result of %d files", files), charged, held)
}
