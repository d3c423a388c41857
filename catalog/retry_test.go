package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// errTransient is an error IsTransient accepts.
var errTransient = errors.New("database is locked (5) (SQLITE_BUSY)")

// TestRetry shows the retry loop: an operation that keeps failing
// transiently is tried DefaultCommitAttempts times, waiting between
// attempts with exponential backoff and full jitter (ceilings of 50 ms
// doubling to 2 s, each wait drawn from zero to the ceiling), each retry
// logged as a warning; then the last error is returned, saying so.
func TestRetry(t *testing.T) {
	var waits []time.Duration
	var logged bytes.Buffer
	calls := 0
	err := Retry(t.Context(), events, "table load", func(context.Context) (bool, error) {
		calls++
		return IsTransient(errTransient), errTransient
	}, WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}), WithLogger(slog.New(slog.NewJSONHandler(&logged, nil))))
	if !errors.Is(err, errTransient) || !strings.Contains(err.Error(), "gave up after 8 attempts") || !strings.Contains(err.Error(), "db.events") {
		t.Fatalf("error %v, want the last one after 8 attempts, naming the table", err)
	}
	if calls != DefaultCommitAttempts || len(waits) != DefaultCommitAttempts-1 {
		t.Fatalf("%d calls, %d waits; want %d, %d", calls, len(waits), DefaultCommitAttempts, DefaultCommitAttempts-1)
	}
	ceilings := []time.Duration{50, 100, 200, 400, 800, 1600, 2000}
	for i, d := range waits {
		if c := ceilings[i] * time.Millisecond; d < 0 || d > c {
			t.Errorf("wait before attempt %d: %v, want within [0, %v]", i+2, d, c)
		}
	}
	dec := json.NewDecoder(&logged)
	for i := range waits {
		var rec struct {
			Level, Msg, Table, Error string
			Attempt, Of              int
		}
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("retry %d not logged: %v", i+1, err)
		}
		if rec.Level != "WARN" || rec.Msg != "table load failed; retrying" || rec.Table != "db.events" ||
			rec.Attempt != i+2 || rec.Of != DefaultCommitAttempts || rec.Error != errTransient.Error() {
			t.Errorf("retry %d logged as %+v", i+1, rec)
		}
	}
	if dec.More() {
		t.Error("more records than retries")
	}
}

// TestRetryStops shows that Retry returns at once on success and on an
// error its operation does not call worth retrying, and that cancelling the
// context during a wait ends it with the context's error.
func TestRetryStops(t *testing.T) {
	noSleep := WithSleep(func(context.Context, time.Duration) error { return nil })
	calls := 0
	err := Retry(t.Context(), events, "x", func(context.Context) (bool, error) {
		calls++
		if calls < 3 {
			return true, errTransient
		}
		return false, nil
	}, noSleep)
	if err != nil || calls != 3 {
		t.Errorf("success on attempt 3: %v after %d calls", err, calls)
	}

	final := errors.New("no such table")
	calls = 0
	err = Retry(t.Context(), events, "x", func(context.Context) (bool, error) {
		calls++
		return false, final
	}, noSleep)
	if err != final || calls != 1 {
		t.Errorf("a final error: %v after %d calls, want it unwrapped after 1", err, calls)
	}

	ctx, cancel := context.WithCancel(t.Context())
	calls = 0
	err = Retry(ctx, events, "x", func(context.Context) (bool, error) {
		calls++
		return true, errTransient
	}, WithSleep(func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleep(ctx, time.Hour)
	}))
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled: %v after %d calls, want context.Canceled after 1", err, calls)
	}
}

// TestBackoffJitter shows that the waits are drawn over the whole range
// below the ceiling (full jitter), not fixed and not only its upper half.
func TestBackoffJitter(t *testing.T) {
	p := newConfig(nil).policy()
	for retry, ceiling := range map[int]time.Duration{1: 50 * time.Millisecond, 3: 200 * time.Millisecond, 7: 2 * time.Second, 100: 2 * time.Second} {
		var seen []time.Duration
		for range 200 {
			d := p.wait(retry)
			if d < 0 || d > ceiling {
				t.Fatalf("wait(%d) = %v, want within [0, %v]", retry, d, ceiling)
			}
			seen = append(seen, d)
		}
		if slices.Min(seen) >= ceiling/2 || slices.Max(seen) < ceiling/2 {
			t.Errorf("wait(%d) stays in [%v, %v] over 200 draws: not drawn from [0, %v]", retry, slices.Min(seen), slices.Max(seen), ceiling)
		}
	}
}

