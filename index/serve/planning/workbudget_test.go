package planning

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// TestWorkBudget: a reservation waits while the reserved sum would pass
// the budget and fails as busy after the budget's wait; one larger than
// the budget takes three quarters of it, leaving a quarter to the others;
// a caller's cancelled context is its own error, not busy.
func TestWorkBudget(t *testing.T) {
	ctx := context.Background()
	w := newWorkBudget(100, 20*time.Millisecond)
	first, err := w.reserve(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.reserve(ctx, 25)
	if err != nil {
		t.Fatalf("25 beside 60 of 100: %v", err)
	}
	var busy *BusyError
	if _, err := w.reserve(ctx, 20); !errors.As(err, &busy) || busy.Wanted != 20 || busy.Budget != 100 || busy.Waited == 0 {
		t.Fatalf("20 of 100 beside 85 reserved: %v, want a BusyError after waiting", err)
	}
	small, err := w.reserve(ctx, 15)
	if err != nil {
		t.Fatalf("15 beside 85 of 100: %v", err)
	}
	first()
	first() // releasing twice gives back once
	second()
	small()
	if got := w.reserved.Load(); got != 0 {
		t.Fatalf("%d bytes reserved after every release, want 0", got)
	}
	all, err := w.reserve(ctx, 1<<40)
	if err != nil || w.reserved.Load() != 75 {
		t.Fatalf("a reservation beyond the budget: %v, %d reserved; want 75, three quarters", err, w.reserved.Load())
	}
	beside, err := w.reserve(ctx, 25)
	if err != nil {
		t.Fatalf("a quarter beside a reservation beyond the budget: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.reserve(cancelled, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled caller: %v, want context.Canceled", err)
	}
	beside()
	all()
	if release, err := newWorkBudget(0, 0).reserve(ctx, 1<<40); err != nil {
		t.Fatalf("no budget: %v", err)
	} else {
		release()
	}
}

// TestWorkShare: a caller holding reservations cannot reserve past its
// share (refused at once, not queued), while another caller can; a caller
// holding nothing may reserve beyond its share, as a large plan does.
func TestWorkShare(t *testing.T) {
	w := newWorkBudget(1000, time.Minute)
	a, b := WithShare(context.Background(), NewShare(100)), WithShare(context.Background(), NewShare(100))
	large, err := w.reserve(a, 400)
	if err != nil {
		t.Fatalf("a caller's one reservation beyond its share: %v", err)
	}
	var busy *BusyError
	if _, err := w.reserve(a, 10); !errors.As(err, &busy) || busy.Share != 100 || busy.Waited != 0 {
		t.Fatalf("a second reservation of a caller past its share: %v, want a BusyError naming the share, at once", err)
	}
	other, err := w.reserve(b, 100)
	if err != nil {
		t.Fatalf("another caller within its share: %v", err)
	}
	large()
	small, err := w.reserve(a, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.reserve(a, 60); !errors.As(err, &busy) {
		t.Fatalf("60 beside 60 of a share of 100: %v, want a BusyError", err)
	}
	small()
	other()
	if got := shareOf(a).Held() + shareOf(b).Held(); got != 0 || w.reserved.Load() != 0 {
		t.Fatalf("%d held by the shares, %d reserved after every release, want 0", got, w.reserved.Load())
	}
}

// TestHoldGivenBackWhileWaiting: a plan's reservation that must wait gives
// its request's hold back while it waits and takes both together, so a
// request never waits for room while holding some; the hold is the
// request's again once the plan has room, and is counted until released.
func TestHoldGivenBackWhileWaiting(t *testing.T) {
	w := newWorkBudget(1000, time.Minute)
	ctx, hold, err := w.hold(context.Background(), 150)
	if err != nil {
		t.Fatal(err)
	}
	var others []func()
	for range 4 {
		other, err := w.reserve(context.Background(), 200)
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, other)
	}
	got := make(chan func())
	go func() {
		release, err := w.reserve(ctx, 100) // 150 + 800 + 100 > 1000: waits
		if err != nil {
			t.Error(err)
		}
		got <- release
	}()
	deadline := time.Now().Add(10 * time.Second)
	for w.reserved.Load() != 800 { // the hold given back while the plan waits
		if time.Now().After(deadline) {
			t.Fatalf("%d reserved while the plan waits, want 800 (its request's hold given back)", w.reserved.Load())
		}
		time.Sleep(time.Millisecond)
	}
	others[0]()
	release := <-got
	if w.reserved.Load() != 850 || hold.Bytes() != 150 {
		t.Fatalf("the plan with room: %d reserved, the hold has %d; want 850 and 150", w.reserved.Load(), hold.Bytes())
	}
	release()
	for _, other := range others[1:] {
		other()
	}
	hold.Shrink(10)
	if w.reserved.Load() != 10 {
		t.Fatalf("the hold shrunk to 10: %d reserved", w.reserved.Load())
	}
	hold.Release()
	if w.reserved.Load() != 0 {
		t.Fatalf("%d reserved after every release, want 0", w.reserved.Load())
	}
}

// TestShareCountsARequestsReservationsAsOne: the reservations one request
// makes with its hold's context (a load answer read a step at a time)
// pass its caller's share as one reservation would, when the caller holds
// nothing else; another request of the caller meanwhile is refused.
// Without it, the second step of a long answer was refused as a second
// reservation past the share.
func TestShareCountsARequestsReservationsAsOne(t *testing.T) {
	w := newWorkBudget(1000, time.Minute)
	caller := WithShare(context.Background(), NewShare(100))
	ctx, hold, err := w.hold(caller, 0)
	if err != nil {
		t.Fatal(err)
	}
	var releases []func()
	for step := range 3 {
		release, err := w.reserve(ctx, 80)
		if err != nil {
			t.Fatalf("step %d of one request's answer (80 bytes each, share 100): %v", step, err)
		}
		releases = append(releases, release)
	}
	var busy *BusyError
	if _, err := w.reserve(caller, 10); !errors.As(err, &busy) || busy.Share != 100 {
		t.Fatalf("another request of the caller beside 240 bytes: %v, want a BusyError naming the share", err)
	}
	for _, release := range releases {
		release()
	}
	hold.Release()
	if w.reserved.Load() != 0 || shareOf(caller).Held() != 0 || hold.others.Load() != 0 {
		t.Fatalf("after every release: %d reserved, %d held by the share, %d by the request", w.reserved.Load(), shareOf(caller).Held(), hold.others.Load())
	}
}

// TestLargeOneAtATime: one request at a time may hold or wait for more
// than a quarter of the budget, by its hold, its reservations or both; a
// second request that would is refused at once (Large), not queued, while
// small reservations are still taken. The gate is the request's until it
// holds a quarter or less again: its reservations given back, its hold
// shrunk, or a wait that failed.
func TestLargeOneAtATime(t *testing.T) {
	bg := context.Background()
	w := newWorkBudget(1000, 20*time.Millisecond)
	a, hold, err := w.hold(bg, 100)
	if err != nil {
		t.Fatal(err)
	}
	first, err := w.reserve(a, 200) // 300 held by the request: large
	if err != nil {
		t.Fatal(err)
	}
	var busy *BusyError
	if _, err := w.reserve(bg, 300); !errors.As(err, &busy) || !busy.Large || busy.Waited != 0 {
		t.Fatalf("a second large reservation: %v, want a BusyError (Large) at once", err)
	}
	if _, _, err := w.hold(bg, 300); !errors.As(err, &busy) || !busy.Large {
		t.Fatalf("a second large hold: %v, want a BusyError (Large)", err)
	}
	small, err := w.reserve(bg, 200)
	if err != nil {
		t.Fatalf("a small reservation beside a large one: %v", err)
	}
	more, err := w.reserve(a, 50)
	if err != nil {
		t.Fatalf("the large request's next reservation: %v", err)
	}
	first()
	if _, err := w.reserve(bg, 300); !errors.As(err, &busy) || !busy.Large {
		t.Fatalf("a large reservation while the request holds 150 with the gate: %v, want Large", err)
	}
	more()
	other, err := w.reserve(bg, 300)
	if err != nil {
		t.Fatalf("a large reservation once the first request holds 100: %v", err)
	}
	other()
	small()
	hold.Release()

	_, grown, err := w.hold(bg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := grown.Grow(bg, 400); err != nil {
		t.Fatal(err)
	}
	if _, err := w.reserve(bg, 300); !errors.As(err, &busy) || !busy.Large {
		t.Fatalf("a large reservation beside a hold grown to 400: %v, want Large", err)
	}
	grown.Shrink(100)
	if other, err := w.reserve(bg, 300); err != nil {
		t.Fatalf("a large reservation beside a hold shrunk to 100: %v", err)
	} else {
		other()
	}
	grown.Release()

	var smalls []func()
	for range 4 {
		r, err := w.reserve(bg, 200)
		if err != nil {
			t.Fatal(err)
		}
		smalls = append(smalls, r)
	}
	if _, err := w.reserve(bg, 300); !errors.As(err, &busy) || busy.Large || busy.Waited == 0 {
		t.Fatalf("a large reservation beside 800 of 1000: %v, want a BusyError after waiting", err)
	}
	for _, r := range smalls {
		r()
	}
	if last, err := w.reserve(bg, 300); err != nil {
		t.Fatalf("a large reservation after one that waited in vain: %v", err)
	} else {
		last()
	}
	if w.reserved.Load() != 0 || len(w.large) != 0 {
		t.Fatalf("after every release: %d reserved, the gate %d", w.reserved.Load(), len(w.large))
	}
}

// TestLookupsTakeAnEighth: a warm lookup works within an eighth of the
// work budget (lookup.Options.MaxWorkBytes), so that it never takes the
// budget's large gate: with the gate held, a lookup is still planned.
// Unbounded, a lookup of 4,000 files with 1 MiB of work budget reserved
// 361 KB, more than a quarter, and was refused while another large
// reservation was held (at 1,000,000 files, 18 MiB of the 64 MiB of a
// 256 MiB budget: 408 refusals of 16 clients in 30 s).
func TestLookupsTakeAnEighth(t *testing.T) {
	p := filesPlanner(t, 4000, PlannerOptions{MemoryBudget: 4 << 20, MaxWorkWait: time.Second})
	ident := table.Identifier{"db", "events"}
	plan := func(v int) (*PlanResult, error) {
		return p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + strconv.Itoa(v) + `}`)})
	}
	if res, err := plan(1); err != nil || !res.FastPath {
		t.Fatalf("the first plan: %v (fast path %v)", err, res != nil && res.FastPath)
	}
	budget := p.Stats().WorkBudget
	release, err := p.ReserveWork(context.Background(), budget/2) // large: the gate is taken
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for v := 3; v < 13; v += 2 {
		res, err := plan(v)
		if err != nil || !res.FastPath || res.Cached {
			t.Fatalf("a warm lookup beside a large reservation: %v (fast path %v)", err, res != nil && res.FastPath)
		}
	}
}

