// Package filelist holds many data files — a location and a size each — in
// little memory. A server that keeps a table of 1,000,000 data files for
// every lookup holds each location at least twice (its plan of the table
// and the index's directories), and a location is about a hundred bytes:
// as Go strings, that alone is more memory than the whole budget of a
// small server. Locations of one table share most of their bytes with the
// one before them: the table's data directory, and in a Spark or Flink
// write's names the write's UUID and counters
// (00012-345-<uuid>-00001.parquet). A List keeps each location as what it
// does not share with the one before it, so a file costs its size and the
// few bytes that make its name its own.
package filelist

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"strings"
	"unsafe"
)

// restartEvery is how often a location is kept whole (but for what it
// shares with the list's first one), so that reading one costs decoding at
// most restartEvery-1 others.
const restartEvery = 32

// List is an append-only list of data files: their locations, each coded
// against the one before it, and their sizes. The zero List is empty and
// ready to use. A List is not safe for concurrent Appends; once built,
// reading it (Path, AppendPath, All, Size) is safe from many goroutines.
type List struct {
	// anchor is the first location: a restart entry keeps what follows
	// the prefix it shares with it.
	anchor string
	// data holds the entries. A restart entry (every restartEvery-th) is
	// uvarint(prefix shared with anchor), uvarint(n), n bytes; another is
	// uvarint(prefix shared with the location before it),
	// uvarint(suffix shared with it), uvarint(n), the n bytes between.
	data     []byte
	restarts []int // offset in data of entry k*restartEvery
	sizes    []int64
	last     []byte // the last location appended, to code the next one
}

// Len is the number of files.
func (l *List) Len() int { return len(l.sizes) }

// Size returns the size of file i.
func (l *List) Size(i int) int64 { return l.sizes[i] }

// Append adds a file.
func (l *List) Append(path string, size int64) {
	i := len(l.sizes)
	l.sizes = append(l.sizes, size)
	if i == 0 {
		l.anchor = strings.Clone(path) // AppendBytes's path is not the caller's to keep
	}
	if i%restartEvery == 0 {
		l.restarts = append(l.restarts, len(l.data))
		p := sharedPrefix(l.anchor, path)
		l.data = binary.AppendUvarint(l.data, uint64(p))
		l.data = binary.AppendUvarint(l.data, uint64(len(path)-p))
		l.data = append(l.data, path[p:]...)
	} else {
		p := sharedPrefix(string(l.last), path)
		s := sharedSuffix(string(l.last[p:]), path[p:])
		mid := path[p : len(path)-s]
		l.data = binary.AppendUvarint(l.data, uint64(p))
		l.data = binary.AppendUvarint(l.data, uint64(s))
		l.data = binary.AppendUvarint(l.data, uint64(len(mid)))
		l.data = append(l.data, mid...)
	}
	l.last = append(l.last[:0], path...)
}

// AppendBytes adds a file whose location is in path, which the list does
// not keep.
func (l *List) AppendBytes(path []byte, size int64) {
	l.Append(unsafe.String(unsafe.SliceData(path), len(path)), size)
}

// Grow makes room for n more files (their sizes; locations grow as they
// come).
func (l *List) Grow(n int) {
	if n > 0 && cap(l.sizes)-len(l.sizes) < n {
		sizes := make([]int64, len(l.sizes), len(l.sizes)+n)
		copy(sizes, l.sizes)
		l.sizes = sizes
	}
}

// Clip drops the room appends left for more: a list that is built once
// and then kept holds what it needs and no more.
func (l *List) Clip() {
	l.data = append([]byte(nil), l.data...)
	l.restarts = append([]int(nil), l.restarts...)
	l.sizes = append([]int64(nil), l.sizes...)
	l.last = nil
	if len(l.sizes) > 0 {
		l.last = []byte(l.Path(len(l.sizes) - 1))
	}
}

// Bytes is the memory the list holds.
func (l *List) Bytes() int64 {
	return int64(len(l.anchor) + cap(l.data) + 8*cap(l.restarts) + 8*cap(l.sizes) + cap(l.last))
}

// Path returns the location of file i.
func (l *List) Path(i int) string { return string(l.AppendPath(nil, i)) }

