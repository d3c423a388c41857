package wire

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Value writes v, a value of the Iceberg type typ, in the spec's JSON
// single-value form (the OpenAPI file's PrimitiveTypeValue, Java's
// SingleValueParser): booleans, ints and longs as JSON; floats and doubles
// as JSON floating-point numbers (2.0, never 2); decimals as strings at
// their scale; dates, times and timestamps in ISO form (timestamptz with
// +00:00); strings and UUIDs as strings; fixed and binary as uppercase hex;
// nil as null. The type decides the form, not v's Go type: a partition
// value of a day transform is a date, of a bucket an int. v may be any Go
// value iceberg-go uses for typ (see canonical), or an iceberg.Literal.
func Value(typ iceberg.Type, v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	c, err := canonical(typ, v)
	if err != nil {
		return nil, err
	}
	text, quoted, err := valueText(typ, c)
	if err != nil {
		return nil, fmt.Errorf("%s value %v: %w", typ, v, err)
	}
	if !quoted {
		return json.RawMessage(text), nil
	}
	return json.Marshal(text)
}

// valueText is c, a canonical value of typ, as the text of its JSON token,
// and whether that text is a JSON string.
func valueText(typ iceberg.Type, c any) (string, bool, error) {
	switch v := c.(type) {
	case bool:
		return strconv.FormatBool(v), false, nil
	case int32:
		return strconv.FormatInt(int64(v), 10), false, nil
	case int64:
		return strconv.FormatInt(v, 10), false, nil
	case float32:
		if v != v {
			return nanText, true, nil
		}
		s, err := formatFloat(float64(v), 32)
		return s, false, err
	case float64:
		if math.IsNaN(v) {
			return nanText, true, nil
		}
		s, err := formatFloat(v, 64)
		return s, false, err
	case iceberg.Decimal:
		return formatDecimal(v.Val.BigInt(), v.Scale), true, nil
	case iceberg.Date:
		return formatDate(v), true, nil
	case iceberg.Time:
		return formatTime(v), true, nil
	case iceberg.Timestamp:
		_, utc := typ.(iceberg.TimestampTzType)
		return formatTimestamp(v.ToTime(), 6, utc), true, nil
	case iceberg.TimestampNano:
		_, utc := typ.(iceberg.TimestampTzNsType)
		return formatTimestamp(v.ToTime(), 9, utc), true, nil
	case string:
		return v, true, nil
	case uuid.UUID:
		return v.String(), true, nil
	case []byte:
		return upperHex(v), true, nil
	}
	return "", false, fmt.Errorf("no single-value form for a %T", c)
}

// upperHex is b as Guava's base16 writes it, which is what Java's
// SingleValueParser and the spec use for fixed, binary, key metadata and
// bounds: uppercase. (Java's readers upper-case before decoding, so they
// would read lowercase too; iceberg-go's read either.)
func upperHex(b []byte) string {
	return strings.ToUpper(hex.EncodeToString(b))
}
