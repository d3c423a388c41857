package hashing

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// conversion says how a stored physical value becomes the canonical value of
// the column's Iceberg type before it is hashed.
type conversion int

const (
	asInt32          conversion = iota // INT32 → int32
	asInt64                            // INT64 → int64
	int32ToInt64                       // INT32 → int64, sign-extended (int promoted to long)
	uint32ToInt64                      // INT32 holding UINT_32 → int64
	scaleInt32                         // INT32 × scale → int64 (TIME_MILLIS → micros)
	scaleInt64                         // INT64 × scale → int64 (timestamp unit conversion)
	int96ToMicros                      // INT96 (legacy) → int64 micros, as Iceberg Java reads it
	int96ToNanos                       // INT96 → int64 nanos
	asFloat32                          // FLOAT → float32
	float32ToFloat64                   // FLOAT → float64 (float promoted to double)
	asFloat64                          // DOUBLE → float64
	asBytes                            // BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY → bytes
	decimalFromInt32                   // INT32 unscaled → decimal of the column's precision
	decimalFromInt64                   // INT64 unscaled → decimal
	decimalFromBytes                   // big-endian two's complement → decimal
	asBool                             // BOOLEAN
)

// Column hashes the values read from one Parquet column chunk as values of
// the Iceberg type the column has in the table schema. The file's physical
// type may differ from the canonical one — int data in a column promoted to
// long, decimals stored as INT64 or FIXED_LEN_BYTE_ARRAY, timestamps stored in
// milliseconds or as INT96 — and Column converts each value first, so a
// value hashes the same whatever file holds it.
//
// Each method appends the hashes of non-NaN values to dst and returns it;
// callers pass only non-null values (NULL is never inserted). A method that
// does not match the column's physical type returns an error.
type Column struct {
	name      string
	physical  parquet.Type
	conv      conversion
	scale     int64 // multiplier of scaleInt32 / scaleInt64
	precision int   // target decimal precision
}

// NewColumn prepares the hashing of Parquet column col as Iceberg type t. It
// fails, naming the column, when the stored type cannot represent values of
// t exactly (for example nanosecond timestamps in a microsecond column): such
// a file is left unindexed rather than indexed wrongly.
func NewColumn(t iceberg.PrimitiveType, col *schema.Column) (*Column, error) {
	c := &Column{name: col.Path(), physical: col.PhysicalType()}
	if err := c.plan(t, col); err != nil {
		return nil, fmt.Errorf("hashing: column %s stored as %s cannot be hashed as %s: %w",
			c.name, describe(col), FormatValueType(t), err)
	}
	return c, nil
}

func describe(col *schema.Column) string {
	s := col.PhysicalType().String()
	if col.PhysicalType() == parquet.Types.FixedLenByteArray {
		s = fmt.Sprintf("%s(%d)", s, col.TypeLength())
	}
	if lt := logicalType(col); lt != nil && !isNone(lt) {
		s += " " + lt.String()
	}
	return s
}

// logicalType returns the column's logical type, derived from the legacy
// converted type when the file predates logical types.
func logicalType(col *schema.Column) schema.LogicalType {
	lt := col.LogicalType()
	if (lt == nil || isNone(lt)) && col.ConvertedType() != schema.ConvertedTypes.None {
		var dec schema.DecimalMetadata
		if n, ok := col.SchemaNode().(*schema.PrimitiveNode); ok {
			dec = n.DecimalMetadata()
		}
		return col.ConvertedType().ToLogicalType(dec)
	}
	return lt
}

func isNone(lt schema.LogicalType) bool {
	_, none := lt.(schema.NoLogicalType)
	return none
}

var errUnsupported = fmt.Errorf("unsupported combination")

