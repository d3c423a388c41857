package maintenance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// The tests below use small durations but never assert that something
// happens within a time: they poll for conditions with a generous
// deadline. Lower bounds on waits (backoff) are asserted, which a loaded
// machine can only make longer.

// fakeSync is a sync function that counts its calls per table, the calls
// running at once, and can block (gate) or fail.
type fakeSync struct {
	// gate, when set, holds every call until it receives a value (or is
	// closed, or the call's context ends).
	gate chan struct{}
	// fail, when set, returns the error of the n-th call (from 1) for a
	// table.
	fail func(table string, n int) error

	mu          sync.Mutex
	calls       map[string]int
	times       map[string][]time.Time
	running     map[string]int
	maxPerTable int
	total       int // running now, all tables
	maxTotal    int
	canceled    int // calls whose context ended while held
}

func newFakeSync() *fakeSync {
	return &fakeSync{calls: map[string]int{}, times: map[string][]time.Time{}, running: map[string]int{}}
}

func (f *fakeSync) sync(ctx context.Context, ident table.Identifier) error {
	name := strings.Join(ident, ".")
	f.mu.Lock()
	f.calls[name]++
	n := f.calls[name]
	f.times[name] = append(f.times[name], time.Now())
	f.running[name]++
	f.maxPerTable = max(f.maxPerTable, f.running[name])
	f.total++
	f.maxTotal = max(f.maxTotal, f.total)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running[name]--
		f.total--
		f.mu.Unlock()
	}()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.mu.Lock()
			f.canceled++
			f.mu.Unlock()
			return ctx.Err()
		}
	}
	if f.fail != nil {
		return f.fail(name, n)
	}
	return nil
}

// release lets one held call return, failing the test if none takes it
// within a generous deadline.
func (f *fakeSync) release(t *testing.T) {
	t.Helper()
	select {
	case f.gate <- struct{}{}:
	case <-time.After(30 * time.Second):
		t.Fatal("no sync call to release")
	}
}

// get reads the fake's state under its lock.
func (f *fakeSync) get(read func(f *fakeSync) int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return read(f)
}

func (f *fakeSync) callsOf(name string) int {
	return f.get(func(f *fakeSync) int { return f.calls[name] })
}

// waitFor polls cond until it holds, failing the test after a deadline far
// beyond what the condition needs on an idle machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// idle reports whether s has nothing pending and nothing running.
func idle(s *maintenance.CommitSyncer) bool {
	st := s.Stats()
	return st.Pending == 0 && st.Running == 0
}

