// Package indexfile writes the index files of a table: each is a Puffin
// statistics file in the table's metadata directory holding one v2 segment
// (docs/format.md §2) of a run's filters, plus what it carries of the
// statistics file it replaces for its snapshot — other tools' blobs, entries
// a sync keeps, links to shard segments. Name and IsName are the one naming
// rule of these files, which gc relies on; Writer streams a file to the
// table's storage and File describes a finished one, down to the
// table-metadata entry (StatisticsFile) that registers it.
//
// The package writes and describes files; it does not choose what goes into
// them, commit them to a catalog, or read a table's index (index and
// index/segment do that).
package indexfile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// CreatedBy is the created-by property of the Puffin files icebloom writes.
const CreatedBy = "icebloom"

// PropEntryCount is the blob-metadata property, one item per indexed field
// in a statistics entry, giving how many entries of the field the file holds.
const PropEntryCount = "entry-count"

// File is a Puffin file written for one commit: the filters of one
// run (a v2 segment, docs/format.md §2) plus, because set-statistics
// replaces a snapshot's statistics file, what it carries of the snapshot's
// current statistics file.
type File struct {
	Path  string
	Stats puffin.Stats
	// Replaces is the path of the snapshot's statistics file the segment
	// was written to replace (and carries blobs of), "" if there was none.
	Replaces string
	// Own are the data files whose filters the run added itself; the
	// others were carried.
	Own map[segment.File]bool
	// Dir is what the segment writer reported; a file that carries only
	// other tools' blobs has no directory.
	Dir         *segment.Result
	BytesCopied int64
	// Broken is the path of the file the segment replaces without its
	// blobs, because it could not be read.
	Broken string
	// foreign counts the blobs of other tools carried into the file.
	foreign int
	// Finished is when the file was completed, by the clock Create was
	// given: index/indexer commits it only within its MaxUncommittedAge.
	Finished time.Time
	// Columns are the columns the table's index holds, by field id, with
	// the target rate of their filters (0: not known), as the run knew
	// them: recorded in table metadata (PropIndexColumns) so that damage
	// to index files cannot make the index forget a column. A file with
	// Columns has a directory even without filters.
	Columns map[int]float64
}

// PropIndexColumns, on the directory's item in table metadata, records the
// columns the table's index holds and their target rates as compact JSON,
// field id to rate, e.g. {"1":0.01,"4":0.001} (0: not known). Table
// metadata is the one place damage to index files cannot reach: a repair
// that loses a segment, or every filter of a column, still finds there
// which columns to index again.
const PropIndexColumns = "index-columns"

// RecordedColumns returns the columns the item records (PropIndexColumns),
// nil when it records none; a record that does not parse is an error.
func RecordedColumns(bm table.BlobMetadata) (map[int]float64, error) {
	raw, ok := bm.Properties[PropIndexColumns]
	if !ok || bm.Type != table.BlobType(segment.DirectoryBlobType) {
		return nil, nil
	}
	var byKey map[string]float64
	if err := json.Unmarshal([]byte(raw), &byKey); err != nil {
		return nil, fmt.Errorf("property %s %q: %w", PropIndexColumns, raw, err)
	}
	cols := make(map[int]float64, len(byKey))
	for k, fpp := range byKey {
		id, err := strconv.Atoi(k)
		if err != nil || id <= 0 || !(fpp == 0 || fpp > 0 && fpp < 1) {
			return nil, fmt.Errorf("property %s %q: field %q with rate %v", PropIndexColumns, raw, k, fpp)
		}
		cols[id] = fpp
	}
	return cols, nil
}

// Location describes the segment as OpenPuffin needs it.
func (s File) Location() table.StatisticsFile {
	return table.StatisticsFile{StatisticsPath: s.Path, FileSizeInBytes: s.Stats.FileSize, FileFooterSizeInBytes: s.Stats.FooterSize}
}

