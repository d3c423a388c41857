package hashing_test

import (
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/hashing"
)

// hashedAs is an Iceberg type a file column is hashed as, with the literal a
// query would carry for each written value in that type.
type hashedAs struct {
	typ iceberg.PrimitiveType
	lit func(any) iceberg.Literal
}

// fileColumn is a column of the round-trip file: its Parquet node (the
// physical type and annotation arrow-go's pqarrow writes for the Arrow type
// in the comment), the written values (nil is NULL), and the types to hash
// it as.
type fileColumn struct {
	node *schema.PrimitiveNode
	vals []any
	as   []hashedAs
}

var (
	types        = iceberg.PrimitiveTypes
	int32Lit     = func(v any) iceberg.Literal { return iceberg.Int32Literal(v.(int64)) }
	int64Lit     = func(v any) iceberg.Literal { return iceberg.Int64Literal(v.(int64)) }
	dateLit      = func(v any) iceberg.Literal { return iceberg.DateLiteral(v.(int64)) }
	float32Lit   = func(v any) iceberg.Literal { return iceberg.Float32Literal(v.(float32)) }
	float32AsF64 = func(v any) iceberg.Literal { return iceberg.Float64Literal(v.(float32)) }
	float64Lit   = func(v any) iceberg.Literal { return iceberg.Float64Literal(v.(float64)) }
	stringLit    = func(v any) iceberg.Literal { return iceberg.StringLiteral(v.(string)) }
	binaryLit    = func(v any) iceberg.Literal { return iceberg.BinaryLiteral(v.([]byte)) }
	fixedLit     = func(v any) iceberg.Literal { return iceberg.FixedLiteral(v.([]byte)) }
	uuidLit      = func(v any) iceberg.Literal { return iceberg.UUIDLiteral(uuid.UUID(v.([]byte))) }
	boolLit      = func(v any) iceberg.Literal { return iceberg.BoolLiteral(v.(bool)) }
	decimalLit   = func(v any) iceberg.Literal {
		return iceberg.DecimalLiteral{Val: decimal128.FromBigInt(v.(*big.Int)), Scale: 2}
	}
)

// timeLit makes time literals from values in a unit that many times coarser
// than the literal's.
func timeLit(mul int64) func(any) iceberg.Literal {
	return func(v any) iceberg.Literal { return iceberg.TimeLiteral(v.(int64) * mul) }
}

func tsLit(mul int64) func(any) iceberg.Literal {
	return func(v any) iceberg.Literal { return iceberg.TimestampLiteral(v.(int64) * mul) }
}

func tsNsLit(mul int64) func(any) iceberg.Literal {
	return func(v any) iceberg.Literal { return iceberg.TimestampNsLiteral(v.(int64) * mul) }
}

// int96AsMicros is the microsecond timestamp Iceberg Java reads from an
// INT96 holding ns: days in micros plus the nanos of the day truncated, which
// is ns floored to micros.
func int96AsMicros(v any) iceberg.Literal {
	ns := v.(int64)
	us := ns / 1000
	if ns%1000 < 0 {
		us--
	}
	return iceberg.TimestampLiteral(us)
}

func ints(vs ...int64) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// withNulls returns vs with NULLs at the start, in the middle and at the end.
func withNulls(vs ...any) []any {
	out := append([]any{nil}, vs[:len(vs)/2]...)
	out = append(out, nil)
	return append(append(out, vs[len(vs)/2:]...), nil)
}

// decimals returns the unscaled values 12345, -12345, 0, ±1 and ±(10^p - 1),
// the extremes of precision p.
func decimals(p int) []any {
	max := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil), big.NewInt(1))
	return withNulls(big.NewInt(12345), big.NewInt(-12345), big.NewInt(0), big.NewInt(1),
		big.NewInt(-1), max, new(big.Int).Neg(max))
}

var (
	negZero32 = float32(math.Copysign(0, -1))
	negZero64 = math.Copysign(0, -1)
	nan32     = float32(math.NaN())
	uuidBytes = uuid.MustParse("f79c3e09-677c-4bbd-a479-3f349cb785e7")
)

