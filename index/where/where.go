package where

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// Parse parses the filter of the lookup command, SQL as people write
// it after WHERE:
//
//	filter    = or
//	or        = and { OR and }
//	and       = not { AND not }
//	not       = NOT not | primary
//	primary   = "(" or ")" | column op literal
//	          | column [NOT] IN "(" literal { "," literal } ")"
//	          | column [NOT] BETWEEN literal AND literal
//	          | column IS [NOT] NULL
//	op        = "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	column    = name { "." name } | '"' text '"'       ("" stands for ")
//	literal   = number | "'" text "'" | TRUE | FALSE   ('' stands for ')
//	          | X "'" hex "'" | DATE "'" text "'"
//	          | TIMESTAMP [WITHOUT TIME ZONE] "'" text "'"
//	          | ( TIMESTAMPTZ | TIMESTAMP WITH TIME ZONE ) "'" text "'"
//
// Keywords are case-insensitive. Numbers are written unquoted: whole numbers
// become long literals (decimal ones beyond the 64-bit range), numbers with
// a point decimal literals of the scale written (12.50 has scale 2), and
// numbers with an exponent double literals. Quoted text becomes a string
// literal, to be read as the column's type when bound: dates as
// '2024-01-31', timestamps as '2024-01-31 10:00:00.123456' (or with a T
// for the space), with a zone (Z, UTC, +00, +00:00, -05:30) when the column
// has one and without one when it has not, uuids and decimals as usual.
// A typed literal binds only to a column of its type (DATE to date,
// TIMESTAMP to timestamp, TIMESTAMPTZ to timestamptz, at any precision) and
// is checked here: a TIMESTAMPTZ names its zone. X'00ff' is binary.
// Dotted names reach nested fields.
//
// BETWEEN includes its bounds; NOT BETWEEN is the opposite. Every form
// reaches iceberg-go's statistics pruning and the scan's row filter, but
// only = and IN prune with the index (docs/format.md §5).
//
// The literals are converted when the expression is bound (see Bind), which
// names the column and the value that does not fit. A syntax error names the
// position (in characters, from 1; line and column when the filter has
// several lines) and what was found there.
func Parse(s string) (iceberg.BooleanExpression, error) {
	p := parser{lex: lexer{src: s, multiline: strings.ContainsAny(s, "\n\r"), line: 1}}
	p.next()
	expr := p.or()
	if p.err == nil && p.tok.kind != tokEOF {
		p.fail("expected AND, OR or the end of the filter")
	}
	if p.err != nil {
		return nil, p.err
	}
	return expr, nil
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokName
	tokQuotedName
	tokString
	tokBinary // X'…', its text the hex digits
	tokNumber
	tokPunct // ( ) , = <= <> and any other character
)

type token struct {
	kind tokenKind
	text string // the name, the string's content, the number or the operator
	at   string // where it starts, for errors: "position 7" or "line 2, column 3"
	off  int    // where it starts, as a byte offset
}

// SyntaxError is an error of Parse: what is wrong, and where.
type SyntaxError struct {
	// Offset is the byte offset in the filter of the token the error is
	// about (its length at the end of the filter).
	Offset int
	msg    string
	err    error
}

func (e *SyntaxError) Error() string { return e.msg }

// Unwrap returns the cause of a literal that does not parse.
func (e *SyntaxError) Unwrap() error { return e.err }

// syntaxError is a SyntaxError at tok whose message starts with where tok
// is; a %w in format is its cause.
func syntaxError(tok token, format string, args ...any) error {
	err := fmt.Errorf("%s: "+format, append([]any{tok.at}, args...)...)
	return &SyntaxError{Offset: tok.off, msg: err.Error(), err: errors.Unwrap(err)}
}

