package filescan

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/parquet"

	"github.com/icebloom/icebloom/index/sbbf"
)

// bufferPool is the memory.Allocator of a worker's Parquet readers. arrow-go
// gives each column chunk's page reader fresh buffers for compressed and
// decompressed pages and releases them when the chunk is done; with its
// default allocator that is most of what a build allocates (two thirds of
// the bytes, reading the bench table), and garbage collection becomes a
// quarter of the build's CPU time, taken from the other workers. The pool
// hands released buffers to the next chunk instead.
//
// Buffers are kept by power-of-two capacity, a few per size, so the pool
// holds about what one chunk's reading needs. Reused buffers are cleared:
// arrow-go's default allocator returns zeroed memory, and callers may rely
// on it.
type bufferPool struct {
	mu   sync.Mutex // arrow-go may release from another goroutine
	free [64][][]byte
}

// keptPerSize bounds the free buffers of one capacity.
const keptPerSize = 4

func sizeClass(n int) int { return bits.Len(uint(n - 1)) }

// Allocate returns a zeroed buffer of size bytes.
func (p *bufferPool) Allocate(size int) []byte {
	if size <= 0 {
		return []byte{}
	}
	c := sizeClass(size)
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		p.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	p.mu.Unlock()
	return make([]byte, size, 1<<c)
}

// Reallocate resizes b to size bytes, keeping its contents.
func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free returns b to the pool; buffers the pool did not make are dropped.
func (p *bufferPool) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return
	}
	class := sizeClass(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free[class]) < keptPerSize {
		p.free[class] = append(p.free[class], b[:0])
	}
}

// readerProperties returns Parquet reader properties as a build worker
// reads with: page buffers from a pool of their own, reused from one column
// chunk to the next when the chunk reader is closed, and buffered streams,
// because without them arrow-go reads every column chunk whole into a
// freshly made slice (about a build's worth of garbage per build), while a
// buffered stream reads through a buffer of at most 16 KiB, from the chunk
// a chunkReader fetched into memory it reuses. The bench's floor, which
// measures against the build's reading, reads with them too (benchread.go).
// The properties are for one goroutine's readers at a time.
func readerProperties() *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(&bufferPool{})
	props.BufferedStreamEnabled = true
	return props
}

// FilterPool recycles the bitsets of filters once they are written to the
// segment. A build makes one per data file and column; without reuse they
// are about a third of what it allocates, and collecting that garbage takes
// CPU from the workers. Workers take bitsets, the collector returns them;
// a nil pool allocates every filter.
type FilterPool struct{ free sync.Pool } // of *[]byte

// get returns an empty filter of numBlocks blocks (at least one, as
// sbbf.New), reusing a returned bitset large enough.
func (p *FilterPool) get(numBlocks int) sbbf.Filter {
	if p != nil {
		size := max(numBlocks, 1) * sbbf.BlockBytes
		if b, ok := p.free.Get().(*[]byte); ok && cap(*b) >= size {
			bits := (*b)[:size]
			clear(bits)
			if f, err := sbbf.FromBytes(bits); err == nil {
				return f
			}
		}
	}
	return sbbf.New(numBlocks)
}

// Put returns the bitset of a filter no one uses any more.
func (p *FilterPool) Put(f sbbf.Filter) {
	if p != nil {
		b := f.Bytes()
		p.free.Put(&b)
	}
}
