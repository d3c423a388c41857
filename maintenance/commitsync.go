package maintenance

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
)

// The defaults of CommitSyncOptions' zero (or negative) fields.
const (
	// DefaultSyncQuiet lets a writer's burst of commits (a streaming
	// job's, a multi-statement job's) settle into one sync, while an
	// append is still covered within seconds.
	DefaultSyncQuiet = 2 * time.Second
	// DefaultSyncMaxDelay bounds how long a steady stream of commits can
	// postpone the sync of its table.
	DefaultSyncMaxDelay = 30 * time.Second
	// DefaultSyncWorkers is small: a sync reads data files and competes
	// with the planning the server is there for.
	DefaultSyncWorkers = 2
	// DefaultSyncRetryBase and DefaultSyncRetryMax bound the backoff
	// between the attempts of a failing sync.
	DefaultSyncRetryBase = time.Second
	DefaultSyncRetryMax  = time.Minute
	// DefaultSyncMaxAttempts attempts a sync this many times in all
	// before giving up until the table's next commit (or the next
	// scheduled maintain).
	DefaultSyncMaxAttempts = 5
	// DefaultSyncMaxPending bounds the tables with a sync pending: far
	// more than a catalog commits to in a quiet period, and a few MiB.
	DefaultSyncMaxPending = 10000
)

// CommitSyncOptions configure a CommitSyncer. A zero or negative field
// takes its default (DefaultSync*).
type CommitSyncOptions struct {
	// Quiet is how long a table must go without a commit before its sync
	// starts; each commit restarts the wait.
	Quiet time.Duration
	// MaxDelay is how long after the first commit not yet synced the sync
	// starts at the latest, however steady the stream of later commits.
	MaxDelay time.Duration
	// Workers bounds the syncs running at once, over all tables.
	Workers int
	// RetryBase is the backoff after a sync's first failure; it doubles
	// with each further failure up to RetryMax. Each wait is drawn
	// between half the doubled value and all of it, so the retries of
	// tables that failed together (an outage of the catalog) spread out.
	RetryBase, RetryMax time.Duration
	// MaxAttempts is how many times a sync is attempted in all before it
	// is given up (logged, counted in GaveUp).
	MaxAttempts int
	// MaxPending bounds the tables with a sync waiting, queued, running or
	// backing off. A commit to a table already among them costs nothing;
	// a commit to another table beyond the bound is dropped (counted in
	// Dropped and logged): its files stay unindexed, so never pruned,
	// until a later commit or maintain syncs the table.
	MaxPending int
	// Logger gets the failures, give-ups and drops (nil: slog.Default()).
	// It is given table names, attempt counts and the sync function's
	// error text, nothing else: the sync function's errors must not carry
	// credentials.
	Logger *slog.Logger
}

// withDefaults returns o with every zero or negative field defaulted.
func (o CommitSyncOptions) withDefaults() CommitSyncOptions {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Quiet, DefaultSyncQuiet)
	def(&o.MaxDelay, DefaultSyncMaxDelay)
	def(&o.RetryBase, DefaultSyncRetryBase)
	def(&o.RetryMax, DefaultSyncRetryMax)
	o.RetryMax = max(o.RetryMax, o.RetryBase)
	defInt(&o.Workers, DefaultSyncWorkers)
	defInt(&o.MaxAttempts, DefaultSyncMaxAttempts)
	defInt(&o.MaxPending, DefaultSyncMaxPending)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// CommitSyncStats counts what a CommitSyncer did, for logs and metrics.
