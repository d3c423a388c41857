package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// A StatisticsChange is what one commit does to a table's statistics: set
// (add or replace) statistics files of snapshots, and remove those of other
// snapshots.
type StatisticsChange struct {
	Set    []table.StatisticsFile
	Remove []int64
}

// A Prepare builds a change against the table as it is now. It is called
// again, with the reloaded table, after a conflict; it may write files (for
// example a new Puffin file that must include the other tools' blobs of the
// snapshot's current statistics file) and returns discard, which removes them
// when the attempt is known not to have committed. discard may be nil. A
// Prepare that fails leaves nothing behind.
type Prepare func(ctx context.Context, tbl *table.Table) (change StatisticsChange, discard func(), err error)

// A CommitOption tunes CommitStatistics.
type CommitOption func(*commitConfig)

type commitConfig struct {
	attempts int
	sleep    func(context.Context, time.Duration) error
	log      *slog.Logger // nil: retries are not logged
}

// DefaultCommitAttempts is how many times CommitStatistics tries a commit
// that keeps conflicting with other commits before giving up.
const DefaultCommitAttempts = 8

// Retry backoff: 50 ms doubling per attempt up to 2 s, jittered so that
// writers that conflicted once do not retry in lockstep.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// WithAttempts sets how many times a conflicting commit is tried in all
// (DefaultCommitAttempts unless set; at least 1).
func WithAttempts(n int) CommitOption {
	return func(c *commitConfig) { c.attempts = max(n, 1) }
}

// WithLogger logs each retry after a conflict to l, as a warning with the
// table, the attempt, the wait and the conflict, so that an operator sees a
// table whose commits keep racing others.
func WithLogger(l *slog.Logger) CommitOption {
	return func(c *commitConfig) { c.log = l }
}

// WithSleep replaces how CommitStatistics waits between attempts, for tests.
// sleep must return early with an error when ctx is done.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) CommitOption {
	return func(c *commitConfig) { c.sleep = sleep }
}

// CommitStatistics commits the change prepare builds to the statistics of
// the table ident, and returns the table as committed.
//
// The commit carries only set-statistics and remove-statistics updates and
// the one requirement that the table is still the one loaded (its UUID), so
// it never changes anything else and does not conflict with appends or other
// commits that leave the table in place: the catalog applies it to the
// table's metadata as the catalog has it. When the catalog still reports a
// conflict (table.ErrCommitFailed: a concurrent commit moved the metadata
// during this one), CommitStatistics discards the attempt's files, waits,
// reloads the table and calls prepare again, up to the attempts WithAttempts
// sets. An empty change commits nothing.
//
// On another commit error the files are kept: the catalog may have applied
// the commit all the same (a REST call that timed out, say), and a stray file
// costs less than a table whose statistics name a deleted one.
//
// Writers that replace the statistics file of the same snapshot at the same
// time do not conflict: the last commit wins, and blobs that only the file it
// replaced held are lost. Iceberg has no requirement that could catch this.
func CommitStatistics(ctx context.Context, cat icecat.Catalog, ident table.Identifier, prepare Prepare, opts ...CommitOption) (*table.Table, error) {
	cfg := commitConfig{attempts: DefaultCommitAttempts, sleep: sleep}
	for _, opt := range opts {
		opt(&cfg)
	}
	var conflict error
	for attempt := range cfg.attempts {
		if attempt > 0 {
			wait := backoff(attempt)
			if cfg.log != nil {
				cfg.log.Warn("statistics commit conflicted with another commit; retrying",
					"table", strings.Join(ident, "."), "attempt", attempt+1, "of", cfg.attempts, "wait", wait, "error", conflict.Error())
			}
			if err := cfg.sleep(ctx, wait); err != nil {
				return nil, fmt.Errorf("commit statistics of %s: %w", strings.Join(ident, "."), err)
			}
		}
		tbl, conflicted, err := commitOnce(ctx, cat, ident, prepare)
		if !conflicted {
			return tbl, err
		}
		conflict = err
	}
	return nil, fmt.Errorf("%d attempts conflicted with other commits: %w", cfg.attempts, conflict)
}

