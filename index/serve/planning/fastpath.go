package planning

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve/wire"
	"github.com/icebloom/icebloom/index/where"
	"github.com/icebloom/icebloom/puffin"
)

// The fast path plans a lookup of a new value without decoding a manifest.
//
// A request's filter F, as iceberg-go plans it (NOT pushed down to the
// leaves), is split into F = P AND R: P the top-level AND conjuncts the
// index prunes with (col = v or col IN (…), lookup.Prunable), R the rest
// (AlwaysTrue if none). Only when P is not empty does the fast path run.
// The base plan is iceberg-go's own PlanFiles of R, kept in memory per table,
// snapshot, schema, R and case sensitivity (baseKey); each request then
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

// base is iceberg-go's plan of R for one table version and snapshot, held
// in columns (fileSet) with the statistics of the columns of P it was made
// for.
type base struct {
	set *fileSet
	// manifests are the rows of each manifest in set, when it was made
	// manifest by manifest (bymanifest.go); nil else.
	manifests  []manifestRows
	filesTotal int
	size       int64
	memo       lookup.Memo // the index's matches for set, kept for every value
	// memoCharged is what the cache was charged for memo (and the index
	// it keeps alive): matchBytesPerFile a file and column at first, what
	// memo.Bytes says once a lookup matched it.
	memoCharged atomic.Int64

	mu       sync.Mutex
	partRecs []iceberg.StructLike // by set.partValues, nil until a partition check needs them
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

// baseKey names a base plan: the storage access, the table (its UUID and
// format version), the snapshot and the schema it is read with, R and case
// sensitivity. Not the metadata location: a commit that keeps the snapshot
// (the sync's statistics commit, a property's change) keeps the files and
// their statistics, so the base serves the new version as it is; its memo
// matches the segments the index gained (lookup.Memo). Made again from
// the last one, the base of 1,000,000 files cost the first plan after a
// sync 140 ms.
func baseKey(tbl *table.Table, access string, snapshot int64, schema *iceberg.Schema, caseSensitive bool, rKey string) string {
	meta := tbl.Metadata()
	return fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%d\x00%t\x00%s", access, meta.TableUUID(), meta.Version(),
		snapshot, schema.ID, caseSensitive, rKey)
}

// base returns iceberg-go's plan of r for the snapshot, with the
// statistics of fields, from the cache when it was made before for them.
// A base lacking the statistics of one of fields is made again with those
// of both, and replaces it: a table whose lookups name several columns
// soon has one base with them all, not one per column.
func (p *Planner) base(ctx context.Context, tbl *table.Table, access string, snap *table.Snapshot, caseSensitive bool, r iceberg.BooleanExpression, rKey string, schema *iceberg.Schema, fields []int) (*base, warmMiss, error) {
	key := baseKey(tbl, access, snap.SnapshotID, schema, caseSensitive, rKey)
	for round := 0; ; round++ {
		if b, ok := p.bases.get(key); ok && b.set.has(fields) {
			if round > 0 { // made by another request while this one waited
				return b, warmBaseMade, nil
			}
			return b, "", nil
		}
		// The requests that need one base at once (the first plans after
		// a commit) wait for one of them to make it, rather than each
		// making it: each would reserve what making it works in, and one
		// large reservation is taken at a time.
		v, err, shared := p.baseFlight.Do(key, func() (any, error) {
			return p.makeBase(ctx, tbl, access, snap, caseSensitive, r, rKey, schema, fields, key)
		})
		if err != nil {
			return nil, "", err
		}
		made := v.(madeBase)
		if !shared || made.b.set.has(fields) || round > 0 {
			return made.b, made.miss, nil
		}
		// Made for another request's columns: once more for this one's.
	}
}

// madeBase is a base made, and why the plan it was made for missed the
// warm path.
type madeBase struct {
	b    *base
	miss warmMiss
}

