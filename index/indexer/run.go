package indexer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/runfiles"
	"github.com/icebloom/icebloom/index/segment"
)

// A sharded run (docs/format.md §2.5) keeps its state in a directory of
// its own under the table's metadata location, <metadata>/icebloom-runs/<run>:
// its record, the shards' leases and markers, and linked.json once its one
// linking commit landed. Package index/runfiles reads and writes those
// files; this package runs the shards that use them (shard.go), leaves live
// runs' files to them (sync.go), and reports the runs (Runs).
// Nothing there is table metadata: the catalog sees one commit per run.

// RunsDir is the directory, under a table's metadata location, holding
// the directories of its sharded runs.
const RunsDir = runfiles.Dir

// RunLease is how long a sharded run counts as live after one of its
// shards last touched its lease: sync and maintain leave the data files of
// a live run's snapshot to the run. Shards touch their lease every quarter
// of it while they work, linking included.
const RunLease = runfiles.LeaseTerm

// MinRunLease is the shortest lease term a sync or expire may be given
// (Options.RunLease): twice the interval at which working shards touch
// their leases, so a working shard is never taken for a stalled one.
const MinRunLease = runfiles.LeaseTerm / 2

// CheckRunLease refuses a lease term a working shard could outlive
// between two touches; 0 is the default, RunLease.
func CheckRunLease(lease time.Duration) error {
	if lease != 0 && lease < MinRunLease {
		return fmt.Errorf("run lease %s: want at least %s, twice the %s at which working shards touch their leases",
			lease, MinRunLease, runfiles.LeaseTerm/4)
	}
	return nil
}

// LiveRuns returns the sharded runs of the table that are live under the
// lease term (0: RunLease) — not complete, a shard touched its lease
// within it — by the snapshot each indexes: an expiry must keep those
// snapshots, or the runs' late shards cannot finish.
func LiveRuns(tbl *table.Table, fs icebergio.IO, lease time.Duration) (map[int64]string, error) {
	if err := CheckRunLease(lease); err != nil {
		return nil, err
	}
	lease = cmp.Or(lease, RunLease)
	root, err := runfiles.RootOf(tbl)
	if err != nil {
		return nil, err
	}
	runs, err := runfiles.Walk(fs, root, "")
	if err != nil {
		return nil, err
	}
	live := map[int64]string{}
	now := clock()
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		st := runs[name]
		if st.Linked != nil || st.Record == nil || !now.Before(st.Touched.Add(lease)) {
			continue
		}
		if err := st.ReadRecords(fs); err != nil {
			return nil, err
		}
		if _, ok := live[st.Record.SnapshotID]; !ok {
			live[st.Record.SnapshotID] = st.Record.Run
		}
	}
	return live, nil
}

// RunCommitBudget bounds the retries of a run's linking commit by time: a
// busy catalog delays it, however many shards finish together, but cannot
// fail it by a count of attempts.
const RunCommitBudget = 10 * time.Minute

// ErrRunComplete is the error of a shard of a run that is complete already:
// its linking commit landed, and a rerun would only index its files twice.
var ErrRunComplete = errors.New("the run is complete")

// ErrRunShards is the error of a shard whose shard count is not its run's:
// the count is fixed when the run starts.
var ErrRunShards = runfiles.ErrShards

// RunFiles tells gc (maintenance.GC) what the table's sharded runs hold:
// keep, the shard segment files the markers of runs touched after cutoff
// name — a live run's files, which its linking commit will link however old
// they are — and stale, the markers and leases of runs last touched before
// it, which nothing needs any more (a complete run's record and linked.json
// stay, so its id stays refused). Segment files of dead runs are not in
// keep: gc deletes them as any unreferenced index file (runfiles.Files).
func RunFiles(tbl *table.Table, fs icebergio.IO, cutoff time.Time) (keep map[string]bool, stale []string, err error) {
	root, err := runfiles.RootOf(tbl)
	if err != nil {
		return nil, nil, err
	}
	return runfiles.Files(fs, root, cutoff)
}