// commitOnce loads the table, prepares the change and commits it. conflicted
// reports a commit the catalog refused with table.ErrCommitFailed, worth
// retrying; a prepare or reload error wrapping ErrCommitFailed is not.
func commitOnce(ctx context.Context, cat icecat.Catalog, ident table.Identifier, prepare Prepare) (_ *table.Table, conflicted bool, _ error) {
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, false, fmt.Errorf("load table %s: %w", name, err)
	}
	change, discard, err := prepare(ctx, tbl)
	if err != nil {
		return nil, false, fmt.Errorf("prepare statistics of %s: %w", name, err)
	}
	if discard == nil {
		discard = func() {}
	}
	meta := tbl.Metadata()
	if err := change.validate(meta); err != nil {
		discard()
		return nil, false, fmt.Errorf("statistics of %s: %w", name, err)
	}
	updates := change.updates()
	if len(updates) == 0 {
		discard()
		return tbl, false, nil
	}
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
	newMeta, loc, err := cat.CommitTable(ctx, ident, reqs, updates)
	if err != nil {
		conflicted = errors.Is(err, table.ErrCommitFailed)
		if conflicted {
			discard()
		}
		return nil, conflicted, fmt.Errorf("commit statistics of %s: %w", name, err)
	}
	return table.New(ident, newMeta, loc, tbl.FS, cat), false, nil
}

// validate checks the change against the metadata it was built on, so that a
// change that cannot be right fails before it reaches the catalog, which
// checks none of this.
func (c StatisticsChange) validate(meta table.Metadata) error {
	seen := make(map[int64]bool, len(c.Set)+len(c.Remove))
	snapshot := func(id int64) error {
		if meta.SnapshotByID(id) == nil {
			return fmt.Errorf("snapshot %d is not in the table", id)
		}
		if seen[id] {
			return fmt.Errorf("snapshot %d is changed twice", id)
		}
		seen[id] = true
		return nil
	}
	for _, f := range c.Set {
		if err := snapshot(f.SnapshotID); err != nil {
			return err
		}
		switch {
		case f.StatisticsPath == "":
			return fmt.Errorf("statistics file of snapshot %d has no path", f.SnapshotID)
		case f.FileSizeInBytes <= 0:
			return fmt.Errorf("statistics file %s: size %d", f.StatisticsPath, f.FileSizeInBytes)
		case f.FileFooterSizeInBytes <= 0 || f.FileFooterSizeInBytes >= f.FileSizeInBytes:
			return fmt.Errorf("statistics file %s: footer size %d does not fit in file size %d",
				f.StatisticsPath, f.FileFooterSizeInBytes, f.FileSizeInBytes)
		}
	}
	for _, id := range c.Remove {
		if err := snapshot(id); err != nil {
			return err
		}
	}
	return nil
}

// updates returns the table updates that make the change.
func (c StatisticsChange) updates() []table.Update {
	updates := make([]table.Update, 0, len(c.Set)+len(c.Remove))
	for _, f := range c.Set {
		if f.BlobMetadata == nil {
			f.BlobMetadata = []table.BlobMetadata{} // the spec's list is required: [] rather than null
		}
		updates = append(updates, table.NewSetStatisticsUpdate(f))
	}
	for _, id := range c.Remove {
		updates = append(updates, table.NewRemoveStatisticsUpdate(id))
	}
	return updates
}

// StatisticsFileOf returns the statistics file of snapshot snapshotID in
// meta, if it has one. A writer replacing it carries over the blobs of other
// tools it holds, since a snapshot has one statistics file.
func StatisticsFileOf(meta table.Metadata, snapshotID int64) (table.StatisticsFile, bool) {
	for f := range meta.Statistics() {
		if f.SnapshotID == snapshotID {
			return f, true
		}
	}
	return table.StatisticsFile{}, false
}

// backoff is the wait before the given attempt (1 for the first retry):
// exponential, capped, with the upper half jittered.
func backoff(attempt int) time.Duration {
	d := min(firstBackoff<<min(attempt-1, 8), maxBackoff)
	return d/2 + rand.N(d/2+1)
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
