package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// InspectCmd is `icebloom inspect TABLE`.
type InspectCmd struct {
	Table    string `arg:"positional,required" help:"table identifier, ns.table"`
	Snapshot int64  `arg:"--snapshot" help:"snapshot whose live files coverage is measured against [default: current]"`
}

// InspectOutput is the JSON output of inspect.
type InspectOutput struct {
	SnapshotID  int64         `json:"snapshot_id"`
	LiveFiles   int           `json:"live_files"`
	Segments    []SegmentInfo `json:"segments"`
	Columns     []ColumnInfo  `json:"columns"`
	IndexErrors []string      `json:"index_errors"`
	// Runs are the table's sharded runs (those whose records gc keeps):
	// per run, its shards committed, the files it covers, the files of its
	// missing shards covered otherwise, and whether it is complete.
	Runs []indexer.RunStatus `json:"sharded_runs"`
}

// SegmentInfo describes one statistics file holding index entries.
type SegmentInfo struct {
	Path       string `json:"path"`
	SnapshotID int64  `json:"snapshot_id"`
	Bytes      int64  `json:"bytes"`
	// Format is the index format version of the segment: 1 or 2.
	Format int `json:"format"`
	// Groups counts a v2 segment's groups.
	Groups  int `json:"groups"`
	Entries int `json:"entries"`
	// ForeignBlobs counts the blob-metadata items of other tools that table
	// metadata lists for the file.
	ForeignBlobs int `json:"foreign_blobs"`
	// LinkedFrom is the statistics file linking the segment, "" for one
	// table metadata lists; Run and Shard ("I/N") the sharded run that
	// wrote it.
	LinkedFrom string `json:"linked_from,omitempty"`
	Run        string `json:"run,omitempty"`
	Shard      string `json:"shard,omitempty"`
}

// ColumnInfo describes the index of one column against the live files.
type ColumnInfo struct {
	FieldID    int       `json:"field_id"`
	Name       string    `json:"name"`
	ValueTypes []string  `json:"value_types"`
	Covered    int       `json:"covered_files"`
	Uncovered  int       `json:"uncovered_files"`
	IndexBytes int64     `json:"index_bytes"`
	NDVMin     int64     `json:"ndv_min"`
	NDVMax     int64     `json:"ndv_max"`
	NDVMean    float64   `json:"ndv_mean"`
	FPPs       []float64 `json:"fpps"`
}

func (c *InspectCmd) run(ctx context.Context, e *env) error {
	tbl, err := e.table(ctx, c.Table)
	if err != nil {
		return err
	}
	out, err := inspect(ctx, tbl, c.Snapshot)
	if err != nil {
		return err
	}
	for _, msg := range out.IndexErrors {
		e.log.Warn(indexProblem, "command", "inspect", "table", c.Table, "error", msg)
	}
	if e.json {
		return e.printJSON(out)
	}
	e.printf("snapshot %d: %s\n", out.SnapshotID, plural(out.LiveFiles, "live data file"))
	if len(out.Segments) == 0 && len(out.IndexErrors) == 0 {
		e.printf("%s; nothing to inspect (exit 0: a table without an index is a state to report; verify, a check, fails)\n", noIndex(c.Table))
		printRuns(e, out.Runs) // a run in progress has committed nothing yet
		return nil
	}
	e.printf("%s index entries\n", plural(len(out.Segments), "segment holds", "segments hold"))
	for _, s := range out.Segments {
		e.printf("  %s (snapshot %d, format v%d, %s): %s, %s of other tools, %s\n",
			s.Path, s.SnapshotID, s.Format, plural(s.Groups, "group"), plural(s.Entries, "entry"),
			plural(s.ForeignBlobs, "blob"), cli.BytesText(s.Bytes))
		if s.Run != "" {
			e.printf("    shard %s of run %s, linked by %s\n", s.Shard, s.Run, s.LinkedFrom)
		} else if s.LinkedFrom != "" {
			e.printf("    linked by %s\n", s.LinkedFrom)
		}
	}
	printRuns(e, out.Runs)
	for _, col := range out.Columns {
		e.printf("column %s (field %d, hashed as %s): %s covered, %d not covered, %s of filters, ndv %d..%d (mean %.0f), fpp %s\n",
			col.Name, col.FieldID, strings.Join(col.ValueTypes, ", "), plural(col.Covered, "file"), col.Uncovered,
			cli.BytesText(col.IndexBytes), col.NDVMin, col.NDVMax, col.NDVMean, floatsText(col.FPPs))
	}
	return nil
}