func as(typ iceberg.PrimitiveType, lit func(any) iceberg.Literal) hashedAs { return hashedAs{typ, lit} }

func roundTripColumns(t testing.TB) []fileColumn {
	ty := parquet.Types
	intLT := schema.NewIntLogicalType
	tsLT := schema.NewTimestampLogicalType
	dec := func(p int) schema.LogicalType { return schema.NewDecimalLogicalType(int32(p), 2) }
	dec9 := []hashedAs{as(iceberg.DecimalTypeOf(9, 2), decimalLit), as(iceberg.DecimalTypeOf(18, 2), decimalLit), as(iceberg.DecimalTypeOf(38, 2), decimalLit)}
	dec18 := []hashedAs{as(iceberg.DecimalTypeOf(18, 2), decimalLit), as(iceberg.DecimalTypeOf(38, 2), decimalLit)}
	dec38 := []hashedAs{as(iceberg.DecimalTypeOf(38, 2), decimalLit)}
	intAndLong := []hashedAs{as(types.Int32, int32Lit), as(types.Int64, int64Lit)}
	i32 := ints(math.MinInt32, -1, 0, 1, 42, math.MaxInt32)
	i64 := ints(math.MinInt64, -1, 0, 1, math.MaxInt64, 1<<40)
	micros := ints(1_700_000_000_000_000, -1, 0, -9_000_000_000_000_000, 9_000_000_000_000_000)      // within timestamp_ns
	extremes := ints(1_700_000_000_000_000, -1, 0, -62_135_596_800_000_000, 253_402_300_799_999_999) // years 1 and 9999
	nanos := ints(1_700_000_000_000_000_001, -1, 0, -1_500, math.MaxInt64, math.MinInt64)
	bin := func(b ...byte) []byte { return b }
	c := func(n *schema.PrimitiveNode, vals []any, hs ...hashedAs) fileColumn { return fileColumn{n, vals, hs} }
	return []fileColumn{
		c(node(t, "bool", ty.Boolean, nil, -1), withNulls(true, false, true), as(types.Bool, boolLit)),
		// int16, int32, uint32, int64 as pqarrow annotates them; plain INT32/INT64 as parquet-mr writes Iceberg int/long.
		c(node(t, "int16", ty.Int32, intLT(16, true), -1), withNulls(ints(math.MinInt16, -1, 0, math.MaxInt16)...), intAndLong...),
		c(node(t, "int32", ty.Int32, intLT(32, true), -1), withNulls(i32...), intAndLong...),
		c(node(t, "plain_int32", ty.Int32, nil, -1), withNulls(i32...), intAndLong...),
		c(node(t, "uint32", ty.Int32, intLT(32, false), -1), withNulls(ints(0, 1, math.MaxInt32, 1<<31, math.MaxUint32)...), as(types.Int64, int64Lit)),
		c(node(t, "int64", ty.Int64, intLT(64, true), -1), withNulls(i64...), as(types.Int64, int64Lit)),
		c(node(t, "plain_int64", ty.Int64, nil, -1), withNulls(i64...), as(types.Int64, int64Lit)),
		c(node(t, "float32", ty.Float, nil, -1),
			withNulls(negZero32, float32(0), nan32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(1.5), float32(0.1), float32(-3.25), float32(math.MaxFloat32), float32(math.SmallestNonzeroFloat32)),
			as(types.Float32, float32Lit), as(types.Float64, float32AsF64)),
		c(node(t, "float64", ty.Double, nil, -1),
			withNulls(negZero64, 0.0, math.NaN(), math.Inf(1), math.Inf(-1), 1.5, 0.1, -3.25, math.MaxFloat64, math.SmallestNonzeroFloat64),
			as(types.Float64, float64Lit)),
		c(node(t, "date32", ty.Int32, schema.DateLogicalType{}, -1), withNulls(ints(19723, -1, 0, -719_162, 2_932_896)...), as(types.Date, dateLit)),
		c(node(t, "time64_us", ty.Int64, schema.NewTimeLogicalType(false, schema.TimeUnitMicros), -1), withNulls(ints(0, 1, 86_399_999_999, 12_345_678)...), as(types.Time, timeLit(1))),
		c(node(t, "time32_ms", ty.Int32, schema.NewTimeLogicalType(false, schema.TimeUnitMillis), -1), withNulls(ints(0, 1, 86_399_999, 1234)...), as(types.Time, timeLit(1000))),
		c(node(t, "ts_us", ty.Int64, tsLT(false, schema.TimeUnitMicros), -1), withNulls(micros...),
			as(types.Timestamp, tsLit(1)), as(types.TimestampNs, tsNsLit(1000))),
		c(node(t, "tstz_us", ty.Int64, tsLT(true, schema.TimeUnitMicros), -1), withNulls(extremes...), as(types.TimestampTz, tsLit(1))),
		c(node(t, "ts_ms", ty.Int64, tsLT(false, schema.TimeUnitMillis), -1), withNulls(ints(1_700_000_000_123, -1, 0, -9_000_000_000_000)...),
			as(types.Timestamp, tsLit(1000)), as(types.TimestampTz, tsLit(1000)), as(types.TimestampNs, tsNsLit(1_000_000))),
		c(node(t, "ts_ns", ty.Int64, tsLT(false, schema.TimeUnitNanos), -1), withNulls(nanos...), as(types.TimestampNs, tsNsLit(1))),
		c(node(t, "tstz_ns", ty.Int64, tsLT(true, schema.TimeUnitNanos), -1), withNulls(nanos...), as(types.TimestampTzNs, tsNsLit(1))),
		// timestamp[ns] with pqarrow.WithDeprecatedInt96Timestamps: INT96, no annotation.
		c(node(t, "ts_int96", ty.Int96, nil, -1), withNulls(ints(1_700_000_000_000_000_123, -1, -1_500, 0, 1_000, -86_400_000_000_000, -9_000_000_000_000_000_001)...),
			as(types.Timestamp, int96AsMicros), as(types.TimestampTz, int96AsMicros), as(types.TimestampNs, tsNsLit(1)), as(types.TimestampTzNs, tsNsLit(1))),
		c(node(t, "string", ty.ByteArray, schema.StringLogicalType{}, -1), withNulls("", "a", "日本", "hello world", "\x00"), as(types.String, stringLit)),
		c(node(t, "binary", ty.ByteArray, nil, -1), withNulls(bin(), bin(0), bin(0xff, 0), bin(1, 2, 3)), as(types.Binary, binaryLit)),
		// fixed_size_binary(16) as pqarrow writes it, and FLBA(16) UUID as Iceberg Java writes a uuid.
		c(node(t, "uuid_fsb", ty.FixedLenByteArray, nil, 16), withNulls(uuidBytes[:], make([]byte, 16), slices.Repeat([]byte{0xff}, 16)),
			as(types.UUID, uuidLit), as(iceberg.FixedTypeOf(16), fixedLit), as(types.Binary, binaryLit)),
		c(node(t, "uuid", ty.FixedLenByteArray, schema.UUIDLogicalType{}, 16), withNulls(uuidBytes[:], make([]byte, 16)), as(types.UUID, uuidLit)),
		c(node(t, "fixed5", ty.FixedLenByteArray, nil, 5), withNulls(bin(1, 2, 3, 4, 5), bin(0, 0, 0, 0, 0), bin(0xff, 0, 0, 0, 1)),
			as(iceberg.FixedTypeOf(5), fixedLit), as(types.Binary, binaryLit)),
		c(node(t, "fixed8", ty.FixedLenByteArray, nil, 8), withNulls(bin(1, 2, 3, 4, 5, 6, 7, 8)), as(types.Binary, binaryLit)),
		// decimal128 as pqarrow writes it by default (FIXED_LEN_BYTE_ARRAY of
		// DecimalSize(P)) and with WithStoreDecimalAsInteger (INT32/INT64).
		c(node(t, "dec9_flba", ty.FixedLenByteArray, dec(9), 4), decimals(9), dec9...),
		c(node(t, "dec18_flba", ty.FixedLenByteArray, dec(18), 8), decimals(18), dec18...),
		c(node(t, "dec38_flba", ty.FixedLenByteArray, dec(38), 16), decimals(38), dec38...),
		c(node(t, "dec9_int32", ty.Int32, dec(9), -1), decimals(9), dec9...),
		c(node(t, "dec18_int64", ty.Int64, dec(18), -1), decimals(18), dec18...),
		// decimals as minimal big-endian BYTE_ARRAYs, as some writers store them.
		c(node(t, "dec20_ba", ty.ByteArray, dec(20), -1), decimals(20), as(iceberg.DecimalTypeOf(20, 2), decimalLit), dec38[0]),
		c(node(t, "dec9_ba", ty.ByteArray, dec(9), -1), decimals(9), dec9...),
	}
}

