package where

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index"
)

// Bind binds expr to schema as iceberg.BindExpr does, with errors that name
// the column and the value: "user_id: cannot use 'abc' as long" rather than
// iceberg-go's cast errors. Predicates made by Parse also convert their
// literals more strictly than iceberg-go (see predicate.Bind); other
// unbound predicates bind as iceberg-go binds them, their errors prefixed
// with the column.
func Bind(schema *iceberg.Schema, expr iceberg.BooleanExpression, caseSensitive bool) (iceberg.BooleanExpression, error) {
	return iceberg.VisitExpr(expr, binder{schema, caseSensitive})
}

// binder is iceberg-go's bindVisitor with the errors of foreign predicates
// prefixed by their column. Like it, it reports errors by panicking, which
// iceberg.VisitExpr turns back into an error.
type binder struct {
	schema        *iceberg.Schema
	caseSensitive bool
}

func (binder) VisitTrue() iceberg.BooleanExpression  { return iceberg.AlwaysTrue{} }
func (binder) VisitFalse() iceberg.BooleanExpression { return iceberg.AlwaysFalse{} }
func (binder) VisitNot(child iceberg.BooleanExpression) iceberg.BooleanExpression {
	return iceberg.NewNot(child)
}

func (binder) VisitAnd(left, right iceberg.BooleanExpression) iceberg.BooleanExpression {
	return iceberg.NewAnd(left, right)
}

func (binder) VisitOr(left, right iceberg.BooleanExpression) iceberg.BooleanExpression {
	return iceberg.NewOr(left, right)
}

func (b binder) VisitUnbound(p iceberg.UnboundPredicate) iceberg.BooleanExpression {
	bound, err := p.Bind(b.schema, b.caseSensitive)
	if err != nil {
		if _, ours := p.(*predicate); !ours {
			err = fmt.Errorf("%s: %w", termName(p.Term()), err)
		}
		panic(err)
	}
	return bound
}

func (binder) VisitBound(p iceberg.BoundPredicate) iceberg.BooleanExpression {
	panic(fmt.Errorf("%w: predicate %s is already bound", iceberg.ErrInvalidArgument, p))
}

func termName(t iceberg.UnboundTerm) string {
	if r, ok := t.(iceberg.Reference); ok {
		return string(r)
	}
	return t.String()
}

// predicate is an unbound comparison of a column with literals, as
// Parse writes them: op is one of the literal operations (=, !=, <, …)
// with one literal, a set operation (IN, NOT IN) with several, or IS NULL
// or IS NOT NULL with none.
//
// It is an iceberg.UnboundPredicate of its own, rather than iceberg-go's,
// because iceberg-go's keep their literals to themselves, so neither an
// error naming the value nor a better conversion could be had from them.
// Binding converts the literals to the column's type (convert) and then
// binds iceberg-go's own predicate, so the result is what iceberg-go would
// have bound from literals of the column's type; iceberg-go's scans bind it
// the same way.
type predicate struct {
	op   iceberg.Operation
	ref  iceberg.Reference
	lits []iceberg.Literal
}

// native returns iceberg-go's unbound form of the predicate with op, ref
// and lits.
func native(op iceberg.Operation, ref iceberg.Reference, lits []iceberg.Literal) iceberg.BooleanExpression {
	switch op {
	case iceberg.OpIn, iceberg.OpNotIn:
		return iceberg.SetPredicate(op, ref, lits)
	case iceberg.OpIsNull, iceberg.OpNotNull:
		return iceberg.UnaryPredicate(op, ref)
	}
	return iceberg.LiteralPredicate(op, ref, lits[0])
}

// String writes the predicate as iceberg-go writes its own, but with a set's
// literals in the order they were written, where iceberg-go's follow its
// map.
func (p *predicate) String() string {
	if p.op == iceberg.OpIn || p.op == iceberg.OpNotIn {
		return fmt.Sprintf("%s(term=%s, {%v})", p.op, p.ref, p.lits)
	}
	return native(p.op, p.ref, p.lits).String()
}

