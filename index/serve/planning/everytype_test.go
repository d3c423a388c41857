package planning_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
	"github.com/icebloom/icebloom/index/serve/wire"
)

// typedSchema has a column of every primitive type the spec lists but the
// nanosecond timestamps (which iceberg-go v0.7.0 does not write).
var typedSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 3, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 4, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 5, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 6, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 7, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 8, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 9, Name: "tm", Type: iceberg.PrimitiveTypes.Time},
	iceberg.NestedField{ID: 10, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 11, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 12, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 13, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 14, Name: "fx", Type: iceberg.FixedTypeOf(4)},
	iceberg.NestedField{ID: 15, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
)

// typedDomain draws the values of each column (by position in
// typedSchema) from a few, so that filters meet rows; floats include NaN
// and -0.
type typedDomain struct {
	uuids []uuid.UUID
}

func (td typedDomain) value(rng *rand.Rand, col int) any {
	k := rng.IntN(4)
	base := time.Date(2022, 1, 9, 10, 30, 0, 0, time.UTC)
	switch col {
	case 1:
		return k%2 == 0
	case 2:
		return int32(k - 1)
	case 3:
		return int64(k * 1000)
	case 4:
		return []float32{2, float32(math.Copysign(0, -1)), float32(math.NaN()), 1.5}[k]
	case 5:
		return []float64{2, math.Copysign(0, -1), math.NaN(), -1.25}[k]
	case 6:
		return iceberg.Decimal{Val: decimal128.FromI64(int64(150 + 25*k)), Scale: 2}
	case 7:
		return iceberg.Date(19001 + 40*k)
	case 8:
		return iceberg.Time(int64(k) * 3_600_000_000)
	case 9, 10:
		return iceberg.Timestamp(base.Add(time.Duration(k) * 25 * time.Hour).UnixMicro())
	case 11: // '' too: iceberg-go misreads a partition summary whose lower bound is ''
		return []string{"abc", "abd", "xyz", "é", ""}[rng.IntN(5)]
	case 12:
		return td.uuids[k]
	case 13:
		return []byte{byte(k), 0xF9, 0x23, 0}
	case 14:
		if k == 3 {
			return []byte{}
		}
		return []byte{0xF9, byte(k)}
	}
	panic(col)
}

// typedRow is a row of typedSchema, its values as iceberg-go's evaluators
// take them; nil is NULL.
type typedRow []any

func (r typedRow) Size() int          { return len(r) }
func (r typedRow) Get(pos int) any    { return r[pos] }
func (r typedRow) Set(pos int, v any) { r[pos] = v }

func (td typedDomain) row(rng *rand.Rand, id int64) typedRow {
	r := typedRow{id}
	for col := 1; col < len(typedSchema.Fields()); col++ {
		if rng.IntN(6) == 0 {
			r = append(r, nil)
		} else {
			r = append(r, td.value(rng, col))
		}
	}
	return r
}

