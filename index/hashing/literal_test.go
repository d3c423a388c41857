package hashing_test

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/hashing"
)

func decLit(unscaled int64, scale int) iceberg.DecimalLiteral {
	return iceberg.DecimalLiteral{Val: decimal128.FromI64(unscaled), Scale: scale}
}

func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

func f32Hash(f float32) uint64 { h, _ := hashing.Float32(f); return h }
func f64Hash(f float64) uint64 { h, _ := hashing.Float64(f); return h }

// Literal maps each literal to the outcome and hash its filter type calls
// for. Hashes come from the test vectors where one exists, otherwise from
// the value functions the vectors test.
func TestLiteralOutcomes(t *testing.T) {
	vs := loadVectors(t)
	vec := func(physical, hex string) uint64 { return vectorHash(t, vs, physical, hex) }
	check, never, cannot := hashing.CheckHash, hashing.NeverPresent, hashing.CannotPrune
	dec9, dec18, dec38 := iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(18, 2), iceberg.DecimalTypeOf(38, 2)
	big37 := iceberg.DecimalLiteral{Val: decimal128.FromBigInt(pow10(37)), Scale: 0}
	big38 := iceberg.DecimalLiteral{Val: decimal128.FromBigInt(pow10(38)), Scale: 0}
	for _, tc := range []struct {
		name string
		typ  iceberg.PrimitiveType
		lit  iceberg.Literal
		out  hashing.Outcome
		hash uint64
	}{
		// An int filter holds only int32 values.
		{"long 2^40 vs int", types.Int32, iceberg.Int64Literal(1 << 40), never, 0},
		{"long -2^40 vs int", types.Int32, iceberg.Int64Literal(-1 << 40), never, 0},
		{"long MaxInt32+1 vs int", types.Int32, iceberg.Int64Literal(math.MaxInt32 + 1), never, 0},
		{"long MinInt32-1 vs int", types.Int32, iceberg.Int64Literal(math.MinInt32 - 1), never, 0},
		{"long 5 vs int", types.Int32, iceberg.Int64Literal(5), check, hashing.Int32(5)},
		{"long MaxInt32 vs int", types.Int32, iceberg.Int64Literal(math.MaxInt32), check, vec("INT32", "ffffff7f")},
		{"long MinInt32 vs int", types.Int32, iceberg.Int64Literal(math.MinInt32), check, vec("INT32", "00000080")},
		{"int -1 vs int", types.Int32, iceberg.Int32Literal(-1), check, vec("INT32", "ffffffff")},
		{"int -1 vs long", types.Int64, iceberg.Int32Literal(-1), check, vec("INT64", "ffffffffffffffff")},
		{"long 42 vs long", types.Int64, iceberg.Int64Literal(42), check, vec("INT64", "2a00000000000000")},
		// A float filter holds only values a float32 represents.
		{"double 0.1 vs float", types.Float32, iceberg.Float64Literal(0.1), never, 0},
		{"double 1e300 vs float", types.Float32, iceberg.Float64Literal(1e300), never, 0},
		{"double 1.5 vs float", types.Float32, iceberg.Float64Literal(1.5), check, vec("FLOAT", "0000c03f")},
		{"float 1.5 vs float", types.Float32, iceberg.Float32Literal(1.5), check, vec("FLOAT", "0000c03f")},
		{"double +Inf vs float", types.Float32, iceberg.Float64Literal(math.Inf(1)), check, f32Hash(float32(math.Inf(1)))},
		{"double float32(0.1) vs float", types.Float32, iceberg.Float64Literal(float32(0.1)), check, f32Hash(0.1)},
		{"float 3.14 vs double", types.Float64, iceberg.Float32Literal(3.14), check, f64Hash(float64(float32(3.14)))},
		{"double 3.14 vs double", types.Float64, iceberg.Float64Literal(3.14), check, vec("DOUBLE", "1f85eb51b81e0940")},
		{"long 3 vs double", types.Float64, iceberg.Int64Literal(3), check, f64Hash(3)},
		{"int 16777216 vs float", types.Float32, iceberg.Int32Literal(1 << 24), check, f32Hash(1 << 24)},
		{"int 16777217 vs float (unbound, inexact)", types.Float32, iceberg.Int32Literal(1<<24 + 1), cannot, 0},
		// NaN equals nothing, so it says nothing about a file.
		{"NaN vs float", types.Float32, iceberg.Float32Literal(float32(math.NaN())), cannot, 0},
		{"NaN vs double", types.Float64, iceberg.Float64Literal(math.NaN()), cannot, 0},
		{"double NaN vs float", types.Float32, iceberg.Float64Literal(math.NaN()), cannot, 0},
		// -0.0 finds the +0.0 a writer inserted.
		{"-0.0 vs double", types.Float64, iceberg.Float64Literal(math.Copysign(0, -1)), check, vec("DOUBLE", "0000000000000000")},
		{"-0.0 vs float", types.Float32, iceberg.Float32Literal(float32(math.Copysign(0, -1))), check, vec("FLOAT", "00000000")},
		{"double -0.0 vs float", types.Float32, iceberg.Float64Literal(math.Copysign(0, -1)), check, vec("FLOAT", "00000000")},
		// Decimals are rescaled exactly to the filter's scale and must fit its precision.
		{"123.45 vs decimal(9,2)", dec9, decLit(12345, 2), check, vec("INT32", "39300000")},
		{"123.4 vs decimal(9,2)", dec9, decLit(1234, 1), check, hashing.Int32(12340)},
		{"123.450 vs decimal(9,2)", dec9, decLit(123450, 3), check, vec("INT32", "39300000")},
		{"123.456 vs decimal(9,2)", dec9, decLit(123456, 3), never, 0},
		{"-123.45 vs decimal(9,2)", dec9, decLit(-12345, 2), check, hashing.Int32(-12345)},
		{"10^7 vs decimal(9,2)", dec9, decLit(10_000_000, 0), never, 0},
		{"9999999 vs decimal(9,2)", dec9, decLit(9_999_999, 0), check, hashing.Int32(999_999_900)},
		{"-9999999.99 vs decimal(9,2)", dec9, decLit(-999_999_999, 2), check, hashing.Int32(-999_999_999)},
		{"long 5 vs decimal(9,2)", dec9, iceberg.Int64Literal(5), check, hashing.Int32(500)},
		{"123.45 vs decimal(18,2)", dec18, decLit(12345, 2), check, vec("INT64", "3930000000000000")},
		{"123.45 vs decimal(38,2)", dec38, decLit(12345, 2), check, vec("FIXED_LEN_BYTE_ARRAY", "00000000000000000000000000003039")},
		{"-1 vs decimal(38,2)", dec38, decLit(-1, 0), check, hashing.Bytes(twosComplement(big.NewInt(-100), 16))},
		{"10^37 vs decimal(38,0)", iceberg.DecimalTypeOf(38, 0), big37, check, hashing.Bytes(twosComplement(pow10(37), 16))},
		{"10^38 vs decimal(38,0)", iceberg.DecimalTypeOf(38, 0), big38, never, 0},
		{"10^18 vs decimal(20,0)", iceberg.DecimalTypeOf(20, 0), decLit(1_000_000_000_000_000_000, 0), check, hashing.Bytes(twosComplement(pow10(18), 9))},
		// Fixed filters hold values of one length.
		{"4 bytes vs fixed[5]", iceberg.FixedTypeOf(5), iceberg.FixedLiteral{1, 2, 3, 4}, never, 0},
		{"6 bytes vs fixed[5]", iceberg.FixedTypeOf(5), iceberg.BinaryLiteral{1, 2, 3, 4, 5, 6}, never, 0},
		{"5 bytes vs fixed[5]", iceberg.FixedTypeOf(5), iceberg.FixedLiteral{1, 2, 3, 4, 5}, check, hashing.Bytes([]byte{1, 2, 3, 4, 5})},
		{"binary vs fixed[5]", iceberg.FixedTypeOf(5), iceberg.BinaryLiteral{1, 2, 3, 4, 5}, check, hashing.Bytes([]byte{1, 2, 3, 4, 5})},
		{"fixed vs binary", types.Binary, iceberg.FixedLiteral{}, check, vs.Empty.Expected},
		// Timestamps convert between micros and nanos exactly.
		{"ns not a multiple of 1000 vs timestamp (unbound)", types.Timestamp, iceberg.TimestampNsLiteral(1_700_000_000_000_000_001), cannot, 0},
		{"negative ns not a multiple vs timestamptz (unbound)", types.TimestampTz, iceberg.TimestampNsLiteral(-1_500), cannot, 0},
		{"ns multiple of 1000 vs timestamp", types.Timestamp, iceberg.TimestampNsLiteral(1_700_000_000_000_000_000), check, vec("INT64", "00401e18240a0600")},
		{"negative ns multiple vs timestamp", types.Timestamp, iceberg.TimestampNsLiteral(-2_000), check, hashing.Int64(-2)},
		{"micros vs timestamptz", types.TimestampTz, iceberg.TimestampLiteral(1_700_000_000_000_000), check, vec("INT64", "00401e18240a0600")},
		{"micros vs timestamp_ns", types.TimestampNs, iceberg.TimestampLiteral(1_700_000_000_000_000), check, hashing.Int64(1_700_000_000_000_000_000)},
		{"negative micros vs timestamptz_ns", types.TimestampTzNs, iceberg.TimestampLiteral(-1), check, hashing.Int64(-1000)},
		{"micros beyond ns range vs timestamp_ns", types.TimestampNs, iceberg.TimestampLiteral(math.MaxInt64/1000 + 1), never, 0},
		{"micros below ns range vs timestamp_ns", types.TimestampNs, iceberg.TimestampLiteral(math.MinInt64/1000 - 1), never, 0},
		{"ns vs timestamp_ns", types.TimestampNs, iceberg.TimestampNsLiteral(-1), check, vec("INT64", "ffffffffffffffff")},
		{"time", types.Time, iceberg.TimeLiteral(42), check, vec("INT64", "2a00000000000000")},
		{"date", types.Date, iceberg.DateLiteral(19723), check, vec("INT32", "0b4d0000")},
		// The rest hash their canonical bytes.
		{"string", types.String, iceberg.StringLiteral("日本"), check, vec("BYTE_ARRAY", "e697a5e69cac")},
		{"empty string", types.String, iceberg.StringLiteral(""), check, vec("BYTE_ARRAY", "")},
		{"uuid", types.UUID, iceberg.UUIDLiteral(uuid.MustParse("f79c3e09-677c-4bbd-a479-3f349cb785e7")), check, vec("FIXED_LEN_BYTE_ARRAY", "f79c3e09677c4bbda4793f349cb785e7")},
		{"true", types.Bool, iceberg.BoolLiteral(true), check, hashing.Bool(true)},
		{"false", types.Bool, iceberg.BoolLiteral(false), check, hashing.Bool(false)},
	} {
		h, out, err := hashing.Literal(tc.typ, tc.lit)
		if err != nil || out != tc.out || (out == check && h != tc.hash) {
			t.Errorf("%s: Literal(%s, %s) = %d, %v, %v; want %d, %v", tc.name, hashing.FormatValueType(tc.typ), tc.lit, h, out, err, tc.hash, tc.out)
		}
	}
	if hashing.Bool(true) == hashing.Bool(false) {
		t.Error("true and false hash alike")
	}
}

