package segment

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// Bounds of a group: a lookup reads one run of a group per value, so a run
// stays at most MaxGroupMembers blocks (2 MiB); and a group, which a merge
// streams, stays at most MaxGroupBytes unless one filter alone is larger.
const (
	MaxGroupMembers = 1 << 16
	MaxGroupBytes   = 64 << 20
)

// DefaultMemoryBudget is how many bytes of filters a Writer buffers before
// it writes groups: whatever the table's size, a build holds at most this
// much of the index.
const DefaultMemoryBudget = 256 << 20

// Properties of a group's blob in the Puffin footer, for readers that list
// the footer; the directory is what lookups trust.
const (
	PropBlocks  = "blocks"
	PropMembers = "members"
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	// SnapshotID and SequenceNumber are the snapshot the filters were built
	// from, recorded in every blob's metadata.
	SnapshotID, SequenceNumber int64
	// MemoryBudget bounds the filter bytes buffered; 0 means
	// DefaultMemoryBudget. Less memory makes smaller groups, never an error.
	MemoryBudget int64
	// AllowEmpty lets Finish write a segment without filters or links, an
	// empty directory: a shard whose data files were all indexed already
	// still records that it ran.
	AllowEmpty bool
}

// Writer writes the groups and the directory of a segment into a Puffin
// file. Filters are buffered by class and written as groups when a class
// fills a group or the buffers reach the memory budget; merged groups are
// streamed run by run. Blobs of other tools can be copied into the same
// Puffin file with its writer, between the Writer's calls.
type Writer struct {
	pw       *puffin.Writer
	o        WriterOptions
	files    map[File]int
	order    []File // the files by the number members know them by, until sortFiles
	dir      Directory
	classes  map[class]*pending
	buffered int64 // capacity of the pending classes' bitsets
	members  map[int]int
	err      error
}

// class is what makes filters share a group.
type class struct {
	field     int
	valueType string
	fpp       float64
	blocks    int
}

// pending are the buffered filters of a class, member after member.
type pending struct {
	class
	valueType iceberg.PrimitiveType
	members   []Member
	bits      []byte
}

// NewWriter returns a Writer adding a segment's blobs to pw.
func NewWriter(pw *puffin.Writer, o WriterOptions) *Writer {
	if o.MemoryBudget <= 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	return &Writer{pw: pw, o: o, files: map[File]int{}, classes: map[class]*pending{}, members: map[int]int{}}
}

// FilterInput is one data file's filter for one column.
type FilterInput struct {
	File      File
	FieldID   int
	ValueType iceberg.PrimitiveType
	FPP       float64
	NDV       int64
	Bits      []byte // the SBBF bitset, N·32 bytes; Add copies it
}

// Add buffers a filter into its class, writing groups as the class fills one
// or the buffers pass the memory budget.
func (w *Writer) Add(f FilterInput) error {
	if w.err != nil {
		return w.err
	}
	if len(f.Bits) == 0 || len(f.Bits)%sbbf.BlockBytes != 0 {
		return fmt.Errorf("segment: filter of %s has %d bytes, not a positive multiple of %d", f.File.Path, len(f.Bits), sbbf.BlockBytes)
	}
	key := class{f.FieldID, hashing.FormatValueType(f.ValueType), f.FPP, len(f.Bits) / sbbf.BlockBytes}
	p := w.classes[key]
	if p == nil {
		p = &pending{class: key, valueType: f.ValueType}
		w.classes[key] = p
	}
	before := cap(p.bits)
	p.members = append(p.members, Member{File: w.fileIndex(f.File), NDV: f.NDV})
	p.bits = append(p.bits, f.Bits...)
	w.buffered += int64(cap(p.bits) - before)
	if len(p.members) >= groupCapacity(key.blocks) {
		return w.flush(p)
	}
	for w.buffered > w.o.MemoryBudget && w.err == nil {
		largest := slices.MaxFunc(slices.Collect(maps.Values(w.classes)), func(a, b *pending) int { return cmp.Compare(cap(a.bits), cap(b.bits)) })
		w.flush(largest)
	}
	return w.err
}

