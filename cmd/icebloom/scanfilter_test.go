package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// typedColumn is a column of the types table, the SQL literal of one of
// its values, and the value of each row in a form Go orders as the column
// orders (nil for NULL): the oracle TestScanEveryTypeAndOperator checks
// scan against.
type typedColumn struct {
	name string
	lit  string
	rows []any // by id-1; int64, float64 or string
}

// typesTable makes db.types in the idTable's catalog: four rows of 13
// column types — boolean, int, long, float, double, decimal, date,
// timestamp, timestamptz, string, binary, a CamelCase column, and struct
// fields (a string and an int) — with NULLs, plus a list and a map that no
// comparison may name.
func typesTable(t testing.TB) (*idTable, []typedColumn) {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml of the machine's
	cat := catalogtest.NewCatalog(t)
	it := &idTable{cat: cat, global: []string{
		"--catalog", "sql",
		"--uri", "file:" + filepath.Join(filepath.Dir(cat.Warehouse), "catalog.db"),
		"--warehouse", "file://" + cat.Warehouse,
	}}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "r", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "amt", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 7, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 9, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 10, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 11, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 12, Name: "UserName", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 13, Name: "l", Type: &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 14, Name: "m", Type: &iceberg.MapType{KeyID: 21, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 22, ValueType: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 15, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 23, Name: "name", Type: iceberg.PrimitiveTypes.String},
			{ID: 24, Name: "k", Type: iceberg.PrimitiveTypes.Int32},
		}}},
	)
	tbl := it.cat.NewTable(t, "types", sc, iceberg.Properties{
		"write.parquet.bloom-filter-enabled.column.s":       "true",
		"write.parquet.bloom-filter-enabled.column.amt":     "true",
		"write.parquet.bloom-filter-enabled.column.st.name": "true",
	})
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(`[
{"id": 1, "flag": true, "n": 7, "r": 1.5, "d": 2.5, "amt": "1.50", "day": "2024-01-31", "ts": "2024-01-31 10:00:00",
 "tstz": "2024-01-31 10:00:00Z", "s": "b", "bin": "AP8=", "UserName": "ann", "l": [1], "m": [{"key": "k", "value": 1}],
 "st": {"name": "x", "k": 1}},
{"id": 2, "flag": false, "n": 3, "r": -1, "d": 9, "amt": "-0.05", "day": "2023-05-01", "ts": "2023-05-01 00:00:00",
 "tstz": "2023-05-01 00:00:00Z", "s": "a", "bin": "AQ==", "UserName": "bob", "st": {"name": "y", "k": 2}},
{"id": 3, "flag": true, "n": 9, "r": 4, "d": -3, "amt": "12.00", "day": "2025-12-24", "ts": "2025-12-24 23:59:59",
 "tstz": "2025-12-24 23:59:59Z", "s": "c", "bin": "/w==", "UserName": "cy", "st": {"name": null, "k": 3}},
{"id": 4}
]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	it.tbl = catalogtest.Append(t, tbl, rec)
	if _, stderr, code := icebloomTB(t, it.args("build", "db.types")...); code != 0 {
		t.Fatalf("build db.types: exit %d: %s", code, stderr)
	}
	cols := []typedColumn{
		{"flag", "true", []any{int64(1), int64(0), int64(1), nil}},
		{"n", "7", []any{int64(7), int64(3), int64(9), nil}},
		{"r", "1.5", []any{1.5, -1.0, 4.0, nil}},
		{"d", "2.5", []any{2.5, 9.0, -3.0, nil}},
		{"amt", "1.50", []any{int64(150), int64(-5), int64(1200), nil}},
		{"day", "DATE '2024-01-31'", []any{"2024-01-31", "2023-05-01", "2025-12-24", nil}},
		{"ts", "TIMESTAMP '2024-01-31 10:00:00'", []any{"2024-01-31 10:00:00", "2023-05-01 00:00:00", "2025-12-24 23:59:59", nil}},
		{"tstz", "TIMESTAMPTZ '2024-01-31 10:00:00Z'", []any{"2024-01-31 10:00:00", "2023-05-01 00:00:00", "2025-12-24 23:59:59", nil}},
		{"s", "'b'", []any{"b", "a", "c", nil}},
		{"bin", "X'00ff'", []any{"\x00\xff", "\x01", "\xff", nil}},
		{"UserName", "'ann'", []any{"ann", "bob", "cy", nil}},
		{"st.name", "'x'", []any{"x", "y", nil, nil}},
		{"st.k", "1", []any{int64(1), int64(2), int64(3), nil}},
	}
	return it, cols
}

// compareAny orders two oracle values of the same Go type.
func compareAny(a, b any) int {
	switch a := a.(type) {
	case int64:
		return int(a - b.(int64))
	case float64:
		switch b := b.(float64); {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	return strings.Compare(a.(string), b.(string))
}

// oracle returns the ids of the rows where col op lit holds, as SQL's
// WHERE keeps them: a comparison with NULL is never true.
func oracle(col typedColumn, op string) []int64 {
	lit := col.rows[0] // every literal is row 1's value
	var ids []int64
	for i, v := range col.rows {
		var keep bool
		switch op {
		case "IS NULL":
			keep = v == nil
		case "IS NOT NULL":
			keep = v != nil
		default:
			if v == nil {
				continue
			}
			c := compareAny(v, lit)
			switch op {
			case "=", "IN":
				keep = c == 0
			case "!=", "NOT IN":
				keep = c != 0
			case "<":
				keep = c < 0
			case "<=":
				keep = c <= 0
			case ">":
				keep = c > 0
			case ">=":
				keep = c >= 0
			}
		}
		if keep {
			ids = append(ids, int64(i+1))
		}
	}
	return ids
}

// TestScanEveryTypeAndOperator scans a table of 13 column types with every
// operator on each, through the command line, and compares the rows with
// the oracle's: no panic (iceberg-go's row filter panicked on IS [NOT] NULL
// of a decimal, failed on boolean <, <=, >=, and found 0 of 2 rows for a
// string field in a struct), no error, the same ids with and without the
// index, in either case of the column's name. A list or map column is
// refused with an error naming it.
func TestScanEveryTypeAndOperator(t *testing.T) {
	it, cols := typesTable(t)
	ops := []string{"=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN", "IS NULL", "IS NOT NULL"}
	for _, col := range cols {
		for _, op := range ops {
			var where string
			switch op {
			case "IS NULL", "IS NOT NULL":
				where = col.name + " " + op
			case "IN", "NOT IN":
				where = fmt.Sprintf("%s %s (%s)", col.name, op, col.lit)
			default:
				where = fmt.Sprintf("%s %s %s", col.name, op, col.lit)
			}
			want := oracle(col, op)
			for _, args := range [][]string{
				{"scan", "db.types", "--where", where},
				{"scan", "db.types", "--where", strings.ToUpper(where[:1]) + where[1:], "--no-index"},
			} {
				stdout, stderr, code := icebloom(t, it.args(append([]string{"--output", "json"}, args...)...)...)
				if code != 0 {
					t.Errorf("%q: exit %d: %s", args, code, lastLine(stderr))
					continue
				}
				var out ScanOutput
				if err := json.Unmarshal([]byte(stdout), &out); err != nil {
					t.Fatalf("%q: %v: %s", args, err, stdout)
				}
				var got []int64
				for _, row := range out.Rows {
					got = append(got, int64(row["id"].(float64)))
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%q: ids %v, want %v", args, got, want)
				}
			}
		}
	}
	for _, where := range []string{"l = 1", "m IS NULL", "m = 'k'"} {
		_, stderr, code := icebloom(t, it.args("scan", "db.types", "--where", where)...)
		if code != 1 || !strings.Contains(stderr, where[:1]) {
			t.Errorf("%q: exit %d, want 1 with an error naming the column: %s", where, code, stderr)
		}
	}
}

// TestScanBindsAsLookup: scan finds a column whatever the case of its name,
// as lookup does (scan said "ID: no such column" where lookup planned).
func TestScanBindsAsLookup(t *testing.T) {
	it := newIDTable(t, 2)
	for _, cmd := range []string{"lookup", "scan"} {
		stdout, stderr, code := icebloom(t, it.args("--output", "json", cmd, "db.ids", "--where", "ID = 11")...)
		if code != 0 {
			t.Fatalf("%s ID = 11: exit %d: %s", cmd, code, stderr)
		}
		if cmd == "scan" {
			var out ScanOutput
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out.Rows) != 1 || out.Rows[0]["id"] != 11.0 {
				t.Errorf("scan ID = 11: %s (%v), want the row of id 11", stdout, err)
			}
		}
	}
}

// icebloomTB is icebloom for a fuzz target's setup.
func icebloomTB(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// FuzzScanFilter runs scan end to end — parse, bind, plan with the index,
// read — with fuzzed filters on the types table: no input may crash it
// (iceberg-go's row filter panicked on decimal null tests), every input
// either scans (exit 0) or is refused with an error (exit 1, or 2 for a
// filter that does not parse: a usage error), and the index never changes
// the rows.
func FuzzScanFilter(f *testing.F) {
	it, cols := typesTable(f)
	for _, c := range cols {
		f.Add(c.name + " = " + c.lit)
		f.Add(c.name + " IS NOT NULL OR " + c.name + " < " + c.lit)
		f.Add("NOT (" + c.name + " IN (" + c.lit + ", " + c.lit + ")) AND id > 1")
	}
	f.Add("amt IS NULL")
	f.Add("st.name BETWEEN 'a' AND 'z' OR flag <= false")
	f.Add("l = 1")
	f.Add("0") // a syntax error: exit 2
	f.Fuzz(func(t *testing.T, where string) {
		if where == "" {
			return // no --where at all: a usage error (exit 2)
		}
		rows := func(args ...string) (string, int) {
			stdout, stderr, code := icebloom(t, it.args(append([]string{"--output", "json", "scan", "db.types", "--where=" + where}, args...)...)...)
			if code != 0 && code != 1 && code != 2 || strings.Contains(stderr, "internal error") {
				t.Fatalf("scan --where %q %v: exit %d: %s", where, args, code, stderr)
			}
			var out ScanOutput
			if code == 0 {
				if err := json.Unmarshal([]byte(stdout), &out); err != nil {
					t.Fatalf("scan --where %q: %v: %s", where, err, stdout)
				}
			}
			b, _ := json.Marshal(out.Rows)
			return string(b), code
		}
		withIndex, code := rows()
		if code != 0 {
			return
		}
		if without, _ := rows("--no-index"); without != withIndex {
			t.Errorf("scan --where %q: rows with the index %s, without %s", where, withIndex, without)
		}
	})
}

// TestScanHalfNullRowGroup: a row group holding as many NULLs as values
// of a column is not skipped. iceberg-go v0.7.0's row-group pruning takes
// arrow-go's non-null value count for Iceberg's value count (which counts
// NULLs too), so such a row group looks all-NULL and was skipped for =,
// IN, <, >=, IS NOT NULL and the like: scan found no row of it.
func TestScanHalfNullRowGroup(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml of the machine's
	cat := catalogtest.NewCatalog(t)
	it := &idTable{cat: cat, global: []string{
		"--catalog", "sql",
		"--uri", "file:" + filepath.Join(filepath.Dir(cat.Warehouse), "catalog.db"),
		"--warehouse", "file://" + cat.Warehouse,
	}}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Int64},
	)
	tbl := it.cat.NewTable(t, "halfnull", sc, nil)
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(`[{"id": 1, "v": 5}, {"id": 2}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	catalogtest.Append(t, tbl, rec)
	for _, where := range []string{"v = 5", "v IN (5, 6)", "v < 6", "v <= 5", "v > 4", "v >= 5", "v IS NOT NULL", "v = 5 AND id = 1"} {
		stdout, stderr, code := icebloom(t, it.args("--output", "json", "scan", "db.halfnull", "--where", where)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", where, code, lastLine(stderr))
		}
		var out ScanOutput
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%s: %v: %s", where, err, stdout)
		}
		if len(out.Rows) != 1 || out.Rows[0]["id"] != 1.0 {
			t.Errorf("scan --where %q: rows %v, want the row of id 1", where, out.Rows)
		}
	}
}
