package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// IsTransient reports whether err is a catalog failure that says nothing
// about the request, so that the same request may well succeed a moment
// later:
//
//   - SQLite's SQLITE_BUSY and SQLITE_LOCKED ("database is locked", "database
//     table is locked"), met by concurrent writers of one catalog file when
//     the busy timeout runs out or cannot help;
//   - PostgreSQL serialization failures and deadlocks (SQLSTATE 40001,
//     40P01), lost connections (class 08), and a server that has no
//     connection to spare (53300, too_many_connections: max_connections or
//     a role's or database's connection limit reached, as when a sharded
//     run's pods start at once) or is starting or stopping (57P03);
//   - a connection reset or closed under a request (ECONNRESET,
//     ECONNABORTED, EPIPE, an EOF on an HTTP or network connection);
//   - a REST catalog's 429 Too Many Requests and 5xx answers except 501 Not
//     Implemented (iceberg-go's rest.ErrServiceUnavailable, ErrServerError,
//     and ErrCommitStateUnknown for the 5xx of a commit).
//
// A conflict (IsConflict) is not transient: the request must be built again
// on the table as it is now. Neither is a cancelled or expired context.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, iceberg.ErrNotImplemented) {
		return false
	}
	if errors.Is(err, rest.ErrServiceUnavailable) || errors.Is(err, rest.ErrServerError) ||
		errors.Is(err, rest.ErrCommitStateUnknown) {
		return true
	}
	if status, ok := restStatus(err); ok {
		return status == 429 || status >= 500 && status != 501
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		switch code := state.SQLState(); {
		case code == "40001", code == "40P01", code == "53300", code == "57P03", strings.HasPrefix(code, "08"):
			return true
		}
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var urlErr *url.Error
	var netErr net.Error
	if (errors.As(err, &urlErr) || errors.As(err, &netErr)) &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return true
	}
	// The SQLite drivers sqliteshim picks from have incompatible error
	// types, and some wrappers keep only the text of an error.
	msg := err.Error()
	for _, s := range []string{"database is locked", "database table is locked", "SQLITE_BUSY",
		"connection reset by peer", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// restStatus returns the HTTP status of a REST catalog's error response in
// err's chain. iceberg-go maps only some statuses to exported errors (a 429
// becomes a bare rest.ErrRESTError), and keeps the status in an unexported
// field of its unexported error type, so it is read by reflection; a test
// against a real server's 429 guards the names.
func restStatus(err error) (int, bool) {
	for e := range errorChain(err) {
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if t := v.Type(); v.Kind() != reflect.Struct || t.Name() != "errorResponse" ||
			t.PkgPath() != "github.com/apache/iceberg-go/catalog/rest" {
			continue
		}
		if f := v.FieldByName("statusCode"); f.IsValid() && f.CanInt() {
			return int(f.Int()), true
		}
	}
	return 0, false
}

// errorChain yields err and every error it wraps, depth first.
func errorChain(err error) func(yield func(error) bool) {
	return func(yield func(error) bool) {
		var walk func(error) bool
		walk = func(e error) bool {
			if e == nil {
				return true
			}
			if !yield(e) {
				return false
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				return walk(u.Unwrap())
			case interface{ Unwrap() []error }:
				for _, inner := range u.Unwrap() {
					if !walk(inner) {
						return false
					}
				}
			}
			return true
		}
		walk(err)
	}
}

// IsConflict reports whether err is a commit the catalog refused because
// the table changed since the commit was built: table.ErrCommitFailed, or a
// requirement that no longer holds ("requirement failed: branch "main" has
// changed"), which the SQL catalog reports without ErrCommitFailed. The
// catalog applied nothing; the commit may succeed once built again on the
// table as it is now.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "requirement failed: ") &&
		(strings.Contains(msg, " has changed") || strings.Contains(msg, " was created concurrently"))
}

// Retry backoff, unless the table's commit.retry.* properties or the
// options say otherwise: the ceiling of the wait starts at 50 ms and doubles
// per retry up to 2 s, and the wait is drawn at random below it (full
// jitter), so that writers that failed together do not retry in lockstep.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// The table properties that tune the retries, as iceberg-go's commits read
// them (table.CommitNumRetriesKey and so on).
const (
	numRetriesProperty = table.CommitNumRetriesKey
	minWaitProperty    = table.CommitMinRetryWaitMsKey
	maxWaitProperty    = table.CommitMaxRetryWaitMsKey
)

// A CommitOption tunes CommitStatistics and Retry, and how Open retries.
type CommitOption func(*commitConfig)

