package index

import (
	"context"
	"fmt"
	"io"
	"iter"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/iceberg-go"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// Segment is one statistics file's part of a table's index: a format v2
// directory, or the v1 entries its footer lists. A segment file another
// segment links (segment.Link) is a Segment of its own, listed after the
// one linking it.
type Segment struct {
	// File is the segment's statistics entry; a linked segment's is made
	// from its link (LinkedFile).
	File table.StatisticsFile
	// Entries are the v1 entries of the file's footer.
	Entries []Entry
	// LinkedFrom is the path of the statistics file whose directory links
	// this segment, "" for a segment table metadata lists; Link is that
	// link.
	LinkedFrom string
	Link       *segment.Link
	// dir is the segment's directory (format v2), nil for a v1 segment.
	dir *storedDirectory
}

// HasDirectory reports whether the segment has a directory (format v2).
func (s *Segment) HasDirectory() bool { return s.dir != nil }

// Directory returns the segment's directory (format v2), nil for a v1
// segment. It is kept as stored and decoded while someone holds it
// decoded (a caller, its StoredFilters and FilterRefs), so a caller that
// needs it throughout holds it rather than ask again. It is shared and
// must not be modified.
func (s *Segment) Directory() *segment.Directory {
	if s.dir == nil {
		return nil
	}
	return s.dir.directory()
}

// LinkedFile returns the statistics entry a linked segment would have if
// table metadata listed it for the snapshot of the file linking it, owner:
// its sizes and the place of its directory, so it is read like any other
// segment.
func LinkedFile(owner table.StatisticsFile, l segment.Link) table.StatisticsFile {
	fields := make([]int32, len(l.Fields))
	for i, f := range l.Fields {
		fields[i] = int32(f)
	}
	return table.StatisticsFile{
		SnapshotID:            owner.SnapshotID,
		StatisticsPath:        l.Path,
		FileSizeInBytes:       l.Size,
		FileFooterSizeInBytes: l.FooterSize,
		BlobMetadata: []table.BlobMetadata{{
			Type:       table.BlobType(segment.DirectoryBlobType),
			SnapshotID: owner.SnapshotID,
			Fields:     fields,
			Properties: map[string]string{
				segment.PropDirectoryOffset: strconv.FormatInt(l.DirectoryOffset, 10),
				segment.PropDirectoryLength: strconv.FormatInt(l.DirectoryLength, 10),
			},
		}},
	}
}

// Links returns the segment files the segment links (segment.Link).
func (s *Segment) Links() []segment.Link {
	if s.dir == nil {
		return nil
	}
	return s.dir.links
}

// Filters returns every filter of the segment.
func (s *Segment) Filters() iter.Seq[StoredFilter] {
	return func(yield func(StoredFilter) bool) {
		for i := range s.Entries {
			if !yield(s.v1Filter(i)) {
				return
			}
		}
		dir := s.Directory()
		if dir == nil {
			return
		}
		for gi := range dir.Groups {
			for m := range dir.Groups[gi].Members {
				if !yield(s.v2Filter(dir, gi, m)) {
					return
				}
			}
		}
	}
}

func (s *Segment) v1Filter(i int) StoredFilter {
	e := &s.Entries[i]
	return StoredFilter{DataFile: e.DataFile, DataFileSize: e.DataFileSize, FieldID: e.FieldID, ValueType: e.ValueType,
		NDV: e.NDV, FPP: e.FPP, Blocks: e.NumBlocks(), Path: s.File.StatisticsPath, offset: e.Offset}
}

// v2Filter is member m of group gi of dir, the segment's directory.
func (s *Segment) v2Filter(dir *segment.Directory, gi, m int) StoredFilter {
	g := &dir.Groups[gi]
	mem := g.Members[m]
	return StoredFilter{DataFile: dir.Files.Path(mem.File), DataFileSize: dir.Files.Size(mem.File), FieldID: g.FieldID, ValueType: g.ValueType,
		NDV: mem.NDV, FPP: g.FPP, Blocks: g.Blocks, Path: s.File.StatisticsPath, group: g, member: m}
}

// StoredFilter is one data file's filter for one field, wherever it is stored: a
// v1 entry's blob or a member of a v2 group.
type StoredFilter struct {
	DataFile     string
	DataFileSize int64
	FieldID      int
	ValueType    iceberg.PrimitiveType
	NDV          int64
	FPP          float64
	Blocks       int
	// Path is the statistics file holding the filter.
	Path string

	group  *segment.Group // v2
	member int            // v2: the filter's place in group
	offset int64          // v1: where the bitset starts
}

// Group returns the v2 group holding the filter and its member index, or
// nil for a v1 entry.
func (f StoredFilter) Group() (*segment.Group, int) { return f.group, f.member }

// Place is where one block of a filter lies, and how to check it: read
// Length bytes at Offset; the block is the 32 bytes at Offset+Block. When
// Checked, those bytes are the v2 chunk Check, which must verify first.
type Place struct {
	Offset, Length, Block int64
	Checked               bool
	Check                 segment.Chunk
}

// Place returns where block b of the filter lies.
func (f StoredFilter) Place(b int) Place {
	if f.group == nil {
		return Place{Offset: f.offset + int64(b)*sbbf.BlockBytes, Length: sbbf.BlockBytes}
	}
	c := f.group.ChunkOf(b, f.member)
	return Place{Offset: c.Offset, Length: c.Length + segment.ChecksumBytes, Block: int64(c.Index) * sbbf.BlockBytes, Checked: true, Check: c}
}

// ReadFilter reads a filter's whole bitset from its statistics file r: a
// v1 bitset with one read, a v2 filter with one read per block (its blocks
// lie in N runs), verifying every chunk.
func ReadFilter(r io.ReaderAt, f StoredFilter) ([]byte, error) {
	if f.group == nil {
		bits := make([]byte, f.Blocks*sbbf.BlockBytes)
		if n, err := r.ReadAt(bits, f.offset); n < len(bits) {
			return nil, fmt.Errorf("index: read the filter of %s in %s: %w", f.DataFile, f.Path, shortRead(err))
		}
		return bits, nil
	}
	bits := make([]byte, 0, f.Blocks*sbbf.BlockBytes)
	for b := range f.Blocks {
		p := f.Place(b)
		buf := make([]byte, p.Length)
		if n, err := r.ReadAt(buf, p.Offset); n < len(buf) {
			return nil, fmt.Errorf("index: read block %d of the filter of %s in %s: %w", b, f.DataFile, f.Path, shortRead(err))
		}
		if !p.Check.Verify(buf) {
			return nil, fmt.Errorf("index: block %d of the filter of %s in %s: %w", b, f.DataFile, f.Path, segment.ErrChecksum)
		}
		bits = append(bits, buf[p.Block:p.Block+sbbf.BlockBytes]...)
	}
	return bits, nil
}

// shortRead is the error of a ReadAt that returned fewer bytes than asked:
// its own, or io.ErrUnexpectedEOF where it gave none or only io.EOF.
func shortRead(err error) error {
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// TableIndex is the index of a table: the union of the entries of all its
// segments (docs/format.md §1), looked up by data file and field.
// It is immutable and safe for concurrent use.
type TableIndex struct {
	segments []Segment
	// byFile is built on the first Lookup: a lookup over many files
	// matches them with Match instead, which needs no map of the index.
	once   sync.Once
	byFile map[entryKey]FilterRef
}

// entryKey is what makes an entry apply to a planned data file (§6).
type entryKey struct {
	dataFile string
	size     int64
	fieldID  int
}

// Bytes is the memory the index's segments hold: their directories as
// stored and v1 entries, and 16 KiB a segment for what reading it keeps
// (its statistics entry, its Puffin footer). Directories are shared with
// the FooterCache the index was loaded with, and with other indexes of the
// same statistics files. Their decoded forms are not counted: see
// DecodedBytes.
func (ix *TableIndex) Bytes() int64 {
	n := int64(len(ix.segments)) << 14
	for _, seg := range ix.segments {
		if seg.dir != nil {
			n += seg.dir.bytes()
		}
		for _, e := range seg.Entries {
			n += int64(unsafe.Sizeof(e)) + int64(len(e.DataFile))
		}
	}
	return n
}

// DecodedBytes is the memory the index's directories take decoded, which
// whoever holds its StoredFilters keeps alive (Bytes does not count it);
// a directory not decoded yet counts nothing.
func (ix *TableIndex) DecodedBytes() int64 {
	var n int64
	for _, seg := range ix.segments {
		if seg.dir != nil {
			n += seg.dir.decodedBytes.Load()
		}
	}
	return n
}

// Segments returns the index's segments in the order the table metadata
// lists their statistics files. Their entries and directories are shared
// with the index (and its FooterCache) and must not be modified.
func (ix *TableIndex) Segments() []Segment {
	return append([]Segment(nil), ix.segments...)
}

// Lookup returns the filter that applies to a data file, given its location
// and size exactly as its manifest entry lists them, for a field. When
// several segments hold an applicable filter, all are equally valid (§6)
// and Lookup returns the first.
func (ix *TableIndex) Lookup(dataFile string, size int64, fieldID int) (StoredFilter, bool) {
	ix.once.Do(ix.index)
	ref, ok := ix.byFile[entryKey{dataFile, size, fieldID}]
	if !ok {
		return StoredFilter{}, false
	}
	return ref.Filter(), true
}

// A FooterCache keeps what was decoded of statistics files by path — a v2
// segment's directory, a v1 file's footer — so that repeated loads of a
// table's index read only the segments added since. Puffin files are
// immutable, so an entry never goes stale. It holds at most a fixed number
// of files, evicting the least recently used, and is safe for concurrent
// use. (Its name is from format v1, whose index lived in footers.)
//
// It also keeps the last few indexes loaded whole, keyed by the statistics
// files they were loaded from: the same immutable files make the same
// index, so a table whose statistics have not changed since the last lookup
// costs no footer decoding and no map building at all.
type FooterCache struct {
	maxFiles int
	// scope is prefixed to every key of a view of the cache (Scoped).
	scope   string
	footers *lru.Cache[string, *footer]
	indexes *lru.Cache[string, *TableIndex]
	// loads are the loads of whole indexes under way, by key: callers
	// that want one at once share its reading (a server reads a table's
	// index while it makes the plan that needs it).
	loads *singleflight.Group
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
	return &FooterCache{maxFiles: max(maxFiles, 1), footers: footers, indexes: indexes, loads: &singleflight.Group{}}
}

// Scoped returns a view of c that shares its room but none of its
// entries with views of other scopes: what was read with one storage
// access (a caller's vended credentials, say) is kept apart from what was
// read with another. The scope "" is c's own entries.
func (c *FooterCache) Scoped(scope string) *FooterCache {
	if c == nil || scope == "" {
		return c
	}
	v := *c
	v.scope = c.scope + scope + "\x00"
	return &v
}

func (c *FooterCache) get(path string) (*footer, bool) {
	if c == nil {
		return nil, false
	}
	return c.footers.Get(c.scope + path)
}

func (c *FooterCache) add(path string, f *footer) {
	if c != nil {
		c.footers.Add(c.scope+path, f)
	}
}

// footer is what a statistics file holds for the index, decoded once: its
// v2 directory or its v1 entries, and the entries that failed DecodeEntry
// (which fail the same way every time, the file being immutable).
type footer struct {
	dir     *storedDirectory
	entries []Entry
	invalid []error
}

// loadConcurrency bounds how many segments Load reads at once: enough to
// hide object-store latency for a table with many segments.
const loadConcurrency = 32

// Load reads a table's index from its metadata: the statistics files whose
// blob-metadata lists an index item (docs/format.md §7, §8); others are not
// opened. A v2 segment costs one read of its directory, a v1 one read of its
// footer (the sizes the statistics entries record); then the segment files
// those directories link (§2.5) one read each, all at once. What was read
// is kept in cache (which may be nil).
//
// The index is advisory, so nothing here is fatal: a statistics file that
// cannot be read, a linked file that cannot be read or links files of its
// own, and an entry that fails DecodeEntry, are reported in the returned
// errors and left out, which leaves the data files they cover unindexed.
func Load(ctx context.Context, fsys icebergio.IO, meta table.Metadata, cache *FooterCache) (*TableIndex, []error) {
	var files []table.StatisticsFile
	for sf := range meta.Statistics() {
		if HoldsEntries(sf) {
			files = append(files, sf)
		}
	}

	if cache == nil {
		return load(ctx, fsys, files, nil, "")
	}
	key := cache.scope + indexKey(files)
	if ix, ok := cache.indexes.Get(key); ok {
		return ix, nil
	}
	type loaded struct {
		ix   *TableIndex
		errs []error
	}
	v, _, _ := cache.loads.Do(key, func() (any, error) {
		ix, errs := load(ctx, fsys, files, cache, key)
		return loaded{ix, errs}, nil
	})
	return v.(loaded).ix, v.(loaded).errs
}

// load is Load of the index of files, kept in cache (which may be nil)
// under key.
func load(ctx context.Context, fsys icebergio.IO, files []table.StatisticsFile, cache *FooterCache, key string) (*TableIndex, []error) {
	footers, errs := readFooters(ctx, fsys, files, cache)
	// The files linked by those read: a second round of reads, all at once.
	var linked []table.StatisticsFile
	for i, f := range footers {
		if f != nil && f.dir != nil {
			for _, l := range f.dir.links {
				linked = append(linked, LinkedFile(files[i], l))
			}
		}
	}
	linkedFooters, linkedErrs := readFooters(ctx, fsys, linked, cache)

	ix := &TableIndex{}
	var problems []error
	next := 0 // the first of linked not yet added
	for i, sf := range files {
		if errs[i] != nil {
			problems = append(problems, &SegmentError{Path: sf.StatisticsPath, Err: errs[i]})
			continue
		}
		f := footers[i]
		problems = append(problems, f.invalid...)
		ix.segments = append(ix.segments, Segment{File: sf, dir: f.dir, Entries: f.entries})
		if f.dir == nil {
			continue
		}
		for k := range f.dir.links {
			lsf, lf, lerr := linked[next], linkedFooters[next], linkedErrs[next]
			next++
			switch {
			case lerr != nil:
				problems = append(problems, &SegmentError{Path: lsf.StatisticsPath, LinkedFrom: sf.StatisticsPath, Err: lerr})
			case lf.dir == nil || len(lf.dir.links) > 0:
				problems = append(problems, &SegmentError{Path: lsf.StatisticsPath, LinkedFrom: sf.StatisticsPath,
					Err: fmt.Errorf("index: statistics file %s links %s, which is not a segment without links of its own", sf.StatisticsPath, lsf.StatisticsPath)})
			default:
				ix.segments = append(ix.segments, Segment{File: lsf, dir: lf.dir, LinkedFrom: sf.StatisticsPath, Link: &f.dir.links[k]})
			}
		}
	}
	// An index with problems is rebuilt next time, as I/O errors may pass;
	// one of more files than the cache holds footers is not kept either, so
	// the cache's size bounds what it holds.
	if cache != nil && len(problems) == 0 && len(files)+len(linked) <= cache.maxFiles {
		cache.indexes.Add(key, ix)
	}
	return ix, problems
}

// readFooters reads what files hold for the index, at most loadConcurrency
// at once, from cache where it has them; a file's error is in errs.
func readFooters(ctx context.Context, fsys icebergio.IO, files []table.StatisticsFile, cache *FooterCache) (footers []*footer, errs []error) {
	footers = make([]*footer, len(files))
	errs = make([]error, len(files))
	var g errgroup.Group // errors are per file, in errs: none stops the others
	g.SetLimit(loadConcurrency)
	for i, sf := range files {
		if f, ok := cache.get(sf.StatisticsPath); ok {
			footers[i] = f
			continue
		}
		g.Go(func() error {
			// A panic reading one file (a storage client's) is that file's
			// error, not the end of the process.
			defer func() {
				if r := recover(); r != nil {
					footers[i], errs[i] = nil, fmt.Errorf("index: statistics file %s: internal error: %v", sf.StatisticsPath, r)
				}
			}()
			if err := ctx.Err(); err != nil {
				errs[i] = fmt.Errorf("index: statistics file %s: %w", sf.StatisticsPath, err)
				return nil
			}
			footers[i], errs[i] = readFooter(fsys, sf)
			if errs[i] == nil {
				cache.add(sf.StatisticsPath, footers[i])
			}
			return nil
		})
	}
	g.Wait()
	return footers, errs
}

// index builds byFile, the first applicable filter of a file and field
// winning.
func (ix *TableIndex) index() {
	ix.byFile = make(map[entryKey]FilterRef)
	put := func(file string, size int64, field int, ref FilterRef) {
		key := entryKey{file, size, field}
		if _, dup := ix.byFile[key]; !dup {
			ix.byFile[key] = ref
		}
	}
	for si := range ix.segments {
		seg := &ix.segments[si]
		for j, e := range seg.Entries {
			put(e.DataFile, e.DataFileSize, e.FieldID, FilterRef{seg, nil, -1, int32(j)})
		}
		dir := seg.Directory()
		if dir == nil {
			continue
		}
		for gi, g := range dir.Groups {
			for m, mem := range g.Members {
				put(dir.Files.Path(mem.File), dir.Files.Size(mem.File), g.FieldID, FilterRef{seg, dir, int32(gi), int32(m)})
			}
		}
	}
}

// FindFile finds a planned data file by its location and size, as a
// manifest entry lists them, for Match: its index among the caller's
// files. path is only valid during the call. Match calls it from several
// goroutines at once.
type FindFile func(path []byte, size int64) (file int, ok bool)

// Match finds the filters that apply to planned data files, which find
// finds. It calls fn for every applicable filter of a field in fields,
// segment by segment in Lookup's order, so the first call for a file and
// field is the filter Lookup returns. It reads each segment's list of
// files once, so it costs one find per covered file and segment — far
// less than a Lookup per file and field on a large index.
func (ix *TableIndex) Match(find FindFile, fields []int, fn func(file int, f FilterRef)) {
	ix.match(0, find, fields, fn, true)
}

// MatchGroups is Match over the segments from the first-th on (in
// Segments' order: with Extends, a caller that matched files to prev
// matches only the segments ix adds to it), for a caller that reads of a
// ref its field and group, not its Filter: a directory nothing holds
// decoded is matched as its stored blob is decoded
// (segment.MatchStoredDirectory), its files and members not kept. At
// 1,000,000 files that is 79 MB less at the peak of a server's first
// plan of a column, and a pass less. The Filter of such a ref decodes the
// directory.
func (ix *TableIndex) MatchGroups(first int, find FindFile, fields []int, fn func(file int, f FilterRef)) {
	ix.match(first, find, fields, fn, false)
}

// match is Match from the first-th segment on; without decode, a
// directory not held decoded is streamed.
func (ix *TableIndex) match(first int, find FindFile, fields []int, fn func(file int, f FilterRef), decode bool) {
	var buf []byte
	for si := first; si < len(ix.segments); si++ {
		seg := &ix.segments[si]
		for j, e := range seg.Entries {
			if !slices.Contains(fields, e.FieldID) {
				continue
			}
			buf = append(buf[:0], e.DataFile...)
			if i, ok := find(buf, e.DataFileSize); ok {
				fn(i, FilterRef{seg, nil, -1, int32(j)})
			}
		}
		if seg.dir == nil || !seg.mayIndex(fields) {
			continue
		}
		if !decode && seg.dir.held() == nil {
			seg.dir.match(find, fields, func(dir *segment.Directory, gi, m, i int) {
				fn(i, FilterRef{seg, dir, int32(gi), int32(m)})
			})
			continue
		}
		dir := seg.Directory()
		if !slices.ContainsFunc(dir.Groups, func(g segment.Group) bool { return slices.Contains(fields, g.FieldID) }) {
			continue
		}
		planned := plan(&dir.Files, find)
		for gi, g := range dir.Groups {
			if !slices.Contains(fields, g.FieldID) {
				continue
			}
			for m, mem := range g.Members {
				if i := planned[mem.File]; i >= 0 {
					fn(int(i), FilterRef{seg, dir, int32(gi), int32(m)})
				}
			}
		}
	}
}

// mayIndex reports whether the segment may hold filters of some of
// fields: false when its statistics entry lists the fields of its index
// blobs and none of them is one of fields.
func (s *Segment) mayIndex(fields []int) bool {
	listed := false
	for _, b := range s.File.BlobMetadata {
		if !IsIndexBlobType(puffin.BlobType(b.Type)) {
			continue
		}
		for _, id := range b.Fields {
			listed = true
			if slices.Contains(fields, int(id)) {
				return true
			}
		}
	}
	return !listed
}

// plan returns the index among the caller's files of each of files,
// -1 for one not planned. A directory of 1,000,000 files is looked up in
// parts, a goroutine each.
func plan(files *filelist.List, find FindFile) []int32 {
	planned := make([]int32, files.Len())
	parts := max(1, min(runtime.GOMAXPROCS(0), files.Len()/(1<<16)))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for k, path := range files.Range(files.Len()*p/parts, files.Len()*(p+1)/parts) {
				planned[k] = -1
				if i, ok := find(path, files.Size(k)); ok {
					planned[k] = int32(i)
				}
			}
		})
	}
	wg.Wait()
	return planned
}

