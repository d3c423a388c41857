package wire

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

func dec(unscaled int64, scale int) iceberg.Decimal {
	return iceberg.Decimal{Val: decimal128.FromI64(unscaled), Scale: scale}
}

func micros(s string) iceberg.Timestamp {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return iceberg.Timestamp(t.UnixMicro())
}

func nanos(s string) iceberg.TimestampNano {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return iceberg.TimestampNano(t.UnixNano())
}

func days(y int, m time.Month, d int) iceberg.Date {
	return iceberg.Date(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

var someUUID = uuid.MustParse("eb26bdb1-a1d8-4aa6-990e-da940875492c")

// valueRows is the spec's single-value table, each type both ways: in is a
// value as iceberg-go hands it out (a partition value of DataFile.Partition,
// a literal), out the JSON written, back the value read from out. The JSON
// is the OpenAPI file's form (its examples are among the rows) as Java's
// SingleValueParser reads it.
var valueRows = []struct {
	name string
	typ  iceberg.Type
	in   any
	out  string
	back any
}{
	{"boolean", iceberg.PrimitiveTypes.Bool, true, `true`, true},
	{"boolean literal", iceberg.PrimitiveTypes.Bool, iceberg.BoolLiteral(false), `false`, false},
	{"int", iceberg.PrimitiveTypes.Int32, int32(42), `42`, int32(42)},
	{"int negative", iceberg.PrimitiveTypes.Int32, int32(math.MinInt32), `-2147483648`, int32(math.MinInt32)},
	{"long", iceberg.PrimitiveTypes.Int64, int64(math.MaxInt64), `9223372036854775807`, int64(math.MaxInt64)},
	{"long from an int32 partition value", iceberg.PrimitiveTypes.Int64, int32(7), `7`, int64(7)},
	{"float", iceberg.PrimitiveTypes.Float32, float32(3.14), `3.14`, float32(3.14)},
	// Java refuses a float or double written as an integer (2): the whole
	// plan fails to parse.
	{"float integral", iceberg.PrimitiveTypes.Float32, float32(2), `2.0`, float32(2)},
	{"float large", iceberg.PrimitiveTypes.Float32, float32(1.5e10), `1.5E10`, float32(1.5e10)},
	{"float +Inf", iceberg.PrimitiveTypes.Float32, float32(math.Inf(1)), `1.0E309`, float32(math.Inf(1))},
	{"double", iceberg.PrimitiveTypes.Float64, 123.456, `123.456`, 123.456},
	{"double integral", iceberg.PrimitiveTypes.Float64, 2.0, `2.0`, 2.0},
	{"double -0", iceberg.PrimitiveTypes.Float64, math.Copysign(0, -1), `-0.0`, math.Copysign(0, -1)},
	{"double 1e7", iceberg.PrimitiveTypes.Float64, 1e7, `1.0E7`, 1e7},
	{"double small", iceberg.PrimitiveTypes.Float64, 1.25e-4, `1.25E-4`, 1.25e-4},
	{"double tiny", iceberg.PrimitiveTypes.Float64, 5e-324, `4.9E-324`, 5e-324},
	{"double +Inf", iceberg.PrimitiveTypes.Float64, math.Inf(1), `1.0E309`, math.Inf(1)},
	{"double -Inf", iceberg.PrimitiveTypes.Float64, math.Inf(-1), `-1.0E309`, math.Inf(-1)},
	{"double literal", iceberg.PrimitiveTypes.Float64, iceberg.Float64Literal(-7), `-7.0`, -7.0},
	{"decimal", iceberg.DecimalTypeOf(9, 4), dec(1234500, 4), `"123.4500"`, dec(1234500, 4)},
	// DataFile.Partition hands out iceberg.DecimalLiteral, which made every
	// plan of a table partitioned on a decimal a 500.
	{"decimal partition value", iceberg.DecimalTypeOf(9, 2), iceberg.DecimalLiteral(dec(-5, 2)), `"-0.05"`, dec(-5, 2)},
	{"decimal scale 0", iceberg.DecimalTypeOf(9, 0), dec(2, 0), `"2"`, dec(2, 0)},
	{"decimal raw bytes", iceberg.DecimalTypeOf(9, 2), []byte{0xff, 0x85}, `"-1.23"`, dec(-123, 2)},
	{"decimal smaller scale", iceberg.DecimalTypeOf(9, 3), dec(15, 1), `"1.500"`, dec(1500, 3)},
	{"decimal 38 digits", iceberg.DecimalTypeOf(38, 10), iceberg.Decimal{Val: decimal128.FromBigInt(bigInt("-99999999999999999999999999999999999999")), Scale: 10},
		`"-9999999999999999999999999999.9999999999"`, iceberg.Decimal{Val: decimal128.FromBigInt(bigInt("-99999999999999999999999999999999999999")), Scale: 10}},
	{"date", iceberg.PrimitiveTypes.Date, iceberg.Date(13850), `"2007-12-03"`, iceberg.Date(13850)},
	{"date before 1970", iceberg.PrimitiveTypes.Date, int32(-1), `"1969-12-31"`, iceberg.Date(-1)},
	{"date literal", iceberg.PrimitiveTypes.Date, iceberg.DateLiteral(0), `"1970-01-01"`, iceberg.Date(0)},
	// java.time's ISO form of years outside 0000..9999.
	{"date year 10000", iceberg.PrimitiveTypes.Date, days(10000, 1, 1), `"+10000-01-01"`, days(10000, 1, 1)},
	{"date year -1", iceberg.PrimitiveTypes.Date, days(-1, 12, 31), `"-0001-12-31"`, days(-1, 12, 31)},
	{"date year -10000", iceberg.PrimitiveTypes.Date, days(-10000, 1, 1), `"-10000-01-01"`, days(-10000, 1, 1)},
	{"timestamp year 10000", iceberg.PrimitiveTypes.Timestamp, iceberg.Timestamp(253402300800000000), `"+10000-01-01T00:00:00.000000"`, iceberg.Timestamp(253402300800000000)},
	{"time", iceberg.PrimitiveTypes.Time, iceberg.Time(81068123456), `"22:31:08.123456"`, iceberg.Time(81068123456)},
	{"time whole seconds", iceberg.PrimitiveTypes.Time, int64(36930000000), `"10:15:30.000000"`, iceberg.Time(36930000000)},
	// Today's encoder wrote "2022-01-09 10:30:00.000000" (a space for the T),
	// which no ISO parser reads.
	{"timestamp", iceberg.PrimitiveTypes.Timestamp, micros("2022-01-09T10:30:00Z"), `"2022-01-09T10:30:00.000000"`, micros("2022-01-09T10:30:00Z")},
	{"timestamp spec example", iceberg.PrimitiveTypes.Timestamp, micros("2007-12-03T10:15:30.123456Z"), `"2007-12-03T10:15:30.123456"`, micros("2007-12-03T10:15:30.123456Z")},
	{"timestamp before 1970", iceberg.PrimitiveTypes.Timestamp, iceberg.Timestamp(-1), `"1969-12-31T23:59:59.999999"`, iceberg.Timestamp(-1)},
	{"timestamptz", iceberg.PrimitiveTypes.TimestampTz, micros("2022-01-09T10:30:00Z"), `"2022-01-09T10:30:00.000000+00:00"`, micros("2022-01-09T10:30:00Z")},
	{"timestamptz literal", iceberg.PrimitiveTypes.TimestampTz, iceberg.TimestampLiteral(micros("2007-12-03T10:15:30.123456Z")), `"2007-12-03T10:15:30.123456+00:00"`, micros("2007-12-03T10:15:30.123456Z")},
	{"timestamp_ns", iceberg.PrimitiveTypes.TimestampNs, nanos("2007-12-03T10:15:30.123456789Z"), `"2007-12-03T10:15:30.123456789"`, nanos("2007-12-03T10:15:30.123456789Z")},
	{"timestamp_ns whole", iceberg.PrimitiveTypes.TimestampNs, nanos("2022-01-09T10:30:00Z"), `"2022-01-09T10:30:00.000000000"`, nanos("2022-01-09T10:30:00Z")},
	{"timestamptz_ns", iceberg.PrimitiveTypes.TimestampTzNs, nanos("2007-12-03T10:15:30.123456789Z"), `"2007-12-03T10:15:30.123456789+00:00"`, nanos("2007-12-03T10:15:30.123456789Z")},
	{"string", iceberg.PrimitiveTypes.String, "hello", `"hello"`, "hello"},
	{"string escaped", iceberg.PrimitiveTypes.String, "a\"b\n", `"a\"b\n"`, "a\"b\n"},
	{"uuid", iceberg.PrimitiveTypes.UUID, someUUID, `"eb26bdb1-a1d8-4aa6-990e-da940875492c"`, someUUID},
	{"uuid raw fixed", iceberg.PrimitiveTypes.UUID, [16]byte(someUUID), `"eb26bdb1-a1d8-4aa6-990e-da940875492c"`, someUUID},
	// Java's SingleValueParser writes Guava base16: uppercase.
	{"fixed", iceberg.FixedTypeOf(3), []byte("xyz"), `"78797A"`, []byte("xyz")},
	{"fixed array", iceberg.FixedTypeOf(2), [2]byte{0x11, 0x1f}, `"111F"`, []byte{0x11, 0x1f}},
	{"binary", iceberg.PrimitiveTypes.Binary, []byte{0, 0, 0xff}, `"0000FF"`, []byte{0, 0, 0xff}},
	{"binary empty", iceberg.PrimitiveTypes.Binary, []byte{}, `""`, []byte{}},
	{"null", iceberg.PrimitiveTypes.Float64, nil, `null`, nil},
}

func bigInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

func TestValueBothWays(t *testing.T) {
	for _, r := range valueRows {
		t.Run(r.name, func(t *testing.T) {
			got, err := Value(r.typ, r.in)
			if err != nil {
				t.Fatalf("Value(%s, %v): %v", r.typ, r.in, err)
			}
			if string(got) != r.out {
				t.Errorf("Value(%s, %v) = %s, want %s", r.typ, r.in, got, r.out)
			}
			back, err := ParseValue(r.typ, json.RawMessage(r.out))
			if err != nil {
				t.Fatalf("ParseValue(%s, %s): %v", r.typ, r.out, err)
			}
			if !reflect.DeepEqual(back, r.back) {
				t.Errorf("ParseValue(%s, %s) = %#v, want %#v", r.typ, r.out, back, r.back)
			}
			if r.back == nil {
				return
			}
			lit, err := ParseLiteral(r.typ, json.RawMessage(r.out))
			if err != nil {
				t.Fatal(err)
			}
			if !lit.Type().Equals(r.typ) && !sameLiteralType(lit.Type(), r.typ) {
				t.Errorf("ParseLiteral(%s, %s) is a %s literal", r.typ, r.out, lit.Type())
			}
			again, err := Value(r.typ, lit)
			if err != nil || string(again) != r.out {
				t.Errorf("Value(%s, ParseLiteral(%s)) = %s, %v", r.typ, r.out, again, err)
			}
		})
	}
}

// sameLiteralType: iceberg-go has one literal type for timestamp and
// timestamptz (and their _ns), one for fixed of every length, and a decimal
// literal's type has its scale but not the column's precision.
func sameLiteralType(lit, typ iceberg.Type) bool {
	switch typ := typ.(type) {
	case iceberg.DecimalType:
		d, ok := lit.(iceberg.DecimalType)
		return ok && d.Scale() == typ.Scale()
	case iceberg.TimestampTzType:
		return lit.Equals(iceberg.PrimitiveTypes.Timestamp)
	case iceberg.TimestampTzNsType:
		return lit.Equals(iceberg.PrimitiveTypes.TimestampNs)
	case iceberg.FixedType:
		_, ok := lit.(iceberg.FixedType)
		return ok
	}
	return false
}

// TestJavaRowsRead: every valid row of Java's TestSingleValueParser reads,
// and what the encoder writes for it reads back to the same value (the
// written form may differ in text where the spec fixes a width Java trims,
// as Java's own round trip compares values).
func TestJavaRowsRead(t *testing.T) {
	for _, r := range []struct {
		typ  iceberg.Type
		json string
	}{
		{iceberg.PrimitiveTypes.Bool, `null`},
		{iceberg.PrimitiveTypes.Bool, `true`},
		{iceberg.PrimitiveTypes.Int32, `1`},
		{iceberg.PrimitiveTypes.Int64, `9999999`},
		{iceberg.PrimitiveTypes.Float32, `1.23`},
		{iceberg.PrimitiveTypes.Float64, `123.456`},
		{iceberg.PrimitiveTypes.Date, `"2007-12-03"`},
		{iceberg.PrimitiveTypes.Time, `"10:15:30"`},
		{iceberg.PrimitiveTypes.Timestamp, `"2007-12-03T10:15:30"`},
		{iceberg.PrimitiveTypes.TimestampTz, `"2007-12-03T10:15:30+00:00"`},
		{iceberg.PrimitiveTypes.TimestampNs, `"2007-12-03T10:15:30.123456789"`},
		{iceberg.PrimitiveTypes.TimestampTzNs, `"2007-12-03T10:15:30.123456789+00:00"`},
		{iceberg.PrimitiveTypes.String, `"foo"`},
		{iceberg.PrimitiveTypes.UUID, `"eb26bdb1-a1d8-4aa6-990e-da940875492c"`},
		{iceberg.FixedTypeOf(2), `"111f"`},
		{iceberg.PrimitiveTypes.Binary, `"0000ff"`},
		{iceberg.DecimalTypeOf(9, 4), `"123.4500"`},
		{iceberg.DecimalTypeOf(9, 0), `"2"`},
	} {
		v, err := ParseValue(r.typ, json.RawMessage(r.json))
		if err != nil {
			t.Errorf("ParseValue(%s, %s): %v", r.typ, r.json, err)
			continue
		}
		out, err := Value(r.typ, v)
		if err != nil {
			t.Errorf("Value(%s, %#v): %v", r.typ, v, err)
			continue
		}
		again, err := ParseValue(r.typ, out)
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Errorf("%s %s: wrote %s, read back %#v, %v; want %#v", r.typ, r.json, out, again, err, v)
		}
	}
}

// TestValueRefusedAsJavaRefuses: the JSON Java's SingleValueParser refuses
// (its invalid rows, and the forms today's encoder wrote) is refused.
func TestValueRefusedAsJavaRefuses(t *testing.T) {
	for _, r := range []struct {
		typ  iceberg.Type
		json string
	}{
		{iceberg.PrimitiveTypes.Float64, `2`},
		{iceberg.PrimitiveTypes.Float32, `2`},
		{iceberg.PrimitiveTypes.Float64, `"Infinity"`},
		{iceberg.PrimitiveTypes.Int32, `1.0`},
		{iceberg.PrimitiveTypes.Int32, `2147483648`},
		{iceberg.PrimitiveTypes.Int64, `"1"`},
		{iceberg.PrimitiveTypes.Bool, `"true"`},
		{iceberg.FixedTypeOf(2), `"111ff"`},
		{iceberg.PrimitiveTypes.Binary, `"0g"`},
		{iceberg.PrimitiveTypes.UUID, `"eb26bdb1-a1d8-4aa6-990e-da940875492c-abcde"`},
		{iceberg.DecimalTypeOf(5, 2), `123.456`},
		{iceberg.DecimalTypeOf(5, 2), `"123.456"`},
		{iceberg.DecimalTypeOf(5, 2), `"1.5"`},
		{iceberg.PrimitiveTypes.TimestampTz, `"2007-12-03T10:15:30+01:00"`},
		{iceberg.PrimitiveTypes.TimestampTzNs, `"2007-12-03T10:15:30+01:00"`},
		{iceberg.PrimitiveTypes.TimestampTz, `"2007-12-03T10:15:30"`},
		{iceberg.PrimitiveTypes.Timestamp, `"2022-01-09 10:30:00.000000"`},
		{iceberg.PrimitiveTypes.Date, `"2007-12-3"`},
		{iceberg.PrimitiveTypes.Date, `13850`},
		{iceberg.PrimitiveTypes.Date, `"10000-01-01"`},
		{iceberg.PrimitiveTypes.Date, `"+2007-12-03"`},
		{iceberg.PrimitiveTypes.String, `["a"]`},
	} {
		if v, err := ParseValue(r.typ, json.RawMessage(r.json)); err == nil {
			t.Errorf("ParseValue(%s, %s) = %#v, want an error", r.typ, r.json, v)
		}
	}
}

// TestNaNIsWrittenAsJavaWritesIt: a NaN value is the JSON string "NaN", as
// Java's writer makes it (no client reads it back: see nanText), and reads
// back as NaN.
func TestNaNIsWrittenAsJavaWritesIt(t *testing.T) {
	for _, typ := range []iceberg.Type{iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64} {
		got, err := Value(typ, math.NaN())
		if err != nil || string(got) != `"NaN"` {
			t.Errorf("Value(%s, NaN) = %s, %v; want \"NaN\"", typ, got, err)
		}
		back, err := ParseValue(typ, got)
		if err != nil {
			t.Fatalf("ParseValue(%s, %s): %v", typ, got, err)
		}
		if f, ok := back.(float32); ok && f == f || !ok && !math.IsNaN(back.(float64)) {
			t.Errorf("ParseValue(%s, %s) = %v, want NaN", typ, got, back)
		}
	}
}

// TestValueRefusesTheWrongGoType: a value of another type is an error
// naming it, not a guess.
func TestValueRefusesTheWrongGoType(t *testing.T) {
	for _, r := range []struct {
		typ iceberg.Type
		v   any
	}{
		{iceberg.PrimitiveTypes.Int32, int64(math.MaxInt32 + 1)},
		{iceberg.PrimitiveTypes.Date, "2007-12-03"},
		{iceberg.FixedTypeOf(3), []byte{1}},
		{iceberg.DecimalTypeOf(9, 1), dec(15, 2)},
		{iceberg.PrimitiveTypes.String, 1},
	} {
		if got, err := Value(r.typ, r.v); err == nil {
			t.Errorf("Value(%s, %#v) = %s, want an error", r.typ, r.v, got)
		}
	}
}

// TestDecimalNegativeScale: the spec's negative-scale row ("2E+20" at scale
// -20), which iceberg-go's DecimalType cannot express, in the formatter and
// parser the encoder uses.
func TestDecimalNegativeScale(t *testing.T) {
	for _, r := range []struct {
		unscaled string
		scale    int
		text     string
	}{
		{"2", -20, "2E+20"},
		{"-123", -2, "-1.23E+4"},
		{"1234500", 4, "123.4500"},
		{"2", 0, "2"},
		{"-5", 2, "-0.05"},
		{"0", 3, "0.000"},
	} {
		if got := formatDecimal(bigInt(r.unscaled), r.scale); got != r.text {
			t.Errorf("formatDecimal(%s, %d) = %s, want %s", r.unscaled, r.scale, got, r.text)
		}
		unscaled, scale, err := parseDecimal(r.text)
		if err != nil || unscaled.String() != r.unscaled || scale != r.scale {
			t.Errorf("parseDecimal(%s) = %v, %d, %v; want %s, %d", r.text, unscaled, scale, err, r.unscaled, r.scale)
		}
	}
}
