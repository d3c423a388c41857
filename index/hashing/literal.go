package hashing

import (
	"fmt"
	"math"
	"math/big"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Outcome says what a literal means for a filter built from values of a
// given type.
type Outcome int

const (
	// CheckHash: the filter may hold the literal; check the returned hash.
	CheckHash Outcome = iota
	// NeverPresent: no value of the filter's type equals the literal (an
	// int column cannot hold 2^40, a float column cannot hold 0.1 as a
	// double), so the file cannot match.
	NeverPresent
	// CannotPrune: the literal says nothing about membership (NaN), so the
	// file must be kept.
	CannotPrune
)

// Literal returns how to check lit against a filter whose values were hashed
// as valueType, the type recorded with the filter. lit is expected bound to
// the column's current type (as iceberg.BindExpr leaves it), which can be
// wider than valueType after type promotion (int→long, float→double, decimal
// widening): the literal is then converted to the filter's type exactly, and
// one with no exact counterpart is NeverPresent. An unbound literal of
// another type is used only where the conversion is exact, else CannotPrune.
// A literal whose type cannot be compared with valueType at all is an error,
// and the caller keeps the file.
func Literal(valueType iceberg.PrimitiveType, lit iceberg.Literal) (uint64, Outcome, error) {
	h, out, ok := literal(valueType, lit)
	if !ok {
		return 0, CannotPrune, fmt.Errorf("hashing: a %s literal %s cannot be checked against values of type %s",
			lit.Type(), lit, FormatValueType(valueType))
	}
	return h, out, nil
}

func literal(t iceberg.PrimitiveType, lit iceberg.Literal) (uint64, Outcome, bool) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		if v, ok := lit.(iceberg.BoolLiteral); ok {
			return Bool(bool(v)), CheckHash, true
		}
	case iceberg.Int32Type:
		if v, ok := integer(lit); ok {
			return intOutcome(v, math.MinInt32, math.MaxInt32, func(v int64) uint64 { return Int32(int32(v)) })
		}
	case iceberg.Int64Type:
		if v, ok := integer(lit); ok {
			return Int64(v), CheckHash, true
		}
	case iceberg.Float32Type, iceberg.Float64Type:
		return floatLiteral(t, lit)
	case iceberg.DateType:
		if v, ok := lit.(iceberg.DateLiteral); ok {
			return Int32(int32(v)), CheckHash, true
		}
	case iceberg.TimeType:
		if v, ok := lit.(iceberg.TimeLiteral); ok {
			return Int64(int64(v)), CheckHash, true
		}
	case iceberg.TimestampType, iceberg.TimestampTzType:
		switch v := lit.(type) {
		case iceberg.TimestampLiteral:
			return Int64(int64(v)), CheckHash, true
		case iceberg.TimestampNsLiteral:
			// A bound literal has the column's type; a nanosecond one here
			// is unbound, and binding would truncate it, so only an exact
			// one says anything.
			if int64(v)%1000 != 0 {
				return 0, CannotPrune, true
			}
			return Int64(int64(v) / 1000), CheckHash, true
		}
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		switch v := lit.(type) {
		case iceberg.TimestampNsLiteral:
			return Int64(int64(v)), CheckHash, true
		case iceberg.TimestampLiteral:
			return intOutcome(int64(v), math.MinInt64/1000, math.MaxInt64/1000, func(v int64) uint64 { return Int64(v * 1000) })
		}
	case iceberg.StringType:
		if v, ok := lit.(iceberg.StringLiteral); ok {
			return Bytes([]byte(v)), CheckHash, true
		}
	case iceberg.BinaryType:
		if b, ok := rawBytes(lit); ok {
			return Bytes(b), CheckHash, true
		}
	case iceberg.FixedType:
		if b, ok := rawBytes(lit); ok {
			if len(b) != t.Len() {
				return 0, NeverPresent, true
			}
			return Bytes(b), CheckHash, true
		}
	case iceberg.UUIDType:
		if v, ok := lit.(iceberg.UUIDLiteral); ok {
			u := uuid.UUID(v)
			return Bytes(u[:]), CheckHash, true
		}
	case iceberg.DecimalType:
		return decimalLiteral(t, lit)
	}
	return 0, CannotPrune, false
}