// Op returns the predicate's operation.
func (p *predicate) Op() iceberg.Operation { return p.op }

// Term returns the column reference.
func (p *predicate) Term() iceberg.UnboundTerm { return p.ref }

// Negate returns the opposite comparison (= becomes !=, < becomes >=, IN
// becomes NOT IN, IS NULL becomes IS NOT NULL).
func (p *predicate) Negate() iceberg.BooleanExpression {
	return &predicate{op: p.op.Negate(), ref: p.ref, lits: p.lits}
}

// Equals reports whether other is the same comparison with the same
// literals in the same order.
func (p *predicate) Equals(other iceberg.BooleanExpression) bool {
	o, ok := other.(*predicate)
	return ok && p.op == o.op && p.ref == o.ref &&
		slices.EqualFunc(p.lits, o.lits, iceberg.Literal.Equals)
}

// Bind binds the column, converts each literal to its type, naming column
// and value when one does not fit, and binds the result as iceberg-go does.
//
// A number or timestamp that lies between two values of the column's type
// (1.234 for a decimal(9,2) column, 12.5 for a long one, a nanosecond for a
// microsecond timestamp) equals no value: = is then false, != true, IN and
// NOT IN leave it out, and a range compares with the nearest value inside
// it (c < 1.234 is c <= 1.23, c > 1.234 is c >= 1.24).
func (p *predicate) Bind(schema *iceberg.Schema, caseSensitive bool) (iceberg.BooleanExpression, error) {
	field, name, err := findColumn(schema, string(p.ref), caseSensitive)
	if err != nil {
		return nil, err
	}
	op, lits := p.op, make([]iceberg.Literal, 0, len(p.lits))
	for _, lit := range p.lits {
		c, err := convert(lit, field.Type)
		if err != nil {
			return nil, bindError(string(p.ref), lit, field.Type, err)
		}
		switch {
		case c.exact != nil:
			lits = append(lits, c.exact)
		case op == iceberg.OpEQ:
			return iceberg.AlwaysFalse{}, nil
		case op == iceberg.OpNEQ:
			return iceberg.AlwaysTrue{}, nil
		case op == iceberg.OpLT || op == iceberg.OpLTEQ:
			op, lits = iceberg.OpLTEQ, append(lits, c.below)
		case op == iceberg.OpGT || op == iceberg.OpGTEQ:
			op, lits = iceberg.OpGTEQ, append(lits, c.above)
		}
	}
	// Bound by the name found, exactly: iceberg-go's own search regardless
	// of case picks any one of several matches.
	bound, err := iceberg.BindExpr(schema, native(op, iceberg.Reference(name), lits), true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", string(p.ref), err)
	}
	return bound, nil
}

// findColumn returns the field a filter names and its full name in the
// schema. Unless caseSensitive, a name matches regardless of case: the
// field of exactly that name if there is one, else the only one whose name
// differs from it in case; several such fields are an error naming them.
func findColumn(schema *iceberg.Schema, name string, caseSensitive bool) (iceberg.NestedField, string, error) {
	field, ok := schema.FindFieldByName(name)
	if !ok && !caseSensitive {
		matches, err := index.NamesFold(schema, name)
		if err != nil {
			return iceberg.NestedField{}, "", fmt.Errorf("%s: %w", name, err)
		}
		if len(matches) > 1 {
			return iceberg.NestedField{}, "", fmt.Errorf("%s: ambiguous column: matches %s regardless of case",
				name, strings.Join(matches, ", "))
		}
		if len(matches) == 1 {
			field, ok = schema.FindFieldByName(matches[0])
		}
	}
	if !ok {
		return iceberg.NestedField{}, "", &UnknownColumnError{Column: name}
	}
	full, _ := schema.FindColumnName(field.ID)
	if err := comparable(schema, field, full); err != nil {
		return iceberg.NestedField{}, "", err
	}
	return field, full, nil
}

