package filescan

import (
	"bytes"
	"testing"

	"github.com/icebloom/icebloom/index/sbbf"
)

// TestBufferPool checks the allocator contract arrow-go relies on: buffers
// come zeroed whether new or reused, Reallocate keeps the contents, and a
// freed buffer is handed out again for the same size class.
func TestBufferPool(t *testing.T) {
	var p bufferPool
	a := p.Allocate(1000)
	if len(a) != 1000 || cap(a) != 1024 || !bytes.Equal(a, make([]byte, 1000)) {
		t.Fatalf("Allocate(1000): len %d cap %d", len(a), cap(a))
	}
	for i := range a {
		a[i] = 0xff
	}
	a = p.Reallocate(1020, a) // within capacity: same memory, new bytes zero
	if a[999] != 0xff || a[1000] != 0 || a[1019] != 0 {
		t.Fatalf("Reallocate within capacity: %x %x %x", a[999], a[1000], a[1019])
	}
	b := p.Reallocate(3000, a) // grows: contents copied, a goes back to the pool
	if len(b) != 3000 || b[0] != 0xff || b[999] != 0xff || b[1000] != 0 || b[2999] != 0 {
		t.Fatalf("Reallocate growing: len %d, %x %x %x", len(b), b[0], b[1000], b[2999])
	}
	c := p.Allocate(600) // a's size class (1 KiB): reused, and cleared
	if &c[:1][0] != &a[:1][0] {
		t.Error("a freed buffer of the size class was not reused")
	}
	if !bytes.Equal(c, make([]byte, 600)) {
		t.Error("a reused buffer was not cleared")
	}
	p.Free(make([]byte, 100)) // not the pool's: capacity not a power of two
	if d := p.Allocate(100); cap(d) != 128 {
		t.Errorf("Allocate(100) after a foreign Free: cap %d, want a new 128", cap(d))
	}
	if e := p.Allocate(0); len(e) != 0 {
		t.Errorf("Allocate(0): len %d", len(e))
	}
}

// TestFilterPool checks that a returned bitset is handed out again, cleared
// (a filter must never carry bits of another file's), and only when large
// enough.
func TestFilterPool(t *testing.T) {
	var p FilterPool
	reused := false
	for range 100 { // sync.Pool may drop what it is given (it does at random under -race)
		f := p.get(4)
		f.InsertMany([]uint64{1, 2, 3, 0xdeadbeefcafe})
		p.Put(f)
		g := p.get(3)
		if len(g.Bytes()) != 3*sbbf.BlockBytes || !bytes.Equal(g.Bytes(), make([]byte, 3*sbbf.BlockBytes)) {
			t.Fatalf("get(3): %d bytes, not all zero", len(g.Bytes()))
		}
		if &g.Bytes()[0] == &f.Bytes()[0] {
			reused = true
			break
		}
	}
	if !reused {
		t.Error("a returned bitset was never reused")
	}
	small := p.get(1)
	p.Put(small)
	if big := p.get(64); len(big.Bytes()) != 64*sbbf.BlockBytes {
		t.Errorf("get(64) after a 1-block bitset came back: %d bytes", len(big.Bytes()))
	}
	var none *FilterPool // no pool: plain sbbf.New
	if f := none.get(2); len(f.Bytes()) != 2*sbbf.BlockBytes {
		t.Errorf("nil pool: %d bytes", len(f.Bytes()))
	}
	none.Put(small)
}
