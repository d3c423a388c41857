package lookup

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
)

// verdict is what the index says about a data file and (part of) a filter.
type verdict int8

const (
	undecided verdict = iota // blocks must be read first
	no                       // no row of the file can match: prune it
	maybe                    // the file may hold a match: keep it
)

// node is a filter reduced to what the index can answer (docs/format.md
// §5): AND and OR of tests of one column against values, each answering no
// or maybe. Anything else becomes a node that always answers maybe.
type node struct {
	kind nodeKind
	kids []*node // of and and or
	test *test   // of a test node
}

type nodeKind int8

const (
	keepNode nodeKind = iota // never prunes: NOT, !=, ranges, IS NULL, …
	dropNode                 // AlwaysFalse: no row matches
	testNode
	andNode
	orNode
)

var (
	keep = &node{kind: keepNode}
	drop = &node{kind: dropNode}
)

// test is col = v or col IN (v1, …): no for a file when its applicable entry
// says no for every value.
type test struct {
	idx     int // in predicate.tests
	fieldID int
	column  string
	values  []iceberg.Literal // bound to the column's type
}

// predicate is a bound filter compiled for the index: what of it can prune.
type predicate struct {
	root  *node
	tests []*test // those root uses: the columns the filter needs indexed
}

// compile reduces a filter bound to schema to what the index can prune
// with. AND keeps the children that can prune; OR prunes only if all its
// children can.
func compile(schema *iceberg.Schema, bound iceberg.BooleanExpression) (*predicate, error) {
	root, err := iceberg.VisitExpr(bound, compiler{schema})
	if err != nil {
		return nil, err
	}
	f := &predicate{root: root}
	var collect func(*node)
	collect = func(n *node) {
		if n.test != nil {
			n.test.idx = len(f.tests)
			f.tests = append(f.tests, n.test)
		}
		for _, kid := range n.kids {
			collect(kid)
		}
	}
	collect(root)
	return f, nil
}

// compiler is the iceberg.BooleanExprVisitor that makes nodes.
type compiler struct{ schema *iceberg.Schema }

func (compiler) VisitTrue() *node     { return keep }
func (compiler) VisitFalse() *node    { return drop }
func (compiler) VisitNot(*node) *node { return keep }

func (compiler) VisitAnd(left, right *node) *node { return join(andNode, drop, keep, left, right) }
func (compiler) VisitOr(left, right *node) *node  { return join(orNode, keep, drop, left, right) }

// join joins two nodes with AND or OR (kind k). absorbing decides the whole
// (drop for AND, keep for OR) and neutral adds nothing (the other one).
// Nested nodes of the same kind become one, so that an AND can order all
// its children.
func join(k nodeKind, absorbing, neutral, left, right *node) *node {
	switch {
	case left == absorbing || right == absorbing:
		return absorbing
	case left == neutral:
		return right
	case right == neutral:
		return left
	}
	n := &node{kind: k}
	for _, side := range []*node{left, right} {
		if side.kind == k {
			n.kids = append(n.kids, side.kids...)
		} else {
			n.kids = append(n.kids, side)
		}
	}
	return n
}

func (compiler) VisitUnbound(p iceberg.UnboundPredicate) *node {
	panic(fmt.Errorf("lookup: predicate %s is not bound", p))
}

func (c compiler) VisitBound(p iceberg.BoundPredicate) *node {
	values, ok := testValues(p)
	if !ok {
		return keep
	}
	id := p.Term().Ref().Field().ID
	name, _ := c.schema.FindColumnName(id)
	return &node{kind: testNode, test: &test{fieldID: id, column: name, values: values}}
}

// MaxTestValues is the most values of an IN the index prunes with. A
// bloom filter answers "maybe" for a value it lacks with probability fpp, so
// a file lacking all of n values is pruned with probability (1-fpp)^n:
// 0.99^1024 is 3e-5, while checking costs a block per file and value (an
// IN of 1,000,000 values over 200 files took 17 GB). A larger IN keeps
// every file, as any predicate the index cannot use does.
const MaxTestValues = 1024

// testValues returns the values of a predicate the index can prune with:
// col = v or col IN (…) of at most MaxTestValues values, of a column (not a
// transform of one) of a type the index hashes.
func testValues(p iceberg.BoundPredicate) ([]iceberg.Literal, bool) {
	ref, isColumn := p.Term().(iceberg.BoundReference) // not a transform
	if !isColumn || !hashing.SupportsType(ref.Type()) {
		return nil, false
	}
	switch p.Op() {
	case iceberg.OpEQ:
		return []iceberg.Literal{p.(iceberg.BoundLiteralPredicate).Literal()}, true
	case iceberg.OpIn:
		if set := p.(iceberg.BoundSetPredicate).Literals(); set.Len() <= MaxTestValues {
			return set.Members(), true
		}
	}
	return nil, false
}

// Prunable reports whether the index can prune with a bound predicate on
// its own: col = v or col IN (…) of at most MaxTestValues values, of a
// column of a type it hashes, whether or not the column is indexed (a file
// without an entry is kept). A caller
// splitting a filter's AND into what the index prunes with and the rest
// (Prune the first, plan the rest) decides with it as Plan does.
func Prunable(p iceberg.BoundPredicate) bool {
	_, ok := testValues(p)
	return ok
}

