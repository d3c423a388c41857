package sbbf_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/cespare/xxhash/v2"

	"github.com/icebloom/icebloom/index/internal/testfixture"
	"github.com/icebloom/icebloom/index/sbbf"
)

type goldenFilter struct {
	Name        string          `json:"name"`
	File        string          `json:"file"`
	HeaderBytes int             `json:"header_bytes"`
	NumBytes    int             `json:"num_bytes"`
	Inserted    []string        `json:"inserted_utf8"`
	Probes      map[string]bool `json:"probes_derived"`
}

// TestGoldenFilters rebuilds every reference bitset of the test vectors
// (parquet-mr, parquet-rs and the arrow-rs fixture) from its values at its
// size and expects the very same bytes, then checks them in place.
func TestGoldenFilters(t *testing.T) {
	var vectors struct {
		Golden []goldenFilter `json:"golden_filters"`
	}
	testfixture.DecodeJSON(t, &vectors, "sbbf-vectors", "sbbf_test_vectors.json")
	if len(vectors.Golden) != 4 {
		t.Fatalf("expected 4 golden filters, got %d", len(vectors.Golden))
	}
	for _, g := range vectors.Golden {
		t.Run(g.Name, func(t *testing.T) {
			raw := testfixture.ReadExternal(t, g.File)
			want := raw[g.HeaderBytes:]
			if g.HeaderBytes > 0 {
				bitset, err := testfixture.ParquetBloomBitset(raw)
				if err != nil {
					t.Fatal(err)
				}
				want = bitset
			}
			if len(want) != g.NumBytes {
				t.Fatalf("bitset is %d bytes, want %d", len(want), g.NumBytes)
			}
			f := sbbf.New(g.NumBytes / sbbf.BlockBytes)
			for _, v := range g.Inserted {
				f.Insert(xxhash.Sum64String(v))
			}
			if !bytes.Equal(f.Bytes(), want) {
				t.Fatalf("rebuilt bitset differs from the reference")
			}
			ref, err := sbbf.FromBytes(want)
			if err != nil {
				t.Fatal(err)
			}
			for probe, present := range g.Probes {
				if got := ref.Check(xxhash.Sum64String(probe)); got != present {
					t.Errorf("Check(%q) = %v, want %v", probe, got, present)
				}
			}
		})
	}
}

// TestMurmur3FilterRejected shows that the deprecated pre-XXHASH filter
// format is not mistaken for an SBBF.
func TestMurmur3FilterRejected(t *testing.T) {
	raw := testfixture.ReadExternal(t, "parquet-bloom", "parquet-testing", "bloom_filter.bin")
	if _, err := testfixture.ParquetBloomBitset(raw); err == nil {
		t.Fatal("the Murmur3 filter header was accepted")
	}
}

// TestSameBytesAsArrowGo builds filters from random hashes here and with
// arrow-go's parquet/metadata filter and expects identical bitsets and
// identical answers for inserted and random probes.
func TestSameBytesAsArrowGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, numBytes := range []int{32, 64, 1024, 1 << 16, 1 << 20} {
		for _, n := range []int{0, 1, 100, numBytes / 4} {
			hashes := randomHashes(rng, n)
			ours := sbbf.New(numBytes / sbbf.BlockBytes)
			ours.InsertMany(hashes)
			theirs := metadata.NewBloomFilter(uint32(numBytes), uint32(numBytes), memory.DefaultAllocator)
			theirs.InsertBulk(hashes)
			var buf bytes.Buffer
			if _, err := theirs.WriteTo(&buf, nil); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours.Bytes(), buf.Bytes()) {
				t.Fatalf("%d bytes, %d values: bitsets differ", numBytes, n)
			}
			checker := theirs.(metadata.BloomFilter)
			for _, h := range append(hashes, randomHashes(rng, 1000)...) {
				if ours.Check(h) != checker.CheckHash(h) {
					t.Fatalf("%d bytes, %d values: Check(%#x) differs", numBytes, n, h)
				}
			}
			theirs.Release()
		}
	}
}

func TestInsertOneByOneEqualsBulk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hashes := randomHashes(rng, 5000)
	a, b := sbbf.New(37), sbbf.New(37) // not a power of two
	a.InsertMany(hashes)
	for _, h := range hashes {
		b.Insert(h)
		if !b.Check(h) {
			t.Fatalf("inserted hash %#x not found", h)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("InsertMany and Insert disagree")
	}
}

func TestBlockIndexAndCheckBlock(t *testing.T) {
	// Values from the test vectors' block_and_mask_examples_derived.
	var vectors struct {
		Examples struct {
			Values []struct {
				Value  string         `json:"value_utf8"`
				Hash   uint64         `json:"xxh64"`
				Blocks map[string]int `json:"block_index_for_num_blocks"`
				Masks  []uint32       `json:"mask_words_uint32"`
			} `json:"values"`
		} `json:"block_and_mask_examples_derived"`
	}
	testfixture.DecodeJSON(t, &vectors, "sbbf-vectors", "sbbf_test_vectors.json")
	if len(vectors.Examples.Values) == 0 {
		t.Fatal("no examples")
	}
	for _, ex := range vectors.Examples.Values {
		if got := xxhash.Sum64String(ex.Value); got != ex.Hash {
			t.Fatalf("xxh64(%q) = %d, want %d", ex.Value, got, ex.Hash)
		}
		for nb, want := range ex.Blocks {
			numBlocks, err := strconv.Atoi(nb)
			if err != nil {
				t.Fatal(err)
			}
			if got := sbbf.BlockIndex(ex.Hash, numBlocks); got != want {
				t.Errorf("BlockIndex(%q, %d) = %d, want %d", ex.Value, numBlocks, got, want)
			}
		}
		// A one-block filter holding only this value has exactly its mask.
		f := sbbf.New(1)
		f.Insert(ex.Hash)
		for i, w := range ex.Masks {
			if got := binary.LittleEndian.Uint32(f.Bytes()[4*i:]); got != w {
				t.Errorf("%q word %d = %#x, want %#x", ex.Value, i, got, w)
			}
		}
		if !sbbf.CheckBlock(f.Bytes(), ex.Hash) {
			t.Errorf("CheckBlock(%q) = false", ex.Value)
		}
	}
	// CheckBlock on the block BlockIndex names agrees with Check.
	rng := rand.New(rand.NewPCG(5, 6))
	f := sbbf.New(100)
	f.InsertMany(randomHashes(rng, 2000))
	for _, h := range randomHashes(rng, 2000) {
		i := sbbf.BlockIndex(h, f.NumBlocks()) * sbbf.BlockBytes
		if sbbf.CheckBlock(f.Bytes()[i:i+sbbf.BlockBytes], h) != f.Check(h) {
			t.Fatalf("CheckBlock and Check disagree for %#x", h)
		}
	}
}

func TestFromBytes(t *testing.T) {
	for _, n := range []int{0, 1, 31, 33, 63} {
		if _, err := sbbf.FromBytes(make([]byte, n)); err == nil {
			t.Errorf("FromBytes accepted %d bytes", n)
		}
	}
	b := make([]byte, 64)
	f, err := sbbf.FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	f.Insert(42)
	if bytes.Equal(b, make([]byte, 64)) {
		t.Fatal("FromBytes copied the bitset: an insert did not write through")
	}
	if f.Check(43) && f.Check(44) && f.Check(45) {
		t.Fatal("an almost empty filter answers yes to everything")
	}
}

func randomHashes(rng *rand.Rand, n int) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = rng.Uint64()
	}
	return hs
}
