package indexer

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/puffin"
)

// CreatedBy is the created-by property of the Puffin files icebloom writes.
const CreatedBy = "icebloom"

// PropEntryCount is the blob-metadata property, one item per indexed field
// in a statistics entry, giving how many entries of the field the file holds.
const PropEntryCount = "entry-count"

// dataFile is what the build keeps of a live data file.
type dataFile struct {
	path string
	size int64
	// identity maps the source field of each identity partition field to
	// the file's partition value: writers may leave such a column out of
	// the file, and readers then fill it in from the partition.
	identity map[int]any
}

// liveDataFiles lists the data files of a snapshot: manifests of data files
// only (delete files are not indexed), entries not marked DELETED.
func liveDataFiles(fs icebergio.IO, meta table.Metadata, snap *table.Snapshot) ([]dataFile, error) {
	var files []dataFile
	err := eachDataFile(fs, snap, nil, func(df iceberg.DataFile) {
		files = append(files, dataFile{path: df.FilePath(), size: df.FileSizeBytes(), identity: identityValues(meta, df)})
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

// segmentFile is a Puffin file written for one commit: the index entries of
// one run plus, because set-statistics replaces a snapshot's statistics
// file, the other tools' blobs of the snapshot's current statistics file.
type segmentFile struct {
	path  string
	stats puffin.Stats
	// replaces is the path of the snapshot's statistics file the segment
	// was written to replace (and carries blobs of), "" if there was none.
	replaces string
	// firstNew is the index of the first blob the run wrote itself; those
	// before it were carried from base.
	firstNew    int
	entries     map[int32]int
	bytesCopied int64
}

// location describes the segment as openPuffin needs it.
func (s segmentFile) location() table.StatisticsFile {
	return table.StatisticsFile{StatisticsPath: s.path, FileSizeInBytes: s.stats.FileSize, FileFooterSizeInBytes: s.stats.FooterSize}
}

// statisticsFile returns the table-metadata entry registering the segment
// for a snapshot: the foreign blobs' items as the replaced entry listed
// them, then one item per indexed field — never one per entry, so table
// metadata grows with columns, not files.
func (s segmentFile) statisticsFile(snap *table.Snapshot, replaced *table.StatisticsFile) table.StatisticsFile {
	sf := table.StatisticsFile{
		SnapshotID:            snap.SnapshotID,
		StatisticsPath:        s.path,
		FileSizeInBytes:       s.stats.FileSize,
		FileFooterSizeInBytes: s.stats.FooterSize,
	}
	if replaced != nil {
		for _, bm := range replaced.BlobMetadata {
			if bm.Type != table.BlobType(index.BlobType) {
				sf.BlobMetadata = append(sf.BlobMetadata, bm)
			}
		}
	}
	fields := make([]int32, 0, len(s.entries))
	for id := range s.entries {
		fields = append(fields, id)
	}
	slices.Sort(fields)
	for _, id := range fields {
		sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
			Type:           table.BlobType(index.BlobType),
			SnapshotID:     snap.SnapshotID,
			SequenceNumber: snap.SequenceNumber,
			Fields:         []int32{id},
			Properties:     map[string]string{PropEntryCount: strconv.Itoa(s.entries[id])},
		})
	}
	return sf
}

// segmentWriter streams one segment file to the table's storage.
type segmentWriter struct {
	fs      icebergio.WriteFileIO
	out     icebergio.FileWriter
	buf     *bufio.Writer // over out: blobs are a few KiB, written one by one
	w       *puffin.Writer
	seg     segmentFile
	blobs   int // blobs written so far
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

func createSegment(fs icebergio.WriteFileIO, path string) (*segmentWriter, error) {
	out, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	buf := bufio.NewWriterSize(out, 1<<20)
	w, err := puffin.NewWriter(buf)
	if err != nil {
		out.Close()
		fs.Remove(path)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	w.SetProperty(puffin.CreatedBy, CreatedBy)
	return &segmentWriter{fs: fs, out: out, buf: buf, w: w, seg: segmentFile{path: path, entries: map[int32]int{}}}, nil
}

// copyFrom copies the blobs of src (at srcPath) the segment carries over,
// byte for byte with their codecs: every blob of other tools, so replacing
// the snapshot's statistics file loses nothing of theirs, and, with
// entries, the index entries too.
func (s *segmentWriter) copyFrom(src *puffin.Reader, srcPath string, entries bool) error {
	for i, b := range src.Blobs() {
		if index.IsEntry(b) {
			if entries {
				if err := s.copyEntry(src, i); err != nil {
					return err
				}
			}
			continue
		}
		if err := s.copyBlob(src, i); err != nil {
			return fmt.Errorf("copy blob %d (%s) of %s: %w", i, b.Type, srcPath, err)
		}
	}
	return nil
}

// markNew records that the blobs written from now on are the run's own.
func (s *segmentWriter) markNew() { s.seg.firstNew = s.blobs }

// add writes one entry with its bitset.
func (s *segmentWriter) add(e index.Entry, bitset []byte) error {
	if _, err := s.w.AddBlob(e.BlobInput(), bitset); err != nil {
		return fmt.Errorf("write %s: %w", s.seg.path, err)
	}
	s.blobs++
	s.seg.entries[int32(e.FieldID)]++
	return nil
}

// copyEntry copies index entry i of src, without re-hashing anything.
func (s *segmentWriter) copyEntry(src *puffin.Reader, i int) error {
	b := src.Blobs()[i]
	if len(b.Fields) != 1 {
		return fmt.Errorf("entry %d has fields %v, want one", i, b.Fields)
	}
	if err := s.copyBlob(src, i); err != nil {
		return fmt.Errorf("copy entry %d into %s: %w", i, s.seg.path, err)
	}
	s.seg.entries[b.Fields[0]]++
	return nil
}

func (s *segmentWriter) copyBlob(src *puffin.Reader, i int) error {
	meta, err := s.w.CopyBlob(src, i)
	if err != nil {
		return err
	}
	s.blobs++
	s.seg.bytesCopied += meta.Length
	return nil
}

// finish completes the file; on error the partial file is removed.
func (s *segmentWriter) finish() (segmentFile, error) {
	stats, err := s.w.Finish()
	if err == nil {
		err = s.buf.Flush()
	}
	if cerr := s.out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.abandon()
		return segmentFile{}, fmt.Errorf("write %s: %w", s.seg.path, err)
	}
	s.seg.stats = stats
	s.written = true
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
