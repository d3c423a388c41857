package indexer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
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

// liveDataFiles lists the data files of a snapshot that keep accepts (nil:
// all): manifests of data files only (delete files are not indexed),
// entries not marked DELETED. A shard's keep holds only its files in
// memory, however many the snapshot has.
func liveDataFiles(fs icebergio.IO, meta table.Metadata, snap *table.Snapshot, keep func(path string) bool) ([]filescan.File, error) {
	var files []filescan.File
	err := eachDataFile(fs, snap, nil, func(df iceberg.DataFile) {
		if keep == nil || keep(df.FilePath()) {
			files = append(files, filescan.File{Path: df.FilePath(), Size: df.FileSizeBytes(), Identity: identityValues(meta, df)})
		}
	})
	return files, err
}

// eachDataFile calls fn for every live data file of the snapshot's data
// manifests, skipping manifests already in seen (nil: none) and adding the
// others to it, so that walking several snapshots reads a shared manifest
// once.
func eachDataFile(fs icebergio.IO, snap *table.Snapshot, seen map[string]bool, fn func(iceberg.DataFile)) error {
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData || seen[m.FilePath()] {
			continue
		}
		if seen != nil {
			seen[m.FilePath()] = true
		}
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if df := entry.DataFile(); df.ContentType() == iceberg.EntryContentData {
				fn(df)
			}
		}
	}
	return nil
}

func identityValues(meta table.Metadata, df iceberg.DataFile) map[int]any {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil
	}
	var values map[int]any
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.IdentityTransform); ok {
			if values == nil {
				values = map[int]any{}
			}
			values[pf.SourceID()] = df.Partition()[pf.FieldID]
		}
	}
	return values
}

// segmentFile is a Puffin file written for one commit: the filters of one
// run (a v2 segment, docs/format.md §2) plus, because set-statistics
// replaces a snapshot's statistics file, what it carries of the snapshot's
// current statistics file.
type segmentFile struct {
	path  string
	stats puffin.Stats
	// replaces is the path of the snapshot's statistics file the segment
	// was written to replace (and carries blobs of), "" if there was none.
	replaces string
	// own are the data files whose filters the run added itself; the
	// others were carried.
	own map[segment.File]bool
	// dir is what the segment writer reported; a file that carries only
	// other tools' blobs has no directory.
	dir         *segment.Result
	bytesCopied int64
	// broken is the path of the file the segment replaces without its
	// blobs, because it could not be read.
	broken string
	// foreign counts the blobs of other tools carried into the file.
	foreign int
	// finished is when the file was completed, by the run's clock: it
	// must be committed within MaxUncommittedAge of it (checkFresh).
	finished time.Time
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
func (s segmentFile) checkFresh() error {
	if age := clock().Sub(s.finished); age > MaxUncommittedAge {
		return fmt.Errorf("index file %s was written %s ago, longer than the %s a run may take to commit one (%w)",
			s.path, age.Round(time.Second), MaxUncommittedAge, errStale)
	}
	return nil
}

// location describes the segment as openPuffin needs it.
func (s segmentFile) location() table.StatisticsFile {
	return table.StatisticsFile{StatisticsPath: s.path, FileSizeInBytes: s.stats.FileSize, FileFooterSizeInBytes: s.stats.FooterSize}
}

// statisticsFile returns the table-metadata entry registering the segment
// for a snapshot: the foreign blobs' items as the replaced entry listed
// them, then one item per indexed field and one for the directory, with its
// place so that a reader fetches it with one read — never one item per
// filter, so table metadata grows with columns, not files.
func (s segmentFile) statisticsFile(snap *table.Snapshot, replaced *table.StatisticsFile) table.StatisticsFile {
	sf := table.StatisticsFile{
		SnapshotID:            snap.SnapshotID,
		StatisticsPath:        s.path,
		FileSizeInBytes:       s.stats.FileSize,
		FileFooterSizeInBytes: s.stats.FooterSize,
	}
	if replaced != nil && s.foreign > 0 { // listed only if carried: a broken file's may be lost
		for _, bm := range replaced.BlobMetadata {
			if !index.IsIndexBlobType(puffin.BlobType(bm.Type)) {
				sf.BlobMetadata = append(sf.BlobMetadata, bm)
			}
		}
	}
	if s.dir == nil {
		return sf
	}
	for _, id := range slices.Sorted(maps.Keys(s.dir.Members)) {
		sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
			Type:           table.BlobType(segment.GroupBlobType),
			SnapshotID:     snap.SnapshotID,
			SequenceNumber: snap.SequenceNumber,
			Fields:         []int32{int32(id)},
			Properties:     map[string]string{PropEntryCount: strconv.Itoa(s.dir.Members[id])},
		})
	}
	props := map[string]string{
		segment.PropDirectoryOffset: strconv.FormatInt(s.dir.DirectoryOffset, 10),
		segment.PropDirectoryLength: strconv.FormatInt(s.dir.DirectoryLength, 10),
	}
	if n := len(s.dir.Directory.Links); n > 0 {
		props[segment.PropLinks] = strconv.Itoa(n)
		if runs := shardRuns(s.dir.Directory.Links); len(runs) > 0 {
			b, _ := json.Marshal(runs) // a map of plain structs
			props[PropShardRuns] = string(b)
		}
	}
	sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
		Type:           table.BlobType(segment.DirectoryBlobType),
		SnapshotID:     snap.SnapshotID,
		SequenceNumber: snap.SequenceNumber,
		Fields:         s.dir.Fields,
		Properties:     props,
	})
	return sf
}

