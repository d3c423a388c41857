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
// request estimated beyond three quarters of the budget runs in three
// quarters of it (large, below). Without it, 16 warm
// lookups at once on a table of 100,000 files held 16 lookups' checks
// (16 MB each) beside the caches' 256 MiB.
//
// One request at a time may hold, or wait for, more than a quarter of the
// budget (large); another that would is refused at once (*BusyError,
// Large), not queued. Waiting is first come first served, so a large
// reservation at the head of the queue keeps every small one behind it
// waiting until the budget has room for it: with many large ones waiting,
// the small ones waited for each of them in turn, holding their plan
// slots meanwhile. And large reservations take turns with the others
// (awaitTurn): one at a time but back to back, they still kept the budget
// to themselves. bench --serve-abuse with 128 hostile callers, 10 s: plans
// of every file of 4,000, each reserving the whole budget, and 10,000-deep
// filters (a 10 MiB hold for their 650 KB body, before bodies were held a
// step at a time) took a third of the slot time, and the ordinary plans
// spent 61 s of their 104 waiting for room behind them: 423 were planned;
// one large at a time, 370; with turns, 3,216.
//
// A large request holds at most three quarters of the budget, so that the
// small ones always have a quarter beside it. A plan estimated beyond the
// whole budget (a cold plan of every file of a table too large for it)
// used to take all of it and run alone: while it ran, every other request
// waited even for the small hold of its body, holding its plan slot
// (bench --serve-abuse with 128 hostile callers, taking turns: in 10 s,
// plans of every file held slots 60 s in all, 42 s of it waiting so, and
// deep filters 31 s, nearly all of it waiting so; 83 ordinary plans were
// planned). Such a plan was never within the budget; now it is accounted
// three quarters of it.
type workBudget struct {
	size     int64 // 0: no bound
	sem      *semaphore.Weighted
	wait     time.Duration
	reserved atomic.Int64
	// large is full while a request holds or waits for more than a
	// quarter of the budget; mu guards largeSince, when it took the gate
	// (its turn come), and turn, when the next may (awaitTurn).
	large            chan struct{}
	mu               sync.Mutex
	largeSince, turn time.Time
	// turnWaits counts the large reservations that waited for their turn.
	turnWaits atomic.Int64
}

// DefaultMaxWorkWait is how long a plan waits for room in the work budget
// before it is refused as busy.
const DefaultMaxWorkWait = 10 * time.Second

func newWorkBudget(size int64, wait time.Duration) *workBudget {
	if wait <= 0 {
		wait = DefaultMaxWorkWait
	}
	w := &workBudget{size: max(size, 0), wait: wait, large: make(chan struct{}, 1)}
	if w.size > 0 {
		w.sem = semaphore.NewWeighted(w.size)
	}
	return w
}

// BusyError is a plan that waited longer than PlannerOptions.MaxWorkWait
// for room in the memory plans work in, or whose caller already holds its
// share of it (Share, refused at once): the server answers it 429 with
// Retry-After.
type BusyError struct {
	Wanted, Budget int64
	Waited         time.Duration
	// Share is the caller's share the plan would have passed; 0 when it
	// waited for the budget itself.
	Share int64
	// Large: the plan would hold more than a quarter of the budget while
	// another request does (refused at once).
	Large bool
}

func (e *BusyError) Error() string {
	if e.Large {
		return fmt.Sprintf("a plan needing %d MiB of the %d MiB plans work in, more than a quarter, is not taken while another such plan is made; retry later",
			mib(e.Wanted), mib(e.Budget))
	}
	if e.Share > 0 {
		return fmt.Sprintf("a plan needing %d MiB of the %d MiB plans work in is beyond what this caller may hold at once (%d MiB, with its other plans); retry later",
			mib(e.Wanted), mib(e.Budget), mib(e.Share))
	}
	return fmt.Sprintf("a plan needing %d MiB of the %d MiB plans work in waited %s for room; retry later",
		mib(e.Wanted), mib(e.Budget), e.Waited.Round(time.Millisecond))
}

// mib is n in MiB, rounded up.
func mib(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// Share is one caller's part of the memory plans work in; the server gives
// each caller one (WithShare) so that one caller's requests cannot take the
// whole budget while the others wait behind them. A reservation that would
// bring what the caller holds past its share is refused at once
// (*BusyError) rather than queued, unless the caller holds nothing else: a
// caller's one plan may still reserve up to three quarters of the budget
// (the most one request holds), so that a plan of a large table is not
// refused for being large, as without shares; its next one waits for it
// to end.
type Share struct {
	limit int64
	mu    sync.Mutex
	held  int64
}

// NewShare returns a share of limit bytes; limit <= 0 bounds nothing.
func NewShare(limit int64) *Share { return &Share{limit: limit} }

// Held is the bytes the share's caller holds now.
func (s *Share) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// take counts n more bytes against the share unless the caller holds
// something beyond own (what the request asking holds: its hold and its
// other reservations) and would pass its limit.
func (s *Share) take(n, own int64) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit > 0 && s.held > own && s.held+n > s.limit {
		return false
	}
	s.held += n
	return true
}

