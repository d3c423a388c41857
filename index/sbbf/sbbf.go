// Package sbbf implements the Split Block Bloom Filter exactly as the Parquet
// format defines it (parquet-format BloomFilter.md), so that a bitset written
// here is interchangeable with the ones parquet-mr, parquet-rs, arrow and
// DuckDB write, and any of theirs can be checked here.
//
// A filter is a whole number of 32-byte blocks. A 64-bit hash selects one
// block with its upper 32 bits and sets or tests one bit in each of the
// block's eight 32-bit words with its lower 32 bits. Words are stored
// little-endian, block after block, with no header: a filter is its bytes,
// and it is built and checked in place, without copying.
package sbbf

import (
	"encoding/binary"
	"fmt"
)

// BlockBytes is the size of one filter block: eight 32-bit words.
const BlockBytes = 32

// salt holds the eight odd constants of the Parquet specification, one per
// word of a block. The Go loops spell them out as constants; the assembly
// loads this table.
var salt = [8]uint32{
	0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
	0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
}

// Filter is a Split Block Bloom Filter over a caller-visible bitset. The zero
// value is not usable; create one with New or FromBytes.
type Filter struct {
	bits []byte
}

// New returns an empty filter of numBlocks blocks (at least one).
func New(numBlocks int) Filter {
	return Filter{bits: make([]byte, max(numBlocks, 1)*BlockBytes)}
}

// FromBytes wraps a Parquet-layout bitset without copying it, so a filter
// read from a file or a memory-mapped blob is checked where it lies. Inserts
// write through to b.
func FromBytes(b []byte) (Filter, error) {
	if len(b) == 0 || len(b)%BlockBytes != 0 {
		return Filter{}, fmt.Errorf("sbbf: bitset of %d bytes is not a positive multiple of %d", len(b), BlockBytes)
	}
	return Filter{bits: b}, nil
}

// Bytes returns the bitset in Parquet layout; it aliases the filter.
func (f Filter) Bytes() []byte { return f.bits }

// NumBlocks returns the number of 32-byte blocks.
func (f Filter) NumBlocks() int { return len(f.bits) / BlockBytes }

// BlockIndex returns the block a hash falls in for a filter of numBlocks
// blocks, as ((h >> 32) * numBlocks) >> 32. A reader that fetches single
// blocks uses it to know which 32 bytes of a blob to read.
func BlockIndex(h uint64, numBlocks int) int {
	return int(((h >> 32) * uint64(numBlocks)) >> 32)
}

func (f Filter) block(h uint64) *[BlockBytes]byte {
	i := BlockIndex(h, len(f.bits)/BlockBytes) * BlockBytes
	return (*[BlockBytes]byte)(f.bits[i:])
}

// Insert adds a hash to the filter.
func (f Filter) Insert(h uint64) {
	one := [1]uint64{h}
	f.InsertMany(one[:])
}

// InsertMany adds every hash of hs to the filter. On amd64 with AVX2 it
// uses an assembly loop that sets a block's eight bits with one vector
// multiply, shift and OR, as arrow-go does; elsewhere insertManyGo.
func (f Filter) InsertMany(hs []uint64) {
	if len(hs) == 0 {
		return
	}
	insertMany(f.bits, hs)
}

// insertManyGo is the portable InsertMany. The loop is written out by hand
// so the compiler keeps it free of calls: each hash costs eight
// multiply-shifts and four 64-bit read-modify-writes of its block (two
// 32-bit words at a time, little-endian as stored).
func insertManyGo(bits []byte, hs []uint64) {
	le := binary.LittleEndian
	numBlocks := uint64(len(bits) / BlockBytes)
	for _, h := range hs {
		b := (*[BlockBytes]byte)(bits[((h>>32)*numBlocks)>>32*BlockBytes:])
		k := uint32(h)
		le.PutUint64(b[0:], le.Uint64(b[0:])|1<<((k*0x47b6137b)>>27)|1<<((k*0x44974d91)>>27+32))
		le.PutUint64(b[8:], le.Uint64(b[8:])|1<<((k*0x8824ad5b)>>27)|1<<((k*0xa2b7289d)>>27+32))
		le.PutUint64(b[16:], le.Uint64(b[16:])|1<<((k*0x705495c7)>>27)|1<<((k*0x2df1424b)>>27+32))
		le.PutUint64(b[24:], le.Uint64(b[24:])|1<<((k*0x9efc4947)>>27)|1<<((k*0x5c6bfb31)>>27+32))
	}
}

// Check reports whether the hash may have been inserted. False means it
// certainly was not.
func (f Filter) Check(h uint64) bool {
	return CheckBlock(f.block(h)[:], h)
}

// CheckBlock checks a hash against the single block it falls in, for readers
// that fetched only that block (see BlockIndex). block must be 32 bytes.
// It tests two words at a time and stops at the first missing bit, which is
// where most probes for absent values end.
func CheckBlock(block []byte, h uint64) bool {
	b := (*[BlockBytes]byte)(block)
	le := binary.LittleEndian
	k := uint32(h)
	if m := pair(k, 0x47b6137b, 0x44974d91); le.Uint64(b[0:])&m != m {
		return false
	}
	if m := pair(k, 0x8824ad5b, 0xa2b7289d); le.Uint64(b[8:])&m != m {
		return false
	}
	if m := pair(k, 0x705495c7, 0x2df1424b); le.Uint64(b[16:])&m != m {
		return false
	}
	m := pair(k, 0x9efc4947, 0x5c6bfb31)
	return le.Uint64(b[24:])&m == m
}

// pair returns the bits a key sets in two adjacent words, as one 64-bit mask.
func pair(k, lowSalt, highSalt uint32) uint64 {
	return 1<<((k*lowSalt)>>27) | 1<<((k*highSalt)>>27+32)
}
