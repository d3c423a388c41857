package indexer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/segment"
)

// CompactOptions configure Compact.
type CompactOptions struct {
	// Expiring are the snapshots an expiry is about to remove: the index
	// keeps covering the data files of every other snapshot of the table
	// as each attempt finds it (so a file appended and synced after the
	// expiry was planned keeps its filter). Nil keeps every snapshot's.
	Expiring []int64
	// OnlyFrom, when set, keeps only the entries of the segment at this
	// statistics path (a rebuild's fresh segment) and drops the others'.
	OnlyFrom string
	// OnlyRun, when set, keeps only the entries of the segments the shards
	// of this sharded run linked (a sharded rebuild's) and drops the others'.
	OnlyRun string
	// Logger, when set, gets the warnings that are not errors, as a
	// build's (Options.Logger): commits retried after conflicting.
	Logger *slog.Logger
	// MemoryBudget bounds the merge's buffers, as a build's
	// (Options.MemoryBudget).
	MemoryBudget int64
	// DropColumns removes columns from the index: the merged segment
	// holds no filter of them, so lookups on them keep every file and
	// syncs no longer index them (unless named or enabled again). Each
	// must be a column the index holds filters of (by its name in the
	// current schema, or in an earlier one for a column the schema
	// dropped) and not one a table property enables, which the next sync
	// would index again: that is an error naming it.
	DropColumns []string
}

// compactOptions is the one hand-off from a run's options to the
// compactions the run starts (a sync's above CompactAbove, a rebuild's, a
// sharded run's merge): what a compaction shares with its run — the
// logger, the memory budget — is carried here and nowhere else, so a new
// shared option cannot be lost on one of the ways (the budget once was on
// all but the sharded one).
func (o Options) compactOptions() CompactOptions {
	return CompactOptions{Logger: o.Logger, MemoryBudget: o.MemoryBudget}
}

// CompactSummary reports what Compact did.
type CompactSummary struct {
	SegmentsBefore int   `json:"segments_before"`
	SegmentsAfter  int   `json:"segments_after"`
	EntriesKept    int   `json:"entries_kept"`
	EntriesDropped int   `json:"entries_dropped"`
	BytesCopied    int64 `json:"bytes_copied"`
	// BrokenFiles are the index files that were referenced but missing or
	// corrupt: removed from table metadata (rewritten with the other
	// tools' blobs where those could still be read), their data files
	// indexed again by the next sync.
	BrokenFiles []string `json:"broken_files,omitempty"`
	// BrokenGroups lists the groups left out because their runs could not
	// be read or failed their checksums ("path@offset"): their files lost
	// those filters and are indexed again by the next sync.
	BrokenGroups []string `json:"broken_groups,omitempty"`
	// DroppedColumns are the columns CompactOptions.DropColumns removed,
	// with the number of filters of each the compaction left out.
	DroppedColumns []DroppedColumn `json:"dropped_columns,omitempty"`

	StatisticsPath string        `json:"statistics_path,omitempty"`
	Duration       time.Duration `json:"duration_ns"`

	// replaced are segments another run registered between this run's plan
	// and its commit, which the commit replaced unseen.
	replaced []index.Segment
}

// DroppedColumn is a column a compaction removed from the index.
type DroppedColumn struct {
	Name    string `json:"name"`
	FieldID int    `json:"field_id"`
	Filters int    `json:"filters"` // filters of it left out
}

// errStatisticsMoved aborts a compaction attempt whose plan no longer
// matches the table: a statistics file it merges changed meanwhile.
var errStatisticsMoved = errors.New("the table's statistics files changed during compaction")

// errReplan makes a compaction plan again, having found the one segment
// of an index damaged (compaction.checked).
var errReplan = errors.New("plan the compaction again")