// newSyncer returns a syncer over f, closed when the test ends.
func newSyncer(t *testing.T, f *fakeSync, o maintenance.CommitSyncOptions) *maintenance.CommitSyncer {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := maintenance.NewCommitSyncer(f.sync, o)
	t.Cleanup(func() {
		if f.gate != nil {
			defer func() { _ = recover() }() // a test closed the gate already
			close(f.gate)
		}
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

var tblA = table.Identifier{"db", "a"}

// TestCommitSyncDebounce: a burst of 50 commits to a table, 1ms apart,
// causes at most 1 + G syncs, G being the gaps of Quiet or more between
// two of its commits (only after such a gap can a sync start within the
// burst; one follows it): one sync, unless the machine stalls the burst.
// Without the debounce a sync would start after the first commit, and
// another after each sync ends.
func TestCommitSyncDebounce(t *testing.T) {
	f := newFakeSync()
	const quiet = 200 * time.Millisecond
	s := newSyncer(t, f, maintenance.CommitSyncOptions{Quiet: quiet, MaxDelay: time.Hour, Workers: 4})
	bound := 1
	last := time.Now()
	for range 50 {
		if now := time.Now(); now.Sub(last) >= quiet {
			bound++
		}
		s.Committed(tblA)
		last = time.Now()
		time.Sleep(time.Millisecond)
	}
	waitFor(t, "the burst's sync", func() bool { return f.callsOf("db.a") > 0 && idle(s) })
	calls := f.callsOf("db.a")
	t.Logf("50 commits: %d syncs (bound %d)", calls, bound)
	if calls > bound {
		t.Errorf("50 commits caused %d syncs, want at most %d", calls, bound)
	}
	st := s.Stats()
	if st.Scheduled != int64(calls) || st.Succeeded != int64(calls) || st.Coalesced != 50-st.Scheduled {
		t.Errorf("stats %+v after %d syncs of 50 commits", st, calls)
	}
}

// TestCommitSyncMaxDelay: a steady stream of commits, never quiet for
// Quiet (an hour), gets its table synced within the stream, twice: the
// max delay counts from the first commit not yet synced. Without it the
// stream would starve the sync.
func TestCommitSyncMaxDelay(t *testing.T) {
	f := newFakeSync()
	s := newSyncer(t, f, maintenance.CommitSyncOptions{Quiet: time.Hour, MaxDelay: 100 * time.Millisecond})
	deadline := time.Now().Add(30 * time.Second)
	for f.callsOf("db.a") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("a steady stream of commits: %d syncs in 30s, want 2 (max delay 100ms)", f.callsOf("db.a"))
		}
		s.Committed(tblA)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCommitSyncOnePerTable: commits during a table's sync start no second
// sync of it at once, and schedule exactly one more after it.
func TestCommitSyncOnePerTable(t *testing.T) {
	f := newFakeSync()
	f.gate = make(chan struct{})
	s := newSyncer(t, f, maintenance.CommitSyncOptions{Quiet: time.Millisecond, Workers: 4})
	s.Committed(tblA)
	waitFor(t, "the first sync", func() bool { return f.callsOf("db.a") == 1 })
	for range 20 {
		s.Committed(tblA)
	}
	// Past the quiet period many times over: a syncer starting a sync per
	// due table would have started the second one by now. (A negative
	// check: a loaded machine can only hide a bug, not fail this.)
	time.Sleep(100 * time.Millisecond)
	if n := f.callsOf("db.a"); n != 1 {
		t.Fatalf("%d syncs started while the first runs, want 1", n)
	}
	if st := s.Stats(); st.Scheduled != 2 || st.Coalesced != 19 {
		t.Errorf("stats %+v: want the commits during the sync to schedule one more (Scheduled 2, Coalesced 19)", st)
	}
	f.release(t)
	waitFor(t, "the second sync", func() bool { return f.callsOf("db.a") == 2 })
	f.release(t)
	waitFor(t, "idle", func() bool { return idle(s) })
	if n, most := f.callsOf("db.a"), f.get(func(f *fakeSync) int { return f.maxPerTable }); n != 2 || most != 1 {
		t.Errorf("%d syncs, at most %d at once, want 2, one at a time", n, most)
	}
}

// TestCommitSyncWorkers: with six tables due and two workers, two syncs
// run and four wait; each release starts the next, never a third at once.
func TestCommitSyncWorkers(t *testing.T) {
	f := newFakeSync()
	f.gate = make(chan struct{})
	s := newSyncer(t, f, maintenance.CommitSyncOptions{Quiet: time.Millisecond, Workers: 2})
	for i := range 6 {
		s.Committed(table.Identifier{"db", fmt.Sprint("t", i)})
	}
	// The syncer counts a sync as running before its goroutine enters the
	// sync function, so wait for both to say two.
	waitFor(t, "two running, four queued", func() bool {
		st := s.Stats()
		return st.Running == 2 && st.Queued == 4 && f.get(func(f *fakeSync) int { return f.total }) == 2
	})
	time.Sleep(50 * time.Millisecond) // a negative check: a third would have started by now
	if running := f.get(func(f *fakeSync) int { return f.total }); running != 2 {
		t.Fatalf("%d syncs running, want 2", running)
	}
	for range 6 {
		f.release(t)
	}
	waitFor(t, "idle", func() bool { return idle(s) })
	for i := range 6 {
		if n := f.callsOf(fmt.Sprint("db.t", i)); n != 1 {
			t.Errorf("db.t%d: %d syncs, want 1", i, n)
		}
	}
	if most := f.get(func(f *fakeSync) int { return f.maxTotal }); most != 2 {
		t.Errorf("%d syncs ran at once, want 2 (Workers)", most)
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestCommitSyncRetry: a sync failing three times is retried after
// backoffs that double from RetryBase (each at least half its nominal
// value, the jitter's floor), capped at RetryMax, each failure logged and
// counted; one failing every time is given up after MaxAttempts, and the
// table's next commit starts a new round of attempts.
func TestCommitSyncRetry(t *testing.T) {
	const base, maxWait = 20 * time.Millisecond, 50 * time.Millisecond
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	o := maintenance.CommitSyncOptions{Quiet: time.Millisecond, RetryBase: base, RetryMax: maxWait, MaxAttempts: 5, Logger: logger}

	t.Run("recovers", func(t *testing.T) {
		f := newFakeSync()
		f.fail = func(_ string, n int) error {
			if n <= 3 {
				return fmt.Errorf("catalog unavailable (attempt %d)", n)
			}
			return nil
		}
		s := newSyncer(t, f, o)
		s.Committed(tblA)
		waitFor(t, "the sync to succeed", func() bool { return s.Stats().Succeeded == 1 && idle(s) })
		st := s.Stats()
		if st.Started != 4 || st.Failed != 3 || st.Retried != 3 || st.GaveUp != 0 {
			t.Errorf("stats %+v: want 4 started, 3 failed, 3 retried", st)
		}
		var times []time.Time
		f.get(func(f *fakeSync) int { times = f.times["db.a"]; return 0 })
		for i := 1; i < len(times); i++ {
			nominal := min(base<<(i-1), maxWait)
			if gap := times[i].Sub(times[i-1]); gap < nominal/2 {
				t.Errorf("attempt %d came %s after the one before, want at least %s (backoff %s, jitter's floor)", i+1, gap, nominal/2, nominal)
			}
		}
		// A failure is logged after the syncer lets go of its lock, so the
		// last line may come after the stats.
		waitFor(t, "the third failure to be logged", func() bool { return strings.Contains(logs.String(), "attempt=3 max_attempts=5") })
		for i := 1; i <= 3; i++ {
			want := fmt.Sprintf("attempt=%d max_attempts=5", i)
			if !strings.Contains(logs.String(), want) {
				t.Errorf("no log line of failure %d (%q) in:\n%s", i, want, logs.String())
			}
		}
		if got := strings.Count(logs.String(), "table=db.a"); got != 3 {
			t.Errorf("%d log lines name the table, want 3 (one per failure)", got)
		}
	})

	t.Run("gives up", func(t *testing.T) {
		f := newFakeSync()
		f.fail = func(string, int) error { return errors.New("forbidden") }
		oo := o
		oo.MaxAttempts = 3
		s := newSyncer(t, f, oo)
		s.Committed(tblA)
		waitFor(t, "the sync to be given up", func() bool { return s.Stats().GaveUp == 1 && idle(s) })
		if st := s.Stats(); st.Started != 3 || st.Failed != 3 || st.Retried != 2 {
			t.Errorf("stats %+v: want 3 attempts, 2 retries", st)
		}
		// Logged after the stats count it (see recovers).
		waitFor(t, "the give-up to be logged", func() bool { return strings.Contains(logs.String(), "giving up") })
		s.Committed(tblA)
		waitFor(t, "the second round to be given up", func() bool { return s.Stats().GaveUp == 2 && idle(s) })
		if n := f.callsOf("db.a"); n != 6 {
			t.Errorf("%d attempts over two rounds, want 6", n)
		}
	})
}

// TestCommitSyncClose: Close abandons the syncs not started, waits for the
// running one, and refuses commits afterwards; a Close whose context ends
// first cancels the running syncs and says so.
func TestCommitSyncClose(t *testing.T) {
	t.Run("waits", func(t *testing.T) {
		f := newFakeSync()
		f.gate = make(chan struct{})
		var returned atomic.Bool
		sync := func(ctx context.Context, ident table.Identifier) error {
			err := f.sync(ctx, ident)
			returned.Store(true)
			return err
		}
		s := maintenance.NewCommitSyncer(sync, maintenance.CommitSyncOptions{Quiet: time.Millisecond, Workers: 1, Logger: slog.New(slog.DiscardHandler)})
		s.Committed(tblA)
		waitFor(t, "db.a's sync", func() bool { return f.callsOf("db.a") == 1 })
		s.Committed(table.Identifier{"db", "b"})
		waitFor(t, "db.b queued", func() bool { return s.Stats().Queued == 1 })

		closed := make(chan error, 1)
		var returnedAtClose atomic.Bool
		go func() {
			err := s.Close(context.Background())
			returnedAtClose.Store(returned.Load())
			closed <- err
		}()
		waitFor(t, "Close to abandon db.b", func() bool { return s.Stats().Abandoned == 1 })
		s.Committed(tblA) // refused: no sync after this one
		f.release(t)
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !returnedAtClose.Load() {
			t.Errorf("Close returned before the running sync did")
		}
		if a, b := f.callsOf("db.a"), f.callsOf("db.b"); a != 1 || b != 0 {
			t.Errorf("syncs db.a %d, db.b %d: want 1 and 0 (abandoned)", a, b)
		}
		if st := s.Stats(); st.Pending != 0 || st.Scheduled != 2 {
			t.Errorf("stats %+v after Close: want nothing pending, the commit after Close not scheduled", st)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		f := newFakeSync()
		f.gate = make(chan struct{}) // never released: only cancellation ends the sync
		s := maintenance.NewCommitSyncer(f.sync, maintenance.CommitSyncOptions{Quiet: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		s.Committed(tblA)
		waitFor(t, "db.a's sync", func() bool { return f.callsOf("db.a") == 1 })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := s.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 syncs still running") {
			t.Fatalf("Close past its deadline: %v, want the running sync named and context.DeadlineExceeded", err)
		}
		waitFor(t, "the running sync to be canceled", func() bool {
			return f.get(func(f *fakeSync) int { return f.canceled }) == 1 && idle(s)
		})
		if st := s.Stats(); st.Failed != 1 || st.Retried != 0 {
			t.Errorf("stats %+v: want the canceled attempt failed, not retried", st)
		}
	})
}

// TestCommitSyncCommittedBounded: Committed keeps at most MaxPending tables
// and drops commits to others beyond them; a commit to a pending table, or
// one dropped, allocates nothing.
func TestCommitSyncCommittedBounded(t *testing.T) {
	f := newFakeSync()
	var logs syncBuffer
	s := newSyncer(t, f, maintenance.CommitSyncOptions{Quiet: time.Hour, MaxDelay: time.Hour, MaxPending: 3,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range 5 {
		s.Committed(table.Identifier{"db", fmt.Sprint("t", i)})
	}
	if st := s.Stats(); st.Pending != 3 || st.Scheduled != 3 || st.Dropped != 2 {
		t.Fatalf("stats %+v: want 3 pending, 2 dropped", st)
	}
	if got := strings.Count(logs.String(), "too many tables pending"); got != 1 {
		t.Errorf("%d log lines of drops, want 1 (a line a minute at most):\n%s", got, logs.String())
	}
	pending, other := table.Identifier{"db", "t1"}, table.Identifier{"db", "t9"}
	if n := testing.AllocsPerRun(100, func() { s.Committed(pending) }); n != 0 {
		t.Errorf("a commit to a pending table allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Committed(other) }); n != 0 {
		t.Errorf("a dropped commit allocates %v times, want 0", n)
	}
	if st := s.Stats(); st.Pending != 3 || st.Scheduled != 3 {
		t.Errorf("stats %+v: want the same 3 tables pending", st)
	}

	// Tables are told apart by their identifiers' parts, not by the parts
	// joined.
	s2 := newSyncer(t, f, maintenance.CommitSyncOptions{Quiet: time.Hour, MaxDelay: time.Hour})
	s2.Committed(table.Identifier{"db", "a.b"})
	s2.Committed(table.Identifier{"db.a", "b"})
	if st := s2.Stats(); st.Pending != 2 {
		t.Errorf("db.a.b in namespace db and in db.a: %d tables pending, want 2", st.Pending)
	}
}

// TestCommitSyncIndexesNewFiles: the syncer running the real indexer.Sync
// on a SQLite catalog table: after appends, and after an overwrite (as a
// compaction's rewrite commits), reported by Committed, the table's live
// files become covered.
func TestCommitSyncIndexesNewFiles(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, iceberg.Properties{indexer.PropBloomEnabledPrefix + "id": "true"})
	ident := table.Identifier{"db", "events"}
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2, 3)
	if _, err := indexer.Build(bg, cat, ident, indexer.Options{}); err != nil {
		t.Fatal(err)
	}
	var syncErrs atomic.Int64
	s := maintenance.NewCommitSyncer(func(ctx context.Context, id table.Identifier) error {
		_, err := indexer.Sync(ctx, cat, id, indexer.Options{Parallel: 1})
		if err != nil {
			syncErrs.Add(1)
		}
		return err
	}, maintenance.CommitSyncOptions{Quiet: 20 * time.Millisecond, Workers: 1})
	t.Cleanup(func() {
		if err := s.Close(bg); err != nil {
			t.Error(err)
		}
	})
	load := func() *table.Table {
		tbl, err := cat.LoadTable(bg, ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	allCovered := func(want int) func() bool {
		return func() bool {
			c := covered(t, load())
			for _, ok := range c {
				if !ok {
					return false
				}
			}
			return len(c) == want
		}
	}

	tbl = catalogtest.AppendIDs(t, tbl, 4, 5)
	tbl = catalogtest.AppendIDs(t, tbl, 6)
	if allCovered(3)() {
		t.Fatal("the appended files are covered before any sync")
	}
	s.Committed(ident)
	s.Committed(ident)
	waitFor(t, "the appended files covered", allCovered(3))

	overwrite(t, tbl, 7, 8, 9)
	if allCovered(1)() {
		t.Fatal("the overwrite's file is covered before any sync")
	}
	s.Committed(ident)
	waitFor(t, "the overwrite's file covered", allCovered(1))
	if st := s.Stats(); st.Succeeded < 2 || syncErrs.Load() != 0 {
		t.Errorf("stats %+v, %d sync errors: want two syncs or more, none failed", st, syncErrs.Load())
	}
}

// BenchmarkCommitSyncCommitted measures Committed on the proxy's path: a
// commit to a table whose sync is pending already, from parallel requests.
func BenchmarkCommitSyncCommitted(b *testing.B) {
	s := maintenance.NewCommitSyncer(func(context.Context, table.Identifier) error { return nil },
		maintenance.CommitSyncOptions{Quiet: time.Hour, MaxDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	defer s.Close(context.Background())
	ident := table.Identifier{"db", "events"}
	s.Committed(ident)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Committed(ident)
		}
	})
}