// describe names the token for an error.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the filter"
	case tokString:
		return fmt.Sprintf("string %s", Quote(iceberg.StringLiteral(t.text)))
	case tokBinary:
		return fmt.Sprintf("X%s", Quote(iceberg.StringLiteral(t.text)))
	case tokQuotedName:
		return fmt.Sprintf("name %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

type lexer struct {
	src       string
	multiline bool // errors then say line and column
	off       int  // byte offset of the next character
	pos       int  // the number of characters before it
	line, col int  // of the next character, from 1 and 0
}

// peek returns the next character without consuming it (-1 at the end).
func (l *lexer) peek() rune {
	if l.off >= len(l.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	return r
}

func (l *lexer) advance() rune {
	r, n := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += n
	l.pos++
	l.col++
	if r == '\n' || r == '\r' && !strings.HasPrefix(l.src[l.off:], "\n") {
		l.line, l.col = l.line+1, 0
	}
	return r
}

// at says where the next character is, for errors.
func (l *lexer) at() string {
	if l.multiline {
		return fmt.Sprintf("line %d, column %d", l.line, l.col+1)
	}
	return fmt.Sprintf("position %d", l.pos+1)
}

// scan returns the next token; unterminated quotes are errors.
func (l *lexer) scan() (token, error) {
	for unicode.IsSpace(l.peek()) {
		l.advance()
	}
	start, at := l.off, l.at()
	tok := func(kind tokenKind, text string) (token, error) {
		return token{kind: kind, text: text, at: at, off: start}, nil
	}
	switch r := l.peek(); {
	case r == -1:
		return tok(tokEOF, "")
	case (r == 'x' || r == 'X') && strings.HasPrefix(l.src[l.off+1:], "'"):
		l.advance()
		text, ok := l.quoted('\'')
		if !ok {
			return token{}, syntaxError(token{at: at, off: start}, "unterminated '")
		}
		return tok(tokBinary, text)
	case r == '\'' || r == '"':
		text, ok := l.quoted(r)
		if !ok {
			return token{}, syntaxError(token{at: at, off: start}, "unterminated %c", r)
		}
		if r == '"' {
			return tok(tokQuotedName, text)
		}
		return tok(tokString, text)
	case isNameStart(r):
		for isNamePart(l.peek()) || l.peek() == '.' {
			l.advance()
		}
		return tok(tokName, l.src[start:l.off])
	case r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+':
		l.number()
		return tok(tokNumber, l.src[start:l.off])
	default:
		l.advance()
		if op := l.src[start:l.off] + string(l.peek()); op == "<=" || op == ">=" || op == "<>" || op == "!=" {
			l.advance()
		}
		return tok(tokPunct, l.src[start:l.off])
	}
}

func isNameStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isNamePart(r rune) bool  { return isNameStart(r) || unicode.IsDigit(r) }

// quoted consumes text in quotes q, in which a doubled q stands for one.
func (l *lexer) quoted(q rune) (string, bool) {
	l.advance()
	var b strings.Builder
	for {
		switch r := l.peek(); r {
		case -1:
			return "", false
		case q:
			l.advance()
			if l.peek() != q {
				return b.String(), true
			}
			fallthrough
		default:
			b.WriteRune(l.advance())
		}
	}
}

// number consumes what may be a number: a sign, then digits, letters, points
// and signs after an exponent; parseNumber decides whether it is one.
func (l *lexer) number() {
	l.advance()
	for {
		r := l.peek()
		prev := l.src[l.off-1]
		switch {
		case r >= '0' && r <= '9' || r == '.' || isNameStart(r):
		case (r == '-' || r == '+') && (prev == 'e' || prev == 'E'):
		default:
			return
		}
		l.advance()
	}
}

// parseNumber makes a literal of a number's text: long for a whole number,
// decimal for one with a point or too large for a long, double for one with
// an exponent.
func parseNumber(text string) (iceberg.Literal, error) {
	if !decimalText.MatchString(text) {
		return nil, errors.New("not a number")
	}
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, errOutOfRange
		}
		return iceberg.Float64Literal(f), nil
	}
	if !strings.Contains(text, ".") {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return iceberg.Int64Literal(n), nil
		}
	}
	whole, frac, _ := strings.Cut(text, ".")
	if len(frac) > maxScale {
		return nil, fmt.Errorf("more than %d digits after the point", maxScale)
	}
	unscaled, _ := new(big.Int).SetString(whole+frac, 10) // the pattern admits only digits
	if new(big.Int).Abs(unscaled).Cmp(maxUnscaled) >= 0 {
		return nil, errOutOfRange
	}
	return iceberg.DecimalLiteral{Val: decimal128.FromBigInt(unscaled), Scale: len(frac)}, nil
}

