package rowscan

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/iceberg-go"
)

// tri is a truth value of SQL's three-valued logic: a comparison with NULL
// is unknown, NOT unknown is unknown, and WHERE keeps only true rows.
// iceberg-go's own row evaluator (iceberg.ExpressionEvaluator) is written
// for partition values and orders NULL first, so `c < 1` and `c != 1`
// would keep rows whose c is NULL; scan's rows must be SQL's, as
// iceberg-go's reader filters them where it can.
type tri int8

const (
	unknown tri = iota
	no
	yes
)

func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

// rowTest evaluates a bound filter on one row.
type rowTest func(*recordRow) tri

// compile turns a bound filter into a rowTest. Like iceberg-go's visitors,
// the compiler reports errors by panicking, which VisitExpr returns.
func compile(bound iceberg.BooleanExpression) (rowTest, error) {
	t, err := iceberg.VisitExpr(bound, compiler{})
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return t, nil
}

type compiler struct{}

func (compiler) VisitTrue() rowTest  { return func(*recordRow) tri { return yes } }
func (compiler) VisitFalse() rowTest { return func(*recordRow) tri { return no } }
func (compiler) VisitNot(c rowTest) rowTest {
	return func(r *recordRow) tri {
		switch c(r) {
		case yes:
			return no
		case no:
			return yes
		}
		return unknown
	}
}

func (compiler) VisitAnd(l, r rowTest) rowTest {
	return func(row *recordRow) tri {
		a := l(row)
		if a == no {
			return no
		}
		b := r(row)
		if b == no {
			return no
		}
		if a == unknown || b == unknown {
			return unknown
		}
		return yes
	}
}

func (compiler) VisitOr(l, r rowTest) rowTest {
	return func(row *recordRow) tri {
		a := l(row)
		if a == yes {
			return yes
		}
		b := r(row)
		if b == yes {
			return yes
		}
		if a == unknown || b == unknown {
			return unknown
		}
		return no
	}
}

func (compiler) VisitUnbound(p iceberg.UnboundPredicate) rowTest {
	panic(fmt.Errorf("predicate %s is not bound", p))
}

// VisitBound compiles a comparison of a column with literals of its type.
func (compiler) VisitBound(p iceberg.BoundPredicate) rowTest {
	path, typ := p.Ref().PosPath(), p.Ref().Field().Type
	get := func(r *recordRow) iceberg.Literal {
		lit, ok := r.at(path).(iceberg.Literal)
		if !ok {
			return nil // NULL
		}
		if !lit.Type().Equals(typ) {
			// A fixed column's []byte reads as binary, a timestamptz's as a
			// timestamp: the literal of the column's own type compares.
			if c, err := lit.To(typ); err == nil {
				lit = c
			}
		}
		return lit
	}
	op := p.Op()
	switch op {
	case iceberg.OpIsNull:
		return func(r *recordRow) tri { return truth(r.at(path) == nil) }
	case iceberg.OpNotNull:
		return func(r *recordRow) tri { return truth(r.at(path) != nil) }
	case iceberg.OpIsNan, iceberg.OpNotNan:
		return func(r *recordRow) tri {
			var nan bool
			switch v := r.at(path).(type) {
			case nil:
				return unknown
			case iceberg.Float32Literal:
				nan = math.IsNaN(float64(v))
			case iceberg.Float64Literal:
				nan = math.IsNaN(float64(v))
			}
			return truth(nan == (op == iceberg.OpIsNan))
		}
	}
	if sp, ok := p.(iceberg.BoundSetPredicate); ok {
		set := sp.Literals()
		return func(r *recordRow) tri {
			lit := get(r)
			if lit == nil {
				return unknown
			}
			return truth(set.Contains(lit) == (op == iceberg.OpIn))
		}
	}
	lp, ok := p.(iceberg.BoundLiteralPredicate)
	if !ok {
		panic(fmt.Errorf("cannot evaluate predicate %s", p))
	}
	want := lp.Literal()
	if op == iceberg.OpStartsWith || op == iceberg.OpNotStartsWith {
		prefix := fmt.Sprint(want.Any())
		return func(r *recordRow) tri {
			s, ok := r.at(path).(iceberg.StringLiteral)
			if !ok {
				return unknown
			}
			return truth(strings.HasPrefix(string(s), prefix) == (op == iceberg.OpStartsWith))
		}
	}
	var keep func(int) bool
	switch op {
	case iceberg.OpEQ:
		keep = func(c int) bool { return c == 0 }
	case iceberg.OpNEQ:
		keep = func(c int) bool { return c != 0 }
	case iceberg.OpLT:
		keep = func(c int) bool { return c < 0 }
	case iceberg.OpLTEQ:
		keep = func(c int) bool { return c <= 0 }
	case iceberg.OpGT:
		keep = func(c int) bool { return c > 0 }
	case iceberg.OpGTEQ:
		keep = func(c int) bool { return c >= 0 }
	default:
		panic(fmt.Errorf("cannot evaluate operation %s of %s", op, p))
	}
	return func(r *recordRow) tri {
		lit := get(r)
		if lit == nil {
			return unknown
		}
		c, ok := order(lit, want)
		if !ok {
			panic(fmt.Errorf("%s: cannot compare %s with %s", p.Ref().Field().Name, lit.Type(), want.Type()))
		}
		return truth(keep(c))
	}
}

// order compares two literals of the same type with their type's
// comparator; ok is false when their types differ.
func order(a, b iceberg.Literal) (c int, ok bool) {
	for _, try := range []func(a, b iceberg.Literal) (int, bool){
		orderAs[bool], orderAs[int32], orderAs[int64], orderAs[float32], orderAs[float64],
		orderAs[iceberg.Date], orderAs[iceberg.Time], orderAs[iceberg.Timestamp], orderAs[iceberg.TimestampNano],
		orderAs[string], orderAs[[]byte], orderAs[iceberg.Decimal], orderUUID,
	} {
		if c, ok := try(a, b); ok {
			return c, true
		}
	}
	return 0, false
}

func orderAs[T iceberg.LiteralType](a, b iceberg.Literal) (int, bool) {
	x, ok := a.(iceberg.TypedLiteral[T])
	if !ok {
		return 0, false
	}
	y, ok := b.(iceberg.TypedLiteral[T])
	if !ok {
		return 0, false
	}
	return x.Comparator()(x.Value(), y.Value()), true
}

// orderUUID compares uuids as iceberg-go does, by their bytes.
func orderUUID(a, b iceberg.Literal) (int, bool) {
	x, ok := a.(iceberg.UUIDLiteral)
	if !ok {
		return 0, false
	}
	y, ok := b.(iceberg.UUIDLiteral)
	if !ok {
		return 0, false
	}
	return strings.Compare(string(x[:]), string(y[:])), true
}
