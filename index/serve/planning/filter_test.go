package planning

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apache/iceberg-go"
)

var filterSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 3, Name: "fx", Type: iceberg.FixedTypeOf(2)},
	iceberg.NestedField{ID: 4, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 5, Name: "Ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 6, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 7, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
	}}},
)

// TestFilterBoundBeforeLiterals: a filter naming its columns in another
// case than the schema's, case-insensitively, gets the literals its columns
// type: a binary column's hex string is those bytes (not the bytes of its
// ASCII text, which pruned files of matching rows), a fixed column's too,
// a date string a date; the same as the schema's own names give.
func TestFilterBoundBeforeLiterals(t *testing.T) {
	for _, tc := range []struct{ exact, other string }{
		{`{"type":"lt-eq","term":"bin","value":"F923"}`, `{"type":"lt-eq","term":"BIN","value":"F923"}`},
		{`{"type":"eq","term":"fx","value":"0A0B"}`, `{"type":"eq","term":"Fx","value":"0A0B"}`},
		{`{"type":"in","term":"bin","values":["00","FF"]}`, `{"type":"in","term":"Bin","values":["00","FF"]}`},
		{`{"type":"eq","term":"day","value":"2022-01-09"}`, `{"type":"eq","term":"DAY","value":"2022-01-09"}`},
		{`{"type":"gt","term":"Ts","value":"2022-01-09T10:30:00.000000+00:00"}`, `{"type":"gt","term":"ts","value":"2022-01-09T10:30:00.000000+00:00"}`},
		{`{"type":"eq","term":"s.x","value":5}`, `{"type":"eq","term":"S.X","value":5}`},
		{`{"type":"not","child":{"type":"eq","term":"bin","value":"F9"}}`, `{"type":"not","child":{"type":"eq","term":"bIn","value":"F9"}}`},
		{`{"type":"eq","term":{"type":"transform","transform":"bucket[4]","term":"id"},"value":1}`, `{"type":"eq","term":{"type":"transform","transform":"bucket[4]","term":"ID"},"value":1}`},
	} {
		want, err := parseFilter([]byte(tc.exact), filterSchema, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.exact, err)
		}
		got, err := parseFilter([]byte(tc.other), filterSchema, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.other, err)
		}
		wantBound, err := iceberg.BindExpr(filterSchema, want, true)
		if err != nil {
			t.Fatal(err)
		}
		gotBound, err := iceberg.BindExpr(filterSchema, got, false)
		if err != nil {
			t.Fatal(err)
		}
		if !gotBound.Equals(wantBound) {
			t.Errorf("%s case-insensitively is %s, want %s", tc.other, gotBound, wantBound)
		}
	}
	// Case-sensitively, another case is no column.
	if _, err := parseFilter([]byte(`{"type":"eq","term":"BIN","value":"F9"}`), filterSchema, true); err == nil || !strings.Contains(err.Error(), `"BIN"`) {
		t.Errorf("case-sensitive BIN: %v, want an error naming the column", err)
	}
}

// TestFilterForms: the deprecated constants are read, and a filter past
// the depth, node or value limits is a bad request naming the limit,
// without iceberg-go's parser seeing it.
func TestFilterForms(t *testing.T) {
	for raw, want := range map[string]iceberg.BooleanExpression{
		`{"type":"true"}`:                  iceberg.AlwaysTrue{},
		`{"type":"false"}`:                 iceberg.AlwaysFalse{},
		`true`:                             iceberg.AlwaysTrue{},
		`{"type":"literal","value":false}`: iceberg.AlwaysFalse{},
		`{"type":"and","left":{"type":"true"},"right":{"type":"not-null","term":"id"}}`: iceberg.NotNull(iceberg.Reference("id")),
		``: iceberg.AlwaysTrue{},
	} {
		got, err := parseFilter([]byte(raw), filterSchema, true)
		if err != nil || !got.Equals(want) {
			t.Errorf("%s: %v, %v; want %v", raw, got, err, want)
		}
	}
	leaf := `{"type":"eq","term":"id","value":1}`
	deep := leaf
	for range MaxFilterDepth + 1 {
		deep = `{"type":"not","child":` + deep + `}`
	}
	var balanced func(leaves int) string // a tree of ORs as shallow as it can be
	balanced = func(leaves int) string {
		if leaves == 1 {
			return leaf
		}
		return `{"type":"or","left":` + balanced(leaves/2) + `,"right":` + balanced(leaves-leaves/2) + `}`
	}
	wide := balanced(MaxFilterNodes/2 + 1)
	if _, err := parseFilter([]byte(balanced(MaxFilterNodes/2)), filterSchema, true); err != nil {
		t.Fatalf("a filter of %d nodes: %v", MaxFilterNodes-1, err)
	}
	many := make([]string, MaxFilterValues/2+1)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	in := `{"type":"in","term":"id","values":[` + strings.Join(many, ",") + `]}`
	manyValues := `{"type":"or","left":` + in + `,"right":` + in + `}`
	deeper := leaf
	for range 10_001 { // past encoding/json's own limit
		deeper = `{"type":"not","child":` + deeper + `}`
	}
	for name, raw := range map[string]string{"deep": deep, "deeper": deeper, "wide": wide, "values": manyValues} {
		_, err := parseFilter([]byte(raw), filterSchema, true)
		var bad *RequestError
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), "the most a filter may have") {
			t.Errorf("%s filter: %v, want a bad request naming the limit", name, err)
		}
	}
}