// comparable refuses, with a sentence, what a filter cannot name: a
// struct, list or map column, and a field inside a list or map, where
// iceberg-go's binding said "cannot use 1 as list<int>", "invalid schema"
// or "unhandled bound reference type".
func comparable(schema *iceberg.Schema, field iceberg.NestedField, full string) error {
	parts := strings.Split(full, ".")
	for i := 1; i < len(parts); i++ {
		outer, ok := schema.FindFieldByName(strings.Join(parts[:i], "."))
		if !ok {
			continue
		}
		switch outer.Type.(type) {
		case *iceberg.ListType, *iceberg.MapType:
			return fmt.Errorf("%s is inside %s %s: a filter cannot name the elements of a list nor the keys or values of a map",
				full, outer.Type.Type(), outer.Name)
		}
	}
	switch t := field.Type.(type) {
	case *iceberg.StructType:
		var names []string
		for _, f := range t.FieldList {
			names = append(names, full+"."+f.Name)
		}
		return fmt.Errorf("%s is a struct: a filter compares its fields (%s), not the struct itself", full, strings.Join(names, ", "))
	case *iceberg.ListType, *iceberg.MapType:
		return fmt.Errorf("%s is a %s: a filter can compare or test for NULL only columns of a primitive type and struct fields", full, t.Type())
	}
	return nil
}

// UnknownColumnError is the error of a filter naming a column the table's
// schema does not have, so that a caller can name the columns it has.
type UnknownColumnError struct {
	Column string // as the filter names it
}

// Error names the column: "nope: no such column".
func (e *UnknownColumnError) Error() string { return e.Column + ": no such column" }

// Quote writes a literal as the filter would: text in single quotes,
// binary as X'…', typed literals with their type.
func Quote(lit iceberg.Literal) string {
	switch v := lit.(type) {
	case iceberg.StringLiteral:
		return "'" + strings.ReplaceAll(string(v), "'", "''") + "'"
	case iceberg.BinaryLiteral:
		return "X'" + strings.ToUpper(hex.EncodeToString(v)) + "'"
	case iceberg.BoolLiteral:
		return strings.ToUpper(v.String())
	}
	return lit.String()
}

// errNotConvertible is a conversion failure that needs no more words than
// the column, the value and the type.
var errNotConvertible = errors.New("not convertible")

// bindError says that literal lit of column col does not fit type typ, with
// why when conversion said more than that.
func bindError(col string, lit iceberg.Literal, typ iceberg.Type, why error) error {
	if why == errNotConvertible {
		return fmt.Errorf("%s: cannot use %s as %s", col, Quote(lit), typ)
	}
	return fmt.Errorf("%s: cannot use %s as %s: %w", col, Quote(lit), typ, why)
}

// converted is a literal converted to a column's type: exact when the type
// holds its value; else no value of the type equals it, and below and above
// are the type's nearest values on either side (12 and 13 for 12.5 and a
// long column).
type converted struct{ exact, below, above iceberg.Literal }

// convert converts a literal to a column's type. It uses iceberg-go's
// conversions except where they round or lose the value, which a lookup
// must not do silently:
//
//   - numbers for int, long and decimal columns are converted exactly, as
//     rationals: 12.50 fits long as 12, 12.5 fits decimal(12,2) as 12.50
//     (iceberg-go requires the same scale and turns a decimal into a long
//     by dropping its point), and 12.345 lies between two decimal(12,2)
//     values (iceberg-go would round it);
//   - decimals for float and double columns are parsed from their digits, so
//     that 0.1 becomes the float nearest 0.1;
//   - timestamps are read as engines print them (see parseTimestamp), a
//     nanosecond one for a microsecond column between two values of it;
//   - typed literals (DATE '…', TIMESTAMP '…') convert only to their type.
//
// A whole number beyond an int column's range converts, as in iceberg-go,
// to a literal above its maximum (or below its minimum), which matches no
// row; beyond the 64-bit range it is an error.
func convert(lit iceberg.Literal, t iceberg.Type) (converted, error) {
	switch t := t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DecimalType:
		if r, ok := rational(lit); ok {
			return fromRational(r, t)
		}
	case iceberg.Float32Type, iceberg.Float64Type:
		if d, ok := lit.(iceberg.DecimalLiteral); ok {
			f, err := strconv.ParseFloat(d.String(), bits(t))
			if err != nil {
				return converted{}, errOutOfRange
			}
			out, err := iceberg.Float64Literal(f).To(t)
			return converted{exact: out}, err
		}
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if text, ok := timestampOf(lit, t); ok {
			return fromTimestamp(text, t)
		}
	case iceberg.DateType:
		if typed, ok := lit.(typedLiteral); ok && typed.typ == iceberg.PrimitiveTypes.Date {
			lit = iceberg.StringLiteral(typed.text)
		}
	}
	if _, typed := lit.(typedLiteral); typed {
		return converted{}, errNotConvertible
	}
	out, err := lit.To(t)
	if err != nil {
		return converted{}, errNotConvertible
	}
	return converted{exact: out}, nil
}

