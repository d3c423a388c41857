package indexer

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/runfiles"
	"github.com/icebloom/icebloom/index/segment"
)

// Shard makes a build, sync or rebuild one of Count shards of a run that
// index a snapshot together, on as many machines: it reads only the data
// files ShardOf assigns to Index and writes them into a segment file of its
// own, without committing. The run's count and snapshot are fixed by its
// first shard; the shard that finds every shard's segment complete makes
// the run's one commit, linking them all (docs/format.md §2.5), and only it
// compacts the index, as a sync would, past Options.CompactAbove segments.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Run names the run, the same for all its shards: it is recorded with
	// each shard's segment, so the index tells which shards of a run are
	// committed.
	Run string `json:"run"`
}

// ShardOf returns the shard of count that indexes the data file at
// location: xxHash64 (seed 0) of the location's bytes exactly as the
// manifest lists them, modulo count. It never changes, so shards agree
// without talking to each other, and a rerun reads the same files.
func ShardOf(location string, count int) int {
	return int(hashing.Bytes([]byte(location)) % uint64(count))
}

// ParseShard parses "I/N", the form of the --shard flag.
func ParseShard(s string) (index, count int, err error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("shard %q is not I/N (for example 0/4)", s)
	}
	return index, count, (&Shard{Index: index, Count: count}).check()
}

// check refuses a shard outside its count.
func (s *Shard) check() error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("shard count %d: it must be at least 1", s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard %d of %d: the index must be in [0, %d)", s.Index, s.Count, s.Count)
	}
	return nil
}

// DefaultRun names a sharded run that was given no name: after the
// snapshot its shards index and their count, so shards started on one
// snapshot agree, and a rerun of a failed shard joins its run.
func DefaultRun(snapshotID int64, count int) string {
	return fmt.Sprintf("snapshot-%d-of-%d", snapshotID, count)
}

// shardFilter returns whether the job's shard indexes the data file at a
// path; nil for a job that is not a shard, which indexes every file.
func (j *job) shardFilter() func(path string) bool {
	sh := j.o.Shard
	if sh == nil {
		return nil
	}
	return func(path string) bool { return ShardOf(path, sh.Count) == sh.Index }
}

// linkTo returns the link to a segment file.
func linkTo(path string, size, footerSize int64, dir *segment.Result, run *Shard) segment.Link {
	l := segment.Link{Path: path, Size: size, FooterSize: footerSize,
		DirectoryOffset: dir.DirectoryOffset, DirectoryLength: dir.DirectoryLength}
	for _, f := range dir.Fields {
		l.Fields = append(l.Fields, int(f))
	}
	if run != nil {
		l.Run, l.Shard, l.Shards = run.Run, run.Index, run.Count
	}
	return l
}

// linkable returns the link to a carried segment a shard links rather than
// copies: a v2 segment without links of its own, whose directory's place
// table metadata records. ok is false for any other segment, whose filters
// are copied.
func linkable(seg index.Segment) (segment.Link, bool) {
	off, length, ok := segment.DirectoryPlace(seg.File)
	dir := seg.Directory()
	if !ok || dir == nil || len(dir.Links) > 0 || len(seg.Entries) > 0 || len(dir.Groups) == 0 {
		return segment.Link{}, false
	}
	fields := map[int]bool{}
	for _, g := range dir.Groups {
		fields[g.FieldID] = true
	}
	return segment.Link{Path: seg.File.StatisticsPath, Size: seg.File.FileSizeInBytes, FooterSize: seg.File.FileFooterSizeInBytes,
		DirectoryOffset: off, DirectoryLength: length, Fields: slices.Sorted(maps.Keys(fields))}, true
}

// ShardsCommitted counts, by run, the distinct shards whose segments the
// index links, and the shard count each run declared.
func ShardsCommitted(ix *index.TableIndex) map[string]indexfile.RunShards {
	var links []segment.Link
	for _, seg := range ix.Segments() {
		if seg.Link != nil {
			links = append(links, *seg.Link)
		}
	}
	return indexfile.ShardRuns(links)
}

