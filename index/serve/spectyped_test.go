package serve_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/serve"
)

// specTypedSchema has a column of each type whose single-value form differs
// from Go's default JSON: timestamps, doubles and floats, decimals and
// binary.
var specTypedSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 3, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 4, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "price", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 6, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 7, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
)

// TestSpecTypedAnswers plans over a table partitioned by a timestamp, a
// timestamptz, a double, a decimal and a binary column, with the
// statistics of every column and a residual on the float, so that the
// answers carry a partition value, a bound and a literal of each of those
// types; the server's spec check (SpecChecked) checks their single-value
// forms. The other tests' tables have long, string, date and int columns
// only, whose JSON forms are Go's.
func TestSpecTypedAnswers(t *testing.T) {
	ctx := context.Background()
	cat := catalogtest.NewCatalog(t)
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "tstz", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1002, Name: "score", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1003, Name: "price", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{6}, FieldID: 1004, Name: "blob", Transform: iceberg.IdentityTransform{}},
	)
	ident := table.Identifier{"db", "typed"}
	tbl, err := cat.CreateTable(ctx, ident, specTypedSchema, icecatalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(specTypedSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	at := time.Date(2022, 1, 9, 10, 30, 0, 0, time.UTC)
	for i, score := range []float64{2, 99.9} { // 2: a double with no fraction
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		ts := arrow.Timestamp(at.Add(time.Duration(i) * time.Hour).UnixMicro())
		b.Field(1).(*array.TimestampBuilder).Append(ts)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).(*array.Float64Builder).Append(score)
		b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(1250 + i))) // 12.50, 12.51
		b.Field(5).(*array.BinaryBuilder).Append([]byte{0xab, 0xcd, byte(i)})
		b.Field(6).(*array.Float32Builder).Append(float32(i + 1))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	catalogtest.Append(t, tbl, rec)
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	path := "/v1/namespaces/db/tables/typed"
	if resp, body := do(t, "GET", base+path, "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	plan := `{"stats-fields":["id","ts","tstz","score","price","blob","ratio"],
		"filter":{"type":"or","left":{"type":"gt","term":"score","value":50.0},"right":{"type":"eq","term":"ratio","value":1.0}}}`
	if resp, body := do(t, "POST", base+path+"/plan", "", plan); resp.StatusCode != http.StatusOK {
		t.Fatalf("plan: %d %s", resp.StatusCode, body)
	}
}