// fileCheck is the evaluation of the filter for one data file. A test is
// prepared (its entry looked up, its values hashed) when evaluation first
// reaches it, and its blocks are read only when evaluation asks for them.
// A lookup keeps one per data file, so it holds no map and allocates
// nothing of its own: checks is carved from one slice for all files.
type fileCheck struct {
	file   int32       // in the run's planFiles
	checks []testCheck // by test.idx
	pruned bool
	listed bool // in Result.Candidates already
}

// testCheck is one test for one file: the file's filter for the column if
// it has one (indexed), whether the test was prepared, the checks of its
// values that need a block, and whether a value already answered maybe
// without one.
type testCheck struct {
	stored          *index.StoredFilter // nil: the file has none (unindexed)
	prepared, maybe bool
	probes          []probe // carved from the run's probe arena
}

// hashedValue is a test value converted for one value type: the same for
// every file whose entry records that type, so it is done once per lookup.
type hashedValue struct {
	hash    uint64
	outcome hashing.Outcome
	err     error
}

// typedHashes are a test's values hashed for one entry value type.
type typedHashes struct {
	valueType iceberg.PrimitiveType
	values    []hashedValue
}

// hashes returns t's values hashed for valueType, converting them on first
// use.
func (r *run) hashes(t *test, valueType iceberg.PrimitiveType) []hashedValue {
	cached := r.hashed[t.idx]
	for i := range cached {
		if cached[i].valueType.Equals(valueType) {
			return cached[i].values
		}
	}
	values := make([]hashedValue, len(t.values))
	for i, v := range t.values {
		h, outcome, err := hashing.Literal(valueType, v)
		values[i] = hashedValue{h, outcome, err}
	}
	r.hashed[t.idx] = append(cached, typedHashes{valueType, values})
	return values
}

// prepare classifies the test's values against the file's filter without
// reading (hashing.Literal): a value no entry value can equal needs
// no block, one the index cannot judge makes the test maybe, the others
// each need their block. Problems are reported to r and keep the file.
func (fc *fileCheck) prepare(r *run, t *test) {
	tc := &fc.checks[t.idx]
	tc.prepared = true
	if tc.stored == nil {
		tc.maybe = true
		return
	}
	flt := tc.stored
	probes := r.arena.take(len(t.values))[:0]
	for i, hv := range r.hashes(t, flt.ValueType) {
		if hv.err != nil {
			r.report(fmt.Errorf("lookup: %s = %s in %s (filter in %s): %w", t.column, t.values[i], r.planned.Path(int(fc.file)), flt.Path, hv.err))
		}
		switch hv.outcome {
		case hashing.NeverPresent:
			continue
		case hashing.CannotPrune:
			tc.maybe = true
			return
		}
		block := sbbf.BlockIndex(hv.hash, flt.Blocks)
		probes = append(probes, newProbe(flt, block, hv.hash))
	}
	tc.probes = probes
}

// eval evaluates n for the file. An undecided result comes with the probes
// to read next, appended to *next: those of every test an OR needs (all
// must say no to prune), but only those of the cheapest undecided child of
// an AND (any no prunes).
func (fc *fileCheck) eval(n *node, r *run, next *[]*probe) verdict {
	switch n.kind {
	case keepNode:
		return maybe
	case dropNode:
		return no
	case testNode:
		if !fc.checks[n.test.idx].prepared {
			fc.prepare(r, n.test)
		}
		return fc.checks[n.test.idx].verdict(next)
	case andNode:
		// The probes of the cheapest undecided child so far are kept at
		// base; a later child appends after them and either replaces them
		// or is dropped.
		base, best := len(*next), -1
		for _, kid := range n.kids {
			mark := len(*next)
			switch fc.eval(kid, r, next) {
			case no:
				*next = (*next)[:base]
				return no
			case undecided:
				if cost := len(*next) - mark; best < 0 || cost < best {
					*next = append((*next)[:base], (*next)[mark:]...)
					best = cost
					continue
				}
			}
			*next = (*next)[:mark]
		}
		if best >= 0 {
			return undecided
		}
		return maybe
	default: // orNode
		base, undecidedKids := len(*next), false
		for _, kid := range n.kids {
			switch fc.eval(kid, r, next) {
			case maybe:
				*next = (*next)[:base]
				return maybe
			case undecided:
				undecidedKids = true
			}
		}
		if undecidedKids {
			return undecided
		}
		return no
	}
}

// verdict is no when every value is known absent, maybe when any may be
// present, and otherwise undecided, with the probes still to read appended
// to *next.
func (tc *testCheck) verdict(next *[]*probe) verdict {
	if tc.maybe {
		return maybe
	}
	base := len(*next)
	for i := range tc.probes {
		p := &tc.probes[i]
		switch {
		case !p.done:
			*next = append(*next, p)
		case p.present:
			tc.maybe = true
			*next = (*next)[:base]
			return maybe
		}
	}
	if len(*next) > base {
		return undecided
	}
	return no
}
