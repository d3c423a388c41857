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
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// restartEvery is how often a location is kept whole (but for what it
// shares with its run's first one), so that reading one costs decoding at
// most restartEvery-1 others.
const restartEvery = 32

// List is an append-only list of data files: their locations, each coded
// against the one before it, and their sizes. The zero List is empty and
// ready to use. A List is not safe for concurrent Appends; once built,
// reading it (Path, AppendPath, All, Size) is safe from many goroutines.
//
// Its locations are held in runs: the one appended to, and sealed ones
// (Clip seals it), which never change and which AppendFrom shares rather
// than copies. A server's list of a table's files is made of its
// manifests' lists, and the next table version's of the same runs but
// the new manifest's.
type List struct {
	runs  []*run // sealed
	ends  []int  // ends[k] is the number of files of runs[:k+1]
	open  run    // the run appended to, after the sealed ones
	last  []byte // the last location of open, to code the next one
	sizes []int64
}

// run is a sequence of coded locations. Its first is kept whole but for
// what it shares with anchor (that first location), as is every
// restartEvery-th: uvarint(prefix shared with anchor), uvarint(n), n
// bytes. Every other is uvarint(prefix shared with the location before
// it), uvarint(suffix shared with it), uvarint(n), the n bytes between.
type run struct {
	anchor   string
	data     []byte
	restarts []int // offset in data of entry k*restartEvery
	n        int
}

// Len is the number of files.
func (l *List) Len() int { return len(l.sizes) }

// Size returns the size of file i.
func (l *List) Size(i int) int64 { return l.sizes[i] }

// sealed is the number of files of the sealed runs.
func (l *List) sealed() int {
	if len(l.ends) == 0 {
		return 0
	}
	return l.ends[len(l.ends)-1]
}

// Append adds a file.
func (l *List) Append(path string, size int64) {
	l.sizes = append(l.sizes, size)
	r := &l.open
	if r.n == 0 {
		r.anchor = strings.Clone(path) // AppendBytes's path is not the caller's to keep
	}
	if r.n%restartEvery == 0 {
		r.restarts = append(r.restarts, len(r.data))
		p := sharedPrefix(r.anchor, path)
		r.data = binary.AppendUvarint(r.data, uint64(p))
		r.data = binary.AppendUvarint(r.data, uint64(len(path)-p))
		r.data = append(r.data, path[p:]...)
	} else {
		last := unsafe.String(unsafe.SliceData(l.last), len(l.last)) // not changed before the next line but one
		p := sharedPrefix(last, path)
		s := sharedSuffix(last[p:], path[p:])
		mid := path[p : len(path)-s]
		r.data = binary.AppendUvarint(r.data, uint64(p))
		r.data = binary.AppendUvarint(r.data, uint64(s))
		r.data = binary.AppendUvarint(r.data, uint64(len(mid)))
		r.data = append(r.data, mid...)
	}
	r.n++
	l.last = append(l.last[:0], path...)
}

// AppendBytes adds a file whose location is in path, which the list does
// not keep.
func (l *List) AppendBytes(path []byte, size int64) {
	l.Append(unsafe.String(unsafe.SliceData(path), len(path)), size)
}

// AppendFrom appends files [start, end) of src: the sealed runs of src
// they cover whole are shared, the others coded again.
func (l *List) AppendFrom(src *List, start, end int) {
	if start < 0 || end > src.Len() || start > end {
		panic("filelist: range out of bounds")
	}
	l.Grow(end - start)
	from := 0
	for k, r := range src.runs {
		to := src.ends[k]
		if start <= from && to <= end && r.n > 0 {
			l.seal()
			l.runs = append(l.runs, r)
			l.ends = append(l.ends, l.sealed()+r.n)
			l.sizes = append(l.sizes, src.sizes[from:to]...)
		} else if lo, hi := max(start, from), min(end, to); lo < hi {
			l.appendCoded(src, lo, hi)
		}
		from = to
	}
	if lo := max(start, from); lo < end {
		l.appendCoded(src, lo, end)
	}
}

// appendCoded appends files [start, end) of src, coding them again.
func (l *List) appendCoded(src *List, start, end int) {
	for i, p := range src.Range(start, end) {
		l.AppendBytes(p, src.sizes[i])
	}
}

// seal makes the open run a sealed one, its room clipped.
func (l *List) seal() {
	r := l.open
	if r.n == 0 {
		return
	}
	r.data, r.restarts = slices.Clip(r.data), slices.Clip(r.restarts)
	l.runs = append(l.runs, &r)
	l.ends = append(l.ends, l.sealed()+r.n)
	l.open, l.last = run{}, nil
}

