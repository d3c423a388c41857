package planning

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/wire"
)

// Every task serve answers carries a residual filter: what of the request's
// filter remains to be evaluated on the file's rows once its partition
// values are known. The spec lets a task omit it (the client then applies
// its whole filter), but Java's RESTFileScanTaskParser builds the task's
// residual evaluator from it, and on a partitioned spec
// FileScanTask.residual() then throws, which Spark's and Flink's readers
// call for every task. So serve sends what local planning computes, for
// every task of either path: a predicate on a column some partition field
// derives from becomes true when the strict projection of the predicate
// holds on the partition (the inclusive projection of its negation is
// false), false when its inclusive projection does not hold, and stays as it
// is otherwise; true when nothing remains. These are the rules of Java's
// ResidualEvaluator and of iceberg-go's partition residuals (its evaluator is
// not exported), including iceberg-go's two exceptions, which keep a
// predicate whole: a NaN literal, and a null or NaN partition value for any
// operator but IS [NOT] NULL (Arrow's row filters propagate nulls where
// scalar comparisons order them). TestResidualsAsLocalPlanning compares them
// with iceberg-go's own residuals.

// residuals computes the residuals of one bound filter, per partition spec.
type residuals struct {
	filter        iceberg.BooleanExpression // bound; nil is AlwaysTrue
	schema        *iceberg.Schema
	meta          table.Metadata
	caseSensitive bool
	bySpec        map[int32]*specResidual
}

// specResidual is the filter compiled for one spec: nil root when no
// predicate projects through any of its fields (the residual is the whole
// filter).
type specResidual struct {
	root          *residualNode
	partitionType *iceberg.StructType
}

func newResiduals(meta table.Metadata, schema *iceberg.Schema, bound iceberg.BooleanExpression, caseSensitive bool) *residuals {
	if _, always := bound.(iceberg.AlwaysTrue); always {
		bound = nil
	}
	return &residuals{filter: bound, schema: schema, meta: meta, caseSensitive: caseSensitive, bySpec: map[int32]*specResidual{}}
}

// of returns the residual of the filter for data file f.
func (r *residuals) of(f iceberg.DataFile) (iceberg.BooleanExpression, error) {
	if r.filter == nil {
		return iceberg.AlwaysTrue{}, nil
	}
	sr, ok := r.bySpec[f.SpecID()]
	if !ok {
		var err error
		if sr, err = r.compile(f.SpecID()); err != nil {
			return nil, err
		}
		r.bySpec[f.SpecID()] = sr
	}
	if sr.root == nil {
		return r.filter, nil
	}
	values := f.Partition()
	return sr.root.residual(values, table.GetPartitionRecord(f, sr.partitionType))
}

func (r *residuals) compile(specID int32) (*specResidual, error) {
	spec := r.meta.PartitionSpecByID(int(specID))
	if spec == nil {
		return nil, fmt.Errorf("residual filter: unknown partition spec %d", specID)
	}
	typ := spec.PartitionType(r.schema)
	c := &residualCompiler{spec: *spec, partSchema: iceberg.NewSchema(0, typ.FieldList...), caseSensitive: r.caseSensitive}
	root, err := iceberg.VisitExpr(r.filter, c)
	if err == nil {
		err = c.err
	}
	if err != nil {
		return nil, fmt.Errorf("residual filter for partition spec %d: %w", specID, err)
	}
	if !c.projects {
		root = nil
	}
	return &specResidual{root: root, partitionType: typ}, nil
}

// residualNode is a node of a filter compiled for one spec.
type residualNode struct {
	expr        iceberg.BooleanExpression // the node's own filter
	op          iceberg.Operation         // OpAnd, OpOr, OpNot; other: a leaf
	left, right *residualNode             // of OpAnd and OpOr; OpNot's child is left
	projections []residualProjection      // of a predicate that projects
}

// residualProjection is a predicate projected through one partition field.
type residualProjection struct {
	fieldID int
	// strictComplement is the inclusive projection of the predicate's
	// negation: false on a partition means the predicate holds for every
	// row of it. inclusive false means it holds for none. Either may be
	// nil (the transform cannot project it).
	strictComplement, inclusive func(iceberg.StructLike) (bool, error)
}