// TestCheckFilterReader: the look at a body as it arrives refuses an IN
// past MaxFilterValues and nesting past the filter's depth, with the
// filter parser's messages, and passes everything else through unchanged
// (values of other keys, brackets and "values" in strings, an IN at the
// limit).
func TestCheckFilterReader(t *testing.T) {
	in := func(n int) string {
		return `{"filter":{"type":"in","term":"id","values":[1` + strings.Repeat(", 1", n-1) + `]}}`
	}
	deep := strings.Repeat(`{"type":"not","child":`, MaxFilterDepth+10) + `true` + strings.Repeat(`}`, MaxFilterDepth+10)
	for _, c := range []struct {
		body, err string
	}{
		{in(MaxFilterValues), ""},
		{in(MaxFilterValues + 1), "more than 100000 values"},
		{`{"select":[` + strings.Repeat(`"a",`, MaxFilterValues) + `"a"],"filter":{"type":"eq","term":"values","value":"[values,,,]"}}`, ""},
		{`{"filter":{"type":"in","term":"s","values":["a,b", "[", "\"values\":[1,2]"]}}`, ""},
		{`{"filter":` + deep + `}`, "nested deeper than 100"},
	} {
		out, err := io.ReadAll(CheckFilterReader(iotest.OneByteReader(strings.NewReader(c.body))))
		var bad *RequestError
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%.80s: %v, want it passed", c.body, err)
		case c.err == "" && string(out) != c.body:
			t.Errorf("%.80s: read %.80s, want it unchanged", c.body, out)
		case c.err != "" && (!errors.As(err, &bad) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%.80s: %v, want a RequestError saying %q", c.body, err, c.err)
		}
	}
}

// TestRequestWorkBytesMeasured: what the server holds for a request's
// filter while its plan is made (RequestWorkBytes) is at least what the
// filter holds then — parsed, and bound by the lookup and for the
// residuals (an IN this long is past lookup.MaxTestValues: no fast path)
// — for an IN of MaxFilterValues longs, and not more than twice that. It
// runs alone in its process (measureAlone).
func TestRequestWorkBytesMeasured(t *testing.T) {
	if !measureAlone(t) {
		return
	}
	schema := filterSchema
	var b strings.Builder
	b.WriteString(`{"type":"in","term":"id","values":[`)
	for i := range MaxFilterValues {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(1_000_000_007 * (i + 1)))
	}
	b.WriteString(`]}`)
	raw := []byte(b.String())
	before := liveHeap()
	filter, err := parseFilter(raw, schema, true)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := iceberg.BindExpr(schema, filter, true)
	if err != nil {
		t.Fatal(err)
	}
	again, err := iceberg.BindExpr(schema, filter, true) // lookup's, beside the residuals'
	if err != nil {
		t.Fatal(err)
	}
	held := int64(liveHeap()) - int64(before)
	runtime.KeepAlive(filter)
	runtime.KeepAlive(bound)
	runtime.KeepAlive(again)
	charged := RequestWorkBytes(int64(len(raw)))
	t.Logf("an IN of %d longs, %d bytes: held %d (%.1f a byte), charged %d", MaxFilterValues, len(raw), held, float64(held)/float64(len(raw)), charged)
	checkCharged(t, fmt.Sprintf("a filter of %d bytes, while planned,", len(raw)), charged, held)
}
