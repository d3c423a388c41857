package lookup

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// Bind binds expr to schema as iceberg.BindExpr does, with errors that name
// the column and the value: "user_id: cannot use 'abc' as long" rather than
// iceberg-go's cast errors. Predicates made by ParseWhere also convert their
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
// ParseWhere writes them: op is one of the literal operations (=, !=, <, …)
// with one literal or a set operation (IN, NOT IN) with several.
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

// native returns iceberg-go's unbound form of the predicate with lits.
func (p *predicate) native(lits []iceberg.Literal) iceberg.BooleanExpression {
	if p.op == iceberg.OpIn || p.op == iceberg.OpNotIn {
		return iceberg.SetPredicate(p.op, p.ref, lits)
	}
	return iceberg.LiteralPredicate(p.op, p.ref, lits[0])
}

// String writes the predicate as iceberg-go writes its own, but with a set's
// literals in the order they were written, where iceberg-go's follow its
// map.
func (p *predicate) String() string {
	if p.op == iceberg.OpIn || p.op == iceberg.OpNotIn {
		return fmt.Sprintf("%s(term=%s, {%v})", p.op, p.ref, p.lits)
	}
	return p.native(p.lits).String()
}

// Op returns the predicate's operation.
func (p *predicate) Op() iceberg.Operation { return p.op }

// Term returns the column reference.
func (p *predicate) Term() iceberg.UnboundTerm { return p.ref }

// Negate returns the opposite comparison (= becomes !=, IN becomes NOT IN).
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
func (p *predicate) Bind(schema *iceberg.Schema, caseSensitive bool) (iceberg.BooleanExpression, error) {
	term, err := p.ref.Bind(schema, caseSensitive)
	if err != nil {
		return nil, fmt.Errorf("%s: no such column: %w", string(p.ref), err)
	}
	typ := term.Type()
	lits := make([]iceberg.Literal, len(p.lits))
	for i, lit := range p.lits {
		if lits[i], err = convert(lit, typ); err != nil {
			return nil, bindError(string(p.ref), lit, typ, err)
		}
	}
	return iceberg.BindExpr(schema, p.native(lits), caseSensitive)
}

// quote writes a literal as the filter would: text in single quotes.
func quote(lit iceberg.Literal) string {
	if s, ok := lit.(iceberg.StringLiteral); ok {
		return "'" + strings.ReplaceAll(string(s), "'", "''") + "'"
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
		return fmt.Errorf("%s: cannot use %s as %s", col, quote(lit), typ)
	}
	return fmt.Errorf("%s: cannot use %s as %s: %w", col, quote(lit), typ, why)
}

// convert converts a literal to a column's type. It uses iceberg-go's
// conversions except where they round or lose the value, which a lookup
// must not do silently:
//
//   - numbers for int, long and decimal columns are converted exactly, as
//     rationals: 12.50 fits long only as 12.5 does not, 12.5 fits
//     decimal(12,2) as 12.50 (iceberg-go requires the same scale and turns a
//     decimal into a long by dropping its point), and '12.345' does not fit
//     decimal(12,2) (iceberg-go would round it);
//   - decimals for float and double columns are parsed from their digits, so
//     that 0.1 becomes the float nearest 0.1.
//
// A whole number beyond an int column's range converts, as in iceberg-go,
// to a literal above its maximum (or below its minimum), which matches no
// row; beyond the 64-bit range it is an error.
func convert(lit iceberg.Literal, t iceberg.Type) (iceberg.Literal, error) {
	switch t := t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DecimalType:
		if r, ok := rational(lit); ok {
			return fromRational(r, t)
		}
	case iceberg.Float32Type, iceberg.Float64Type:
		if d, ok := lit.(iceberg.DecimalLiteral); ok {
			f, err := strconv.ParseFloat(d.String(), bits(t))
			if err != nil {
				return nil, errOutOfRange
			}
			return iceberg.Float64Literal(f).To(t)
		}
	}
	out, err := lit.To(t)
	if err != nil {
		return nil, errNotConvertible
	}
	return out, nil
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
// if the type holds it exactly.
func fromRational(r *big.Rat, t iceberg.Type) (iceberg.Literal, error) {
	if d, ok := t.(iceberg.DecimalType); ok {
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10(d.Scale())))
		if !scaled.IsInt() {
			return nil, fmt.Errorf("more than %d digits after the point", d.Scale())
		}
		if new(big.Int).Abs(scaled.Num()).Cmp(maxUnscaled) >= 0 {
			return nil, errOutOfRange
		}
		return iceberg.DecimalLiteral{Val: decimal128.FromBigInt(scaled.Num()), Scale: d.Scale()}, nil
	}
	if !r.IsInt() {
		return nil, errors.New("not a whole number")
	}
	if !r.Num().IsInt64() {
		return nil, errOutOfRange
	}
	return iceberg.Int64Literal(r.Num().Int64()).To(t)
}