// ShardSummary reports a shard's run: the shard, how many of its run's
// shards had written their segments when it looked, and whether its
// commit linked the run.
type ShardSummary struct {
	Shard
	// Committed counts the run's shards whose segment files were complete
	// (their markers written) when this shard last looked, its own included.
	Committed int `json:"committed"`
	// Linked is set when this shard found every shard of its run complete
	// and its one commit linking them landed; LinkedBefore when another's
	// had (the run is complete and this shard committed nothing).
	Linked       bool `json:"linked"`
	LinkedBefore bool `json:"linked_before,omitempty"`
	// Copied counts the shard segments whose filters the linking commit
	// copied, leaving out those of files the index covered otherwise (a
	// sync after the run's lease expired), instead of linking them.
	Copied int `json:"copied,omitempty"`
	// Merged is set when this shard linked its run and then merged the
	// index (Summary.Compacted tells how).
	Merged bool `json:"merged"`
}

// mergeRun compacts the index once sum's shard linked its run, as a sync
// compacts: when the index has more segments than o.CompactAbove (0:
// DefaultCompactAbove, negative: never), linked ones included. Only the
// shard whose linking commit landed merges, so a run merges at most once;
// a merge it does not run is left to the next maintain. After a rebuild's
// linking it always compacts, keeping only the run's entries, so the index
// is the rebuilt one.
func mergeRun(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options, sum *Summary, rebuild bool) error {
	sh := sum.Shard
	if sh == nil || !sh.Linked {
		return nil
	}
	limit := cmp.Or(o.CompactAbove, DefaultCompactAbove)
	if !rebuild && (limit < 0 || sum.Segments <= limit) {
		return nil
	}
	co := o.compactOptions()
	if rebuild {
		co.OnlyRun = sh.Run
	}
	cs, err := Compact(ctx, cat, ident, co)
	if err != nil {
		return fmt.Errorf("merge the %d shards of run %s: %w", sh.Count, sh.Run, err)
	}
	sum.Compacted, sum.Segments, sh.Merged = cs, cs.SegmentsAfter, true
	if cs.StatisticsPath != "" {
		sum.StatisticsPath = cs.StatisticsPath
	}
	return nil
}

// openRun joins the job's shard to its run before anything is read: it
// refuses a run that is complete or has another shard count, records the
// run when it is the first shard (its count and snapshot), and starts the
// shard's lease. It returns the snapshot the run indexes: the recorded
// one, so that shards started after a commit of the table still index the
// snapshot their run began on.
func (j *job) openRun(snapshotID int64) (int64, error) {
	sh := j.o.Shard
	if err := runfiles.CheckID(sh.Run); err != nil {
		return 0, err
	}
	dir, err := runfiles.DirOf(j.tbl, sh.Run)
	if err != nil {
		return 0, err
	}
	st, err := runfiles.Read(j.fs, dir)
	if err != nil {
		return 0, err
	}
	if err := st.CheckCount(sh.Run, sh.Count); err != nil {
		return 0, err
	}
	if st.Linked != nil {
		return 0, fmt.Errorf("run %s of %s: its %d shards were linked at %s (%s, %w); start another run with another --run-id, or sync",
			sh.Run, strings.Join(j.ident, "."), st.Linked.Shards, st.Linked.Linked.Format(time.RFC3339), st.Linked.StatisticsPath, ErrRunComplete)
	}
	if st.Record == nil {
		rec := runfiles.Record{Run: sh.Run, Shards: sh.Count, SnapshotID: snapshotID, Started: clock().UTC()}
		created, err := runfiles.CreateJSON(j.fs, dir+"/"+runfiles.RecordName, rec)
		if err != nil {
			return 0, err
		}
		if !created { // another shard started the run at the same moment
			st.Record = &runfiles.Record{}
			if err := runfiles.ReadJSON(j.fs, dir+"/"+runfiles.RecordName, st.Record); err != nil {
				return 0, err
			}
			if err := st.CheckCount(sh.Run, sh.Count); err != nil {
				return 0, err
			}
		}
	}
	if st.Record != nil {
		snapshotID = st.Record.SnapshotID
	}
	j.runDir = dir
	if j.lease, err = runfiles.StartLease(j.fs, dir+"/"+runfiles.LeaseName(sh.Index, sh.Count), clock); err != nil {
		return 0, err
	}
	return snapshotID, nil
}

// closeRun ends the shard's lease.
func (j *job) closeRun() { j.lease.End() }