func typedRecord(t *testing.T, rows []typedRow) arrow.RecordBatch {
	as, err := table.SchemaToArrowSchema(typedSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for _, r := range rows {
		for c, fb := range b.Fields() {
			if r[c] == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(r[c].(int64))
			case *array.BooleanBuilder:
				fb.Append(r[c].(bool))
			case *array.Int32Builder:
				fb.Append(r[c].(int32))
			case *array.Float32Builder:
				fb.Append(r[c].(float32))
			case *array.Float64Builder:
				fb.Append(r[c].(float64))
			case *array.Decimal128Builder:
				fb.Append(r[c].(iceberg.Decimal).Val)
			case *array.Date32Builder:
				fb.Append(arrow.Date32(r[c].(iceberg.Date)))
			case *array.Time64Builder:
				fb.Append(arrow.Time64(r[c].(iceberg.Time)))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(r[c].(iceberg.Timestamp)))
			case *array.StringBuilder:
				fb.Append(r[c].(string))
			case *extensions.UUIDBuilder:
				fb.Append(r[c].(uuid.UUID))
			case *array.FixedSizeBinaryBuilder:
				fb.Append(r[c].([]byte))
			case *array.BinaryBuilder:
				fb.Append(r[c].([]byte))
			default:
				t.Fatalf("no value for a %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// readTypedRows reads a data file's rows back as typedRows.
func readTypedRows(t *testing.T, path string) []typedRow {
	u, err := url.Parse(path) // the path is a URL: partition values are escaped
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.OpenParquetFile(u.Path, false)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer tbl.Release()
	rows := make([]typedRow, tbl.NumRows())
	for i := range rows {
		rows[i] = make(typedRow, len(typedSchema.Fields()))
	}
	for c := range int(tbl.NumCols()) {
		name := tbl.Schema().Field(c).Name
		field, ok := typedSchema.FindFieldByName(name)
		if !ok {
			t.Fatalf("%s: column %s is not in the schema", path, name)
		}
		pos := slices.IndexFunc(typedSchema.Fields(), func(f iceberg.NestedField) bool { return f.ID == field.ID })
		row := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for j := range chunk.Len() {
				if !chunk.IsNull(j) {
					rows[row][pos] = arrowValue(t, chunk, j, field.Type)
				}
				row++
			}
		}
	}
	return rows
}

func arrowValue(t *testing.T, arr arrow.Array, j int, typ iceberg.Type) any {
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(j)
	case *array.Boolean:
		return a.Value(j)
	case *array.Int32:
		return a.Value(j)
	case *array.Float32:
		return a.Value(j)
	case *array.Float64:
		return a.Value(j)
	case *array.Decimal128:
		return iceberg.Decimal{Val: a.Value(j), Scale: typ.(iceberg.DecimalType).Scale()}
	case *array.Date32:
		return iceberg.Date(a.Value(j))
	case *array.Time64:
		return iceberg.Time(a.Value(j))
	case *array.Timestamp:
		return iceberg.Timestamp(a.Value(j))
	case *array.String:
		return a.Value(j)
	case *extensions.UUIDArray:
		return a.Value(j)
	case *array.FixedSizeBinary:
		if _, isUUID := typ.(iceberg.UUIDType); isUUID {
			return uuid.UUID(a.Value(j))
		}
		return slices.Clone(a.Value(j))
	case *array.Binary:
		return slices.Clone(a.Value(j))
	}
	t.Fatalf("no value of a %T", arr)
	return nil
}

// typedTable is a table of typedSchema in format version formatVersion
// with a history of two partition specs: the first partitions by
// identity(b), truncate[2](s), day(ts), identity(dec), identity(f),
// bucket[4](u) and identity(fx); the second, after an evolution, by
// identity(i), bucket[3](l), month(dt), hour(tstz), identity(d),
// identity(tm), truncate[1](bin), year(ts), and void(b) in place of
// identity(b). Most files are indexed (id, l, s, dec, u, fx, bin); the last
// appended are not. It returns the domain of the rows' values and the rows.
func typedTable(t *testing.T, cat *catalogtest.Catalog, rng *rand.Rand, formatVersion string) (typedDomain, []typedRow) {
	ctx := context.Background()
	td := typedDomain{}
	for range 4 {
		td.uuids = append(td.uuids, uuid.New())
	}
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "b", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{12}, FieldID: 1001, Name: "s_trunc", Transform: iceberg.TruncateTransform{Width: 2}},
		iceberg.PartitionField{SourceIDs: []int{10}, FieldID: 1002, Name: "ts_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1003, Name: "dec", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1004, Name: "f", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{13}, FieldID: 1005, Name: "u_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}},
		iceberg.PartitionField{SourceIDs: []int{14}, FieldID: 1006, Name: "fx", Transform: iceberg.IdentityTransform{}},
	)
	ident := table.Identifier{"db", "typed"}
	if _, err := cat.CreateTable(ctx, ident, typedSchema, icecatalog.WithPartitionSpec(&spec),
		icecatalog.WithProperties(iceberg.Properties{"format-version": formatVersion})); err != nil {
		t.Fatal(err)
	}
	var rows []typedRow
	appendRows := func(n int) {
		batch := make([]typedRow, n)
		for i := range batch {
			batch[i] = td.row(rng, int64(len(rows)+i))
		}
		rows = append(rows, batch...)
		rec := typedRecord(t, batch)
		defer rec.Release()
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		catalogtest.Append(t, tbl, rec)
	}
	appendRows(20)
	appendRows(20)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	us := tx.UpdateSpec(true).RemoveField("b").RemoveField("s_trunc").RemoveField("ts_day").RemoveField("dec").
		RemoveField("f").RemoveField("u_bucket").RemoveField("fx").
		AddIdentity("i").AddField("l", iceberg.BucketTransform{NumBuckets: 3}, "l_bucket").
		AddField("dt", iceberg.MonthTransform{}, "dt_month").AddField("tstz", iceberg.HourTransform{}, "tstz_hour").
		AddIdentity("d").AddIdentity("tm").AddField("bin", iceberg.TruncateTransform{Width: 1}, "bin_trunc").
		AddField("ts", iceberg.YearTransform{}, "ts_year").AddField("b", iceberg.VoidTransform{}, "b_void")
	if err := us.Commit(); err != nil {
		t.Fatalf("evolve the partition spec: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("evolve the partition spec: %v", err)
	}
	appendRows(20)
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id", "l", "s", "dec", "u", "fx", "bin"}}); err != nil {
		t.Fatal(err)
	}
	appendRows(8) // not indexed: the index must keep its files
	return td, rows
}