// StatisticsFile returns the table-metadata entry registering the segment
// for a snapshot: the foreign blobs' items as the replaced entry listed
// them, then one item per indexed field and one for the directory, with its
// place so that a reader fetches it with one read — never one item per
// filter, so table metadata grows with columns, not files.
func (s File) StatisticsFile(snap *table.Snapshot, replaced *table.StatisticsFile) table.StatisticsFile {
	sf := table.StatisticsFile{
		SnapshotID:            snap.SnapshotID,
		StatisticsPath:        s.Path,
		FileSizeInBytes:       s.Stats.FileSize,
		FileFooterSizeInBytes: s.Stats.FooterSize,
	}
	if replaced != nil && s.foreign > 0 { // listed only if carried: a broken file's may be lost
		for _, bm := range replaced.BlobMetadata {
			if !index.IsIndexBlobType(puffin.BlobType(bm.Type)) {
				sf.BlobMetadata = append(sf.BlobMetadata, bm)
			}
		}
	}
	if s.Dir == nil {
		return sf
	}
	for _, id := range slices.Sorted(maps.Keys(s.Dir.Members)) {
		sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
			Type:           table.BlobType(segment.GroupBlobType),
			SnapshotID:     snap.SnapshotID,
			SequenceNumber: snap.SequenceNumber,
			Fields:         []int32{int32(id)},
			Properties:     map[string]string{PropEntryCount: strconv.Itoa(s.Dir.Members[id])},
		})
	}
	props := map[string]string{
		segment.PropDirectoryOffset: strconv.FormatInt(s.Dir.DirectoryOffset, 10),
		segment.PropDirectoryLength: strconv.FormatInt(s.Dir.DirectoryLength, 10),
	}
	if n := len(s.Dir.Directory.Links); n > 0 {
		props[segment.PropLinks] = strconv.Itoa(n)
		if runs := ShardRuns(s.Dir.Directory.Links); len(runs) > 0 {
			b, _ := json.Marshal(runs) // a map of plain structs
			props[PropShardRuns] = string(b)
		}
	}
	if len(s.Columns) > 0 {
		byKey := make(map[string]float64, len(s.Columns))
		for id, fpp := range s.Columns {
			byKey[strconv.Itoa(id)] = fpp
		}
		b, _ := json.Marshal(byKey) // keys sorted: compact and stable
		props[PropIndexColumns] = string(b)
	}
	sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
		Type:           table.BlobType(segment.DirectoryBlobType),
		SnapshotID:     snap.SnapshotID,
		SequenceNumber: snap.SequenceNumber,
		Fields:         append([]int32{}, s.Dir.Fields...), // [] for an empty segment, never null
		Properties:     props,
	})
	return sf
}

// Writer streams one segment file to the table's storage.
type Writer struct {
	fs      icebergio.WriteFileIO
	out     icebergio.FileWriter
	buf     *bufio.Writer // over out: chunks are 4 KiB, written one by one
	pw      *puffin.Writer
	sw      *segment.Writer
	File    File
	filters int // added or copied so far
	links   []segment.Link
	// Empty makes finish write a directory even without filters or
	// links: a shard's segment, which its run counts.
	Empty   bool
	written bool
	now     func() time.Time // stamps File.Finished
}

// Name is the base name of a new index file for a snapshot:
// icebloom-<snapshot id>-<random uuid>.puffin, so concurrent runs never
// collide and gc (IsName) can tell icebloom's files from all others.
func Name(snapshotID int64) string {
	return fmt.Sprintf("icebloom-%d-%s.puffin", snapshotID, uuid.New())
}

// nameRule matches every name Name makes, and nothing else.
var nameRule = regexp.MustCompile(`^icebloom-\d+-[0-9a-f-]{36}\.puffin$`)

// IsName reports whether a file's base name is one Name makes: the only
// files gc may delete.
func IsName(base string) bool { return nameRule.MatchString(base) }

// NewPath is the path of a new index file for a snapshot: Name under the
// table's metadata location.
func NewPath(tbl *table.Table, snapshotID int64) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	return lp.NewMetadataLocation(Name(snapshotID)), nil
}