// segmentWriter streams one segment file to the table's storage.
type segmentWriter struct {
	fs      icebergio.WriteFileIO
	out     icebergio.FileWriter
	buf     *bufio.Writer // over out: chunks are 4 KiB, written one by one
	pw      *puffin.Writer
	sw      *segment.Writer
	seg     segmentFile
	filters int // added or copied so far
	links   []segment.Link
	// empty makes finish write a directory even without filters or
	// links: a shard's segment, which its run counts.
	empty   bool
	written bool
}

// newSegmentPath names a new segment file under the table's metadata
// location: the snapshot it is for and a random part, so concurrent runs
// never collide and gc can recognise icebloom's files.
func newSegmentPath(tbl *table.Table, snapshotID int64) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	return lp.NewMetadataLocation(fmt.Sprintf("icebloom-%d-%s.puffin", snapshotID, uuid.New())), nil
}

func createSegment(fs icebergio.WriteFileIO, path string, o segment.WriterOptions) (*segmentWriter, error) {
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
	return &segmentWriter{fs: fs, out: out, buf: buf, pw: pw, sw: segment.NewWriter(pw, o),
		seg: segmentFile{path: path, own: map[segment.File]bool{}}}, nil
}

// copyForeign copies the blobs of other tools of the statistics file sf,
// byte for byte with their codecs, so that replacing the snapshot's
// statistics file loses nothing of theirs.
func (s *segmentWriter) copyForeign(fs icebergio.IO, sf table.StatisticsFile) error {
	src, closeSrc, err := openPuffin(fs, sf)
	if err != nil {
		return &unreadableError{sf.StatisticsPath, err}
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
		s.seg.bytesCopied += meta.Length
		s.seg.foreign++
	}
	return nil
}

// add writes one filter the run built.
func (s *segmentWriter) add(f segment.Filter) error {
	if err := s.sw.Add(f); err != nil {
		return fmt.Errorf("write %s: %w", s.seg.path, err)
	}
	s.seg.own[f.File] = true
	s.filters++
	return nil
}

// copyFilters copies the filters of segments that keep selects (given the
// segment, the filter's place in Segment.Filters and the filter), never
// re-hashing: the groups
// of v2 segments merged run by run, class by class; the bitsets of v1
// entries read whole and added to the groups of their block count.
func (s *segmentWriter) copyFilters(fs icebergio.IO, segs []index.Segment, keep func(seg, ord int, f index.Filter) bool) error {
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
			return &unreadableError{seg.File.StatisticsPath, fmt.Errorf("open %s: %w", seg.File.StatisticsPath, err)}
		}
		defer f.Close()
		ord := -1
		for flt := range seg.Filters() {
			if ord++; !keep(si, ord, flt) {
				continue
			}
			s.filters++
			s.seg.bytesCopied += int64(flt.Blocks) * sbbf.BlockBytes
			g, m := flt.Group()
			if g == nil {
				bits, err := index.ReadFilter(f, flt)
				if err != nil {
					return &unreadableError{seg.File.StatisticsPath, err}
				}
				err = s.sw.Add(segment.Filter{File: segment.File{Path: flt.DataFile, Size: flt.DataFileSize},
					FieldID: flt.FieldID, ValueType: flt.ValueType, FPP: flt.FPP, NDV: flt.NDV, Bits: bits})
				if err != nil {
					return fmt.Errorf("write %s: %w", s.seg.path, err)
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
				merges[c] = append(merges[c], segment.Source{Path: seg.File.StatisticsPath, R: f, Group: g, Files: seg.Dir.Files})
			}
			merges[c][i].Keep = append(merges[c][i].Keep, m)
		}
	}
	for _, c := range classes {
		if err := s.sw.Merge(merges[c]); err != nil {
			return fmt.Errorf("write %s: %w", s.seg.path, err)
		}
	}
	return nil
}

// link adds a link to another segment file, once however often it is
// added (a file carried twice, or the run's own segment already linked by
// what it carries).
func (s *segmentWriter) link(l segment.Link) {
	if !slices.ContainsFunc(s.links, func(o segment.Link) bool { return o.Path == l.Path }) {
		s.links = append(s.links, l)
		s.sw.Link(l)
	}
}

// finish completes the file; on error the partial file is removed.
func (s *segmentWriter) finish() (segmentFile, error) {
	var err error
	if s.filters > 0 || len(s.links) > 0 || s.empty {
		var res segment.Result
		if res, err = s.sw.Finish(); err == nil {
			s.seg.dir = &res
		}
	}
	if err == nil {
		s.seg.stats, err = s.pw.Finish()
	}
	if err == nil {
		err = s.buf.Flush()
	}
	if cerr := s.out.Close(); err == nil {
		err = cerr
	}
	s.written = true
	if err != nil {
		s.fs.Remove(s.seg.path)
		return segmentFile{}, fmt.Errorf("write %s: %w", s.seg.path, err)
	}
	s.seg.finished = clock()
	return s.seg, nil
}

// abandon removes the file being written.
func (s *segmentWriter) abandon() {
	if !s.written {
		s.out.Close()
	}
	s.fs.Remove(s.seg.path)
}

// openPuffin opens a Puffin file of the table for reading, using the sizes
// table metadata records so the footer is one read.
func openPuffin(fs icebergio.IO, sf table.StatisticsFile) (*puffin.Reader, func() error, error) {
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