func (c *Column) plan(t iceberg.PrimitiveType, col *schema.Column) error {
	lt := logicalType(col)
	// arrow-go's logical types are values, not pointers.
	intLT, isInt := lt.(schema.IntLogicalType)
	plainInt := lt == nil || isNone(lt) || isInt
	phys := col.PhysicalType()
	types := parquet.Types
	switch t := t.(type) {
	case iceberg.BooleanType:
		return c.use(phys == types.Boolean, asBool)
	case iceberg.Int32Type:
		if isInt && !intLT.IsSigned() && intLT.BitWidth() == 32 {
			return fmt.Errorf("unsigned 32-bit values do not fit int")
		}
		return c.use(phys == types.Int32 && plainInt, asInt32)
	case iceberg.Int64Type:
		if isInt && !intLT.IsSigned() && intLT.BitWidth() == 64 {
			return fmt.Errorf("unsigned 64-bit values do not fit long")
		}
		switch {
		case phys == types.Int64 && plainInt:
			return c.use(true, asInt64)
		case phys == types.Int32 && isInt && !intLT.IsSigned() && intLT.BitWidth() == 32:
			return c.use(true, uint32ToInt64)
		}
		return c.use(phys == types.Int32 && plainInt, int32ToInt64)
	case iceberg.Float32Type:
		return c.use(phys == types.Float, asFloat32)
	case iceberg.Float64Type:
		if phys == types.Float {
			return c.use(true, float32ToFloat64)
		}
		return c.use(phys == types.Double, asFloat64)
	case iceberg.DateType:
		return c.use(phys == types.Int32, asInt32)
	case iceberg.TimeType:
		return c.planTime(phys, lt, schema.TimeUnitMicros, true)
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return c.planTime(phys, lt, schema.TimeUnitMicros, false)
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return c.planTime(phys, lt, schema.TimeUnitNanos, false)
	case iceberg.StringType, iceberg.BinaryType:
		return c.use(phys == types.ByteArray || phys == types.FixedLenByteArray, asBytes)
	case iceberg.FixedType:
		if phys == types.FixedLenByteArray && col.TypeLength() != t.Len() {
			return fmt.Errorf("stored length %d differs from fixed[%d]", col.TypeLength(), t.Len())
		}
		return c.use(phys == types.ByteArray || phys == types.FixedLenByteArray, asBytes)
	case iceberg.UUIDType:
		return c.use(phys == types.FixedLenByteArray && col.TypeLength() == 16, asBytes)
	case iceberg.DecimalType:
		return c.planDecimal(t, phys, lt)
	}
	return errUnsupported
}

func (c *Column) use(ok bool, conv conversion) error {
	if !ok {
		return errUnsupported
	}
	c.conv = conv
	return nil
}

// unitsPer gives how many of each unit make one second.
var unitsPer = map[schema.TimeUnitType]int64{
	schema.TimeUnitMillis: 1_000,
	schema.TimeUnitMicros: 1_000_000,
	schema.TimeUnitNanos:  1_000_000_000,
}

// planTime handles time (isTime) and timestamp columns whose canonical form
// is INT64 in unit want. A stored unit finer than want would need rounding,
// which readers do not agree on, so it is refused (the file stays
// unindexed). Times are INT32 TIME_MILLIS or INT64 TIME; timestamps are INT64
// TIMESTAMP or legacy INT96.
func (c *Column) planTime(phys parquet.Type, lt schema.LogicalType, want schema.TimeUnitType, isTime bool) error {
	if phys == parquet.Types.Int96 && !isTime {
		if want == schema.TimeUnitNanos {
			return c.use(true, int96ToNanos)
		}
		return c.use(true, int96ToMicros)
	}
	have := want // an unannotated INT64 is taken to be in the canonical unit
	switch lt := lt.(type) {
	case schema.TimestampLogicalType:
		if isTime {
			return errUnsupported
		}
		have = lt.TimeUnit()
	case schema.TimeLogicalType:
		if !isTime {
			return errUnsupported
		}
		have = lt.TimeUnit()
	case nil, schema.NoLogicalType:
	default:
		return errUnsupported
	}
	if unitsPer[have] > unitsPer[want] {
		return fmt.Errorf("stored unit is finer than the column's")
	}
	c.scale = unitsPer[want] / unitsPer[have]
	switch phys {
	case parquet.Types.Int64:
		if c.scale == 1 {
			return c.use(true, asInt64)
		}
		return c.use(true, scaleInt64)
	case parquet.Types.Int32:
		return c.use(isTime && have == schema.TimeUnitMillis, scaleInt32)
	}
	return errUnsupported
}