// Create starts an index file at path in fs, its segment written with o;
// now stamps the finished file (File.Finished).
func Create(fs icebergio.WriteFileIO, path string, o segment.WriterOptions, now func() time.Time) (*Writer, error) {
	out, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	buf := bufio.NewWriterSize(out, 1<<20)
	pw, err := puffin.NewWriter(buf)
	if err != nil {
		out.Close()
		fs.Remove(path)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	pw.SetProperty(puffin.CreatedBy, CreatedBy)
	return &Writer{fs: fs, out: out, buf: buf, pw: pw, sw: segment.NewWriter(pw, o), now: now,
		File: File{Path: path, Own: map[segment.File]bool{}}}, nil
}

// CopyForeign copies the blobs of other tools of the statistics file sf,
// byte for byte with their codecs, so that replacing the snapshot's
// statistics file loses nothing of theirs.
func (s *Writer) CopyForeign(fs icebergio.IO, sf table.StatisticsFile) error {
	src, closeSrc, err := OpenPuffin(fs, sf)
	if err != nil {
		return &UnreadableError{sf.StatisticsPath, err}
	}
	defer closeSrc()
	for i := range src.NumBlobs() {
		b, err := src.Blob(i)
		if err != nil {
			return err
		}
		if index.IsIndexBlobType(b.Type) {
			continue
		}
		meta, err := s.pw.CopyBlob(src, i)
		if err != nil {
			return fmt.Errorf("copy blob %d (%s) of %s: %w", i, b.Type, sf.StatisticsPath, err)
		}
		s.File.BytesCopied += meta.Length
		s.File.foreign++
	}
	return nil
}

// Add writes one filter the run built.
func (s *Writer) Add(f segment.FilterInput) error {
	if err := s.sw.Add(f); err != nil {
		return fmt.Errorf("write %s: %w", s.File.Path, err)
	}
	s.File.Own[f.File] = true
	s.filters++
	return nil
}

// CopyFilters copies the filters of segments that keep selects (given the
// segment, the filter's place in Segment.Filters and the filter), never
// re-hashing: the groups
// of v2 segments merged run by run, class by class; the bitsets of v1
// entries read whole and added to the groups of their block count.
func (s *Writer) CopyFilters(fs icebergio.IO, segs []index.Segment, keep func(seg, ord int, f index.StoredFilter) bool) error {
	type class struct {
		field, blocks int
		valueType     string
		fpp           float64
	}
	var (
		classes []class
		merges  = map[class][]segment.Source{}
		byGroup = map[*segment.Group]int{} // the group's source in merges
	)
	for si := range segs {
		seg := &segs[si]
		f, err := fs.Open(seg.File.StatisticsPath)
		if err != nil {
			return &UnreadableError{seg.File.StatisticsPath, fmt.Errorf("open %s: %w", seg.File.StatisticsPath, err)}
		}
		defer f.Close()
		dir := seg.Directory() // held: the filters below are of this one decoded
		ord := -1
		for flt := range seg.Filters() {
			if ord++; !keep(si, ord, flt) {
				continue
			}
			s.filters++
			s.File.BytesCopied += int64(flt.Blocks) * sbbf.BlockBytes
			g, m := flt.Group()
			if g == nil {
				bits, err := index.ReadFilter(f, flt)
				if err != nil {
					return &UnreadableError{seg.File.StatisticsPath, err}
				}
				err = s.sw.Add(segment.FilterInput{File: segment.File{Path: flt.DataFile, Size: flt.DataFileSize},
					FieldID: flt.FieldID, ValueType: flt.ValueType, FPP: flt.FPP, NDV: flt.NDV, Bits: bits})
				if err != nil {
					return fmt.Errorf("write %s: %w", s.File.Path, err)
				}
				continue
			}
			c := class{g.FieldID, g.Blocks, hashing.FormatValueType(g.ValueType), g.FPP}
			i, ok := byGroup[g]
			if !ok {
				if merges[c] == nil {
					classes = append(classes, c)
				}
				i = len(merges[c])
				byGroup[g] = i
				merges[c] = append(merges[c], segment.Source{Path: seg.File.StatisticsPath, R: f, Group: g, Files: &dir.Files})
			}
			merges[c][i].Keep = append(merges[c][i].Keep, m)
		}
	}
	for _, c := range classes {
		if err := s.sw.Merge(merges[c]); err != nil {
			return fmt.Errorf("write %s: %w", s.File.Path, err)
		}
	}
	return nil
}

// Link adds a Link to another segment file, once however often it is
// added (a file carried twice, or the run's own segment already linked by
// what it carries).
func (s *Writer) Link(l segment.Link) {
	if !slices.ContainsFunc(s.links, func(o segment.Link) bool { return o.Path == l.Path }) {
		s.links = append(s.links, l)
		s.sw.Link(l)
	}
}

// Finish completes the file; on error the partial file is removed.
func (s *Writer) Finish() (File, error) {
	var err error
	if s.filters > 0 || len(s.links) > 0 || s.Empty || len(s.File.Columns) > 0 {
		var res segment.Result
		if res, err = s.sw.Finish(); err == nil {
			s.File.Dir = &res
		}
	}
	if err == nil {
		s.File.Stats, err = s.pw.Finish()
	}
	if err == nil {
		err = s.buf.Flush()
	}
	if cerr := s.out.Close(); err == nil {
		err = cerr
	}
	s.written = true
	if err != nil {
		s.fs.Remove(s.File.Path)
		return File{}, fmt.Errorf("write %s: %w", s.File.Path, err)
	}
	s.File.Finished = s.now()
	return s.File, nil
}

// Abandon removes the file being written.
func (s *Writer) Abandon() {
	if !s.written {
		s.out.Close()
	}
	s.fs.Remove(s.File.Path)
}

// OpenPuffin opens a Puffin file of the table for reading, using the sizes
// table metadata records so the footer is one read.
func OpenPuffin(fs icebergio.IO, sf table.StatisticsFile) (*puffin.Reader, func() error, error) {
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", sf.StatisticsPath, err)
	}
	r, err := puffin.Open(f, sf.FileSizeInBytes, puffin.WithFooterSize(sf.FileFooterSizeInBytes))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read %s: %w", sf.StatisticsPath, err)
	}
	return r, f.Close, nil
}