// groupCapacity is how many filters of n blocks a group holds.
func groupCapacity(blocks int) int {
	return max(1, min(MaxGroupMembers, MaxGroupBytes/(blocks*sbbf.BlockBytes)))
}

func (w *Writer) fileIndex(f File) int {
	i, ok := w.files[f]
	if !ok {
		i = len(w.order)
		w.files[f] = i
		w.order = append(w.order, f)
	}
	return i
}

// flush writes a class's buffered filters as a group and forgets them.
func (w *Writer) flush(p *pending) error {
	delete(w.classes, p.class)
	w.buffered -= int64(cap(p.bits))
	filterBytes := p.blocks * sbbf.BlockBytes
	return w.writeGroup(p.class, p.valueType, p.members, func(b int, rw *runWriter) error {
		for m := range p.members {
			rw.block(p.bits[m*filterBytes+b*sbbf.BlockBytes:][:sbbf.BlockBytes])
		}
		return nil
	})
}

// writeGroup writes a group of the class with members, whose runs fill
// produces block by block.
func (w *Writer) writeGroup(c class, vt iceberg.PrimitiveType, members []Member, fill func(b int, rw *runWriter) error) error {
	if w.err != nil {
		return w.err
	}
	g := Group{FieldID: c.field, ValueType: vt, FPP: c.fpp, Blocks: c.blocks, Members: members, Tag: rand.Uint64(), Offset: w.pw.Offset()}
	in := puffin.BlobInput{
		Type:           GroupBlobType,
		Fields:         []int32{int32(c.field)},
		SnapshotID:     w.o.SnapshotID,
		SequenceNumber: w.o.SequenceNumber,
		Properties: map[string]string{
			PropBlocks:   strconv.Itoa(c.blocks),
			PropMembers:  strconv.Itoa(len(members)),
			"value-type": c.valueType,
			"fpp":        strconv.FormatFloat(c.fpp, 'g', -1, 64),
			"hash":       "xxhash64",
		},
	}
	_, err := w.pw.AddBlobStream(in, g.Bytes(), func(dst io.Writer) error {
		rw := &runWriter{w: dst, tag: g.Tag}
		for b := range g.Blocks {
			rw.run, rw.chunk = b, 0
			if err := fill(b, rw); err != nil {
				return err
			}
			rw.flushChunk()
			if rw.err != nil {
				return rw.err
			}
		}
		return nil
	})
	if err != nil {
		w.err = fmt.Errorf("segment: write group of field %d: %w", c.field, err)
		return w.err
	}
	w.dir.Groups = append(w.dir.Groups, g)
	w.members[c.field] += len(members)
	return nil
}

// runWriter writes the blocks of one run at a time into chunks, each
// followed by its checksum.
type runWriter struct {
	w          io.Writer
	tag        uint64
	run, chunk int
	buf        [ChunkMembers*sbbf.BlockBytes + ChecksumBytes]byte
	n          int // blocks in buf
	err        error
}

func (rw *runWriter) block(b []byte) {
	copy(rw.buf[rw.n*sbbf.BlockBytes:], b)
	if rw.n++; rw.n == ChunkMembers {
		rw.flushChunk()
	}
}

func (rw *runWriter) flushChunk() {
	if rw.n == 0 || rw.err != nil {
		return
	}
	data := rw.buf[:rw.n*sbbf.BlockBytes]
	sum := Chunk{tag: rw.tag, run: rw.run, chunk: rw.chunk}.sum(data)
	out := append(data, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))
	_, rw.err = rw.w.Write(out)
	rw.n = 0
	rw.chunk++
}

// Source is a group of another segment to merge, with the members to keep.
type Source struct {
	// Path names the source's file in errors.
	Path string
	// R reads the source's Puffin file.
	R     io.ReaderAt
	Group *Group
	// Files are the source directory's files, which members index.
	Files *filelist.List
	// Keep are the indexes of the members to keep, in order.
	Keep []int
}

