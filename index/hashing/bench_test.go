package hashing_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/hashing"
)

const benchValues = 4096

// benchColumn returns a Column hashing plain values of physical type p as typ.
func benchColumn(tb testing.TB, p parquet.Type, typ iceberg.PrimitiveType) *hashing.Column {
	tb.Helper()
	c, err := hashing.NewColumn(typ, schemaColumn(tb, node(tb, "v", p, nil, -1)))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// benchData is 4096 random values of each kind the benchmarks hash.
type benchData struct {
	int32s   []int32
	int64s   []int64
	float64s []float64
	strings  []parquet.ByteArray
}

func newBenchData() benchData {
	rng := rand.New(rand.NewPCG(3, 4))
	d := benchData{
		int32s:   make([]int32, benchValues),
		int64s:   make([]int64, benchValues),
		float64s: make([]float64, benchValues),
		strings:  make([]parquet.ByteArray, benchValues),
	}
	for i := range benchValues {
		d.int32s[i] = rng.Int32()
		d.int64s[i] = rng.Int64()
		d.float64s[i] = rng.NormFloat64()
		d.strings[i] = []byte(fmt.Sprintf("%016x", rng.Uint64()))
	}
	return d
}

// arrowHasher is the XXH64 hasher arrow-go's bloom filters use.
func arrowHasher() metadata.Hasher {
	return metadata.NewBloomFilter(32, 32, memory.DefaultAllocator).Hasher()
}

// Column hashes like arrow-go, so the benchmarks compare equal work: for
// every kind, the hashes equal arrow-go's GetHashes.
func TestBenchmarkHashesMatchArrow(t *testing.T) {
	d, h := newBenchData(), arrowHasher()
	ours := func(hs []uint64, err error) []uint64 {
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	for name, pair := range map[string][2][]uint64{
		"int32":   {ours(benchColumn(t, parquet.Types.Int32, types.Int32).Int32s(nil, d.int32s)), metadata.GetHashes(h, d.int32s)},
		"int64":   {ours(benchColumn(t, parquet.Types.Int64, types.Int64).Int64s(nil, d.int64s)), metadata.GetHashes(h, d.int64s)},
		"float64": {ours(benchColumn(t, parquet.Types.Double, types.Float64).Float64s(nil, d.float64s)), metadata.GetHashes(h, d.float64s)},
		"string":  {ours(benchColumn(t, parquet.Types.ByteArray, types.String).ByteArrays(nil, d.strings)), metadata.GetHashes(h, d.strings)},
	} {
		if !slices.Equal(pair[0], pair[1]) {
			t.Errorf("%s: hashes differ from arrow-go's", name)
		}
	}
}

// Hashing into a dst with room for the hashes allocates nothing.
func TestColumnHashingAllocatesNothing(t *testing.T) {
	d := newBenchData()
	dst := make([]uint64, 0, benchValues)
	cols := map[string]*hashing.Column{
		"Int64s":     benchColumn(t, parquet.Types.Int64, types.Int64),
		"Int32s":     benchColumn(t, parquet.Types.Int32, types.Int64),
		"Float64s":   benchColumn(t, parquet.Types.Double, types.Float64),
		"ByteArrays": benchColumn(t, parquet.Types.ByteArray, types.String),
	}
	for name, run := range map[string]func(){
		"Int64s":     func() { dst, _ = cols["Int64s"].Int64s(dst[:0], d.int64s) },
		"Int32s":     func() { dst, _ = cols["Int32s"].Int32s(dst[:0], d.int32s) },
		"Float64s":   func() { dst, _ = cols["Float64s"].Float64s(dst[:0], d.float64s) },
		"ByteArrays": func() { dst, _ = cols["ByteArrays"].ByteArrays(dst[:0], d.strings) },
	} {
		if allocs := testing.AllocsPerRun(20, run); allocs != 0 || len(dst) != benchValues {
			t.Errorf("%s: %v allocations, %d hashes", name, allocs, len(dst))
		}
	}
}

// BenchmarkHash compares Column's typed methods, appending 4096 hashes to a
// reused dst, with arrow-go's GetHashes over the same values (which returns
// a new slice) and with arrow-go's GetHash per value into the reused dst.
func BenchmarkHash(b *testing.B) {
	d, h := newBenchData(), arrowHasher()
	dst := make([]uint64, 0, benchValues)
	var sink []uint64
	int32s := benchColumn(b, parquet.Types.Int32, types.Int32)
	int64s := benchColumn(b, parquet.Types.Int64, types.Int64)
	float64s := benchColumn(b, parquet.Types.Double, types.Float64)
	strings := benchColumn(b, parquet.Types.ByteArray, types.String)
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"int64/icebloom", func() { dst, _ = int64s.Int64s(dst[:0], d.int64s) }},
		{"int64/arrow-go", func() { sink = metadata.GetHashes(h, d.int64s) }},
		{"int64/arrow-go-GetHash", func() { dst = getHashes(h, dst[:0], d.int64s) }},
		{"int32/icebloom", func() { dst, _ = int32s.Int32s(dst[:0], d.int32s) }},
		{"int32/arrow-go", func() { sink = metadata.GetHashes(h, d.int32s) }},
		{"float64/icebloom", func() { dst, _ = float64s.Float64s(dst[:0], d.float64s) }},
		{"float64/arrow-go", func() { sink = metadata.GetHashes(h, d.float64s) }},
		{"string16/icebloom", func() { dst, _ = strings.ByteArrays(dst[:0], d.strings) }},
		{"string16/arrow-go", func() { sink = metadata.GetHashes(h, d.strings) }},
		{"string16/arrow-go-GetHash", func() { dst = getHashes(h, dst[:0], d.strings) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.run()
			}
		})
	}
	_ = sink
}

// getHashes appends arrow-go's GetHash of each value to dst.
func getHashes[T parquet.ColumnTypes](h metadata.Hasher, dst []uint64, vals []T) []uint64 {
	for _, v := range vals {
		dst = append(dst, metadata.GetHash(h, v))
	}
	return dst
}
