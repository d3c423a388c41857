package lookup

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// ParseWhere parses the filter of the lookup command:
//
//	filter    = or
//	or        = and { OR and }
//	and       = primary { AND primary }
//	primary   = "(" or ")" | column "=" literal | column IN "(" literal { "," literal } ")"
//	column    = name { "." name } | '"' text '"'       ("" stands for ")
//	literal   = number | "'" text "'"                  ('' stands for ')
//
// Keywords are case-insensitive. Numbers are written unquoted: whole numbers
// become long literals (decimal ones beyond the 64-bit range), numbers with
// a point decimal literals of the scale written (12.50 has scale 2), and
// numbers with an exponent double literals. Quoted text becomes a string
// literal, to be read as the column's type when bound: dates as
// '2024-01-31', timestamps as '2024-01-31T10:00:00.123456', uuids and
// decimals as usual. Dotted names reach nested fields.
//
// The literals are converted when the expression is bound (see Bind), which
// names the column and the value that does not fit. A syntax error names the
// position (in characters, from 1) and what was found there.
func ParseWhere(s string) (iceberg.BooleanExpression, error) {
	p := parser{lex: lexer{src: s}}
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
	tokNumber
	tokPunct // ( ) , = and any other single character
)

type token struct {
	kind tokenKind
	text string // the name, the string's content, the number or the character
	pos  int    // in characters, from 1
}

// describe names the token for an error.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the filter"
	case tokString:
		return fmt.Sprintf("string %s", quote(iceberg.StringLiteral(t.text)))
	case tokQuotedName:
		return fmt.Sprintf("name %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

type lexer struct {
	src string
	off int // byte offset of the next character
	pos int // the number of characters before it
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
	return r
}

// scan returns the next token; unterminated quotes are errors.
func (l *lexer) scan() (token, error) {
	for unicode.IsSpace(l.peek()) {
		l.advance()
	}
	start, pos := l.off, l.pos+1
	tok := func(kind tokenKind, text string) (token, error) {
		return token{kind: kind, text: text, pos: pos}, nil
	}
	switch r := l.peek(); {
	case r == -1:
		return tok(tokEOF, "")
	case r == '\'' || r == '"':
		text, ok := l.quoted(r)
		if !ok {
			return token{}, fmt.Errorf("position %d: unterminated %c", pos, r)
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
	lex lexer
	tok token
	err error
}

func (p *parser) next() {
	if p.err != nil {
		return
	}
	p.tok, p.err = p.lex.scan()
}

func (p *parser) fail(expected string) {
	if p.err == nil {
		p.err = fmt.Errorf("position %d: %s, found %s", p.tok.pos, expected, p.tok.describe())
	}
}

func (p *parser) keyword(word string) bool {
	return p.tok.kind == tokName && strings.EqualFold(p.tok.text, word)
}

func (p *parser) punct(c string) bool {
	return p.tok.kind == tokPunct && p.tok.text == c
}

func (p *parser) or() iceberg.BooleanExpression  { return p.chain("or", p.and, iceberg.NewOr) }
func (p *parser) and() iceberg.BooleanExpression { return p.chain("and", p.primary, iceberg.NewAnd) }

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
	switch {
	case p.punct("="):
		p.next()
		lit, ok := p.literal()
		if !ok {
			return nil
		}
		return &predicate{op: iceberg.OpEQ, ref: col, lits: []iceberg.Literal{lit}}
	case p.keyword("in"):
		p.next()
		lits, ok := p.list()
		if !ok {
			return nil
		}
		if len(lits) == 1 {
			return &predicate{op: iceberg.OpEQ, ref: col, lits: lits}
		}
		return &predicate{op: iceberg.OpIn, ref: col, lits: lits}
	}
	p.fail(fmt.Sprintf("expected = or IN after %s", string(col)))
	return nil
}

func (p *parser) column() (iceberg.Reference, bool) {
	isKeyword := p.keyword("and") || p.keyword("or") || p.keyword("in")
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
	var lit iceberg.Literal
	switch p.tok.kind {
	case tokString:
		lit = iceberg.StringLiteral(p.tok.text)
	case tokNumber:
		n, err := parseNumber(p.tok.text)
		if err != nil {
			p.err = fmt.Errorf("position %d: %s: %w", p.tok.pos, p.tok.describe(), err)
			return nil, false
		}
		lit = n
	default:
		p.fail("expected a number or a quoted value")
		return nil, false
	}
	p.next()
	return lit, p.err == nil
}