// termName is a column name in a filter's JSON.
var termName = regexp.MustCompile(`"term":"[^"]*"`)

// otherCase writes the column names of a filter's JSON in random cases.
func otherCase(rng *rand.Rand, raw []byte) []byte {
	return termName.ReplaceAllFunc(raw, func(m []byte) []byte {
		out := []rune(string(m))
		for i := len(`"term":"`); i < len(out)-1; i++ {
			if rng.IntN(2) == 0 {
				out[i] = unicode.ToUpper(out[i])
			}
		}
		return []byte(string(out))
	})
}

// typedLeaf is a random predicate on a random column of typedSchema.
func typedLeaf(rng *rand.Rand, td typedDomain) iceberg.BooleanExpression {
	col := 1 + rng.IntN(len(typedSchema.Fields())-1)
	ref := iceberg.Reference(typedSchema.Fields()[col].Name)
	v := func() iceberg.Literal {
		for {
			// Java refuses NaN literals (is-nan is the predicate), and so
			// does serve's encoder.
			if val := td.value(rng, col); !wire.IsNaN(val) {
				return wire.LiteralOf(typedSchema.Fields()[col].Type, val)
			}
		}
	}
	switch k := rng.IntN(12); {
	case k == 0:
		return iceberg.IsNull(ref)
	case k == 1:
		return iceberg.NotNull(ref)
	case k == 2 && (col == 4 || col == 5):
		return iceberg.IsNaN(ref)
	case k == 3 && col == 11:
		return iceberg.StartsWith(ref, "ab")
	case k == 4 || k == 5:
		return iceberg.SetPredicate(iceberg.OpIn, ref, []iceberg.Literal{v(), v(), v()})
	case k == 6:
		return iceberg.SetPredicate(iceberg.OpNotIn, ref, []iceberg.Literal{v(), v()})
	case k == 7 && col != 1 && col != 12:
		return iceberg.LiteralPredicate(iceberg.OpLT, ref, v())
	case k == 8 && col != 1 && col != 12:
		return iceberg.LiteralPredicate(iceberg.OpGTEQ, ref, v())
	case k == 9:
		return iceberg.LiteralPredicate(iceberg.OpNEQ, ref, v())
	}
	return iceberg.LiteralPredicate(iceberg.OpEQ, ref, v())
}

func typedFilter(rng *rand.Rand, td typedDomain, depth int) iceberg.BooleanExpression {
	if depth == 0 || rng.IntN(3) == 0 {
		return typedLeaf(rng, td)
	}
	switch rng.IntN(5) {
	case 0:
		return iceberg.NewNot(typedFilter(rng, td, depth-1))
	case 1, 2:
		return iceberg.NewOr(typedFilter(rng, td, depth-1), typedFilter(rng, td, depth-1))
	}
	return iceberg.NewAnd(typedFilter(rng, td, depth-1), typedFilter(rng, td, depth-1))
}