// TestAppendExtendsBeside: the base of a version that only added a
// manifest (an append) extends the last one, reserving what it decodes:
// it is made beside a request holding the large gate, where making it
// anew (its files' whole reservation, more than a quarter of the work
// budget) waits for the gate and is refused.
func TestAppendExtendsBeside(t *testing.T) {
	cat := servetest.AddFilesTable(t, 4000)
	p := NewPlanner(func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &Loaded{Table: tbl}, err
	}, PlannerOptions{MemoryBudget: 4 << 20, MaxWorkWait: 200 * time.Millisecond})
	ctx, ident := context.Background(), table.Identifier{"db", "events"}
	plan := func(v int) (*PlanResult, error) {
		return p.Plan(ctx, ident, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + strconv.Itoa(v) + `}`)})
	}
	if res, err := plan(2); err != nil || !res.FastPath {
		t.Fatalf("the first plan: %v (fast path %v)", err, res != nil && res.FastPath)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tbl = catalogtest.AppendIDs(t, tbl, 1, 3)
	release, err := p.ReserveWork(ctx, p.Stats().WorkBudget/2) // large: the gate is taken
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	res, err := plan(3)
	if err != nil || !res.FastPath || res.WarmMiss != string(warmBaseMade) {
		t.Fatalf("the first plan after an append beside the large gate: %v (fast path %v)", err, res != nil && res.FastPath)
	}
	if b, _ := p.bases.get(baseKey(tbl, "", tbl.CurrentSnapshot().SnapshotID, tbl.Schema(), true, iceberg.AlwaysTrue{}.String())); b == nil || b.set.len() != 4001 {
		t.Fatal("the base after the append is not kept, or not of 4,001 files")
	}
}