// TestRetryPolicy shows how the attempts and waits are chosen: the table's
// commit.retry.* properties over the defaults, WithAttempts over both, and
// properties that make no sense ignored.
func TestRetryPolicy(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		props            iceberg.Properties
		opts             []CommitOption
		attempts         int
		minWait, maxWait time.Duration
	}{
		{nil, nil, DefaultCommitAttempts, 50 * ms, 2000 * ms},
		{iceberg.Properties{"commit.retry.num-retries": "2"}, nil, 3, 50 * ms, 2000 * ms},
		{iceberg.Properties{"commit.retry.num-retries": "0"}, nil, 1, 50 * ms, 2000 * ms},
		{iceberg.Properties{"commit.retry.min-wait-ms": "10", "commit.retry.max-wait-ms": "30"}, nil, DefaultCommitAttempts, 10 * ms, 30 * ms},
		{iceberg.Properties{"commit.retry.min-wait-ms": "100"}, nil, DefaultCommitAttempts, 100 * ms, 2000 * ms},
		{iceberg.Properties{"commit.retry.max-wait-ms": "60000"}, nil, DefaultCommitAttempts, 50 * ms, 60000 * ms},
		{iceberg.Properties{"commit.retry.num-retries": "2"}, []CommitOption{WithAttempts(5)}, 5, 50 * ms, 2000 * ms},
		// Ignored: not numbers, negative, zero waits, min above max.
		{iceberg.Properties{"commit.retry.num-retries": "many", "commit.retry.min-wait-ms": "-1"}, nil, DefaultCommitAttempts, 50 * ms, 2000 * ms},
		{iceberg.Properties{"commit.retry.min-wait-ms": "0", "commit.retry.max-wait-ms": "0"}, nil, DefaultCommitAttempts, 50 * ms, 2000 * ms},
		{iceberg.Properties{"commit.retry.min-wait-ms": "500", "commit.retry.max-wait-ms": "100"}, nil, DefaultCommitAttempts, 50 * ms, 2000 * ms},
	} {
		p := newConfig(append([]CommitOption{WithTableProperties(tc.props)}, tc.opts...)).policy()
		if p.attempts != tc.attempts || p.minWait != tc.minWait || p.maxWait != tc.maxWait {
			t.Errorf("%v %d options: %+v, want %d attempts, waits %v..%v", tc.props, len(tc.opts), p, tc.attempts, tc.minWait, tc.maxWait)
		}
	}
	// The ceilings double from the minimum to the maximum.
	p := backoffPolicy{attempts: 10, minWait: 10 * ms, maxWait: 30 * ms}
	for retry, ceiling := range []time.Duration{10 * ms, 20 * ms, 30 * ms, 30 * ms} {
		for range 50 {
			if d := p.wait(retry + 1); d > ceiling {
				t.Fatalf("wait(%d) = %v, want at most %v", retry+1, d, ceiling)
			}
		}
	}
}

// sqlStateErr is a database error with a SQLSTATE, as pgx's are.
type sqlStateErr string

func (e sqlStateErr) Error() string    { return "ERROR: SQLSTATE " + string(e) }
func (e sqlStateErr) SQLState() string { return string(e) }

