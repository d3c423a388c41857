// Package indexer writes the index. It is the batch job: it walks a snapshot's live data files,
// reads only the indexed columns, builds one Split Block Bloom Filter per
// data file and column, streams them into one Puffin file under the table's
// metadata location, and registers that file as the snapshot's statistics
// file through the table's catalog.
package indexer

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/runfiles"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// DefaultMaxFilterBytes caps one filter, as Parquet writers cap theirs.
const DefaultMaxFilterBytes = 128 << 20

// DefaultCompactAbove is how many segments Sync lets a table's index have
// before it compacts them.
const DefaultCompactAbove = 8

// Options configure a build. The zero value indexes the current snapshot's
// indexed columns (IndexedColumns: those the index holds and those table
// properties enable), with all CPUs.
type Options struct {
	Columns    []string // column names, added to the indexed columns (IndexedColumns)
	FPP        float64  // target false-positive rate; 0: per-column property, else the index's, else DefaultFPP
	SnapshotID int64    // 0: the current snapshot
	Parallel   int      // data files hashed at once (CPU workers); 0: runtime.NumCPU()
	// RequestsInFlight bounds the storage requests the run has in flight:
	// the footers and column chunks of the next data files are read ahead
	// of the CPU workers, across files, up to this many requests at once
	// (see index/filescan). 0 means filescan.DefaultRequestsInFlight; negative is an
	// error.
	RequestsInFlight int
	FailFast         bool // a data file or column that cannot be read fails the build instead of staying unindexed
	MaxFilterBytes   int  // 0: DefaultMaxFilterBytes
	// MemoryBudget bounds the bytes of filters a run holds before writing
	// them into the segment; 0 means segment.DefaultMemoryBudget.
	MemoryBudget int64
	// CompactAbove makes Sync compact the index when it leaves more
	// segments than this: 0 means DefaultCompactAbove, negative never.
	CompactAbove int
	// Progress, when set, is told how far the run is through the data
	// files it reads: once before the first with FilesDone 0, then as each
	// data file finishes, indexed or not. Calls are serialized — one at a
	// time, in order, on the goroutine that called Build, Sync or Rebuild —
	// so the function needs no locking of its own; but it holds up the
	// collection of the workers' results, so it must return quickly. A run
	// that reads no data file (a sync with nothing new) never calls it.
	Progress func(Progress)
	// Logger, when set, gets the run's warnings that are not errors:
	// commits retried after conflicting with other commits.
	Logger *slog.Logger
	// RunLease is how long a sharded run counts as live after a shard
	// last touched its lease, for a sync leaving a live run's files to it
	// (0: RunLease; at least MinRunLease).
	RunLease time.Duration
	// Shard, when set, makes the run one shard of a sharded run: it
	// indexes only its shard's data files into a segment of its own and
	// commits nothing, unless it finds every shard of its run complete: it
	// then makes the run's one commit linking them all (Shard), keeping
	// every other entry of the index.
	Shard *Shard
	// knobs are what only the bench sets (benchknobs.go).
	knobs knobs
}

// knobs are switches of a run that change no result and that only the
// bench (cmd/icebloom-bench) sets, through Options.WithKnobs of
// benchknobs.go, built only with -tags icebloom_bench: they are for
// comparisons and measurements, no public API of the package.
type knobs struct {
	// DisablePrefetch reads nothing ahead: each worker reads its own data
	// file, a request at a time, as builds did before prefetching.
	DisablePrefetch bool
	// ForcePrefetch reads ahead on local storage too, where the default
	// reads nothing ahead: local reads take microseconds, and reading ahead
	// only adds its own work (measured 1.7x the CPU of a build, bench
	// --s3-floor).
	ForcePrefetch bool
	// ExactColumns indexes exactly Options.Columns: not the columns the
	// index holds, nor those table properties enable.
	ExactColumns bool
	// DisableDictionaryShortcut decodes every value of a column chunk even
	// when all its data pages are dictionary-encoded and hashing the
	// dictionary page alone would do (the shortcut changes no result; with
	// a writer that keeps dictionary entries no row uses, it could only add
	// false positives).
	DisableDictionaryShortcut bool
}

// Progress is how far a run is through the data files it reads.
type Progress struct {
	FilesDone  int // data files finished, indexed or failed
	FilesTotal int // data files the run reads: for a sync, those not covered yet
	// Bytes is the total size of the finished data files as the manifests
	// list them. The build reads only the indexed columns' chunks of a
	// file, so it is the amount of table data covered, not the bytes read.
	Bytes int64
	File  string // the data file that just finished; "" in the first call
}

// FileFailure is a data file the build could not read, or with Column set
// one column of it. It stays unindexed (for that column), which is safe: an
// uncovered file is never pruned.
type FileFailure struct {
	Path   string `json:"path"`
	Column string `json:"column,omitempty"` // "": the whole file failed
	Error  string `json:"error"`
}