// TestAnswerWithinWorkBudget: the answer of a plan (its candidates'
// tasks, their pages) is made within the work budget: a lookup that fits
// beside what others hold, of a value all 4,000 files hold, waits for room
// for its answer and is refused when none comes; with room it is planned,
// and gives it all back.
func TestAnswerWithinWorkBudget(t *testing.T) {
	p := filesPlanner(t, 4000, PlannerOptions{MemoryBudget: 64 << 20, MaxWorkWait: 100 * time.Millisecond})
	ident := table.Identifier{"db", "events"}
	plan := func(v int) (*PlanResult, error) {
		return p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + strconv.Itoa(v) + `}`)})
	}
	if _, err := plan(1); err != nil { // the base
		t.Fatal(err)
	}
	budget := p.Stats().WorkBudget
	var holds []func()
	for _, n := range []int64{budget, budget/4 - 2<<20} { // all but 2 MiB
		release, err := p.ReserveWork(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, release)
	}
	if _, err := plan(0); !isBusy(err) {
		t.Fatalf("a plan of 4,000 files with 2 MiB of room: %v, want busy", err)
	}
	for _, release := range holds {
		release()
	}
	res, err := plan(0)
	if err != nil || res.FilesPlanned != 4000 {
		t.Fatalf("with room: %v, %d files planned", err, res.FilesPlanned)
	}
	if st := p.Stats(); st.WorkReserved != 0 {
		t.Fatalf("%d bytes reserved after the plan", st.WorkReserved)
	}
}