// Compact merges the index's segments into one segment of the current
// snapshot by copying blob bytes, never re-hashing; drops entries of data
// files no retained snapshot holds, and duplicate entries; and removes the
// merged segments' statistics entries, rewriting without index entries a
// statistics file that also holds other tools' blobs. The number of
// segments and what table metadata lists for the index stay bounded however
// many syncs ran. A segment that cannot be read is left as it is. With
// nothing to merge or drop — one v2 segment of the current snapshot, all of
// it needed — the segment is read once as a stream to check its checksums
// (index.CheckSegment, as Repair does), and nothing is committed unless it
// is damaged: then it is rewritten without the groups that fail them.
//
// Like a sync, a compaction checks after committing what its commit
// replaced: a segment another run registered between the compaction's plan
// and its commit is read back and merged in by another pass, so no run's
// entries are lost.
func Compact(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o CompactOptions) (*CompactSummary, error) {
	return (&compaction{broken: map[groupRef]bool{}}).run(ctx, cat, ident, o)
}

// run is Compact, with what c holds already (Repair's broken groups).
func (c *compaction) run(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o CompactOptions) (*CompactSummary, error) {
	if o.Logger != nil {
		// What the compaction was handed, for a reader of debug logs (and
		// the tests of every way a compaction is started).
		o.Logger.Debug("index compaction started", "table", strings.Join(ident, "."),
			"memory_budget_bytes", cmp.Or(o.MemoryBudget, segment.DefaultMemoryBudget), "drop_columns", o.DropColumns)
	}
	start := time.Now()
	for attempt := 0; attempt < maxOverwrites; attempt++ {
		sum, err := c.once(ctx, cat, ident, o)
		if errors.Is(err, errStatisticsMoved) {
			continue
		}
		if errors.Is(err, errReplan) {
			attempt-- // not a conflict: it happens once per Compact
			continue
		}
		var se *segment.SourceError
		if errors.As(err, &se) && len(c.broken) < maxBrokenGroups {
			// A broken group is never trusted: merge without it.
			c.broken[groupRef{se.Path, se.Offset}] = true
			if o.Logger != nil {
				o.Logger.Warn("index group left out of the compaction: its files will be indexed again",
					"statistics_path", se.Path, "offset", se.Offset, "error", se.Err.Error())
			}
			attempt--
			continue
		}
		if err != nil {
			return nil, err
		}
		for g := range c.broken {
			sum.BrokenGroups = append(sum.BrokenGroups, fmt.Sprintf("%s@%d", g.path, g.offset))
		}
		slices.Sort(sum.BrokenGroups)
		if c.lost = sum.replaced; len(c.lost) > 0 {
			continue
		}
		sum.Duration = time.Since(start)
		return sum, nil
	}
	return nil, fmt.Errorf("compact the index of %s: %w %d times", strings.Join(ident, "."), errStatisticsMoved, maxOverwrites)
}

// groupRef names a v2 group: its statistics file and offset.
type groupRef struct {
	path   string
	offset int64
}

// maxBrokenGroups bounds how many broken groups one compaction leaves out
// before it gives up.
const maxBrokenGroups = 64

// compaction is what one Compact carries from a pass to the next.
type compaction struct {
	// lost are segments table metadata no longer lists that an earlier
	// pass's commit replaced unseen: the next pass merges them in.
	lost []index.Segment
	// broken are the groups left out because they cannot be read.
	broken map[groupRef]bool
	// drop holds the fields o.DropColumns names once the first pass
	// resolved them (nil until then), as a later pass (after a commit that
	// dropped them) could not.
	drop map[int]string
	// force rewrites the index even when it is one v2 segment of the
	// current snapshot, all of it needed: it is damaged (Repair).
	force bool
	// checked is set once the one segment of such an index has been
	// checked for damage (index.CheckSegment).
	checked bool
	// manifests are the live data files of each manifest decoded so far,
	// by its path (heldDataFiles).
	manifests map[string][]fileKey
}