func (c *Column) planDecimal(t iceberg.DecimalType, phys parquet.Type, lt schema.LogicalType) error {
	dec, ok := lt.(schema.DecimalLogicalType)
	if !ok {
		return errUnsupported
	}
	if int(dec.Scale()) != t.Scale() {
		return fmt.Errorf("stored scale %d differs from the column's %d", dec.Scale(), t.Scale())
	}
	if int(dec.Precision()) > t.Precision() {
		return fmt.Errorf("stored precision %d exceeds the column's %d", dec.Precision(), t.Precision())
	}
	c.precision = t.Precision()
	switch phys {
	case parquet.Types.Int32:
		return c.use(true, decimalFromInt32)
	case parquet.Types.Int64:
		return c.use(true, decimalFromInt64)
	case parquet.Types.FixedLenByteArray, parquet.Types.ByteArray:
		return c.use(true, decimalFromBytes)
	}
	return errUnsupported
}

func (c *Column) wrongType(method parquet.Type) error {
	return fmt.Errorf("hashing: column %s is %s, not %s", c.name, c.physical, method)
}

// Int32s hashes INT32 values.
func (c *Column) Int32s(dst []uint64, vals []int32) ([]uint64, error) {
	if c.physical != parquet.Types.Int32 {
		return dst, c.wrongType(parquet.Types.Int32)
	}
	switch c.conv {
	case asInt32:
		for _, v := range vals {
			dst = append(dst, Uint32(uint32(v)))
		}
	case int32ToInt64:
		for _, v := range vals {
			dst = append(dst, Uint64(uint64(int64(v))))
		}
	case uint32ToInt64:
		for _, v := range vals {
			dst = append(dst, Uint64(uint64(uint32(v))))
		}
	case scaleInt32:
		for _, v := range vals {
			dst = append(dst, Uint64(uint64(int64(v)*c.scale)))
		}
	case decimalFromInt32:
		for _, v := range vals {
			dst = append(dst, Decimal(c.precision, int64(v)>>63, uint64(int64(v))))
		}
	}
	return dst, nil
}

// Int64s hashes INT64 values.
func (c *Column) Int64s(dst []uint64, vals []int64) ([]uint64, error) {
	if c.physical != parquet.Types.Int64 {
		return dst, c.wrongType(parquet.Types.Int64)
	}
	switch c.conv {
	case asInt64:
		for _, v := range vals {
			dst = append(dst, Uint64(uint64(v)))
		}
	case scaleInt64:
		for _, v := range vals {
			dst = append(dst, Uint64(uint64(v*c.scale)))
		}
	case decimalFromInt64:
		if c.precision <= 9 {
			for _, v := range vals {
				if v != int64(int32(v)) {
					return dst, c.decimalRange(fmt.Sprint(v))
				}
			}
		}
		for _, v := range vals {
			dst = append(dst, Decimal(c.precision, v>>63, uint64(v)))
		}
	}
	return dst, nil
}

func (c *Column) decimalRange(v string) error {
	return fmt.Errorf("hashing: column %s: unscaled decimal %s does not fit precision %d", c.name, v, c.precision)
}

// Int96s hashes legacy INT96 timestamps: 8 bytes of nanoseconds within the
// day, then 4 bytes of Julian day, both little-endian.
func (c *Column) Int96s(dst []uint64, vals []parquet.Int96) ([]uint64, error) {
	if c.physical != parquet.Types.Int96 {
		return dst, c.wrongType(parquet.Types.Int96)
	}
	const julianUnixEpoch = 2_440_588
	for _, v := range vals {
		nanosOfDay := int64(binary.LittleEndian.Uint64(v[:8]))
		days := int64(binary.LittleEndian.Uint32(v[8:])) - julianUnixEpoch
		if c.conv == int96ToNanos {
			dst = append(dst, Uint64(uint64(days*86_400_000_000_000+nanosOfDay)))
		} else {
			dst = append(dst, Uint64(uint64(days*86_400_000_000+nanosOfDay/1000)))
		}
	}
	return dst, nil
}

