package indexer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/runfiles"
)

// Sync indexes the live data files of the current snapshot that the index
// does not cover yet — after appends and compactions — as a new segment
// attached to the current snapshot. The snapshot's statistics file, which
// set-statistics replaces, is carried into the new one whole: other tools'
// blobs and the index entries of an earlier sync of the same snapshot. A
// file counts as covered when every indexed column has an applicable entry
// (docs/format.md §6); a file whose entry cannot be read is indexed again.
// With nothing new, nothing is committed. o.SnapshotID is ignored. The
// data files of the snapshot of a live sharded run (one within its lease,
// RunLease, and not complete) are left to the run: Sync indexes only files
// added after it, so the run and a sync never index a file both. Of a run
// whose lease expired before it completed, Sync links the segments of the
// finished shards (finishedShards) and indexes only the files no finished
// shard covers. When the index then has more segments than
// o.CompactAbove (linked ones counted), Sync compacts it, so a long run of
// small appends keeps the segments and table metadata bounded; and it
// compacts an index that still has segments of format v1, which the
// compaction rewrites as v2 by copying their bitsets, a segment that
// cannot be read, which the compaction removes, or a file covered twice,
// whose second filter the compaction drops, whatever o.CompactAbove.
func Sync(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*Summary, error) {
	sum, err := syncOnce(ctx, cat, ident, o)
	if err != nil {
		return nil, err
	}
	if sum.Shard != nil {
		return sum, mergeRun(ctx, cat, ident, o, sum, false)
	}
	limit := o.CompactAbove
	if limit == 0 {
		limit = DefaultCompactAbove
	}
	// A file covered twice is a fault, which the compaction repairs
	// whatever the threshold.
	if limit > 0 && (sum.Segments > limit || sum.v1Segments > 0 || sum.brokenSegments > 0) || sum.FiltersDuplicated > 0 {
		if sum.Compacted, err = Compact(ctx, cat, ident, o.compactOptions()); err != nil {
			return nil, err
		}
		sum.Segments = sum.Compacted.SegmentsAfter
	}
	return sum, nil
}

func syncOnce(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*Summary, error) {
	o.SnapshotID = 0
	j, err := newJob(ctx, cat, ident, o)
	if err != nil {
		return nil, err
	}
	defer j.closeRun()
	j.keepEntries = true
	files, err := filescan.LiveFiles(j.fs, j.tbl.Metadata(), j.snap, j.shardFilter())
	if err != nil {
		return nil, j.snapshotGone(ctx, err)
	}
	for _, err := range j.ixErrs {
		var se *index.SegmentError
		if errors.As(err, &se) && indexfile.IsBroken(&indexfile.UnreadableError{Path: se.Path, Err: se.Err}) {
			j.sum.brokenSegments++ // its files are indexed again below; a compaction removes it
		}
	}
	var left map[string]bool // the files of live sharded runs
	if j.o.Shard == nil {
		var stalled []*runfiles.State
		if left, stalled, err = j.leftToRuns(files); err != nil {
			return nil, err
		}
		if j.runLinks, err = j.finishedShards(stalled); err != nil {
			return nil, err
		}
	}
	cov := j.coverage(files)
	j.coverByRunLinks(cov)
	var todo []filescan.File
	for i, f := range files {
		if f.Columns = j.missing(cov, i); f.Columns == nil || len(f.Columns) > 0 {
			if left[f.Path] {
				j.sum.FilesLeftToRuns++
				continue
			}
			todo = append(todo, f)
		}
	}
	j.has = cov.has
	// Files left to a live run are not covered (yet): the run covers them.
	j.sum.FilesTotal, j.sum.FilesCovered = len(files), len(files)-len(todo)-j.sum.FilesLeftToRuns
	if len(todo) == 0 && j.o.Shard == nil && len(j.runLinks) == 0 { // a shard commits even so: its run counts it
		return j.finish(j.tbl), nil
	}
	return j.run(ctx, todo)
}