// TestDifferentialEveryTransform plans random filters over every column of
// a table of every type, partitioned by every transform the type takes,
// across a partition evolution, in format versions 2 and 3, naming columns
// in other cases with case-sensitive false, and applies each task's
// residual to its file's rows as Java's reader does: the rows that pass
// are exactly the rows the filter holds for (the ground truth, evaluated
// by iceberg-go's row evaluator, which Java's residual evaluation follows),
// so every file holding such a row is planned and no residual is missing or
// weaker than the filter; serve never plans a file local planning does not.
func TestDifferentialEveryTransform(t *testing.T) {
	if testing.Short() {
		t.Skip("plans many filters over two tables")
	}
	for _, formatVersion := range []string{"2", "3"} {
		t.Run("v"+formatVersion, func(t *testing.T) {
			s := servetest.Seed(t)
			rng := rand.New(rand.NewPCG(s, s^0x5851f42d4c957f2d))
			cat := catalogtest.NewCatalog(t)
			td, rows := typedTable(t, cat, rng, formatVersion)
			ident := table.Identifier{"db", "typed"}
			load := func(ctx context.Context, ident table.Identifier) (*planning.Loaded, error) {
				tbl, err := cat.LoadTable(ctx, ident)
				return &planning.Loaded{Table: tbl}, err
			}
			p := planning.NewPlanner(load, planning.PlannerOptions{MemoryBudget: 64 << 20, TasksPerPage: 7})
			tbl, err := cat.LoadTable(context.Background(), ident)
			if err != nil {
				t.Fatal(err)
			}
			fileRows := map[string][]typedRow{}
			pruned := 0
			for n := range 120 {
				filter := typedFilter(rng, td, 2)
				bound, err := iceberg.BindExpr(typedSchema, filter, false)
				if err != nil {
					t.Fatalf("bind %s: %v", filter, err)
				}
				raw, err := wire.Expression(bound, nil)
				if err != nil {
					t.Fatalf("encode %s: %v", filter, err)
				}
				raw = otherCase(rng, raw)
				caseSensitive := false
				res, err := p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: raw, CaseSensitive: &caseSensitive})
				if err != nil {
					t.Fatalf("filter %d %s: %v", n, raw, err)
				}
				eval := sqlFilter(t, bound)
				var want []int64
				for _, r := range rows {
					if eval(r) == servetest.True {
						want = append(want, r[0].(int64))
					}
				}
				var got []int64
				planned := map[string]bool{}
				for _, page := range res.Pages {
					for _, task := range page.FileScanTasks {
						path := task.DataFile.FilePath
						planned[path] = true
						if len(task.ResidualFilter) == 0 || string(task.ResidualFilter) == "null" {
							t.Fatalf("filter %s: the task of %s has no residual", raw, path)
						}
						if string(task.ResidualFilter) == "false" {
							t.Fatalf("filter %s: the task of %s, whose partition rules the filter out, was sent", raw, path)
						}
						residual, err := iceberg.ParseExpr(task.ResidualFilter, typedSchema)
						if err != nil {
							t.Fatalf("filter %s: the residual %s of %s: %v", raw, task.ResidualFilter, path, err)
						}
						boundResidual, err := iceberg.BindExpr(typedSchema, residual, true)
						if err != nil {
							t.Fatalf("filter %s: the residual %s of %s: %v", raw, task.ResidualFilter, path, err)
						}
						keep := sqlFilter(t, boundResidual)
						if fileRows[path] == nil {
							fileRows[path] = readTypedRows(t, path)
						}
						for _, r := range fileRows[path] {
							if keep(r) == servetest.True {
								got = append(got, r[0].(int64))
							}
						}
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					for _, r := range rows {
						if id := r[0].(int64); slices.Contains(want, id) != slices.Contains(got, id) {
							t.Logf("row %v: in the truth %v", r, slices.Contains(want, id))
						}
					}
					residuals := map[string]string{}
					for _, page := range res.Pages {
						for _, task := range page.FileScanTasks {
							residuals[task.DataFile.FilePath] = string(task.ResidualFilter)
						}
					}
					local, _ := tbl.Scan(table.WithRowFilter(filter), table.WithCaseSensitive(false)).PlanFiles(context.Background())
					for _, task := range local {
						for _, r := range readTypedRows(t, task.File.FilePath()) {
							id := r[0].(int64)
							if slices.Contains(want, id) != slices.Contains(got, id) {
								res, planned := residuals[task.File.FilePath()]
								t.Logf("row %v in %s: planned %v, residual %s; local residual %v", r, task.File.FilePath(), planned, res, task.Residual)
							}
						}
					}
					t.Fatalf("filter %d %s: rows through serve's tasks and residuals %v, the filter holds for %v", n, raw, got, want)
				}
				local, err := lookup.PlanFiles(context.Background(), tbl, nil, filter, false)
				if err != nil {
					t.Fatalf("local plan of %s: %v", filter, err)
				}
				localFiles := map[string]bool{}
				for _, task := range local {
					localFiles[task.File.FilePath()] = true
				}
				for path := range planned {
					if !localFiles[path] {
						t.Fatalf("filter %s: serve planned %s, which local planning does not", raw, path)
					}
				}
				if len(planned) < len(localFiles) {
					pruned++
				}
			}
			t.Logf("120 filters over %d rows in %d files; the index pruned files for %d", len(rows), len(fileRows), pruned)
		})
	}
}