// Merge writes the kept members of groups of one class (field, value type,
// fpp and block count) into new groups, copying run after run without
// re-hashing and verifying every chunk it reads: the time is linear in the
// bytes copied, and memory holds one buffer per source.
func (w *Writer) Merge(sources []Source) error {
	if w.err != nil || len(sources) == 0 {
		return w.err
	}
	g0 := sources[0].Group
	c := class{g0.FieldID, hashing.FormatValueType(g0.ValueType), g0.FPP, g0.Blocks}
	for _, s := range sources {
		if s.Group.FieldID != c.field || s.Group.Blocks != c.blocks || s.Group.FPP != c.fpp || !s.Group.ValueType.Equals(g0.ValueType) {
			return fmt.Errorf("segment: merge of groups of different classes (%s and %s)", sources[0].Path, s.Path)
		}
	}
	// Cut the kept members into groups of at most the class's capacity.
	capacity := groupCapacity(c.blocks)
	var parts []mergePart
	flush := func() error {
		if len(parts) == 0 {
			return nil
		}
		err := w.mergeParts(c, g0.ValueType, parts)
		parts = parts[:0]
		return err
	}
	taken := 0
	for i := range sources {
		keep := sources[i].Keep
		for len(keep) > 0 {
			n := min(len(keep), capacity-taken)
			parts = append(parts, mergePart{&sources[i], keep[:n]})
			keep, taken = keep[n:], taken+n
			if taken == capacity {
				if err := flush(); err != nil {
					return err
				}
				taken = 0
			}
		}
	}
	return flush()
}

// mergePart is the members of one source that go into a merged group.
type mergePart struct {
	src  *Source
	keep []int
}

// mergeParts writes one merged group of the parts' members, in order.
func (w *Writer) mergeParts(c class, vt iceberg.PrimitiveType, parts []mergePart) error {
	var members []Member
	readers := make([]*runReader, len(parts))
	bufSize := int(min(max(w.o.MemoryBudget/int64(2*len(parts)), 64<<10), 4<<20))
	for i, p := range parts {
		for _, m := range p.keep {
			sm := p.src.Group.Members[m]
			f := File{Path: p.src.Files.Path(sm.File), Size: p.src.Files.Size(sm.File)}
			members = append(members, Member{File: w.fileIndex(f), NDV: sm.NDV})
		}
		readers[i] = newRunReader(p.src, bufSize)
	}
	return w.writeGroup(c, vt, members, func(b int, rw *runWriter) error {
		for i, p := range parts {
			run, err := readers[i].next(b)
			if err != nil {
				return &SourceError{Path: p.src.Path, Offset: p.src.Group.Offset, Err: err}
			}
			for _, m := range p.keep {
				off := blockInRun(m)
				rw.block(run[off:][:sbbf.BlockBytes])
			}
		}
		return nil
	})
}

// SourceError reports a source group that could not be merged: a run that
// could not be read or failed its checksum. The merge wrote part of its
// output, which the caller must abandon; a retry without the group (whose
// files then need indexing again) can succeed.
type SourceError struct {
	Path   string // the source's statistics file
	Offset int64  // the group's offset in it
	Err    error
}

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// runReader reads a source group's runs in order through a buffer,
// verifying each chunk.
type runReader struct {
	src *Source
	r   *bufio.Reader
	run []byte
}

func newRunReader(src *Source, bufSize int) *runReader {
	g := src.Group
	return &runReader{
		src: src,
		r:   bufio.NewReaderSize(io.NewSectionReader(src.R, g.Offset, g.Bytes()), bufSize),
		run: make([]byte, runBytes(len(g.Members))),
	}
}

// next returns run b, which must follow the run read last.
func (rr *runReader) next(b int) ([]byte, error) {
	g := rr.src.Group
	if _, err := io.ReadFull(rr.r, rr.run); err != nil {
		return nil, fmt.Errorf("segment: read run %d of a group of %s: %w", b, rr.src.Path, err)
	}
	for m := 0; m < len(g.Members); m += ChunkMembers {
		c := g.ChunkOf(b, m)
		start := c.Offset - g.RunOffset(b)
		if !c.Verify(rr.run[start : start+c.Length+ChecksumBytes]) {
			return nil, fmt.Errorf("segment: run %d, chunk %d of the group of field %d at offset %d of %s: %w", b, m/ChunkMembers, g.FieldID, g.Offset, rr.src.Path, ErrChecksum)
		}
	}
	return rr.run, nil
}