// writeRoundTripFile writes the round-trip columns to a Parquet file and
// opens it.
func writeRoundTripFile(t *testing.T) ([]fileColumn, *file.Reader) {
	t.Helper()
	cols := roundTripColumns(t)
	nodes := make([]*schema.PrimitiveNode, len(cols))
	vals := make([][]any, len(cols))
	for i, c := range cols {
		nodes[i], vals[i] = c.node, c.vals
	}
	rdr := openParquet(t, writeParquet(t, nodes, vals))
	if rdr.NumRowGroups() != 2 {
		t.Fatalf("%d row groups, want 2", rdr.NumRowGroups())
	}
	return cols, rdr
}

// The round-trip file's columns are refused, naming the column, as types
// whose values they cannot hold exactly.
func TestNewColumnRefusesFileColumns(t *testing.T) {
	refused := map[string][]iceberg.PrimitiveType{
		"ts_ns":       {types.Timestamp, types.TimestampTz, types.Time},
		"tstz_ns":     {types.TimestampTz},
		"dec9_flba":   {iceberg.DecimalTypeOf(9, 3), iceberg.DecimalTypeOf(8, 2)},
		"dec18_int64": {iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(18, 1)},
		"string":      {types.Int64, types.UUID},
		"fixed8":      {iceberg.FixedTypeOf(5), types.UUID},
		"float64":     {types.Float32},
		"int64":       {types.Int32, types.Float64},
		"uint32":      {types.Int32},
		"date32":      {types.Timestamp, types.Int32},
	}
	_, rdr := writeRoundTripFile(t)
	sc := rdr.MetaData().Schema
	found := 0
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		for _, typ := range refused[col.Name()] {
			found++
			c, err := hashing.NewColumn(typ, col)
			if err == nil || c != nil || !strings.Contains(err.Error(), "column "+col.Name()+" ") {
				t.Errorf("%s as %s: %v, %v; want an error naming the column", col.Name(), hashing.FormatValueType(typ), c, err)
			}
		}
	}
	want := 0
	for _, typs := range refused {
		want += len(typs)
	}
	if found != want {
		t.Errorf("checked %d refusals, want %d", found, want)
	}
}

