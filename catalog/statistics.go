package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
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
// reloads the table and calls prepare again. It does the same, keeping the
// files, after a transient error (IsTransient) of the load, the prepare or
// the commit. It makes the attempts WithAttempts sets, else those of the
// table's commit.retry.* properties (see WithTableProperties), else
// DefaultCommitAttempts, and logs each retry (WithLogger). An empty change
// commits nothing.
//
// After a commit error other than a refusal the files are kept: the catalog
// may have applied the commit all the same (a REST call that timed out, a
// 503, say), and a stray file costs less than a table whose statistics name
// a deleted one. For the same reason the error wraps table.ErrCommitFailed
// only when no attempt may have been applied, so that a caller may delete
// its own files then.
//
// Writers that replace the statistics file of the same snapshot at the same
// time do not conflict: the last commit wins, and blobs that only the file it
// replaced held are lost. Iceberg has no requirement that could catch this.
func CommitStatistics(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, prepare Prepare, opts ...CommitOption) (*table.Table, error) {
	cfg := newConfig(opts)
	fromTable := cfg.props == nil
	var committed *table.Table
	var unknown error // a commit error after which the catalog may have applied the attempt
	err := retryWith(ctx, &cfg, ident, "statistics commit", func(ctx context.Context) (bool, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return IsTransient(err), fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err)
		}
		if fromTable {
			cfg.props = tbl.Properties()
		}
		committed, err = commitOnce(ctx, cat, ident, tbl, prepare)
		var cerr *commitError
		switch {
		case err == nil:
			return false, nil
		case !errors.As(err, &cerr):
			return IsTransient(err), err // loading or preparing: nothing was committed
		case errors.Is(err, table.ErrCommitFailed):
			return true, err // refused, the attempt's files discarded
		case IsTransient(err):
			unknown = err
			return true, err
		}
		return false, err
	})
	if err != nil && unknown != nil && errors.Is(err, table.ErrCommitFailed) {
		// Every attempt was not refused: the one that failed with
		// unknown may have been applied, and with it files the caller
		// would delete after a refusal.
		return nil, fmt.Errorf("%v (an earlier attempt may have been committed: %v)", err, unknown)
	}
	return committed, err
}

// commitError is the error of the catalog's CommitTable in a commit
// attempt.
type commitError struct{ err error }

func (e *commitError) Error() string { return e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// commitOnce prepares the change to tbl and commits it. An error of the
// commit itself is a *commitError; when it is a refusal
// (table.ErrCommitFailed) the attempt's files are discarded.
func commitOnce(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, tbl *table.Table, prepare Prepare) (*table.Table, error) {
	name := strings.Join(ident, ".")
	change, discard, err := prepare(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("prepare statistics of %s: %w", name, err)
	}
	if discard == nil {
		discard = func() {}
	}
	meta := tbl.Metadata()
	if err := change.validate(meta); err != nil {
		discard()
		return nil, fmt.Errorf("statistics of %s: %w", name, err)
	}
	updates := change.updates()
	if len(updates) == 0 {
		discard()
		return tbl, nil
	}
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
	newMeta, loc, err := cat.CommitTable(ctx, ident, reqs, updates)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			discard()
		}
		return nil, fmt.Errorf("commit statistics of %s: %w", name, &commitError{err})
	}
	return table.New(ident, newMeta, loc, tbl.FS, cat), nil
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
		// A statistics entry of a snapshot no longer in the table (a set
		// that raced an expiry: Iceberg's set-statistics does not check)
		// may be removed, and must be, or it stays for good.
		if meta.SnapshotByID(id) == nil && dangling(meta, id) && !seen[id] {
			seen[id] = true
			continue
		}
		if err := snapshot(id); err != nil {
			return err
		}
	}
	return nil
}

// dangling reports whether table metadata lists a statistics file of the
// snapshot id.
func dangling(meta table.Metadata, id int64) bool {
	for sf := range meta.Statistics() {
		if sf.SnapshotID == id {
			return true
		}
	}
	return false
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
