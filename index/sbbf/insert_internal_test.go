package sbbf

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestInsertManyMatchesPortable runs whichever InsertMany this machine uses
// (the AVX2 assembly on most amd64) against the portable Go loop.
func TestInsertManyMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, blocks := range []int{1, 2, 3, 37, 1024, 100_003} {
		hs := make([]uint64, 3*blocks+7)
		for i := range hs {
			hs[i] = rng.Uint64()
		}
		hs = append(hs, 0, ^uint64(0), 1<<32-1, 0xffffffff_00000000)
		fast, portable := New(blocks), New(blocks)
		fast.InsertMany(hs)
		insertManyGo(portable.bits, hs)
		if !bytes.Equal(fast.bits, portable.bits) {
			t.Fatalf("%d blocks: InsertMany and insertManyGo differ", blocks)
		}
	}
}