// once plans and commits one compaction of the segments table metadata
// lists plus the lost ones it no longer lists, leaving out the broken
// groups.
func (c *compaction) once(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o CompactOptions) (*CompactSummary, error) {
	name := strings.Join(ident, ".")
	tbl, err := catalog.LoadTable(ctx, cat, ident, commitOptions(o.Logger)...)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return &CompactSummary{}, nil
	}
	fs, err := writableFS(ctx, tbl)
	if err != nil {
		return nil, err
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	// A segment that cannot be read because it is missing or corrupt is
	// removed (replaced, for the current snapshot); one whose read may
	// succeed later fails the compaction rather than lose it.
	var broken []table.StatisticsFile
	var brokenLinked []string // linked segment files: the merged segment no longer links them
	for _, err := range errs {
		var se *index.SegmentError
		if !errors.As(err, &se) {
			continue
		}
		if !indexfile.IsBroken(&indexfile.UnreadableError{Path: se.Path, Err: se.Err}) {
			return nil, fmt.Errorf("compact the index of %s: %w", name, err)
		}
		if se.LinkedFrom != "" {
			brokenLinked = append(brokenLinked, se.Path)
			continue
		}
		for sf := range tbl.Metadata().Statistics() {
			if sf.StatisticsPath == se.Path {
				broken = append(broken, sf)
			}
		}
	}
	if c.drop == nil && len(o.DropColumns) == 0 {
		c.drop = map[int]string{}
	}
	if c.drop == nil {
		if c.drop, err = dropFields(tbl.Metadata(), HeldColumns(ix, tbl.Metadata()), o.DropColumns); err != nil {
			return nil, fmt.Errorf("compact the index of %s: %w", name, err)
		}
	}
	listed := ix.Segments()
	segments := append(listed, c.lost...)
	sum := &CompactSummary{SegmentsBefore: len(listed) + len(broken) + len(brokenLinked)}

	var retained []table.Snapshot
	for _, s := range tbl.Metadata().Snapshots() {
		if !slices.Contains(o.Expiring, s.SnapshotID) {
			retained = append(retained, s)
		}
	}
	held, err := c.heldDataFiles(ctx, fs, retained)
	if err != nil {
		return nil, err
	}
	var only func(*index.Segment) bool
	switch {
	case o.OnlyFrom != "":
		only = func(seg *index.Segment) bool { return seg.File.StatisticsPath == o.OnlyFrom }
	case o.OnlyRun != "":
		only = func(seg *index.Segment) bool { return seg.Link != nil && seg.Link.Run == o.OnlyRun }
	}
	if only != nil && !slices.ContainsFunc(segments, func(seg index.Segment) bool { return only(&seg) }) {
		// The rebuild's segment, or its run's, is gone: another compaction
		// (the run's other last shard, a scheduled one) merged it already.
		// Keeping only it would keep nothing.
		sum.SegmentsAfter = sum.SegmentsBefore
		return sum, nil
	}
	keep, v1 := chooseFilters(segments, held, c.broken, only, c.drop)
	linking := slices.ContainsFunc(segments, func(seg index.Segment) bool { return len(seg.Links()) > 0 })
	for si := range segments {
		for _, k := range keep[si] {
			if k {
				sum.EntriesKept++
			} else {
				sum.EntriesDropped++
			}
		}
	}
	sum.DroppedColumns = droppedColumns(segments, keep, c.drop)
	columns := compactedColumns(HeldColumns(ix, tbl.Metadata()), tbl.Metadata(), keptFields(segments, keep), c.drop)
	if len(c.lost) == 0 && len(c.broken) == 0 && len(broken) == 0 && !v1 && !linking && sum.EntriesDropped == 0 && len(segments) <= 1 &&
		(len(segments) == 0 || segments[0].File.SnapshotID == snap.SnapshotID) && !c.force {
		if len(segments) == 0 || c.checked {
			sum.SegmentsAfter = sum.SegmentsBefore
			return sum, nil // already one v2 segment of the current snapshot, all of it needed
		}
		// Nothing to merge: the segment is rewritten only if it is damaged
		// (a broken group, footer or tail), which one streaming read of it
		// tells — as a merge would have read all of it.
		c.checked = true
		if c.seed(fs, segments[0].File) {
			return nil, errReplan // plan again, rewriting it without its broken groups
		}
		sum.SegmentsAfter = sum.SegmentsBefore
		return sum, nil
	}

	planned := map[int64]string{}
	for _, seg := range listed {
		if seg.LinkedFrom == "" {
			planned[seg.File.SnapshotID] = seg.File.StatisticsPath
		}
	}
	for _, sf := range broken {
		planned[sf.SnapshotID] = sf.StatisticsPath
	}
	planned[snap.SnapshotID] = (&job{snap: snap}).current(tbl.Metadata())
	var merged indexfile.File
	var prepared *table.Table
	committed, err := catalog.CommitStatistics(ctx, cat, ident, func(ctx context.Context, now *table.Table) (catalog.StatisticsChange, func(), error) {
		prepared = now
		for id, path := range planned {
			if sf, _ := catalog.StatisticsFileOf(now.Metadata(), id); sf.StatisticsPath != path {
				return catalog.StatisticsChange{}, nil, errStatisticsMoved
			}
		}
		current := now.SnapshotByID(snap.SnapshotID)
		if current == nil {
			return catalog.StatisticsChange{}, nil, errStatisticsMoved
		}
		j := &job{cat: cat, ident: ident, tbl: now, fs: fs, snap: current, o: Options{MemoryBudget: o.MemoryBudget, Logger: o.Logger}, columns: columns}
		m, change, written, err := j.writeCompacted(segments, len(listed), broken, func(si, ord int, _ index.StoredFilter) bool { return keep[si][ord] })
		if err == nil {
			err = checkFresh(m)
		}
		if err != nil {
			for _, p := range written {
				fs.Remove(p)
			}
			return catalog.StatisticsChange{}, nil, err
		}
		merged = m
		return change, func() {
			for _, p := range written {
				fs.Remove(p)
			}
		}, nil
	}, commitOptions(o.Logger)...)
	if err != nil {
		if errors.Is(err, errStatisticsMoved) {
			return nil, errStatisticsMoved
		}
		return nil, fmt.Errorf("commit the compacted index of %s: %w", name, err)
	}
	removed, err := ensureCommitted(ctx, cat, ident, fs, o.Logger, committed, merged.Path)
	if err != nil {
		return nil, err
	}
	sum.BrokenFiles = append(sum.BrokenFiles, removed...)
	sum.StatisticsPath = merged.Path
	sum.BytesCopied = merged.BytesCopied
	for _, sf := range broken {
		sum.BrokenFiles = append(sum.BrokenFiles, sf.StatisticsPath)
	}
	sum.BrokenFiles = append(sum.BrokenFiles, brokenLinked...)
	if merged.Broken != "" && !slices.Contains(sum.BrokenFiles, merged.Broken) {
		sum.BrokenFiles = append(sum.BrokenFiles, merged.Broken)
	}
	for sf := range committed.Metadata().Statistics() {
		if index.HoldsEntries(sf) {
			sum.SegmentsAfter++
		}
	}
	if sum.replaced, err = replacedSegments(fs, committed, prepared, planned); err != nil {
		return nil, err
	}
	return sum, nil
}