// sqlRows evaluates a bound filter on typedRows by SQL's three-valued
// logic, as engines do: a comparison, IN or NOT IN with NULL is unknown,
// and a row is read when the filter is true. NaN compares as IEEE 754 and
// Iceberg's metrics evaluators have it: unequal to every number, neither
// less nor greater (literals are never NaN here).
type sqlRows struct{}

func (sqlRows) VisitTrue() func(typedRow) servetest.Tri {
	return func(typedRow) servetest.Tri { return servetest.True }
}
func (sqlRows) VisitFalse() func(typedRow) servetest.Tri {
	return func(typedRow) servetest.Tri { return servetest.False }
}
func (sqlRows) VisitNot(c func(typedRow) servetest.Tri) func(typedRow) servetest.Tri {
	return func(r typedRow) servetest.Tri { return c(r).Not() }
}
func (sqlRows) VisitAnd(l, r func(typedRow) servetest.Tri) func(typedRow) servetest.Tri {
	return func(row typedRow) servetest.Tri { return min(l(row), r(row)) }
}
func (sqlRows) VisitOr(l, r func(typedRow) servetest.Tri) func(typedRow) servetest.Tri {
	return func(row typedRow) servetest.Tri { return max(l(row), r(row)) }
}
func (sqlRows) VisitUnbound(p iceberg.UnboundPredicate) func(typedRow) servetest.Tri {
	panic(fmt.Sprintf("unbound %s", p))
}
func (sqlRows) VisitBound(p iceberg.BoundPredicate) func(typedRow) servetest.Tri {
	id := p.Ref().Field().ID
	pos := slices.IndexFunc(typedSchema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id })
	return func(r typedRow) servetest.Tri {
		v := r[pos]
		switch p.Op() {
		case iceberg.OpIsNull:
			return servetest.TriOf(v == nil)
		case iceberg.OpNotNull:
			return servetest.TriOf(v != nil)
		}
		if v == nil {
			return servetest.Unknown
		}
		switch p.Op() {
		case iceberg.OpIsNan:
			return servetest.TriOf(wire.IsNaN(v))
		case iceberg.OpNotNan:
			return servetest.TriOf(!wire.IsNaN(v))
		case iceberg.OpIn, iceberg.OpNotIn:
			in := false
			for _, lit := range p.(iceberg.BoundSetPredicate).Literals().Members() {
				in = in || compareValue(v, lit) == 0 && !wire.IsNaN(v)
			}
			return servetest.TriOf(in == (p.Op() == iceberg.OpIn))
		}
		lit := p.(iceberg.BoundLiteralPredicate).Literal()
		c := compareValue(v, lit)
		nan := wire.IsNaN(v)
		switch p.Op() {
		case iceberg.OpEQ:
			return servetest.TriOf(c == 0 && !nan)
		case iceberg.OpNEQ:
			return servetest.TriOf(c != 0 || nan)
		case iceberg.OpLT:
			return servetest.TriOf(c < 0 && !nan)
		case iceberg.OpLTEQ:
			return servetest.TriOf(c <= 0 && !nan)
		case iceberg.OpGT:
			return servetest.TriOf(c > 0 && !nan)
		case iceberg.OpGTEQ:
			return servetest.TriOf(c >= 0 && !nan)
		case iceberg.OpStartsWith:
			return servetest.TriOf(strings.HasPrefix(v.(string), string(lit.(iceberg.StringLiteral))))
		case iceberg.OpNotStartsWith:
			return servetest.TriOf(!strings.HasPrefix(v.(string), string(lit.(iceberg.StringLiteral))))
		}
		panic(fmt.Sprintf("operator of %s", p))
	}
}

