package rowscan

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/where"
)

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "amt", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 3, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 4, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 5, Name: "name", Type: iceberg.PrimitiveTypes.String}}}},
)

func bound(t *testing.T, filter string) iceberg.BooleanExpression {
	t.Helper()
	expr, err := where.Parse(filter)
	if err != nil {
		t.Fatal(err)
	}
	b, err := where.Bind(testSchema, expr, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSplit: the conjuncts iceberg-go's reader evaluates correctly are
// pushed down, unbound with full names; decimal null tests, ordered
// booleans and sets of them, struct fields, NOT IN on an optional column
// and the predicates on optional columns that its row-group pruning gets
// wrong (prunesAllNull), judged after NOT is rewritten away (NOT (amt !=
// 1.5) is amt = 1.5), stay local, and an OR with a local side stays local
// whole.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		filter      string
		push, local bool
		fields      []int
	}{
		{"ID = 1", true, false, nil},
		{"amt IS NULL", false, true, []int{2}},
		{"amt > 1.5 AND id < 3", true, true, []int{2}},
		{"amt != 1.5 AND id < 3", true, false, nil},
		{"flag < true AND id = 2", true, true, []int{3}},
		{"flag = true", false, true, []int{3}},
		{"flag != true", true, false, nil},
		{"st.name = 'x' OR id = 1", false, true, []int{5, 1}},
		{"NOT (amt IS NOT NULL)", false, true, []int{2}},
		{"amt NOT IN (1.5, 2.5)", false, true, []int{2}},
		{"id NOT IN (1, 2)", true, false, nil},
		{"NOT (amt != 1.5)", false, true, []int{2}},
		{"NOT (id != 1) AND NOT (amt = 1.5)", true, false, nil},
		{"flag IN (true, false)", false, true, []int{3}},
	} {
		push, local, fields, err := Split(testSchema, bound(t, c.filter))
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		if (push != nil) != c.push || (local != nil) != c.local || len(fields) != len(c.fields) {
			t.Errorf("%s: push %v, local %v, fields %v", c.filter, push, local, fields)
		}
		if push != nil {
			if _, err := iceberg.BindExpr(testSchema, push, true); err != nil {
				t.Errorf("%s: the pushed part %v does not bind case-sensitively: %v", c.filter, push, err)
			}
		}
	}
}

// TestLocalFilterIsSQL: the local evaluation follows SQL's three-valued
// logic: a comparison with NULL keeps no row, nor does its NOT; IS NULL
// does; a NULL struct holds NULL fields.
func TestLocalFilterIsSQL(t *testing.T) {
	as, err := table.SchemaToArrowSchema(testSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(`[
{"id": 1, "amt": "1.50", "flag": true, "st": {"name": "x"}},
{"id": 2, "flag": false, "st": {"name": null}},
{"id": 3}
]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	positions := []int{0, 1, 2, 3}
	for filter, want := range map[string]string{
		"amt IS NULL":                "23",
		"amt IS NOT NULL":            "1",
		"st.name != 'x'":             "",
		"NOT (st.name = 'x')":        "",
		"st.name IS NULL":            "23",
		"flag < true":                "2",
		"flag <= true OR amt > 0":    "12",
		"NOT (flag >= true)":         "2",
		"st.name IN ('x', 'y')":      "1",
		"st.name NOT IN ('y')":       "1",
		"amt >= 1.5 AND flag = true": "1",
		"amt NOT IN (1.5, 2.5)":      "",
		"NOT (amt IN (2.5, 3))":      "1",
		"flag NOT IN (true, false)":  "",
	} {
		test, err := compile(bound(t, filter))
		if err != nil {
			t.Fatalf("%s: %v", filter, err)
		}
		var got strings.Builder
		for i := range int(rec.NumRows()) {
			if test(&recordRow{rec: rec, positions: positions, i: i}) == yes {
				got.WriteString(string(rune('1' + i)))
			}
		}
		if got.String() != want {
			t.Errorf("%s: rows %q, want %q", filter, got.String(), want)
		}
	}
}