// finishShard completes a shard once its segment file seg is written: it
// writes the shard's marker, and if then every shard of the run has one,
// makes the run's one commit linking them all (linkRun). A shard never
// commits its own segment: a run of N shards makes one commit, not N.
func (j *job) finishShard(ctx context.Context, seg indexfile.File) (*Summary, error) {
	sh := j.o.Shard
	m := runfiles.Marker{Shard: sh.Index, Shards: sh.Count, SnapshotID: j.snap.SnapshotID, Files: len(seg.Own),
		Segment: linkTo(seg.Path, seg.Stats.FileSize, seg.Stats.FooterSize, seg.Dir, sh)}
	if err := runfiles.WriteJSON(j.fs, j.runDir+"/"+runfiles.MarkerName(sh.Index, sh.Count), m); err != nil {
		j.fs.Remove(seg.Path)
		return nil, err
	}
	j.sum.IndexBytes = seg.Stats.FileSize
	st, err := runfiles.Read(j.fs, j.runDir)
	if err != nil {
		return nil, err
	}
	if err := st.CheckCount(sh.Run, sh.Count); err != nil {
		return nil, err
	}
	j.sum.Shard.Committed = len(st.Markers[sh.Count])
	if st.Linked != nil {
		j.sum.Shard.LinkedBefore = true
		return j.finish(j.tbl), nil
	}
	if j.sum.Shard.Committed < sh.Count {
		return j.finish(j.tbl), nil // another shard links the run
	}
	markers := make([]runfiles.Marker, sh.Count)
	for i := range sh.Count {
		if err := runfiles.ReadJSON(j.fs, st.Markers[sh.Count][i], &markers[i]); err != nil {
			return nil, fmt.Errorf("run %s: %w", sh.Run, err)
		}
		// Shards that started at the same moment as the run may have
		// recorded different snapshots (the last record wins): their
		// filters apply all the same, by file; files one missed are
		// indexed by the next sync.
	}
	start := time.Now()
	tbl, err := j.linkRun(ctx, markers)
	j.sum.WriteTime += time.Since(start)
	if err != nil {
		return nil, err
	}
	return j.finish(tbl), nil
}

// runSegment is a shard's segment as the linking commit reads it.
type runSegment struct {
	link  segment.Link
	seg   index.Segment
	empty bool // the shard held no file
}

