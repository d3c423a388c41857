package lookup

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/where"
)

// TestPrune: Prune over a plan without a filter keeps every file holding
// the value and drops what the index rules out; over Plan's own AfterStats
// it gives Plan's candidates; a Memo changes nothing it keeps.
func TestPrune(t *testing.T) {
	fx := eventsFixture(t, 3, rowsPerFile)
	cache := index.NewFooterCache(4)
	all, err := fx.tbl.Scan().PlanFiles(fx.ctx)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	memo := &Memo{} // kept across values and columns of the same tasks
	for c := range fx.cols {
		for _, v := range []any{fx.files[1].rows[2][c], fx.absent(c)} {
			filter := fx.where(c, v)
			planned := fx.plan(filter, Options{Cache: cache})
			again, err := Prune(fx.ctx, fx.tbl, planned.AfterStats, filter, Options{Cache: cache})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(paths(again.Candidates), paths(planned.Candidates)) || again.SnapshotID != planned.SnapshotID {
				t.Fatalf("%s: Prune of Plan's AfterStats kept %v, Plan %v", filter, paths(again.Candidates), paths(planned.Candidates))
			}
			wide, err := Prune(fx.ctx, fx.tbl, all, filter, Options{Cache: cache})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range paths(planned.Candidates) {
				if !slices.Contains(paths(wide.Candidates), p) {
					t.Fatalf("%s: Prune of the whole plan dropped %s, a candidate of Plan", filter, p)
				}
			}
			if wide.FilesTotal != 0 || len(wide.IndexErrors) > 0 {
				t.Fatalf("%s: FilesTotal %d, errors %v", filter, wide.FilesTotal, wide.IndexErrors)
			}
			memoized, err := Prune(fx.ctx, fx.tbl, all, filter, Options{Cache: cache, Memo: memo})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(paths(memoized.Candidates), paths(wide.Candidates)) {
				t.Fatalf("%s: Prune with a memo kept %v, without %v", filter, paths(memoized.Candidates), paths(wide.Candidates))
			}
			// Plan's AfterStats marked among all the tasks (Keep): Plan's
			// candidates, and the memo stays that of all the tasks.
			made := memo.pf
			keep := make([]bool, len(all))
			for i, task := range all {
				keep[i] = slices.Contains(paths(planned.AfterStats), task.File.FilePath())
			}
			marked, err := Prune(fx.ctx, fx.tbl, all, filter, Options{Cache: cache, Memo: memo, Keep: keep})
			if err != nil {
				t.Fatal(err)
			}
			if !sameSet(paths(marked.Candidates), paths(planned.Candidates)) || !sameSet(paths(marked.AfterStats), paths(planned.AfterStats)) {
				t.Fatalf("%s: Prune with Keep kept %v of %v, Plan %v of %v", filter, paths(marked.Candidates), paths(marked.AfterStats),
					paths(planned.Candidates), paths(planned.AfterStats))
			}
			if memo.pf != made {
				t.Fatalf("%s: Prune with Keep made the memo of all tasks again", filter)
			}
			// Other tasks with the same memo: it must not answer for them.
			part, err := Prune(fx.ctx, fx.tbl, planned.AfterStats, filter, Options{Cache: cache, Memo: memo})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(paths(part.Candidates), paths(planned.Candidates)) {
				t.Fatalf("%s: Prune of other tasks with a memo kept %v, Plan %v", filter, paths(part.Candidates), paths(planned.Candidates))
			}
			dropped += len(all) - len(wide.Candidates)
		}
	}
	if dropped == 0 {
		t.Fatal("Prune dropped no file")
	}
	if _, err := Prune(fx.ctx, fx.tbl, all, mustParse(t, "nosuch = 1"), Options{}); err == nil {
		t.Fatal("Prune of a filter on an unknown column succeeded")
	}
}