// FilterRef is where Match found a data file's filter: what a lookup over
// many files needs of it (its field, its group) without the StoredFilter,
// which makes the data file's location a string again.
type FilterRef struct {
	seg *Segment
	dir *segment.Directory // seg's, decoded: a ref holds it
	// group is the filter's group in seg.Dir, and member its member
	// there; a negative group makes member the index of a v1 entry.
	group, member int32
}

// FieldID is the field the filter indexes.
func (r FilterRef) FieldID() int {
	if r.group < 0 {
		return r.seg.Entries[r.member].FieldID
	}
	return r.dir.Groups[r.group].FieldID
}

// Group returns the v2 group holding the filter and its member index, or
// nil for a v1 entry.
func (r FilterRef) Group() (*segment.Group, int) {
	if r.group < 0 {
		return nil, 0
	}
	return &r.dir.Groups[r.group], int(r.member)
}

// StatisticsPath is the statistics file holding the filter.
func (r FilterRef) StatisticsPath() string { return r.seg.File.StatisticsPath }

// Filter returns the filter.
func (r FilterRef) Filter() StoredFilter {
	if r.group < 0 {
		return r.seg.v1Filter(int(r.member))
	}
	dir := r.dir
	if dir.Groups[r.group].Members == nil { // matched by MatchGroups: decoded now
		dir = r.seg.Directory()
	}
	return r.seg.v2Filter(dir, int(r.group), int(r.member))
}