// linkRun makes the run's one commit: a statistics file for the run's
// snapshot that carries what the snapshot's statistics file holds and
// links every shard segment. It is idempotent: an attempt that finds the
// run's segments linked already (another shard that found the run
// complete too) commits nothing. A shard segment some of whose files the
// index covers otherwise — a sync that indexed them after the run's lease
// expired — is not linked: its other filters are copied, so no filter is
// in the index twice; a segment that cannot be read is left out, its
// files unindexed. Retries are bounded by RunCommitBudget, not a count.
func (j *job) linkRun(ctx context.Context, markers []runfiles.Marker) (*table.Table, error) {
	run := j.o.Shard.Run
	var segs []runSegment
	for _, m := range markers {
		// An empty shard's segment is linked too, with the run's others
		// (planLinks): the run's record in the table metadata then counts
		// every shard, and a complete run never reads as one shard short.
		seg, err := index.ReadSegment(j.fs, index.LinkedFile(table.StatisticsFile{SnapshotID: j.snap.SnapshotID}, m.Segment))
		if err != nil {
			// The index is advisory: the files stay unindexed, the next sync indexes them.
			j.sum.BrokenFiles = append(j.sum.BrokenFiles, m.Segment.Path)
			if j.o.Logger != nil {
				j.o.Logger.Warn("a shard segment cannot be read: its files are left to the next sync",
					"table", strings.Join(j.ident, "."), "run", run, "shard", m.Shard, "file", m.Segment.Path, "error", err.Error())
			}
			continue
		}
		segs = append(segs, runSegment{m.Segment, seg, m.Files == 0})
	}
	deadline := clock().Add(RunCommitBudget)
	// After a commit of ours that must be made again, the attempt plans as
	// if ours had not replaced override (nil: the snapshot had no
	// statistics file) while ours, overridden, is still the snapshot's.
	var override *table.StatisticsFile
	var overridden string
	for {
		var committed indexfile.File
		nothing := false
		j.prepared = nil
		opts := append(commitOptions(j.o.Logger), catalog.WithTimeBudget(max(deadline.Sub(clock()), time.Second)))
		tbl, err := catalog.CommitStatistics(ctx, j.cat, j.ident, func(ctx context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
			j.prepared, nothing = tbl, false
			snap := tbl.SnapshotByID(j.snap.SnapshotID)
			if snap == nil {
				return catalog.StatisticsChange{}, nil, fmt.Errorf("snapshot %d was expired while run %s indexed it", j.snap.SnapshotID, run)
			}
			meta := tbl.Metadata()
			base, view := j.base(meta), meta
			restoring := overridden != "" && j.current(meta) == overridden
			if restoring {
				// Plan as if the file ours replaced were still there.
				base, view = override, withStatisticsFile(meta, j.snap.SnapshotID, override)
			}
			links, copies, err := j.planLinks(ctx, view, segs)
			if err != nil {
				return catalog.StatisticsChange{}, nil, err
			}
			if len(links) == 0 && len(copies) == 0 {
				if restoring && override != nil {
					// What ours replaced covers the run already (another
					// shard's linking file, or with other snapshots' files):
					// put it back, losing nothing of it.
					return catalog.StatisticsChange{Set: []table.StatisticsFile{*override}}, nil, nil
				}
				if restoring {
					// The snapshot had no statistics file, and other
					// snapshots' files cover the run: remove ours.
					return catalog.StatisticsChange{Remove: []int64{j.snap.SnapshotID}}, nil, nil
				}
				nothing = true
				return catalog.StatisticsChange{}, nil, nil // linked already
			}
			sw, err := j.newSegment(base, j.current(meta))
			if err != nil {
				return catalog.StatisticsChange{}, nil, err
			}
			for _, l := range links {
				sw.Link(l)
			}
			for _, c := range copies {
				err = sw.CopyFilters(j.fs, []index.Segment{c.seg}, func(_, _ int, f index.StoredFilter) bool {
					return c.keep[filterKey{f.DataFile, f.DataFileSize, f.FieldID}]
				})
				if err != nil {
					sw.Abandon()
					return catalog.StatisticsChange{}, nil, err
				}
			}
			j.sum.Shard.Copied = len(copies)
			if committed, err = sw.Finish(); err != nil {
				return catalog.StatisticsChange{}, nil, err
			}
			var replaced *table.StatisticsFile
			if sf, ok := catalog.StatisticsFileOf(meta, j.snap.SnapshotID); ok {
				replaced = &sf
			}
			return catalog.StatisticsChange{Set: []table.StatisticsFile{committed.StatisticsFile(snap, replaced)}},
				func() { j.fs.Remove(committed.Path) }, nil
		}, opts...)
		if err != nil {
			return nil, fmt.Errorf("link the %d shards of run %s of %s: %w", j.o.Shard.Count, run, strings.Join(j.ident, "."), err)
		}
		if nothing {
			if !j.sum.Shard.Linked {
				j.sum.Shard.LinkedBefore = true
			}
			return tbl, j.markLinked(j.current(tbl.Metadata()))
		}
		if committed.Path == "" { // the replaced file put back, or ours removed
			// Ours stays for readers of the metadata that listed it; gc
			// removes it after its grace period.
			j.sum.StatisticsPath = j.current(tbl.Metadata())
			return tbl, j.markLinked(j.sum.StatisticsPath)
		}
		removed, err := ensureCommitted(ctx, j.cat, j.ident, j.fs, j.o.Logger, tbl, committed.Path)
		j.sum.BrokenFiles = append(j.sum.BrokenFiles, removed...)
		if err != nil {
			return nil, err
		}
		j.sum.Shard.Linked, j.sum.Shard.LinkedBefore = true, false
		j.sum.StatisticsPath, j.sum.BytesCopied = committed.Path, committed.BytesCopied
		missed, err := j.replacedUnseen(ctx, tbl, committed)
		if err != nil {
			return nil, err
		}
		if missed != nil {
			// Our commit replaced a statistics file of the snapshot it had
			// not seen (Iceberg cannot guard one): commit again on top of it.
			override, overridden = missed, committed.Path
		} else if changed, err := j.othersCommittedUnseen(tbl); err != nil {
			return nil, err
		} else if changed {
			// Another snapshot's statistics file changed between the
			// attempt and the commit (a sync, after the run's lease
			// expired, indexed the run's files): commit again, planned as
			// if ours were not there, without what that file holds.
			if override, err = j.replacedByOurs(tbl); err != nil {
				return nil, err
			}
			overridden = committed.Path
		} else {
			return tbl, j.markLinked(committed.Path)
		}
		if clock().After(deadline) {
			return nil, fmt.Errorf("link the shards of run %s of %s: other commits kept replacing the snapshot's statistics file for %s",
				run, strings.Join(j.ident, "."), RunCommitBudget)
		}
	}
}

