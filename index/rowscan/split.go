package rowscan

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
)

// Split splits bound, a filter bound to schema, into what iceberg-go's
// reader evaluates correctly (push) and the rest (local), each the AND of
// some of bound's top-level conjuncts. push is unbound again, naming the
// columns by their full names so that iceberg-go binds it to the same
// fields case-sensitively; local stays bound, for compile. Either is nil
// when it holds no conjunct; together they are bound. fields are the ids
// of the fields local names.
func Split(schema *iceberg.Schema, bound iceberg.BooleanExpression) (push, local iceberg.BooleanExpression, fields []int, err error) {
	// iceberg-go's row-group pruning evaluates a pushed NOT (p) as p's
	// negation (iceberg.RewriteNotExpr), so NOT (c IS NULL) is pruned as
	// c IS NOT NULL; rewriting first lets pushable judge the predicates
	// that are evaluated. The rewrite keeps SQL's meaning: a predicate and
	// its negation are both unknown on NULL, and De Morgan's laws hold in
	// three-valued logic.
	bound, err = iceberg.RewriteNotExpr(bound)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("filter: %w", err)
	}
	root, err := iceberg.VisitExpr(bound, splitter{schema})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("filter: %w", err)
	}
	var pushed, kept []iceberg.BooleanExpression
	for _, c := range root.conjuncts() {
		switch {
		case c.expr.Equals(iceberg.AlwaysTrue{}):
		case c.push:
			pushed = append(pushed, c.expr)
		default:
			kept = append(kept, c.bound)
			fields = append(fields, c.fields...)
		}
	}
	return and(pushed), and(kept), fields, nil
}

// part is a subexpression of a bound filter: unbound again, whether
// iceberg-go's reader evaluates it correctly, and, for an AND, its
// conjuncts.
type part struct {
	expr   iceberg.BooleanExpression
	bound  iceberg.BooleanExpression // as it was
	push   bool
	conj   []part
	fields []int // the ids of the fields expr names
}

func (p part) conjuncts() []part {
	if p.conj != nil {
		return p.conj
	}
	return []part{p}
}

// and is the AND of es, nil for none.
func and(es []iceberg.BooleanExpression) iceberg.BooleanExpression {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return iceberg.NewAnd(es[0], es[1], es[2:]...)
}

// splitter unbinds a bound filter into parts (iceberg-go's expressions
// keep their children to themselves; a visitor is the way in). Like
// iceberg-go's visitors it reports errors by panicking, which VisitExpr
// returns as an error.
type splitter struct{ schema *iceberg.Schema }

func (splitter) VisitTrue() part {
	return part{expr: iceberg.AlwaysTrue{}, bound: iceberg.AlwaysTrue{}, push: true}
}

func (splitter) VisitFalse() part {
	return part{expr: iceberg.AlwaysFalse{}, bound: iceberg.AlwaysFalse{}, push: true}
}

func (splitter) VisitNot(c part) part {
	return part{expr: iceberg.NewNot(c.expr), bound: iceberg.NewNot(c.bound), push: c.push, fields: c.fields}
}

func (splitter) VisitAnd(l, r part) part {
	return part{expr: iceberg.NewAnd(l.expr, r.expr), bound: iceberg.NewAnd(l.bound, r.bound), push: l.push && r.push, fields: append(slices.Clone(l.fields), r.fields...),
		conj: append(slices.Clone(l.conjuncts()), r.conjuncts()...)}
}

func (splitter) VisitOr(l, r part) part {
	return part{expr: iceberg.NewOr(l.expr, r.expr), bound: iceberg.NewOr(l.bound, r.bound), push: l.push && r.push, fields: append(slices.Clone(l.fields), r.fields...)}
}

func (splitter) VisitUnbound(p iceberg.UnboundPredicate) part {
	panic(fmt.Errorf("predicate %s is not bound", p))
}