// The counters only grow; Pending, Queued and Running are the state at the
// time of the call. Once the syncer is idle, Started = Succeeded + Failed
// and Failed = Retried + GaveUp (plus attempts cut short by Close).
type CommitSyncStats struct {
	// Scheduled counts the syncs commits scheduled: a commit to a table
	// with no sync pending, or the first commit to a table while its sync
	// runs (which schedules one more after it; should the running sync
	// fail, its retry covers that commit instead).
	Scheduled int64
	// Coalesced counts the commits that joined a sync already scheduled
	// (or a failed sync's retry).
	Coalesced int64
	// Dropped counts the commits refused because MaxPending tables had a
	// sync pending.
	Dropped int64
	// Started counts the calls of the sync function, retries included.
	Started   int64
	Succeeded int64
	// Failed counts the calls that returned an error.
	Failed int64
	// Retried counts the failures followed by another attempt after a
	// backoff; GaveUp those after the last attempt.
	Retried int64
	GaveUp  int64
	// Abandoned counts the syncs Close found scheduled but not running.
	Abandoned int64
	// Pending is the tables with a sync waiting, queued, running or
	// backing off; Queued those due and waiting for a worker; Running the
	// syncs running.
	Pending, Queued, Running int
}

// CommitSyncer runs a sync of a table some time after commits to it, as
// CommitSyncOptions describe: debounced (Quiet, MaxDelay), one at a time
// per table (a commit during a sync schedules exactly one more after it),
// at most Workers at once, failures retried with backoff. The proxy of
// `icebloom serve --sync-on-commit` calls Committed after each successful
// commit it forwards, so that the index covers new files shortly after
// any engine writes them, without a scheduled maintain. It is safe for
// concurrent use.
type CommitSyncer struct {
	sync func(ctx context.Context, ident table.Identifier) error
	o    CommitSyncOptions

	// ctx is given to every sync; Close cancels it when its own context
	// ends before the running syncs do.
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup // the running syncs

	mu      sync.Mutex
	closed  bool
	tables  map[string]*syncState // the pending tables, by tableKey
	queue   []*syncState          // due, waiting for a worker, in order
	running int
	stats   CommitSyncStats
	keyBuf  []byte    // scratch for tableKey, under mu
	dropLog time.Time // when a drop was last logged
}

// syncPhase is where a pending table's sync is.
type syncPhase int

const (
	phaseWaiting syncPhase = iota // for its quiet period or max delay
	phaseQueued                   // due, for a worker
	phaseRunning
	phaseBackoff // after a failure, for the next attempt
)

// syncState is a pending table: the sync scheduled for it and the commits
// it covers.
type syncState struct {
	key   string
	ident table.Identifier
	phase syncPhase
	// first and last are the times of the first and last commits not
	// covered by a sync that has started; first is zero when there are
	// none (only while running or backing off).
	first, last time.Time
	attempt     int       // failed attempts of the current sync
	retryAt     time.Time // in phaseBackoff
	timer       *time.Timer
}

// due is when a waiting table's sync starts.
func (st *syncState) due(o CommitSyncOptions) time.Time {
	d := st.last.Add(o.Quiet)
	if m := st.first.Add(o.MaxDelay); m.Before(d) {
		return m
	}
	return d
}

// NewCommitSyncer returns a syncer that calls sync for a table some time
// after Committed reports commits to it (see CommitSyncOptions). sync is
// called on goroutines of the syncer, never on Committed's, with a
// context that Close cancels if its own ends first.
func NewCommitSyncer(sync func(ctx context.Context, ident table.Identifier) error, o CommitSyncOptions) *CommitSyncer {
	ctx, cancel := context.WithCancel(context.Background())
	return &CommitSyncer{
		sync:   sync,
		o:      o.withDefaults(),
		ctx:    ctx,
		cancel: cancel,
		tables: map[string]*syncState{},
	}
}

// tableKey encodes ident injectively (each part prefixed by its length)
// into s.keyBuf; s.mu is held. A lookup by string(s.keyBuf) allocates
// nothing.
func (s *CommitSyncer) tableKey(ident table.Identifier) []byte {
	b := s.keyBuf[:0]
	for _, part := range ident {
		b = binary.AppendUvarint(b, uint64(len(part)))
		b = append(b, part...)
	}
	s.keyBuf = b
	return b
}

