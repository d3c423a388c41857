package planning

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
)

// idTable is db.events of files data files of ids 2i and 2i+1, indexed,
// with a loader counting the manifest files read from storage.
func idTable(t *testing.T, files int) (*catalogtest.Catalog, Loader, *atomic.Int64) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	for i := range int64(files) {
		tbl = catalogtest.AppendIDs(t, tbl, 2*i, 2*i+1)
	}
	ident := table.Identifier{"db", "events"}
	if _, err := indexer.Build(context.Background(), cat, ident, indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	var avro atomic.Int64
	load := func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, err
		}
		counted := table.New(ident, tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (icebergio.IO, error) {
			fsys, err := tbl.FS(ctx)
			return countingIO{IO: fsys, avro: &avro}, err
		}, nil)
		return &Loaded{Table: counted}, nil
	}
	return cat, load, &avro
}

func planFiles(t *testing.T, p *Planner, filter string) ([]string, *PlanResult) {
	t.Helper()
	res, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, rest.PlanTableScanRequest{Filter: []byte(filter)})
	if err != nil {
		t.Fatalf("plan %s: %v", filter, err)
	}
	var files []string
	for _, page := range res.Pages {
		for _, task := range page.FileScanTasks {
			files = append(files, task.DataFile.FilePath)
		}
	}
	slices.Sort(files)
	return files, res
}

