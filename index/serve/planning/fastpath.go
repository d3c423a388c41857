package planning

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve/wire"
	"github.com/icebloom/icebloom/index/where"
)

// The fast path plans a lookup of a new value without decoding a manifest.
//
// A request's filter F, as iceberg-go plans it (NOT pushed down to the
// leaves), is split into F = P AND R: P the top-level AND conjuncts the
// index prunes with (col = v or col IN (…), lookup.Prunable), R the rest
// (AlwaysTrue if none). Only when P is not empty does the fast path run.
// The base plan is iceberg-go's own PlanFiles of R, kept in memory per table
// metadata location, snapshot, R and case sensitivity; each request then
// keeps of it the files that statistics and the index do not rule out for P:
//
//  1. the partition check: P's conjuncts projected through each partition
//     field of their column by the field's own transform
//     (iceberg.Transform.Project, as iceberg-go's inclusive projection
//     does) and evaluated on the file's partition
//     (iceberg.ExpressionEvaluator);
//  2. the statistics check: a file whose column holds only nulls or only
//     NaNs, or whose lower and upper bounds (iceberg.LiteralFromBytes for
//     the column's type) exclude every value, as iceberg-go's inclusive
//     metrics evaluator rules; absent or undecodable statistics keep it;
//  3. the index, lookup.Prune, over what is left.
//
// Why it is sound: R is weaker than F, so PlanFiles(R) holds every data
// file PlanFiles(F) holds (partition, manifest and metrics evaluation are
// inclusive, and an AND is evaluated as both sides). Each of the three
// checks drops a file only when no row of it can satisfy a conjunct of P,
// hence none can satisfy F. The delete files PlanFiles(R) attaches to a
// data file are those iceberg-go deems applicable to it (sequence numbers,
// partitions, referenced files); they are a superset of what F's planning
// attaches, which also prunes delete files by F's statistics, and a delete
// that applies removes only rows that are deleted, so the rows read are
// F's. The tasks carry no residual filter, so the client applies its whole
// filter to each file (the spec's default for a task without one).
//
// Because checks 1 and 2 are iceberg-go's own rules for = and IN applied to
// P, the fast path plans the files local planning plans, less those the
// index drops (TestDifferentialFastPath, TestWarmFastPathDecodesNoManifest).

// conjuncts is a filter split for the fast path.
type conjuncts struct {
	p      iceberg.BooleanExpression // the AND of P, unbound
	bound  []iceberg.BoundPredicate  // P, bound
	r      iceberg.BooleanExpression // the AND of R, unbound
	rKey   string                    // R bound: the same for names spelled in other cases
	schema *iceberg.Schema
}

// split splits filter for the fast path; ok is false when P is empty or
// the filter does not bind (the usual path then reports the error).
func split(filter iceberg.BooleanExpression, schema *iceberg.Schema, caseSensitive bool) (c conjuncts, ok bool) {
	nnf, err := iceberg.RewriteNotExpr(filter)
	if err != nil {
		return c, false
	}
	parts, err := iceberg.VisitExpr(nnf, conjunctVisitor{})
	if err != nil {
		return c, false
	}
	c = conjuncts{p: iceberg.AlwaysTrue{}, r: iceberg.AlwaysTrue{}, schema: schema}
	var rBound iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	for _, conj := range parts.conjuncts {
		b, err := where.Bind(schema, conj, caseSensitive)
		if err != nil {
			return c, false
		}
		if bp, isPred := b.(iceberg.BoundPredicate); isPred && lookup.Prunable(bp) {
			c.p = iceberg.NewAnd(c.p, conj)
			c.bound = append(c.bound, bp)
			continue
		}
		c.r = iceberg.NewAnd(c.r, conj)
		rBound = iceberg.NewAnd(rBound, b)
	}
	c.rKey = rBound.String()
	return c, len(c.bound) > 0
}

// split is an expression and, when it is an AND, its top-level conjuncts
// (of any depth of nested ANDs); else itself alone.
type splitExpr struct {
	whole     iceberg.BooleanExpression
	conjuncts []iceberg.BooleanExpression
}

func one(e iceberg.BooleanExpression) splitExpr {
	return splitExpr{e, []iceberg.BooleanExpression{e}}
}

