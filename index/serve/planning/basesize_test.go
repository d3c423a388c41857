package planning

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// liveHeap is the heap's live bytes after collections that also empty
// sync.Pools (lookup's scratch), so that only what is referenced counts.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heldBy is the live heap's bytes that drop lets go of.
func heldBy(drop func()) int64 {
	with := liveHeap()
	drop()
	return int64(with) - int64(liveHeap())
}

// checkCharged fails t unless what is charged at least what it holds and
// not more than twice that: the budget neither overflows nor wastes half
// its room.
func checkCharged(t *testing.T, what string, charged, held int64) {
	t.Helper()
	if charged < held || charged > 2*held {
		t.Fatalf("%s is charged %d bytes and holds %d: want held <= charged <= 2 x held", what, charged, held)
	}
}

// measureAloneEnv, set in a test process's environment, names the one test
// that process runs (see measureAlone).
const measureAloneEnv = "ICEBLOOM_MEASURE_ALONE"

// measureAlone makes a test that weighs the heap run in a process of its
// own, started from the test binary with only that test selected: the heap
// it measures then holds nothing that other (parallel) tests of the package
// allocated meanwhile. It reports true in that process, where the test goes
// on to measure; in the calling process it runs the child, fails the test
// with the child's output if the child failed, and reports false.
func measureAlone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(measureAloneEnv) == t.Name() {
		return true
	}
	if testing.Short() {
		t.Skip("makes a table of many files")
	}
	if raceEnabled {
		t.Skip("the race detector's allocations are not the ones the budget charges")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), measureAloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("measured in a process of its own:\n%s", out)
	if err != nil {
		t.Fatalf("the measuring process: %v", err)
	}
	return false
}

// measuredPlanner is a planner with room for everything over a table of
// files data files (db.events of servetest.AddFilesTable), after it planned each
// filter, for the tests that weigh what planning holds, each alone in its
// process (measureAlone, which also skips them in short mode and under the
// race detector, whose allocations are not the ones the budget charges and
// whose pools drop what they are given).
func measuredPlanner(t *testing.T, files int, filters ...string) (*Planner, *table.Table) {
	cat := servetest.AddFilesTable(t, files)
	ident := table.Identifier{"db", "events"}
	load := func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &Loaded{Table: tbl}, err
	}
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 1 << 30})
	for _, filter := range filters {
		res, err := p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: []byte(filter)})
		if err != nil || !res.FastPath {
			t.Fatalf("plan %s: %v (fast path %v)", filter, err, res != nil && res.FastPath)
		}
	}
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return p, tbl
}

// TestBaseSizeMeasured: the bytes a base plan is charged in the memory
// budget (its files, decoded statistics, the index's matches and the
// index's directories, which its memo keeps alive) are at least what it
// holds on the heap, measured by dropping it and the FooterCache, and not
// more than twice that: the budget neither overflows nor wastes half its
// room.
func TestBaseSizeMeasured(t *testing.T) {
	if !measureAlone(t) {
		return
	}
	const files = 4000
	var filters []string
	for v := range 3 { // the base, its statistics of id and the index's matches
		filters = append(filters, `{"type":"eq","term":"id","value":`+strconv.Itoa(2*v+1)+`}`)
	}
	p, _ := measuredPlanner(t, files, filters...)
	charged, n, _, _, _ := p.bases.stats()
	if n != 1 {
		t.Fatalf("%d base plans, want 1", n)
	}
	held := heldBy(func() {
		p.bases = newLRU[*base](1 << 30) // the base and the directories dropped
		p.footers = index.NewFooterCache(1)
	})
	runtime.KeepAlive(p)
	t.Logf("a base of %d files: charged %d bytes (%d a file), holds %d (%d a file)", files, charged, charged/files, held, held/files)
	checkCharged(t, fmt.Sprintf("a base of %d files", files), charged, held)
}

// TestLookupWorkBytesMeasured: what the fast path reserves for a lookup
// (lookup.WorkBytes) is at least what the lookup's scratch holds (the
// capacities of its checks, lists and probe slabs, which the lookup reports:
// counted, not weighed on a heap that other goroutines share), and not more
// than twice that. It runs alone in its process: the scratch comes from a
// pool, which a larger lookup of another test would have grown.
func TestLookupWorkBytesMeasured(t *testing.T) {
	if !measureAlone(t) {
		return
	}
	const files = 4000
	var filters []string
	for v := range 3 {
		filters = append(filters, `{"type":"in","term":"id","values":[`+strconv.Itoa(2*v+1)+`,`+strconv.Itoa(2*v+3)+`]}`)
	}
	_, tbl := measuredPlanner(t, files, filters...)
	filter := iceberg.IsIn(iceberg.Reference("id"), int64(1), int64(3))
	res, err := lookup.Plan(context.Background(), tbl, filter, lookup.Options{CaseSensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := iceberg.BindExpr(tbl.Schema(), filter, true)
	if err != nil {
		t.Fatal(err)
	}
	reserved := lookup.WorkBytes(files, []iceberg.BoundPredicate{bound.(iceberg.BoundPredicate)})
	held := res.ScratchBytes
	t.Logf("a lookup of 2 values in %d files: reserves %d bytes (%d a file), its scratch holds %d (%d a file)", files, reserved, reserved/files, held, held/files)
	if held == 0 || reserved < held || reserved > 2*held {
		t.Fatalf("a lookup of %d files reserves %d bytes and holds %d: want held <= reserved <= 2 x held", files, reserved, held)
	}
}

// TestResultSizeMeasured: the bytes a kept plan result is charged in the
// plan cache (its pages of REST FileScanTasks, their residuals, spans and
// names) are at least what it holds on the heap, measured by dropping the
// cache, and not more than twice that. The result is a lookup of a value
// every file holds, so its 4 pages hold all 4,000 files.
func TestResultSizeMeasured(t *testing.T) {
	if !measureAlone(t) {
		return
	}
	const files = 4000
	p, _ := measuredPlanner(t, files, `{"type":"eq","term":"id","value":0}`)
	charged, n, _, _, _ := p.results.stats()
	if n != 1 {
		t.Fatalf("%d results kept, want 1", n)
	}
	held := heldBy(func() { p.results = newLRU[*PlanResult](1 << 30) })
	runtime.KeepAlive(p)
	t.Logf("a result of %d files: charged %d bytes (%d a file), holds %d (%d a file)", files, charged, charged/files, held, held/files)
	checkCharged(t, fmt.Sprintf("a result of %d files", files), charged, held)
}
