package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
)

// Expression writes expr in the REST expression JSON (the spec's
// Expression; what Java's ExpressionParser reads), as a residual-filter or
// filter: true and false for AlwaysTrue and AlwaysFalse, {"type": "and",
// "left", "right"}, {"type": "or", …}, {"type": "not", "child"}, and a
// predicate as {"type": "eq", "term": "name", "value": v} (values for in
// and not-in, neither for is-null, not-null, is-nan, not-nan), the term a
// column name or {"type": "transform", "transform": "bucket[16]", "term":
// "name"}.
//
// Each literal is written in the single-value form of its term's type, as
// Java's writer does for a bound predicate (SingleValueParser with
// term().type()): a double as 2.0, a timestamp in ISO form, a decimal as a
// string at its scale, binary and fixed as uppercase hex. That form is
// read by both of Java's readings: RESTFileScanTaskParser parses a
// residual without a schema (a number becomes a long or double, a string a
// string) and binds it to the column later, which converts ISO strings,
// decimal strings and hex to the column's type; with a schema it uses
// SingleValueParser. iceberg-go's ParseExpr with a schema reads it too
// (without one, iceberg-go would bind a hex string to a binary column as
// its ASCII bytes; its client parses residuals with the schema).
//
// Java's reading with a schema misreads timestamp_ns literals in any form:
// SingleValueParser gives the nanoseconds as a Long, which binding then
// takes for microseconds (×1000, overflowing for today's dates). The
// residual path, without a schema, reads them right.
//
// Bound predicates (what iceberg-go's residual evaluator gives) carry the
// term's type. An unbound predicate's literal has no type to write by
// (iceberg-go keeps it unexported, and an int may be meant as a date), so
// unbound predicates are bound to schema first (case-sensitively; nil
// schema makes them an error). A NaN literal is an error (ErrNaN): Java
// accepts none in an expression (Expressions refuses NaN; is-nan is the
// predicate).
func Expression(expr iceberg.BooleanExpression, schema *iceberg.Schema) (json.RawMessage, error) {
	return iceberg.VisitExpr[json.RawMessage](expr, exprWriter{schema: schema})
}

// exprWriter writes an expression bottom-up; errors are panics, which
// iceberg.VisitExpr returns as its error.
type exprWriter struct {
	schema *iceberg.Schema
}

func (exprWriter) VisitTrue() json.RawMessage  { return json.RawMessage("true") }
func (exprWriter) VisitFalse() json.RawMessage { return json.RawMessage("false") }

func (exprWriter) VisitNot(child json.RawMessage) json.RawMessage {
	return object(exprNode{Type: "not", Child: child})
}

func (exprWriter) VisitAnd(left, right json.RawMessage) json.RawMessage {
	return object(exprNode{Type: "and", Left: left, Right: right})
}

func (exprWriter) VisitOr(left, right json.RawMessage) json.RawMessage {
	return object(exprNode{Type: "or", Left: left, Right: right})
}

func (w exprWriter) VisitUnbound(p iceberg.UnboundPredicate) json.RawMessage {
	if w.schema == nil {
		panic(fmt.Errorf("unbound predicate %s: no schema to bind it to, so its literal has no type", p))
	}
	bound, err := p.Bind(w.schema, true)
	if err != nil {
		panic(fmt.Errorf("bind %s: %w", p, err))
	}
	out, err := Expression(bound, nil)
	if err != nil {
		panic(err)
	}
	return out
}

func (exprWriter) VisitBound(p iceberg.BoundPredicate) json.RawMessage {
	out, err := boundPredicate(p)
	if err != nil {
		panic(fmt.Errorf("predicate %s: %w", p, err))
	}
	return out
}

// exprNode is one node of the expression JSON, in the field order Java
// writes.
type exprNode struct {
	Type   string            `json:"type"`
	Term   json.RawMessage   `json:"term,omitempty"`
	Value  json.RawMessage   `json:"value,omitempty"`
	Values []json.RawMessage `json:"values,omitempty"`
	Child  json.RawMessage   `json:"child,omitempty"`
	Left   json.RawMessage   `json:"left,omitempty"`
	Right  json.RawMessage   `json:"right,omitempty"`
}

func object(n exprNode) json.RawMessage {
	b, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	return b
}

// opNames are Java's names of the predicate operations (its
// Operation.toString in kebab case).
var opNames = map[iceberg.Operation]string{
	iceberg.OpIsNull: "is-null", iceberg.OpNotNull: "not-null",
	iceberg.OpIsNan: "is-nan", iceberg.OpNotNan: "not-nan",
	iceberg.OpLT: "lt", iceberg.OpLTEQ: "lt-eq", iceberg.OpGT: "gt", iceberg.OpGTEQ: "gt-eq",
	iceberg.OpEQ: "eq", iceberg.OpNEQ: "not-eq",
	iceberg.OpStartsWith: "starts-with", iceberg.OpNotStartsWith: "not-starts-with",
	iceberg.OpIn: "in", iceberg.OpNotIn: "not-in",
}

func boundPredicate(p iceberg.BoundPredicate) (json.RawMessage, error) {
	name, ok := opNames[p.Op()]
	if !ok {
		return nil, fmt.Errorf("operation %s has no REST expression form", p.Op())
	}
	// iceberg-go writes a bound term as Java does: the column's full name,
	// or a transform node whose transform is Java's toString.
	term, err := json.Marshal(p.Term())
	if err != nil {
		return nil, fmt.Errorf("term: %w", err)
	}
	node := exprNode{Type: name, Term: term}
	typ := p.Term().Type()
	switch p := p.(type) {
	case iceberg.BoundLiteralPredicate:
		if IsNaN(p.Literal()) {
			return nil, ErrNaN
		}
		if node.Value, err = Value(typ, p.Literal()); err != nil {
			return nil, err
		}
	case iceberg.BoundSetPredicate:
		for _, lit := range p.Literals().Members() {
			if IsNaN(lit) {
				return nil, ErrNaN
			}
			v, err := Value(typ, lit)
			if err != nil {
				return nil, err
			}
			node.Values = append(node.Values, v)
		}
		// A set has no order; sorted, equal sets write equal JSON.
		slices.SortFunc(node.Values, func(a, b json.RawMessage) int { return bytes.Compare(a, b) })
	case iceberg.BoundUnaryPredicate:
	default:
		return nil, errors.New("a predicate of a kind the REST expression has no form for")
	}
	return object(node), nil
}

// IsNaN says v, a literal or a canonical value (as LiteralOf takes it), is
// a float or double NaN: what Java's parsers refuse as a literal, and what
// no comparison holds for.
func IsNaN(v any) bool {
	if l, ok := v.(iceberg.Literal); ok {
		v = l.Any()
	}
	switch v := v.(type) {
	case float32:
		return v != v
	case float64:
		return v != v
	}
	return false
}