// conjunctVisitor rebuilds an unbound expression, collecting the
// conjuncts of its top-level ANDs.
type conjunctVisitor struct{}

func (conjunctVisitor) VisitTrue() splitExpr  { return one(iceberg.AlwaysTrue{}) }
func (conjunctVisitor) VisitFalse() splitExpr { return one(iceberg.AlwaysFalse{}) }
func (conjunctVisitor) VisitNot(c splitExpr) splitExpr {
	return one(iceberg.NewNot(c.whole))
}
func (conjunctVisitor) VisitAnd(l, r splitExpr) splitExpr {
	return splitExpr{iceberg.NewAnd(l.whole, r.whole), append(append([]iceberg.BooleanExpression{}, l.conjuncts...), r.conjuncts...)}
}
func (conjunctVisitor) VisitOr(l, r splitExpr) splitExpr {
	return one(iceberg.NewOr(l.whole, r.whole))
}
func (conjunctVisitor) VisitUnbound(p iceberg.UnboundPredicate) splitExpr { return one(p) }
func (conjunctVisitor) VisitBound(p iceberg.BoundPredicate) splitExpr     { return one(p) }

// base is iceberg-go's plan of R for one table version and snapshot, with
// what the statistics check needs decoded once, on first use.
type base struct {
	tasks      []table.FileScanTask // residuals cleared
	files      int                  // distinct data files of tasks
	filesTotal int
	size       int64
	memo       lookup.Memo // the index's matches for tasks, kept for every value

	mu    sync.Mutex
	stats map[int]*columnStats // by field id
	parts []iceberg.StructLike // by task, nil until a partition check needs them
}

// columnStats are one column's statistics of every task's file.
type columnStats struct {
	nullsOnly, nansOnly []bool
	lower, upper        []iceberg.Literal // nil: absent or undecodable
	// ints says the column's values are integers (int, long, date, time,
	// timestamps); ilo and ihi are then lower and upper as int64 (where
	// those are not nil), compared without an interface call per file.
	ints     bool
	ilo, ihi []int64
}

// asInt64 is an integer literal's value.
func asInt64(l iceberg.Literal) (int64, bool) {
	switch l := l.(type) {
	case iceberg.Int32Literal:
		return int64(l), true
	case iceberg.Int64Literal:
		return int64(l), true
	case iceberg.DateLiteral:
		return int64(l), true
	case iceberg.TimeLiteral:
		return int64(l), true
	case iceberg.TimestampLiteral:
		return int64(l), true
	case iceberg.TimestampNsLiteral:
		return int64(l), true
	}
	return 0, false
}

// baseKey names a base plan: the storage access and table version (as
// cacheKey does), the snapshot, R and case sensitivity.
func baseKey(tbl *table.Table, access string, snapshot int64, caseSensitive bool, rKey string) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%d\x00%t\x00%s", access, tbl.MetadataLocation(), tbl.Metadata().LastUpdatedMillis(),
		tbl.Metadata().TableUUID(), snapshot, caseSensitive, rKey)
}

// base returns iceberg-go's plan of r for the snapshot, from the cache when
// it was made before.
func (p *Planner) base(ctx context.Context, tbl *table.Table, access string, snap *table.Snapshot, caseSensitive bool, r iceberg.BooleanExpression, rKey string) (*base, error) {
	key := baseKey(tbl, access, snap.SnapshotID, caseSensitive, rKey)
	if b, ok := p.bases.get(key); ok {
		return b, nil
	}
	b, err := p.planBase(ctx, tbl, snap, caseSensitive, r)
	if err != nil {
		return nil, err
	}
	b.size = 512 + int64(len(key)) + int64(len(b.tasks))*memoBytesPerTask + b.size
	if n, ok := summaryFiles(snap); ok {
		b.filesTotal = n
	} else if rKey == (iceberg.AlwaysTrue{}).String() {
		b.filesTotal = b.files
	} else if all, err := p.base(ctx, tbl, access, snap, caseSensitive, iceberg.AlwaysTrue{}, iceberg.AlwaysTrue{}.String()); err == nil {
		b.filesTotal = all.filesTotal
	}
	p.bases.add(key, b, b.size)
	return b, nil
}

