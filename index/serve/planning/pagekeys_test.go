package planning

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// TestPagesAreKeyRanges: a plan's pages are ranges of path keys in order,
// so a range of one planner's pages, asked of another planner that cut the
// same plan into other pages, holds the same files; each range of a plan
// asked of the plan itself is its page as it is. Without the pages in key
// order a range names no page.
func TestPagesAreKeyRanges(t *testing.T) {
	cat := servetest.AddFilesTable(t, 40)
	plan := func(per int) *PlanResult {
		t.Helper()
		p := NewPlanner(func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
			tbl, err := cat.LoadTable(ctx, ident)
			return &Loaded{Table: tbl}, err
		}, PlannerOptions{TasksPerPage: per})
		res, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, rest.PlanTableScanRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := plan(7), plan(5)
	if len(a.Pages) != 6 || len(b.Pages) != 8 {
		t.Fatalf("40 files in %d pages of 7 and %d of 5, want 6 and 8", len(a.Pages), len(b.Pages))
	}
	paths := func(page rest.ScanTasks) []string {
		var out []string
		for _, task := range page.FileScanTasks {
			out = append(out, task.DataFile.FilePath)
		}
		return out
	}
	var last uint64
	for i, page := range a.Pages {
		for j, path := range paths(page) {
			if key := PathKey(path); (i > 0 || j > 0) && key <= last {
				t.Fatalf("page %d, file %d: key %x after %x, want the files in key order", i, j, key, last)
			} else {
				last = key
			}
		}
	}
	ranges := a.PageRanges()
	if len(ranges) != len(a.Pages) || ranges[0].Lo != 0 || ranges[len(ranges)-1].Hi != ^uint64(0) {
		t.Fatalf("ranges %x of %d pages, want one a page from 0 to the largest key", ranges, len(a.Pages))
	}
	var all []string
	for i, kr := range ranges {
		if i > 0 && kr.Lo != ranges[i-1].Hi+1 {
			t.Fatalf("range %d starts at %x after %x", i, kr.Lo, ranges[i-1].Hi)
		}
		if own := a.TasksIn(kr); !reflect.DeepEqual(own, a.Pages[i]) {
			t.Fatalf("range %d of the plan's own pages is not its page %d", i, i)
		}
		got := paths(b.TasksIn(kr))
		if !slices.Equal(got, paths(a.Pages[i])) {
			t.Fatalf("range %d of the plan in pages of 5: %q, want page %d of the plan in pages of 7, %q", i, got, i, paths(a.Pages[i]))
		}
		all = append(all, got...)
	}
	slices.Sort(all)
	if len(all) != 40 || len(slices.Compact(all)) != 40 {
		t.Fatalf("the ranges hold %d files, want each of the 40 once", len(all))
	}
}

// TestTasksInDeletes: tasks taken from parts of several pages keep their
// delete files, referenced by their place in the one page answered, each
// delete file once.
func TestTasksInDeletes(t *testing.T) {
	task := func(path string, refs ...int) rest.RESTFileScanTask {
		return rest.RESTFileScanTask{DataFile: &rest.RESTDataFile{RESTContentFile: rest.RESTContentFile{FilePath: path}}, DeleteFileReferences: refs}
	}
	del := func(path string) rest.RESTDeleteFile {
		return rest.RESTDeleteFile{RESTContentFile: rest.RESTContentFile{FilePath: path, Content: "position-deletes"}}
	}
	// Files named so that their keys fall on either side of the middle.
	var low, high []string
	for i := 0; len(low) < 2 || len(high) < 2; i++ {
		path := "s3://b/t/data/" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".parquet"
		if PathKey(path) < 1<<63 {
			low = append(low, path)
		} else {
			high = append(high, path)
		}
	}
	res := &PlanResult{Pages: []rest.ScanTasks{
		{FileScanTasks: []rest.RESTFileScanTask{task(low[0], 1), task(high[0], 0, 1)}, DeleteFiles: []rest.RESTDeleteFile{del("d0"), del("shared")}},
		{FileScanTasks: []rest.RESTFileScanTask{task(high[1], 0), task(low[1])}, DeleteFiles: []rest.RESTDeleteFile{del("shared")}},
	}}
	got := res.TasksIn(KeyRange{Lo: 1 << 63, Hi: ^uint64(0)})
	if len(got.FileScanTasks) != 2 || got.FileScanTasks[0].DataFile.FilePath != high[0] || got.FileScanTasks[1].DataFile.FilePath != high[1] {
		t.Fatalf("the upper half: %+v, want %s and %s", got.FileScanTasks, high[0], high[1])
	}
	deletes := func(task rest.RESTFileScanTask) []string {
		var out []string
		for _, ref := range task.DeleteFileReferences {
			out = append(out, got.DeleteFiles[ref].FilePath)
		}
		return out
	}
	if d := deletes(got.FileScanTasks[0]); !slices.Equal(d, []string{"d0", "shared"}) {
		t.Errorf("the first task's deletes: %q, want d0 and shared", d)
	}
	if d := deletes(got.FileScanTasks[1]); !slices.Equal(d, []string{"shared"}) {
		t.Errorf("the second task's deletes: %q, want shared", d)
	}
	if len(got.DeleteFiles) != 2 {
		t.Errorf("%d delete files answered, want d0 and shared once each", len(got.DeleteFiles))
	}
	if refs := res.Pages[0].FileScanTasks[1].DeleteFileReferences; !slices.Equal(refs, []int{0, 1}) {
		t.Errorf("the plan's own task was changed: references %v", refs)
	}
}

// TestTasksInLooksAtItsPagesAlone: a range is answered from the pages
// whose keys (as the planner recorded them) meet it, without hashing the
// paths of the others: the ranges of a plan of a million files in 1,000
// pages hashed a billion paths when each range looked into every page.
// Here the recorded keys of page 1 say it lies past its file's key: a
// range of that key alone does not look into it.
func TestTasksInLooksAtItsPagesAlone(t *testing.T) {
	task := func(path string) rest.RESTFileScanTask {
		return rest.RESTFileScanTask{DataFile: &rest.RESTDataFile{RESTContentFile: rest.RESTContentFile{FilePath: path}}}
	}
	a, b := "s3://b/t/data/a.parquet", "s3://b/t/data/b.parquet"
	ka, kb := PathKey(a), PathKey(b)
	res := &PlanResult{
		Pages: []rest.ScanTasks{{FileScanTasks: []rest.RESTFileScanTask{task(a)}}, {FileScanTasks: []rest.RESTFileScanTask{task(b)}}},
		spans: []KeyRange{{ka, ka}, {kb + 1, kb + 1}},
	}
	if got := res.TasksIn(KeyRange{kb, kb}); len(got.FileScanTasks) != 0 {
		t.Fatalf("b's key alone: %d tasks, want none: page 1's recorded keys are past it, and page 0's", len(got.FileScanTasks))
	}
	if got := res.TasksIn(KeyRange{ka, ka}); len(got.FileScanTasks) != 1 || got.FileScanTasks[0].DataFile.FilePath != a {
		t.Fatalf("a's key alone: %d tasks, want a's", len(got.FileScanTasks))
	}
}