// isZero reports whether a written value is a float ±0.
func isZero(v any) bool {
	switch v := v.(type) {
	case float32:
		return v == 0
	case float64:
		return v == 0
	}
	return false
}

// The central invariant, on real Parquet files covering every type, the
// physical forms writers use and the supported promotions: for each column
// and each type it is hashed as, Column yields, in order, exactly the hashes
// Literal gives for the literals of the non-null, non-NaN written values
// (all CheckHash). NULLs and NaNs contribute nothing, and -0.0 and +0.0 give
// the one +0.0 hash of the test vectors.
func TestColumnRoundTrip(t *testing.T) {
	vs := loadVectors(t)
	zeroHash := map[string]uint64{
		"float":  vectorHash(t, vs, "FLOAT", "00000000"),
		"double": vectorHash(t, vs, "DOUBLE", "0000000000000000"),
	}
	cols, rdr := writeRoundTripFile(t)
	checked, pairs := 0, 0
	for i, fc := range cols {
		pairs += len(fc.as)
		col := rdr.MetaData().Schema.Column(i)
		if col.Name() != fc.node.Name() || col.PhysicalType() != fc.node.PhysicalType() {
			t.Fatalf("file column %d is %s %s, want %s %s", i, col.Name(), col.PhysicalType(), fc.node.Name(), fc.node.PhysicalType())
		}
		for _, a := range fc.as {
			name := fc.node.Name() + " as " + hashing.FormatValueType(a.typ)
			c, err := hashing.NewColumn(a.typ, col)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			var want []uint64
			var kept []any
			nulls, nans := 0, 0
			for _, v := range fc.vals {
				if v == nil {
					nulls++
					continue
				}
				h, out, err := hashing.Literal(a.typ, a.lit(v))
				if f, ok := v.(float32); ok && f != f || isNaN64(v) {
					nans++
					if out != hashing.CannotPrune || err != nil {
						t.Errorf("%s: Literal(NaN) = %v, %v; want CannotPrune", name, out, err)
					}
					continue
				}
				if err != nil || out != hashing.CheckHash {
					t.Errorf("%s: Literal(%v) = %v, %v; want CheckHash", name, v, out, err)
					continue
				}
				want = append(want, h)
				kept = append(kept, v)
			}
			got := hashFileColumn(t, rdr, i, c)
			if !slices.Equal(got, want) {
				t.Errorf("%s: Column hashes\n%v\nLiteral hashes\n%v", name, got, want)
				continue
			}
			if nulls < 3 || len(got) != len(fc.vals)-nulls-nans {
				t.Errorf("%s: %d hashes from %d values with %d NULLs and %d NaNs", name, len(got), len(fc.vals), nulls, nans)
			}
			for j, v := range kept {
				if isZero(v) && got[j] != zeroHash[hashing.FormatValueType(a.typ)] {
					t.Errorf("%s: %v hashed as %d, not the +0.0 vector", name, v, got[j])
				}
			}
			checked++
		}
	}
	if checked != pairs || pairs < 50 {
		t.Errorf("checked %d of %d column/type pairs", checked, pairs)
	}
}