// Extends reports whether ix holds prev's segments, the same ones read
// once (a FooterCache's), first and in prev's order, and others after
// them: a table's index after a segment was added to it. A filter prev's
// segments give a data file is then the one ix gives it (the first
// segment's wins), and only a file none of them covers can get one from
// the segments ix adds (MatchGroups).
func (ix *TableIndex) Extends(prev *TableIndex) bool {
	if prev == nil || len(prev.segments) > len(ix.segments) {
		return false
	}
	for i, seg := range prev.segments {
		cur := ix.segments[i]
		if cur.File.StatisticsPath != seg.File.StatisticsPath || cur.File.FileSizeInBytes != seg.File.FileSizeInBytes ||
			cur.dir != seg.dir || len(cur.Entries) != len(seg.Entries) || cur.LinkedFrom != seg.LinkedFrom {
			return false
		}
	}
	return true
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
	// LinkedFrom is the statistics file linking the segment (Segment.LinkedFrom).
	LinkedFrom string
	Err        error
}

func (e *SegmentError) Error() string { return e.Err.Error() }
func (e *SegmentError) Unwrap() error { return e.Err }

// HoldsEntries reports whether a statistics file holds index filters by its
// blob-metadata, which lists one item per indexed field (§7).
func HoldsEntries(sf table.StatisticsFile) bool {
	for _, b := range sf.BlobMetadata {
		if IsIndexBlobType(puffin.BlobType(b.Type)) {
			return true
		}
	}
	return false
}