// VisitBound writes p as iceberg-go's unbound predicate of the same
// literals, naming the column by its full name.
func (s splitter) VisitBound(p iceberg.BoundPredicate) part {
	field := p.Ref().Field()
	name, ok := s.schema.FindColumnName(field.ID)
	if !ok {
		panic(fmt.Errorf("field %d (%s) is not in the schema", field.ID, field.Name))
	}
	ref := iceberg.Reference(name)
	var u iceberg.BooleanExpression
	switch p := p.(type) {
	case iceberg.BoundUnaryPredicate:
		u = p.AsUnbound(ref)
	case iceberg.BoundLiteralPredicate:
		u = p.AsUnbound(ref, p.Literal())
	case iceberg.BoundSetPredicate:
		u = p.AsUnbound(ref, p.Literals().Members())
	default:
		panic(fmt.Errorf("cannot read predicate %s", p))
	}
	return part{expr: u, bound: p, push: pushable(s.schema, p), fields: []int{field.ID}}
}

// pushable says which predicates iceberg-go's reader gets right, as
// measured (see the package comment and TestScanNullTruthTable in
// cmd/icebloom): none on a field inside a struct or on a column after a
// struct, no null test of a decimal, no ordering of booleans nor IN or
// NOT IN of them, on an optional column no NOT IN and none that its
// row-group pruning skips an "all-NULL" row group for.
func pushable(schema *iceberg.Schema, p iceberg.BoundPredicate) bool {
	if len(p.Ref().PosPath()) > 1 || afterStruct(schema, p.Ref().PosPath()[0]) {
		return false
	}
	if !p.Ref().Field().Required && (prunesAllNull(p.Op()) || p.Op() == iceberg.OpNotIn) {
		// iceberg-go evaluates NOT IN as NOT (is_in), and arrow-go's is_in
		// is false, not NULL, for a NULL value: NOT IN kept NULL rows.
		return false
	}
	switch p.Ref().Field().Type.(type) {
	case iceberg.DecimalType:
		return p.Op() != iceberg.OpIsNull && p.Op() != iceberg.OpNotNull
	case iceberg.BooleanType:
		switch p.Op() {
		case iceberg.OpLT, iceberg.OpLTEQ, iceberg.OpGT, iceberg.OpGTEQ:
			return false
		case iceberg.OpIn, iceberg.OpNotIn:
			// IN (false, true) kept only the true rows, required
			// column or not.
			return false
		}
	}
	return true
}

// prunesAllNull says whether iceberg-go v0.7.0's row-group pruning skips a
// row group for op when it takes the column for all NULL
// (inclusiveMetricsEval.containsNullsOnly in table/evaluators.go). It
// takes arrow-go's Statistics.NumValues, the count of non-NULL values, for
// Iceberg's value count, which counts NULLs too: a row group with as many
// NULLs as values of an optional column looks all NULL, and its matching
// rows were never read (TestScanHalfNullRowGroup in cmd/icebloom). Such
// predicates are evaluated here; file-level pruning, from the manifests'
// own counts, is unaffected.
func prunesAllNull(op iceberg.Operation) bool {
	switch op {
	case iceberg.OpEQ, iceberg.OpIn, iceberg.OpLT, iceberg.OpLTEQ, iceberg.OpGT, iceberg.OpGTEQ,
		iceberg.OpNotNull, iceberg.OpIsNan, iceberg.OpStartsWith:
		return true
	}
	return false
}

// afterStruct says whether a struct column comes before the top-level
// column at position pos. iceberg-go v0.7.0's row filter fails with
// arrow's bare "invalid" on such a column (`x = 1` on a table of columns
// id, st struct<a, b>, x), whichever columns are read.
func afterStruct(schema *iceberg.Schema, pos int) bool {
	for _, f := range schema.Fields()[:pos] {
		if _, ok := f.Type.(*iceberg.StructType); ok {
			return true
		}
	}
	return false
}