// replacedSegments reads the metadata the commit producing tbl (prepared on
// the table prepared) replaced and returns the segments it listed, for the
// snapshots the commit set or removed statistics of, that the plan did not
// know.
func replacedSegments(fs icebergio.IO, tbl, prepared *table.Table, planned map[int64]string) ([]index.Segment, error) {
	meta, err := previousMetadata(fs, tbl, prepared)
	if err != nil || meta == nil {
		return nil, err
	}
	var out []index.Segment
	for sf := range meta.Statistics() {
		path, touched := planned[sf.SnapshotID]
		if !touched || sf.StatisticsPath == path || !index.HoldsEntries(sf) {
			continue
		}
		seg, err := index.ReadSegment(fs, sf)
		if err != nil {
			return nil, fmt.Errorf("read back the segment %s a compaction replaced: %w", sf.StatisticsPath, err)
		}
		out = append(out, seg)
		for _, l := range seg.Links() {
			linked, err := index.ReadSegment(fs, index.LinkedFile(sf, l))
			if err != nil {
				return nil, fmt.Errorf("read back the segment %s linked by %s, which a compaction replaced: %w", l.Path, sf.StatisticsPath, err)
			}
			linked.LinkedFrom, linked.Link = sf.StatisticsPath, &l
			out = append(out, linked)
		}
	}
	return out, nil
}

