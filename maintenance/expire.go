// Package maintenance keeps a table's index true and cheap as the table
// lives: expiring snapshots without losing coverage, deleting orphan index
// files, and the scheduled run that does it all (with sync and index
// compaction from index/indexer) for many tables.
package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
)

// ExpireOptions choose the snapshots to expire, as iceberg-go's
// ExpireSnapshots does: those older than OlderThan, keeping at least the
// RetainLast most recent (and always the current one).
type ExpireOptions struct {
	// OlderThan, when set, is the age past which snapshots expire; 0 is now,
	// expiring every snapshot but those retained. nil leaves the table's
	// history.expire.max-snapshot-age-ms (iceberg-go's default: 5 days).
	OlderThan *time.Duration
	// RetainLast is how many of the most recent snapshots are kept whatever
	// their age; 0 leaves the table's history.expire.min-snapshots-to-keep.
	RetainLast int
	// Logger, when set, gets the warnings that are not errors: the retries
	// of the expiry's commit and those of the index fold's
	// (indexer.CompactOptions.Logger).
	Logger *slog.Logger
	// MemoryBudget bounds the buffers of the index fold, as a compaction's
	// (indexer.CompactOptions.MemoryBudget); 0 means the default.
	MemoryBudget int64
	// RunLease is how long a sharded run counts as live after a shard
	// last touched its lease (0: indexer.RunLease): the snapshot a live
	// run indexes is kept.
	RunLease time.Duration
}

// ExpireSummary reports an expiry.
type ExpireSummary struct {
	SnapshotsExpired []int64                 `json:"snapshots_expired"`
	Folded           *indexer.CompactSummary `json:"folded,omitempty"`
	// KeptForRuns are the snapshots the expiry would have removed that it
	// kept, with every later one, because live sharded runs index them.
	KeptForRuns []int64 `json:"kept_for_runs,omitempty"`
}

// maxExpireFolds bounds the folds of one attempt at an expiry: each is
// followed by a new plan, on the table as the fold left it.
const maxExpireFolds = 5

// Expire expires snapshots with iceberg-go, but first folds the index
// segments attached to the snapshots about to expire into one segment of
// the current snapshot, dropping the entries of data files only those
// snapshots held. Expiry deletes the statistics files of expired snapshots,
// so without the fold the live files they covered would lose coverage.
//
// A commit that conflicts with another (catalog.IsConflict: an append
// moved the branch since the plan) is planned again on the table as it is
// now and retried, as are transient catalog errors (catalog.IsTransient)
// of the loads and the commit, with backoff, up to the table's
// commit.retry.* properties or catalog.DefaultCommitAttempts; each retry is
// logged to o.Logger.
func Expire(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o ExpireOptions) (*ExpireSummary, error) {
	name := strings.Join(ident, ".")
	sum := &ExpireSummary{SnapshotsExpired: []int64{}}
	var retry []catalog.CommitOption
	if o.Logger != nil {
		retry = append(retry, catalog.WithLogger(o.Logger))
	}
	tbl, err := catalog.LoadTable(ctx, cat, ident, retry...)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	retry = append(retry, catalog.WithTableProperties(tbl.Properties()))
	err = catalog.Retry(ctx, ident, "snapshot expiry", func(ctx context.Context) (bool, error) {
		for range maxExpireFolds {
			if tbl == nil {
				var err error
				if tbl, err = cat.LoadTable(ctx, ident); err != nil {
					return catalog.IsTransient(err), fmt.Errorf("load table %s: %w", name, err)
				}
			}
			now := tbl
			tbl = nil // the next plan loads the table anew
			opts, kept, err := keepLiveRuns(ctx, now, o)
			if err != nil {
				return false, fmt.Errorf("plan expiry of %s: %w", name, err)
			}
			sum.KeptForRuns = kept
			expiring, err := plan(now, opts)
			if err != nil {
				return false, fmt.Errorf("plan expiry of %s: %w", name, err)
			}
			if len(expiring) == 0 {
				return false, nil
			}
			if segmentOn(now, expiring) {
				if sum.Folded, err = indexer.Compact(ctx, cat, ident, indexer.CompactOptions{Expiring: expiring, Logger: o.Logger, MemoryBudget: o.MemoryBudget}); err != nil {
					return false, fmt.Errorf("fold the index of %s before expiry: %w", name, err)
				}
				continue // re-plan on the table as the fold left it
			}
			txn := now.NewTransaction()
			if err := txn.ExpireSnapshots(expireOpts(opts)...); err != nil {
				return false, fmt.Errorf("expire snapshots of %s: %w", name, err)
			}
			if _, err := txn.Commit(ctx); err != nil {
				return catalog.IsConflict(err) || catalog.IsTransient(err), fmt.Errorf("expire snapshots of %s: %w", name, err)
			}
			sum.SnapshotsExpired = expiring
			return false, nil
		}
		return false, fmt.Errorf("expire snapshots of %s: the index kept changing under the fold", name)
	}, retry...)
	if err != nil {
		return nil, err
	}
	return sum, nil
}

