package lookup_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/lookup"
)

// stringPartitioned is db.<name>, partitioned by identity(s), with one
// append of a file per value of values (nil: NULL), in one manifest.
func stringPartitioned(t *testing.T, name string, values []*string) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := catalogtest.NewCatalog(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "s", Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", name}, sc, icecatalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	for i, v := range values {
		if v == nil {
			sb.AppendNull()
		} else {
			sb.Append(*v)
		}
		ib.Append(int64(i))
	}
	s, id := sb.NewArray(), ib.NewArray()
	defer s.Release()
	defer id.Release()
	rec := array.NewRecordBatch(as, []arrow.Array{s, id}, int64(len(values)))
	defer rec.Release()
	return catalogtest.Append(t, tbl, rec)
}

// planned is the partition values (nil: NULL) of the files lookup.Plan
// plans for filter.
func planned(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) []string {
	t.Helper()
	res, err := lookup.Plan(context.Background(), tbl, filter, lookup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, task := range res.Candidates {
		v := task.File.Partition()[1000]
		if v == nil {
			parts = append(parts, "NULL")
		} else {
			parts = append(parts, "'"+v.(string)+"'")
		}
	}
	slices.Sort(parts)
	return parts
}

// TestPlanKeepsEmptyPartitionValue: iceberg-go v0.7.0 reads the partition
// summary of a manifest whose least value is the empty string as "all null" and skips the
// manifest for any predicate on the column (both lookups below planned no
// file). Plan keeps every file that may match, and a table without it is
// still pruned by its partitions.
func TestPlanKeepsEmptyPartitionValue(t *testing.T) {
	empty, x := "", "x"
	cases := []struct {
		filter iceberg.BooleanExpression
		want   []string // at least these files
	}{
		{iceberg.EqualTo(iceberg.Reference("s"), "x"), []string{"'x'"}},
		{iceberg.EqualTo(iceberg.Reference("s"), ""), []string{"''"}},
		{iceberg.IsIn(iceberg.Reference("s"), "", "x"), []string{"''", "'x'"}},
		{iceberg.LessThan(iceberg.Reference("s"), "y"), []string{"''", "'x'"}},
		{iceberg.NewNot(iceberg.EqualTo(iceberg.Reference("s"), "x")), []string{"''"}},
		{iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("id"), int64(1)), iceberg.EqualTo(iceberg.Reference("s"), "x")), []string{"'x'"}},
	}
	tbl := stringPartitioned(t, "with_empty", []*string{&empty, &x, nil})
	for _, c := range cases {
		got := planned(t, tbl, c.filter)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: planned the files of %v, not of %s", c.filter, got, w)
			}
		}
	}

	y := "y"
	tbl = stringPartitioned(t, "without_empty", []*string{&y, &x, nil})
	if got := planned(t, tbl, iceberg.EqualTo(iceberg.Reference("s"), "x")); !slices.Equal(got, []string{"'x'"}) {
		t.Errorf("without '': s = 'x' planned the files of %v, want only 'x'", got)
	}
}