// writeCompacted writes the merged segment for the current snapshot — the
// other tools' blobs of its statistics file, then the filters keep selects —
// and for every other segment that shares its file with other tools' blobs,
// a copy holding only those. It returns the change that registers them and
// removes the rest, and the paths written.
func (j *job) writeCompacted(segments []index.Segment, listed int, broken []table.StatisticsFile, keep func(seg, ord int, f index.StoredFilter) bool) (indexfile.File, catalog.StatisticsChange, []string, error) {
	var change catalog.StatisticsChange
	var written []string
	fail := func(err error) (indexfile.File, catalog.StatisticsChange, []string, error) {
		for _, p := range written {
			j.fs.Remove(p)
		}
		return indexfile.File{}, catalog.StatisticsChange{}, nil, err
	}
	meta := j.tbl.Metadata()
	current, hasCurrent := catalog.StatisticsFileOf(meta, j.snap.SnapshotID)
	var foreignOnly *table.StatisticsFile
	if hasCurrent && hasForeignBlobs(current) {
		foreignOnly = &current
	}
	sw, err := j.newSegment(foreignOnly, current.StatisticsPath)
	if err != nil {
		return fail(err)
	}
	if err := sw.CopyFilters(j.fs, segments, keep); err != nil {
		sw.Abandon()
		return fail(err)
	}
	merged, err := sw.Finish()
	if err != nil {
		return fail(err)
	}
	written = append(written, merged.Path)
	var replaced *table.StatisticsFile
	if hasCurrent {
		replaced = &current
	}
	change.Set = append(change.Set, merged.StatisticsFile(j.snap, replaced))

	for _, seg := range segments[:listed] { // the others are no longer registered
		if seg.File.SnapshotID == j.snap.SnapshotID || seg.LinkedFrom != "" {
			continue // replaced by the merged segment; or linked, gone with the file linking it
		}
		// A segment of a snapshot no longer in the table (its set raced
		// an expiry) is removed whole: nothing reads its other blobs.
		if !hasForeignBlobs(seg.File) || j.tbl.SnapshotByID(seg.File.SnapshotID) == nil {
			change.Remove = append(change.Remove, seg.File.SnapshotID)
			continue
		}
		rewritten, err := j.foreignOnlyCopy(seg.File)
		if err != nil && indexfile.IsBroken(err) {
			// Its footer is damaged: the other tools' blobs cannot be
			// found, its filters were read from its directory above.
			change.Remove = append(change.Remove, seg.File.SnapshotID)
			if j.o.Logger != nil {
				j.o.Logger.Warn("other tools' blobs of a damaged index file are lost",
					"table", strings.Join(j.ident, "."), "statistics_path", seg.File.StatisticsPath, "blob_types", blobTypes(seg.File))
			}
			continue
		}
		if err != nil {
			return fail(err)
		}
		written = append(written, rewritten.StatisticsPath)
		change.Set = append(change.Set, rewritten)
	}
	for _, sf := range broken { // the current snapshot's is replaced by the merged one
		if sf.SnapshotID == j.snap.SnapshotID {
			continue
		}
		if hasForeignBlobs(sf) && j.tbl.SnapshotByID(sf.SnapshotID) != nil {
			rewritten, err := j.foreignOnlyCopy(sf)
			if err == nil {
				written = append(written, rewritten.StatisticsPath)
				change.Set = append(change.Set, rewritten)
				continue
			}
			if !indexfile.IsBroken(err) {
				return fail(err)
			}
		}
		change.Remove = append(change.Remove, sf.SnapshotID)
		if j.o.Logger != nil {
			j.o.Logger.Warn("index file cannot be read: its reference is removed, its data files will be indexed again",
				"table", strings.Join(j.ident, "."), "statistics_path", sf.StatisticsPath, "lost", blobTypes(sf))
		}
	}
	return merged, change, written, nil
}

