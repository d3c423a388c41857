package index

import (
	"context"
	"fmt"
	"strings"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/icebloom/icebloom/puffin"
)

// Segment is one statistics file's part of a table's index: the entries its
// footer lists and the blobs of other tools that share the file with them.
type Segment struct {
	File    table.StatisticsFile
	Entries []Entry
	// Foreign are the file's blobs of other types, such as
	// apache-datasketches-theta-v1 sketches, which a writer replacing the
	// file must carry over (docs/format.md §7).
	Foreign []puffin.BlobMetadata
}

// TableIndex is the index of a table: the union of the entries of all its
// segments (docs/format.md §1), looked up by data file and field.
// It is immutable and safe for concurrent use.
type TableIndex struct {
	segments []Segment
	byFile   map[entryKey]entryRef
}

// entryKey is what makes an entry apply to a planned data file (§6).
type entryKey struct {
	dataFile string
	size     int64
	fieldID  int
}

// entryRef locates an entry: Entries[entry] of segments[segment].
type entryRef struct{ segment, entry int }

// Segments returns the index's segments in the order the table metadata
// lists their statistics files. Their entries are shared with the index (and
// its FooterCache) and must not be modified.
func (ix *TableIndex) Segments() []Segment {
	return append([]Segment(nil), ix.segments...)
}

// Lookup returns the entry that applies to a data file, given its location
// and size exactly as its manifest entry lists them, for a field, and the
// path of the statistics file that holds the entry's bitset. When several
// segments hold an applicable entry, all are equally valid (§6) and Lookup
// returns the first.
func (ix *TableIndex) Lookup(dataFile string, size int64, fieldID int) (Entry, string, bool) {
	ref, ok := ix.byFile[entryKey{dataFile, size, fieldID}]
	if !ok {
		return Entry{}, "", false
	}
	seg := &ix.segments[ref.segment]
	return seg.Entries[ref.entry], seg.File.StatisticsPath, true
}

// A FooterCache keeps the decoded footers of statistics files by path, so
// that repeated loads of a table's index read only the footers of segments
// added since. Puffin files are immutable, so an entry never goes stale. It
// holds at most a fixed number of footers, evicting the least recently used,
// and is safe for concurrent use.
//
// It also keeps the last few indexes loaded whole, keyed by the statistics
// files they were loaded from: the same immutable files make the same
// index, so a table whose statistics have not changed since the last lookup
// costs no footer decoding and no map building at all.
type FooterCache struct {
	maxFiles int
	footers  *lru.Cache[string, *footer]
	indexes  *lru.Cache[string, *TableIndex]
}

// cachedIndexes is how many whole indexes a FooterCache keeps.
const cachedIndexes = 8

// NewFooterCache returns a cache of at most maxFiles footers (at least one).
func NewFooterCache(maxFiles int) *FooterCache {
	footers, err := lru.New[string, *footer](max(maxFiles, 1))
	if err != nil {
		panic(err) // only for a non-positive size, excluded above
	}
	indexes, err := lru.New[string, *TableIndex](cachedIndexes)
	if err != nil {
		panic(err)
	}
	return &FooterCache{maxFiles: max(maxFiles, 1), footers: footers, indexes: indexes}
}

func (c *FooterCache) get(path string) (*footer, bool) {
	if c == nil {
		return nil, false
	}
	return c.footers.Get(path)
}

func (c *FooterCache) add(path string, f *footer) {
	if c != nil {
		c.footers.Add(path, f)
	}
}

// footer is what a statistics file's footer says, decoded once: its index
// entries, its other blobs, and the entries that failed DecodeEntry (which
// fail the same way every time, the file being immutable).
type footer struct {
	entries []Entry
	foreign []puffin.BlobMetadata
	invalid []error
}

// loadConcurrency bounds how many footers Load reads at once: enough to hide
// object-store latency for a table with many segments.
const loadConcurrency = 8

