package serve_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// nullCmp is what a comparison with NULL (=, !=, <, IN, ...) is in
// iceberg-go's reader: false, and NOT of it true (measured: NOT (score = 0)
// reads the rows whose score is NULL), as in Java Iceberg's evaluator, not
// SQL's unknown.
const nullCmp = servetest.False

// randFilter is a random filter: the expression the client sends and the
// ground truth of it for a row.
type randFilter struct {
	expr iceberg.BooleanExpression
	eval func(row) servetest.Tri
	text string
}

func cmpOp[T int64 | int32 | float64 | string | iceberg.Date](op int, a, b T) bool {
	switch op {
	case 0:
		return a == b
	case 1:
		return a != b
	case 2:
		return a < b
	case 3:
		return a <= b
	case 4:
		return a > b
	default:
		return a >= b
	}
}

var opNames = []string{"=", "!=", "<", "<=", ">", ">="}

func predicate[T int64 | int32 | float64 | string | iceberg.Date](op int, ref iceberg.UnboundTerm, v T) iceberg.BooleanExpression {
	switch op {
	case 0:
		return iceberg.EqualTo(ref, v)
	case 1:
		return iceberg.NotEqualTo(ref, v)
	case 2:
		return iceberg.LessThan(ref, v)
	case 3:
		return iceberg.LessThanEqual(ref, v)
	case 4:
		return iceberg.GreaterThan(ref, v)
	default:
		return iceberg.GreaterThanEqual(ref, v)
	}
}

// leaf builds a predicate on column col of T, where get reads the column
// of a row (nil for NULL).
func leaf[T int64 | int32 | float64 | string | iceberg.Date](fx *fixture, col string, get func(row) *T, values []T, lit func(T) string) randFilter {
	ref := iceberg.Reference(col)
	k := fx.rng.IntN(10)
	if fx.pointOnly {
		k = fx.rng.IntN(6)
	}
	switch {
	case k < 4: // =, the index's case, often
		v := values[fx.rng.IntN(len(values))]
		return randFilter{iceberg.EqualTo(ref, v), func(r row) servetest.Tri {
			if p := get(r); p != nil {
				return servetest.TriOf(*p == v)
			}
			return nullCmp
		}, fmt.Sprintf("%s = %s", col, lit(v))}
	case k < 6:
		n := 1 + fx.rng.IntN(3)
		vs := make([]T, n)
		for i := range vs {
			vs[i] = values[fx.rng.IntN(len(values))]
		}
		return randFilter{iceberg.IsIn(ref, vs...), func(r row) servetest.Tri {
			if p := get(r); p != nil {
				return servetest.TriOf(slices.Contains(vs, *p))
			}
			return nullCmp
		}, fmt.Sprintf("%s IN %v", col, vs)}
	case k < 8:
		op := fx.rng.IntN(6)
		v := values[fx.rng.IntN(len(values))]
		return randFilter{predicate(op, ref, v), func(r row) servetest.Tri {
			if p := get(r); p != nil {
				return servetest.TriOf(cmpOp(op, *p, v))
			}
			return nullCmp
		}, fmt.Sprintf("%s %s %s", col, opNames[op], lit(v))}
	case k < 9:
		return randFilter{iceberg.IsNull(ref), func(r row) servetest.Tri { return servetest.TriOf(get(r) == nil) }, col + " IS NULL"}
	default:
		return randFilter{iceberg.NotNull(ref), func(r row) servetest.Tri { return servetest.TriOf(get(r) != nil) }, col + " IS NOT NULL"}
	}
}

func (fx *fixture) randLeaf() randFilter {
	switch fx.rng.IntN(5) {
	case 0:
		// ids present and absent (beyond the last id, and 0)
		vals := []int64{0, fx.nextID + 5, 1 + fx.rng.Int64N(fx.nextID), 1 + fx.rng.Int64N(fx.nextID), 1 + fx.rng.Int64N(fx.nextID)}
		return leaf(fx, "id", func(r row) *int64 { return &r.id }, vals, func(v int64) string { return fmt.Sprint(v) })
	case 1:
		vals := []string{"user1", "user7", "user33", "nobody", fmt.Sprintf("user%d", fx.rng.IntN(40))}
		return leaf(fx, "name", func(r row) *string { return r.name }, vals, func(v string) string { return "'" + v + "'" })
	case 2:
		vals := []iceberg.Date{baseDay, baseDay + 1, baseDay + 2, baseDay + 3, baseDay + 9}
		return leaf(fx, "day", func(r row) *iceberg.Date { return r.day }, vals, func(v iceberg.Date) string { return "DATE '" + iceberg.DateLiteral(v).String() + "'" })
	case 3:
		vals := []float64{0, 10.5, 50, 99.9, float64(fx.rng.IntN(1000)) / 10}
		return leaf(fx, "score", func(r row) *float64 { return r.score }, vals, func(v float64) string { return fmt.Sprint(v) })
	default:
		vals := []int32{0, 3, 7, 11, int32(fx.rng.IntN(8))}
		return leaf(fx, "cat", func(r row) *int32 { return r.cat }, vals, func(v int32) string { return fmt.Sprint(v) })
	}
}