// makeBase makes the base of key, with the statistics of fields and of
// those the base it replaces held, and keeps it.
func (p *Planner) makeBase(ctx context.Context, tbl *table.Table, access string, snap *table.Snapshot, caseSensitive bool, r iceberg.BooleanExpression, rKey string, schema *iceberg.Schema, fields []int, key string) (madeBase, error) {
	old, ok := p.bases.get(key)
	if ok && old.set.has(fields) {
		return madeBase{old, ""}, nil
	}
	if ok {
		fields = slices.Clone(fields)
		for id := range old.set.stats {
			if !slices.Contains(fields, id) {
				fields = append(fields, id)
			}
		}
	}
	fields = p.withIndexedColumns(tbl, snap, schema, fields)
	// The plan's lookup reads the table's index next: read it (into the
	// FooterCache) while the base is made. At 1,000,000 files its
	// directory alone takes a core a third of a second to decode.
	go func() {
		if fsys, err := catalog.TableIO(ctx, tbl); err == nil {
			index.Load(ctx, fsys, tbl.Metadata(), p.footers.Scoped(access))
		}
	}()
	b, err := p.planBase(ctx, tbl, access, snap, caseSensitive, r, rKey, schema, fields)
	if err != nil {
		return madeBase{}, err
	}
	if b.memoCharged.Load() == 0 { // not carried over from the last base's (planByManifest)
		b.memoCharged.Store(int64(b.set.len()) * int64(len(b.set.stats)) * matchBytesPerFile)
	}
	b.size = 512 + int64(len(key)) + b.set.bytes() + b.memoCharged.Load()
	if n, ok := summaryFiles(snap); ok {
		b.filesTotal = n
	} else if rKey == (iceberg.AlwaysTrue{}).String() {
		b.filesTotal = b.set.len()
	} else if all, _, err := p.base(ctx, tbl, access, snap, caseSensitive, iceberg.AlwaysTrue{}, iceberg.AlwaysTrue{}.String(), schema, nil); err == nil {
		b.filesTotal = all.filesTotal
	}
	switch {
	case !p.bases.add(key, b, b.size):
		return madeBase{b, warmBaseNotKept}, nil
	case ok:
		return madeBase{b, warmNewColumn}, nil
	}
	return madeBase{b, warmBaseMade}, nil
}

// Estimates of a base's size before it is made, by the files the snapshot
// counts: its files' own columns (location, size, record count, format,
// partition) and, per column it holds statistics of, the statistics and
// the index's matches (1,000,000 files, id and email: 127 MB).
const (
	baseBytesPerFile       = 32
	baseColumnBytesPerFile = 48
)

// withIndexedColumns returns fields with the other columns the table's
// index covers, when a base of them all would fit the bases' part of the
// budget: one base serves lookups of every indexed column, where a base
// made for one column and then made again for two (the first lookup of
// the second) held both at once, 331 MB live at 1,000,000 files, and
// took a second manifest decoding. A snapshot that does not count its
// files gets fields alone.
func (p *Planner) withIndexedColumns(tbl *table.Table, snap *table.Snapshot, schema *iceberg.Schema, fields []int) []int {
	files, ok := summaryFiles(snap)
	if !ok {
		return fields
	}
	all := slices.Clone(fields)
	for sf := range tbl.Metadata().Statistics() {
		for _, b := range sf.BlobMetadata {
			if !index.IsIndexBlobType(puffin.BlobType(b.Type)) {
				continue
			}
			for _, id := range b.Fields {
				if f, ok := schema.FindFieldByID(int(id)); ok && !slices.Contains(all, int(id)) {
					if _, primitive := f.Type.(iceberg.PrimitiveType); primitive {
						all = append(all, int(id))
					}
				}
			}
		}
	}
	if int64(files)*(baseBytesPerFile+baseColumnBytesPerFile*int64(len(all))) > p.bases.budget {
		return fields
	}
	return all
}

// warmMiss is why a plan was not made from a kept base plan, counted in
// /metrics (icebloom_serve_warm_path_misses_total).
type warmMiss string

const (
	// warmNotLookup: the filter has no = or IN conjunct for the index.
	warmNotLookup warmMiss = "not_a_lookup"
	// warmStatsFields: the request asks for column statistics, which
	// base plans do not hold.
	warmStatsFields warmMiss = "stats_fields"
	// warmBaseMade: the base was made for this plan: the first plan of a
	// table version and filter rest, or one after the base was evicted.
	warmBaseMade warmMiss = "base_made"
	// warmNewColumn: the base was made again to hold the statistics of a
	// column it had not held.
	warmNewColumn warmMiss = "base_new_column"
	// warmBaseNotKept: the base was made for this plan and is larger than
	// the budget's part for bases, so every plan makes it: raise
	// --memory-budget-mib.
	warmBaseNotKept warmMiss = "base_not_kept"
	// warmBusy: the plan found no room in the work budget.
	warmBusy warmMiss = "busy"
	// warmError: making the base failed; the usual path planned.
	warmError warmMiss = "error"
)

// has reports whether s holds the statistics of every one of fields.
func (s *fileSet) has(fields []int) bool {
	for _, id := range fields {
		if _, ok := s.stats[id]; !ok {
			return false
		}
	}
	return true
}

