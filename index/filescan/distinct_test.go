package filescan

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDistinctSet compares the set with sorting and compacting, on random
// hashes, heavy repeats, the hash 0, and sizes across several grows.
func TestDistinctSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s distinctSet
	for _, tc := range []struct {
		n, distinct int
	}{{0, 0}, {1, 1}, {10, 3}, {5000, 5000}, {100_000, 16}, {300_000, 120_000}} {
		values := make([]uint64, tc.distinct)
		for i := range values {
			values[i] = rng.Uint64()
		}
		if tc.distinct > 2 {
			values[1] = 0 // the hash 0 counts like any other
		}
		hs := make([]uint64, tc.n)
		for i := range hs {
			hs[i] = values[rng.IntN(len(values))]
		}
		s.reset()
		for chunk := range slices.Chunk(hs, 4096) {
			s.addAll(chunk)
		}
		want := slices.Compact(slices.Sorted(slices.Values(hs)))
		got := slices.Clone(s.hashes())
		slices.Sort(got)
		if s.len() != len(want) || !slices.Equal(got, want) {
			t.Fatalf("n %d: %d distinct (len %d), want %d", tc.n, len(got), s.len(), len(want))
		}
	}
}

// BenchmarkDistinct counts the distinct values of 1M hashes drawn from
// 200k, with the set and with the sort it replaced.
func BenchmarkDistinct(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	values := make([]uint64, 200_000)
	for i := range values {
		values[i] = rng.Uint64()
	}
	hs := make([]uint64, 1_000_000)
	for i := range hs {
		hs[i] = values[rng.IntN(len(values))]
	}
	b.Run("set", func(b *testing.B) {
		var s distinctSet
		for b.Loop() {
			s.reset()
			for chunk := range slices.Chunk(hs, 4096) {
				s.addAll(chunk)
			}
		}
	})
	// One file's column of 20,000 distinct values, as the bench table's:
	// the set is reset and filled once per file and column.
	file := make([]uint64, 20_000)
	for i := range file {
		file[i] = rng.Uint64()
	}
	b.Run("file-20k", func(b *testing.B) {
		var s distinctSet
		for b.Loop() {
			s.reset()
			for chunk := range slices.Chunk(file, 4096) {
				s.addAll(chunk)
			}
		}
	})
	b.Run("sort", func(b *testing.B) {
		buf := make([]uint64, len(hs))
		for b.Loop() {
			copy(buf, hs)
			slices.Sort(buf)
			_ = slices.Compact(buf)
		}
	})
}
