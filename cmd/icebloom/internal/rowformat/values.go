// Package rowformat writes the rows a scan reads: each value as SQL
// prints it (text) or as a JSON value, and the rows in one of scan's
// --format layouts (aligned text, tsv, csv, jsonl, or --output json's
// document), one row at a time so that memory does not grow with the
// rows. It reads no table and knows no flag.
package rowformat

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// How scan prints values. Text follows the Trino CLI, which prints what
// the SQL type holds and nothing else: NULL, decimals with their scale
// (1.50 for decimal(9,2)), timestamps as '2024-01-31 10:00:00.123456' (the
// column's precision, and " UTC" for timestamptz), lists as [1, 2], maps
// as {k=v} and structs as {name=value}; strings unquoted. Two choices are
// ours: doubles in the shortest form that reads back as the same double,
// in plain notation from 1e-6 to 1e21 and with an exponent only beyond
// (0.1, 1234567, 1e+21, as JavaScript and encoding/json print them), and
// binary as the literal --where takes, X'00ff'; and, so that a row stays
// one line of tab-separated cells, backslashes, tabs and line breaks in
// strings escaped as PostgreSQL's COPY text format escapes them.
//
// JSON keeps JSON's types: numbers stay numbers — decimals too, written
// with their scale so no digit is lost — lists are arrays, structs and
// maps with string keys are objects, maps with other keys are arrays of
// {"key", "value"} objects, NULL is null. What JSON has no type for is a
// string: dates, times and timestamps in RFC 3339's form
// (2024-01-31T10:00:00.123456Z), uuids as usual, binary in hex, and
// doubles JSON cannot hold as "NaN", "Infinity" or "-Infinity".

// tsvEscaper keeps a string on its line and in its column of the
// tab-separated text output, as PostgreSQL's COPY text format does:
// backslash, tab, newline and carriage return are written \\, \t, \n and
// \r.
var tsvEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// ValueText renders row i of arr as scan's text output prints it.
func ValueText(arr arrow.Array, i int) string {
	// The common scalars without a builder: scan renders every cell.
	if !arr.IsNull(i) {
		switch a := arr.(type) {
		case *array.Int32:
			return strconv.FormatInt(int64(a.Value(i)), 10)
		case *array.Int64:
			return strconv.FormatInt(a.Value(i), 10)
		case *array.Float64:
			return cellFloat(a.Value(i), 64)
		case *array.String:
			if v := a.Value(i); !strings.ContainsAny(v, "\\\t\n\r") {
				return v
			}
		case *extensions.UUIDArray:
			return a.Value(i).String()
		}
	}
	var b strings.Builder
	writeValueText(&b, arr, i)
	return b.String()
}