// replacedByOurs returns the statistics file of the job's snapshot that
// the commit producing tbl replaced, nil if the snapshot had none.
func (j *job) replacedByOurs(tbl *table.Table) (*table.StatisticsFile, error) {
	meta, err := previousMetadata(j.fs, tbl, j.prepared)
	if err != nil || meta == nil {
		return nil, err
	}
	if sf, ok := catalog.StatisticsFileOf(meta, j.snap.SnapshotID); ok {
		return &sf, nil
	}
	return nil, nil
}

// markLinked writes linked.json: the run is complete, and later shards of
// it are refused.
func (j *job) markLinked(path string) error {
	return runfiles.WriteJSON(j.fs, j.runDir+"/"+runfiles.LinkedName, runfiles.Linked{StatisticsPath: path, Linked: clock().UTC(), Shards: j.o.Shard.Count})
}

// runCopy is a shard segment whose filters the linking commit copies,
// those of keep only.
type runCopy struct {
	seg  index.Segment
	keep map[filterKey]bool
}

// planLinks decides, on the table's metadata as an attempt finds it, what
// the run's linking commit adds: links to the shard segments the index
// neither links nor covers any file of, and copies of the filters it does
// not hold of the others, and, with those links, the segments of shards
// that held no file. Both empty: the run is linked already. A
// rebuild's run links every segment not linked yet: its merge drops every
// other filter.
func (j *job) planLinks(ctx context.Context, meta table.Metadata, segs []runSegment) ([]segment.Link, []runCopy, error) {
	ix, _ := index.Load(ctx, j.fs, meta, nil) // what cannot be read covers nothing
	linked := map[string]bool{}
	for _, seg := range ix.Segments() {
		if seg.Link != nil {
			linked[seg.Link.Path] = true
		}
	}
	var links, empty []segment.Link
	var copies []runCopy
	for _, rs := range segs {
		if linked[rs.link.Path] {
			continue
		}
		if rs.empty {
			empty = append(empty, rs.link)
			continue
		}
		keep := map[filterKey]bool{}
		all := true
		for f := range rs.seg.Filters() {
			if !j.rebuildRun {
				if _, ok := ix.Lookup(f.DataFile, f.DataFileSize, f.FieldID); ok {
					all = false
					continue
				}
			}
			keep[filterKey{f.DataFile, f.DataFileSize, f.FieldID}] = true
		}
		switch {
		case all:
			links = append(links, rs.link)
		case len(keep) > 0:
			copies = append(copies, runCopy{rs.seg, keep})
		}
	}
	if len(links) > 0 {
		// Empty shards go with the run's linked segments; alone they
		// would commit nothing worth a commit.
		links = append(links, empty...)
	}
	return links, copies, nil
}

// heldBy returns what base, the snapshot's statistics file as an attempt
// carries it (nil: none), holds: its own filters, by what they apply to,
// and the paths of the segment files it links.
func (j *job) heldBy(base *table.StatisticsFile) (held map[filterKey]bool, linked map[string]bool, err error) {
	held, linked = map[filterKey]bool{}, map[string]bool{}
	if base == nil || !index.HoldsEntries(*base) {
		return held, linked, nil
	}
	seg, err := index.ReadSegment(j.fs, *base)
	if err != nil {
		return nil, nil, &indexfile.UnreadableError{Path: base.StatisticsPath, Err: err}
	}
	for f := range seg.Filters() {
		held[filterKey{f.DataFile, f.DataFileSize, f.FieldID}] = true
	}
	for _, l := range seg.Links() {
		linked[l.Path] = true
	}
	return held, linked, nil
}

// filterKey is what makes a filter apply to a data file (docs/format.md §6).
type filterKey struct {
	path  string
	size  int64
	field int
}

// withStatisticsFile is meta with sf as the statistics file of snapshot id,
// or with none for it if sf is nil.
func withStatisticsFile(meta table.Metadata, id int64, sf *table.StatisticsFile) table.Metadata {
	var stats []table.StatisticsFile
	for s := range meta.Statistics() {
		if s.SnapshotID != id {
			stats = append(stats, s)
		}
	}
	if sf != nil {
		stats = append(stats, *sf)
	}
	return statisticsView{meta, stats}
}

// statisticsView is table metadata with other statistics files.
type statisticsView struct {
	table.Metadata
	stats []table.StatisticsFile
}

// Statistics returns the view's statistics files.
func (v statisticsView) Statistics() iter.Seq[table.StatisticsFile] { return slices.Values(v.stats) }
