package wire

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// exprSchema has a column of every primitive type and one nested column.
var exprSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "c_boolean", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 2, Name: "c_int", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 3, Name: "c_long", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 4, Name: "c_float", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 5, Name: "c_double", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 6, Name: "c_decimal", Type: iceberg.DecimalTypeOf(9, 4)},
	iceberg.NestedField{ID: 7, Name: "c_date", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 8, Name: "c_time", Type: iceberg.PrimitiveTypes.Time},
	iceberg.NestedField{ID: 9, Name: "c_timestamp", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 10, Name: "c_timestamptz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 11, Name: "c_timestamp_ns", Type: iceberg.PrimitiveTypes.TimestampNs},
	iceberg.NestedField{ID: 12, Name: "c_timestamptz_ns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
	iceberg.NestedField{ID: 13, Name: "c_string", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 14, Name: "c_uuid", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 15, Name: "c_fixed", Type: iceberg.FixedTypeOf(3)},
	iceberg.NestedField{ID: 16, Name: "c_binary", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 17, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 18, Name: "a", Type: iceberg.PrimitiveTypes.Int64},
	}}},
)

// exprRows: for each type, a literal of it and the value Expression writes
// for it, the single-value form of the column's type.
var exprRows = []struct {
	column string
	lit    iceberg.Literal
	value  string
}{
	{"c_boolean", iceberg.BoolLiteral(true), `true`},
	{"c_int", iceberg.Int32Literal(42), `42`},
	{"c_long", iceberg.Int64Literal(-9999999), `-9999999`},
	{"c_float", iceberg.Float32Literal(2), `2.0`},
	{"c_double", iceberg.Float64Literal(2), `2.0`},
	{"c_double", iceberg.Float64Literal(123.456), `123.456`},
	{"c_decimal", iceberg.DecimalLiteral(dec(1234500, 4)), `"123.4500"`},
	{"c_date", iceberg.DateLiteral(13850), `"2007-12-03"`},
	{"c_time", iceberg.TimeLiteral(81068123456), `"22:31:08.123456"`},
	{"c_timestamp", iceberg.TimestampLiteral(micros("2022-01-09T10:30:00Z")), `"2022-01-09T10:30:00.000000"`},
	{"c_timestamptz", iceberg.TimestampLiteral(micros("2022-01-09T10:30:00Z")), `"2022-01-09T10:30:00.000000+00:00"`},
	{"c_timestamp_ns", iceberg.TimestampNsLiteral(nanos("2007-12-03T10:15:30.123456789Z")), `"2007-12-03T10:15:30.123456789"`},
	{"c_timestamptz_ns", iceberg.TimestampNsLiteral(nanos("2007-12-03T10:15:30.123456789Z")), `"2007-12-03T10:15:30.123456789+00:00"`},
	{"c_string", iceberg.StringLiteral("foo"), `"foo"`},
	{"c_uuid", iceberg.UUIDLiteral(someUUID), `"eb26bdb1-a1d8-4aa6-990e-da940875492c"`},
	{"c_fixed", iceberg.FixedLiteral("xyz"), `"78797A"`},
	{"c_binary", iceberg.BinaryLiteral{0, 0, 0xff}, `"0000FF"`},
	{"s.a", iceberg.Int64Literal(7), `7`},
}