// Grow makes room for n more files (their sizes; locations grow as they
// come). When it must copy the sizes, it leaves room for a thirty-second
// of the files more, not the quarter append's growth leaves: a list
// extended version after version a few files at a time (Extension) is
// copied once per that many.
func (l *List) Grow(n int) {
	if cap(l.sizes)-len(l.sizes) < n {
		l.sizes = append(make([]int64, 0, len(l.sizes)+n+len(l.sizes)/32), l.sizes...)
	}
	l.open.restarts = slices.Grow(l.open.restarts, n/restartEvery+1)
}

// GrowBytes makes room for n more bytes of coded locations, where a
// caller knows about how many it appends: decoding a directory of
// 1,000,000 files into a list without room allocated 397 MB for its
// 47 MB of locations, copying them as they grew.
func (l *List) GrowBytes(n int) {
	l.open.data = slices.Grow(l.open.data, n)
}

// Clip drops the room appends left for more, sealing what was appended: a
// list that is built once and then kept holds what it needs and no more.
func (l *List) Clip() {
	if r := &l.open; r.n > 0 {
		r.data, r.restarts = append([]byte(nil), r.data...), append([]int(nil), r.restarts...)
	}
	l.seal()
	l.runs, l.ends = slices.Clip(l.runs), slices.Clip(l.ends)
	l.sizes = append([]int64(nil), l.sizes...)
}

// Extension returns a list of l's files that shares l's storage, to
// append a next version's files to (a table's next version after an
// append) without copying l. It appends where l would: l must not be
// appended to after, nor extended again.
func (l *List) Extension() List { return *l }

// Seal seals the locations appended as a run of their own, as Clip does,
// but keeps the room the list has for more files: a list extended version
// after version (Extension) grows in place rather than being copied each
// time.
func (l *List) Seal() { l.seal() }

// Bytes is the memory the list holds, its runs shared with other lists
// included.
func (l *List) Bytes() int64 {
	n := int64(8*cap(l.sizes)+cap(l.last)+16*cap(l.runs)) + l.open.bytes()
	for _, r := range l.runs {
		n += r.bytes()
	}
	return n
}

// bytes is the memory r holds.
func (r *run) bytes() int64 {
	return int64(64 + len(r.anchor) + cap(r.data) + 8*cap(r.restarts))
}

// Path returns the location of file i.
func (l *List) Path(i int) string { return string(l.AppendPath(nil, i)) }

// AppendPath appends the location of file i to dst.
func (l *List) AppendPath(dst []byte, i int) []byte {
	if i < 0 || i >= len(l.sizes) {
		panic("filelist: index out of range")
	}
	r, j := l.locate(i)
	var d decoder
	d.start(r, j/restartEvery)
	for range j % restartEvery {
		d.next(r)
	}
	return append(dst, d.cur...)
}

// locate returns the run holding file i and i's place in it.
func (l *List) locate(i int) (*run, int) {
	sealed := l.sealed()
	if i >= sealed {
		return &l.open, i - sealed
	}
	k, _ := slices.BinarySearch(l.ends, i+1)
	if k > 0 {
		i -= l.ends[k-1]
	}
	return l.runs[k], i
}

// All yields each file's index and location, in order. The location's
// bytes are valid until the next iteration.
func (l *List) All() iter.Seq2[int, []byte] { return l.Range(0, l.Len()) }

// Range is All of files [start, end).
func (l *List) Range(start, end int) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		if start < 0 || end > len(l.sizes) || start > end {
			panic("filelist: range out of bounds")
		}
		var d decoder
		for i := start; i < end; {
			r, j := l.locate(i)
			for ; j < r.n && i < end; i, j = i+1, j+1 {
				if i == start || j%restartEvery == 0 {
					d.start(r, j/restartEvery)
					for range j % restartEvery {
						d.next(r)
					}
				} else {
					d.next(r)
				}
				if !yield(i, d.cur) {
					return
				}
			}
		}
	}
}

// decoder decodes a run's entries one after another from a restart.
type decoder struct {
	cur, spare []byte
	off        int
}

// start decodes restart entry k of r.
func (d *decoder) start(r *run, k int) {
	d.off = r.restarts[k]
	p := d.uvarint(r)
	n := d.uvarint(r)
	d.cur = append(append(d.cur[:0], r.anchor[:p]...), r.data[d.off:d.off+n]...)
	d.off += n
}

// next decodes the entry after the current one.
func (d *decoder) next(r *run) {
	p := d.uvarint(r)
	s := d.uvarint(r)
	n := d.uvarint(r)
	d.spare = append(append(append(d.spare[:0], d.cur[:p]...), r.data[d.off:d.off+n]...), d.cur[len(d.cur)-s:]...)
	d.off += n
	d.cur, d.spare = d.spare, d.cur
}