// compareValue orders a row's value and a literal of its column's type
// (NaN after every number; sqlRows reads NaN apart).
func compareValue(v any, lit iceberg.Literal) int {
	floats := func(a, b float64) int {
		switch {
		case a != a:
			return 1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	switch v := v.(type) {
	case bool:
		b := bool(lit.(iceberg.BoolLiteral))
		return cmp.Compare(btoi(v), btoi(b))
	case int32:
		return cmp.Compare(v, int32(lit.(iceberg.Int32Literal)))
	case int64:
		return cmp.Compare(v, int64(lit.(iceberg.Int64Literal)))
	case float32:
		return floats(float64(v), float64(lit.(iceberg.Float32Literal)))
	case float64:
		return floats(v, float64(lit.(iceberg.Float64Literal)))
	case iceberg.Decimal:
		l := iceberg.Decimal(lit.(iceberg.DecimalLiteral))
		return v.Val.Cmp(l.Val) // one scale: the column's
	case iceberg.Date:
		return cmp.Compare(v, iceberg.Date(lit.(iceberg.DateLiteral)))
	case iceberg.Time:
		return cmp.Compare(v, iceberg.Time(lit.(iceberg.TimeLiteral)))
	case iceberg.Timestamp:
		return cmp.Compare(v, iceberg.Timestamp(lit.(iceberg.TimestampLiteral)))
	case string:
		return strings.Compare(v, string(lit.(iceberg.StringLiteral)))
	case uuid.UUID:
		u := uuid.UUID(lit.(iceberg.UUIDLiteral))
		return bytes.Compare(v[:], u[:])
	case []byte:
		switch l := lit.(type) {
		case iceberg.FixedLiteral:
			return bytes.Compare(v, l)
		case iceberg.BinaryLiteral:
			return bytes.Compare(v, l)
		}
	}
	panic(fmt.Sprintf("compare a %T with %T", v, lit))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sqlFilter is a bound filter's truth for a row, evaluated as Java's
// Evaluator does it: with NOT pushed down to the predicates first (x >= 1
// negated is x < 1, which a NaN does not satisfy either, as Iceberg's
// metrics evaluators read it), then by sqlRows.
func sqlFilter(t *testing.T, bound iceberg.BooleanExpression) func(typedRow) servetest.Tri {
	rewritten, err := iceberg.RewriteNotExpr(bound)
	if err != nil {
		t.Fatalf("rewrite %s: %v", bound, err)
	}
	f, err := iceberg.VisitExpr[func(typedRow) servetest.Tri](rewritten, sqlRows{})
	if err != nil {
		t.Fatalf("evaluate %s: %v", bound, err)
	}
	return f
}

// TestBaseHoldsEveryIndexedColumn: the first lookup's base holds the
// statistics of every column the index covers, so that a lookup of another
// indexed column is warm at once rather than making the base again with
// both (which at 1,000,000 files held both bases at once, 331 MB live).
func TestBaseHoldsEveryIndexedColumn(t *testing.T) {
	s := servetest.Seed(t)
	rng := rand.New(rand.NewPCG(s, s^0x5851f42d4c957f2d))
	cat := catalogtest.NewCatalog(t)
	typedTable(t, cat, rng, "2")
	load := func(ctx context.Context, ident table.Identifier) (*planning.Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &planning.Loaded{Table: tbl}, err
	}
	p := planning.NewPlanner(load, planning.PlannerOptions{MemoryBudget: 64 << 20})
	for i, filter := range []string{`{"type":"eq","term":"id","value":3}`, `{"type":"eq","term":"l","value":5}`, `{"type":"eq","term":"s","value":"x"}`} {
		res, err := p.Plan(context.Background(), table.Identifier{"db", "typed"}, rest.PlanTableScanRequest{Filter: []byte(filter)})
		if err != nil || !res.FastPath {
			t.Fatalf("plan %s: %v (fast path %v)", filter, err, res != nil && res.FastPath)
		}
		st := p.Stats()
		if made := st.WarmMisses["base_made"]; made != 1 || len(st.WarmMisses) != 1 {
			t.Fatalf("after plan %d (%s): warm misses %v, want one base made", i+1, filter, st.WarmMisses)
		}
	}
}
