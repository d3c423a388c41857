// Package build is the batch job: it walks a snapshot's live data files,
// reads only the indexed columns, builds one Split Block Bloom Filter per
// data file and column, streams them into one Puffin file under the table's
// metadata location, and registers that file as the snapshot's statistics
// file through the table's catalog.
package build

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
)

// DefaultMaxFilterBytes caps one filter, as Parquet writers cap theirs.
const DefaultMaxFilterBytes = 128 << 20

// Options configure a build. The zero value indexes the current snapshot's
// columns chosen by table properties, with all CPUs.
type Options struct {
	Columns        []string // column names; empty: the table's bloom-filter properties
	FPP            float64  // target false-positive rate; 0: per-column property or DefaultFPP
	SnapshotID     int64    // 0: the current snapshot
	Parallel       int      // data files read at once; 0: runtime.NumCPU()
	FailFast       bool     // a data file that cannot be read fails the build instead of staying unindexed
	MaxFilterBytes int      // 0: DefaultMaxFilterBytes
}

// FileFailure is a data file the build could not read. It stays unindexed,
// which is safe: an uncovered file is never pruned.
type FileFailure struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Summary reports what a build did.
type Summary struct {
	SnapshotID     int64         `json:"snapshot_id"`
	Columns        []string      `json:"columns"`
	FilesTotal     int           `json:"files_total"`
	FilesIndexed   int           `json:"files_indexed"`
	FilesFailed    []FileFailure `json:"files_failed"`
	Blobs          int           `json:"blobs"`
	IndexBytes     int64         `json:"index_bytes"`
	DistinctValues int64         `json:"distinct_values"`
	StatisticsPath string        `json:"statistics_path,omitempty"`
	Duration       time.Duration `json:"duration_ns"`
}