func isNaN64(v any) bool {
	f, ok := v.(float64)
	return ok && math.IsNaN(f)
}

// int96 encodes as arrow-go reads INT96 back: the helper the round trip
// writes with agrees with parquet.Int96.ToTime for every value it writes.
func TestInt96Encoding(t *testing.T) {
	for _, ns := range []int64{1_700_000_000_000_000_123, -1, -1_500, 0, 1_000, -86_400_000_000_000, -9_000_000_000_000_000_001, math.MaxInt64} {
		if got := int96(ns).ToTime().UnixNano(); got != ns {
			t.Errorf("int96(%d) reads back as %d", ns, got)
		}
	}
}

// NewColumn refuses, naming the column, every stored form that cannot hold
// the values of the Iceberg type exactly.
func TestNewColumnRefuses(t *testing.T) {
	ty := parquet.Types
	tsLT := schema.NewTimestampLogicalType
	dec := schema.NewDecimalLogicalType
	for _, tc := range []struct {
		node *schema.PrimitiveNode
		typ  iceberg.PrimitiveType
	}{
		{node(t, "ts_ns", ty.Int64, tsLT(false, schema.TimeUnitNanos), -1), types.Timestamp},
		{node(t, "tstz_ns", ty.Int64, tsLT(true, schema.TimeUnitNanos), -1), types.TimestampTz},
		{node(t, "time_ns", ty.Int64, schema.NewTimeLogicalType(false, schema.TimeUnitNanos), -1), types.Time},
		{node(t, "dec9", ty.Int32, dec(9, 2), -1), iceberg.DecimalTypeOf(9, 3)},
		{node(t, "dec9", ty.FixedLenByteArray, dec(9, 2), 4), iceberg.DecimalTypeOf(18, 3)},
		{node(t, "dec18", ty.Int64, dec(18, 2), -1), iceberg.DecimalTypeOf(9, 2)},
		{node(t, "long", ty.Int64, nil, -1), iceberg.DecimalTypeOf(18, 0)},
		{node(t, "string", ty.ByteArray, schema.StringLogicalType{}, -1), types.Int64},
		{node(t, "fixed8", ty.FixedLenByteArray, nil, 8), iceberg.FixedTypeOf(5)},
		{node(t, "fixed15", ty.FixedLenByteArray, nil, 15), types.UUID},
		{node(t, "binary", ty.ByteArray, nil, -1), types.UUID},
		{node(t, "double", ty.Double, nil, -1), types.Float32},
		{node(t, "long", ty.Int64, schema.NewIntLogicalType(64, true), -1), types.Int32},
		{node(t, "uint32", ty.Int32, schema.NewIntLogicalType(32, false), -1), types.Int32},
		{node(t, "uint64", ty.Int64, schema.NewIntLogicalType(64, false), -1), types.Int64},
		{node(t, "date", ty.Int32, schema.DateLogicalType{}, -1), types.Int32},
		{node(t, "date", ty.Int32, schema.DateLogicalType{}, -1), types.Timestamp},
		{node(t, "int", ty.Int32, nil, -1), types.Timestamp},
		{node(t, "int", ty.Int32, nil, -1), types.Float64},
		{node(t, "bool", ty.Boolean, nil, -1), types.Int32},
		{node(t, "int", ty.Int32, nil, -1), types.Bool},
		{node(t, "string", ty.ByteArray, schema.StringLogicalType{}, -1), types.Date},
		{node(t, "ts_us", ty.Int64, tsLT(false, schema.TimeUnitMicros), -1), types.Int64},
		{node(t, "ts_us", ty.Int64, tsLT(false, schema.TimeUnitMicros), -1), types.Time},
		{node(t, "ts_int96", ty.Int96, nil, -1), types.Time},
		{node(t, "time_us", ty.Int64, schema.NewTimeLogicalType(false, schema.TimeUnitMicros), -1), types.Timestamp},
		{node(t, "time_ms", ty.Int32, schema.NewTimeLogicalType(false, schema.TimeUnitMillis), -1), types.Timestamp},
	} {
		name := tc.node.Name() + " " + tc.node.PhysicalType().String() + " as " + hashing.FormatValueType(tc.typ)
		c, err := hashing.NewColumn(tc.typ, schemaColumn(t, tc.node))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if c != nil || !strings.Contains(err.Error(), "column "+tc.node.Name()+" ") {
			t.Errorf("%s: got %v, %q; want nil and an error naming the column", name, c, err)
		}
	}
}

