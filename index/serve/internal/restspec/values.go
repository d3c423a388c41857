package restspec

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The single-value forms of the spec's PrimitiveTypeValue (BooleanTypeValue
// ... BinaryTypeValue), as Java's SingleValueParser reads them.
//
// Times and timestamps: the spec writes 'HH:MM:SS.ssssss' (nine digits for
// the _ns types) and 'T' between date and time; Java writes them with
// ISO_LOCAL_TIME, which drops trailing zeros of the fraction (and the point
// when it is zero). The check accepts what both agree on: seconds always,
// a fraction of up to 6 (9) digits, 'T', and +00:00 for the tz types.
var (
	dateForm    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	timeForm    = regexp.MustCompile(`^\d{2}:\d{2}:\d{2}(\.\d{1,6})?$`)
	timeNsForm  = regexp.MustCompile(`^\d{2}:\d{2}:\d{2}(\.\d{1,9})?$`)
	uuidForm    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	upperHex    = regexp.MustCompile(`^([0-9A-F]{2})*$`)
	decimalForm = regexp.MustCompile(`^-?(\d+)(?:\.(\d+))?(?:E([+-]?\d+))?$`)
	decimalType = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$`)
	fixedType   = regexp.MustCompile(`^fixed\[(\d+)\]$`)
)

// value checks v as the single-value form of typ. typ "" (unknown or
// nested) checks only that v is a PrimitiveTypeValue at all. null passes
// when nullable.
func (c *checker) value(path string, v any, typ string, nullable bool) {
	if v == nil {
		if !nullable {
			c.fail(path, v, "a literal is a PrimitiveTypeValue, not null")
		}
		return
	}
	num, isNum := v.(json.Number)
	s, isStr := v.(string)
	switch {
	case typ == "":
		switch v.(type) {
		case bool, json.Number, string:
		default:
			c.fail(path, v, "PrimitiveTypeValue is a JSON boolean, number or string")
		}
	case typ == "boolean":
		c.boolean(path, v, "BooleanTypeValue")
	case typ == "int":
		c.integer(path, v, 32, "IntegerTypeValue (int)")
	case typ == "long":
		c.integer(path, v, 64, "LongTypeValue (long)")
	case typ == "float" || typ == "double":
		// SingleValueParser: isFloatingPointNumber, so 2.0, not 2.
		if !isNum || isIntegral(num) {
			schema := map[string]string{"float": "FloatTypeValue", "double": "DoubleTypeValue"}[typ]
			c.fail(path, v, "%s (%s) is a JSON floating-point number, written with a fraction or exponent (2.0, not 2): Java's SingleValueParser refuses an integer", schema, typ)
		}
	case typ == "string":
		c.str(path, v, "StringTypeValue (string)")
	case typ == "uuid":
		if !isStr || !uuidForm.MatchString(s) {
			c.fail(path, v, "UUIDTypeValue (uuid) is a 36-character lowercase RFC 4122 string")
		}
	case typ == "date":
		if !isStr || !dateForm.MatchString(s) || !validTime("2006-01-02", s) {
			c.fail(path, v, "DateTypeValue (date) is a 'YYYY-MM-DD' string")
		}
	case typ == "time":
		if !isStr || !timeForm.MatchString(s) || !validTime("15:04:05", s) {
			c.fail(path, v, "TimeTypeValue (time) is an 'HH:MM:SS.ssssss' string")
		}
	case typ == "timestamp" || typ == "timestamptz" || typ == "timestamp_ns" || typ == "timestamptz_ns":
		c.timestamp(path, v, typ)
	case typ == "binary":
		if !isStr || !upperHex.MatchString(s) {
			c.fail(path, v, "BinaryTypeValue (binary) is an uppercase hexadecimal string")
		}
	case fixedType.MatchString(typ):
		n, _ := strconv.Atoi(fixedType.FindStringSubmatch(typ)[1])
		if !isStr || !upperHex.MatchString(s) || len(s) != 2*n {
			c.fail(path, v, "FixedTypeValue (%s) is an uppercase hexadecimal string of %d digits", typ, 2*n)
		}
	case decimalType.MatchString(typ):
		c.decimal(path, v, typ)
	default:
		// unknown, variant, geometry, geography: no single-value form
		// the spec gives; only null is checked above.
	}
}

func validTime(layout, s string) bool {
	if i := strings.IndexByte(s, '.'); i >= 0 && strings.Contains(layout, "05") {
		s = s[:i] // the fraction's digits are checked by the pattern
	}
	_, err := time.Parse(layout, s)
	return err == nil
}

// timestamp checks TimestampTypeValue, TimestampTzTypeValue,
// TimestampNanoTypeValue and TimestampTzNanoTypeValue.
func (c *checker) timestamp(path string, v any, typ string) {
	s, _ := v.(string)
	tz := strings.HasPrefix(typ, "timestamptz")
	ns := strings.HasSuffix(typ, "_ns")
	schema := map[string]string{"timestamp": "TimestampTypeValue", "timestamptz": "TimestampTzTypeValue",
		"timestamp_ns": "TimestampNanoTypeValue", "timestamptz_ns": "TimestampTzNanoTypeValue"}[typ]
	form := "YYYY-MM-DDTHH:MM:SS.ssssss"
	if ns {
		form += "sss"
	}
	if tz {
		form += "+00:00"
	}
	ok := true
	if tz {
		s, ok = strings.CutSuffix(s, "+00:00")
	}
	date, clock, found := strings.Cut(s, "T")
	clockForm := timeForm
	if ns {
		clockForm = timeNsForm
	}
	if _, isStr := v.(string); !isStr || !ok || !found || !dateForm.MatchString(date) || !validTime("2006-01-02", date) ||
		!clockForm.MatchString(clock) || !validTime("15:04:05", clock) {
		c.fail(path, v, "%s (%s) is a '%s' string", schema, typ, form)
	}
}

// decimal checks DecimalTypeValue: a string of the type's scale (Java's
// SingleValueParser requires BigDecimal.scale() to equal it): plain digits
// for a positive or zero scale, scientific notation for a negative one.
func (c *checker) decimal(path string, v any, typ string) {
	m := decimalType.FindStringSubmatch(typ)
	precision, _ := strconv.Atoi(m[1])
	scale, _ := strconv.Atoi(m[2])
	s, isStr := v.(string)
	d := decimalForm.FindStringSubmatch(s)
	if !isStr || d == nil {
		c.fail(path, v, "DecimalTypeValue (%s) is a string of a decimal number ('123.4500')", typ)
		return
	}
	exp := 0
	if d[3] != "" {
		exp, _ = strconv.Atoi(d[3])
	}
	if got := len(d[2]) - exp; got != scale {
		c.fail(path, v, "DecimalTypeValue (%s) is written at the type's scale %d, not %d", typ, scale, got)
		return
	}
	if digits := len(strings.TrimLeft(d[1]+d[2], "0")); digits > precision {
		c.fail(path, v, "DecimalTypeValue (%s) has at most %d digits, not %d", typ, precision, digits)
	}
}

// boundWidth is the byte length of the binary single-value form of
// fixed-width types (the table spec's "Binary single-value
// serialization"); 0 for variable-width ones.
func boundWidth(typ string) int {
	switch typ {
	case "boolean":
		return 1
	case "int", "float", "date":
		return 4
	case "long", "double", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns":
		return 8
	case "uuid":
		return 16
	}
	if m := fixedType.FindStringSubmatch(typ); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}