// pointLeaf is a random = or IN of a column the index can prune with (by
// lookup.Prunable): a conjunct for the fast path, of the indexed id, name
// and cat, or of the partition source day, which is not indexed (score is
// a double, which the index does not hash).
func (fx *fixture) pointLeaf() randFilter {
	fx.pointOnly = true
	defer func() { fx.pointOnly = false }()
	for {
		if f := fx.randLeaf(); !strings.HasPrefix(f.text, "score") {
			return f
		}
	}
}

func and(a, b randFilter) randFilter {
	return randFilter{iceberg.NewAnd(a.expr, b.expr), func(r row) servetest.Tri { return min(a.eval(r), b.eval(r)) }, "(" + a.text + " AND " + b.text + ")"}
}

// fastFilter is a random filter with = or IN conjuncts at its top: P
// alone, P AND R, or R AND (P AND P).
func (fx *fixture) fastFilter(int) randFilter {
	switch fx.rng.IntN(3) {
	case 0:
		return fx.pointLeaf()
	case 1:
		return and(fx.pointLeaf(), fx.randFilter(2))
	default:
		return and(fx.randFilter(2), and(fx.pointLeaf(), fx.pointLeaf()))
	}
}

func (fx *fixture) randFilter(depth int) randFilter {
	if depth == 0 || fx.rng.IntN(3) == 0 {
		return fx.randLeaf()
	}
	switch fx.rng.IntN(5) {
	case 0:
		c := fx.randFilter(depth - 1)
		return randFilter{iceberg.NewNot(c.expr), func(r row) servetest.Tri { return c.eval(r).Not() }, "NOT (" + c.text + ")"}
	case 1, 2:
		return and(fx.randFilter(depth-1), fx.randFilter(depth-1))
	default:
		a, b := fx.randFilter(depth-1), fx.randFilter(depth-1)
		return randFilter{iceberg.NewOr(a.expr, b.expr), func(r row) servetest.Tri { return max(a.eval(r), b.eval(r)) }, "(" + a.text + " OR " + b.text + ")"}
	}
}

// readIDs reads the ids of the rows a scan of tbl with filter returns,
// planned as mode says, and the data files planned.
func readIDs(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression, mode table.ScanPlanningMode, snap *int64) ([]int64, int) {
	t.Helper()
	ctx := context.Background()
	opts := []table.ScanOption{table.WithRowFilter(filter), table.WithScanPlanningMode(mode)}
	if snap != nil {
		opts = append(opts, table.WithSnapshotID(*snap))
	}
	scan := tbl.Scan(opts...)
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatalf("plan (%s): %v", mode, err)
	}
	files := map[string]bool{}
	for _, task := range tasks {
		files[task.File.FilePath()] = true
	}
	_, recs, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		t.Fatalf("read (%s): %v", mode, err)
	}
	var ids []int64
	for rec, err := range recs {
		if err != nil {
			t.Fatalf("read (%s): %v", mode, err)
		}
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
		rec.Release()
	}
	slices.Sort(ids)
	return ids, len(files)
}