// TestSamePlansShareTheirMaking: requests for the same plan at once make
// it once (iceberg-go fetches a plan's tasks at once; when the server's
// store had let the plan go, each task made it again, within one caller's
// share of the work budget). Here they all wait for room in the work
// budget, then one plan is made for them all.
func TestSamePlansShareTheirMaking(t *testing.T) {
	p := filesPlanner(t, 40, PlannerOptions{MemoryBudget: 64 << 20, MaxWorkWait: time.Minute})
	budget := p.Stats().WorkBudget
	var holds []func()
	for _, n := range []int64{budget, budget / 4} {
		release, err := p.ReserveWork(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, release)
	}
	const requests = 6
	errs := make(chan error, requests)
	for range requests {
		go func() {
			_, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":7}`)})
			errs <- err
		}()
	}
	time.Sleep(200 * time.Millisecond) // the requests reach the budget (the test holds either way)
	for _, release := range holds {
		release()
	}
	for range requests {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := p.plansMade.Load(); n != 1 {
		t.Fatalf("%d requests for one plan made it %d times, want once", requests, n)
	}
}

// filesPlanner is a planner of db.events, a table of files data files
// (servetest.AddFilesTable).
func filesPlanner(t *testing.T, files int, o PlannerOptions) *Planner {
	cat := servetest.AddFilesTable(t, files)
	return NewPlanner(func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &Loaded{Table: tbl}, err
	}, o)
}
