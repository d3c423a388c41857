// Package hashing maps Iceberg values to the 64-bit hashes an index's bloom
// filters hold. A value is hashed as Parquet hashes it for its own row-group
// bloom filters — XXH64 with seed 0 over the value's PLAIN encoding — after
// converting it to the physical representation Iceberg defines for its type,
// the same rules as Iceberg Java's ParquetBloomRowGroupFilter:
//
//	boolean                        1 byte, 0 or 1 (as arrow-go)
//	int, date                      INT32 little-endian (date: days since epoch)
//	long                           INT64 little-endian
//	time, timestamp, timestamptz   INT64 microseconds
//	timestamp_ns, timestamptz_ns   INT64 nanoseconds
//	float, double                  IEEE 754 bits LE; -0.0 hashed as +0.0; NaN never hashed
//	string                         UTF-8 bytes
//	binary, fixed[L]               the bytes
//	uuid                           16 bytes, big-endian
//	decimal(P,S)                   unscaled value: INT32 for P ≤ 9, INT64 for P ≤ 18,
//	                               else big-endian two's complement in DecimalBytes(P) bytes
//
// Getting these bytes exactly right is the whole game: a hash that differs
// by one byte from the one a value was inserted with turns into a wrong
// query answer, as several engines learned.
package hashing

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// Int32 returns the hash of an INT32 value.
func Int32(v int32) uint64 { return Uint32(uint32(v)) }

// Int64 returns the hash of an INT64 value.
func Int64(v int64) uint64 { return Uint64(uint64(v)) }

// Bool returns the hash of a boolean as one byte, 0 or 1, as arrow-go hashes
// booleans (parquet-java has no boolean bloom filters).
func Bool(v bool) uint64 {
	if v {
		return trueHash
	}
	return falseHash
}

var (
	falseHash = Bytes([]byte{0})
	trueHash  = Bytes([]byte{1})
)

// Float32 returns the hash of a FLOAT value, with -0.0 hashed as +0.0 because
// SQL compares them equal. ok is false for NaN, which is never inserted and
// never checked: NaN equals nothing.
func Float32(v float32) (h uint64, ok bool) {
	if v != v {
		return 0, false
	}
	if v == 0 {
		v = 0 // turns -0.0 into +0.0
	}
	return Uint32(math.Float32bits(v)), true
}

// Float64 returns the hash of a DOUBLE value; see Float32.
func Float64(v float64) (h uint64, ok bool) {
	if v != v {
		return 0, false
	}
	if v == 0 {
		v = 0
	}
	return Uint64(math.Float64bits(v)), true
}

// MaxDecimalPrecision is the largest precision Iceberg allows.
const MaxDecimalPrecision = 38

// decimalBytes[p] is the number of bytes of the big-endian two's complement
// form of a decimal of precision p: the smallest n with 10^p <= 2^(8n-1).
var decimalBytes = func() (t [MaxDecimalPrecision + 1]int) {
	for p := 1; p <= MaxDecimalPrecision; p++ {
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
		n := 1
		for new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(limit) < 0 {
			n++
		}
		t[p] = n
	}
	return t
}()

// DecimalBytes returns how many bytes Iceberg uses for the fixed-length form
// of a decimal of the given precision (Iceberg Java's
// TypeUtil.decimalRequiredBytes): 5 for precision 10, 16 for 38.
func DecimalBytes(precision int) int { return decimalBytes[precision] }

// Decimal returns the hash of a decimal of the given precision from its
// unscaled value as a 128-bit two's complement integer (hi, lo). The caller
// guarantees that the value has at most precision digits.
func Decimal(precision int, hi int64, lo uint64) uint64 {
	switch {
	case precision <= 9:
		return Int32(int32(lo))
	case precision <= 18:
		return Int64(int64(lo))
	}
	var buf [16]byte
	putBigEndian128(buf[:], hi, lo)
	return Bytes(buf[16-DecimalBytes(precision):])
}

func putBigEndian128(b []byte, hi int64, lo uint64) {
	for i := 0; i < 8; i++ {
		b[7-i] = byte(uint64(hi) >> (8 * i))
		b[15-i] = byte(lo >> (8 * i))
	}
}

// SupportsType reports whether values of t can be indexed: every primitive
// type except geometry, geography, variant and unknown.
func SupportsType(t iceberg.Type) bool {
	switch t := t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type,
		iceberg.Float32Type, iceberg.Float64Type, iceberg.DateType, iceberg.TimeType,
		iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType,
		iceberg.TimestampTzNsType, iceberg.StringType, iceberg.UUIDType,
		iceberg.BinaryType:
		return true
	case iceberg.FixedType:
		return t.Len() > 0
	case iceberg.DecimalType:
		return t.Precision() >= 1 && t.Precision() <= MaxDecimalPrecision
	}
	return false
}

// FormatValueType returns the name an index records for the type its values
// were hashed as (the blob property value-type): Iceberg's type names, with
// decimals written without a space, e.g. "long", "decimal(12,2)", "fixed[16]".
func FormatValueType(t iceberg.PrimitiveType) string {
	if d, ok := t.(iceberg.DecimalType); ok {
		return fmt.Sprintf("decimal(%d,%d)", d.Precision(), d.Scale())
	}
	return t.String()
}

var (
	fixedPattern   = regexp.MustCompile(`^fixed\[\s*(\d+)\s*\]$`)
	decimalPattern = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)
)

var namedTypes = map[string]iceberg.PrimitiveType{
	"boolean":        iceberg.PrimitiveTypes.Bool,
	"int":            iceberg.PrimitiveTypes.Int32,
	"long":           iceberg.PrimitiveTypes.Int64,
	"float":          iceberg.PrimitiveTypes.Float32,
	"double":         iceberg.PrimitiveTypes.Float64,
	"date":           iceberg.PrimitiveTypes.Date,
	"time":           iceberg.PrimitiveTypes.Time,
	"timestamp":      iceberg.PrimitiveTypes.Timestamp,
	"timestamptz":    iceberg.PrimitiveTypes.TimestampTz,
	"timestamp_ns":   iceberg.PrimitiveTypes.TimestampNs,
	"timestamptz_ns": iceberg.PrimitiveTypes.TimestampTzNs,
	"string":         iceberg.PrimitiveTypes.String,
	"uuid":           iceberg.PrimitiveTypes.UUID,
	"binary":         iceberg.PrimitiveTypes.Binary,
}

// ParseValueType parses a value-type property written by FormatValueType
// (or by another writer following Iceberg's type names, with any spacing).
func ParseValueType(s string) (iceberg.PrimitiveType, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if t, ok := namedTypes[name]; ok {
		return t, nil
	}
	if m := fixedPattern.FindStringSubmatch(name); m != nil {
		n, err := strconv.Atoi(m[1])
		if err == nil && n > 0 {
			return iceberg.FixedTypeOf(n), nil
		}
	}
	if m := decimalPattern.FindStringSubmatch(name); m != nil {
		p, errP := strconv.Atoi(m[1])
		s, errS := strconv.Atoi(m[2])
		if errP == nil && errS == nil && p >= 1 && p <= MaxDecimalPrecision && s <= p {
			return iceberg.DecimalTypeOf(p, s), nil
		}
	}
	return nil, fmt.Errorf("hashing: unsupported value type %q", s)
}