// hashOne calls the typed method for physical type p with one zero value.
func hashOne(c *hashing.Column, p parquet.Type) ([]uint64, error) {
	switch p {
	case parquet.Types.Boolean:
		return c.Bools(nil, []bool{true})
	case parquet.Types.Int32:
		return c.Int32s(nil, []int32{0})
	case parquet.Types.Int64:
		return c.Int64s(nil, []int64{0})
	case parquet.Types.Int96:
		return c.Int96s(nil, []parquet.Int96{{}})
	case parquet.Types.Float:
		return c.Float32s(nil, []float32{0})
	case parquet.Types.Double:
		return c.Float64s(nil, []float64{0})
	case parquet.Types.ByteArray:
		return c.ByteArrays(nil, []parquet.ByteArray{{0}})
	}
	return c.FixedLenByteArrays(nil, []parquet.FixedLenByteArray{{0, 0, 0, 0, 0}})
}

// Only the typed method of the column's physical type hashes; every other
// one returns an error naming the column and appends nothing.
func TestWrongTypedMethod(t *testing.T) {
	ty := parquet.Types
	physicals := []parquet.Type{ty.Boolean, ty.Int32, ty.Int64, ty.Int96, ty.Float, ty.Double, ty.ByteArray, ty.FixedLenByteArray}
	for _, tc := range []struct {
		node *schema.PrimitiveNode
		typ  iceberg.PrimitiveType
	}{
		{node(t, "b", ty.Boolean, nil, -1), types.Bool},
		{node(t, "i", ty.Int32, nil, -1), types.Int32},
		{node(t, "l", ty.Int64, nil, -1), types.Int64},
		{node(t, "t", ty.Int96, nil, -1), types.Timestamp},
		{node(t, "f", ty.Float, nil, -1), types.Float32},
		{node(t, "d", ty.Double, nil, -1), types.Float64},
		{node(t, "s", ty.ByteArray, nil, -1), types.String},
		{node(t, "x", ty.FixedLenByteArray, nil, 5), iceberg.FixedTypeOf(5)},
	} {
		c, err := hashing.NewColumn(tc.typ, schemaColumn(t, tc.node))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range physicals {
			hs, err := hashOne(c, p)
			switch {
			case p == tc.node.PhysicalType() && (err != nil || len(hs) != 1):
				t.Errorf("%s: %s method = %v, %v", tc.node.PhysicalType(), p, hs, err)
			case p != tc.node.PhysicalType() && (err == nil || len(hs) != 0 || !strings.Contains(err.Error(), "column "+tc.node.Name()+" ")):
				t.Errorf("%s column, %s method = %v, %v; want an error naming the column", tc.node.PhysicalType(), p, hs, err)
			}
		}
	}
}