// maxScale is the largest scale of an Iceberg decimal.
const maxScale = 38

// parser is a recursive-descent parser with one token of lookahead. The
// first error stops it: every method returns at once after one.
type parser struct {
	lex    lexer
	tok    token
	err    error
	values int // literals read so far, at most MaxValues
}

// MaxValues bounds the literals of one filter (the values of its IN
// lists and comparisons): planning and binding grow with them, and a
// filter of 2,000,000 values once took 435 s and 2.3 GB before an answer.
// A longer list is split into several lookups.
const MaxValues = 100_000

func (p *parser) next() {
	if p.err != nil {
		return
	}
	p.tok, p.err = p.lex.scan()
}

func (p *parser) fail(expected string) {
	if p.err == nil {
		p.err = syntaxError(p.tok, "%s, found %s", expected, p.tok.describe())
	}
}

func (p *parser) keyword(word string) bool {
	return p.tok.kind == tokName && strings.EqualFold(p.tok.text, word)
}

// expect consumes keyword word, or fails.
func (p *parser) expect(word, after string) bool {
	if !p.keyword(word) {
		p.fail(fmt.Sprintf("expected %s after %s", strings.ToUpper(word), after))
		return false
	}
	p.next()
	return p.err == nil
}

func (p *parser) punct(c string) bool {
	return p.tok.kind == tokPunct && p.tok.text == c
}

func (p *parser) or() iceberg.BooleanExpression  { return p.chain("or", p.and, iceberg.NewOr) }
func (p *parser) and() iceberg.BooleanExpression { return p.chain("and", p.not, iceberg.NewAnd) }

// chain parses operand { word operand }, joining the operands from the left
// with join (iceberg.NewAnd or iceberg.NewOr).
func (p *parser) chain(word string, operand func() iceberg.BooleanExpression,
	join func(left, right iceberg.BooleanExpression, more ...iceberg.BooleanExpression) iceberg.BooleanExpression) iceberg.BooleanExpression {
	left := operand()
	for p.err == nil && p.keyword(word) {
		p.next()
		right := operand()
		if p.err != nil {
			return nil
		}
		left = join(left, right)
	}
	return left
}

// not parses NOT not | primary: NOT binds more tightly than AND, less than
// a comparison (NOT a = 1 is NOT (a = 1)).
func (p *parser) not() iceberg.BooleanExpression {
	if !p.keyword("not") {
		return p.primary()
	}
	p.next()
	child := p.not()
	if p.err != nil {
		return nil
	}
	return iceberg.NewNot(child)
}

// comparisons are the operators of column op literal.
var comparisons = map[string]iceberg.Operation{
	"=": iceberg.OpEQ, "!=": iceberg.OpNEQ, "<>": iceberg.OpNEQ,
	"<": iceberg.OpLT, "<=": iceberg.OpLTEQ, ">": iceberg.OpGT, ">=": iceberg.OpGTEQ,
}