// coverage is which indexed columns (job.cols) of a sync's live files the
// index holds a filter of.
type coverage struct {
	pos     map[string]int // a live file's location → its place in files
	sizes   []int64        // by place, the file's size
	fields  []int          // the columns' field ids, in the order of job.cols
	covered []bool         // by place × column
}

// coverage matches the live files against the index with TableIndex.Match,
// one pass over each segment's list of files: it builds no map of the
// index's (file, column) entries, whose size is the whole index's, so a
// sync's cost beyond listing the live files stays with the files it reads.
func (j *job) coverage(files []filescan.File) *coverage {
	c := &coverage{pos: make(map[string]int, len(files)), sizes: make([]int64, len(files)),
		covered: make([]bool, len(files)*len(j.cols))}
	for i, f := range files {
		c.pos[f.Path], c.sizes[i] = i, f.Size
	}
	for _, col := range j.cols {
		c.fields = append(c.fields, col.Field.ID)
	}
	find := func(path []byte, size int64) (int, bool) {
		i, ok := c.pos[string(path)]
		return i, ok && c.sizes[i] == size
	}
	j.ix.MatchGroups(0, find, c.fields, func(i int, f index.FilterRef) {
		k := i*len(c.fields) + slices.Index(c.fields, f.FieldID())
		if c.covered[k] {
			j.sum.FiltersDuplicated++
		}
		c.covered[k] = true
	})
	return c
}

// has reports whether the index holds a filter of the live file's column
// (field id): for the files a sync reads again because another column of
// theirs failed before, whose filters it does not write twice.
func (c *coverage) has(df filescan.File, fieldID int) bool {
	i, ok := c.pos[df.Path]
	ci := slices.Index(c.fields, fieldID)
	return ok && ci >= 0 && c.sizes[i] == df.Size && c.covered[i*len(c.fields)+ci]
}

// missing returns the columns (indexes into j.cols) the index has no
// filter of for live file i, counting the others as covered in the
// summary: nil when it has none (the file is read whole), empty when the
// file is covered. A column added to the index is so read only for itself.
func (j *job) missing(c *coverage, i int) []int {
	var cols []int
	for ci := range j.cols {
		if c.covered[i*len(c.fields)+ci] {
			j.sum.PerColumn[ci].FilesCovered++
		} else {
			cols = append(cols, ci)
		}
	}
	if len(cols) == len(j.cols) {
		return nil
	}
	if cols == nil {
		return []int{}
	}
	return cols
}

// Rebuild is the manual full rebuild: it builds a fresh segment of the
// current snapshot for every live data file, then removes every other
// segment (rewriting without index entries the statistics files that also
// hold other tools' blobs), so the index is exactly one fresh segment.
// A shard of a rebuild (Options.Shard) removes nothing: the shard that
// finds every shard of its run committed merges the run's segments and
// drops every other entry, so no shard removes another's.
func Rebuild(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*Summary, error) {
	o.SnapshotID = 0
	if o.Shard != nil {
		sum, err := build(ctx, cat, ident, o, true)
		if err != nil {
			return nil, err
		}
		return sum, mergeRun(ctx, cat, ident, o, sum, true)
	}
	sum, err := Build(ctx, cat, ident, o)
	if err != nil || sum.StatisticsPath == "" {
		return sum, err
	}
	co := o.compactOptions()
	co.OnlyFrom = sum.StatisticsPath
	cs, err := Compact(ctx, cat, ident, co)
	if err != nil {
		return nil, err
	}
	if cs.StatisticsPath != "" {
		sum.StatisticsPath = cs.StatisticsPath
	}
	sum.Segments = cs.SegmentsAfter
	return sum, nil
}