// Committed reports a successful commit to the table. It never blocks on
// a sync (it takes a lock held only for bookkeeping) and allocates only
// when the table has no sync pending; beyond MaxPending such tables it
// drops the commit (see CommitSyncOptions.MaxPending). After Close it does
// nothing.
func (s *CommitSyncer) Committed(ident table.Identifier) {
	now := time.Now()
	s.mu.Lock()
	dropped, logDrop, pending := s.committed(ident, now)
	s.mu.Unlock()
	if logDrop {
		s.o.Logger.Warn("sync on commit: too many tables pending, commit not synced (maintain will index it)",
			"table", strings.Join(ident, "."), "pending", pending, "dropped", dropped)
	}
}

// committed is Committed under s.mu. It reports whether the commit was
// dropped and is to be logged (one line a minute: a flood of commits must
// not become a flood of log lines), with the counts to log.
func (s *CommitSyncer) committed(ident table.Identifier, now time.Time) (dropped int64, logDrop bool, pending int) {
	if s.closed {
		return 0, false, 0
	}
	key := s.tableKey(ident)
	st := s.tables[string(key)]
	if st == nil {
		if len(s.tables) >= s.o.MaxPending {
			s.stats.Dropped++
			logDrop = now.Sub(s.dropLog) >= time.Minute
			if logDrop {
				s.dropLog = now
			}
			return s.stats.Dropped, logDrop, len(s.tables)
		}
		st = &syncState{key: string(key), ident: slices.Clone(ident), phase: phaseWaiting, first: now, last: now}
		s.tables[st.key] = st
		s.stats.Scheduled++
		st.timer = time.AfterFunc(st.due(s.o).Sub(now), func() { s.fire(st) })
		return 0, false, 0
	}
	switch {
	case st.phase == phaseWaiting:
		// The timer finds the later due time when it fires.
		st.last = now
		s.stats.Coalesced++
	case st.phase == phaseQueued || st.phase == phaseBackoff:
		// The sync (or its retry) has not started: it will see this
		// commit.
		s.stats.Coalesced++
	case st.first.IsZero():
		// Running: one more sync after it.
		st.first, st.last = now, now
		s.stats.Scheduled++
	default:
		st.last = now
		s.stats.Coalesced++
	}
	return 0, false, 0
}

// fire is st's timer: a waiting table's due time, or a backing-off one's
// next attempt. A timer firing early or late (reset while its function
// was starting) is harmless: the phase and times decide.
func (s *CommitSyncer) fire(st *syncState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.tables[st.key] != st {
		return
	}
	var at time.Time
	switch st.phase {
	case phaseWaiting:
		at = st.due(s.o)
	case phaseBackoff:
		at = st.retryAt
	default:
		return
	}
	if wait := time.Until(at); wait > 0 {
		st.timer.Reset(wait)
		return
	}
	st.phase = phaseQueued
	s.queue = append(s.queue, st)
	s.dispatch()
}

// dispatch starts queued syncs while workers are free; s.mu is held.
func (s *CommitSyncer) dispatch() {
	for s.running < s.o.Workers && len(s.queue) > 0 {
		st := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = s.queue[:0:0] // let the drained array go
		}
		st.phase = phaseRunning
		// The commits so far are this attempt's; later ones schedule the
		// next sync.
		st.first, st.last = time.Time{}, time.Time{}
		s.running++
		s.stats.Started++
		s.done.Add(1)
		go s.run(st)
	}
}

// run calls the sync function for st and decides what follows. It logs
// after unlocking: a slow log handler must not hold up Committed.
func (s *CommitSyncer) run(st *syncState) {
	defer s.done.Done()
	err := s.callSync(st.ident)
	s.mu.Lock()
	s.running--
	logf := s.finish(st, err)
	s.dispatch()
	s.mu.Unlock()
	if logf != nil {
		logf(s.o.Logger)
	}
}

