package wire

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// canonical turns v, a value of Iceberg type typ as iceberg-go hands it
// out, into the one Go type this package keeps for typ:
//
//	boolean        bool
//	int            int32
//	long           int64
//	float          float32
//	double         float64
//	decimal(P, S)  iceberg.Decimal at scale S
//	date           iceberg.Date
//	time           iceberg.Time
//	timestamp(tz)  iceberg.Timestamp
//	timestamp_ns   iceberg.TimestampNano (with or without zone)
//	string         string
//	uuid           uuid.UUID
//	fixed, binary  []byte
//
// It takes iceberg-go's literals (iceberg.Int32Literal, …) as well as the
// values DataFile.Partition returns, which depend on the manifest: with
// the Avro logical type, iceberg.Date, iceberg.Time, iceberg.Timestamp,
// iceberg.TimestampNano, iceberg.DecimalLiteral and uuid.UUID; without it,
// the raw int32, int64, []byte or [16]byte. Fixed and binary values are
// []byte; a DataFileBuilder may hold iceberg.Decimal or arrays.
func canonical(typ iceberg.Type, v any) (any, error) {
	if l, ok := v.(iceberg.Literal); ok {
		v = l.Any()
	}
	switch t := typ.(type) {
	case iceberg.BooleanType:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case iceberg.Int32Type:
		if n, ok := integer(v); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			return int32(n), nil
		}
	case iceberg.Int64Type:
		if n, ok := integer(v); ok {
			return n, nil
		}
	case iceberg.Float32Type:
		switch f := v.(type) {
		case float32:
			return f, nil
		case float64:
			return float32(f), nil
		}
	case iceberg.Float64Type:
		switch f := v.(type) {
		case float64:
			return f, nil
		case float32:
			return float64(f), nil
		}
	case iceberg.DecimalType:
		return canonicalDecimal(t, v)
	case iceberg.DateType:
		switch d := v.(type) {
		case iceberg.Date:
			return d, nil
		case int32:
			return iceberg.Date(d), nil
		case time.Time:
			return iceberg.Date(d.Unix() / 86400), nil
		}
	case iceberg.TimeType:
		switch d := v.(type) {
		case iceberg.Time:
			return d, nil
		case int64:
			return iceberg.Time(d), nil
		case time.Duration:
			return iceberg.Time(d.Microseconds()), nil
		}
	case iceberg.TimestampType, iceberg.TimestampTzType:
		switch d := v.(type) {
		case iceberg.Timestamp:
			return d, nil
		case int64:
			return iceberg.Timestamp(d), nil
		case time.Time:
			return iceberg.Timestamp(d.UnixMicro()), nil
		}
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		switch d := v.(type) {
		case iceberg.TimestampNano:
			return d, nil
		case int64:
			return iceberg.TimestampNano(d), nil
		case time.Time:
			return iceberg.TimestampNano(d.UnixNano()), nil
		}
	case iceberg.StringType:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case iceberg.UUIDType:
		switch u := v.(type) {
		case uuid.UUID:
			return u, nil
		case string:
			return uuid.Parse(u)
		}
		if b, ok := byteSlice(v); ok && len(b) == 16 {
			return uuid.UUID(b), nil
		}
	case iceberg.FixedType:
		if b, ok := byteSlice(v); ok {
			if len(b) != t.Len() {
				return nil, fmt.Errorf("a %s value has %d bytes, not %d", typ, t.Len(), len(b))
			}
			return b, nil
		}
	case iceberg.BinaryType:
		if b, ok := byteSlice(v); ok {
			return b, nil
		}
	default:
		return nil, fmt.Errorf("type %s has no single-value form here", typ)
	}
	return nil, fmt.Errorf("a %T (%v) is not a %s value", v, v, typ)
}

// integer is v as an int64 if v is a Go integer.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// byteSlice is v's bytes if v is a []byte or a byte array ([N]byte).
func byteSlice(v any) ([]byte, bool) {
	if b, ok := v.([]byte); ok {
		return b, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return b, true
	}
	return nil, false
}
