package filelist

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// uuid returns a random UUID's text.
func uuid(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 36)
	for i := range b {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b[i] = '-'
		} else {
			b[i] = hex[r.IntN(16)]
		}
	}
	return string(b)
}

// sparkNames returns n locations as a Spark job names its files: a write's
// UUID shared by its tasks, partition and task counters.
func sparkNames(n int, r *rand.Rand) []string {
	out := make([]string, n)
	var write string
	for i := range out {
		if i%1000 == 0 {
			write = uuid(r)
		}
		out[i] = fmt.Sprintf("s3://warehouse-bucket/analytics.db/events/data/event_date=2026-12-%02d/%05d-%d-%s-%05d.parquet", 1+i/5000%28, i%1000, i, write, 1)
	}
	return out
}

// odd returns locations that share little or all: empty, repeated, one a
// prefix or suffix of the next, multi-byte characters.
func odd(r *rand.Rand) []string {
	out := []string{"", "", "a", "ab", "b", "ab", "abab", "ab", "x/é/ü.parquet", "x/é/ü.parquet", "x/é/ü.parquet.1", "y" + strings.Repeat("z", 300)}
	for range 200 {
		n := r.IntN(12)
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab/"[r.IntN(3)]
		}
		out = append(out, string(b))
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]string, 500)
	for i := range random {
		random[i] = "s3://b/t/data/" + uuid(r) + ".parquet"
	}
	for name, paths := range map[string][]string{"spark": sparkNames(3000, r), "random": random, "odd": odd(r), "one": {"s3://b/t/a.parquet"}} {
		t.Run(name, func(t *testing.T) {
			var l List
			for i, p := range paths {
				l.Append(p, int64(i*7))
			}
			check := func(l *List) {
				t.Helper()
				if l.Len() != len(paths) {
					t.Fatalf("Len %d, want %d", l.Len(), len(paths))
				}
				for i, p := range paths {
					if got := l.Path(i); got != p || l.Size(i) != int64(i*7) {
						t.Fatalf("file %d: %q size %d, want %q size %d", i, got, l.Size(i), p, i*7)
					}
				}
				n := 0
				for i, p := range l.All() {
					if i != n || string(p) != paths[i] {
						t.Fatalf("All: file %d is %q, want file %d %q", i, p, n, paths[n])
					}
					n++
				}
				if n != len(paths) {
					t.Fatalf("All yielded %d files, want %d", n, len(paths))
				}
			}
			check(&l)
			l.Clip()
			check(&l)
			// Appending after Clip codes against the last location still.
			paths = append(paths, paths[0], "tail")
			l.Append(paths[len(paths)-2], int64((len(paths)-2)*7))
			l.Append("tail", int64((len(paths)-1)*7))
			check(&l)
		})
	}
}

func TestAllStops(t *testing.T) {
	var l List
	for i := range 100 {
		l.Append(fmt.Sprint(i), 1)
	}
	n := 0
	for i := range l.All() {
		if i == 40 {
			break
		}
		n++
	}
	if n != 40 {
		t.Fatalf("%d iterations before break, want 40", n)
	}
}

// TestCompact: a Spark write's locations, the kind users' tables hold,
// cost a few bytes each, where Go strings cost their length and a
// header (a hundred and fifty bytes here); random UUID names cost what
// makes them their own.
func TestCompact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	paths := sparkNames(100_000, r)
	var l List
	strs := 0
	for _, p := range paths {
		l.Append(p, 1)
		strs += 16 + len(p)
	}
	l.Clip()
	perFile := float64(l.Bytes()-8*int64(l.Len())) / float64(l.Len())
	t.Logf("spark names: %.1f bytes a location in a List, %.1f as strings", perFile, float64(strs)/float64(len(paths)))
	if perFile > 20 {
		t.Errorf("spark names: %.1f bytes a location, want at most 20", perFile)
	}

	var random List
	for range 100_000 {
		random.Append("s3://warehouse-bucket/analytics.db/events/data/00000-0-"+uuid(r)+"-00001.parquet", 1)
	}
	random.Clip()
	perFile = float64(random.Bytes()-8*int64(random.Len())) / float64(random.Len())
	t.Logf("random names: %.1f bytes a location", perFile)
	if perFile > 45 {
		t.Errorf("random names: %.1f bytes a location, want at most 45 (a 36-byte UUID, the differing counter and 3 lengths)", perFile)
	}
}

func TestIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	paths := append(sparkNames(2000, r), odd(r)...)
	var l List
	for i, p := range paths {
		l.Append(p, int64(len(p)+i%3))
	}
	x := NewIndex(&l, nil)
	for i, p := range paths {
		want := i
		for k := range i { // the first file of that location and size
			if paths[k] == p && l.Size(k) == l.Size(i) {
				want = k
				break
			}
		}
		if got, ok := x.Find([]byte(p), l.Size(i)); !ok || got != want {
			t.Fatalf("Find(%q, %d) = %d, %t; want %d", p, l.Size(i), got, ok, want)
		}
	}
	for _, miss := range []struct {
		path string
		size int64
	}{{"s3://nowhere", 1}, {paths[0], -1}, {paths[0] + "x", l.Size(0)}} {
		if i, ok := x.Find([]byte(miss.path), miss.size); ok {
			t.Errorf("Find(%q, %d) = %d, want none", miss.path, miss.size, i)
		}
	}
	// Only the files included are found.
	even := NewIndex(&l, func(i int) bool { return i%2 == 0 })
	for i := range 100 {
		got, ok := even.Find([]byte(paths[i]), l.Size(i))
		if ok != (i%2 == 0) || ok && got != i {
			t.Fatalf("even index: Find(file %d) = %d, %t", i, got, ok)
		}
	}
	// A list large enough to be indexed in shards, one a goroutine.
	large := sparkNames(parallelIndexFiles+1000, r)
	var big List
	for i, p := range large {
		big.Append(p, int64(i))
	}
	bx := NewIndex(&big, func(i int) bool { return i%3 != 0 })
	for i, p := range large {
		if got, ok := bx.Find([]byte(p), int64(i)); ok != (i%3 != 0) || ok && got != i {
			t.Fatalf("a large index: Find(file %d) = %d, %t", i, got, ok)
		}
	}
	// A few files of a large list (those a new segment is matched to) are
	// indexed by their own locations alone.
	sparse := NewIndex(&big, func(i int) bool { return i%1000 == 7 })
	if n, want := len(sparse.shards[0].first), (len(large)+992)/1000; len(sparse.shards) != 1 || n != want {
		t.Fatalf("a sparse index has %d shards, the first of %d files; want 1 of %d", len(sparse.shards), n, want)
	}
	for i, p := range large {
		if got, ok := sparse.Find([]byte(p), int64(i)); ok != (i%1000 == 7) || ok && got != i {
			t.Fatalf("a sparse index: Find(file %d) = %d, %t", i, got, ok)
		}
	}
	// A location listed twice with different sizes is found by either,
	// whole or sparse.
	var dup List
	dup.Append("a", 1)
	dup.Append("a", 2)
	dup.Append("a", 1)
	for i := range 100 {
		dup.Append(large[i], 1)
	}
	for _, dx := range []*Index{NewIndex(&dup, nil), NewIndex(&dup, func(i int) bool { return i < 3 })} {
		if i, ok := dx.Find([]byte("a"), 2); !ok || i != 1 {
			t.Errorf("Find(a, 2) = %d, %t; want 1", i, ok)
		}
		if i, ok := dx.Find([]byte("a"), 1); !ok || i != 0 {
			t.Errorf("Find(a, 1) = %d, %t; want 0", i, ok)
		}
	}
	spark := sparkNames(5000, r)
	var unique List
	for _, p := range spark {
		unique.Append(p, 1)
	}
	var copied List
	copied.Append("other/a.parquet", 3)
	copied.AppendFrom(&unique, 1000, 1100)
	copied.AppendFrom(&unique, 37, 38)
	if copied.Len() != 102 || copied.Path(0) != "other/a.parquet" || copied.Path(1) != spark[1000] || copied.Path(100) != spark[1099] || copied.Path(101) != spark[37] {
		t.Errorf("AppendFrom: %d files, %q %q %q", copied.Len(), copied.Path(1), copied.Path(100), copied.Path(101))
	}
}

func BenchmarkPath(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	paths := sparkNames(100_000, r)
	var l List
	for _, p := range paths {
		l.Append(p, 1)
	}
	b.ResetTimer()
	var buf []byte
	for i := range b.N {
		buf = l.AppendPath(buf[:0], i*7919%len(paths))
	}
}