// primary returns nil after an error; callers return before using it.
func (p *parser) primary() iceberg.BooleanExpression {
	if p.punct("(") {
		p.next()
		expr := p.or()
		if !p.punct(")") {
			p.fail("expected )")
		}
		p.next()
		return expr
	}
	col, ok := p.column()
	if !ok {
		return nil
	}
	if op, ok := comparisons[p.tok.text]; ok && p.tok.kind == tokPunct {
		p.next()
		lit, ok := p.literal()
		if !ok {
			return nil
		}
		return &predicate{op: op, ref: col, lits: []iceberg.Literal{lit}}
	}
	negated := p.keyword("not")
	if negated {
		p.next()
	}
	switch {
	case p.keyword("in"):
		p.next()
		lits, ok := p.list()
		if !ok {
			return nil
		}
		op := iceberg.OpIn
		if negated {
			op = iceberg.OpNotIn
		}
		if len(lits) == 1 {
			op = map[bool]iceberg.Operation{false: iceberg.OpEQ, true: iceberg.OpNEQ}[negated]
		}
		return &predicate{op: op, ref: col, lits: lits}
	case p.keyword("between"):
		p.next()
		lo, ok := p.literal()
		if !ok || !p.expect("and", "BETWEEN "+Quote(lo)) {
			return nil
		}
		hi, ok := p.literal()
		if !ok {
			return nil
		}
		if negated {
			return iceberg.NewOr(&predicate{op: iceberg.OpLT, ref: col, lits: []iceberg.Literal{lo}},
				&predicate{op: iceberg.OpGT, ref: col, lits: []iceberg.Literal{hi}})
		}
		return iceberg.NewAnd(&predicate{op: iceberg.OpGTEQ, ref: col, lits: []iceberg.Literal{lo}},
			&predicate{op: iceberg.OpLTEQ, ref: col, lits: []iceberg.Literal{hi}})
	case negated:
		p.fail(fmt.Sprintf("expected IN or BETWEEN after %s NOT", string(col)))
		return nil
	case p.keyword("is"):
		p.next()
		op := iceberg.OpIsNull
		if p.keyword("not") {
			op = iceberg.OpNotNull
			p.next()
		}
		if !p.expect("null", "IS") {
			return nil
		}
		return &predicate{op: op, ref: col}
	}
	p.fail(fmt.Sprintf("expected a comparison, IN, BETWEEN or IS after %s", string(col)))
	return nil
}

func (p *parser) column() (iceberg.Reference, bool) {
	isKeyword := p.keyword("and") || p.keyword("or") || p.keyword("not") || p.keyword("in")
	if p.tok.kind == tokQuotedName || p.tok.kind == tokName && !isKeyword {
		name := p.tok.text
		p.next()
		return iceberg.Reference(name), p.err == nil
	}
	p.fail("expected a column or (")
	return "", false
}

// list parses "(" literal { "," literal } ")".
func (p *parser) list() ([]iceberg.Literal, bool) {
	if !p.punct("(") {
		p.fail("expected ( after IN")
		return nil, false
	}
	var lits []iceberg.Literal
	for {
		p.next()
		lit, ok := p.literal()
		if !ok {
			return nil, false
		}
		lits = append(lits, lit)
		if p.punct(")") {
			p.next()
			return lits, p.err == nil
		}
		if !p.punct(",") {
			p.fail("expected , or )")
			return nil, false
		}
	}
}

func (p *parser) literal() (iceberg.Literal, bool) {
	tok := p.tok
	if p.values++; p.values > MaxValues {
		if p.err == nil {
			p.err = syntaxError(tok, "more than %d values in the filter, the limit: split it into several lookups", MaxValues)
		}
		return nil, false
	}
	invalid := func(err error) (iceberg.Literal, bool) {
		p.err = syntaxError(tok, "%s: %w", tok.describe(), err)
		return nil, false
	}
	var lit iceberg.Literal
	switch {
	case tok.kind == tokString:
		lit = iceberg.StringLiteral(tok.text)
	case tok.kind == tokBinary:
		b, err := hex.DecodeString(tok.text)
		if err != nil {
			return invalid(errors.New("not hexadecimal digits in pairs"))
		}
		lit = iceberg.BinaryLiteral(b)
	case tok.kind == tokNumber:
		n, err := parseNumber(tok.text)
		if err != nil {
			return invalid(err)
		}
		lit = n
	case p.keyword("true") || p.keyword("false"):
		lit = iceberg.BoolLiteral(p.keyword("true"))
	case p.keyword("date") || p.keyword("timestamp") || p.keyword("timestamptz"):
		return p.typed()
	default:
		p.fail("expected a number, a quoted value, TRUE or FALSE")
		return nil, false
	}
	p.next()
	return lit, p.err == nil
}