// UnreadableError is a failure to read an index file the run copies from
// (as opposed to one writing its own).
type UnreadableError struct {
	Path string // the index file
	Err  error
}

// Error is the cause, which names the file.
func (e *UnreadableError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *UnreadableError) Unwrap() error { return e.Err }

// IsBroken reports whether an error means that an index file the run
// reads is missing or corrupt, as opposed to a failure that may pass (a
// cancelled run, a transient storage or network error) or one writing the
// run's own file: a broken file is replaced or removed, the others fail
// the run.
func IsBroken(err error) bool {
	var ue *UnreadableError
	var se *segment.SourceError
	if !errors.As(err, &ue) && !errors.As(err, &se) {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !catalog.IsTransient(err)
}

// PropShardRuns, on the directory's item in table metadata of a file that
// links shard segments, gives the sharded runs they belong to as JSON,
// {"run": {"committed": 3, "count": 4}}: shards of one run are recognisable
// in the table metadata, without reading the index.
const PropShardRuns = "shard-runs"

// ShardRuns counts the distinct shards of each run among links.
func ShardRuns(links []segment.Link) map[string]RunShards {
	runs := map[string]RunShards{}
	seen := map[string]map[int]bool{}
	for i := range links {
		l := &links[i]
		if l.Run == "" {
			continue
		}
		if seen[l.Run] == nil {
			seen[l.Run] = map[int]bool{}
		}
		r := runs[l.Run]
		r.Count = max(r.Count, l.Shards)
		if !seen[l.Run][l.Shard] {
			seen[l.Run][l.Shard] = true
			r.Committed++
		}
		runs[l.Run] = r
	}
	return runs
}

// RunShards is how far a sharded run is: Committed of its Count shards
// have their segments in the index.
type RunShards struct {
	Committed int `json:"committed"`
	Count     int `json:"count"`
}