type commitConfig struct {
	attempts int                // 0: not set
	budget   time.Duration      // 0: not set; else retries end by time, not by count
	props    iceberg.Properties // the table's, for its commit.retry.* properties
	sleep    func(context.Context, time.Duration) error
	now      func() time.Time // the clock of the time budget
	log      *slog.Logger     // nil: retries are not logged
}

// withClock replaces the clock the time budget is measured by, for tests
// whose sleep does not wait.
func withClock(now func() time.Time) CommitOption {
	return func(c *commitConfig) { c.now = now }
}

// DefaultCommitAttempts is how many times CommitStatistics and Retry try an
// operation that keeps failing in a way worth retrying before giving up,
// unless WithAttempts or the table's commit.retry.num-retries says
// otherwise.
const DefaultCommitAttempts = 8

// WithAttempts sets how many times an operation is tried in all (at least
// 1), over the table's commit.retry.num-retries and DefaultCommitAttempts.
func WithAttempts(n int) CommitOption {
	return func(c *commitConfig) { c.attempts = max(n, 1) }
}

// WithTimeBudget bounds the retries by time instead of by a count: an
// operation is tried again, however often, as long as the next attempt
// would start within d of the first. For writers whose attempts race a
// number of others that the writer does not bound — the shards of a
// sharded run finishing together — a count that the others can exceed
// would fail writes that a busy catalog only delays. It wins over
// WithAttempts and the table's commit.retry.num-retries; the waits are
// still those of the backoff.
func WithTimeBudget(d time.Duration) CommitOption {
	return func(c *commitConfig) { c.budget = max(d, time.Millisecond) }
}

// WithLogger logs each retry to l, as a warning with the table, the
// attempt, the wait and the error, so that an operator sees a table whose
// commits keep racing others or a catalog that keeps failing.
func WithLogger(l *slog.Logger) CommitOption {
	return func(c *commitConfig) { c.log = l }
}

// WithSleep replaces how the retries wait, for tests. sleep must return
// early with an error when ctx is done.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) CommitOption {
	return func(c *commitConfig) { c.sleep = sleep }
}

// WithTableProperties tunes the retries with a table's properties, as
// iceberg-go's commits are tuned: commit.retry.num-retries (the attempts
// are one more), commit.retry.min-wait-ms (the first retry's ceiling) and
// commit.retry.max-wait-ms (the cap of the ceilings). WithAttempts wins over
// num-retries; a property that is not a number, or a min-wait above the
// max-wait, is ignored. CommitStatistics reads the properties of the table
// it commits to itself.
func WithTableProperties(props iceberg.Properties) CommitOption {
	return func(c *commitConfig) { c.props = props }
}

