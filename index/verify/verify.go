// Package verify checks a table's icebloom index as a reader relies on it
// (Table): the checksums of every segment, that footers and directories
// agree, which live data files each indexed column covers, and, for a
// sample of covered files, that re-reading the data file finds every
// distinct value in its filter. It reads the data files with index/filescan
// as a build does.
//
// It only reads and reports: it changes no file and commits nothing;
// repairing what it finds is the next maintain's job (indexer.Repair, then
// a sync).
package verify

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// Options configure Table.
type Options struct {
	// Sample is how many covered live data files Table re-reads to check
	// that their filters hold every value of the file.
	Sample int
	// Seed chooses the sample; 0 chooses one at random, which the report
	// gives so that a run can be repeated.
	Seed uint64
}

// Report is what Table found. Problems lists every problem, each
// naming its file (and column); an index without problems may still leave
// live files uncovered, which Columns reports.
type Report struct {
	SnapshotID int64            `json:"snapshot_id"`
	Segments   []SegmentReport  `json:"segments"`
	Columns    []CoverageReport `json:"columns"`
	Sampled    []SampleReport   `json:"sampled"`
	Seed       uint64           `json:"seed"`
	Problems   []string         `json:"problems"`
}

// OK reports whether Table found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// SegmentReport is the check of one statistics file holding index filters,
// or of a segment file one links.
type SegmentReport struct {
	Path       string `json:"path"`
	SnapshotID int64  `json:"snapshot_id"`
	// LinkedFrom is the statistics file linking the segment, "" for one
	// table metadata lists.
	LinkedFrom string `json:"linked_from,omitempty"`
	Format     int    `json:"format"` // 1 or 2; 0 when unreadable
	Groups     int    `json:"groups"`
	Filters    int    `json:"filters"`
	// BytesVerified counts the filter bytes read and checked against their
	// checksums (format 2; v1 files have none).
	BytesVerified int64    `json:"bytes_verified"`
	Problems      []string `json:"problems"`

	links []segment.Link // the directory's, checked next
}

// CoverageReport is how much of the live data files an indexed column covers.
type CoverageReport struct {
	FieldID   int    `json:"field_id"`
	Name      string `json:"name"`
	Covered   int    `json:"covered"`
	Uncovered int    `json:"uncovered"`
	// UncoveredFiles lists the first uncovered files (at most
	// maxListedUncovered); a sync indexes them.
	UncoveredFiles []string `json:"uncovered_files"`
}

// SampleReport is the re-read of one sampled data file.
type SampleReport struct {
	File    string   `json:"file"`
	Columns []string `json:"columns"`
	// Values counts the distinct values checked against the filters.
	Values   int64    `json:"values"`
	Problems []string `json:"problems"`
}

// maxListedUncovered bounds the uncovered files a report lists by name.
const maxListedUncovered = 20