// AppendPath appends the location of file i to dst.
func (l *List) AppendPath(dst []byte, i int) []byte {
	if i < 0 || i >= len(l.sizes) {
		panic("filelist: index out of range")
	}
	var d decoder
	d.start(l, i/restartEvery)
	for range i % restartEvery {
		d.next(l)
	}
	return append(dst, d.cur...)
}

// All yields each file's index and location, in order. The location's
// bytes are valid until the next iteration.
func (l *List) All() iter.Seq2[int, []byte] { return l.Range(0, l.Len()) }

// Range is All of files [start, end).
func (l *List) Range(start, end int) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		if start < 0 || end > len(l.sizes) {
			panic("filelist: range out of bounds")
		}
		var d decoder
		for i := start; i < end; i++ {
			if i == start || i%restartEvery == 0 {
				d.start(l, i/restartEvery)
				for range i % restartEvery {
					d.next(l)
				}
			} else {
				d.next(l)
			}
			if !yield(i, d.cur) {
				return
			}
		}
	}
}

// AppendFrom appends files [start, end) of src.
func (l *List) AppendFrom(src *List, start, end int) {
	l.Grow(end - start)
	for i, p := range src.Range(start, end) {
		l.AppendBytes(p, src.sizes[i])
	}
}

// Duplicate returns a location the list holds more than once, if any.
func (l *List) Duplicate() (string, bool) {
	x := NewIndex(l, nil)
	for p, files := range x.others {
		if len(files) > 1 || x.equal(int(x.first[maphash.String(x.seed, p)]), []byte(p)) {
			return p, true
		}
	}
	return "", false
}

// decoder decodes entries one after another from a restart.
type decoder struct {
	cur, spare []byte
	off        int
}

// start decodes restart entry k.
func (d *decoder) start(l *List, k int) {
	d.off = l.restarts[k]
	p := d.uvarint(l)
	n := d.uvarint(l)
	d.cur = append(append(d.cur[:0], l.anchor[:p]...), l.data[d.off:d.off+n]...)
	d.off += n
}

// next decodes the entry after the current one.
func (d *decoder) next(l *List) {
	p := d.uvarint(l)
	s := d.uvarint(l)
	n := d.uvarint(l)
	d.spare = append(append(append(d.spare[:0], d.cur[:p]...), l.data[d.off:d.off+n]...), d.cur[len(d.cur)-s:]...)
	d.off += n
	d.cur, d.spare = d.spare, d.cur
}

func (d *decoder) uvarint(l *List) int {
	v, n := binary.Uvarint(l.data[d.off:])
	d.off += n
	return int(v)
}

func sharedPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func sharedSuffix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return i
		}
	}
	return n
}

// Index finds files of a List by location and size, in a map of 12 bytes
// or so a file rather than one keyed by the locations (which would make
// each a string again): a location's hash leads to a file, whose location
// is compared.
type Index struct {
	l    *List
	seed maphash.Seed
	// first is the first file of each location hash; files whose hash an
	// earlier one had are in others, by location.
	first  map[uint64]int32
	others map[string][]int32
}

// NewIndex indexes the files of l for which include is true (every file
// when include is nil). l must not change while the index is used.
func NewIndex(l *List, include func(i int) bool) *Index {
	x := &Index{l: l, seed: maphash.MakeSeed(), first: map[uint64]int32{}}
	if include == nil {
		x.first = make(map[uint64]int32, l.Len())
	}
	for i, p := range l.All() {
		if include != nil && !include(i) {
			continue
		}
		h := maphash.Bytes(x.seed, p)
		if _, dup := x.first[h]; !dup {
			x.first[h] = int32(i)
			continue
		}
		if x.others == nil {
			x.others = map[string][]int32{}
		}
		x.others[string(p)] = append(x.others[string(p)], int32(i))
	}
	return x
}

// Find returns the first file of the list at location path with size
// size.
func (x *Index) Find(path []byte, size int64) (int, bool) {
	i, ok := x.first[maphash.Bytes(x.seed, path)]
	if !ok {
		return 0, false
	}
	if x.l.sizes[i] == size && x.equal(int(i), path) {
		return int(i), true
	}
	for _, k := range x.others[string(path)] {
		if x.l.sizes[k] == size {
			return int(k), true
		}
	}
	return 0, false
}

// equal reports whether file i's location is path.
func (x *Index) equal(i int, path []byte) bool {
	var buf [256]byte
	return string(x.l.AppendPath(buf[:0], i)) == string(path)
}