func newConfig(opts []CommitOption) commitConfig {
	c := commitConfig{sleep: sleep, now: time.Now}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// policy returns the attempts and backoff of c: the options, else the
// table's properties, else the defaults.
func (c commitConfig) policy() backoffPolicy {
	p := backoffPolicy{attempts: DefaultCommitAttempts, minWait: firstBackoff, maxWait: maxBackoff}
	prop := func(key string) (time.Duration, bool) {
		n, err := strconv.ParseUint(strings.TrimSpace(c.props[key]), 10, 32)
		return time.Duration(n), err == nil
	}
	if n, ok := prop(numRetriesProperty); ok {
		p.attempts = int(n) + 1
	}
	lo, hi := p.minWait, p.maxWait
	if ms, ok := prop(minWaitProperty); ok && ms > 0 {
		lo = ms * time.Millisecond
	}
	if ms, ok := prop(maxWaitProperty); ok && ms > 0 {
		hi = ms * time.Millisecond
	}
	if lo <= hi {
		p.minWait, p.maxWait = lo, hi
	}
	if c.attempts > 0 {
		p.attempts = c.attempts
	}
	return p
}

// backoffPolicy bounds the retries of an operation.
type backoffPolicy struct {
	attempts         int
	minWait, maxWait time.Duration
}

// wait is the wait before the given retry (1 for the first): drawn
// uniformly from zero to a ceiling that starts at minWait and doubles per
// retry up to maxWait (exponential backoff with full jitter).
func (p backoffPolicy) wait(retry int) time.Duration {
	ceiling := p.maxWait
	if shift := retry - 1; shift < 32 && p.minWait <= p.maxWait>>shift {
		ceiling = p.minWait << shift
	}
	return rand.N(ceiling + 1)
}

// Retry runs try until it succeeds, or fails with an error it does not
// call worth retrying, or has been tried the attempts set (WithAttempts,
// WithTableProperties, else DefaultCommitAttempts), waiting between
// attempts with exponential backoff and full jitter. try reports with retry
// whether its error is worth another attempt: IsTransient, typically, or
// IsConflict for an operation that builds its request anew each time. Each
// retry is logged (WithLogger) as a warning naming the table, what failed,
// the attempt, the wait and the error.
//
// Retry returns nil, try's error that was not worth retrying, the last
// error after the last attempt (saying how many were made), or the
// context's error when it ends during a wait.
func Retry(ctx context.Context, ident table.Identifier, what string,
	try func(ctx context.Context) (retry bool, err error), opts ...CommitOption) error {
	cfg := newConfig(opts)
	return retryWith(ctx, &cfg, ident, what, try)
}

// retryWith is Retry with the configuration cfg, which try may change: the
// attempts and waits are those of cfg after each attempt.
func retryWith(ctx context.Context, cfg *commitConfig, ident table.Identifier, what string,
	try func(ctx context.Context) (retry bool, err error)) error {
	return retrySubject(ctx, cfg, "table", strings.Join(ident, "."), what, try)
}

// retrySubject is retryWith of an operation on something other than a
// table: kind names it in the log records ("table", "catalog"), name in
// the errors.
func retrySubject(ctx context.Context, cfg *commitConfig, kind, name, what string,
	try func(ctx context.Context) (retry bool, err error)) error {
	start := cfg.now()
	for attempt := 1; ; attempt++ {
		retry, err := try(ctx)
		if err == nil || !retry || ctx.Err() != nil {
			return err
		}
		p := cfg.policy()
		wait := p.wait(attempt)
		switch {
		case cfg.budget > 0 && cfg.now().Sub(start)+wait > cfg.budget:
			return fmt.Errorf("%s of %s: gave up after %d attempts in %s (the time budget): %w",
				what, name, attempt, cfg.now().Sub(start).Round(time.Millisecond), err)
		case cfg.budget == 0 && attempt >= p.attempts:
			return fmt.Errorf("%s of %s: gave up after %d attempts: %w", what, name, attempt, err)
		}
		if cfg.log != nil {
			of := any(p.attempts)
			if cfg.budget > 0 {
				of = "budget " + cfg.budget.String()
			}
			cfg.log.Warn(what+" failed; retrying", kind, name,
				"attempt", attempt+1, "of", of, "wait", wait, "error", err.Error())
		}
		if err := cfg.sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s of %s: %w", what, name, err)
		}
	}
}

// LoadTable loads the table ident from cat, retrying transient failures
// (IsTransient) as Retry does. A table that does not exist is an error
// saying whether its namespace does (`namespace "dbx" does not exist`, or
// `table db.t does not exist`), which matches iceberg-go's ErrNoSuchTable
// either way, and ErrNoSuchNamespace for a missing namespace.
func LoadTable(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, opts ...CommitOption) (*table.Table, error) {
	var tbl *table.Table
	err := Retry(ctx, ident, "table load", func(ctx context.Context) (bool, error) {
		var err error
		tbl, err = cat.LoadTable(ctx, ident)
		return IsTransient(err), err
	}, opts...)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return nil, notFound(ctx, cat, ident, err)
	}
	return tbl, err
}

// notFoundError is a table that does not exist, said plainly; it matches
// what the catalog returned (ErrNoSuchTable, or ErrNoSuchNamespace) and
// ErrNoSuchTable.
type notFoundError struct {
	msg  string
	errs []error
}

func (e *notFoundError) Error() string   { return e.msg }
func (e *notFoundError) Unwrap() []error { return e.errs }

// notFound says which of table and namespace is missing; the catalog's
// own error err (iceberg-go's "table does not exist: [db t]") says neither
// plainly.
func notFound(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, err error) error {
	errs := []error{err, icecatalog.ErrNoSuchTable}
	if len(ident) < 2 {
		return &notFoundError{fmt.Sprintf("table %s does not exist", strings.Join(ident, ".")), errs}
	}
	ns := ident[:len(ident)-1]
	exists, nerr := cat.CheckNamespaceExists(ctx, ns)
	if nerr == nil && !exists || nerr != nil && errors.Is(nerr, icecatalog.ErrNoSuchNamespace) {
		return &notFoundError{fmt.Sprintf("namespace %q does not exist", strings.Join(ns, ".")), append(errs, icecatalog.ErrNoSuchNamespace)}
	}
	return &notFoundError{fmt.Sprintf("table %s does not exist", strings.Join(ident, ".")), errs}
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