// integer returns the value of an int or long literal.
func integer(lit iceberg.Literal) (int64, bool) {
	switch v := lit.(type) {
	case iceberg.Int32Literal:
		return int64(v), true
	case iceberg.Int64Literal:
		return int64(v), true
	}
	return 0, false
}

func intOutcome(v, lo, hi int64, hash func(int64) uint64) (uint64, Outcome, bool) {
	if v < lo || v > hi {
		return 0, NeverPresent, true
	}
	return hash(v), CheckHash, true
}

func rawBytes(lit iceberg.Literal) ([]byte, bool) {
	switch v := lit.(type) {
	case iceberg.BinaryLiteral:
		return v, true
	case iceberg.FixedLiteral:
		return v, true
	}
	return nil, false
}

// floatLiteral converts a float, double or integer literal to a float
// filter's type exactly: a float column holds only values a float32 can
// represent, so a double literal between two of them is NeverPresent.
func floatLiteral(t iceberg.PrimitiveType, lit iceberg.Literal) (uint64, Outcome, bool) {
	var v float64
	switch l := lit.(type) {
	case iceberg.Float32Literal:
		v = float64(l)
	case iceberg.Float64Literal:
		v = float64(l)
	case iceberg.Int32Literal, iceberg.Int64Literal:
		// No promotion turns an integer column into a floating one, so an
		// integer literal here is unbound; binding would round it, so only
		// one the type represents exactly says anything.
		i, _ := integer(lit)
		v = float64(i)
		if _, single := t.(iceberg.Float32Type); int64(v) != i || single && int64(float32(v)) != i {
			return 0, CannotPrune, true
		}
	default:
		return 0, CannotPrune, false
	}
	if math.IsNaN(v) {
		return 0, CannotPrune, true
	}
	if _, single := t.(iceberg.Float32Type); single {
		f := float32(v)
		if float64(f) != v {
			return 0, NeverPresent, true
		}
		h, _ := Float32(f)
		return h, CheckHash, true
	}
	h, _ := Float64(v)
	return h, CheckHash, true
}

// decimalLiteral rescales a decimal or integer literal to the filter's scale
// exactly and checks that it fits the filter's precision.
func decimalLiteral(t iceberg.DecimalType, lit iceberg.Literal) (uint64, Outcome, bool) {
	var unscaled *big.Int
	var scale int
	switch v := lit.(type) {
	case iceberg.DecimalLiteral:
		unscaled, scale = v.Val.BigInt(), v.Scale
	case iceberg.Int32Literal, iceberg.Int64Literal:
		i, _ := integer(lit)
		unscaled = big.NewInt(i)
	default:
		return 0, CannotPrune, false
	}
	if d := t.Scale() - scale; d > 0 {
		unscaled.Mul(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
	} else if d < 0 {
		var rem big.Int
		unscaled.QuoRem(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-d)), nil), &rem)
		if rem.Sign() != 0 {
			return 0, NeverPresent, true // more fractional digits than the column keeps
		}
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision())), nil)
	if new(big.Int).Abs(unscaled).Cmp(limit) >= 0 {
		return 0, NeverPresent, true
	}
	hi, lo := int128(unscaled)
	return Decimal(t.Precision(), hi, lo), CheckHash, true
}

// int128 splits a value known to fit 128 bits into two's complement words.
func int128(v *big.Int) (hi int64, lo uint64) {
	mod := new(big.Int).Lsh(big.NewInt(1), 128)
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, mod)
	}
	lo = new(big.Int).And(u, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi = int64(new(big.Int).Rsh(u, 64).Uint64())
	return hi, lo
}