// typed parses a typed literal, DATE '…', TIMESTAMP '…' and TIMESTAMPTZ '…'
// or TIMESTAMP WITH TIME ZONE '…', and checks its text.
func (p *parser) typed() (iceberg.Literal, bool) {
	typ := map[string]iceberg.PrimitiveType{
		"date":        iceberg.PrimitiveTypes.Date,
		"timestamp":   iceberg.PrimitiveTypes.Timestamp,
		"timestamptz": iceberg.PrimitiveTypes.TimestampTz,
	}[strings.ToLower(p.tok.text)]
	p.next()
	if typ == iceberg.PrimitiveTypes.Timestamp && (p.keyword("with") || p.keyword("without")) {
		if p.keyword("with") {
			typ = iceberg.PrimitiveTypes.TimestampTz
		}
		p.next()
		if !p.expect("time", "WITH") || !p.expect("zone", "TIME") {
			return nil, false
		}
	}
	lit := typedLiteral{typ: typ, text: p.tok.text}
	if p.tok.kind != tokString {
		p.fail(fmt.Sprintf("expected a quoted value after %s", lit.keyword()))
		return nil, false
	}
	if err := lit.check(); err != nil {
		p.err = syntaxError(p.tok, "%s: %w", lit, err)
		return nil, false
	}
	p.next()
	return lit, p.err == nil
}

// typedLiteral is a literal written with its type: DATE '2024-01-31',
// TIMESTAMP '2024-01-31 10:00:00' or TIMESTAMPTZ '2024-01-31 10:00:00Z'.
// Its text is read when it is bound (see convert), and only as its type or
// the same type at another precision: it never binds to a string column,
// nor a TIMESTAMP to a timestamptz column.
type typedLiteral struct {
	typ  iceberg.PrimitiveType // date, timestamp or timestamptz
	text string
}

// keyword is the type as the filter writes it.
func (l typedLiteral) keyword() string { return strings.ToUpper(l.typ.String()) }

// check reports whether the text is a value of the type, a timestamptz
// one naming its zone.
func (l typedLiteral) check() error {
	if l.typ == iceberg.PrimitiveTypes.Date {
		if _, err := time.Parse(time.DateOnly, l.text); err != nil {
			return errors.New("not a date (YYYY-MM-DD)")
		}
		return nil
	}
	_, zoned, err := parseTimestamp(l.text)
	switch {
	case err != nil:
		return errors.New("not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff])")
	case zoned && l.typ == iceberg.PrimitiveTypes.Timestamp:
		return errors.New("a zone in a TIMESTAMP (write TIMESTAMPTZ)")
	case !zoned && l.typ == iceberg.PrimitiveTypes.TimestampTz:
		return errors.New("no zone (add Z or +00:00)")
	}
	return nil
}

// String writes the literal as the filter does.
func (l typedLiteral) String() string {
	return l.keyword() + " " + Quote(iceberg.StringLiteral(l.text))
}

// Type returns the type the literal was written with.
func (l typedLiteral) Type() iceberg.Type { return l.typ }

// Any returns the text.
func (l typedLiteral) Any() any { return l.text }

// MarshalBinary returns the text's bytes.
func (l typedLiteral) MarshalBinary() ([]byte, error) { return []byte(l.text), nil }

// To converts the literal to t exactly, as Bind does.
func (l typedLiteral) To(t iceberg.Type) (iceberg.Literal, error) {
	c, err := convert(l, t)
	if err == nil && c.exact == nil {
		err = errors.New("no value of the type equals it")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s to %s: %w", iceberg.ErrBadCast, l, t, err)
	}
	return c.exact, nil
}

// Equals reports whether other is the same typed literal.
func (l typedLiteral) Equals(other iceberg.Literal) bool {
	o, ok := other.(typedLiteral)
	return ok && o.typ == l.typ && o.text == l.text
}