func truth(rows map[int64]row, f randFilter) []int64 {
	var ids []int64
	for id, r := range rows {
		if f.eval(r) == servetest.True {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// differential plans and reads random filters through the server and
// locally, and checks both against the ground truth.
// filterCount is n random filters, or a quarter of them under the race
// detector: each filter is planned and read several times slower there, and
// the server's concurrency is as well exercised by fewer.
func filterCount(n int) int {
	if raceEnabled {
		return n / 4
	}
	return n
}

func differential(t *testing.T, fx *fixture, tbl *table.Table, n int, gen func(depth int) randFilter) (pruned, readerDiffs int) {
	t.Helper()
	for i := range n {
		f := gen(3)
		var snap *int64
		rows := fx.live
		if i%10 == 9 {
			snap, rows = &fx.oldSnap, fx.oldLive
		}
		want := truth(rows, f)
		local, localFiles := readIDs(t, tbl, f.expr, table.ScanPlanningLocal, snap)
		remote, remoteFiles := readIDs(t, tbl, f.expr, table.ScanPlanningRemote, snap)
		if i%7 == 0 { // planned again: from the server's cache, the same rows
			if again, _ := readIDs(t, tbl, f.expr, table.ScanPlanningRemote, snap); !slices.Equal(again, remote) {
				t.Fatalf("filter %s planned again reads %v, first %v", f.text, again, remote)
			}
		}
		// iceberg-go v0.7.0's reader skips Parquet row groups whose null
		// count equals their count of non-null values for predicates that
		// need a non-null value (IS NOT NULL, =, <, ...): its row-group
		// metrics evaluator (table/evaluators.go, eval) takes arrow-go's
		// Statistics.NumValues, the non-null count, for Iceberg's value
		// count, which includes nulls, so such a row group "contains nulls
		// only". That loses rows, never adds any, and it can lose them on
		// one side only: the server's tasks carry no residual, local
		// planning's do, so the reader prunes row groups with other
		// filters. The server cannot change how its client reads, so what
		// fails the test is a row the truth lacks (a deleted row back,
		// say) read through the server, or a true row the server's plan
		// loses that local planning found; the reader's own losses are
		// counted and shown.
		for _, id := range remote {
			if _, found := slices.BinarySearch(want, id); !found {
				t.Fatalf("filter %d %s (snapshot %v): the server's plan read row %d, which the ground truth lacks:%s",
					i, f.text, snap, id, diffRows(rows, remote, local, want))
			}
		}
		for _, id := range local {
			_, true_ := slices.BinarySearch(want, id)
			if _, found := slices.BinarySearch(remote, id); true_ && !found {
				t.Fatalf("filter %d %s (snapshot %v): the server's plan loses row %d, which local planning reads:\n server %v\n local  %v\n truth  %v%s",
					i, f.text, snap, id, remote, local, want, diffRows(rows, remote, local, want))
			}
		}
		if !slices.Equal(remote, want) || !slices.Equal(local, want) {
			readerDiffs++
			t.Logf("filter %d %s (snapshot %v): iceberg-go's reader read rows other than the ground truth's:%s",
				i, f.text, snap, diffRows(rows, remote, local, want))
		}
		if remoteFiles > localFiles {
			t.Fatalf("filter %s: the server planned %d files, local planning %d", f.text, remoteFiles, localFiles)
		}
		if remoteFiles < localFiles {
			pruned++
		}
	}
	return pruned, readerDiffs
}

// TestDifferentialProxy: 200 random filters read by iceberg-go's REST
// client with remote planning through the proxy (in front of the REST test
// server) give the rows of local planning and of the ground truth; the
// server never plans more files and fewer for some.
func TestDifferentialProxy(t *testing.T) {
	s := servetest.Seed(t)
	fx, up, hs, _ := proxyFixture(t, s, "2", serve.Options{TasksPerPage: 2})
	cat := client(t, hs.URL, up.Token)
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	n := filterCount(200)
	pruned, readerDiffs := differential(t, fx, tbl, n, fx.randFilter)
	t.Logf("the index pruned files for %d of %d filters; iceberg-go's reader differed from the ground truth for %d; %d fast-path plans",
		pruned, n, readerDiffs, fastPlans(t, hs.URL))
	if pruned == 0 {
		t.Fatal("the index pruned no file for any filter")
	}
}

// TestDifferentialFastPath is TestDifferentialProxy with filters made for
// the fast path: = or IN conjuncts (pointLeaf) alone or ANDed with random
// filters,
// a tenth of them of the time-travel snapshot. Every plan but the repeated
// ones must be made by the fast path.
func TestDifferentialFastPath(t *testing.T) {
	s := servetest.Seed(t)
	fx, up, hs, _ := proxyFixture(t, s, "2", serve.Options{TasksPerPage: 2})
	tbl, err := client(t, hs.URL, up.Token).LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	n := filterCount(200)
	// Every plan the server makes (a repeated one comes from the plan
	// cache) must take the fast path, but those of filters that iceberg-go
	// folds to AlwaysFalse before sending them, which have no conjuncts.
	folded := 0
	gen := func(depth int) randFilter {
		f := fx.fastFilter(depth)
		if bound, err := iceberg.BindExpr(schema, f.expr, true); err == nil && bound.Equals(iceberg.AlwaysFalse{}) {
			folded++
		}
		return f
	}
	pruned, readerDiffs := differential(t, fx, tbl, n, gen)
	fast, planned := metric(t, hs.URL, "icebloom_serve_fast_path_plans_total"), metric(t, hs.URL, `icebloom_serve_plans_total{outcome="planned"}`)
	t.Logf("the index pruned files for %d of %d filters; iceberg-go's reader differed from the ground truth for %d; %d fast-path plans",
		pruned, n, readerDiffs, fast)
	if pruned == 0 {
		t.Fatal("the index pruned no file for any filter")
	}
	if fast < planned-folded {
		t.Fatalf("%d of %d plans took the fast path; %d filters fold to AlwaysFalse", fast, planned, folded)
	}
}

// fastPlans reads the server's count of fast-path plans from /metrics.
func fastPlans(t *testing.T, url string) int {
	return metric(t, url, "icebloom_serve_fast_path_plans_total")
}

// metric reads a value of the server's /metrics.
func metric(t *testing.T, url, name string) int {
	t.Helper()
	_, body := do(t, "GET", url+"/metrics", "", "")
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("/metrics has no %s:\n%s", name, body)
	return 0
}

// TestDifferentialCatalog is TestDifferentialProxy in catalog mode, over the
// SQL catalog.
func TestDifferentialCatalog(t *testing.T) {
	s := servetest.Seed(t)
	up := newSQLCatalog(t)
	fx := newFixture(t, up, s, "2")
	srv, err := serve.New(serve.Options{Catalog: up.Catalog, TasksPerPage: 3, BearerToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(t, srv)
	tbl, err := client(t, hs.URL, "tok").LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	n := filterCount(200)
	pruned, readerDiffs := differential(t, fx, tbl, n, fx.randFilter)
	t.Logf("the index pruned files for %d of %d filters; iceberg-go's reader differed from the ground truth for %d", pruned, n, readerDiffs)
	if pruned == 0 {
		t.Fatal("the index pruned no file for any filter")
	}
}

// diffRows shows the rows on which the server, local planning and the
// ground truth disagree.
func diffRows(rows map[int64]row, lists ...[]int64) string {
	in := make([]map[int64]bool, len(lists))
	all := map[int64]bool{}
	for i, l := range lists {
		in[i] = map[int64]bool{}
		for _, id := range l {
			in[i][id], all[id] = true, true
		}
	}
	var out string
	for _, id := range slices.Sorted(maps.Keys(all)) {
		if in[0][id] != in[2][id] || in[1][id] != in[2][id] {
			r, ok := rows[id]
			out += fmt.Sprintf("\n  id %d (live %v) server %v local %v truth %v: %s", id, ok, in[0][id], in[1][id], in[2][id], r)
		}
	}
	return out
}

func (r row) String() string {
	s := fmt.Sprintf("id=%d", r.id)
	if r.name != nil {
		s += " name=" + *r.name
	} else {
		s += " name=NULL"
	}
	if r.day != nil {
		s += " day=" + iceberg.DateLiteral(*r.day).String()
	} else {
		s += " day=NULL"
	}
	if r.score != nil {
		s += fmt.Sprintf(" score=%v", *r.score)
	} else {
		s += " score=NULL"
	}
	if r.cat != nil {
		s += fmt.Sprintf(" cat=%d", *r.cat)
	} else {
		s += " cat=NULL"
	}
	return s
}

// TestDifferentialDeletionVectors is TestDifferentialProxy on a format
// version 3 table, whose position deletes are deletion vectors (blobs of
// Puffin files, each naming its data file).
func TestDifferentialDeletionVectors(t *testing.T) {
	s := servetest.Seed(t)
	fx, up, hs, _ := proxyFixture(t, s, "3", serve.Options{TasksPerPage: 2})
	tbl, err := client(t, hs.URL, up.Token).LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	dvs := 0
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		dvs += len(task.DeletionVectorFiles)
	}
	if dvs == 0 {
		t.Fatal("the format version 3 table has no deletion vectors")
	}
	n := filterCount(100)
	pruned, readerDiffs := differential(t, fx, tbl, n, fx.randFilter)
	t.Logf("the index pruned files for %d of %d filters; iceberg-go's reader differed from the ground truth for %d", pruned, n, readerDiffs)
}
