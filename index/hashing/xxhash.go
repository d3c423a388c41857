package hashing

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// XXH64 primes (seed 0 throughout, as Parquet requires).
const (
	prime1 uint64 = 11400714785074694791
	prime2 uint64 = 14029467366897019727
	prime3 uint64 = 1609587929392839161
	prime4 uint64 = 9650029242287828579
	prime5 uint64 = 2870177450012600261
)

// Bytes returns XXH64 (seed 0) of b: the hash of a BYTE_ARRAY or
// FIXED_LEN_BYTE_ARRAY value, whose PLAIN encoding for hashing is its bytes
// without the length prefix.
func Bytes(b []byte) uint64 { return xxhash.Sum64(b) }

// Uint32 returns XXH64 (seed 0) of the 4 little-endian bytes of v: the hash of
// an INT32 or FLOAT value's PLAIN encoding. It is XXH64 specialised to a
// 4-byte input, so hashing a column of ints needs no byte buffer and no call
// into the general routine.
func Uint32(v uint32) uint64 {
	h := prime5 + 4
	h ^= uint64(v) * prime1
	h = bits.RotateLeft64(h, 23)*prime2 + prime3
	return avalanche(h)
}

// Uint64 returns XXH64 (seed 0) of the 8 little-endian bytes of v: the hash
// of an INT64 or DOUBLE value's PLAIN encoding.
func Uint64(v uint64) uint64 {
	k := bits.RotateLeft64(v*prime2, 31) * prime1
	h := (prime5 + 8) ^ k
	h = bits.RotateLeft64(h, 27)*prime1 + prime4
	return avalanche(h)
}

func avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}