// Table checks a table's index as a reader relies on it: every checksum of
// every segment (the directory and every chunk of every group), that
// footers and directories agree, which live data files each indexed column
// covers, and, for a sample of covered data files, that re-reading the file
// finds every distinct value in its filter (no false negative). It changes
// nothing.
func Table(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options) (*Report, error) {
	name := strings.Join(ident, ".")
	tbl, err := catalog.LoadTable(ctx, cat, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	rep := &Report{Segments: []SegmentReport{}, Columns: []CoverageReport{}, Sampled: []SampleReport{}, Problems: []string{}, Seed: o.Seed}
	if rep.Seed == 0 {
		rep.Seed = rand.Uint64()
	}
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("table %s storage: %w", name, err)
	}
	meta := tbl.Metadata()
	for sf := range meta.Statistics() {
		if !indexer.IsIndexEntry(sf) {
			continue
		}
		// What table metadata says of the file must be what it holds: an
		// item, links or shard runs removed or wrong mislead readers and gc.
		var entryProblems []string
		if want, ok, err := indexfile.Entry(fs, sf); err == nil && ok {
			entryProblems = indexfile.EntryProblems(sf, want)
		}
		if !index.HoldsEntries(sf) {
			if len(entryProblems) > 0 {
				rep.Segments = append(rep.Segments, SegmentReport{Path: sf.StatisticsPath, SnapshotID: sf.SnapshotID, Format: 2, Problems: entryProblems})
				rep.Problems = append(rep.Problems, entryProblems...)
			}
			continue
		}
		sr := checkSegment(fs, sf)
		sr.Problems = append(sr.Problems, entryProblems...)
		rep.Segments = append(rep.Segments, sr)
		rep.Problems = append(rep.Problems, sr.Problems...)
		for _, l := range sr.links {
			lr := checkSegment(fs, index.LinkedFile(sf, l))
			lr.LinkedFrom = sf.StatisticsPath
			if len(lr.links) > 0 {
				lr.Problems = append(lr.Problems, fmt.Sprintf("index file %s, linked by %s, links segments of its own", l.Path, sf.StatisticsPath))
			}
			rep.Segments = append(rep.Segments, lr)
			rep.Problems = append(rep.Problems, lr.Problems...)
		}
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return rep, nil
	}
	rep.SnapshotID = snap.SnapshotID
	ix, _ := index.Load(ctx, fs, meta, nil) // its problems are the segments' above
	live, err := filescan.LiveFiles(fs, meta, snap, nil)
	if err != nil {
		return nil, err
	}
	fields := map[int]bool{}
	for _, seg := range ix.Segments() {
		for f := range seg.Filters() {
			fields[f.FieldID] = true
		}
	}
	ids := slices.Sorted(maps.Keys(fields))
	// The columns the index should hold: those table metadata lists or
	// records for it (indexer.HeldColumns), which damage to index files
	// cannot take away. One of the current schema of which the index holds
	// no filter at all has been lost; the next maintain indexes it again.
	should := map[int]bool{}
	for _, h := range indexer.HeldColumns(ix, meta) {
		if _, ok := tbl.Schema().FindFieldByID(h.FieldID); ok {
			should[h.FieldID] = true
		}
	}
	all := maps.Clone(fields)
	maps.Copy(all, should)
	reported := slices.Sorted(maps.Keys(all))
	twice := coveredTwice(ix, live, ids)
	anyCovered := make([]bool, len(live)) // by some indexed column
	for _, id := range reported {
		cr := CoverageReport{FieldID: id, Name: "field " + strconv.Itoa(id), UncoveredFiles: []string{}}
		if n, ok := tbl.Schema().FindColumnName(id); ok {
			cr.Name = n
		}
		for i, df := range live {
			if _, ok := ix.Lookup(df.Path, df.Size, id); ok {
				cr.Covered++
				anyCovered[i] = true
			} else if cr.Uncovered++; len(cr.UncoveredFiles) < maxListedUncovered {
				cr.UncoveredFiles = append(cr.UncoveredFiles, df.Path)
			}
		}
		rep.Columns = append(rep.Columns, cr)
		if d := twice[id]; d.files > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("column %s (field %d): %d live data files have more than one filter, the first %s (in %s) (the next maintain's compaction keeps one)",
				cr.Name, id, d.files, d.first, strings.Join(d.in, " and ")))
		}
		if should[id] && !fields[id] && len(live) > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("column %s (field %d): table metadata records it as indexed, and the index holds no filter of it: none of the %d live data files is covered (the next maintain indexes them again)",
				cr.Name, id, len(live)))
		}
	}
	var covered []filescan.File
	for i, df := range live {
		if anyCovered[i] {
			covered = append(covered, df)
		}
	}
	rng := rand.New(rand.NewPCG(rep.Seed, rep.Seed>>1|1))
	rng.Shuffle(len(covered), func(i, j int) { covered[i], covered[j] = covered[j], covered[i] })
	for _, df := range covered[:min(o.Sample, len(covered))] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sr := sampleFile(ctx, fs, tbl, ix, ids, df)
		rep.Sampled = append(rep.Sampled, sr)
		rep.Problems = append(rep.Problems, sr.Problems...)
	}
	return rep, nil
}

// duplicates are the live files of one column that the index holds more
// than one filter of.
type duplicates struct {
	files int
	first string   // the first such file
	in    []string // the index files holding its filters
}