// HoldsV1Entries reports whether a statistics file holds entries of index
// format v1, by its blob-metadata.
func HoldsV1Entries(sf table.StatisticsFile) bool {
	for _, b := range sf.BlobMetadata {
		if puffin.BlobType(b.Type) == BlobType {
			return true
		}
	}
	return false
}

// IsIndexBlobType reports whether blobs of a type are the index's own (of
// either format version), as opposed to other tools' blobs that share a
// statistics file with them.
func IsIndexBlobType(t puffin.BlobType) bool {
	return t == BlobType || t == segment.GroupBlobType || t == segment.DirectoryBlobType
}

// LinksSegments reports whether a statistics file's directory links other
// segment files, by the directory item of its blob-metadata
// (segment.PropLinks).
func LinksSegments(sf table.StatisticsFile) bool {
	for _, b := range sf.BlobMetadata {
		if puffin.BlobType(b.Type) == segment.DirectoryBlobType && b.Properties[segment.PropLinks] != "" {
			return true
		}
	}
	return false
}

// readFooter reads what a statistics file holds for the index. A v2
// segment whose directory's place table metadata records costs one read of
// the directory; any other file one read of its footer (of the size its
// statistics entry records), then one of its directory if it has one.
func readFooter(fsys icebergio.IO, sf table.StatisticsFile) (*footer, error) {
	path := sf.StatisticsPath
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index: open statistics file %s: %w", path, err)
	}
	defer f.Close()
	if off, length, ok, err := segment.PlacedDirectory(sf); ok {
		var dir *storedDirectory
		if err == nil {
			dir, err = readStoredDirectory(f, off, length)
		}
		if err != nil {
			return nil, fmt.Errorf("index: statistics file %s: %w", path, err)
		}
		return &footer{dir: dir}, nil
	}
	r, err := puffin.Open(f, sf.FileSizeInBytes, puffin.WithFooterSize(sf.FileFooterSizeInBytes))
	if err != nil {
		return nil, fmt.Errorf("index: statistics file %s: %w", path, err)
	}
	var ft footer
	if off, length, ok := segment.FindDirectory(r); ok {
		if ft.dir, err = readStoredDirectory(f, off, length); err != nil {
			return nil, fmt.Errorf("index: statistics file %s: %w", path, err)
		}
	}
	for i := range r.NumBlobs() {
		b, _ := r.Blob(i)
		if !IsEntry(b) {
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
	return Segment{File: sf, dir: f.dir, Entries: f.entries}, nil
}