// Summary reports what a build or sync did.
type Summary struct {
	SnapshotID   int64    `json:"snapshot_id"`
	Columns      []string `json:"columns"`
	FilesTotal   int      `json:"files_total"`
	FilesCovered int      `json:"files_covered"` // live files the index already covered (sync)
	// FilesLeftToRuns counts the live files a sync left to live sharded
	// runs, which will cover them (Sync).
	FilesLeftToRuns int `json:"files_left_to_runs,omitempty"`
	// FilesIndexed counts the data files this run wrote filters of (of at
	// least one column; FilesFailed lists the columns that failed).
	FilesIndexed int `json:"files_indexed"`
	// FilesFailed lists the data files, or columns of data files, that
	// could not be read ([] for none). In JSON and logs files_failed is
	// always this list and files_failed_count its length, as per column.
	FilesFailed []FileFailure `json:"files_failed"`
	Blobs       int           `json:"blobs"`
	IndexBytes  int64         `json:"index_bytes"`
	BytesCopied int64         `json:"bytes_copied"` // blob bytes carried over from existing statistics files
	Segments    int           `json:"segments"`     // segments of the index afterwards: statistics files holding index entries and the files they link
	// Compacted reports the index compaction a sync ran past its threshold.
	Compacted      *CompactSummary `json:"compacted,omitempty"`
	DistinctValues int64           `json:"distinct_values"`
	StatisticsPath string          `json:"statistics_path,omitempty"`
	Duration       time.Duration   `json:"duration_ns"`
	// ReadTime is the time spent reading and hashing the data files'
	// columns, added up over the files (so over the workers): the part of
	// the run that the dictionary shortcut and the reading speed decide,
	// without planning, writing and committing the index.
	ReadTime time.Duration `json:"read_ns"`
	// BrokenFiles are index files the run found referenced but missing or
	// corrupt and replaced: their blobs are gone from the index, and their
	// data files are indexed again.
	BrokenFiles []string `json:"broken_files,omitempty"`
	// WriteTime is the time spent writing the index: filters into groups,
	// the directory, the file, and the commit — the part of a build that
	// an index compaction of the same files redoes.
	WriteTime time.Duration `json:"write_ns"`
	// Shard is the shard the run was, with how many shards of its run the
	// index held after its commit; nil for a run that was not sharded.
	Shard *ShardSummary `json:"shard,omitempty"`
	// PerColumn says what the run did per indexed column, in the order of
	// Columns.
	PerColumn []ColumnSummary `json:"per_column"`
	// NotIndexed are the columns the index holds filters of that the run
	// no longer indexes (IndexedColumns).
	NotIndexed []NotIndexed `json:"not_indexed,omitempty"`
	// ShardSegmentsLinked counts the segments of finished shards of
	// stalled runs (their lease expired before every shard finished) that
	// a sync linked instead of indexing their files again; FilesFromRuns
	// the live files they cover.
	ShardSegmentsLinked int `json:"shard_segments_linked,omitempty"`
	FilesFromRuns       int `json:"files_from_runs,omitempty"`
	// FiltersDuplicated counts the filters a sync found of a live file and
	// column the index holds a filter of already (in another segment): a
	// fault, which its compaction removes.
	FiltersDuplicated int `json:"filters_duplicated,omitempty"`

	// v1Segments counts the segments of index format v1 the run left,
	// which Sync rewrites as v2; brokenSegments those a sync found missing
	// or corrupt, which its compaction removes.
	v1Segments, brokenSegments int
}

// Build indexes a snapshot of the table and commits the index. Data files
// that cannot be read are reported in the summary and left unindexed unless
// FailFast is set. Nothing is committed when no data file could be indexed.
func Build(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*Summary, error) {
	sum, err := build(ctx, cat, ident, o, false)
	if err != nil {
		return nil, err
	}
	return sum, mergeRun(ctx, cat, ident, o, sum, false)
}

// build indexes a snapshot's files, or a shard's, and commits the index
// (a shard: links its run when it completes it); rebuild marks the shard
// of a rebuild.
func build(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options, rebuild bool) (*Summary, error) {
	j, err := newJob(ctx, cat, ident, o)
	if err != nil {
		return nil, err
	}
	defer j.closeRun()
	j.rebuildRun = rebuild
	files, err := filescan.LiveFiles(j.fs, j.tbl.Metadata(), j.snap, j.shardFilter())
	if err != nil {
		return nil, j.snapshotGone(ctx, err)
	}
	j.sum.FilesTotal = len(files)
	return j.run(ctx, files)
}

// snapshotGone explains a failure to read the job's snapshot when the
// snapshot was expired meanwhile (an expire during a sharded run, whose
// late shard would otherwise fail on a manifest list that no longer
// exists); any other failure is returned as it is.
func (j *job) snapshotGone(ctx context.Context, err error) error {
	tbl, lerr := catalog.LoadTable(ctx, j.cat, j.ident)
	if lerr != nil || tbl.SnapshotByID(j.snap.SnapshotID) != nil {
		return err
	}
	what := "the run"
	if j.o.Shard != nil {
		what = "run " + j.o.Shard.Run
	}
	return fmt.Errorf("snapshot %d of %s was expired while %s indexed it, so its files can no longer be listed: start a new run on the current snapshot (%w)",
		j.snap.SnapshotID, strings.Join(j.ident, "."), what, err)
}