func writeValueText(b *strings.Builder, arr arrow.Array, i int) {
	if arr.IsNull(i) {
		b.WriteString("NULL")
		return
	}
	switch a := arr.(type) {
	case *array.Boolean:
		b.WriteString(strconv.FormatBool(a.Value(i)))
	case *array.Int8:
		b.WriteString(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int16:
		b.WriteString(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int32:
		b.WriteString(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int64:
		b.WriteString(strconv.FormatInt(a.Value(i), 10))
	case *array.Uint8:
		b.WriteString(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint16:
		b.WriteString(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint32:
		b.WriteString(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint64:
		b.WriteString(strconv.FormatUint(a.Value(i), 10))
	case *array.Float32:
		b.WriteString(cellFloat(float64(a.Value(i)), 32))
	case *array.Float64:
		b.WriteString(cellFloat(a.Value(i), 64))
	case *array.Decimal128, *array.Decimal256:
		b.WriteString(decimalText(arr, i))
	case *array.Date32, *array.Date64, *array.Time32, *array.Time64:
		b.WriteString(temporalText(arr, i))
	case *array.Timestamp:
		t, layout, zone := timestampOf(a, i)
		b.WriteString(t.Format(strings.Replace(layout, "T", " ", 1)))
		if zone != "" {
			b.WriteString(" " + zone)
		}
	case *array.String:
		tsvEscaper.WriteString(b, a.Value(i))
	case *array.LargeString:
		tsvEscaper.WriteString(b, a.Value(i))
	case *array.StringView:
		tsvEscaper.WriteString(b, a.Value(i))
	case *extensions.UUIDArray:
		b.WriteString(a.Value(i).String())
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		b.WriteString("X'" + hex.EncodeToString(binaryOf(arr, i)) + "'")
	case *array.Map:
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		b.WriteByte('{')
		for j := start; j < end; j++ {
			if j > start {
				b.WriteString(", ")
			}
			writeValueText(b, keys, int(j))
			b.WriteByte('=')
			writeValueText(b, items, int(j))
		}
		b.WriteByte('}')
	case array.ListLike:
		values := a.ListValues()
		start, end := a.ValueOffsets(i)
		b.WriteByte('[')
		for j := start; j < end; j++ {
			if j > start {
				b.WriteString(", ")
			}
			writeValueText(b, values, int(j))
		}
		b.WriteByte(']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b.WriteByte('{')
		for f := range a.NumField() {
			if f > 0 {
				b.WriteString(", ")
			}
			b.WriteString(st.Field(f).Name + "=")
			writeValueText(b, a.Field(f), i)
		}
		b.WriteByte('}')
	case *array.Dictionary:
		writeValueText(b, a.Dictionary(), a.GetValueIndex(i))
	case array.ExtensionArray:
		writeValueText(b, a.Storage(), i)
	default:
		b.WriteString(arr.ValueStr(i))
	}
}

// ValueJSON returns row i of arr as a value encoding/json writes with the
// JSON type closest to the SQL type (see the comment at the top).
func ValueJSON(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8, *array.Int16, *array.Int32, *array.Int64,
		*array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64:
		return json.Number(ValueText(arr, i))
	case *array.Float32:
		return floatJSON(float64(a.Value(i)), 32)
	case *array.Float64:
		return floatJSON(a.Value(i), 64)
	case *array.Decimal128, *array.Decimal256:
		return json.Number(decimalText(arr, i))
	case *array.Date32, *array.Date64, *array.Time32, *array.Time64:
		return temporalText(arr, i)
	case *array.Timestamp:
		t, layout, zone := timestampOf(a, i)
		if zone == "UTC" {
			return t.Format(layout) + "Z"
		} else if zone != "" {
			return t.Format(layout + "Z07:00")
		}
		return t.Format(layout)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *extensions.UUIDArray:
		return a.Value(i).String()
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		return hex.EncodeToString(binaryOf(arr, i))
	case *array.Map:
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		if isString(keys.DataType()) {
			m := make(map[string]any, end-start)
			for j := start; j < end; j++ {
				k, _ := ValueJSON(keys, int(j)).(string) // map keys are never null
				m[k] = ValueJSON(items, int(j))
			}
			return m
		}
		pairs := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			pairs = append(pairs, map[string]any{"key": ValueJSON(keys, int(j)), "value": ValueJSON(items, int(j))})
		}
		return pairs
	case array.ListLike:
		values := a.ListValues()
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, ValueJSON(values, int(j)))
		}
		return out
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := make(map[string]any, a.NumField())
		for f := range a.NumField() {
			m[st.Field(f).Name] = ValueJSON(a.Field(f), i)
		}
		return m
	case *array.Dictionary:
		return ValueJSON(a.Dictionary(), a.GetValueIndex(i))
	case array.ExtensionArray:
		return ValueJSON(a.Storage(), i)
	}
	return arr.GetOneForMarshal(i)
}

func isString(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

// FloatText renders a float as the shortest decimal that reads back as the
// same value of its width (bits 32 or 64): float(0.1) is 0.1, not the
// 0.10000000149011612 its widening to a double holds. Plain notation from
// 1e-6 up to 1e21, an exponent beyond, as ECMAScript's Number.toString and
// encoding/json do; fmt's %v would write 1234567 as 1.234567e+06.
func FloatText(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	if abs := math.Abs(v); abs == 0 || (abs >= 1e-6 && abs < 1e21) {
		return strconv.FormatFloat(v, 'f', -1, bits)
	}
	return strconv.FormatFloat(v, 'g', -1, bits)
}

// cellFloat is a float or double value of a row: FloatText, with ".0"
// after a whole number (3.0, as Trino and Spark print a double), so that
// a double never reads as an integer.
func cellFloat(v float64, bits int) string {
	s := FloatText(v, bits)
	if !math.IsNaN(v) && !math.IsInf(v, 0) && !strings.ContainsAny(s, ".e") { // not 1.5, 1e+21
		s += ".0"
	}
	return s
}

// floatJSON is a float as a JSON number, or as a string for the values
// JSON has no number for (encoding/json refuses them, failing the whole
// output).
func floatJSON(v float64, bits int) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return FloatText(v, bits)
	}
	return json.Number(cellFloat(v, bits))
}

// decimalText renders a decimal with exactly its type's scale: 1.50 for
// decimal(9,2), never 1.5.
func decimalText(arr arrow.Array, i int) string {
	switch a := arr.(type) {
	case *array.Decimal128:
		return decimal128.Num(a.Value(i)).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Decimal256:
		return decimal256.Num(a.Value(i)).ToString(a.DataType().(*arrow.Decimal256Type).Scale)
	}
	return arr.ValueStr(i)
}

// fractionLayout is the layout of a fraction of a second with the digits
// of a time unit: none for seconds, 3 for milliseconds, 6 for Iceberg's
// microseconds, 9 for nanoseconds.
func fractionLayout(unit arrow.TimeUnit) string {
	switch unit {
	case arrow.Millisecond:
		return ".000"
	case arrow.Microsecond:
		return ".000000"
	case arrow.Nanosecond:
		return ".000000000"
	}
	return ""
}

// temporalText renders dates as 2024-01-31 and times of day as
// 10:00:00.123456 (with the digits of the column's unit).
func temporalText(arr arrow.Array, i int) string {
	switch a := arr.(type) {
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Date64:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return a.Value(i).ToTime(unit).Format(time.TimeOnly + fractionLayout(unit))
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return a.Value(i).ToTime(unit).Format(time.TimeOnly + fractionLayout(unit))
	}
	return arr.ValueStr(i)
}

// timestampOf returns a timestamp in its column's zone, the layout that
// prints it with the column's precision (in RFC 3339's form, T and all),
// and the zone's name: "" for a timestamp without zone, "UTC" for
// Iceberg's timestamptz.
func timestampOf(a *array.Timestamp, i int) (t time.Time, layout, zone string) {
	typ := a.DataType().(*arrow.TimestampType)
	t = a.Value(i).ToTime(typ.Unit) // UTC
	if typ.TimeZone != "" {
		zone = "UTC"
		if loc, err := typ.GetZone(); err == nil && loc != nil && loc != time.UTC {
			t, zone = t.In(loc), typ.TimeZone
		}
	}
	return t, "2006-01-02T15:04:05" + fractionLayout(typ.Unit), zone
}

// binaryOf returns the bytes of a binary value.
func binaryOf(arr arrow.Array, i int) []byte {
	switch a := arr.(type) {
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.BinaryView:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	}
	return nil
}
