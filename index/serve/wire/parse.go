package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// ParseValue reads raw, the JSON single value of the Iceberg type typ, as
// Java's SingleValueParser.fromJson reads it, and returns the Go value
// canonical lists for typ, or nil for null. It is as strict as Java: a
// double must be a floating-point token, a decimal a string at the type's
// scale, a timestamptz must have the offset +00:00, a uuid 36 characters,
// fixed exactly its length in hex.
func ParseValue(typ iceberg.Type, raw json.RawMessage) (any, error) {
	tok, err := scalar(raw)
	if err != nil {
		return nil, fmt.Errorf("%s value %s: %w", typ, raw, err)
	}
	if tok == nil {
		return nil, nil
	}
	v, err := parseToken(typ, tok)
	if err != nil {
		return nil, fmt.Errorf("%s value %s: %w", typ, raw, err)
	}
	return v, nil
}

// ParseLiteral is ParseValue as an iceberg.Literal of typ (nil for null).
func ParseLiteral(typ iceberg.Type, raw json.RawMessage) (iceberg.Literal, error) {
	v, err := ParseValue(typ, raw)
	if v == nil || err != nil {
		return nil, err
	}
	return LiteralOf(typ, v), nil
}

// LiteralOf is c, a canonical value of typ (as ParseValue returns it and
// iceberg-go's partition values and rows hold it), as iceberg-go's
// literal; typ tells fixed from binary. It is nil for a value of no
// primitive type.
func LiteralOf(typ iceberg.Type, c any) iceberg.Literal {
	switch v := c.(type) {
	case bool:
		return iceberg.BoolLiteral(v)
	case int32:
		return iceberg.Int32Literal(v)
	case int64:
		return iceberg.Int64Literal(v)
	case float32:
		return iceberg.Float32Literal(v)
	case float64:
		return iceberg.Float64Literal(v)
	case iceberg.Decimal:
		return iceberg.DecimalLiteral(v)
	case iceberg.Date:
		return iceberg.DateLiteral(v)
	case iceberg.Time:
		return iceberg.TimeLiteral(v)
	case iceberg.Timestamp:
		return iceberg.TimestampLiteral(v)
	case iceberg.TimestampNano:
		return iceberg.TimestampNsLiteral(v)
	case string:
		return iceberg.StringLiteral(v)
	case uuid.UUID:
		return iceberg.UUIDLiteral(v)
	case []byte:
		if _, fixed := typ.(iceberg.FixedType); fixed {
			return iceberg.FixedLiteral(v)
		}
		return iceberg.BinaryLiteral(v)
	}
	return nil
}

// scalar is raw's one JSON token: nil, bool, json.Number or string.
func scalar(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); ok {
		return nil, fmt.Errorf("a single value is not a JSON %s", d)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return tok, nil
}

// parseToken reads one non-null token as typ.
func parseToken(typ iceberg.Type, tok any) (any, error) {
	switch typ.(type) {
	case iceberg.BooleanType:
		if b, ok := tok.(bool); ok {
			return b, nil
		}
		return nil, errors.New("not a JSON boolean")
	case iceberg.Float32Type, iceberg.Float64Type:
		if tok == nanText {
			if _, single := typ.(iceberg.Float32Type); single {
				return float32(math.NaN()), nil
			}
			return math.NaN(), nil
		}
		n, ok := tok.(json.Number)
		if !ok {
			return nil, errors.New("not a JSON number")
		}
		return parseNumber(typ, string(n))
	case iceberg.Int32Type, iceberg.Int64Type:
		n, ok := tok.(json.Number)
		if !ok {
			return nil, errors.New("not a JSON number")
		}
		return parseNumber(typ, string(n))
	}
	s, ok := tok.(string)
	if !ok {
		return nil, errors.New("not a JSON string")
	}
	switch t := typ.(type) {
	case iceberg.DecimalType:
		unscaled, scale, err := parseDecimal(s)
		if err != nil {
			return nil, err
		}
		if scale != t.Scale() {
			// Java checks the scale and does not round or pad
			// (iceberg-go's reader rounds or pads to the type's scale).
			return nil, fmt.Errorf("scale %d is not the type's %d", scale, t.Scale())
		}
		if unscaled.BitLen() > 127 {
			return nil, errors.New("beyond 128 bits")
		}
		return iceberg.Decimal{Val: decimal128.FromBigInt(unscaled), Scale: scale}, nil
	case iceberg.DateType:
		d, err := parseISODate(s)
		if err != nil {
			return nil, err
		}
		return iceberg.Date(d.Unix() / 86400), nil
	case iceberg.TimeType:
		ns, err := parseISOTime(s)
		if err != nil {
			return nil, err
		}
		return iceberg.Time(ns / 1000), nil
	case iceberg.TimestampType, iceberg.TimestampTzType:
		_, utc := typ.(iceberg.TimestampTzType)
		ts, err := parseISOTimestamp(s, utc)
		if err != nil {
			return nil, err
		}
		return iceberg.Timestamp(ts.UnixMicro()), nil
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		_, utc := typ.(iceberg.TimestampTzNsType)
		ts, err := parseISOTimestamp(s, utc)
		if err != nil {
			return nil, err
		}
		return iceberg.TimestampNano(ts.UnixNano()), nil
	case iceberg.StringType:
		return s, nil
	case iceberg.UUIDType:
		if len(s) != 36 {
			return nil, errors.New("a uuid is 36 characters")
		}
		return uuid.Parse(s)
	case iceberg.FixedType:
		if len(s) != 2*t.Len() {
			return nil, fmt.Errorf("%d hex digits, not %d", len(s), 2*t.Len())
		}
		return decodeHex(s)
	case iceberg.BinaryType:
		return decodeHex(s)
	}
	return nil, fmt.Errorf("type %s has no single-value form here", typ)
}

func parseNumber(typ iceberg.Type, n string) (any, error) {
	switch typ.(type) {
	case iceberg.Int32Type:
		v, err := parseInteger(n, 32)
		return int32(v), err
	case iceberg.Int64Type:
		return parseInteger(n, 64)
	case iceberg.Float32Type:
		v, err := parseFloat(n, 32)
		return float32(v), err
	default:
		return parseFloat(n, 64)
	}
}

// decodeHex reads hex of either case, as Java does (it upper-cases and
// then decodes with Guava's base16).
func decodeHex(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.ToUpper(s))
	if err != nil {
		return nil, fmt.Errorf("not hex: %w", err)
	}
	return b, nil
}