// planBase makes a base plan of r, within the work budget (released before
// base asks for the plan of all files, which reserves its own); its size is
// its compacted tasks' alone.
func (p *Planner) planBase(ctx context.Context, tbl *table.Table, snap *table.Snapshot, caseSensitive bool, r iceberg.BooleanExpression) (*base, error) {
	release, err := p.work.reserve(ctx, coldWorkBytes(tbl, snap))
	if err != nil {
		return nil, err
	}
	defer release()
	tasks, err := lookup.PlanFiles(ctx, tbl, &snap.SnapshotID, r, caseSensitive)
	if err != nil {
		return nil, fmt.Errorf("plan scan of snapshot %d: %w", snap.SnapshotID, err)
	}
	b := &base{tasks: tasks, files: distinctFiles(tasks), stats: map[int]*columnStats{}}
	for i := range tasks {
		tasks[i].Residual = nil // R's, not F's: the client applies its filter
	}
	b.size = compactTasks(tasks)
	return b, nil
}

// Estimates of what a base plan holds besides its tasks: per task, the
// memo's file list and path map (memoBytesPerTask), and per task and
// column of P, its decoded statistics and its matched index filter
// (columnBytesPerTask).
const (
	memoBytesPerTask   = 96
	columnBytesPerTask = 56 + 120
)

// summaryFiles is the snapshot summary's count of live data files.
func summaryFiles(snap *table.Snapshot) (int, bool) {
	if snap.Summary == nil {
		return 0, false
	}
	n, err := strconv.Atoi(snap.Summary.Properties["total-data-files"])
	return n, err == nil
}

// columnStats returns the statistics of field for every task, decoding
// them on first use; the bytes they add are charged to the cache.
func (p *Planner) columnStats(key string, b *base, field iceberg.NestedField) *columnStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.stats[field.ID]; ok {
		return s
	}
	n := len(b.tasks)
	s := &columnStats{nullsOnly: make([]bool, n), nansOnly: make([]bool, n), lower: make([]iceberg.Literal, n), upper: make([]iceberg.Literal, n)}
	for i := range b.tasks {
		f := b.tasks[i].File
		vc, vok := f.ValueCounts()[field.ID]
		if nc, ok := f.NullValueCounts()[field.ID]; ok && vok && nc == vc {
			s.nullsOnly[i] = true
		}
		if nc, ok := f.NaNValueCounts()[field.ID]; ok && vok && nc == vc {
			s.nansOnly[i] = true
		}
		s.lower[i] = decodeBound(field.Type, f.LowerBoundValues()[field.ID])
		s.upper[i] = decodeBound(field.Type, f.UpperBoundValues()[field.ID])
	}
	s.ints = true
	s.ilo, s.ihi = make([]int64, n), make([]int64, n)
	for i := range n {
		var okLo, okHi bool
		if s.ilo[i], okLo = asInt64(s.lower[i]); !okLo && s.lower[i] != nil {
			s.ints = false
		}
		if s.ihi[i], okHi = asInt64(s.upper[i]); !okHi && s.upper[i] != nil {
			s.ints = false
		}
	}
	if !s.ints {
		s.ilo, s.ihi = nil, nil
	}
	b.stats[field.ID] = s
	p.bases.grow(key, int64(n)*columnBytesPerTask)
	return s
}

// decodeBound decodes a bound, nil when absent or undecodable (then it
// cannot rule anything out).
func decodeBound(typ iceberg.Type, raw []byte) iceberg.Literal {
	if raw == nil {
		return nil
	}
	lit, err := iceberg.LiteralFromBytes(typ, raw)
	if err != nil {
		return nil
	}
	return lit
}

// partitions returns each task's partition as a record of its spec's
// partition type, made on first use.
func (p *Planner) partitions(key string, b *base, tbl *table.Table, schema *iceberg.Schema) []iceberg.StructLike {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.parts != nil {
		return b.parts
	}
	types := map[int32]*iceberg.StructType{}
	b.parts = make([]iceberg.StructLike, len(b.tasks))
	for i := range b.tasks {
		f := b.tasks[i].File
		typ, ok := types[f.SpecID()]
		if !ok {
			if spec := tbl.Metadata().PartitionSpecByID(int(f.SpecID())); spec != nil {
				typ = spec.PartitionType(schema)
			}
			types[f.SpecID()] = typ
		}
		if typ != nil {
			b.parts[i] = table.GetPartitionRecord(f, typ)
		}
	}
	p.bases.grow(key, int64(len(b.tasks))*96) // a record of a few values each
	return b.parts
}