// Build indexes a snapshot of the table and commits the index. Data files
// that cannot be read are reported in the summary and left unindexed unless
// FailFast is set. Nothing is committed when no data file could be indexed.
func Build(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*Summary, error) {
	start := time.Now()
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	snap, err := resolveSnapshot(tbl, o.SnapshotID)
	if err != nil {
		return nil, err
	}
	cols, err := ResolveColumns(tbl.Schema(), tbl.Properties(), o.Columns, o.FPP)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("table %s storage: %w", name, err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("table %s: its storage cannot be written", name)
	}
	files, err := liveDataFiles(fs, tbl.Metadata(), snap)
	if err != nil {
		return nil, err
	}
	sum := &Summary{SnapshotID: snap.SnapshotID, FilesTotal: len(files), FilesFailed: []FileFailure{}}
	for _, c := range cols {
		sum.Columns = append(sum.Columns, c.Name)
	}

	path, err := newSegmentPath(tbl, snap.SnapshotID)
	if err != nil {
		return nil, err
	}
	seg, err := writeIndex(ctx, wfs, path, tbl, snap, cols, files, o, sum)
	if err != nil {
		return nil, err
	}
	if sum.FilesIndexed == 0 {
		wfs.Remove(seg.path)
		sum.Duration = time.Since(start)
		return sum, nil
	}
	committed, err := commit(ctx, cat, ident, wfs, snap.SnapshotID, seg)
	if err != nil {
		return nil, err
	}
	sum.StatisticsPath = committed.path
	sum.IndexBytes = committed.stats.FileSize
	sum.Duration = time.Since(start)
	return sum, nil
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

type fileResult struct {
	file    dataFile
	filters []filterOf
	err     error
}

// writeIndex reads the data files with o.Parallel workers and streams their
// filters into a new segment file as they finish. Memory holds the files in
// flight, never the table. The snapshot's current statistics file, if any,
// gives the foreign blobs to carry over.
func writeIndex(ctx context.Context, fs icebergio.WriteFileIO, path string, tbl *table.Table, snap *table.Snapshot,
	cols []Column, files []dataFile, o Options, sum *Summary) (segmentFile, error) {
	sw, err := createSegment(fs, path)
	if err != nil {
		return segmentFile{}, err
	}
	if sf, ok := catalog.StatisticsFileOf(tbl.Metadata(), snap.SnapshotID); ok && hasForeignBlobs(sf) {
		src, closeSrc, err := openPuffin(fs, sf)
		if err == nil {
			err = sw.copyForeign(src, sf.StatisticsPath)
			closeSrc()
		}
		if err != nil {
			sw.abandon()
			return segmentFile{}, fmt.Errorf("carry over the blobs of the snapshot's statistics file: %w", err)
		}
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = runtime.NumCPU()
	}
	maxBytes := o.MaxFilterBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFilterBytes
	}
	jobs := make(chan dataFile)
	results := make(chan fileResult, parallel)
	var workers sync.WaitGroup
	for range parallel {
		workers.Add(1)
		go func() {
			defer workers.Done()
			ix := newFileIndexer(fs, cols, tbl.Metadata().NameMapping(), maxBytes)
			for df := range jobs {
				filters, err := ix.index(ctx, df)
				results <- fileResult{file: df, filters: filters, err: err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, df := range files {
			select {
			case jobs <- df:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { workers.Wait(); close(results) }()

	var failure error
	for r := range results {
		if failure != nil {
			continue // drain so the workers can stop
		}
		if r.err != nil {
			if o.FailFast || parent.Err() != nil {
				failure = fmt.Errorf("index %s: %w", r.file.path, r.err)
				cancel()
				continue
			}
			sum.FilesFailed = append(sum.FilesFailed, FileFailure{Path: r.file.path, Error: r.err.Error()})
			continue
		}
		for _, f := range r.filters {
			e := index.Entry{
				DataFile: r.file.path, DataFileSize: r.file.size,
				FieldID: cols[f.col].Field.ID, ValueType: cols[f.col].Type,
				NDV: f.ndv, FPP: cols[f.col].FPP,
				SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
			}
			if err := sw.add(e, f.filter.Bytes()); err != nil {
				failure = err
				cancel()
				break
			}
			sum.Blobs++
			sum.DistinctValues += f.ndv
		}
		sum.FilesIndexed++
	}
	if failure == nil {
		failure = parent.Err() // cancelled: the files not yet read were never sent
	}
	if failure != nil {
		sw.abandon()
		return segmentFile{}, failure
	}
	return sw.finish()
}

// commit registers the segment as its snapshot's statistics file. If another
// writer replaced that statistics file since the segment was written, an
// attempt commits a copy of the segment — blobs copied, never re-hashed —
// that carries the other tools' blobs of the file it replaces now. Files no
// metadata references are removed: a copy whose attempt failed, and the
// original when a copy was committed or the commit was refused.
func commit(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, fs icebergio.WriteFileIO,
	snapshotID int64, seg segmentFile) (segmentFile, error) {
	var committed segmentFile
	_, err := catalog.CommitStatistics(ctx, cat, ident, func(ctx context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
		snap := tbl.SnapshotByID(snapshotID)
		if snap == nil {
			return catalog.StatisticsChange{}, nil, fmt.Errorf("snapshot %d was expired while it was being indexed", snapshotID)
		}
		var replaced *table.StatisticsFile
		base := ""
		if sf, ok := catalog.StatisticsFileOf(tbl.Metadata(), snapshotID); ok {
			replaced = &sf
			if hasForeignBlobs(sf) {
				base = sf.StatisticsPath
			}
		}
		committed = seg
		discard := func() {}
		if base != seg.base {
			copied, err := rebase(fs, tbl, snapshotID, seg, replaced, base != "")
			if err != nil {
				return catalog.StatisticsChange{}, nil, err
			}
			committed = copied
			discard = func() { fs.Remove(copied.path) }
		}
		change := catalog.StatisticsChange{Set: []table.StatisticsFile{committed.statisticsFile(snap, replaced)}}
		return change, discard, nil
	})
	if err != nil {
		// Only a refused commit surely left the file unreferenced; after
		// another error the catalog may have applied it, and gc removes a
		// file no metadata references once its grace period is over.
		if errors.Is(err, table.ErrCommitFailed) {
			fs.Remove(seg.path)
		}
		return segmentFile{}, fmt.Errorf("commit the index of %s: %w", strings.Join(ident, "."), err)
	}
	if committed.path != seg.path {
		fs.Remove(seg.path)
	}
	return committed, nil
}

// hasForeignBlobs reports whether a statistics file holds blobs of other
// tools, by what table metadata lists for it.
func hasForeignBlobs(sf table.StatisticsFile) bool {
	for _, bm := range sf.BlobMetadata {
		if bm.Type != table.BlobType(index.BlobType) {
			return true
		}
	}
	return false
}

// rebase writes a copy of seg's index entries that carries the foreign blobs
// of replaced (when withForeign) instead of those seg carries.
func rebase(fs icebergio.WriteFileIO, tbl *table.Table, snapshotID int64, seg segmentFile,
	replaced *table.StatisticsFile, withForeign bool) (segmentFile, error) {
	path, err := newSegmentPath(tbl, snapshotID)
	if err != nil {
		return segmentFile{}, err
	}
	sw, err := createSegment(fs, path)
	if err != nil {
		return segmentFile{}, err
	}
	err = func() error {
		if withForeign {
			src, closeSrc, err := openPuffin(fs, *replaced)
			if err != nil {
				return err
			}
			defer closeSrc()
			if err := sw.copyForeign(src, replaced.StatisticsPath); err != nil {
				return err
			}
		}
		own, closeOwn, err := openPuffin(fs, table.StatisticsFile{StatisticsPath: seg.path,
			FileSizeInBytes: seg.stats.FileSize, FileFooterSizeInBytes: seg.stats.FooterSize})
		if err != nil {
			return err
		}
		defer closeOwn()
		for i, b := range own.Blobs() {
			if index.IsEntry(b) {
				if err := sw.copyEntry(own, i); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	if err != nil {
		sw.abandon()
		return segmentFile{}, err
	}
	return sw.finish()
}