// foreignOnlyCopy writes a copy of a statistics file without its index
// entries, for the same snapshot, and returns its statistics entry.
func (j *job) foreignOnlyCopy(sf table.StatisticsFile) (table.StatisticsFile, error) {
	path, err := indexfile.NewPath(j.tbl, sf.SnapshotID)
	if err != nil {
		return table.StatisticsFile{}, err
	}
	sw, err := indexfile.Create(j.fs, path, j.segmentOptions(), clock)
	if err != nil {
		return table.StatisticsFile{}, err
	}
	if err := sw.CopyForeign(j.fs, sf); err != nil {
		sw.Abandon()
		return table.StatisticsFile{}, err
	}
	seg, err := sw.Finish()
	if err != nil {
		return table.StatisticsFile{}, err
	}
	snap := j.tbl.SnapshotByID(sf.SnapshotID)
	return seg.StatisticsFile(snap, &sf), nil
}

type fileKey struct {
	path string
	size int64
}

// heldDataFiles returns the data files the snapshots hold, each with a
// number of its own (0, 1, …), decoding each manifest once however many
// snapshots share it — and once per compaction, however many passes it
// takes (a pass per broken group found, per commit raced): the live files
// of every manifest decoded are kept by path in c.manifests, manifests
// being immutable. The snapshots' manifest lists, then the manifests not
// decoded yet, are read walkConcurrency at a time: on object storage a
// table of many snapshots or manifests costs round trips, not their sum.
func (c *compaction) heldDataFiles(ctx context.Context, fs icebergio.IO, snaps []table.Snapshot) (map[fileKey]int32, error) {
	if c.manifests == nil {
		c.manifests = map[string][]fileKey{}
	}
	lists := make([][]iceberg.ManifestFile, len(snaps))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(walkConcurrency)
	for i := range snaps {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			var err error
			if lists[i], err = snaps[i].Manifests(fs); err != nil {
				return fmt.Errorf("read manifest list of snapshot %d: %w", snaps[i].SnapshotID, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The distinct data manifests, in the order the snapshots list them,
	// which numbers the files the same way every time.
	var order []iceberg.ManifestFile
	seen := map[string]bool{}
	for _, list := range lists {
		for _, m := range list {
			if m.ManifestContent() == iceberg.ManifestContentData && !seen[m.FilePath()] {
				seen[m.FilePath()] = true
				order = append(order, m)
			}
		}
	}
	decoded := make([][]fileKey, len(order))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(walkConcurrency)
	for i, m := range order {
		if files, ok := c.manifests[m.FilePath()]; ok {
			decoded[i] = files
			continue
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			files := []fileKey{}
			err := filescan.ManifestDataFiles(fs, m, func(df iceberg.DataFile) {
				files = append(files, fileKey{df.FilePath(), df.FileSizeBytes()})
			})
			decoded[i] = files
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	held := map[fileKey]int32{}
	for i, m := range order {
		c.manifests[m.FilePath()] = decoded[i]
		for _, key := range decoded[i] {
			if _, ok := held[key]; !ok {
				held[key] = int32(len(held))
			}
		}
	}
	return held, nil
}

// walkConcurrency bounds how many manifest lists or manifests a
// compaction reads at once.
const walkConcurrency = 16

// chooseFilters decides which filters a compaction keeps, by segment and
// place in Segment.Filters: the first filter of each data file and field
// that a retained snapshot holds (of the segments only selects, unless it
// is nil), never one of a broken group or of a dropped field. It costs one
// map lookup per file of each segment, not per filter. v1 reports whether
// a segment is of format v1.
func chooseFilters(segments []index.Segment, held map[fileKey]int32, broken map[groupRef]bool, only func(*index.Segment) bool, drop map[int]string) (keep [][]bool, v1 bool) {
	taken := map[int][]bool{} // by field, by held file number
	take := func(field int, file int32) bool {
		t := taken[field]
		if t == nil {
			t = make([]bool, len(held))
			taken[field] = t
		}
		if t[file] {
			return false
		}
		t[file] = true
		return true
	}
	keep = make([][]bool, len(segments))
	for si := range segments {
		seg := &segments[si]
		v1 = v1 || !seg.HasDirectory()
		skip := only != nil && !only(seg)
		for _, e := range seg.Entries { // Filters lists v1 entries first
			n, ok := held[fileKey{e.DataFile, e.DataFileSize}]
			_, dropped := drop[e.FieldID]
			keep[si] = append(keep[si], !skip && !dropped && ok && take(e.FieldID, n))
		}
		dir := seg.Directory()
		if dir == nil {
			continue
		}
		files := make([]int32, dir.Files.Len()) // held file numbers, -1 if no snapshot holds it
		for k, path := range dir.Files.All() {
			files[k] = -1
			if n, ok := held[fileKey{string(path), dir.Files.Size(k)}]; ok {
				files[k] = n
			}
		}
		for gi := range dir.Groups {
			g := &dir.Groups[gi]
			_, dropped := drop[g.FieldID]
			dead := skip || dropped || broken[groupRef{seg.File.StatisticsPath, g.Offset}]
			for _, m := range g.Members {
				n := files[m.File]
				keep[si] = append(keep[si], !dead && n >= 0 && take(g.FieldID, n))
			}
		}
	}
	return keep, v1
}

// writableFS returns the table's storage (catalog.TableIO), which index
// writers need to be writable.
func writableFS(ctx context.Context, tbl *table.Table) (icebergio.WriteFileIO, error) {
	name := strings.Join(tbl.Identifier(), ".")
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("table %s storage: %w", name, err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("table %s: its storage cannot be written", name)
	}
	return wfs, nil
}

// droppedColumns counts the filters of each dropped field that the
// compaction leaves out, in field id order.
func droppedColumns(segments []index.Segment, keep [][]bool, drop map[int]string) []DroppedColumn {
	if len(drop) == 0 {
		return nil
	}
	count := map[int]int{}
	for si := range segments {
		ord := 0
		for f := range segments[si].Filters() { // the order of keep
			if _, ok := drop[f.FieldID]; ok && !keep[si][ord] {
				count[f.FieldID]++
			}
			ord++
		}
	}
	out := make([]DroppedColumn, 0, len(drop))
	for id, name := range drop {
		out = append(out, DroppedColumn{Name: name, FieldID: id, Filters: count[id]})
	}
	slices.SortFunc(out, func(a, b DroppedColumn) int { return a.FieldID - b.FieldID })
	return out
}

// keptFields returns the fields of which a compaction keeps a filter.
func keptFields(segments []index.Segment, keep [][]bool) map[int]bool {
	kept := map[int]bool{}
	for si := range segments {
		ord := 0
		for f := range segments[si].Filters() { // the order of keep
			if keep[si][ord] {
				kept[f.FieldID] = true
			}
			ord++
		}
	}
	return kept
}

// compactedColumns is what the merged segment records of the index's
// columns (indexfile.PropIndexColumns): every column the index holds or
// records (held), but the dropped ones and those no longer in the schema
// of which no filter is kept — a column whose filters a repair left out
// stays, so the next sync indexes it again.
func compactedColumns(held []HeldColumn, meta table.Metadata, kept map[int]bool, drop map[int]string) map[int]float64 {
	rec := map[int]float64{}
	for _, h := range held {
		if _, dropped := drop[h.FieldID]; dropped {
			continue
		}
		if _, inSchema := meta.CurrentSchema().FindFieldByID(h.FieldID); !inSchema && !kept[h.FieldID] {
			continue
		}
		rec[h.FieldID] = h.FPP
	}
	return rec
}