// RunStatus is how far a sharded run is, as `icebloom inspect` shows it.
type RunStatus struct {
	Run        string `json:"run"`
	Shards     int    `json:"shards"`
	SnapshotID int64  `json:"snapshot_id"`
	// ShardsCommitted counts the shards whose segment files are complete
	// (their markers written); MissingShards are the others.
	ShardsCommitted int   `json:"shards_committed"`
	MissingShards   []int `json:"missing_shards"`
	// Complete is set once the run's linking commit landed; Live while it
	// is not and a shard touched its lease within RunLease.
	Complete bool `json:"complete"`
	Live     bool `json:"live"`
	// FilesCovered counts the live data files whose filters the index
	// takes from the run's shard segments: while any of them is linked,
	// only files whose every filter lies in one of them (not those the
	// run's segments hold that other segments cover instead: a sync after
	// the lease expired); once none is linked (merged), the files of its
	// segments that the index covers.
	FilesCovered int `json:"files_covered_by_run"`
	// MissingShardFiles counts the live data files of the missing shards,
	// and CoveredOtherwise those of them the index covers all the same
	// (a sync after the lease expired, another run).
	MissingShardFiles int `json:"missing_shard_files"`
	CoveredOtherwise  int `json:"missing_shard_files_covered_otherwise"`
}

// Runs reports the table's sharded runs whose directories hold a record,
// measured against the live data files live and the index ix: a file
// counts as covered when ix has a filter of it for each of fields.
func Runs(tbl *table.Table, fs icebergio.IO, ix *index.TableIndex, live []segment.File, fields []int) ([]RunStatus, error) {
	root, err := runfiles.RootOf(tbl)
	if err != nil {
		return nil, err
	}
	runs, err := runfiles.Walk(fs, root, "")
	if err != nil {
		return nil, err
	}
	covered := func(f segment.File) bool {
		for _, id := range fields {
			if _, ok := ix.Lookup(f.Path, f.Size, id); !ok {
				return false
			}
		}
		return len(fields) > 0
	}
	isLive := map[segment.File]bool{}
	for _, f := range live {
		isLive[f] = true
	}
	now := clock()
	var out []RunStatus
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		st := runs[name]
		if st.Record == nil {
			continue
		}
		if err := st.ReadRecords(fs); err != nil {
			return nil, err
		}
		rs := RunStatus{Run: st.Record.Run, Shards: st.Record.Shards, SnapshotID: st.Record.SnapshotID,
			Complete: st.Linked != nil, Live: st.Live(now), MissingShards: []int{}}
		done := st.Markers[rs.Shards]
		rs.ShardsCommitted = len(done)
		var segs []index.Segment
		for i := range rs.Shards {
			path, ok := done[i]
			if !ok {
				rs.MissingShards = append(rs.MissingShards, i)
				continue
			}
			var m runfiles.Marker
			if err := runfiles.ReadJSON(fs, path, &m); err != nil {
				return nil, fmt.Errorf("sharded run %s: %w", name, err)
			}
			if m.Files == 0 {
				continue
			}
			seg, err := index.ReadSegment(fs, index.LinkedFile(table.StatisticsFile{SnapshotID: m.SnapshotID}, m.Segment))
			if err != nil {
				continue // deleted by gc, or corrupt: it covers nothing
			}
			segs = append(segs, seg)
		}
		rs.FilesCovered = filesFromRun(ix, segs, isLive, fields, covered)
		if len(rs.MissingShards) > 0 && rs.Shards > 0 {
			missing := map[int]bool{}
			for _, i := range rs.MissingShards {
				missing[i] = true
			}
			for _, f := range live {
				if missing[ShardOf(f.Path, rs.Shards)] {
					rs.MissingShardFiles++
					if covered(f) {
						rs.CoveredOtherwise++
					}
				}
			}
		}
		out = append(out, rs)
	}
	return out, nil
}

// filesFromRun counts the live files whose filters the index takes from
// the run's segments segs: while the index links any of them, the files
// whose filter of every field lies in one of them; else (merged into
// another segment, or never linked) the files of segs it covers.
func filesFromRun(ix *index.TableIndex, segs []index.Segment, isLive map[segment.File]bool, fields []int, covered func(segment.File) bool) int {
	ours := map[string]bool{}
	for _, seg := range segs {
		ours[seg.File.StatisticsPath] = true
	}
	linked := slices.ContainsFunc(ix.Segments(), func(seg index.Segment) bool { return seg.Link != nil && ours[seg.File.StatisticsPath] })
	fromRun := func(f segment.File) bool {
		for _, id := range fields {
			if flt, ok := ix.Lookup(f.Path, f.Size, id); !ok || !ours[flt.Path] {
				return false
			}
		}
		return len(fields) > 0
	}
	n := 0
	for _, seg := range segs {
		dir := seg.Directory()
		for k := range dir.Files.Len() {
			if f := dir.File(k); isLive[f] && (linked && fromRun(f) || !linked && covered(f)) {
				n++
			}
		}
	}
	return n
}