// residual is the node's residual for a file's partition values (by
// partition field id) and their record.
func (n *residualNode) residual(values map[int]any, rec iceberg.StructLike) (iceberg.BooleanExpression, error) {
	switch n.op {
	case iceberg.OpAnd:
		left, err := n.left.residual(values, rec)
		if err != nil {
			return nil, err
		}
		if _, f := left.(iceberg.AlwaysFalse); f {
			return left, nil
		}
		right, err := n.right.residual(values, rec)
		if err != nil {
			return nil, err
		}
		return iceberg.NewAnd(left, right), nil
	case iceberg.OpOr:
		left, err := n.left.residual(values, rec)
		if err != nil {
			return nil, err
		}
		if _, t := left.(iceberg.AlwaysTrue); t {
			return left, nil
		}
		right, err := n.right.residual(values, rec)
		if err != nil {
			return nil, err
		}
		return iceberg.NewOr(left, right), nil
	case iceberg.OpNot:
		child, err := n.left.residual(values, rec)
		if err != nil {
			return nil, err
		}
		return iceberg.NewNot(child), nil
	}
	op := n.expr.Op()
	for _, p := range n.projections {
		value, known := values[p.fieldID]
		if !known || (op != iceberg.OpIsNull && op != iceberg.OpNotNull && (value == nil || wire.IsNaN(value))) {
			continue
		}
		if p.strictComplement != nil {
			matches, err := p.strictComplement(rec)
			if err != nil {
				return nil, err
			}
			if !matches {
				return iceberg.AlwaysTrue{}, nil
			}
		}
		if p.inclusive != nil {
			matches, err := p.inclusive(rec)
			if err != nil {
				return nil, err
			}
			if !matches {
				return iceberg.AlwaysFalse{}, nil
			}
		}
	}
	return n.expr, nil
}

// residualCompiler compiles a bound filter for one spec.
type residualCompiler struct {
	spec          iceberg.PartitionSpec
	partSchema    *iceberg.Schema
	caseSensitive bool
	projects      bool // some predicate projects through a field
	err           error
}

func (c *residualCompiler) VisitTrue() *residualNode {
	return &residualNode{expr: iceberg.AlwaysTrue{}, op: iceberg.OpTrue}
}

func (c *residualCompiler) VisitFalse() *residualNode {
	return &residualNode{expr: iceberg.AlwaysFalse{}, op: iceberg.OpFalse}
}

func (c *residualCompiler) VisitNot(child *residualNode) *residualNode {
	return &residualNode{expr: iceberg.NewNot(child.expr), op: iceberg.OpNot, left: child}
}

func (c *residualCompiler) VisitAnd(left, right *residualNode) *residualNode {
	return &residualNode{expr: iceberg.NewAnd(left.expr, right.expr), op: iceberg.OpAnd, left: left, right: right}
}

func (c *residualCompiler) VisitOr(left, right *residualNode) *residualNode {
	return &residualNode{expr: iceberg.NewOr(left.expr, right.expr), op: iceberg.OpOr, left: left, right: right}
}

func (c *residualCompiler) VisitUnbound(pred iceberg.UnboundPredicate) *residualNode {
	if c.err == nil {
		c.err = fmt.Errorf("residual of an unbound predicate %s", pred)
	}
	return &residualNode{expr: pred}
}

func (c *residualCompiler) VisitBound(pred iceberg.BoundPredicate) *residualNode {
	n := &residualNode{expr: pred, op: pred.Op()}
	if lit, ok := pred.(iceberg.BoundLiteralPredicate); ok && wire.IsNaN(lit.Literal()) {
		return n
	}
	for _, field := range c.spec.FieldsBySourceID(pred.Ref().Field().ID) {
		p := residualProjection{fieldID: field.FieldID}
		var err error
		if negated, ok := pred.Negate().(iceberg.BoundPredicate); ok {
			if p.strictComplement, err = c.project(field, negated); err != nil {
				break
			}
		}
		if p.inclusive, err = c.project(field, pred); err != nil {
			break
		}
		if p.strictComplement != nil || p.inclusive != nil {
			n.projections = append(n.projections, p)
		}
	}
	c.projects = c.projects || len(n.projections) > 0
	return n
}

// project is pred projected through field by its transform, evaluated on a
// partition record; nil when the transform cannot project it.
func (c *residualCompiler) project(field iceberg.PartitionField, pred iceberg.BoundPredicate) (func(iceberg.StructLike) (bool, error), error) {
	projected, err := field.Transform.Project(field.Name, pred)
	if err == nil && projected != nil {
		var eval func(iceberg.StructLike) (bool, error)
		if eval, err = iceberg.ExpressionEvaluator(c.partSchema, projected, c.caseSensitive); err == nil {
			return eval, nil
		}
	}
	if err != nil && c.err == nil {
		c.err = fmt.Errorf("project %s through partition field %s: %w", pred, field.Name, err)
	}
	return nil, err
}
