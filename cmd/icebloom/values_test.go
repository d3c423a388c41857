package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/cmd/icebloom/internal/rowformat"
)

// allTypes makes db.all in the idTable's catalog: one data file whose rows
// hold a value of every Iceberg type, nested ones included, a row of
// NULLs, and doubles fmt would print with an exponent or JSON cannot hold.
func allTypes(t *testing.T) *idTable {
	t.Helper()
	it := newIDTable(t, 1)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 6, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "tod", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 9, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 10, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 11, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 12, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 13, Name: "fx", Type: iceberg.FixedTypeOf(2)},
		iceberg.NestedField{ID: 14, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 15, Name: "l", Type: &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 16, Name: "m", Type: &iceberg.MapType{KeyID: 21, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 22, ValueType: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 17, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 23, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 24, Name: "z", Type: &iceberg.ListType{ElementID: 25, Element: iceberg.PrimitiveTypes.String}},
		}}},
		iceberg.NestedField{ID: 18, Name: "mi", Type: &iceberg.MapType{KeyID: 26, KeyType: iceberg.PrimitiveTypes.Int32,
			ValueID: 27, ValueType: iceberg.DecimalTypeOf(9, 2)}},
	)
	tbl := it.cat.NewTable(t, "all", sc, nil)
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(`[
{"id": 1, "i": 7, "f": 0.1, "d": 0.00001, "dec": "1.50", "day": "2024-01-31", "tod": "10:00:00.123456",
 "ts": "2024-01-31 10:00:00.5", "tstz": "2024-01-31 10:00:00.123456Z", "s": "héllo", "u": "f79c3e09-677c-4ea1-9a4c-7a4a5c6a1b2c",
 "bin": "AP8=", "fx": "AP8=", "b": true, "l": [1, 2, null], "m": [{"key": "k", "value": 1}, {"key": "k2", "value": null}],
 "st": {"a": 1, "z": ["x", "y"]}, "mi": [{"key": 3, "value": "-0.05"}]},
{"id": 2, "d": 1234567, "dec": "-0.05", "l": [], "m": []},
{"id": 3, "d": 1e21, "f": 1e-5, "dec": "12", "st": {"a": null, "z": null}},
{"id": 4, "d": "NaN", "f": "-Inf"},
{"id": 5, "s": "a\tb\nc\\d", "l": []}
]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	catalogtest.Append(t, tbl, rec)
	return it
}

// TestScanPrintsValuesAsSQL: scan's text output prints every type as the
// Trino CLI does — lists [1, 2], maps {k=v}, structs {a=1}, decimals with
// their scale, NULL, timestamps with the column's precision — doubles as
// typed (0.1, 1234567.0 — a whole double with its ".0" — an exponent only for 1e+21), binary as X'00ff';
// strings stay on their line and column (tab, newline and backslash
// escaped); its JSON keeps numbers numbers (decimals exact, with their scale), lists
// arrays, maps with string keys and structs objects, and writes what JSON
// has no number for as strings instead of failing.
func TestScanPrintsValuesAsSQL(t *testing.T) {
	it := allTypes(t)
	stdout, stderr, code := icebloom(t, it.args("scan", "db.all", "--where", "id > 0")...)
	if code != 0 {
		t.Fatalf("scan exited %d: %s", code, stderr)
	}
	want := []string{
		"id\ti\tf\td\tdec\tday\ttod\tts\ttstz\ts\tu\tbin\tfx\tb\tl\tm\tst\tmi",
		"1\t7\t0.1\t0.00001\t1.50\t2024-01-31\t10:00:00.123456\t2024-01-31 10:00:00.500000\t2024-01-31 10:00:00.123456 UTC\théllo\t" +
			"f79c3e09-677c-4ea1-9a4c-7a4a5c6a1b2c\tX'00ff'\tX'00ff'\ttrue\t[1, 2, NULL]\t{k=1, k2=NULL}\t{a=1, z=[x, y]}\t{3=-0.05}",
		"2\tNULL\tNULL\t1234567.0\t-0.05\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\t[]\t{}\tNULL\tNULL",
		"3\tNULL\t0.00001\t1e+21\t12.00\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\t{a=NULL, z=NULL}\tNULL",
		"4\tNULL\t-Infinity\tNaN\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL",
		"5\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL\ta\\tb\\nc\\\\d\tNULL\tNULL\tNULL\tNULL\t[]\tNULL\tNULL\tNULL",
	}
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("scan text output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	stdout, stderr, code = icebloom(t, it.args("--output", "json", "scan", "db.all", "--where", "id > 0")...)
	if code != 0 {
		t.Fatalf("scan --output json exited %d: %s", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber() // to see the digits as written
	var out struct {
		Rows      []map[string]any `json:"rows"`
		Truncated *bool            `json:"truncated"`
	}
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("scan JSON %s: %v", stdout, err)
	}
	n := func(s string) json.Number { return json.Number(s) }
	wantRows := []map[string]any{
		{"id": n("1"), "i": n("7"), "f": n("0.1"), "d": n("0.00001"), "dec": n("1.50"), "day": "2024-01-31", "tod": "10:00:00.123456",
			"ts": "2024-01-31T10:00:00.500000", "tstz": "2024-01-31T10:00:00.123456Z", "s": "héllo",
			"u": "f79c3e09-677c-4ea1-9a4c-7a4a5c6a1b2c", "bin": "00ff", "fx": "00ff", "b": true,
			"l": []any{n("1"), n("2"), nil}, "m": map[string]any{"k": n("1"), "k2": nil},
			"st": map[string]any{"a": n("1"), "z": []any{"x", "y"}}, "mi": []any{map[string]any{"key": n("3"), "value": n("-0.05")}}},
		{"id": n("2"), "d": n("1234567.0"), "dec": n("-0.05"), "l": []any{}, "m": map[string]any{}},
		{"id": n("3"), "d": n("1e+21"), "f": n("0.00001"), "dec": n("12.00"), "st": map[string]any{"a": nil, "z": nil}},
		{"id": n("4"), "d": "NaN", "f": "-Infinity"},
		{"id": n("5"), "s": "a\tb\nc\\d", "l": []any{}},
	}
	for i, row := range wantRows {
		for _, col := range []string{"i", "f", "d", "dec", "day", "tod", "ts", "tstz", "s", "u", "bin", "fx", "b", "l", "m", "st", "mi"} {
			if _, ok := row[col]; !ok {
				row[col] = nil
			}
		}
		if i >= len(out.Rows) || !reflect.DeepEqual(out.Rows[i], row) {
			t.Errorf("JSON row %d:\n%#v\nwant\n%#v", i, out.Rows, row)
			break
		}
	}
	if out.Truncated == nil || *out.Truncated {
		t.Errorf("JSON truncated = %v, want false: 5 rows under the default --limit", out.Truncated)
	}
}

// TestFloatText: floats as typed, exponents only beyond 1e21 and under
// 1e-6, a float as the float it is (not its widening to a double).
func TestFloatText(t *testing.T) {
	for _, c := range []struct {
		v    float64
		bits int
		want string
	}{
		{0.1, 64, "0.1"}, {1e-5, 64, "0.00001"}, {0.000001, 64, "0.000001"}, {1e-7, 64, "1e-07"},
		{1234567, 64, "1234567"}, {1e20, 64, "100000000000000000000"}, {1e21, 64, "1e+21"},
		{-2.5, 64, "-2.5"}, {0, 64, "0"}, {math.Nextafter(0.3, 1), 64, "0.30000000000000004"},
		{float64(float32(0.1)), 32, "0.1"}, {float64(float32(1e-5)), 32, "0.00001"}, {float64(float32(16777216)), 32, "16777216"},
		{math.NaN(), 64, "NaN"}, {math.Inf(1), 64, "Infinity"}, {math.Inf(-1), 32, "-Infinity"},
	} {
		if got := rowformat.FloatText(c.v, c.bits); got != c.want {
			t.Errorf("rowformat.FloatText(%v, %d) = %q, want %q", c.v, c.bits, got, c.want)
		}
	}
}

// TestScanLimitSaysWhenItTruncates: with more matching rows than the
// limit, text output prints that many rows, and JSON says "truncated":
// true; a warning record says more rows match only when the limit is the
// default one, not one given with --limit (an explicit --limit 5 warned
// too); at or under the limit neither says anything.
func TestScanLimitSaysWhenItTruncates(t *testing.T) {
	it := newIDTable(t, 3) // 9 rows
	var many []int64
	for id := range int64(101) {
		many = append(many, 1000+id)
	}
	catalogtest.AppendIDs(t, it.tbl, many...) // 110 rows in all
	for _, c := range []struct {
		limit     []string
		rows      int
		truncated bool
		notice    bool
	}{
		{[]string{"--limit", "8"}, 8, true, false},
		{[]string{"--limit", "110"}, 110, false, false},
		{[]string{"--limit", "1"}, 1, true, false},
		{[]string{"--limit", "0"}, 110, false, false},
		{nil, defaultScanLimit, true, true},
	} {
		stdout, stderr, code := icebloom(t, it.args(append([]string{"scan", "db.ids", "--where", "id >= 0"}, c.limit...)...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", c.limit, code, stderr)
		}
		if got := strings.Count(stdout, "\n") - 1; got != c.rows {
			t.Errorf("%v: %d rows printed, want %d:\n%s", c.limit, got, c.rows, stdout)
		}
		records := logRecords(t, stderr)
		notices := find(records, "more rows match: output cut at the default limit (--limit 0 prints all)")
		if c.notice != (len(notices) == 1) || len(notices) > 1 {
			t.Errorf("%v: %d truncation notices, want %v: %s", c.limit, len(notices), c.notice, stderr)
		}
		if len(notices) == 1 && (notices[0]["level"] != "WARN" || notices[0]["limit"] != float64(defaultScanLimit)) {
			t.Errorf("%v: notice %v", c.limit, notices[0])
		}
		done := find(records, "scan done")
		if len(done) != 1 || done[0]["rows"] != float64(c.rows) || done[0]["table"] != "db.ids" {
			t.Errorf("%v: scan done records %v", c.limit, done)
		}

		stdout, stderr, code = icebloom(t, it.args(append([]string{"--output", "json", "scan", "db.ids", "--where", "id >= 0"}, c.limit...)...)...)
		var out ScanOutput
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
			t.Fatalf("%v --output json: exit %d, %s %s", c.limit, code, stdout, stderr)
		}
		if len(out.Rows) != c.rows || out.Truncated != c.truncated || !bytes.Contains([]byte(stdout), []byte(`"truncated"`)) {
			t.Errorf("%v --output json: %d rows, truncated %v; want %d, %v", c.limit, len(out.Rows), out.Truncated, c.rows, c.truncated)
		}
		if strings.Contains(stderr, "more rows match") {
			t.Errorf("%v --output json: a notice on stderr besides the field: %s", c.limit, stderr)
		}
	}
}

// BenchmarkScanCells measures rendering the quickstart's four columns
// (long, string, uuid, double) for scan's text and JSON output, per row,
// against what scan did before: fmt.Sprint of arrow's GetOneForMarshal.
//
//	go test ./cmd/icebloom -run '^$' -bench ScanCells
func BenchmarkScanCells(b *testing.B) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "order_id", Type: iceberg.PrimitiveTypes.UUID, Required: true},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64, Required: true},
	)
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	const rows = 10_000
	rec := randomEvents(as, rand.New(rand.NewPCG(1, 2)), rows)
	defer rec.Release()
	for _, c := range []struct {
		name string
		cell func(arrow.Array, int) any
	}{
		{"text", func(a arrow.Array, i int) any { return rowformat.ValueText(a, i) }},
		{"json", rowformat.ValueJSON},
		{"before:fmt.Sprint", func(a arrow.Array, i int) any { return fmt.Sprint(a.GetOneForMarshal(i)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for i := range rows {
					for _, col := range rec.Columns() {
						c.cell(col, i)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
}