// Legacy files annotate with converted types only (UINT_32, TIMESTAMP_MILLIS,
// TIME_MILLIS, DECIMAL, UTF8); their values hash as the same values under
// modern logical types.
func TestConvertedTypesHashLikeLogicalTypes(t *testing.T) {
	ty := parquet.Types
	ct := schema.ConvertedTypes
	legacy := func(name string, phys parquet.Type, c schema.ConvertedType, typeLen, p, s int) *schema.PrimitiveNode {
		n, err := schema.NewPrimitiveNodeConverted(name, parquet.Repetitions.Optional, phys, c, typeLen, p, s, -1)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		legacy, modern *schema.PrimitiveNode
		typ            iceberg.PrimitiveType
	}{
		{legacy("u32", ty.Int32, ct.Uint32, -1, 0, 0), node(t, "u32", ty.Int32, schema.NewIntLogicalType(32, false), -1), types.Int64},
		{legacy("i16", ty.Int32, ct.Int16, -1, 0, 0), node(t, "i16", ty.Int32, schema.NewIntLogicalType(16, true), -1), types.Int32},
		{legacy("ts", ty.Int64, ct.TimestampMillis, -1, 0, 0), node(t, "ts", ty.Int64, schema.NewTimestampLogicalType(true, schema.TimeUnitMillis), -1), types.TimestampTz},
		{legacy("tm", ty.Int32, ct.TimeMillis, -1, 0, 0), node(t, "tm", ty.Int32, schema.NewTimeLogicalType(true, schema.TimeUnitMillis), -1), types.Time},
		{legacy("d", ty.Int64, ct.Decimal, -1, 18, 2), node(t, "d", ty.Int64, schema.NewDecimalLogicalType(18, 2), -1), iceberg.DecimalTypeOf(18, 2)},
		{legacy("d", ty.FixedLenByteArray, ct.Decimal, 16, 38, 2), node(t, "d", ty.FixedLenByteArray, schema.NewDecimalLogicalType(38, 2), 16), iceberg.DecimalTypeOf(38, 2)},
		{legacy("s", ty.ByteArray, ct.UTF8, -1, 0, 0), node(t, "s", ty.ByteArray, schema.StringLogicalType{}, -1), types.String},
	} {
		var got [2][]uint64
		for i, n := range []*schema.PrimitiveNode{tc.legacy, tc.modern} {
			c, err := hashing.NewColumn(tc.typ, schemaColumn(t, n))
			if err != nil {
				t.Fatalf("%s %v: %v", n.Name(), n.ConvertedType(), err)
			}
			got[i] = hashSamples(t, c, n)
		}
		if !slices.Equal(got[0], got[1]) || len(got[0]) == 0 {
			t.Errorf("%s as %s: legacy %v, modern %v", tc.legacy.Name(), hashing.FormatValueType(tc.typ), got[0], got[1])
		}
	}
}