// coveredTwice finds, by field, the live files that more than one filter
// of the index applies to: a fault no writer may leave (docs/format.md
// §2.5 rule 4), which doubles what lookups read.
func coveredTwice(ix *index.TableIndex, live []filescan.File, ids []int) map[int]duplicates {
	var files filelist.List
	for _, df := range live {
		files.Append(df.Path, df.Size)
	}
	type key struct{ file, field int }
	first := map[key]string{}
	counted := map[key]bool{}
	out := map[int]duplicates{}
	ix.Match(filelist.NewIndex(&files, nil).Find, ids, func(i int, ref index.FilterRef) {
		f := ref.Filter()
		k := key{i, f.FieldID}
		at, seen := first[k]
		if !seen {
			first[k] = f.Path
			return
		}
		if counted[k] {
			return
		}
		counted[k] = true
		d := out[f.FieldID]
		if d.files == 0 {
			d.first, d.in = live[i].Path, []string{at, f.Path}
		}
		d.files++
		out[f.FieldID] = d
	})
	return out
}

// checkSegment checks one statistics file holding index filters
// (index.CheckSegment).
func checkSegment(fs icebergio.IO, sf table.StatisticsFile) SegmentReport {
	c := index.CheckSegment(fs, sf)
	sr := SegmentReport{Path: sf.StatisticsPath, SnapshotID: sf.SnapshotID, Format: c.Format, Groups: c.Groups,
		Filters: c.Filters, BytesVerified: c.BytesVerified, Problems: append([]string{}, c.Problems...)}
	if c.Dir != nil {
		sr.links = c.Dir.Links
	}
	return sr
}

// sampleFile re-reads a data file's indexed columns as a build reads them
// and checks every distinct value against the file's filter. A filter
// hashed as another type than the column's current one (built before a
// type promotion) is not re-derived.
func sampleFile(ctx context.Context, fs icebergio.IO, tbl *table.Table, ix *index.TableIndex, ids []int, df filescan.File) SampleReport {
	sr := SampleReport{File: df.Path, Columns: []string{}, Problems: []string{}}
	var cols []filescan.Column
	var filters []index.StoredFilter
	for _, id := range ids {
		flt, ok := ix.Lookup(df.Path, df.Size, id)
		if !ok {
			continue
		}
		name, _ := tbl.Schema().FindColumnName(id)
		resolved, err := indexer.ResolveColumns(tbl.Schema(), nil, []string{name}, flt.FPP)
		if err != nil || !resolved[0].Type.Equals(flt.ValueType) {
			continue
		}
		cols = append(cols, resolved[0].Column)
		filters = append(filters, flt)
		sr.Columns = append(sr.Columns, name)
	}
	if len(cols) == 0 {
		return sr
	}
	stored := make([]sbbf.Filter, len(filters))
	for i, flt := range filters {
		bits, err := readFilterAt(fs, flt)
		if err == nil {
			stored[i], err = sbbf.FromBytes(bits)
		}
		if err != nil {
			sr.Problems = append(sr.Problems, fmt.Sprintf("data file %s, column %s: %v", df.Path, sr.Columns[i], err))
			return sr
		}
	}
	x := filescan.NewScanner(fs, cols, tbl.Metadata().NameMapping(), indexer.DefaultMaxFilterBytes, false)
	x.OnDistinct = func(ci int, unique []uint64) {
		sr.Values += int64(len(unique))
		missing := 0
		for _, h := range unique {
			if !stored[ci].Check(h) {
				missing++
			}
		}
		if missing > 0 {
			sr.Problems = append(sr.Problems, fmt.Sprintf("data file %s, column %s: %d of its %d distinct values are not in its filter (in %s)",
				df.Path, sr.Columns[ci], missing, len(unique), filters[ci].Path))
		}
		if int64(len(unique)) != filters[ci].NDV {
			sr.Problems = append(sr.Problems, fmt.Sprintf("data file %s, column %s: %d distinct values, the index records %d (in %s)",
				df.Path, sr.Columns[ci], len(unique), filters[ci].NDV, filters[ci].Path))
		}
	}
	filtersRead, err := x.Scan(ctx, df)
	if err != nil {
		sr.Problems = append(sr.Problems, fmt.Sprintf("data file %s: re-read for verification: %v", df.Path, err))
	}
	for _, fo := range filtersRead {
		if fo.Err != nil {
			sr.Problems = append(sr.Problems, fmt.Sprintf("data file %s: re-read for verification: %v", df.Path, fo.Err))
		}
	}
	return sr
}

// readFilterAt reads a filter's bitset from its statistics file.
func readFilterAt(fs icebergio.IO, flt index.StoredFilter) ([]byte, error) {
	f, err := fs.Open(flt.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return index.ReadFilter(f, flt)
}
