package planning

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/semaphore"
)

// workBudget bounds the memory the plans being computed work in, the part
// of the memory budget that no cache holds: each plan reserves an estimate
// of what it will hold while it runs (a lookup's checks and probes,
// iceberg-go's decoding of the manifests a cold plan reads) and waits,
// first come first served, while the reserved sum would pass the budget. A
// plan estimated beyond the whole budget runs alone. Without it, 16 warm
// lookups at once on a table of 100,000 files held 16 lookups' checks
// (16 MB each) beside the caches' 256 MiB.
type workBudget struct {
	size     int64 // 0: no bound
	sem      *semaphore.Weighted
	wait     time.Duration
	reserved atomic.Int64
}

// DefaultMaxWorkWait is how long a plan waits for room in the work budget
// before it is refused as busy.
const DefaultMaxWorkWait = 10 * time.Second

func newWorkBudget(size int64, wait time.Duration) *workBudget {
	if wait <= 0 {
		wait = DefaultMaxWorkWait
	}
	w := &workBudget{size: max(size, 0), wait: wait}
	if w.size > 0 {
		w.sem = semaphore.NewWeighted(w.size)
	}
	return w
}

// BusyError is a plan that waited longer than PlannerOptions.MaxWorkWait
// for room in the memory plans work in: the server answers it 429 with
// Retry-After.
type BusyError struct {
	Wanted, Budget int64
	Waited         time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("a plan needing %d MiB of the %d MiB plans work in waited %s for room; retry later",
		(e.Wanted+1<<20-1)>>20, e.Budget>>20, e.Waited.Round(time.Millisecond))
}

// reserve waits until n bytes (at most the whole budget) are free and
// reserves them; release gives them back. It fails when ctx ends or the
// wait passes the budget's limit (*BusyError).
func (w *workBudget) reserve(ctx context.Context, n int64) (release func(), err error) {
	if w.size == 0 {
		return func() {}, nil
	}
	n = min(max(n, 1), w.size)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, w.wait)
	defer cancel()
	if err := w.sem.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for planning memory: %w", ctx.Err())
		}
		return nil, &BusyError{Wanted: n, Budget: w.size, Waited: time.Since(start)}
	}
	w.reserved.Add(n)
	return sync.OnceFunc(func() {
		w.reserved.Add(-n)
		w.sem.Release(n)
	}), nil
}

// coldBytesPerFile estimates what iceberg-go's planning of a snapshot
// allocates per live data file (manifest entries decoded, their statistics
// maps, the tasks): 3.2 KB measured for a table of one column, 4.2 KB with
// the index consulted (lookup.Plan), plus coldBytesPerColumn for each
// column's statistics.
const (
	coldBytesPerFile   = 4 << 10
	coldBytesPerColumn = 256
)

// coldWorkBytes estimates the memory a plan of snap that reads its
// manifests works in; a snapshot that does not count its files reserves
// the whole budget.
func coldWorkBytes(tbl *table.Table, snap *table.Snapshot) int64 {
	files, ok := summaryFiles(snap)
	if !ok {
		return 1 << 62 // clamped to the budget by reserve
	}
	return int64(files) * (coldBytesPerFile + coldBytesPerColumn*int64(len(tbl.Schema().Fields())))
}