// localFiles is what lookup.Plan (the client's local planning with the
// index) plans for filter.
func localFiles(t *testing.T, cat *catalogtest.Catalog, filter string) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	expr, err := iceberg.ParseExpr([]byte(filter), tbl.Schema())
	if err != nil {
		t.Fatal(err)
	}
	res, err := lookup.Plan(ctx, tbl, expr, lookup.Options{CaseSensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, task := range res.Candidates {
		files = append(files, task.File.FilePath())
	}
	slices.Sort(files)
	return files
}

// TestWarmFastPathDecodesNoManifest: once a filter's rest (R) was planned,
// lookups of new values with it decode no manifest, not even from memory,
// and plan local planning's files.
func TestWarmFastPathDecodesNoManifest(t *testing.T) {
	cat, load, avro := idTable(t, 6)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	for _, first := range []string{
		`{"type":"eq","term":"id","value":3}`, // R = true
		`{"type":"and","left":{"type":"eq","term":"id","value":3},"right":{"type":"lt","term":"id","value":9}}`,
	} {
		if _, res := planFiles(t, p, first); !res.FastPath {
			t.Fatalf("%s was not planned by the fast path", first)
		}
	}
	if avro.Load() == 0 || p.manifestOpens.Load() == 0 {
		t.Fatal("the first plans read no manifest")
	}
	for _, f := range []string{
		`{"type":"eq","term":"id","value":6}`,
		`{"type":"eq","term":"id","value":11}`,
		`{"type":"eq","term":"id","value":1000}`,
		`{"type":"in","term":"id","values":[1,8,10]}`,
		`{"type":"and","left":{"type":"eq","term":"id","value":5},"right":{"type":"lt","term":"id","value":9}}`,
		`{"type":"and","left":{"type":"lt","term":"id","value":9},"right":{"type":"in","term":"id","values":[2,10]}}`,
	} {
		opens := p.manifestOpens.Load()
		got, res := planFiles(t, p, f)
		if n := p.manifestOpens.Load() - opens; n != 0 || !res.FastPath || res.Cached {
			t.Fatalf("a warm plan of %s decoded %d manifest files (fast path %v, cached %v)", f, n, res.FastPath, res.Cached)
		}
		if want := localFiles(t, cat, f); !slices.Equal(got, want) {
			t.Fatalf("%s: the fast path plans %v, local planning %v", f, got, want)
		}
		if res.FilesTotal != 6 {
			t.Fatalf("%s: FilesTotal %d, want 6", f, res.FilesTotal)
		}
	}
	// Not for the fast path: a range alone, an OR.
	for _, f := range []string{`{"type":"lt","term":"id","value":4}`,
		`{"type":"or","left":{"type":"eq","term":"id","value":5},"right":{"type":"eq","term":"id","value":7}}`} {
		if got, res := planFiles(t, p, f); res.FastPath || !slices.Equal(got, localFiles(t, cat, f)) {
			t.Fatalf("%s: fast path %v, files %v, local %v", f, res.FastPath, got, localFiles(t, cat, f))
		}
	}
}

// TestFastPathCache: base plans stay within their share of the memory
// budget (evicting the least recently used, or not kept when larger than
// it, and then planned again each time), and a commit (a new metadata
// location) makes a new base plan that holds the new file.
func TestFastPathCache(t *testing.T) {
	cat, load, _ := idTable(t, 6)
	eq := func(v int) string { return `{"type":"eq","term":"id","value":` + itoa(v) + `}` }
	withR := func(v, below int) string {
		return `{"type":"and","left":{"type":"eq","term":"id","value":` + itoa(v) + `},"right":{"type":"lt","term":"id","value":` + itoa(below) + `}}`
	}

	// A budget too small for one base: each plan decodes the manifests,
	// and plans what local planning plans.
	tiny := NewPlanner(load, PlannerOptions{MemoryBudget: 2 << 10})
	for _, v := range []int{3, 4, 5} {
		opens := tiny.manifestOpens.Load()
		got, res := planFiles(t, tiny, eq(v))
		if !res.FastPath || tiny.manifestOpens.Load() == opens {
			t.Fatalf("id = %d with a tiny budget: fast path %v, %d manifests decoded", v, res.FastPath, tiny.manifestOpens.Load()-opens)
		}
		if want := localFiles(t, cat, eq(v)); !slices.Equal(got, want) {
			t.Fatalf("id = %d: %v, local %v", v, got, want)
		}
	}
	if used, n, _, _, _ := tiny.bases.stats(); used != 0 || n != 0 {
		t.Fatalf("a tiny budget holds %d bytes of %d base plans", used, n)
	}

	// A budget of about one base: a second one evicts the first.
	probe := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	planFiles(t, probe, eq(3))
	size, _, _, _, _ := probe.bases.stats()
	if size == 0 {
		t.Fatal("a base plan has no size")
	}
	one := NewPlanner(load, PlannerOptions{MemoryBudget: 2*size + size/2}) // bases get half: one fits, not two
	planFiles(t, one, withR(3, 9))
	planFiles(t, one, withR(3, 11))
	used, n, _, _, evicted := one.bases.stats()
	if n != 1 || evicted != 1 || used > one.bases.budget {
		t.Fatalf("one base's budget holds %d bytes (budget %d) in %d bases, %d evicted", used, one.bases.budget, n, evicted)
	}
	opens := one.manifestOpens.Load()
	planFiles(t, one, withR(4, 11)) // the kept one
	if one.manifestOpens.Load() != opens {
		t.Fatal("the base kept was planned again")
	}

	// A commit: a new metadata location, a new base holding the new file.
	warm := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	planFiles(t, warm, eq(3))
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.AppendIDs(t, tbl, 500)
	opens = warm.manifestOpens.Load()
	got, res := planFiles(t, warm, eq(500))
	if warm.manifestOpens.Load() == opens || len(got) != 1 || !res.FastPath || res.FilesTotal != 7 {
		t.Fatalf("after a commit: %d manifests decoded, files %v, fast path %v, FilesTotal %d", warm.manifestOpens.Load()-opens, got, res.FastPath, res.FilesTotal)
	}
	if want := localFiles(t, cat, eq(500)); !slices.Equal(got, want) {
		t.Fatalf("after a commit: %v, local %v", got, want)
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// TestFastPathConcurrent: plans of many values at once share one base plan,
// its decoded statistics and the index's matches (run it with -race), and
// each plans local planning's files.
func TestFastPathConcurrent(t *testing.T) {
	cat, load, _ := idTable(t, 8)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	want := map[int][]string{}
	for v := range 20 {
		want[v] = localFiles(t, cat, `{"type":"eq","term":"id","value":`+itoa(v)+`}`)
	}
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for i := range 20 {
				v := (i + 5*w) % 20
				f := `{"type":"eq","term":"id","value":` + itoa(v) + `}`
				res, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, rest.PlanTableScanRequest{Filter: []byte(f)})
				if err != nil {
					errs <- err
					return
				}
				var got []string
				for _, page := range res.Pages {
					for _, task := range page.FileScanTasks {
						got = append(got, task.DataFile.FilePath)
					}
				}
				slices.Sort(got)
				if !res.FastPath && !res.Cached || !slices.Equal(got, want[v]) {
					errs <- fmt.Errorf("id = %d: fast path %v, files %v, local %v", v, res.FastPath, got, want[v])
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommitDecodesTheNewManifestAlone: after a commit that adds a
// manifest, the fast path's next plan decodes the manifest list and the new
// manifest, nothing of the manifests the last version kept, and plans what
// local planning plans; a base made manifest by manifest holds what
// iceberg-go's plan of the table holds.
func TestCommitDecodesTheNewManifestAlone(t *testing.T) {
	cat, load, _ := idTable(t, 6)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	ident := table.Identifier{"db", "events"}
	if _, res := planFiles(t, p, `{"type":"eq","term":"id","value":3}`); !res.FastPath {
		t.Fatal("the first plan did not take the fast path")
	}
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	tbl = catalogtest.AppendIDs(t, tbl, 100, 101)
	after, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, m := range after {
		if !slices.ContainsFunc(before, func(b iceberg.ManifestFile) bool { return b.FilePath() == m.FilePath() }) {
			added++
		}
	}
	if added != 1 || len(after) < 2 {
		t.Fatalf("the append left %d manifests, %d of them new; want one new beside kept ones", len(after), added)
	}
	for _, f := range []string{`{"type":"eq","term":"id","value":101}`, `{"type":"eq","term":"id","value":5}`} {
		opens := p.manifestOpens.Load()
		got, res := planFiles(t, p, f)
		if !res.FastPath || res.Cached {
			t.Fatalf("%s: fast path %v, cached %v", f, res.FastPath, res.Cached)
		}
		if want := localFiles(t, cat, f); !slices.Equal(got, want) {
			t.Fatalf("%s: the fast path plans %v, local planning %v", f, got, want)
		}
		if n := p.manifestOpens.Load() - opens; f == `{"type":"eq","term":"id","value":101}` && n != 2 {
			t.Fatalf("the first plan after the commit opened %d manifest files, want 2: the list and the new manifest", n)
		}
	}
	// The base, made manifest by manifest, holds iceberg-go's plan.
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, err := newFileSet(tasks, tbl.Schema(), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.bases.get(baseKey(tbl, "", tbl.CurrentSnapshot().SnapshotID, tbl.Schema(), true, iceberg.AlwaysTrue{}.String()))
	if b == nil || b.manifests == nil {
		t.Fatalf("no base made manifest by manifest for %s", tbl.MetadataLocation())
	}
	if !sameFiles(b.set, want) {
		t.Fatal("the base made manifest by manifest differs from iceberg-go's plan")
	}
}

// TestAppendsCarryRows: bases made from the last one through appends and
// syncs keep each manifest's own rows, and plan what local planning plans
// for every value of every file.
func TestAppendsCarryRows(t *testing.T) {
	cat, load, _ := idTable(t, 6)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	ctx, ident := context.Background(), table.Identifier{"db", "events"}
	values := []int64{0, 3, 5, 6, 9, 11}
	for round := range int64(5) {
		if round > 0 {
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			values = append(values, 98+2*round)
			catalogtest.AppendIDs(t, tbl, 98+2*round, 99+2*round)
			if round%2 == 0 {
				if _, err := indexer.Sync(ctx, cat, ident, indexer.Options{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, v := range values {
			f := `{"type":"eq","term":"id","value":` + itoa(int(v)) + `}`
			if got, want := planFilesOf(t, p, f), localFiles(t, cat, f); !slices.Equal(got, want) {
				t.Fatalf("round %d, %s: the fast path plans %v, local planning %v", round, f, got, want)
			}
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.bases.get(baseKey(tbl, "", tbl.CurrentSnapshot().SnapshotID, tbl.Schema(), true, iceberg.AlwaysTrue{}.String()))
	if b == nil || len(b.manifests) != 10 {
		t.Fatalf("the last base: %+v, want one made of 10 manifests", b)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range must(tbl.CurrentSnapshot().Manifests(fsys)) {
		want := must(manifestSet(ctx, fsys, m, tbl.Schema(), []int{1}))
		k := slices.IndexFunc(b.manifests, func(r manifestRows) bool { return r.path == m.FilePath() })
		r := b.manifests[k]
		for i := r.start; i < r.end; i++ {
			if got := b.set.files.Path(i); got != want.files.Path(i-r.start) {
				t.Fatalf("manifest %s, row %d: %s, want %s", m.FilePath(), i, got, want.files.Path(i-r.start))
			}
		}
	}
}

// planFilesOf is planFiles without its result.
func planFilesOf(t *testing.T, p *Planner, filter string) []string {
	t.Helper()
	files, _ := planFiles(t, p, filter)
	return files
}

// sameFiles reports whether two sets hold the same files with the same
// columns and statistics, in any order.
func sameFiles(a, b *fileSet) bool {
	if a.len() != b.len() {
		return false
	}
	row := func(s *fileSet, i int) string {
		t := s.task(i)
		st := s.stats[1]
		return fmt.Sprintf("%v|%v|%v|%v|%v|%v", getters(t.File), t.Length, st.nullsOnly[i], st.hasLower[i], st.ilo[i], st.ihi[i])
	}
	var ra, rb []string
	for i := range a.len() {
		ra, rb = append(ra, row(a, i)), append(rb, row(b, i))
	}
	slices.Sort(ra)
	slices.Sort(rb)
	return slices.Equal(ra, rb)
}

// getters are a DataFile's answers.
func getters(f iceberg.DataFile) []any {
	return []any{f.ContentType(), f.FilePath(), f.FileFormat(), f.Partition(), f.Count(), f.FileSizeBytes(),
		f.KeyMetadata(), f.SplitOffsets(), f.SortOrderID(), f.SpecID(), f.FirstRowID()}
}

// TestWarmMissesCounted: a plan not made from a kept base is counted by
// why (Stats.WarmMisses, /metrics' icebloom_serve_warm_path_misses_total):
// the first lookup makes the base, the next ones do not count, a range is
// not a lookup, a request for statistics takes the usual path, and a
// base larger than the bases' part of the budget is made for every plan.
func TestWarmMissesCounted(t *testing.T) {
	_, load, _ := idTable(t, 4)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	plan := func(p *Planner, req rest.PlanTableScanRequest) *PlanResult {
		t.Helper()
		res, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for v := range 3 {
		res := plan(p, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + itoa(v) + `}`)})
		if want := map[bool]string{true: "base_made", false: ""}[v == 0]; res.WarmMiss != want {
			t.Fatalf("plan %d: warm miss %q, want %q", v, res.WarmMiss, want)
		}
	}
	if res := plan(p, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":0}`)}); !res.Cached || res.WarmMiss != "" {
		t.Fatalf("the first plan again: cached %t, warm miss %q", res.Cached, res.WarmMiss)
	}
	plan(p, rest.PlanTableScanRequest{Filter: []byte(`{"type":"lt","term":"id","value":4}`)})
	plan(p, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":9}`), StatsFields: []string{"id"}})
	want := map[string]int64{"base_made": 1, "not_a_lookup": 1, "stats_fields": 1}
	if got := p.Stats().WarmMisses; !maps.Equal(got, want) {
		t.Fatalf("warm misses %v, want %v", got, want)
	}
	tiny := NewPlanner(load, PlannerOptions{MemoryBudget: 2 << 10}) // bases get 1 KiB: none fits
	for v := range 2 {
		plan(tiny, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + itoa(v) + `}`)})
	}
	if got := tiny.Stats().WarmMisses["base_not_kept"]; got != 2 {
		t.Fatalf("a base too large to keep counted %d times in 2 plans (%v)", got, tiny.Stats().WarmMisses)
	}
	if c := tiny.Stats().Caches["bases"]; c.Unkept != 2 || c.Entries != 0 {
		t.Fatalf("bases cache: %+v, want 2 unkept, none held", c)
	}
}

// TestStatisticsCommitKeepsTheBase: a commit that keeps the snapshot (the
// sync's statistics commit, a property's change) plans from the base the
// snapshot has, which matches the segment the index gained: no base is
// made again, and the file the sync indexed is no longer kept unindexed.
func TestStatisticsCommitKeepsTheBase(t *testing.T) {
	cat, load, _ := idTable(t, 6)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	ctx, ident := context.Background(), table.Identifier{"db", "events"}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.AppendIDs(t, tbl, 100, 102)
	absent := `{"type":"eq","term":"id","value":101}` // within the new file's bounds
	if _, res := planFiles(t, p, absent); !res.FastPath || res.Unindexed != 1 || res.FilesPlanned != 1 {
		t.Fatalf("before the sync: fast path %v, %d planned, %d unindexed; want the new file alone, unindexed", res.FastPath, res.FilesPlanned, res.Unindexed)
	}
	if _, err := indexer.Sync(ctx, cat, ident, indexer.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.CommitProperties(ctx, cat, ident, func(table.Metadata) (catalog.PropertyChange, error) {
		return catalog.PropertyChange{Set: iceberg.Properties{"owner": "tests"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{absent, `{"type":"eq","term":"id","value":102}`, `{"type":"eq","term":"id","value":7}`} {
		got, res := planFiles(t, p, f)
		if !res.FastPath || res.Cached || res.Unindexed != 0 {
			t.Fatalf("%s after the sync: fast path %v, cached %v, %d unindexed", f, res.FastPath, res.Cached, res.Unindexed)
		}
		if want := localFiles(t, cat, f); len(got) > len(want) || !slices.Equal(got, want) && f != absent {
			t.Fatalf("%s: the fast path plans %v, local planning %v", f, got, want)
		}
	}
	if got := p.Stats().WarmMisses; !maps.Equal(got, map[string]int64{"base_made": 1}) {
		t.Fatalf("warm misses %v, want the one base made by the first plan", got)
	}
}

// TestConcurrentPlansMakeOneBase: plans that need one new base at once
// (the first plans after a commit) wait for one of them to make it:
// the new manifest is decoded once, and every plan plans local planning's
// files.
func TestConcurrentPlansMakeOneBase(t *testing.T) {
	cat, load, _ := idTable(t, 6)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	planFiles(t, p, `{"type":"eq","term":"id","value":3}`)
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.AppendIDs(t, tbl, 100, 101)
	opens := p.manifestOpens.Load()
	var wg sync.WaitGroup
	for v := range 8 {
		wg.Go(func() {
			f := `{"type":"eq","term":"id","value":` + itoa(96+v) + `}`
			res, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, rest.PlanTableScanRequest{Filter: []byte(f)})
			if err != nil || !res.FastPath {
				t.Errorf("%s: %v (fast path %v)", f, err, res != nil && res.FastPath)
			}
		})
	}
	wg.Wait()
	if n := p.manifestOpens.Load() - opens; n != 2 {
		t.Fatalf("8 plans at once after a commit opened %d manifest files, want 2: the list and the new manifest, once", n)
	}
	if _, n, _, _, _ := p.bases.stats(); n == 0 {
		t.Fatal("no base kept")
	}
}

// TestBaseChargedForItsIndex: once a lookup matched a base's files to the
// index, the base is charged what its memo holds, the index's directories
// included (which nothing else in the budget counts and the memo keeps
// alive), in place of the estimate it was added with.
func TestBaseChargedForItsIndex(t *testing.T) {
	_, load, _ := idTable(t, 6)
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	planFiles(t, p, `{"type":"eq","term":"id","value":3}`)
	used, n, _, _, _ := p.bases.stats()
	if n != 1 {
		t.Fatalf("%d bases, want 1", n)
	}
	var b *base
	var key string
	for _, el := range p.bases.entries {
		e := el.Value.(*lruEntry[*base])
		b, key = e.val, e.key
	}
	memo := b.memo.Bytes()
	tbl, err := load(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(context.Background(), must(tbl.Table.FS(context.Background())), tbl.Table.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if memo < ix.Bytes() {
		t.Fatalf("the memo holds %d bytes, less than its index's %d", memo, ix.Bytes())
	}
	want := 512 + int64(len(key)) + b.set.bytes() + memo + int64(len(key))
	if used != want || b.memoCharged.Load() != memo {
		t.Fatalf("the base is charged %d bytes (memo %d), want %d (memo %d)", used, b.memoCharged.Load(), want, memo)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