// timestampOf returns the text of a string literal, or of a typed literal
// of t's kind (TIMESTAMP for a timestamp column, TIMESTAMPTZ for a
// timestamptz one).
func timestampOf(lit iceberg.Literal, t iceberg.Type) (string, bool) {
	switch v := lit.(type) {
	case iceberg.StringLiteral:
		return string(v), true
	case typedLiteral:
		isZoned := v.typ == iceberg.PrimitiveTypes.TimestampTz
		if v.typ != iceberg.PrimitiveTypes.Date && isZoned == zoned(t) {
			return v.text, true
		}
	}
	return "", false
}

// zoned reports whether a timestamp type is one with a zone.
func zoned(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.TimestampTzType, iceberg.TimestampTzNsType:
		return true
	}
	return false
}

// timestampText is a timestamp as engines print them: date, a T or a
// space, the time of day with seconds and their fraction optional, and a
// zone.
var timestampText = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})(:\d{2}(?:\.\d{1,9})?)?\s*([Zz]|UTC|[+-]\d{2}(?::?\d{2})?)?$`)

// parseTimestamp reads a timestamp as Iceberg, Spark, Trino, PostgreSQL
// and DuckDB print them: '2024-01-31T10:00:00.123456',
// '2024-01-31 10:00:00.123456', and with a zone for timestamptz
// ('…Z', '… UTC', '…+00', '…+00:00', '…-05:30'). It returns the time in UTC
// and whether a zone was written.
func parseTimestamp(s string) (time.Time, bool, error) {
	m := timestampText.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.Time{}, false, errNotConvertible
	}
	seconds := m[3]
	if seconds == "" {
		seconds = ":00"
	}
	t, err := time.Parse("2006-01-02T15:04:05.999999999", m[1]+"T"+m[2]+seconds)
	if err != nil {
		return time.Time{}, false, errNotConvertible
	}
	zone := m[4]
	if zone == "" {
		return t, false, nil
	}
	if digits := strings.ReplaceAll(zone, ":", ""); zone[0] == '+' || zone[0] == '-' {
		h, _ := strconv.Atoi(digits[1:3])
		var min int
		if len(digits) == 5 {
			min, _ = strconv.Atoi(digits[3:])
		}
		if h > 18 || min > 59 {
			return time.Time{}, false, errNotConvertible
		}
		offset := time.Duration(h)*time.Hour + time.Duration(min)*time.Minute
		if zone[0] == '+' {
			offset = -offset
		}
		t = t.Add(offset)
	}
	return t, true, nil
}

// nanoRange bounds the times a nanosecond timestamp holds.
var nanoRange = [2]time.Time{time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)}

// fromTimestamp converts a timestamp's text to a timestamp column's type t:
// with a zone for a column with one, without for one without (that
// timestamptz values were written with their zone is the only way to tell
// them apart from a session's local time).
func fromTimestamp(text string, t iceberg.Type) (converted, error) {
	tm, hasZone, err := parseTimestamp(text)
	switch {
	case err != nil:
		return converted{}, err
	case hasZone && !zoned(t):
		return converted{}, errors.New("a zone, for a column without one")
	case !hasZone && zoned(t):
		return converted{}, errors.New("no zone, for a column with one (add Z or +00:00)")
	}
	switch t.(type) {
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if tm.Before(nanoRange[0]) || tm.After(nanoRange[1]) {
			return converted{}, errOutOfRange
		}
		return converted{exact: iceberg.TimestampNsLiteral(tm.UnixNano())}, nil
	}
	micros := tm.UnixMicro() // rounded down: the nanoseconds are never negative
	if tm.Nanosecond()%1000 != 0 {
		return converted{below: iceberg.TimestampLiteral(micros), above: iceberg.TimestampLiteral(micros + 1)}, nil
	}
	return converted{exact: iceberg.TimestampLiteral(micros)}, nil
}

func bits(t iceberg.Type) int {
	if _, single := t.(iceberg.Float32Type); single {
		return 32
	}
	return 64
}

// decimalText is a number written in decimal, as rational accepts it from
// text: no hexadecimal, fractions, infinities or spaces.
var decimalText = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,4})?$`)