// planBase makes a base plan of r with the statistics of fields, within
// the work budget.
func (p *Planner) planBase(ctx context.Context, tbl *table.Table, access string, snap *table.Snapshot, caseSensitive bool, r iceberg.BooleanExpression, rKey string, schema *iceberg.Schema, fields []int) (*base, error) {
	if rKey == (iceberg.AlwaysTrue{}).String() {
		// It reserves its own, once it knows which manifests it decodes.
		b, ok, err := p.planByManifest(ctx, tbl, access, snap, caseSensitive, schema, fields)
		if ok {
			return b, err
		}
	}
	release, err := p.work.reserve(ctx, coldWorkBytes(tbl, snap))
	if err != nil {
		return nil, err
	}
	defer release()
	tasks, err := lookup.PlanFiles(ctx, tbl, &snap.SnapshotID, r, caseSensitive)
	if err != nil {
		return nil, fmt.Errorf("plan scan of snapshot %d: %w", snap.SnapshotID, err)
	}
	set, err := newFileSet(tasks, schema, fields)
	if err != nil {
		return nil, fmt.Errorf("plan scan of snapshot %d: %w", snap.SnapshotID, err)
	}
	return &base{set: set}, nil
}

// matchBytesPerFile estimates what a base plan's memo holds per file and
// column the base holds statistics of (the columns of P), before a lookup
// says (lookup.Memo.Bytes): the file's place in the index's groups
// (lookup's columnar prober: 9 bytes) and its share of the index's
// directories, kept as stored (the bench's 1,000,000 files, two columns:
// 6.6 bytes a file). It was 48 while directories were kept decoded; a
// base of two columns of 1,000,000 files was then estimated 189 MB, over
// the 134 MB of bases of a 256 MiB budget, and made for every plan of its
// second column, while it holds 120 MB.
const matchBytesPerFile = 16

