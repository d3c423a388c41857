//go:build !purego

package sbbf

import "golang.org/x/sys/cpu"

// insertManyAVX2 is implemented in insert_amd64.s. bits must hold numBlocks
// whole blocks and hashes n values, n > 0.
//
//go:noescape
func insertManyAVX2(bits *byte, numBlocks uint64, salts *[8]uint32, hashes *uint64, n int)

func insertMany(bits []byte, hs []uint64) {
	if !cpu.X86.HasAVX2 {
		insertManyGo(bits, hs)
		return
	}
	insertManyAVX2(&bits[0], uint64(len(bits)/BlockBytes), &salt, &hs[0], len(hs))
}