// Load reads a table's index from its metadata: the footers of the
// statistics files whose blob-metadata lists an item of type
// split-block-bloom-filter-v1 (docs/format.md §7, §8); others are not
// opened. Footers are read through fsys with one read each, using the sizes
// the statistics entries record, and kept in cache (which may be nil).
//
// The index is advisory, so nothing here is fatal: a statistics file that
// cannot be read, and an entry that fails DecodeEntry, are reported in the
// returned errors and left out, which leaves the data files they cover
// unindexed.
func Load(ctx context.Context, fsys icebergio.IO, meta table.Metadata, cache *FooterCache) (*TableIndex, []error) {
	var files []table.StatisticsFile
	for sf := range meta.Statistics() {
		if HoldsEntries(sf) {
			files = append(files, sf)
		}
	}

	key := indexKey(files)
	if cache != nil {
		if ix, ok := cache.indexes.Get(key); ok {
			return ix, nil
		}
	}

	footers := make([]*footer, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, loadConcurrency)
	var wg sync.WaitGroup
	for i, sf := range files {
		if f, ok := cache.get(sf.StatisticsPath); ok {
			footers[i] = f
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := ctx.Err(); err != nil {
				errs[i] = fmt.Errorf("index: statistics file %s: %w", sf.StatisticsPath, err)
				return
			}
			footers[i], errs[i] = readFooter(fsys, sf)
			if errs[i] == nil {
				cache.add(sf.StatisticsPath, footers[i])
			}
		})
	}
	wg.Wait()

	ix := &TableIndex{byFile: make(map[entryKey]entryRef)}
	var problems []error
	for i, sf := range files {
		if errs[i] != nil {
			problems = append(problems, &SegmentError{Path: sf.StatisticsPath, Err: errs[i]})
			continue
		}
		f := footers[i]
		problems = append(problems, f.invalid...)
		seg := len(ix.segments)
		ix.segments = append(ix.segments, Segment{File: sf, Entries: f.entries, Foreign: f.foreign})
		for j, e := range f.entries {
			key := entryKey{e.DataFile, e.DataFileSize, e.FieldID}
			if _, dup := ix.byFile[key]; !dup {
				ix.byFile[key] = entryRef{seg, j}
			}
		}
	}
	// An index with problems is rebuilt next time, as I/O errors may pass;
	// one of more files than the cache holds footers is not kept either, so
	// the cache's size bounds what it holds.
	if cache != nil && len(problems) == 0 && len(files) <= cache.maxFiles {
		cache.indexes.Add(key, ix)
	}
	return ix, problems
}

// indexKey identifies the index made of the statistics files: their paths
// and sizes, in the order table metadata lists them.
func indexKey(files []table.StatisticsFile) string {
	var b strings.Builder
	for _, sf := range files {
		fmt.Fprintf(&b, "%s\x00%d\x00", sf.StatisticsPath, sf.FileSizeInBytes)
	}
	return b.String()
}

// SegmentError reports a statistics file that holds index entries but could
// not be read: the files it covers are unindexed for now, and writers that
// rewrite the index must leave it alone rather than drop it.
type SegmentError struct {
	Path string
	Err  error
}

func (e *SegmentError) Error() string { return e.Err.Error() }
func (e *SegmentError) Unwrap() error { return e.Err }

// HoldsEntries reports whether a statistics file holds index entries by its
// blob-metadata, which lists one item per indexed field (§7).
func HoldsEntries(sf table.StatisticsFile) bool {
	for _, b := range sf.BlobMetadata {
		if string(b.Type) == string(BlobType) {
			return true
		}
	}
	return false
}

// readFooter reads and decodes the footer of a statistics file with a
// single read of the size its statistics entry records.
func readFooter(fsys icebergio.IO, sf table.StatisticsFile) (*footer, error) {
	path := sf.StatisticsPath
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index: open statistics file %s: %w", path, err)
	}
	defer f.Close()
	r, err := puffin.Open(f, sf.FileSizeInBytes, puffin.WithFooterSize(sf.FileFooterSizeInBytes))
	if err != nil {
		return nil, fmt.Errorf("index: statistics file %s: %w", path, err)
	}
	var ft footer
	for _, b := range r.Blobs() {
		if !IsEntry(b) {
			ft.foreign = append(ft.foreign, b)
			continue
		}
		e, err := DecodeEntry(b)
		if err != nil {
			ft.invalid = append(ft.invalid, fmt.Errorf("index: statistics file %s: %w", path, err))
			continue
		}
		ft.entries = append(ft.entries, e)
	}
	return &ft, nil
}

// ReadSegment reads one statistics file as a segment, whether or not table
// metadata lists it: a writer that finds its commit replaced another run's
// segment reads that one back to merge it.
func ReadSegment(fsys icebergio.IO, sf table.StatisticsFile) (Segment, error) {
	f, err := readFooter(fsys, sf)
	if err != nil {
		return Segment{}, err
	}
	return Segment{File: sf, Entries: f.entries, Foreign: f.foreign}, nil
}