// TestIsTransient classifies errors: real ones of a SQLite catalog whose
// database another connection has locked, and of commits it refuses, and
// the shapes of the other drivers' and the network's errors.
func TestIsTransient(t *testing.T) {
	_, cat, s1, lock, unlock := lockedCatalog(t)
	ctx := t.Context()
	lock()
	_, busyLoad := cat.LoadTable(ctx, events)
	unlock()
	// A requirement that no longer holds: the SQL catalog says so without
	// table.ErrCommitFailed.
	appendT(t, cat, events)
	_, _, moved := cat.CommitTable(ctx, events, []table.Requirement{table.AssertRefSnapshotID("main", &s1)},
		[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})})
	_, missing := cat.LoadTable(ctx, table.Identifier{"db", "missing"})

	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name                string
		err                 error
		transient, conflict bool
	}{
		{"nil", nil, false, false},
		{"SQLITE_BUSY of a load", busyLoad, true, false},
		{"a branch that has changed", moved, false, true},
		{"no such table", missing, false, false},
		{"ErrCommitFailed", fmt.Errorf("commit: %w", table.ErrCommitFailed), false, true},
		{"a schema that has changed", errors.New("Requirement failed: current schema id has changed: expected 1, found 2"), false, true},
		{"a replaced table", errors.New("Requirement failed: UUID mismatch: a != b"), false, false},
		{"SQLITE_LOCKED", errors.New("database table is locked"), true, false},
		{"serialization failure", fmt.Errorf("commit: %w", sqlStateErr("40001")), true, false},
		{"deadlock", sqlStateErr("40P01"), true, false},
		{"connection failure", sqlStateErr("08006"), true, false},
		{"unique violation", sqlStateErr("23505"), false, false},
		{"ECONNRESET", fmt.Errorf("load: %w", reset), true, false},
		{"EPIPE", os.NewSyscallError("write", syscall.EPIPE), true, false},
		{"EOF of an HTTP request", &url.Error{Op: "Get", URL: "http://x/v1/config", Err: io.EOF}, true, false},
		{"EOF of a file", fmt.Errorf("read metadata: %w", io.ErrUnexpectedEOF), false, false},
		{"a reset known by its text", errors.New("read tcp 127.0.0.1:5432: connection reset by peer"), true, false},
		{"REST 503", fmt.Errorf("load: %w", rest.ErrServiceUnavailable), true, false},
		{"REST 500", rest.ErrServerError, true, false},
		{"REST 5xx of a commit", rest.ErrCommitStateUnknown, true, false},
		{"REST 400", rest.ErrBadRequest, false, false},
		{"REST 409 of a commit", rest.ErrCommitFailed, false, true},
		{"not implemented", iceberg.ErrNotImplemented, false, false},
		{"cancelled", fmt.Errorf("%w: %w", context.Canceled, reset), false, false},
		{"deadline", context.DeadlineExceeded, false, false},
		{"other", errors.New("invalid metadata location"), false, false},
	} {
		if got := IsTransient(tc.err); got != tc.transient {
			t.Errorf("%s: IsTransient(%v) = %v, want %v", tc.name, tc.err, got, tc.transient)
		}
		if got := IsConflict(tc.err); got != tc.conflict {
			t.Errorf("%s: IsConflict(%v) = %v, want %v", tc.name, tc.err, got, tc.conflict)
		}
	}
}

// TestRetryTimeBudget shows WithTimeBudget: an operation that keeps
// failing is retried past any count (here 40 attempts, five times
// DefaultCommitAttempts, and past WithAttempts) until the next attempt
// would start after the budget, and the error says so.
func TestRetryTimeBudget(t *testing.T) {
	var elapsed time.Duration
	clock := withClock(func() time.Time { return time.Unix(0, 0).Add(elapsed) })
	calls := 0
	err := Retry(t.Context(), events, "statistics commit", func(context.Context) (bool, error) {
		calls++
		return true, errTransient
	}, WithAttempts(2), WithTimeBudget(40*time.Second), clock, WithSleep(func(_ context.Context, d time.Duration) error {
		elapsed += time.Second // whatever the jitter drew: a second per retry
		return nil
	}))
	if !errors.Is(err, errTransient) || !strings.Contains(err.Error(), "the time budget") {
		t.Fatalf("error %v, want the last one, naming the time budget", err)
	}
	// Attempt k starts after k-1 seconds; the wait before the next is at
	// most 2 s, so the last attempt started within [38 s, 40 s].
	if calls < 39 || calls > 41 {
		t.Fatalf("%d attempts in a budget of 40 s at one second each", calls)
	}
}
