package planning_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// residualSchema has a column of each type a partition transform takes.
var residualSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 4, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 6, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 7, Name: "f", Type: iceberg.PrimitiveTypes.Float64},
)

// residualTable is a table partitioned by identity(b), day(ts),
// bucket[4](id), truncate[2](name), identity(d), month(dt) and identity(f),
// with rows holding NULLs, a NaN and -0 among them.
func residualTable(t *testing.T) (*catalogtest.Catalog, *table.Table) {
	cat := catalogtest.NewCatalog(t)
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "b", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "ts_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1002, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1003, Name: "name_trunc", Transform: iceberg.TruncateTransform{Width: 2}},
		iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1004, Name: "d", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{6}, FieldID: 1005, Name: "dt_month", Transform: iceberg.MonthTransform{}},
		iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1006, Name: "f", Transform: iceberg.IdentityTransform{}},
	)
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{"db", "residuals"}, residualSchema,
		icecatalog.WithPartitionSpec(&spec), icecatalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(residualSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2022, 1, 9, 10, 30, 0, 0, time.UTC)
	// No empty string: iceberg-go v0.7.0's local planning then drops every
	// file of a string-partitioned table (its manifest's partition summary
	// has an empty lower bound), which leaves nothing to compare.
	names := []string{"abc", "abd", "xyz", "x", "a"}
	floats := []float64{2, math.Copysign(0, -1), math.NaN(), 1.5}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := range 24 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		nullIf := func(col int) bool { // a NULL in each partition column now and then
			if rng.IntN(6) == 0 {
				b.Field(col).AppendNull()
				return true
			}
			return false
		}
		if !nullIf(1) {
			b.Field(1).(*array.BooleanBuilder).Append(i%2 == 0)
		}
		if !nullIf(2) {
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i%3) * 24 * time.Hour).UnixMicro()))
		}
		if !nullIf(3) {
			b.Field(3).(*array.StringBuilder).Append(names[i%len(names)])
		}
		if !nullIf(4) {
			b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(150 + i%2)))
		}
		if !nullIf(5) {
			b.Field(5).(*array.Date32Builder).Append(arrow.Date32(19001 + 31*(i%2)))
		}
		if !nullIf(6) {
			b.Field(6).(*array.Float64Builder).Append(floats[i%len(floats)])
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return cat, catalogtest.Append(t, tbl, rec)
}

// TestResidualsAsLocalPlanning: the residual serve sends with each task is
// the one iceberg-go's local planning computes for the file (its whole
// filter where iceberg-go leaves the residual nil), for predicates of every
// operator on columns under every transform, under NOT, AND and OR.
func TestResidualsAsLocalPlanning(t *testing.T) {
	_, tbl := residualTable(t)
	ts := iceberg.Timestamp(time.Date(2022, 1, 10, 0, 0, 0, 0, time.UTC).UnixMicro())
	ref := func(name string) iceberg.UnboundTerm { return iceberg.Reference(name) }
	filters := []iceberg.BooleanExpression{
		iceberg.EqualTo(ref("b"), true),
		iceberg.IsIn(ref("b"), false, true),
		iceberg.NotIn(ref("b"), true),
		iceberg.NotEqualTo(ref("b"), false),
		iceberg.IsNull(ref("b")),
		iceberg.NotNull(ref("ts")),
		iceberg.GreaterThanEqual(ref("ts"), ts),
		iceberg.LessThan(ref("ts"), ts),
		iceberg.EqualTo(ref("id"), int64(5)),
		iceberg.IsIn(ref("id"), int64(1), int64(2), int64(3)),
		iceberg.StartsWith(ref("name"), "ab"),
		iceberg.NotStartsWith(ref("name"), "ab"),
		iceberg.EqualTo(ref("name"), "abc"),
		iceberg.EqualTo(ref("d"), iceberg.Decimal{Val: decimal128.FromI64(150), Scale: 2}),
		iceberg.GreaterThan(ref("dt"), iceberg.Date(19010)),
		iceberg.EqualTo(ref("f"), 2.0),
		iceberg.IsNaN(ref("f")),
		iceberg.NotNaN(ref("f")),
		iceberg.NewNot(iceberg.EqualTo(ref("b"), true)),
		iceberg.NewAnd(iceberg.EqualTo(ref("b"), true), iceberg.GreaterThan(ref("id"), int64(3))),
		iceberg.NewOr(iceberg.EqualTo(ref("b"), false), iceberg.LessThan(ref("ts"), ts)),
		iceberg.NewAnd(iceberg.NewOr(iceberg.IsNull(ref("name")), iceberg.StartsWith(ref("name"), "x")), iceberg.GreaterThanEqual(ref("f"), 1.0)),
		iceberg.AlwaysTrue{},
	}
	for _, filter := range filters {
		tasks, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", filter, err)
		}
		bound, err := iceberg.BindExpr(tbl.Schema(), filter, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			t.Fatalf("%s: no task planned, nothing compared", filter)
		}
		for _, task := range tasks {
			want := task.Residual
			if want == nil {
				want = bound
			}
			got, err := planning.Residual(tbl.Metadata(), tbl.Schema(), bound, true, task.File)
			if err != nil {
				t.Fatalf("%s: %v", filter, err)
			}
			if got == nil || !got.Equals(want) {
				t.Errorf("%s on partition %v: residual %v, local planning's %v", filter, task.File.Partition(), got, want)
			}
		}
	}
}

// TestEveryTaskCarriesItsResidual: every task of a plan of a partitioned
// table carries a residual filter, on the fast path, the usual path and
// without a filter (Java's reader throws on a task without one), and it is
// true where the partition decides the filter: b IN (false, true) on an
// identity partition of b leaves nothing to evaluate in a file of b = true.
func TestEveryTaskCarriesItsResidual(t *testing.T) {
	cat, tbl := residualTable(t)
	load := func(ctx context.Context, ident table.Identifier) (*planning.Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &planning.Loaded{Table: tbl}, err
	}
	p := planning.NewPlanner(load, planning.PlannerOptions{MemoryBudget: 64 << 20})
	for _, filter := range []string{
		``,
		`{"type":"eq","term":"id","value":5}`,
		`{"type":"in","term":"b","values":[false,true]}`,
		`{"type":"and","left":{"type":"eq","term":"b","value":true},"right":{"type":"lt","term":"f","value":1.6}}`,
	} {
		res, err := p.Plan(context.Background(), tbl.Identifier(), rest.PlanTableScanRequest{Filter: []byte(filter)})
		if err != nil {
			t.Fatalf("plan %s: %v", filter, err)
		}
		tasks := 0
		for _, page := range res.Pages {
			for _, task := range page.FileScanTasks {
				tasks++
				if len(task.ResidualFilter) == 0 || string(task.ResidualFilter) == "null" {
					t.Fatalf("plan %s: task of %s has no residual filter", filter, task.DataFile.FilePath)
				}
				if filter == `` && string(task.ResidualFilter) != "true" {
					t.Errorf("plan without a filter: residual %s, want true", task.ResidualFilter)
				}
				if filter == `{"type":"in","term":"b","values":[false,true]}` && len(task.DataFile.Partition) > 0 &&
					string(task.DataFile.Partition[0]) != "null" && string(task.ResidualFilter) != "true" {
					t.Errorf("b IN (false, true) on a file of b = %s: residual %s, want true", task.DataFile.Partition[0], task.ResidualFilter)
				}
			}
		}
		if tasks == 0 {
			t.Fatalf("plan %s: no task", filter)
		}
	}
}
