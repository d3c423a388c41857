package sbbf_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/icebloom/icebloom/index/sbbf"
)

// Filter sizes for the benchmarks: one that lives in L1 cache and one far
// larger than any cache, where memory latency dominates.
var benchSizes = []int{4 << 10, 64 << 20}

const benchBatch = 4096

// Each benchmark pairs ours with arrow-go's parquet/metadata SBBF (which uses
// AVX2 assembly on amd64) on the same hashes; compare ns/op within one run.

func BenchmarkInsertBulk(b *testing.B) {
	hashes := randomHashes(rand.New(rand.NewPCG(1, 1)), benchBatch)
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("icebloom/%dKiB", size>>10), func(b *testing.B) {
			f := newTouchedFilter(size)
			b.SetBytes(benchBatch * 8)
			for b.Loop() {
				f.InsertMany(hashes)
			}
		})
		b.Run(fmt.Sprintf("arrow-go/%dKiB", size>>10), func(b *testing.B) {
			f := metadata.NewBloomFilter(uint32(size), uint32(size), memory.DefaultAllocator)
			defer f.Release()
			b.SetBytes(benchBatch * 8)
			for b.Loop() {
				f.InsertBulk(hashes)
			}
		})
	}
}

func BenchmarkInsertOne(b *testing.B) {
	hashes := randomHashes(rand.New(rand.NewPCG(2, 2)), benchBatch)
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("icebloom/%dKiB", size>>10), func(b *testing.B) {
			f := newTouchedFilter(size)
			b.SetBytes(benchBatch * 8)
			for b.Loop() {
				for _, h := range hashes {
					f.Insert(h)
				}
			}
		})
		b.Run(fmt.Sprintf("arrow-go/%dKiB", size>>10), func(b *testing.B) {
			f := metadata.NewBloomFilter(uint32(size), uint32(size), memory.DefaultAllocator)
			defer f.Release()
			b.SetBytes(benchBatch * 8)
			for b.Loop() {
				for _, h := range hashes {
					f.InsertHash(h)
				}
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	probes := randomHashes(rng, benchBatch)
	for _, size := range benchSizes {
		inserted := randomHashes(rng, size/16)
		b.Run(fmt.Sprintf("icebloom/%dKiB", size>>10), func(b *testing.B) {
			f := newTouchedFilter(size)
			f.InsertMany(inserted)
			b.SetBytes(benchBatch * 8)
			hits := 0
			for b.Loop() {
				for _, h := range probes {
					if f.Check(h) {
						hits++
					}
				}
			}
			sinkInt = hits
		})
		b.Run(fmt.Sprintf("arrow-go/%dKiB", size>>10), func(b *testing.B) {
			f := metadata.NewBloomFilter(uint32(size), uint32(size), memory.DefaultAllocator)
			defer f.Release()
			f.InsertBulk(inserted)
			checker := f.(metadata.BloomFilter)
			b.SetBytes(benchBatch * 8)
			hits := 0
			for b.Loop() {
				for _, h := range probes {
					if checker.CheckHash(h) {
						hits++
					}
				}
			}
			sinkInt = hits
		})
	}
}

var sinkInt int

// newTouchedFilter returns a filter whose memory is already faulted in, as
// arrow-go's allocator leaves its buffers, so that neither side of a
// comparison pays for first-touch page faults inside the timed loop.
func newTouchedFilter(size int) sbbf.Filter {
	f := sbbf.New(size / sbbf.BlockBytes)
	b := f.Bytes()
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	clear(b)
	return f
}

// BenchmarkNumBlocks sizes one filter, as the build does per file and
// column.
func BenchmarkNumBlocks(b *testing.B) {
	for _, ndv := range []uint64{1000, 20_000, 1_000_000} {
		b.Run(fmt.Sprint(ndv), func(b *testing.B) {
			for b.Loop() {
				if _, err := sbbf.NumBlocks(ndv, 0.01, 1<<30); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