// job is one run writing a segment for a snapshot: the table as loaded, the
// columns, and what the run reports.
type job struct {
	cat   icecatalog.Catalog
	ident table.Identifier
	tbl   *table.Table
	fs    icebergio.WriteFileIO
	snap  *table.Snapshot
	cols  []Column
	o     Options
	start time.Time
	sum   *Summary
	// keepEntries carries the index entries of the snapshot's current
	// statistics file into the new one (sync adds to them; a build
	// replaces them).
	keepEntries bool
	// prepared is the table the last commit attempt was prepared on.
	prepared *table.Table
	// checkedOn, for a sync, is the metadata whose index the segment to
	// commit was checked against (nil: the table as the job loaded it):
	// another snapshot's statistics file changed since means a rebase.
	checkedOn table.Metadata
	// has, when set, reports the data files' columns the index covers
	// already, whose filters the run does not write again (a sync of a
	// file some of whose columns failed before).
	has func(df filescan.File, fieldID int) bool
	// runDir is a shard's run directory (index/runfiles), lease its lease there;
	// rebuildRun marks the shard of a rebuild, whose linking copies nothing.
	runDir     string
	lease      *runfiles.Lease
	rebuildRun bool
	// mergedBack are the statistics files a run's commits replaced unseen
	// and merged back. Should another commit land on top of the run's
	// before the merge-back commits, the next attempt's base lacks them:
	// their filters that base does not hold are copied again
	// (copyMergedBack).
	mergedBack []table.StatisticsFile
	// ix is the table's index as the job loaded it to learn its columns,
	// and ixErrs what Load could not read.
	ix     *index.TableIndex
	ixErrs []error
	// columns are the index's columns and rates the job's segments record
	// in table metadata (indexfile.PropIndexColumns).
	columns map[int]float64
	// runLinks are the finished shards' segments of stalled runs that a
	// sync links (finishedShards).
	runLinks []runSegment
}

