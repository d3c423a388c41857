package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/icebloom/icebloom/index/serve/planning"
)

// Admission: which plan requests are taken, and by whom.
//
// A plan takes one of MaxPlansInFlight slots before its body is read, and
// holds memory of the work budget from then to its end. First come first
// served alone let one caller's requests take every slot and the whole work
// budget (bench --serve-abuse: ordinary plans beside 128 hostile clients got
// 429 99.4% of the time, p99 166x the p50 without them). So each caller
// may have at most MaxPlansPerCaller plans being computed (a quarter of the
// slots by default) and hold at most a quarter of the work budget (more only
// for one reservation while it holds nothing else: planning.Share); a
// caller over its share is answered 429 with Retry-After at once, and the
// others are taken. What many callers' large requests cost is bounded by
// the work budget itself (planning/workbudget.go: one large request at a
// time, in three quarters of it at most, taking turns with the small
// ones), and a request waits briefly for a slot (below): bench
// --serve-abuse with the hostile clients as one caller or as 128, every
// ordinary plan was planned and none met a 429 (see docs/benchmarks.md).
//
// Who a caller is: the credential it carries (a hash of its Authorization,
// as plans are owned) where credentials are each caller's own — in proxy
// mode, where the upstream issues them, and in catalog mode without a
// token — and its address otherwise: without Authorization, and in catalog
// mode with --bearer-token-file, whose one token every caller shares. A
// hostile mix from one caller (a script, a runaway engine, one stolen token)
// is bounded by its share; one from many callers (many tokens, many hosts)
// is not told apart from many ordinary callers by any per-caller rule: it
// is bounded by the slots and the budget, as before, so memory holds, but
// ordinary plans then compete with it for the slots, in order. In proxy mode a made-up
// Authorization names a new caller until the upstream refuses it at load.

// callerOf names the caller of r for admission (see above): never the
// credential itself.
func (s *Server) callerOf(r *http.Request) string {
	if r.Header.Get("Authorization") != "" && s.o.BearerToken == "" {
		return "credential " + ownerOf(r)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address " + host
}

// admission counts the plans being computed, in all and by caller, and
// the table loads of polls, plan tasks and cancels likewise, apart: a poll
// of a plan that is being computed must not wait for a plan slot, which
// its own plan may hold, and clients poll without expecting 429 (the spec
// lists none). Each caller has one share of the work budget for both.
//
// A request that finds every slot taken waits for one, first come first
// served, up to maxWait, and is answered 429 only then: it holds nothing
// while it waits (its body is not read), and an engine's client told 429
// waits a whole second (Retry-After: 1, as Iceberg's Java client honours
// it) where a slot frees in milliseconds. bench --serve-abuse with 128
// hostile callers and 16 ordinary clients retrying as Java's does: up to
// 8% of the ordinary plans met a 429 and waited that second, p99 1.6 s
// against a p50 of 184 ms. A caller's requests waiting count in its share of the
// slots.
type admission struct {
	slots, loads chan struct{}
	perCaller    int
	workShare    int64
	maxWait      time.Duration
	mu           sync.Mutex
	callers      map[string]*callerState
}

// DefaultMaxSlotWait is how long a request waits for a slot when all are
// taken before it is answered 429: no longer than the Retry-After (1 s) a
// client would wait after a 429.
const DefaultMaxSlotWait = time.Second

// callerState is what one caller has in flight: its plans, its loads and
// its share of the work budget, dropped when it has none.
type callerState struct {
	plans, loads int
	share        *planning.Share
}

func newAdmission(slots, perCaller int, workBudget int64, maxWait time.Duration) *admission {
	if perCaller <= 0 {
		perCaller = max(1, slots/4)
	}
	if maxWait == 0 {
		maxWait = DefaultMaxSlotWait
	}
	return &admission{slots: make(chan struct{}, slots), loads: make(chan struct{}, slots), perCaller: perCaller,
		workShare: workBudget / 4, maxWait: max(maxWait, 0), callers: map[string]*callerState{}}
}

// refusal is why admission did not take a request: the outcome counted
// in /metrics (rejected: the slots are taken; rejected_caller: the
// caller's share of them) and the message of its 429.
type refusal struct{ outcome, message string }

// admit takes a slot for caller, waiting for one up to maxWait (or until
// ctx ends), or says why not (answered 429); free gives the slot back,
// once, after every reservation made with share was given back.
func (a *admission) admit(ctx context.Context, caller string) (free func(), share *planning.Share, refused *refusal) {
	return a.take(ctx, caller, a.slots, func(c *callerState) *int { return &c.plans }, "plans are being computed")
}

// admitLoad takes a slot for the table load of caller's poll, plan task or
// cancel, as admit does for plans.
func (a *admission) admitLoad(ctx context.Context, caller string) (free func(), share *planning.Share, refused *refusal) {
	return a.take(ctx, caller, a.loads, func(c *callerState) *int { return &c.loads }, "polls and plan tasks are loading their table")
}

// take takes one of slots for caller, whose count of them (taken or
// waited for) is count.
func (a *admission) take(ctx context.Context, caller string, slots chan struct{}, count func(*callerState) *int, what string) (func(), *planning.Share, *refusal) {
	a.mu.Lock()
	c := a.callers[caller]
	if c != nil && *count(c) >= a.perCaller {
		a.mu.Unlock()
		return nil, nil, &refusal{"rejected_caller", fmt.Sprintf(
			"this caller has %d %s, the most one caller may have at once; retry later", *count(c), what)}
	}
	if c == nil {
		c = &callerState{share: planning.NewShare(a.workShare)}
		a.callers[caller] = c
	}
	*count(c)++
	a.mu.Unlock()
	drop := func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if *count(c)--; c.plans == 0 && c.loads == 0 {
			delete(a.callers, caller)
		}
	}
	if !a.wait(ctx, slots) {
		drop()
		return nil, nil, &refusal{"rejected", fmt.Sprintf(
			"%d %s, the most this server takes at once; retry later", cap(slots), what)}
	}
	return sync.OnceFunc(func() {
		drop()
		<-slots
	}), c.share, nil
}

// wait takes one of slots, waiting for it up to maxWait while ctx lasts.
func (a *admission) wait(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	if a.maxWait <= 0 {
		return false
	}
	t := time.NewTimer(a.maxWait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// inFlight is the plans being computed now.
func (a *admission) inFlight() int { return len(a.slots) }

// refuse answers a request admission refused: 429 with Retry-After.
func (s *Server) refuse(w http.ResponseWriter, r *refusal) {
	s.metrics.count(r.outcome)
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusTooManyRequests, "SlowDownException", r.message)
}