// A literal that cannot be compared with the filter's type is an error, with
// CannotPrune so a caller that only reads the outcome keeps the file.
func TestLiteralIncomparable(t *testing.T) {
	for _, tc := range []struct {
		typ iceberg.PrimitiveType
		lit iceberg.Literal
	}{
		{types.Int64, iceberg.StringLiteral("5")},
		{types.Int32, iceberg.Float64Literal(5)},
		{types.Int64, decLit(5, 0)},
		{types.Bool, iceberg.Int32Literal(1)},
		{types.String, iceberg.BinaryLiteral("a")},
		{types.Binary, iceberg.StringLiteral("a")},
		{types.UUID, iceberg.StringLiteral("f79c3e09-677c-4bbd-a479-3f349cb785e7")},
		{types.UUID, iceberg.FixedLiteral(make([]byte, 16))},
		{types.Date, iceberg.TimestampLiteral(0)},
		{types.Date, iceberg.Int32Literal(0)},
		{types.Timestamp, iceberg.DateLiteral(0)},
		{types.Timestamp, iceberg.Int64Literal(0)},
		{types.Time, iceberg.TimestampLiteral(0)},
		{types.Float64, iceberg.StringLiteral("1")},
		{types.Float64, decLit(1, 0)},
		{iceberg.DecimalTypeOf(9, 2), iceberg.Float64Literal(1)},
		{iceberg.FixedTypeOf(5), iceberg.StringLiteral("abcde")},
	} {
		h, out, err := hashing.Literal(tc.typ, tc.lit)
		if err == nil || out != hashing.CannotPrune || h != 0 {
			t.Errorf("Literal(%s, %T %s) = %d, %v, %v; want an error and CannotPrune", hashing.FormatValueType(tc.typ), tc.lit, tc.lit, h, out, err)
			continue
		}
		if !strings.Contains(err.Error(), hashing.FormatValueType(tc.typ)) {
			t.Errorf("error %q does not name the type %s", err, hashing.FormatValueType(tc.typ))
		}
	}
}