func (d *decoder) uvarint(r *run) int {
	v, n := binary.Uvarint(r.data[d.off:])
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

// Index finds files of a List by location and size, in a map of about 30
// bytes a file rather than one keyed by the locations (which would make
// each a string again, a hundred bytes and more): a location is known by
// two 64-bit hashes of it under seeds drawn for the index, one the map's
// key, the other kept beside it. Two locations that differ share both with
// a chance of 2^-128 a pair, which neither a table nor a caller who does
// not know the seeds can arrange; comparing the locations themselves
// instead would decode one from the list for each file found, most of the
// time of matching 1,000,000 files to an index.
type Index struct {
	l            *List
	seed1, seed2 maphash.Seed
	shards       []indexShard // by the first hash, modulo their number
}

// indexShard is the files whose first hash falls to it: by the first
// hash, the first file included with it; the files whose first hash an
// earlier one had, by both hashes.
type indexShard struct {
	first  map[uint64]indexed
	others map[[2]uint64][]int32
}

// indexed is a file of an Index and the second hash of its location.
type indexed struct {
	file   int32
	second uint64
}

// parallelIndexFiles is the fewest files an index is made of by several
// goroutines, a shard each: a server matching 1,000,000 files to an index
// waits for it.
const parallelIndexFiles = 1 << 16

// sparseIndexShare is the share of a list's files below which an index
// of some of them decodes those files' locations alone rather than every
// location: the first plan after a sync of one file matched the new
// segment to the files of 1,000,000 without one, and decoding them all
// took 60 ms of it.
const sparseIndexShare = 16

// NewIndex indexes the files of l for which include is true (every file
// when include is nil; it may be called from several goroutines at once).
// l must not change while the index is used.
func NewIndex(l *List, include func(i int) bool) *Index {
	x := &Index{l: l, seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	if include != nil {
		var rows []int32
		for i := range l.Len() {
			if include(i) {
				rows = append(rows, int32(i))
				if len(rows) > l.Len()/sparseIndexShare {
					break
				}
			}
		}
		if len(rows) <= l.Len()/sparseIndexShare {
			x.shards = make([]indexShard, 1)
			x.shards[0].first = make(map[uint64]indexed, len(rows))
			var path []byte
			for _, i := range rows {
				path = l.AppendPath(path[:0], int(i))
				x.add(&x.shards[0], maphash.Bytes(x.seed1, path), path, i)
			}
			return x
		}
	}
	n := 1
	if l.Len() >= parallelIndexFiles {
		n = max(1, min(runtime.GOMAXPROCS(0), 8))
	}
	x.shards = make([]indexShard, n)
	included := l.Len() // the maps' room
	if include != nil {
		included = 0
		for i := range l.Len() {
			if include(i) {
				included++
			}
		}
	}
	var wg sync.WaitGroup
	for k := range x.shards {
		wg.Go(func() { x.fill(k, include, included) })
	}
	wg.Wait()
	return x
}

// fill adds the included files of shard k: each shard's goroutine reads
// every location, and hashes and keeps its own.
func (x *Index) fill(k int, include func(i int) bool, included int) {
	sh := &x.shards[k]
	sh.first = make(map[uint64]indexed, included/len(x.shards))
	for i, p := range x.l.All() {
		if include != nil && !include(i) {
			continue
		}
		if h1 := maphash.Bytes(x.seed1, p); int(h1%uint64(len(x.shards))) == k {
			x.add(sh, h1, p, int32(i))
		}
	}
}

// add adds file i at location path, whose first hash is h1, to its shard
// sh.
func (x *Index) add(sh *indexShard, h1 uint64, path []byte, i int32) {
	h2 := maphash.Bytes(x.seed2, path)
	if _, dup := sh.first[h1]; !dup {
		sh.first[h1] = indexed{i, h2}
		return
	}
	if sh.others == nil {
		sh.others = map[[2]uint64][]int32{}
	}
	sh.others[[2]uint64{h1, h2}] = append(sh.others[[2]uint64{h1, h2}], i)
}

// Find returns the first file of the list at location path with size
// size. It is safe for concurrent use.
func (x *Index) Find(path []byte, size int64) (int, bool) {
	h1 := maphash.Bytes(x.seed1, path)
	sh := &x.shards[h1%uint64(len(x.shards))]
	e, ok := sh.first[h1]
	if !ok {
		return 0, false
	}
	h2 := maphash.Bytes(x.seed2, path)
	if e.second == h2 && x.l.sizes[e.file] == size {
		return int(e.file), true
	}
	for _, k := range sh.others[[2]uint64{h1, h2}] {
		if x.l.sizes[k] == size {
			return int(k), true
		}
	}
	return 0, false
}