func (s *Share) give(n int64) {
	if s != nil {
		s.mu.Lock()
		s.held -= n
		s.mu.Unlock()
	}
}

type shareKey struct{}

// WithShare returns ctx whose reservations of the memory plans work in
// count against share.
func WithShare(ctx context.Context, share *Share) context.Context {
	return context.WithValue(ctx, shareKey{}, share)
}

func shareOf(ctx context.Context) *Share {
	s, _ := ctx.Value(shareKey{}).(*Share)
	return s
}

// Hold is a request's own reservation, held while its plan is made: its
// decoded body and the filter parsed from it, which live as long as the
// plan. The plan's reservations made with the context HoldWork returns
// are taken together with the hold whenever they have to wait (the hold
// given back first), so that no plan waits for room while holding some:
// otherwise plans that each hold a little and wait for more could fill the
// budget and wait on each other until MaxWorkWait.
type Hold struct {
	w     *workBudget
	share *Share
	mu    sync.Mutex
	n     int64
	// others is what the request's other reservations (made with its
	// context) hold now: with n, what the request holds, which its share
	// lets it pass as one (a load answer read a step at a time).
	others atomic.Int64
	// large counts what the request holds that needs the budget's large
	// gate (its hold and reservations of more than a quarter); the gate is
	// the request's while it is not 0. largeMu guards it apart from mu,
	// which a reservation keeps while it waits.
	largeMu   sync.Mutex
	large     int
	holdLarge bool // the hold itself counts in large
}

type holdKey struct{}

// Shrink gives back what the hold has beyond bytes.
func (h *Hold) Shrink(bytes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes = max(bytes, 1); h.w.sem != nil && bytes < h.n {
		h.w.give(h.n-bytes, h.share)
		h.n = bytes
		if h.holdLarge && !h.w.isLarge(bytes) {
			h.holdLarge = false
			h.w.giveLarge(h)
		}
	}
}

// Grow brings the hold to bytes (at most largeLimit with the request's
// other reservations), within its
// share, waiting for room as a reservation does, holding nothing
// meanwhile (the hold is given back while it waits, and is 0 when Grow
// fails); a hold of a request that would then hold more than a quarter of
// the budget while another request does is refused at once.
func (h *Hold) Grow(ctx context.Context, bytes int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.w
	if w.sem == nil {
		return nil
	}
	own, others := h.n, h.others.Load()
	bytes = min(bytes, w.largeLimit()-others)
	extra := bytes - own
	if extra <= 0 {
		return nil
	}
	if !h.share.take(extra, own+others) {
		return &BusyError{Wanted: bytes, Budget: w.size, Share: h.share.limit}
	}
	large := !h.holdLarge && w.isLarge(bytes+others)
	if large {
		if err := w.takeLarge(ctx, h, own+others, bytes+others); err != nil {
			h.share.give(extra)
			return err
		}
	}
	switch {
	case own == 0:
		if err := w.acquire(ctx, bytes); err != nil {
			h.share.give(extra)
			if large {
				w.giveLarge(h)
			}
			return err
		}
	case w.sem.TryAcquire(extra):
		w.reserved.Add(extra)
	default:
		w.reserved.Add(-own)
		w.sem.Release(own)
		if err := w.acquire(ctx, bytes); err != nil {
			h.n = 0
			h.share.give(bytes)
			if large || h.holdLarge {
				h.holdLarge = false
				w.giveLarge(h)
			}
			return err
		}
	}
	h.n = bytes
	h.holdLarge = h.holdLarge || large
	return nil
}

// Release gives back what the hold has.
func (h *Hold) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w.sem != nil && h.n > 0 {
		h.w.give(h.n, h.share)
	}
	h.n = 0
	if h.holdLarge {
		h.holdLarge = false
		h.w.giveLarge(h)
	}
}

// Bytes is what the hold has now.
func (h *Hold) Bytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// hold reserves n bytes (at most largeLimit) as a request's hold,
// within ctx's share, and returns ctx carrying it.
func (w *workBudget) hold(ctx context.Context, n int64) (context.Context, *Hold, error) {
	h := &Hold{w: w, share: shareOf(ctx)}
	ctx = context.WithValue(ctx, holdKey{}, h)
	// A hold of nothing yet marks the request's reservations as one, as
	// its share sees them.
	if err := h.Grow(ctx, n); err != nil {
		return nil, nil, err
	}
	return ctx, h, nil
}

// isLarge says whether a request holding n bytes needs the large gate.
func (w *workBudget) isLarge(n int64) bool { return n > w.size/4 }

// largeLimit is the most one request holds: three quarters of the budget.
func (w *workBudget) largeLimit() int64 { return w.size - w.size/4 }