// Float32s hashes FLOAT values, skipping NaN.
func (c *Column) Float32s(dst []uint64, vals []float32) ([]uint64, error) {
	if c.physical != parquet.Types.Float {
		return dst, c.wrongType(parquet.Types.Float)
	}
	for _, v := range vals {
		var h uint64
		var ok bool
		if c.conv == float32ToFloat64 {
			h, ok = Float64(float64(v))
		} else {
			h, ok = Float32(v)
		}
		if ok {
			dst = append(dst, h)
		}
	}
	return dst, nil
}

// Float64s hashes DOUBLE values, skipping NaN.
func (c *Column) Float64s(dst []uint64, vals []float64) ([]uint64, error) {
	if c.physical != parquet.Types.Double {
		return dst, c.wrongType(parquet.Types.Double)
	}
	for _, v := range vals {
		if h, ok := Float64(v); ok {
			dst = append(dst, h)
		}
	}
	return dst, nil
}

// Bools hashes BOOLEAN values.
func (c *Column) Bools(dst []uint64, vals []bool) ([]uint64, error) {
	if c.physical != parquet.Types.Boolean {
		return dst, c.wrongType(parquet.Types.Boolean)
	}
	for _, v := range vals {
		dst = append(dst, Bool(v))
	}
	return dst, nil
}

// ByteArrays hashes BYTE_ARRAY values.
func (c *Column) ByteArrays(dst []uint64, vals []parquet.ByteArray) ([]uint64, error) {
	if c.physical != parquet.Types.ByteArray {
		return dst, c.wrongType(parquet.Types.ByteArray)
	}
	return hashByteValues(c, dst, vals)
}

// FixedLenByteArrays hashes FIXED_LEN_BYTE_ARRAY values.
func (c *Column) FixedLenByteArrays(dst []uint64, vals []parquet.FixedLenByteArray) ([]uint64, error) {
	if c.physical != parquet.Types.FixedLenByteArray {
		return dst, c.wrongType(parquet.Types.FixedLenByteArray)
	}
	return hashByteValues(c, dst, vals)
}

func hashByteValues[B ~[]byte](c *Column, dst []uint64, vals []B) ([]uint64, error) {
	if c.conv == asBytes {
		for _, v := range vals {
			dst = append(dst, Bytes(v))
		}
		return dst, nil
	}
	for _, v := range vals {
		hi, lo, ok := bigEndianToInt128(v)
		if !ok || !fitsDecimal(c.precision, hi, lo) {
			return dst, c.decimalRange(fmt.Sprintf("0x%x", []byte(v)))
		}
		dst = append(dst, Decimal(c.precision, hi, lo))
	}
	return dst, nil
}

// bigEndianToInt128 reads a big-endian two's complement integer of any
// length; ok is false when it does not fit 128 bits.
func bigEndianToInt128(b []byte) (hi int64, lo uint64, ok bool) {
	if len(b) == 0 {
		return 0, 0, true
	}
	sign := uint64(0)
	if b[0]&0x80 != 0 {
		sign = math.MaxUint64
	}
	for len(b) > 16 {
		if uint64(b[0]) != sign&0xff {
			return 0, 0, false
		}
		b = b[1:]
	}
	var buf [16]byte
	for i := range buf {
		buf[i] = byte(sign)
	}
	copy(buf[16-len(b):], b)
	if (buf[16-len(b)]&0x80 != 0) != (sign != 0) {
		return 0, 0, false // stripped sign bytes changed the sign
	}
	return int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:]), true
}

// fitsDecimal reports whether an unscaled value fits the canonical width of
// a decimal of precision p, so its canonical encoding is exact.
func fitsDecimal(p int, hi int64, lo uint64) bool {
	switch {
	case p <= 9:
		return hi == int64(lo)>>63 && int64(lo) == int64(int32(lo))
	case p <= 18:
		return hi == int64(lo)>>63
	}
	// Precision 19 and up takes 9 to 16 bytes: the bits above the lowest
	// 8n-1 (all within the high word) must repeat the sign.
	top := hi >> (8*DecimalBytes(p) - 1 - 64)
	return top == 0 || top == -1
}