// leftToRuns returns the paths of the data files that live sharded runs of
// the table will cover: every live file of each such run's snapshot (files,
// those of the job's snapshot, when it is the same); and the runs whose
// lease expired before they completed, with shards that finished (their
// markers written), whose segments the sync links (finishedShards). Only
// runs touched within RunLease or with markers have their record read.
func (j *job) leftToRuns(files []filescan.File) (left map[string]bool, stalled []*runfiles.State, err error) {
	root, err := runfiles.RootOf(j.tbl)
	if err != nil {
		return nil, nil, err
	}
	runs, err := runfiles.Walk(j.fs, root, "")
	if err != nil {
		return nil, nil, err
	}
	left = map[string]bool{}
	done := map[int64]bool{}
	now := clock()
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		st := runs[name]
		live := now.Before(st.Touched.Add(cmp.Or(j.o.RunLease, RunLease)))
		if st.Linked != nil || st.Record == nil || !live && len(st.Markers) == 0 {
			continue
		}
		if err := st.ReadRecords(j.fs); err != nil {
			return nil, nil, err
		}
		if !live {
			stalled = append(stalled, st)
			continue
		}
		id := st.Record.SnapshotID
		if done[id] {
			continue
		}
		done[id] = true
		of := files
		if id != j.snap.SnapshotID {
			snap := j.tbl.SnapshotByID(id)
			if snap == nil {
				continue // expired: the run cannot link
			}
			if of, err = filescan.LiveFiles(j.fs, j.tbl.Metadata(), snap, nil); err != nil {
				return nil, nil, err
			}
		}
		for _, f := range of {
			left[f.Path] = true
		}
	}
	return left, stalled, nil
}

// finishedShards returns the segments of the finished shards of stalled
// runs (their lease expired before every shard finished) that a sync links
// instead of indexing their files again: each shard segment that held
// files, that the index does not link, none of whose filters the index or
// another chosen segment holds (a segment that cannot be read, or whose
// files are partly covered, is left out: the sync indexes its files).
func (j *job) finishedShards(stalled []*runfiles.State) ([]runSegment, error) {
	linked := map[string]bool{}
	for _, seg := range j.ix.Segments() {
		if seg.Link != nil {
			linked[seg.Link.Path] = true
		}
	}
	chosen := map[filterKey]bool{}
	var out []runSegment
	for _, st := range stalled {
		count := st.Record.Shards
		for _, i := range slices.Sorted(maps.Keys(st.Markers[count])) {
			var m runfiles.Marker
			if err := runfiles.ReadJSON(j.fs, st.Markers[count][i], &m); err != nil {
				return nil, fmt.Errorf("run %s: %w", st.Record.Run, err)
			}
			if m.Files == 0 || linked[m.Segment.Path] {
				continue
			}
			seg, err := index.ReadSegment(j.fs, index.LinkedFile(table.StatisticsFile{SnapshotID: j.snap.SnapshotID}, m.Segment))
			if err != nil {
				if j.o.Logger != nil {
					j.o.Logger.Warn("a finished shard's segment of a stalled run cannot be read: its files are indexed again",
						"table", strings.Join(j.ident, "."), "run", st.Record.Run, "shard", m.Shard, "file", m.Segment.Path, "error", err.Error())
				}
				continue
			}
			free := true
			for f := range seg.Filters() {
				_, held := j.ix.Lookup(f.DataFile, f.DataFileSize, f.FieldID)
				free = free && !held && !chosen[filterKey{f.DataFile, f.DataFileSize, f.FieldID}]
			}
			if !free {
				continue
			}
			for f := range seg.Filters() {
				chosen[filterKey{f.DataFile, f.DataFileSize, f.FieldID}] = true
			}
			linked[m.Segment.Path] = true
			out = append(out, runSegment{link: m.Segment, seg: seg})
		}
	}
	return out, nil
}

// coverByRunLinks counts the live files' columns that the finished shards'
// segments the sync links (job.runLinks) hold as covered, so the sync
// indexes only what no finished shard covers.
func (j *job) coverByRunLinks(c *coverage) {
	if len(j.runLinks) == 0 {
		return
	}
	from := map[int]bool{}
	for _, rs := range j.runLinks {
		for f := range rs.seg.Filters() {
			i, ok := c.pos[f.DataFile]
			ci := slices.Index(c.fields, f.FieldID)
			if ok && ci >= 0 && c.sizes[i] == f.DataFileSize {
				c.covered[i*len(c.fields)+ci] = true
				from[i] = true
			}
		}
	}
	j.sum.ShardSegmentsLinked, j.sum.FilesFromRuns = len(j.runLinks), len(from)
}