// rational returns the exact value of a numeric literal, or of text that
// spells a decimal number; ok is false for anything else (including NaN).
// A float literal counts as the shortest decimal that reads back as it,
// which is what was written.
func rational(lit iceberg.Literal) (r *big.Rat, ok bool) {
	var text string
	switch v := lit.(type) {
	case iceberg.Int32Literal:
		return new(big.Rat).SetInt64(int64(v)), true
	case iceberg.Int64Literal:
		return new(big.Rat).SetInt64(int64(v)), true
	case iceberg.DecimalLiteral:
		return new(big.Rat).SetFrac(v.Val.BigInt(), pow10(v.Scale)), true
	case iceberg.Float32Literal:
		text = strconv.FormatFloat(float64(v), 'g', -1, 32)
	case iceberg.Float64Literal:
		text = strconv.FormatFloat(float64(v), 'g', -1, 64)
	case iceberg.StringLiteral:
		text = string(v)
	default:
		return nil, false
	}
	// The pattern bounds the exponent, so SetString cannot be made to
	// build an enormous power of ten.
	if !decimalText.MatchString(text) {
		return nil, false
	}
	return new(big.Rat).SetString(text)
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

var errOutOfRange = errors.New("out of range")

// maxUnscaled bounds the unscaled value of a decimal: 38 digits.
var maxUnscaled = pow10(38)

// fromRational converts an exact number to an int, long or decimal literal
// if the type holds it exactly, else to the type's nearest values below and
// above it.
func fromRational(r *big.Rat, t iceberg.Type) (converted, error) {
	scale := 0
	if d, ok := t.(iceberg.DecimalType); ok {
		scale = d.Scale()
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10(scale)))
	if scaled.IsInt() {
		lit, err := scaledLiteral(scaled.Num(), t)
		return converted{exact: lit}, err
	}
	// Num/Denom rounded down, then the next one up.
	floor := new(big.Int).Div(scaled.Num(), scaled.Denom()) // Euclidean: down for a positive divisor
	below, err := scaledLiteral(floor, t)
	if err != nil {
		return converted{}, err
	}
	above, err := scaledLiteral(floor.Add(floor, big.NewInt(1)), t)
	if err != nil {
		return converted{}, err
	}
	return converted{below: below, above: above}, nil
}

// scaledLiteral makes a literal of t from a value scaled by t's scale.
func scaledLiteral(v *big.Int, t iceberg.Type) (iceberg.Literal, error) {
	if d, ok := t.(iceberg.DecimalType); ok {
		if new(big.Int).Abs(v).Cmp(maxUnscaled) >= 0 {
			return nil, errOutOfRange
		}
		return iceberg.DecimalLiteral{Val: decimal128.FromBigInt(v), Scale: d.Scale()}, nil
	}
	if !v.IsInt64() {
		return nil, errOutOfRange
	}
	return iceberg.Int64Literal(v.Int64()).To(t)
}