// partitionCheck is a conjunct of P projected to the partitions of one
// spec: nil where no partition field derives from its column.
type partitionCheck func(iceberg.StructLike) (bool, error)

// partitionChecks projects each conjunct of P through every spec's
// partition fields of its column, as iceberg-go's inclusive projection does.
func partitionChecks(tbl *table.Table, schema *iceberg.Schema, c conjuncts) map[int32][]partitionCheck {
	checks := map[int32][]partitionCheck{}
	for _, spec := range tbl.Metadata().PartitionSpecs() {
		partSchema := iceberg.NewSchema(0, spec.PartitionType(schema).FieldList...)
		for _, pred := range c.bound {
			var proj iceberg.BooleanExpression = iceberg.AlwaysTrue{}
			for _, field := range spec.FieldsBySourceID(pred.Term().Ref().Field().ID) {
				pp, err := field.Transform.Project(field.Name, pred)
				if err == nil && pp != nil {
					proj = iceberg.NewAnd(proj, pp)
				}
			}
			if proj.Equals(iceberg.AlwaysTrue{}) {
				continue
			}
			fn, err := iceberg.ExpressionEvaluator(partSchema, proj, true)
			if err != nil {
				continue // cannot decide: keep
			}
			checks[int32(spec.ID())] = append(checks[int32(spec.ID())], fn)
		}
	}
	return checks
}

// statsKeep marks the tasks of b whose partition and statistics do not rule
// out P (steps 1 and 2 of the fast path); nil when they rule out none. The
// index then looks at the marked tasks of b.tasks (lookup.Options.Keep),
// so its matches kept for b.tasks serve a value that statistics prune
// some files for (one near either end of the key range) as they serve any
// other: before, those values pruned a new slice, and the memo was made
// again for it and for the next ordinary value.
func (p *Planner) statsKeep(key string, b *base, tbl *table.Table, c conjuncts) []bool {
	checks := make([]valueCheck, len(c.bound))
	for i, pred := range c.bound {
		field := pred.Term().Ref().Field()
		checks[i].stats = p.columnStats(key, b, field)
		switch pred := pred.(type) {
		case iceberg.BoundLiteralPredicate:
			checks[i].values = []iceberg.Literal{pred.Literal()}
		case iceberg.BoundSetPredicate:
			if pred.Literals().Len() <= inPredicateLimit {
				checks[i].values = pred.Literals().Members()
			}
		}
		if checks[i].stats.ints && checks[i].values != nil {
			ints := make([]int64, 0, len(checks[i].values))
			for _, v := range checks[i].values {
				if n, ok := asInt64(v); ok {
					ints = append(ints, n)
				}
			}
			if len(ints) == len(checks[i].values) {
				checks[i].ints = ints
			}
		}
	}
	partChecks := partitionChecks(tbl, c.schema, c)
	var parts []iceberg.StructLike
	if len(partChecks) > 0 {
		parts = p.partitions(key, b, tbl, c.schema)
	}
	var keep []bool // nil until a task is dropped
	for i := range b.tasks {
		if !keepTask(i, b, checks, partChecks, parts) {
			if keep == nil {
				keep = make([]bool, len(b.tasks))
				for j := range i {
					keep[j] = true
				}
			}
		} else if keep != nil {
			keep[i] = true
		}
	}
	return keep
}

// keepTask reports whether task i's partition and statistics do not rule
// out P.
func keepTask(i int, b *base, checks []valueCheck, partChecks map[int32][]partitionCheck, parts []iceberg.StructLike) bool {
	for _, vc := range checks {
		s := vc.stats
		if s.nullsOnly[i] || s.nansOnly[i] {
			return false
		}
		if vc.values != nil && !vc.within(i) {
			return false
		}
	}
	if len(partChecks) == 0 {
		return true
	}
	if fns := partChecks[b.tasks[i].File.SpecID()]; len(fns) > 0 && parts[i] != nil {
		for _, fn := range fns {
			if ok, err := fn(parts[i]); err == nil && !ok {
				return false
			}
		}
	}
	return true
}