// hashSamples hashes a few values of n's physical type, including -1.
func hashSamples(t *testing.T, c *hashing.Column, n *schema.PrimitiveNode) []uint64 {
	t.Helper()
	var hs []uint64
	var err error
	switch n.PhysicalType() {
	case parquet.Types.Int32:
		hs, err = c.Int32s(nil, []int32{-1, 0, 7, math.MaxInt32})
	case parquet.Types.Int64:
		hs, err = c.Int64s(nil, []int64{-1, 0, 7, 1 << 40})
	case parquet.Types.ByteArray:
		hs, err = c.ByteArrays(nil, []parquet.ByteArray{{}, {0xff}, []byte("x")})
	case parquet.Types.FixedLenByteArray:
		hs, err = c.FixedLenByteArrays(nil, []parquet.FixedLenByteArray{make([]byte, 16), slices.Repeat([]byte{0xff}, 16)})
	}
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// Stored decimals whose unscaled value does not fit the canonical width of
// the column's precision are an error, not a silently wrong hash; wider
// sign-extended encodings of values that do fit hash as the canonical form.
func TestDecimalStoredRange(t *testing.T) {
	ty := parquet.Types
	dec := schema.NewDecimalLogicalType
	column := func(n *schema.PrimitiveNode, p int) *hashing.Column {
		c, err := hashing.NewColumn(iceberg.DecimalTypeOf(p, 2), schemaColumn(t, n))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	want := func(p int, v int64) uint64 {
		n := decimal128.FromI64(v)
		return hashing.Decimal(p, n.HighBits(), n.LowBits())
	}
	ba := column(node(t, "ba", ty.ByteArray, dec(9, 2), -1), 9)
	for _, tc := range []struct {
		b    []byte
		p    int
		want int64
	}{
		{append(slices.Repeat([]byte{0xff}, 20), 0xfe), 9, -2}, // 21 bytes, sign-extended
		{append(make([]byte, 17), 0x05), 9, 5},
		{nil, 9, 0},
	} {
		hs, err := ba.ByteArrays(nil, []parquet.ByteArray{tc.b})
		if err != nil || len(hs) != 1 || hs[0] != want(tc.p, tc.want) {
			t.Errorf("decimal bytes %x: %v, %v; want the hash of %d", tc.b, hs, err, tc.want)
		}
	}
	wide := column(node(t, "wide", ty.FixedLenByteArray, dec(9, 2), 16), 9)
	for _, b := range [][]byte{
		append(make([]byte, 12), 0x80, 0, 0, 0),                  // 2^31: beyond INT32
		append([]byte{1}, make([]byte, 15)...),                   // 2^120
		append(slices.Repeat([]byte{0xff}, 12), 0x7f, 0, 0, 0),   // -2^32 + 0x7f000000: below INT32
		append([]byte{0x7f}, slices.Repeat([]byte{0xff}, 15)...), // 2^127 - 1
	} {
		if hs, err := wide.FixedLenByteArrays(nil, []parquet.FixedLenByteArray{b}); err == nil || !strings.Contains(err.Error(), "column wide") {
			t.Errorf("decimal(9,2) from %x: %v, %v; want a range error", b, hs, err)
		}
	}
	if hs, err := ba.ByteArrays(nil, []parquet.ByteArray{append([]byte{1}, make([]byte, 16)...)}); err == nil {
		t.Errorf("17-byte decimal 2^128 hashed as %v", hs)
	}
	long := column(node(t, "long9", ty.Int64, dec(9, 2), -1), 9)
	if hs, err := long.Int64s(nil, []int64{1 << 31}); err == nil {
		t.Errorf("INT64 decimal(9,2) 2^31 hashed as %v", hs)
	}
	if hs, err := long.Int64s(nil, []int64{-999_999_999}); err != nil || hs[0] != want(9, -999_999_999) {
		t.Errorf("INT64 decimal(9,2) -999999999: %v, %v", hs, err)
	}
	d19 := column(node(t, "d19", ty.FixedLenByteArray, dec(19, 2), 16), 19)
	if hs, err := d19.FixedLenByteArrays(nil, []parquet.FixedLenByteArray{append(make([]byte, 6), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)}); err == nil {
		t.Errorf("decimal(19,2) of 2^72 (10 bytes) hashed as %v", hs)
	}
}