// finish records the end of st's sync attempt and schedules what follows;
// s.mu is held. It returns what to log, if anything.
func (s *CommitSyncer) finish(st *syncState, err error) func(*slog.Logger) {
	if err == nil {
		s.stats.Succeeded++
		st.attempt = 0
		s.next(st)
		return nil
	}
	s.stats.Failed++
	st.attempt++
	name, attempt := strings.Join(st.ident, "."), st.attempt
	if s.closed {
		// Close cut the sync short or came during it: no retry.
		delete(s.tables, st.key)
		return func(l *slog.Logger) {
			l.Warn("sync on commit failed while closing", "table", name, "attempt", attempt, "error", err)
		}
	}
	if st.attempt < s.o.MaxAttempts {
		// The retry covers the commits that came during this attempt too.
		wait := s.backoff(st.attempt)
		s.stats.Retried++
		st.phase = phaseBackoff
		st.retryAt = time.Now().Add(wait)
		st.timer.Reset(wait)
		return func(l *slog.Logger) {
			l.Warn("sync on commit failed, retrying", "table", name,
				"attempt", attempt, "max_attempts", s.o.MaxAttempts, "retry_in", wait, "error", err)
		}
	}
	s.stats.GaveUp++
	st.attempt = 0
	s.next(st)
	return func(l *slog.Logger) {
		l.Error("sync on commit failed, giving up until the table's next commit (maintain will index it)",
			"table", name, "attempts", attempt, "error", err)
	}
}

// callSync calls the sync function, turning a panic into an error: a bad
// table must not take the server down.
func (s *CommitSyncer) callSync(ident table.Identifier) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sync panicked: %v", r)
		}
	}()
	return s.sync(s.ctx, ident)
}

// next ends st's sync: the table waits again if commits came since the
// sync started, else it is no longer pending; s.mu is held.
func (s *CommitSyncer) next(st *syncState) {
	if s.closed || st.first.IsZero() {
		st.timer.Stop()
		delete(s.tables, st.key)
		return
	}
	st.phase = phaseWaiting
	st.timer.Reset(time.Until(st.due(s.o)))
}

// backoff is the wait after the attempt-th failure: RetryBase doubled per
// earlier failure, capped at RetryMax, drawn from its upper half.
func (s *CommitSyncer) backoff(attempt int) time.Duration {
	d := s.o.RetryBase
	for i := 1; i < attempt && d < s.o.RetryMax; i++ {
		if d > s.o.RetryMax/2 { // doubling would pass the cap (or overflow)
			d = s.o.RetryMax
			break
		}
		d *= 2
	}
	d = min(d, s.o.RetryMax)
	half := d / 2
	return half + rand.N(d-half+1)
}

// Close stops taking work and waits for the running syncs until ctx ends.
// Syncs scheduled but not started are abandoned (counted in Abandoned): the
// next maintain, or the next server's first commit to the table, indexes
// their files. If ctx ends first, Close cancels the running syncs' context
// and returns ctx's error without waiting further. Committed does nothing
// after Close; Close may be called again.
func (s *CommitSyncer) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		abandoned := 0
		for key, st := range s.tables {
			if st.phase != phaseRunning {
				st.timer.Stop()
				delete(s.tables, key)
				abandoned++
			}
		}
		s.queue = nil
		s.stats.Abandoned += int64(abandoned)
		if abandoned > 0 {
			s.o.Logger.Info("sync on commit: closing, syncs not started are abandoned", "tables", abandoned)
		}
	}
	s.mu.Unlock()

	finished := make(chan struct{})
	go func() {
		s.done.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		s.cancel()
		return nil
	case <-ctx.Done():
		running := s.Stats().Running
		s.cancel()
		return fmt.Errorf("close commit syncer: %d syncs still running: %w", running, context.Cause(ctx))
	}
}

// Stats returns the counts so far.
func (s *CommitSyncer) Stats() CommitSyncStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Pending, st.Queued, st.Running = len(s.tables), len(s.queue), s.running
	return st
}