// TestRuns: a list made of other lists' sealed runs shares them (a
// table version's files made of its manifests' lists copies no
// location), and reads across runs, partial ones coded again, as one list.
func TestRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	paths := sparkNames(500, r)
	parts := []*List{{}, {}, {}}
	bounds := []int{0, 70, 71, 500} // a run of 70, of 1, of 429
	for k, part := range parts {
		for i := bounds[k]; i < bounds[k+1]; i++ {
			part.Append(paths[i], int64(i))
		}
		part.Clip()
	}
	var whole List
	for _, part := range parts {
		whole.AppendFrom(part, 0, part.Len())
	}
	whole.Clip()
	if len(whole.runs) != 3 || whole.runs[0] != parts[0].runs[0] || whole.runs[2] != parts[2].runs[0] {
		t.Fatalf("the whole list has %d runs, not its parts' own", len(whole.runs))
	}
	check := func(what string, l *List, want []string, sizes []int64) {
		t.Helper()
		if l.Len() != len(want) {
			t.Fatalf("%s: %d files, want %d", what, l.Len(), len(want))
		}
		for i := range want {
			if l.Path(i) != want[i] || l.Size(i) != sizes[i] {
				t.Fatalf("%s: file %d is %q (%d), want %q (%d)", what, i, l.Path(i), l.Size(i), want[i], sizes[i])
			}
		}
		for start := 0; start <= len(want); start += 13 {
			for i, p := range l.Range(start, len(want)) {
				if string(p) != want[i] {
					t.Fatalf("%s: Range(%d, ...) yields %q as file %d, want %q", what, start, p, i, want[i])
				}
			}
		}
	}
	sizesOf := func(from, to int) []int64 {
		var s []int64
		for i := from; i < to; i++ {
			s = append(s, int64(i))
		}
		return s
	}
	check("whole", &whole, paths, sizesOf(0, 500))

	// A new version: the first two runs kept whole, part of the third, and
	// new files after.
	var next List
	next.Append("s3://other/new-0.parquet", 7)
	next.AppendFrom(&whole, 0, 71)
	next.AppendFrom(&whole, 100, 300)
	next.Append("s3://other/new-1.parquet", 8)
	want := append(append(append([]string{"s3://other/new-0.parquet"}, paths[:71]...), paths[100:300]...), "s3://other/new-1.parquet")
	sizes := append(append(append([]int64{7}, sizesOf(0, 71)...), sizesOf(100, 300)...), 8)
	check("next", &next, want, sizes)
	if !slices.Contains(next.runs, whole.runs[0]) || !slices.Contains(next.runs, whole.runs[1]) || slices.Contains(next.runs, whole.runs[2]) {
		t.Fatal("next shares the wrong runs")
	}
	next.Clip()
	check("next, clipped", &next, want, sizes)
	x := NewIndex(&next, nil)
	for i, p := range want {
		if got, ok := x.Find([]byte(p), sizes[i]); !ok || got != i {
			t.Fatalf("Find(%q) = %d, %t; want %d", p, got, ok, i)
		}
	}
}

// TestAppendAllocates: appending locations to a list with room for them
// (Grow, GrowBytes) allocates for its runs' anchors only, not for each
// location (two conversions a location did: 1.9 million allocations to
// decode a directory of 1,000,000 files).
func TestAppendAllocates(t *testing.T) {
	names := sparkNames(4096, rand.New(rand.NewPCG(3, 4)))
	bytes := 0
	for _, n := range names {
		bytes += len(n)
	}
	allocs := testing.AllocsPerRun(5, func() {
		var l List
		l.Grow(len(names))
		l.GrowBytes(bytes)
		for i, n := range names {
			l.Append(n, int64(i))
		}
	})
	if most := float64(len(names)/restartEvery + 8); allocs > most {
		t.Errorf("appending %d locations allocated %v times, want at most %v", len(names), allocs, most)
	}
}

// TestExtension: a list extended holds its files and the new ones, the
// list it extends keeps its own, and the next extension appends in the
// room the last one left.
func TestExtension(t *testing.T) {
	names := sparkNames(300, rand.New(rand.NewPCG(7, 8)))
	var l List
	for i, p := range names[:200] {
		l.Append(p, int64(i))
	}
	l.Clip()
	e := l.Extension()
	e.Grow(50)
	for i, p := range names[200:250] {
		e.Append(p, int64(200+i))
	}
	e.Seal()
	e2 := e.Extension()
	e2.Grow(6)
	for i, p := range names[250:256] {
		e2.Append(p, int64(250+i))
	}
	e2.Seal()
	for _, c := range []struct {
		l *List
		n int
	}{{&l, 200}, {&e, 250}, {&e2, 256}} {
		if c.l.Len() != c.n {
			t.Fatalf("%d files, want %d", c.l.Len(), c.n)
		}
		for i, p := range c.l.All() {
			if string(p) != names[i] || c.l.Size(i) != int64(i) {
				t.Fatalf("file %d of %d: %s (%d bytes), want %s", i, c.n, p, c.l.Size(i), names[i])
			}
		}
	}
	if unsafe.SliceData(e2.sizes) != unsafe.SliceData(e.sizes) {
		t.Error("the second extension copied the sizes the first left room for")
	}
}