// summaryFiles is the snapshot summary's count of live data files.
func summaryFiles(snap *table.Snapshot) (int, bool) {
	if snap.Summary == nil {
		return 0, false
	}
	n, err := strconv.Atoi(snap.Summary.Properties["total-data-files"])
	return n, err == nil
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

// partitions returns each of b's distinct partitions (set.partValues) as
// a record of its spec's partition type, made on first use.
func (p *Planner) partitions(key string, b *base, tbl *table.Table, schema *iceberg.Schema) []iceberg.StructLike {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.partRecs != nil {
		return b.partRecs
	}
	types := map[int32]*iceberg.StructType{}
	recs := make([]iceberg.StructLike, len(b.set.partValues))
	for i, values := range b.set.partValues {
		spec := b.set.partSpecs[i]
		typ, ok := types[spec]
		if !ok {
			if ps := tbl.Metadata().PartitionSpecByID(int(spec)); ps != nil {
				typ = ps.PartitionType(schema)
			}
			types[spec] = typ
		}
		if typ != nil {
			recs[i] = table.GetPartitionRecord(&compactFile{partition: sortedValues(values)}, typ)
		}
	}
	b.partRecs = recs
	p.bases.grow(key, b, int64(len(recs))*96) // a record of a few values each
	return recs
}

// sortedValues is a partition's values by field id, as compactFile holds
// them.
func sortedValues(values map[int]any) []fieldValue {
	out := make([]fieldValue, 0, len(values))
	for id, v := range values {
		out = append(out, fieldValue{id, v})
	}
	slices.SortFunc(out, func(a, b fieldValue) int { return a.id - b.id })
	return out
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

// statsKeep marks the files of b whose partition and statistics do not
// rule out P (steps 1 and 2 of the fast path); nil when they rule out none.
// The index then looks at the marked files of b.set
// (lookup.Options.Keep), so its matches kept for b.set serve a value that
// statistics prune some files for (one near either end of the key range)
// as they serve any other. A partition is checked once, however many
// files share it.
func (p *Planner) statsKeep(key string, b *base, tbl *table.Table, c conjuncts) []bool {
	set := b.set
	checks := make([]valueCheck, 0, len(c.bound))
	for _, pred := range c.bound {
		vc := valueCheck{stats: set.stats[pred.Term().Ref().Field().ID]}
		if vc.stats == nil {
			continue // not made for it (base makes it so): rules nothing out
		}
		switch pred := pred.(type) {
		case iceberg.BoundLiteralPredicate:
			vc.values = []iceberg.Literal{pred.Literal()}
		case iceberg.BoundSetPredicate:
			if pred.Literals().Len() <= inPredicateLimit {
				vc.values = pred.Literals().Members()
			}
		}
		if vc.values != nil && !vc.prepare() {
			vc.values = nil // a value the held bounds cannot compare: they rule nothing out
		}
		checks = append(checks, vc)
	}
	partChecks := partitionChecks(tbl, c.schema, c)
	var partKeep []bool // by set.partValues
	if len(partChecks) > 0 {
		recs := p.partitions(key, b, tbl, c.schema)
		partKeep = make([]bool, len(recs))
		for pi, rec := range recs {
			partKeep[pi] = true
			if fns := partChecks[set.partSpecs[pi]]; len(fns) > 0 && rec != nil {
				for _, fn := range fns {
					if ok, err := fn(rec); err == nil && !ok {
						partKeep[pi] = false
						break
					}
				}
			}
		}
	}
	if !slices.Contains(partKeep, false) && !slices.ContainsFunc(checks, func(vc valueCheck) bool {
		return !vc.stats.span.ok || vc.values != nil && !vc.stats.keepsAll(vc.ints, vc.raw)
	}) {
		return nil // a value within every file's bounds, no partition ruled out: the common case
	}
	var keep []bool // nil until a file is dropped
	for i := range set.len() {
		if !keepFile(i, set, checks, partKeep) {
			if keep == nil {
				keep = make([]bool, set.len())
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

// keepFile reports whether file i's partition and statistics do not rule
// out P.
func keepFile(i int, set *fileSet, checks []valueCheck, partKeep []bool) bool {
	for _, vc := range checks {
		s := vc.stats
		if s.nullsOnly[i] || s.nansOnly[i] {
			return false
		}
		if vc.values != nil && !s.within(i, vc.values, vc.ints, vc.raw) {
			return false
		}
	}
	return partKeep == nil || partKeep[set.parts[i]]
}

// valueCheck is a conjunct of P against one column's statistics.
type valueCheck struct {
	stats  *columnStats
	values []iceberg.Literal // nil: more than iceberg-go compares (IN of over 200)
	ints   []int64           // values as int64, for intBounds
	raw    [][]byte          // values' bytes, for bytesBounds
}

// prepare converts the values to the form the column's bounds are held
// in; false when one does not convert.
func (vc *valueCheck) prepare() bool {
	for _, v := range vc.values {
		switch vc.stats.kind {
		case intBounds:
			n, ok := asInt64(v)
			if !ok {
				return false
			}
			vc.ints = append(vc.ints, n)
		case bytesBounds:
			switch v.(type) {
			case iceberg.TypedLiteral[string], iceberg.TypedLiteral[[]byte]:
				vc.raw = append(vc.raw, literalBytes(v))
			default:
				return false
			}
		}
	}
	return true
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
// conjunct for the index, a table without the snapshot, or a request for
// column statistics, which a base does not hold). It returns the number of
// distinct data files the statistics left too.
func (p *Planner) fastPlan(ctx context.Context, tbl *table.Table, access string, filter iceberg.BooleanExpression, o lookup.Options, statsFields map[int]bool) (*lookup.Result, int, warmMiss, error) {
	snap, schema, err := lookup.Snapshot(tbl, o.SnapshotID)
	if err != nil || snap == nil {
		return nil, 0, "", nil // no files, or an error the usual path reports
	}
	c, ok := split(filter, schema, o.CaseSensitive)
	if !ok {
		return nil, 0, warmNotLookup, nil
	}
	if len(statsFields) > 0 {
		return nil, 0, warmStatsFields, nil
	}
	fields := make([]int, 0, len(c.bound))
	for _, pred := range c.bound {
		if id := pred.Term().Ref().Field().ID; !slices.Contains(fields, id) {
			fields = append(fields, id)
		}
	}
	b, miss, err := p.base(ctx, tbl, access, snap, o.CaseSensitive, c.r, c.rKey, schema, fields)
	if err != nil {
		return nil, 0, "", err
	}
	key := baseKey(tbl, access, snap.SnapshotID, schema, o.CaseSensitive, c.rKey)
	o.Memo, o.Keep = &b.memo, p.statsKeep(key, b, tbl, c)
	// The index's work is sized by all of b's files, whatever statistics
	// keep, and reserved once PruneFiles knows which way it goes.
	o.Reserve = func(n int64) (func(), error) { return p.work.reserve(ctx, n) }
	// An eighth of the work budget a lookup, so that eight run at once and
	// none takes the budget's large gate (more than a quarter), which
	// serves one at a time: unbounded, a lookup of 1,000,000 files
	// reserved 18 MiB of the 64 MiB of a 256 MiB budget.
	o.MaxWorkBytes = p.work.size / 8
	res, err := lookup.PruneFiles(ctx, tbl, &b.set.files, c.p, o)
	if err != nil {
		return nil, 0, "", err
	}
	// The memo holds what this lookup matched, and the index's directories
	// (outside every other part of the budget) as long as the base is kept:
	// at 1,000,000 files, 90 bytes a file.
	if held := b.memo.Bytes(); held != b.memoCharged.Load() {
		p.bases.grow(key, b, held-b.memoCharged.Swap(held))
	}
	res.FilesTotal = b.filesTotal
	afterStats := b.set.len()
	if o.Keep != nil {
		afterStats = 0
		for _, k := range o.Keep {
			if k {
				afterStats++
			}
		}
	}
	res.Candidates = make([]table.FileScanTask, len(res.Kept))
	for j, i := range res.Kept {
		res.Candidates[j] = b.set.task(int(i))
	}
	return res, afterStats, miss, nil
}