// Result is what Finish reports of a segment.
type Result struct {
	Directory *Directory
	// DirectoryOffset and DirectoryLength locate the directory's stored
	// (compressed) bytes, for table metadata (PropDirectoryOffset).
	DirectoryOffset, DirectoryLength int64
	// Members counts the filters of each field.
	Members map[int]int
	// Fields are the fields the segment's filters index, its own and its
	// linked files', in order: the directory blob's fields.
	Fields []int32
}

// Finish writes the buffered groups and the directory. The Puffin footer
// is the caller's to write next.
func (w *Writer) Finish() (Result, error) {
	keys := slices.SortedFunc(maps.Keys(w.classes), func(a, b class) int {
		return cmp.Or(cmp.Compare(a.field, b.field), cmp.Compare(a.valueType, b.valueType), cmp.Compare(a.fpp, b.fpp), cmp.Compare(a.blocks, b.blocks))
	})
	for _, k := range keys {
		w.flush(w.classes[k])
	}
	if w.err != nil {
		return Result{}, w.err
	}
	if len(w.dir.Groups) == 0 && len(w.dir.Links) == 0 && !w.o.AllowEmpty {
		return Result{}, errors.New("segment: no filter to write")
	}
	w.sortFiles()
	props := map[string]string{"files": strconv.Itoa(w.dir.Files.Len()), "groups": strconv.Itoa(len(w.dir.Groups))}
	if len(w.dir.Links) > 0 {
		props[PropLinks] = strconv.Itoa(len(w.dir.Links))
	}
	fields := w.fields()
	meta, err := w.pw.AddBlob(puffin.BlobInput{
		Type: DirectoryBlobType, Fields: fields, SnapshotID: w.o.SnapshotID, SequenceNumber: w.o.SequenceNumber,
		Codec: puffin.CodecZstd, Properties: props,
	}, w.dir.Encode())
	if err != nil {
		w.err = fmt.Errorf("segment: write directory: %w", err)
		return Result{}, w.err
	}
	dir := w.dir
	return Result{Directory: &dir, DirectoryOffset: meta.Offset, DirectoryLength: meta.Length, Members: maps.Clone(w.members), Fields: fields}, nil
}

// Link adds a link to another segment file (Directory.Links). A linked
// file must be a segment without links of its own.
func (w *Writer) Link(l Link) {
	w.dir.Links = append(w.dir.Links, l)
}

// fields lists the field ids the segment's filters index, its own and its
// linked files', in order.
func (w *Writer) fields() []int32 {
	set := map[int]bool{}
	for f := range w.members {
		set[f] = true
	}
	for _, l := range w.dir.Links {
		for _, f := range l.Fields {
			set[f] = true
		}
	}
	var ids []int32
	for _, f := range slices.Sorted(maps.Keys(set)) {
		ids = append(ids, int32(f))
	}
	return ids
}

// sortFiles makes the directory's files, ordered by path, which front
// coding compresses best, and renumbers the members.
func (w *Writer) sortFiles() {
	order := make([]int, len(w.order))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		fa, fb := w.order[a], w.order[b]
		return cmp.Or(cmp.Compare(fa.Path, fb.Path), cmp.Compare(fa.Size, fb.Size))
	})
	renumber := make([]int, len(order))
	w.dir.Files = filelist.List{}
	w.dir.Files.Grow(len(order))
	for to, from := range order {
		renumber[from] = to
		w.dir.Files.Append(w.order[from].Path, w.order[from].Size)
	}
	w.dir.Files.Clip()
	for gi := range w.dir.Groups {
		for mi := range w.dir.Groups[gi].Members {
			m := &w.dir.Groups[gi].Members[mi]
			m.File = renumber[m.File]
		}
	}
}