// TestExpressionEveryType: a bound eq predicate with each type's literal
// writes the expected JSON, whose value Java's SingleValueParser reads for
// the column's type (ParseValue) and which iceberg-go's ParseExpr with the
// schema parses back to an equal bound expression.
func TestExpressionEveryType(t *testing.T) {
	for _, r := range exprRows {
		t.Run(r.column+" "+r.value, func(t *testing.T) {
			bound, err := iceberg.BindExpr(exprSchema, iceberg.LiteralPredicate(iceberg.OpEQ, iceberg.Reference(r.column), r.lit), true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Expression(bound, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"type":"eq","term":"` + r.column + `","value":` + r.value + `}`
			if string(got) != want {
				t.Errorf("Expression(%s) = %s, want %s", bound, got, want)
			}
			field, _ := exprSchema.FindFieldByName(r.column)
			if _, err := ParseValue(field.Type, json.RawMessage(r.value)); err != nil {
				t.Errorf("Java's reading of %s: %v", r.value, err)
			}
			assertIcebergGoReads(t, got, bound)
		})
	}
}

// assertIcebergGoReads: iceberg-go's ParseExpr with the schema parses got,
// and bound again it equals want.
func assertIcebergGoReads(t *testing.T, got json.RawMessage, want iceberg.BooleanExpression) {
	t.Helper()
	parsed, err := iceberg.ParseExpr(got, exprSchema)
	if err != nil {
		t.Fatalf("iceberg.ParseExpr(%s): %v", got, err)
	}
	rebound, err := iceberg.BindExpr(exprSchema, parsed, true)
	if err != nil {
		t.Fatalf("bind %s: %v", parsed, err)
	}
	if !rebound.Equals(want) {
		t.Errorf("iceberg-go reads %s as %s, want %s", got, rebound, want)
	}
}

// TestExpressionShapes: constants, not, and, or, set and unary predicates
// and transform terms in Java's layout, each read back by iceberg-go.
func TestExpressionShapes(t *testing.T) {
	ref := func(name string) iceberg.Reference { return iceberg.Reference(name) }
	for _, r := range []struct {
		expr iceberg.BooleanExpression
		want string
	}{
		{iceberg.AlwaysTrue{}, `true`},
		{iceberg.AlwaysFalse{}, `false`},
		{iceberg.UnaryPredicate(iceberg.OpIsNull, ref("c_string")), `{"type":"is-null","term":"c_string"}`},
		{iceberg.UnaryPredicate(iceberg.OpNotNan, ref("c_double")), `{"type":"not-nan","term":"c_double"}`},
		{iceberg.IsIn(ref("c_double"), 2.0, 0.5, 10.0), `{"type":"in","term":"c_double","values":[0.5,10.0,2.0]}`},
		{iceberg.NotIn(ref("c_binary"), []byte{0xab}, []byte{0x0c}), `{"type":"not-in","term":"c_binary","values":["0C","AB"]}`},
		{iceberg.NewAnd(iceberg.LessThan(ref("c_date"), iceberg.Date(1)), iceberg.NewNot(iceberg.StartsWith(ref("c_string"), "ab"))),
			`{"type":"and","left":{"type":"lt","term":"c_date","value":"1970-01-02"},"right":{"type":"not","child":{"type":"starts-with","term":"c_string","value":"ab"}}}`},
		{iceberg.NewOr(iceberg.GreaterThanEqual(ref("c_timestamptz"), iceberg.Timestamp(0)), iceberg.NotEqualTo(ref("c_decimal"), dec(-1, 4))),
			`{"type":"or","left":{"type":"gt-eq","term":"c_timestamptz","value":"1970-01-01T00:00:00.000000+00:00"},"right":{"type":"not-eq","term":"c_decimal","value":"-0.0001"}}`},
		{iceberg.EqualTo(iceberg.NewUnboundTransform(iceberg.BucketTransform{NumBuckets: 16}, ref("c_long")), int32(3)),
			`{"type":"eq","term":{"type":"transform","transform":"bucket[16]","term":"c_long"},"value":3}`},
		{iceberg.EqualTo(iceberg.NewUnboundTransform(iceberg.DayTransform{}, ref("c_timestamp")), iceberg.Date(13850)),
			`{"type":"eq","term":{"type":"transform","transform":"day","term":"c_timestamp"},"value":"2007-12-03"}`},
	} {
		bound, err := iceberg.BindExpr(exprSchema, r.expr, true)
		if err != nil {
			t.Fatalf("bind %s: %v", r.expr, err)
		}
		got, err := Expression(bound, nil)
		if err != nil {
			t.Fatalf("Expression(%s): %v", bound, err)
		}
		if string(got) != r.want {
			t.Errorf("Expression(%s) =\n%s, want\n%s", bound, got, r.want)
		}
		// Unbound, with the schema to bind to, it writes the same.
		unbound, err := Expression(r.expr, exprSchema)
		if err != nil || string(unbound) != string(got) {
			t.Errorf("Expression(unbound %s) = %s, %v; want %s", r.expr, unbound, err, got)
		}
		assertIcebergGoReads(t, got, bound)
	}
}

// TestExpressionRefuses: NaN (Java has no form and no NaN literal), an
// unbound predicate without a schema, a column the schema lacks.
func TestExpressionRefuses(t *testing.T) {
	// iceberg-go binds a NaN literal (Java's Expressions would refuse it).
	nan, err := iceberg.BindExpr(exprSchema, iceberg.LessThan(iceberg.Reference("c_double"), math.NaN()), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Expression(nan, nil); !errors.Is(err, ErrNaN) {
		t.Errorf("Expression(%s) = %s, %v; want ErrNaN", nan, got, err)
	}
	if got, err := Expression(iceberg.EqualTo(iceberg.Reference("c_date"), int32(3)), nil); err == nil || !strings.Contains(err.Error(), "no schema") {
		t.Errorf("unbound without a schema: %s, %v", got, err)
	}
	if got, err := Expression(iceberg.EqualTo(iceberg.Reference("missing"), int32(3)), exprSchema); err == nil {
		t.Errorf("unknown column: %s", got)
	}
}