func newJob(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*job, error) {
	j := &job{cat: cat, ident: ident, o: o, start: time.Now()}
	name := strings.Join(ident, ".")
	if err := CheckRunLease(o.RunLease); err != nil {
		return nil, err
	}
	var err error
	if j.tbl, err = catalog.LoadTable(ctx, cat, ident, commitOptions(o.Logger)...); err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	if j.snap, err = resolveSnapshot(j.tbl, o.SnapshotID); err != nil {
		return nil, err
	}
	if j.fs, err = writableFS(ctx, j.tbl); err != nil {
		return nil, err
	}
	if o.Shard != nil {
		shard := *o.Shard
		if shard.Run == "" {
			shard.Run = DefaultRun(j.snap.SnapshotID, shard.Count)
		}
		if err := shard.check(); err != nil {
			return nil, err
		}
		j.o.Shard = &shard
		j.keepEntries = true // a shard never drops what other shards committed
		id, err := j.openRun(j.snap.SnapshotID)
		if err != nil {
			return nil, err
		}
		if j.snap, err = resolveSnapshot(j.tbl, id); err != nil {
			j.closeRun()
			return nil, fmt.Errorf("run %s: %w", shard.Run, err)
		}
	}
	j.sum = &Summary{SnapshotID: j.snap.SnapshotID, FilesFailed: []FileFailure{}}
	if j.o.Shard != nil {
		j.sum.Shard = &ShardSummary{Shard: *j.o.Shard}
	}
	if err := j.chooseColumns(ctx); err != nil {
		j.closeRun()
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	return j, nil
}

// run indexes files into a new segment and commits it.
func (j *job) run(ctx context.Context, files []filescan.File) (*Summary, error) {
	seg, err := j.writeIndex(ctx, files)
	if err != nil {
		return nil, err
	}
	if j.o.Shard != nil { // a shard writes a marker even for no file: its run counts it
		return j.finishShard(ctx, seg)
	}
	if j.sum.FilesIndexed == 0 && len(j.runLinks) == 0 {
		j.fs.Remove(seg.Path)
		return j.finish(j.tbl), nil
	}
	start := time.Now()
	committed, tbl, err := j.commitVerified(ctx, seg)
	j.sum.WriteTime += time.Since(start)
	if err != nil {
		return nil, err
	}
	j.sum.StatisticsPath = committed.Path
	if committed.Broken != "" {
		j.sum.BrokenFiles = append(j.sum.BrokenFiles, committed.Broken)
	}
	j.sum.IndexBytes = committed.Stats.FileSize
	j.sum.BytesCopied = committed.BytesCopied
	return j.finish(tbl), nil
}

// finish completes the summary with the table as the run left it.
func (j *job) finish(tbl *table.Table) *Summary {
	j.sum.Segments, j.sum.v1Segments = 0, 0
	for sf := range tbl.Metadata().Statistics() {
		if index.HoldsEntries(sf) {
			j.sum.Segments += 1 + linkCount(sf)
		}
		if index.HoldsV1Entries(sf) {
			j.sum.v1Segments++
		}
	}
	j.sum.Duration = time.Since(j.start)
	return j.sum
}

func resolveSnapshot(tbl *table.Table, id int64) (*table.Snapshot, error) {
	if id == 0 {
		if snap := tbl.CurrentSnapshot(); snap != nil {
			return snap, nil
		}
		return nil, fmt.Errorf("table %s has no snapshot: nothing to index", strings.Join(tbl.Identifier(), "."))
	}
	if snap := tbl.SnapshotByID(id); snap != nil {
		return snap, nil
	}
	return nil, fmt.Errorf("table %s has no snapshot %d", strings.Join(tbl.Identifier(), "."), id)
}

// base returns the statistics file a new segment for the job's snapshot
// must carry blobs of, as meta lists it: the snapshot's statistics file when
// it holds other tools' blobs, or index entries a sync keeps; nil if none.
func (j *job) base(meta table.Metadata) *table.StatisticsFile {
	sf, ok := catalog.StatisticsFileOf(meta, j.snap.SnapshotID)
	if !ok || !(hasForeignBlobs(sf) || j.keepEntries && index.HoldsEntries(sf)) {
		return nil
	}
	return &sf
}

// current returns the path of the snapshot's statistics file in meta, ""
// if it has none.
func (j *job) current(meta table.Metadata) string {
	sf, _ := catalog.StatisticsFileOf(meta, j.snap.SnapshotID)
	return sf.StatisticsPath
}

// carryFrom copies into sw what a new segment for the snapshot keeps of the
// statistics file sf (if any): other tools' blobs, and for a sync the
// filters.
func (j *job) carryFrom(sw *indexfile.Writer, sf *table.StatisticsFile) error {
	if sf == nil {
		return nil
	}
	err := sw.CopyForeign(j.fs, *sf)
	if err == nil && j.keepEntries && index.HoldsEntries(*sf) {
		var seg index.Segment
		if seg, err = index.ReadSegment(j.fs, *sf); err != nil {
			err = &indexfile.UnreadableError{Path: sf.StatisticsPath, Err: err}
		} else if l, ok := linkable(seg); ok && j.o.Shard != nil {
			sw.Link(l) // a run links what it carries, never copying a big segment
		} else {
			err = sw.CopyFilters(j.fs, []index.Segment{seg}, func(int, int, index.StoredFilter) bool { return true })
			for _, l := range seg.Links() {
				sw.Link(l)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("carry over the blobs of the snapshot's statistics file: %w", err)
	}
	return nil
}

// segmentOptions are the options of the job's segment writers.
func (j *job) segmentOptions() segment.WriterOptions {
	return segment.WriterOptions{SnapshotID: j.snap.SnapshotID, SequenceNumber: j.snap.SequenceNumber, MemoryBudget: j.o.MemoryBudget, AllowEmpty: true}
}

// writeIndex reads the data files with o.Parallel workers, fed by reads
// ahead of up to o.RequestsInFlight requests (filescan.ReadFiles), and streams their
// filters into a new segment file as they finish, after the blobs carried
// from the snapshot's statistics file. Memory holds the files in flight and
// a bounded amount read ahead, never the table.
func (j *job) writeIndex(ctx context.Context, files []filescan.File) (indexfile.File, error) {
	meta := j.tbl.Metadata()
	base, replaces := j.base(meta), j.current(meta)
	if j.o.Shard != nil {
		base, replaces = nil, "" // a shard's segment carries nothing: the file committed links it
	}
	sw, err := j.newSegment(base, replaces)
	if err != nil {
		return indexfile.File{}, err
	}
	sw.Empty = j.o.Shard != nil
	for _, rs := range j.runLinks {
		sw.Link(rs.link)
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := j.readConfig()
	if err != nil {
		sw.Abandon()
		return indexfile.File{}, err
	}
	var bitsets filescan.FilterPool // the filters' bitsets, from the collector back to the workers
	rc.Filters = &bitsets
	results := filescan.ReadFiles(ctx, files, rc)

	// Progress is reported here, where results are collected one at a
	// time, rather than in the workers: that is what serializes the calls.
	progress := Progress{FilesTotal: len(files)}
	report := func(df *filescan.File) { // nil: the start
		if j.o.Progress == nil {
			return
		}
		if df != nil {
			progress.FilesDone++
			progress.Bytes += df.Size
			progress.File = df.Path
		}
		j.o.Progress(progress)
	}
	report(nil)

	var failure error
	for r := range results {
		if failure != nil {
			continue // drain so the workers can stop
		}
		j.sum.ReadTime += r.Elapsed
		if r.Err != nil {
			if j.o.FailFast || parent.Err() != nil {
				failure = fmt.Errorf("index %s: %w", r.File.Path, r.Err)
				cancel()
				continue
			}
			j.sum.FilesFailed = append(j.sum.FilesFailed, FileFailure{Path: r.File.Path, Error: r.Err.Error()})
			report(&r.File)
			continue
		}
		indexed := false
		for _, f := range r.Filters {
			if f.Err != nil {
				if j.o.FailFast {
					failure = fmt.Errorf("index %s: %w", r.File.Path, f.Err)
					cancel()
					break
				}
				j.sum.FilesFailed = append(j.sum.FilesFailed, FileFailure{Path: r.File.Path, Column: j.cols[f.Col].Name, Error: f.Err.Error()})
				j.sum.PerColumn[f.Col].FilesFailedCount++
				continue
			}
			col := &j.cols[f.Col]
			j.sum.PerColumn[f.Col].FilesRead++
			if j.has != nil && j.has(r.File, col.Field.ID) {
				continue // a sync re-reading a file whose other column failed
			}
			start := time.Now()
			err := sw.Add(segment.FilterInput{
				File:    segment.File{Path: r.File.Path, Size: r.File.Size},
				FieldID: col.Field.ID, ValueType: col.Type, FPP: col.FPP, NDV: f.NDV,
				Bits: f.Filter.Bytes(),
			})
			j.sum.WriteTime += time.Since(start)
			if err != nil {
				failure = err
				cancel()
				break
			}
			bitsets.Put(f.Filter) // written: the bitset is free for the next file
			j.sum.Blobs++
			j.sum.PerColumn[f.Col].FilesIndexed++
			j.sum.DistinctValues += f.NDV
			indexed = true
		}
		if indexed {
			j.sum.FilesIndexed++
		}
		if failure == nil {
			report(&r.File)
		}
	}
	if failure == nil {
		failure = parent.Err() // cancelled: the files not yet read were never sent
	}
	if failure != nil {
		sw.Abandon()
		return indexfile.File{}, failure
	}
	start := time.Now()
	defer func() { j.sum.WriteTime += time.Since(start) }()
	return sw.Finish()
}

// readConfig is how the job reads its data files (Options.Parallel,
// RequestsInFlight, MemoryBudget, knobs.DisablePrefetch).
func (j *job) readConfig() (filescan.Config, error) {
	rc := filescan.Config{
		FS: j.fs, Columns: scanColumns(j.cols), NameMapping: j.tbl.Metadata().NameMapping(),
		MaxFilterBytes: j.o.MaxFilterBytes, NoDictShortcut: j.o.knobs.DisableDictionaryShortcut,
		Parallel: j.o.Parallel, Requests: j.o.RequestsInFlight,
	}
	if rc.Requests < 0 {
		return rc, fmt.Errorf("requests in flight %d: want at least 1 (0: %d)", rc.Requests, filescan.DefaultRequestsInFlight)
	}
	if rc.Requests == 0 {
		rc.Requests = filescan.DefaultRequestsInFlight
	}
	if rc.Parallel <= 0 {
		rc.Parallel = runtime.NumCPU()
	}
	if rc.MaxFilterBytes <= 0 {
		rc.MaxFilterBytes = DefaultMaxFilterBytes
	}
	if !j.o.knobs.DisablePrefetch && (j.o.knobs.ForcePrefetch || !catalog.IsLocal(j.tbl.Location())) {
		budget := j.o.MemoryBudget
		if budget <= 0 {
			budget = segment.DefaultMemoryBudget
		}
		rc.PrefetchBytes = filescan.PrefetchBytesOf(budget)
	}
	return rc, nil
}

// commit registers the segment as its snapshot's statistics file. If another
// writer replaced that statistics file since the segment was written, an
// attempt commits a copy of the segment — blobs copied, never re-hashed —
// that carries the blobs of the file it replaces now, and the run's own new
// entries. Files no metadata references are removed: a copy whose attempt
// failed, and the original when a copy was committed or the commit was
// refused.
func (j *job) commit(ctx context.Context, seg indexfile.File) (indexfile.File, *table.Table, error) {
	id := j.snap.SnapshotID
	var committed indexfile.File
	j.prepared = nil
	tbl, err := catalog.CommitStatistics(ctx, j.cat, j.ident, func(ctx context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
		j.prepared = tbl
		snap := tbl.SnapshotByID(id)
		if snap == nil {
			return catalog.StatisticsChange{}, nil, fmt.Errorf("snapshot %d was expired while it was being indexed", id)
		}
		var replaced *table.StatisticsFile
		if sf, ok := catalog.StatisticsFileOf(tbl.Metadata(), id); ok {
			replaced = &sf
		}
		committed = seg
		discard := func() {}
		// A sync planned against the index as the job loaded it; another
		// writer's commit since (of this snapshot's statistics file or
		// another's) may cover files it indexed: rebase drops those.
		if now := j.current(tbl.Metadata()); now != seg.Replaces || j.keepEntries && otherStatisticsChanged(j.checked(), tbl.Metadata(), id) {
			copied, err := j.rebase(ctx, tbl.Metadata(), j.base(tbl.Metadata()), now, seg)
			if err != nil {
				return catalog.StatisticsChange{}, nil, err
			}
			committed = copied
			discard = func() { j.fs.Remove(copied.Path) }
		}
		if err := checkFresh(committed); err != nil { // wraps errStale
			discard()
			return catalog.StatisticsChange{}, nil, err
		}
		change := catalog.StatisticsChange{Set: []table.StatisticsFile{committed.StatisticsFile(snap, replaced)}}
		return change, discard, nil
	}, commitOptions(j.o.Logger)...)
	if err != nil {
		// Only a refused commit surely left the file unreferenced; after
		// another error the catalog may have applied it, and gc removes a
		// file no metadata references once its grace period is over.
		if errors.Is(err, table.ErrCommitFailed) || errors.Is(err, errStale) {
			j.fs.Remove(seg.Path)
		}
		return indexfile.File{}, nil, fmt.Errorf("commit the index of %s: %w", strings.Join(j.ident, "."), err)
	}
	if committed.Path != seg.Path {
		j.fs.Remove(seg.Path)
	}
	return committed, tbl, nil
}

// checked is the metadata the segment to commit was checked against.
func (j *job) checked() table.Metadata {
	if j.checkedOn == nil {
		return j.tbl.Metadata()
	}
	return j.checkedOn
}

// otherStatisticsChanged reports whether the statistics files of snapshots
// other than id differ between two versions of a table's metadata.
func otherStatisticsChanged(was, now table.Metadata, id int64) bool {
	paths := func(meta table.Metadata) map[int64]string {
		m := map[int64]string{}
		for sf := range meta.Statistics() {
			if sf.SnapshotID != id {
				m[sf.SnapshotID] = sf.StatisticsPath
			}
		}
		return m
	}
	return !maps.Equal(paths(was), paths(now))
}

// MaxUncommittedAge is how long after writing a segment file a run may
// still commit it. gc never deletes an unreferenced index file younger than
// twice this (maintenance.MinGCGrace, unless forced), so a file a run
// commits has not been deleted by gc, even with the run's clock and the
// storage's 30 minutes apart. A run past it fails rather than commit a file
// gc may have taken; the next run indexes its files again.
const MaxUncommittedAge = 30 * time.Minute

// clock is the indexer's time, replaced by tests.
var clock = time.Now

// errStale is why a run refuses to commit a file it wrote too long ago.
var errStale = errors.New("gc may have deleted it: not committed; run again")

// checkFresh refuses to commit a segment file older than MaxUncommittedAge.
func checkFresh(s indexfile.File) error {
	if age := clock().Sub(s.Finished); age > MaxUncommittedAge {
		return fmt.Errorf("index file %s was written %s ago, longer than the %s a run may take to commit one (%w)",
			s.Path, age.Round(time.Second), MaxUncommittedAge, errStale)
	}
	return nil
}

// commitOptions are the options of a run's commits: its logger, if any,
// gets the retries.
func commitOptions(log *slog.Logger) []catalog.CommitOption {
	if log == nil {
		return nil
	}
	return []catalog.CommitOption{catalog.WithLogger(log)}
}

// maxOverwrites bounds how often a run recommits after finding that its
// commit replaced a statistics file it had not seen.
const maxOverwrites = 5

// commitVerified commits the segment and then checks what the commit
// replaced. Iceberg has no requirement that guards one statistics file, so
// another run may have registered a file for the same snapshot between this
// run's load and its commit, and set-statistics replaced that file unseen.
// The metadata the commit replaced (the last of the metadata log) tells:
// when it held a statistics file for the snapshot that the run would have
// carried over but did not, the run commits again on top of it, so both
// runs' entries and any other tool's blobs stay in the index.
func (j *job) commitVerified(ctx context.Context, seg indexfile.File) (indexfile.File, *table.Table, error) {
	for range maxOverwrites {
		committed, tbl, err := j.commit(ctx, seg)
		if err != nil {
			return indexfile.File{}, nil, err
		}
		removed, err := ensureCommitted(ctx, j.cat, j.ident, j.fs, j.o.Logger, tbl, committed.Path)
		j.sum.BrokenFiles = append(j.sum.BrokenFiles, removed...)
		if err != nil {
			return indexfile.File{}, nil, err
		}
		missed, err := j.replacedUnseen(ctx, tbl, committed)
		if err != nil {
			return indexfile.File{}, nil, err
		}
		base := missed
		if missed != nil {
			// Merge what was replaced with this run's entries, expecting
			// the committed file to be the one the merge replaces in turn.
			j.mergedBack = append(j.mergedBack, *missed)
		} else if changed, err := j.othersCommittedUnseen(tbl); err != nil || !changed {
			return committed, tbl, err
		} else {
			// Another snapshot's statistics file changed between the
			// attempt and the commit: commit a copy without what it holds.
			base = j.base(j.prepared.Metadata())
		}
		if seg, err = j.rebase(ctx, tbl.Metadata(), base, committed.Path, committed); err != nil {
			return indexfile.File{}, nil, err
		}
	}
	return indexfile.File{}, nil, fmt.Errorf("commit the index of %s: other commits raced it %d times", strings.Join(j.ident, "."), maxOverwrites)
}

// othersCommittedUnseen reports, for a sync, whether a statistics file of
// another snapshot changed between the table the commit producing tbl was
// prepared on and the one it replaced: a commit the attempt did not see,
// which may cover files the sync indexed.
func (j *job) othersCommittedUnseen(tbl *table.Table) (bool, error) {
	if !j.keepEntries || j.prepared == nil {
		return false, nil
	}
	meta, err := previousMetadata(j.fs, tbl, j.prepared)
	if err != nil || meta == nil {
		return false, err
	}
	return otherStatisticsChanged(j.prepared.Metadata(), meta, j.snap.SnapshotID), nil
}

// replacedUnseen returns the statistics file of the snapshot that the
// commit producing tbl replaced and that the committed segment should have
// carried over but did not, or nil.
func (j *job) replacedUnseen(ctx context.Context, tbl *table.Table, committed indexfile.File) (*table.StatisticsFile, error) {
	meta, err := previousMetadata(j.fs, tbl, j.prepared)
	if err != nil || meta == nil {
		return nil, err
	}
	if j.current(meta) == committed.Replaces {
		return nil, nil // it replaced what it was written to replace
	}
	return j.base(meta), nil
}

// newSegment starts a segment file of the job's snapshot that will replace
// the statistics file at replaces, with the blobs of base carried over.
func (j *job) newSegment(base *table.StatisticsFile, replaces string) (*indexfile.Writer, error) {
	path, err := indexfile.NewPath(j.tbl, j.snap.SnapshotID)
	if err != nil {
		return nil, err
	}
	// try starts the segment and carries what carry copies of base.
	try := func(carry func(*indexfile.Writer) error) (*indexfile.Writer, error) {
		sw, err := indexfile.Create(j.fs, path, j.segmentOptions(), clock)
		if err != nil {
			return nil, err
		}
		sw.File.Replaces = replaces
		sw.File.Columns = j.columns
		if err := carry(sw); err != nil {
			sw.Abandon()
			return nil, err
		}
		return sw, nil
	}
	sw, err := try(func(sw *indexfile.Writer) error { return j.carryFrom(sw, base) })
	if err == nil || !indexfile.IsBroken(err) {
		return sw, err
	}
	// A broken index file is repaired, never trusted: the new segment
	// replaces it with only the other tools' blobs that can still be read,
	// and its data files, which the index no longer covers, are indexed
	// again (by this sync, whose index did not load them, or by the next).
	if j.o.Logger != nil {
		j.o.Logger.Warn("index file cannot be read: replaced without its filters",
			"table", strings.Join(j.ident, "."), "statistics_path", base.StatisticsPath,
			"blob_types", blobTypes(*base), "error", err.Error())
	}
	sw, err = try(func(sw *indexfile.Writer) error { return sw.CopyForeign(j.fs, *base) })
	if err != nil && indexfile.IsBroken(err) {
		if j.o.Logger != nil {
			j.o.Logger.Warn("other tools' blobs of a broken index file are lost",
				"table", strings.Join(j.ident, "."), "statistics_path", base.StatisticsPath, "blob_types", blobTypes(*base))
		}
		sw, err = try(func(*indexfile.Writer) error { return nil })
	}
	if err != nil {
		return nil, err
	}
	sw.File.Broken = base.StatisticsPath
	return sw, nil
}

// blobTypes lists the blob types a statistics entry says its file holds.
func blobTypes(sf table.StatisticsFile) []string {
	var types []string
	for _, bm := range sf.BlobMetadata {
		if t := string(bm.Type); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}

// ensureCommitted checks, after a run's commit, that every index file
// table metadata lists exists, and removes the reference of any that does
// not at once (the index is advisory: the files it covered are indexed
// again by the next sync), returning their paths. One of own, the files
// the run itself committed, missing means gc deleted it before the commit
// landed (which the grace periods exclude unless gc was forced): the run
// then fails, saying so.
func ensureCommitted(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, fs icebergio.IO, log *slog.Logger, tbl *table.Table, own ...string) ([]string, error) {
	var missing []string
	for sf := range tbl.Metadata().Statistics() {
		if !index.HoldsEntries(sf) {
			continue
		}
		f, err := fs.Open(sf.StatisticsPath)
		if err == nil {
			_, err = f.Stat()
			f.Close()
		}
		if errors.Is(err, iofs.ErrNotExist) {
			missing = append(missing, sf.StatisticsPath)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	_, err := catalog.CommitStatistics(ctx, cat, ident, func(ctx context.Context, now *table.Table) (catalog.StatisticsChange, func(), error) {
		var change catalog.StatisticsChange
		for sf := range now.Metadata().Statistics() {
			if slices.Contains(missing, sf.StatisticsPath) {
				change.Remove = append(change.Remove, sf.SnapshotID)
			}
		}
		return change, func() {}, nil
	}, commitOptions(log)...)
	name := strings.Join(ident, ".")
	if err != nil {
		return nil, fmt.Errorf("index files of %s are missing (%s), and removing their references failed: %w",
			name, strings.Join(missing, ", "), err)
	}
	if log != nil {
		log.Warn("index files are missing: references removed, their data files will be indexed again",
			"table", name, "files", missing)
	}
	for _, path := range own {
		if slices.Contains(missing, path) {
			return missing, fmt.Errorf("index file %s of %s vanished after the commit that registered it, deleted by gc with a grace period shorter than %s (forced) or by hand; its reference was removed, and the next sync indexes its data files again",
				path, name, 2*MaxUncommittedAge)
		}
	}
	return missing, nil
}

// previousMetadata reads the metadata the latest commit of tbl replaced (the
// last of its metadata log), nil if there is none. When that is the
// metadata file of seen, the table the commit was prepared on (nil: none),
// no commit came between, and as metadata files are never rewritten its
// metadata is returned without reading the file again.
func previousMetadata(fs icebergio.IO, tbl, seen *table.Table) (table.Metadata, error) {
	var previous string
	for entry := range tbl.Metadata().PreviousFiles() {
		previous = entry.MetadataFile
	}
	if previous == "" {
		return nil, nil
	}
	if seen != nil && seen.MetadataLocation() == previous {
		return seen.Metadata(), nil
	}
	f, err := fs.Open(previous)
	if err != nil {
		return nil, fmt.Errorf("read the metadata the commit replaced: %w", err)
	}
	defer f.Close()
	meta, err := table.ParseMetadata(f)
	if err != nil {
		return nil, fmt.Errorf("read the metadata the commit replaced, %s: %w", previous, err)
	}
	return meta, nil
}

// rebase writes a copy of seg's new entries that carries the blobs of base
// (nil: none) instead of those seg carries, to replace the statistics file
// at replaces in meta. A sync's copy leaves out its filters that the index
// it will be part of holds already — meta's other statistics files and
// what base carries — so that a commit made meanwhile (a late run linking
// the files the sync indexed after the run's lease expired) leaves no
// filter twice.
func (j *job) rebase(ctx context.Context, meta table.Metadata, base *table.StatisticsFile, replaces string, seg indexfile.File) (indexfile.File, error) {
	covered := func(index.StoredFilter) bool { return false }
	linked := map[string]bool{}
	if j.keepEntries {
		j.checkedOn = meta
		ix, _ := index.Load(ctx, j.fs, withStatisticsFile(meta, j.snap.SnapshotID, base), nil) // what cannot be read covers nothing
		covered = func(f index.StoredFilter) bool {
			_, ok := ix.Lookup(f.DataFile, f.DataFileSize, f.FieldID)
			return ok
		}
		for _, s := range ix.Segments() {
			if s.Link != nil {
				linked[s.Link.Path] = true
			}
		}
	}
	sw, err := j.newSegment(base, replaces)
	if err != nil {
		return indexfile.File{}, err
	}
	own, err := index.ReadSegment(j.fs, seg.Location())
	if err == nil {
		err = sw.CopyFilters(j.fs, []index.Segment{own}, func(_, _ int, f index.StoredFilter) bool {
			return seg.Own[segment.File{Path: f.DataFile, Size: f.DataFileSize}] && !covered(f)
		})
	}
	for _, rs := range j.runLinks {
		// A finished shard's segment the index now links or partly
		// covers (the late run linked it) is linked or copied only for
		// what nothing else holds.
		if err != nil || linked[rs.link.Path] {
			continue
		}
		if !slices.ContainsFunc(slices.Collect(rs.seg.Filters()), covered) {
			sw.Link(rs.link)
			continue
		}
		err = sw.CopyFilters(j.fs, []index.Segment{rs.seg}, func(_, _ int, f index.StoredFilter) bool { return !covered(f) })
	}
	if err == nil {
		err = j.copyMergedBack(sw, base, own, seg.Own)
	}
	if err != nil {
		sw.Abandon()
		return indexfile.File{}, err
	}
	sw.File.Own = seg.Own
	return sw.Finish()
}

// copyMergedBack copies into sw the filters of the files the run merged
// back (job.mergedBack) that neither base — what sw carries — nor the run's
// own filters (those of ownSeg's files in ownFiles) hold, so no attempt
// drops what an earlier one merged back.
func (j *job) copyMergedBack(sw *indexfile.Writer, base *table.StatisticsFile, ownSeg index.Segment, ownFiles map[segment.File]bool) error {
	var from []index.Segment
	for _, sf := range j.mergedBack {
		if base == nil || sf.StatisticsPath != base.StatisticsPath {
			seg, err := index.ReadSegment(j.fs, sf)
			if err != nil {
				return &indexfile.UnreadableError{Path: sf.StatisticsPath, Err: err}
			}
			from = append(from, seg)
		}
	}
	if len(from) == 0 {
		return nil
	}
	held, _, err := j.heldBy(base)
	if err != nil {
		return err
	}
	for f := range ownSeg.Filters() {
		if ownFiles[segment.File{Path: f.DataFile, Size: f.DataFileSize}] {
			held[filterKey{f.DataFile, f.DataFileSize, f.FieldID}] = true
		}
	}
	return sw.CopyFilters(j.fs, from, func(_, _ int, f index.StoredFilter) bool {
		key := filterKey{f.DataFile, f.DataFileSize, f.FieldID}
		if held[key] {
			return false
		}
		held[key] = true // once, however many merged-back files hold it
		return true
	})
}

// hasForeignBlobs reports whether a statistics file holds blobs of other
// tools, by what table metadata lists for it.
func hasForeignBlobs(sf table.StatisticsFile) bool {
	return slices.ContainsFunc(sf.BlobMetadata, func(bm table.BlobMetadata) bool { return !index.IsIndexBlobType(puffin.BlobType(bm.Type)) })
}

// linkCount is how many segment files the index file sf links, as its
// directory item in table metadata counts them (segment.PropLinks; a
// repair registers a file again when the count is wrong or missing).
func linkCount(sf table.StatisticsFile) int {
	for _, bm := range sf.BlobMetadata {
		if puffin.BlobType(bm.Type) == segment.DirectoryBlobType {
			n, _ := strconv.Atoi(bm.Properties[segment.PropLinks])
			return max(n, 0)
		}
	}
	return 0
}