// inspect measures a table's index against a snapshot's live data files.
func inspect(ctx context.Context, tbl *table.Table, snapshotID int64) (*InspectOutput, error) {
	var opts []table.ScanOption
	if snapshotID != 0 {
		opts = append(opts, table.WithSnapshotID(snapshotID))
	}
	scan := tbl.Scan(opts...)
	snap := scan.Snapshot()
	if snap == nil {
		return nil, fmt.Errorf("table %s has no snapshot", strings.Join(tbl.Identifier(), "."))
	}
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	type file struct {
		path string
		size int64
	}
	var live []file
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.File.FilePath()] {
			seen[t.File.FilePath()] = true
			live = append(live, file{t.File.FilePath(), t.File.FileSizeBytes()})
		}
	}
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, err
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	out := &InspectOutput{SnapshotID: snap.SnapshotID, LiveFiles: len(live), Segments: []SegmentInfo{},
		Columns: []ColumnInfo{}, IndexErrors: []string{}, Runs: []indexer.RunStatus{}}
	for _, err := range errs {
		out.IndexErrors = append(out.IndexErrors, withRepair(strings.Join(tbl.Identifier(), "."), err).Error())
	}
	byField := map[int]*ColumnInfo{}
	liveEntries := map[int]int{}
	for _, seg := range ix.Segments() {
		info := SegmentInfo{Path: seg.File.StatisticsPath, SnapshotID: seg.File.SnapshotID,
			Bytes: seg.File.FileSizeInBytes, Format: 1}
		if dir := seg.Directory(); dir != nil {
			info.Format, info.Groups = 2, len(dir.Groups)
		}
		if l := seg.Link; l != nil {
			info.LinkedFrom = seg.LinkedFrom
			if l.Run != "" {
				info.Run, info.Shard = l.Run, fmt.Sprintf("%d/%d", l.Shard, l.Shards)
			}
		}
		for _, bm := range seg.File.BlobMetadata {
			if !index.IsIndexBlobType(puffin.BlobType(bm.Type)) {
				info.ForeignBlobs++
			}
		}
		for en := range seg.Filters() {
			info.Entries++
			col := byField[en.FieldID]
			if col == nil {
				col = &ColumnInfo{FieldID: en.FieldID, Name: fmt.Sprint("field ", en.FieldID), NDVMin: en.NDV}
				if name, ok := tbl.Schema().FindColumnName(en.FieldID); ok {
					col.Name = name
				}
				byField[en.FieldID] = col
			}
			if !seen[en.DataFile] {
				continue // the entry's file is not live in this snapshot
			}
			liveEntries[en.FieldID]++
			col.IndexBytes += int64(en.Blocks) * sbbf.BlockBytes
			col.NDVMin, col.NDVMax = min(col.NDVMin, en.NDV), max(col.NDVMax, en.NDV)
			col.NDVMean += float64(en.NDV)
			if vt := en.ValueType.String(); !slices.Contains(col.ValueTypes, vt) {
				col.ValueTypes = append(col.ValueTypes, vt)
			}
			if !slices.Contains(col.FPPs, en.FPP) {
				col.FPPs = append(col.FPPs, en.FPP)
			}
		}
		out.Segments = append(out.Segments, info)
	}
	ids := make([]int, 0, len(byField))
	for id := range byField {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		col := byField[id]
		for _, f := range live {
			if _, ok := ix.Lookup(f.path, f.size, id); ok {
				col.Covered++
			} else {
				col.Uncovered++
			}
		}
		if n := liveEntries[id]; n > 0 {
			col.NDVMean /= float64(n)
		}
		out.Columns = append(out.Columns, *col)
	}
	files := make([]segment.File, len(live))
	for i, f := range live {
		files[i] = segment.File{Path: f.path, Size: f.size}
	}
	runs, err := indexer.Runs(tbl, fs, ix, files, ids)
	if err != nil {
		out.IndexErrors = append(out.IndexErrors, err.Error()) // the index itself was read
	} else if runs != nil {
		out.Runs = runs
	}
	return out, nil
}

// intsText lists numbers, "0, 3".
func intsText(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// noIndex says that a table has no index and how to build one.
func noIndex(table string) string {
	return fmt.Sprintf("%s has no icebloom index: `icebloom build %s --columns COL` builds one (or `icebloom columns %s --enable COL` and then `icebloom sync %s`, as maintain does)",
		table, table, table, table)
}

// printRuns prints inspect's line per sharded run.
func printRuns(e *env, runs []indexer.RunStatus) {
	for _, r := range runs {
		state := "incomplete"
		switch {
		case r.Complete:
			state = "complete"
		case r.Live:
			state = "live"
		}
		e.printf("sharded run %s (snapshot %d): %d of %s committed, %s; %s covered by the run",
			r.Run, r.SnapshotID, r.ShardsCommitted, plural(r.Shards, "shard"), state, plural(r.FilesCovered, "live file"))
		if len(r.MissingShards) > 0 {
			e.printf("; missing shards %s: %d of their %s covered otherwise", intsText(r.MissingShards), r.CoveredOtherwise, plural(r.MissingShardFiles, "live file"))
		}
		e.printf("\n")
	}
}
