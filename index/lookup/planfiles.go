package lookup

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
)

// PlanFiles is iceberg-go's planning of filter over a snapshot of tbl (nil:
// the current one): the tasks of the data files that partitions and
// statistics leave, with their delete files. It works around a false
// negative of iceberg-go v0.7.0, whose manifest evaluator reads a partition
// summary without a lower bound as "every value null": an empty string or
// binary partition value is written as an empty lower bound and read back
// as none, so every manifest holding the empty value would be skipped for any
// predicate on that column, rows of other partitions included. Where a
// manifest of the snapshot has such a summary, the filter iceberg-go plans
// with leaves out the predicates on the partition fields' source columns: a
// weaker filter, so a superset of the files, never fewer.
func PlanFiles(ctx context.Context, tbl *table.Table, snapshotID *int64, filter iceberg.BooleanExpression, caseSensitive bool) ([]table.FileScanTask, error) {
	snap, schema, err := Snapshot(tbl, snapshotID)
	if err != nil {
		return nil, err
	}
	opts := []table.ScanOption{table.WithCaseSensitive(caseSensitive)}
	if snapshotID != nil {
		opts = append(opts, table.WithSnapshotID(*snapshotID))
	}
	if snap != nil {
		misread, err := misreadPartitionSources(ctx, tbl, snap)
		if err != nil {
			return nil, err
		}
		if len(misread) > 0 {
			if filter, err = withoutColumns(filter, schema, caseSensitive, misread); err != nil {
				return nil, err
			}
		}
	}
	return tbl.Scan(append(opts, table.WithRowFilter(filter))...).PlanFiles(ctx)
}

// misreadPartitionSources returns the source columns of the partition
// fields whose summary, in some manifest of snap, iceberg-go would take for
// "all null" although the manifest holds a value: no lower bound but an
// upper one (the least value is empty), or neither bound with no null and no
// NaN in a manifest that lists files (every value is empty).
func misreadPartitionSources(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (map[int]bool, error) {
	fsys, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("lookup: table file system: %w", err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("lookup: manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	var sources map[int]bool
	for _, m := range manifests {
		spec := tbl.Metadata().PartitionSpecByID(int(m.PartitionSpecID()))
		if spec == nil {
			continue // iceberg-go's planning reports it
		}
		for i, s := range m.Partitions() {
			if i >= spec.NumFields() || s.LowerBound != nil {
				continue
			}
			nan := s.ContainsNaN != nil && *s.ContainsNaN
			if s.UpperBound != nil || (!s.ContainsNull && !nan && (m.HasAddedFiles() || m.HasExistingFiles())) {
				if sources == nil {
					sources = map[int]bool{}
				}
				for _, id := range spec.Field(i).SourceIDs {
					sources[id] = true
				}
			}
		}
	}
	return sources, nil
}

// withoutColumns returns filter with every predicate on one of the columns
// replaced by true, after NOTs are pushed down to the predicates: each
// replacement can only keep more rows, so the result is weaker than filter.
func withoutColumns(filter iceberg.BooleanExpression, schema *iceberg.Schema, caseSensitive bool, columns map[int]bool) (iceberg.BooleanExpression, error) {
	rewritten, err := iceberg.RewriteNotExpr(filter)
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	out, err := iceberg.VisitExpr(rewritten, &dropColumns{schema: schema, caseSensitive: caseSensitive, columns: columns})
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return out, nil
}

// dropColumns is withoutColumns' visitor.
type dropColumns struct {
	schema        *iceberg.Schema
	caseSensitive bool
	columns       map[int]bool
}

func (*dropColumns) VisitTrue() iceberg.BooleanExpression  { return iceberg.AlwaysTrue{} }
func (*dropColumns) VisitFalse() iceberg.BooleanExpression { return iceberg.AlwaysFalse{} }

// VisitNot is not reached after RewriteNotExpr; true is what is sound if
// it were.
func (*dropColumns) VisitNot(iceberg.BooleanExpression) iceberg.BooleanExpression {
	return iceberg.AlwaysTrue{}
}

func (*dropColumns) VisitAnd(l, r iceberg.BooleanExpression) iceberg.BooleanExpression {
	return iceberg.NewAnd(l, r)
}

func (*dropColumns) VisitOr(l, r iceberg.BooleanExpression) iceberg.BooleanExpression {
	return iceberg.NewOr(l, r)
}

func (d *dropColumns) VisitUnbound(p iceberg.UnboundPredicate) iceberg.BooleanExpression {
	bound, err := p.Bind(d.schema, d.caseSensitive)
	if err != nil {
		panic(err) // VisitExpr returns it
	}
	if b, ok := bound.(iceberg.BoundPredicate); ok && d.columns[b.Term().Ref().Field().ID] {
		return iceberg.AlwaysTrue{}
	}
	return p
}

func (d *dropColumns) VisitBound(p iceberg.BoundPredicate) iceberg.BooleanExpression {
	if d.columns[p.Term().Ref().Field().ID] {
		return iceberg.AlwaysTrue{}
	}
	return p
}