// takeLarge takes the large gate for h's request (nil: a reservation of
// no request), which holds mine bytes and would hold wanted: at once when
// the request has it, else once its turn has come (awaitTurn); it fails
// with *BusyError (Large) at once when another request has it.
func (w *workBudget) takeLarge(ctx context.Context, h *Hold, mine, wanted int64) error {
	if h != nil { // a request's reservations are made one at a time (h.mu)
		h.largeMu.Lock()
		had := h.large > 0
		if had {
			h.large++
		}
		h.largeMu.Unlock()
		if had {
			return nil
		}
	}
	select {
	case w.large <- struct{}{}:
	default:
		return &BusyError{Wanted: wanted, Budget: w.size, Large: true}
	}
	if err := w.awaitTurn(ctx, mine, wanted); err != nil {
		<-w.large
		return err
	}
	w.mu.Lock()
	w.largeSince = time.Now()
	w.mu.Unlock()
	if h != nil {
		h.largeMu.Lock()
		h.large++
		h.largeMu.Unlock()
	}
	return nil
}

// awaitTurn waits, for a request that took the large gate and holds mine
// bytes, until the turn of the large reservations has come: once the last
// large reservation's end is as long past as it held the gate, or at once
// when nothing but the request's own reservations is held. Large
// reservations take turns with the others so: each takes the whole budget
// or much of it, and one after another (plans of every file of 4,000
// each reserving the whole budget, back to back) they kept the budget to
// themselves; now they have at most about half of the time while smaller
// ones want room. It fails as acquire does, after the budget's wait.
func (w *workBudget) awaitTurn(ctx context.Context, mine, wanted int64) error {
	start := time.Now()
	for waits := 0; ; waits++ {
		w.mu.Lock()
		turn := w.turn
		w.mu.Unlock()
		now := time.Now()
		if !now.Before(turn) || w.reserved.Load() <= mine {
			return nil
		}
		if waited := now.Sub(start); waited >= w.wait {
			return &BusyError{Wanted: wanted, Budget: w.size, Waited: waited}
		}
		if waits == 0 {
			w.turnWaits.Add(1)
		}
		t := time.NewTimer(min(turn.Sub(now), w.wait-now.Sub(start), 5*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for planning memory: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// giveLarge gives back what takeLarge took; the gate given back, the next
// large reservation's turn comes when as much time has passed as the gate
// was held since its turn came.
func (w *workBudget) giveLarge(h *Hold) {
	if h != nil {
		h.largeMu.Lock()
		defer h.largeMu.Unlock()
		if h.large--; h.large > 0 {
			return
		}
	}
	w.mu.Lock()
	now := time.Now()
	w.turn = now.Add(now.Sub(w.largeSince))
	w.mu.Unlock()
	<-w.large
}

// give gives n bytes back to the budget and to share.
func (w *workBudget) give(n int64, share *Share) {
	w.reserved.Add(-n)
	w.sem.Release(n)
	share.give(n)
}

// acquire waits for n bytes of the budget, up to the budget's wait, and
// counts them reserved.
func (w *workBudget) acquire(ctx context.Context, n int64) error {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, w.wait)
	defer cancel()
	if err := w.sem.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("wait for planning memory: %w", ctx.Err())
		}
		return &BusyError{Wanted: n, Budget: w.size, Waited: time.Since(start)}
	}
	w.reserved.Add(n)
	return nil
}

// reserve waits until n bytes (at most largeLimit, less what ctx's request
// holds) are free and reserves them, within ctx's share; release
// gives them back. It fails when ctx ends, the wait passes the budget's
// limit or the caller's share would be passed (*BusyError).
func (w *workBudget) reserve(ctx context.Context, n int64) (release func(), err error) {
	if w.size == 0 {
		return func() {}, nil
	}
	share := shareOf(ctx)
	h, _ := ctx.Value(holdKey{}).(*Hold)
	var own, others int64
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		own, others = h.n, h.others.Load()
	}
	n = min(max(n, 1), w.largeLimit()-own-others)
	if n <= 0 { // the request holds the most one may: the plan runs in it
		return func() {}, nil
	}
	if !share.take(n, own+others) {
		return nil, &BusyError{Wanted: n, Budget: w.size, Share: share.limit}
	}
	large := w.isLarge(own + others + n)
	if large {
		if err := w.takeLarge(ctx, h, own+others, own+others+n); err != nil {
			share.give(n)
			return nil, err
		}
	}
	switch {
	case own > 0 && w.sem.TryAcquire(n):
		w.reserved.Add(n)
	case own > 0:
		// Wait for the hold and n together, holding nothing meanwhile.
		w.reserved.Add(-own)
		w.sem.Release(own)
		if err := w.acquire(ctx, own+n); err != nil {
			h.n = 0 // the hold is given back: its release gives nothing
			share.give(own + n)
			if large {
				w.giveLarge(h)
			}
			if h.holdLarge {
				h.holdLarge = false
				w.giveLarge(h)
			}
			return nil, err
		}
	default:
		if err := w.acquire(ctx, n); err != nil {
			share.give(n)
			if large {
				w.giveLarge(h)
			}
			return nil, err
		}
	}
	if h != nil {
		h.others.Add(n)
	}
	return sync.OnceFunc(func() {
		if h != nil {
			h.others.Add(-n)
		}
		w.give(n, share)
		if large {
			w.giveLarge(h)
		}
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