// keepLiveRuns returns the options of an expiry that keeps the snapshots
// live sharded runs index (indexer.LiveRuns): when o would expire one, its
// age limit is raised to just above that snapshot's age, so it and every
// later snapshot stay (iceberg-go expires by age and count, not by id).
// kept lists the snapshots so saved. A plan that would still expire one
// is an error saying which run needs it.
func keepLiveRuns(ctx context.Context, tbl *table.Table, o ExpireOptions) (ExpireOptions, []int64, error) {
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return o, nil, err
	}
	live, err := indexer.LiveRuns(tbl, fs, o.RunLease)
	if err != nil || len(live) == 0 {
		return o, nil, err
	}
	expiring, err := plan(tbl, o)
	if err != nil {
		return o, nil, err
	}
	var kept []int64
	var oldest int64
	for _, id := range expiring {
		if _, ok := live[id]; ok {
			kept = append(kept, id)
			if ts := tbl.SnapshotByID(id).TimestampMs; oldest == 0 || ts < oldest {
				oldest = ts
			}
		}
	}
	if len(kept) == 0 {
		return o, nil, nil
	}
	// A second more than its age: the expiry is staged right after this
	// plan, well within it.
	age := time.Since(time.UnixMilli(oldest)) + time.Second
	o.OlderThan = &age
	again, err := plan(tbl, o)
	if err != nil {
		return o, nil, err
	}
	for _, id := range again {
		if run, ok := live[id]; ok {
			return o, nil, fmt.Errorf("snapshot %d is indexed by the live sharded run %s and would expire even so: run expire again once the run is complete or its lease has ended", id, run)
		}
	}
	return o, kept, nil
}

func expireOpts(o ExpireOptions) []table.ExpireSnapshotsOpt {
	var opts []table.ExpireSnapshotsOpt
	if o.OlderThan != nil {
		opts = append(opts, table.WithOlderThan(*o.OlderThan))
	}
	if o.RetainLast > 0 {
		opts = append(opts, table.WithRetainLast(o.RetainLast))
	}
	return opts
}

// plan asks iceberg-go which snapshots an expiry with o would remove, by
// staging it without committing.
func plan(tbl *table.Table, o ExpireOptions) (expiring []int64, err error) {
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(expireOpts(o)...); err != nil {
		return nil, err
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return nil, err
	}
	retained := staged.Metadata().Snapshots()
	for _, s := range tbl.Metadata().Snapshots() {
		if !slices.ContainsFunc(retained, func(r table.Snapshot) bool { return r.SnapshotID == s.SnapshotID }) {
			expiring = append(expiring, s.SnapshotID)
		}
	}
	return expiring, nil
}

// segmentOn reports whether an index segment is attached to one of the
// snapshots.
func segmentOn(tbl *table.Table, snapshots []int64) bool {
	for sf := range tbl.Metadata().Statistics() {
		if slices.Contains(snapshots, sf.SnapshotID) && index.HoldsEntries(sf) {
			return true
		}
	}
	return false
}