// TestPrunable: = and IN of a column prune; other predicates do not.
func TestPrunable(t *testing.T) {
	_, schema, err := Snapshot(eventsFixture(t, 1, 2).tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	col := schema.Fields()[0].Name
	for _, c := range []struct {
		expr iceberg.BooleanExpression
		want bool
	}{
		{iceberg.EqualTo(iceberg.Reference(col), int64(3)), true},
		{iceberg.IsIn(iceberg.Reference(col), int64(3), int64(4)), true},
		{iceberg.NotEqualTo(iceberg.Reference(col), int64(3)), false},
		{iceberg.LessThan(iceberg.Reference(col), int64(3)), false},
		{iceberg.NotIn(iceberg.Reference(col), int64(3), int64(4)), false},
	} {
		bound, err := where.Bind(schema, c.expr, true)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := bound.(iceberg.BoundPredicate)
		if !ok {
			t.Fatalf("%s bound to %T", c.expr, bound)
		}
		if got := Prunable(p); got != c.want {
			t.Errorf("Prunable(%s) = %v, want %v", c.expr, got, c.want)
		}
	}
}

// TestPruneConcurrently: lookups of different values of one plan at once,
// sharing its Memo (as a server's do), each keep what the same lookup alone
// keeps: the work space each borrows (scratchPool) is its own.
func TestPruneConcurrently(t *testing.T) {
	fx := eventsFixture(t, 6, rowsPerFile)
	cache := index.NewFooterCache(4)
	all, err := fx.tbl.Scan().PlanFiles(fx.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var filters []iceberg.BooleanExpression
	var want [][]string
	for c := range fx.cols {
		for _, f := range fx.files {
			for _, v := range []any{f.rows[1][c], fx.absent(c)} {
				filter := fx.where(c, v)
				alone, err := Prune(fx.ctx, fx.tbl, all, filter, Options{Cache: cache})
				if err != nil {
					t.Fatal(err)
				}
				filters, want = append(filters, filter), append(want, paths(alone.Candidates))
			}
		}
	}
	memo := &Memo{}
	var g errgroup.Group
	for round := range 4 {
		for i, filter := range filters {
			g.Go(func() error {
				got, err := Prune(fx.ctx, fx.tbl, all, filter, Options{Cache: cache, Memo: memo})
				if err != nil {
					return err
				}
				if !slices.Equal(paths(got.Candidates), want[i]) {
					return fmt.Errorf("round %d, %s: kept %v at once with others, %v alone", round, filter, paths(got.Candidates), want[i])
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPruneFiles: PruneFiles over the files of a plan held in columns keeps
// what Prune keeps of its tasks, with and without Keep, and a Memo of those
// Files serves every value without being made again.
func TestPruneFiles(t *testing.T) {
	fx := groupedFixture(t, 3, rowsPerFile)
	cache := index.NewFooterCache(4)
	all, err := fx.tbl.Scan().PlanFiles(fx.ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := &filelist.List{}
	for _, task := range all {
		files.Append(task.File.FilePath(), task.File.FileSizeBytes())
	}
	kept := func(res *Result) []string {
		var out []string
		for _, i := range res.Kept {
			out = append(out, files.Path(int(i)))
		}
		return out
	}
	memo := &Memo{}
	var made map[int]*columnIndex
	dropped := 0
	for c := range fx.cols {
		for _, v := range []any{fx.files[1].rows[2][c], fx.absent(c)} {
			filter := fx.where(c, v)
			want, err := Prune(fx.ctx, fx.tbl, all, filter, Options{Cache: cache})
			if err != nil {
				t.Fatal(err)
			}
			got, err := PruneFiles(fx.ctx, fx.tbl, files, filter, Options{Cache: cache, Memo: memo})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(kept(got), paths(want.Candidates)) || got.SnapshotID != want.SnapshotID {
				t.Fatalf("%s: PruneFiles kept %v, Prune %v", filter, kept(got), paths(want.Candidates))
			}
			// A column matched once is kept (a column matched later makes
			// a new map of them, which its lookups read without the lock).
			for id, col := range made {
				if memo.cols[id] != col {
					t.Fatalf("%s: the memo's column %d of the same Files was made again", filter, id)
				}
			}
			if memo.pf != nil {
				t.Fatalf("%s: the general evaluation ran", filter)
			}
			made = maps.Clone(memo.cols)
			// Every other file left out beforehand (Keep): what Prune keeps
			// of those.
			keep := make([]bool, len(all))
			var some []string
			for i := range keep {
				keep[i] = i%2 == 0
				if keep[i] {
					some = append(some, files.Path(int(i)))
				}
			}
			marked, err := PruneFiles(fx.ctx, fx.tbl, files, filter, Options{Cache: cache, Memo: memo, Keep: keep})
			if err != nil {
				t.Fatal(err)
			}
			var wantMarked []string
			for _, p := range paths(want.Candidates) {
				if slices.Contains(some, p) {
					wantMarked = append(wantMarked, p)
				}
			}
			if !slices.Equal(kept(marked), wantMarked) {
				t.Fatalf("%s: PruneFiles with Keep kept %v, want %v", filter, kept(marked), wantMarked)
			}
			dropped += len(all) - len(got.Kept)
		}
	}
	if dropped == 0 {
		t.Fatal("PruneFiles dropped no file")
	}
	if _, err := PruneFiles(fx.ctx, fx.tbl, files, fx.where(0, fx.absent(0)), Options{Keep: []bool{true}}); err == nil {
		t.Fatalf("PruneFiles of %d files with 1 entry of Keep succeeded", files.Len())
	}
}