// valueCheck is a conjunct of P against one column's statistics.
type valueCheck struct {
	stats  *columnStats
	values []iceberg.Literal // nil: more than iceberg-go compares (IN of over 200)
	ints   []int64           // values as int64, when stats.ints
}

// within is anyWithin for task i, by int64 when the column is of integers.
func (vc *valueCheck) within(i int) bool {
	s := vc.stats
	if vc.ints == nil {
		return anyWithin(vc.values, s.lower[i], s.upper[i])
	}
	for _, v := range vc.ints {
		if s.lower[i] != nil && s.ilo[i] > v || s.upper[i] != nil && s.ihi[i] < v {
			continue
		}
		return true
	}
	return false
}

// inPredicateLimit is the size of an IN list beyond which iceberg-go's
// metrics evaluator does not compare its values with the bounds.
const inPredicateLimit = 200

// anyWithin reports whether a value may lie within [lower, upper]: a bound
// absent, NaN or of another type rules nothing out, as in iceberg-go's
// inclusive metrics evaluator.
func anyWithin(values []iceberg.Literal, lower, upper iceberg.Literal) bool {
	for _, v := range values {
		if wire.IsNaN(lower) {
			return true
		}
		if c, ok := compare(lower, v); ok && c > 0 {
			continue
		}
		if wire.IsNaN(upper) {
			return true
		}
		if c, ok := compare(upper, v); ok && c < 0 {
			continue
		}
		return true
	}
	return false
}

// compare compares a bound with a value of the same type by the type's
// own comparator; ok is false when the bound is nil or of another type.
func compare(bound, v iceberg.Literal) (int, bool) {
	switch b := bound.(type) {
	case nil:
		return 0, false
	case iceberg.TypedLiteral[int32]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[int64]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[float32]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[float64]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[iceberg.Date]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[iceberg.Time]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[iceberg.Timestamp]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[iceberg.TimestampNano]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[string]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[[]byte]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[uuid.UUID]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[iceberg.Decimal]:
		return cmpTyped(b, v)
	case iceberg.TypedLiteral[bool]:
		return cmpTyped(b, v)
	}
	return 0, false
}

func cmpTyped[T iceberg.LiteralType](bound iceberg.TypedLiteral[T], v iceberg.Literal) (int, bool) {
	tv, ok := v.(iceberg.TypedLiteral[T])
	if !ok || !bound.Type().Equals(v.Type()) {
		return 0, false
	}
	return bound.Comparator()(bound.Value(), tv.Value()), true
}

// fastPlan plans filter by the fast path: nil when it does not apply (no
// conjunct for the index, or a table without the snapshot). It returns
// the number of distinct data files the statistics left too.
func (p *Planner) fastPlan(ctx context.Context, tbl *table.Table, access string, filter iceberg.BooleanExpression, o lookup.Options) (*lookup.Result, int, error) {
	snap, schema, err := lookup.Snapshot(tbl, o.SnapshotID)
	if err != nil || snap == nil {
		return nil, 0, nil
	}
	c, ok := split(filter, schema, o.CaseSensitive)
	if !ok {
		return nil, 0, nil
	}
	b, err := p.base(ctx, tbl, access, snap, o.CaseSensitive, c.r, c.rKey)
	if err != nil {
		return nil, 0, err
	}
	key := baseKey(tbl, access, snap.SnapshotID, o.CaseSensitive, c.rKey)
	o.Memo, o.Keep = &b.memo, p.statsKeep(key, b, tbl, c)
	// The index's scratch is sized by all of b's files, whatever
	// statistics keep.
	release, err := p.work.reserve(ctx, lookup.WorkBytes(b.files, c.bound))
	if err != nil {
		return nil, 0, err
	}
	defer release()
	res, err := lookup.Prune(ctx, tbl, b.tasks, c.p, o)
	if err != nil {
		return nil, 0, err
	}
	res.FilesTotal = b.filesTotal
	files := b.files
	switch {
	case o.Keep == nil:
	case b.files == len(b.tasks): // a task per file, as iceberg-go plans
		files = len(res.AfterStats)
	default:
		files = distinctFiles(res.AfterStats)
	}
	return res, files, nil
}
