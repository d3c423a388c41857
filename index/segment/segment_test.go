package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// built is a test filter with the hashes inserted in it.
type built struct {
	FilterInput
	hashes []uint64
}

func makeFilters(t *testing.T, rng *rand.Rand, n, field int, blocks func(i int) int) []built {
	t.Helper()
	var out []built
	for i := range n {
		f := sbbf.New(blocks(i))
		var hs []uint64
		for range 1 + rng.IntN(40) {
			h := rng.Uint64()
			f.Insert(h)
			hs = append(hs, h)
		}
		out = append(out, built{FilterInput{
			File:    File{Path: fmt.Sprintf("s3://b/t/data/%05d-%d.parquet", rng.IntN(100000), i), Size: int64(1000 + i)},
			FieldID: field, ValueType: iceberg.PrimitiveTypes.Int64, FPP: 0.01, NDV: int64(len(hs)),
			Bits: bytes.Clone(f.Bytes()),
		}, hs})
	}
	return out
}

// writeSegment writes filters into a Puffin file and returns its bytes and
// what Finish reported.
func writeSegment(t *testing.T, o WriterOptions, add func(w *Writer) error) ([]byte, Result) {
	t.Helper()
	var buf bytes.Buffer
	pw, err := puffin.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(pw, o)
	if err := add(w); err != nil {
		t.Fatal(err)
	}
	res, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// gather returns member m's filter of a group of the file: block b of each run.
func gather(t *testing.T, file []byte, g *Group, m int) []byte {
	t.Helper()
	var bits []byte
	for b := range g.Blocks {
		c := g.ChunkOf(b, m)
		if !c.Verify(file[c.Offset : c.Offset+c.Length+ChecksumBytes]) {
			t.Fatalf("run %d chunk of member %d does not verify", b, m)
		}
		off := c.Offset + int64(c.Index)*sbbf.BlockBytes
		bits = append(bits, file[off:off+sbbf.BlockBytes]...)
	}
	return bits
}

// filtersOf reads every member's filter of a segment, by file and field.
func filtersOf(t *testing.T, file []byte, res Result) map[string][]byte {
	t.Helper()
	dir, err := ReadDirectory(bytes.NewReader(file), res.DirectoryOffset, res.DirectoryLength)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for gi := range dir.Groups {
		g := &dir.Groups[gi]
		for m, mem := range g.Members {
			out[fmt.Sprintf("%s/%d", dir.Files.Path(mem.File), g.FieldID)] = gather(t, file, g, m)
		}
	}
	return out
}

func TestWriterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Block counts around a few size classes, two fields, more filters than
	// a chunk holds, and a budget small enough to cut groups early.
	filters := makeFilters(t, rng, 700, 1, func(i int) int { return 1 + i%3 })
	filters = append(filters, makeFilters(t, rng, 300, 2, func(i int) int { return 40 })...)
	file, res := writeSegment(t, WriterOptions{MemoryBudget: 64 << 10}, func(w *Writer) error {
		for _, f := range filters {
			if err := w.Add(f.FilterInput); err != nil {
				return err
			}
		}
		return nil
	})
	if res.Members[1] != 700 || res.Members[2] != 300 {
		t.Fatalf("members by field %v", res.Members)
	}
	got := filtersOf(t, file, res)
	for _, f := range filters {
		bits := got[fmt.Sprintf("%s/%d", f.File.Path, f.FieldID)]
		if !bytes.Equal(bits, f.Bits) {
			t.Fatalf("filter of %s field %d differs after the round trip", f.File.Path, f.FieldID)
		}
	}
	// The directory is smaller than the footer of one JSON item per filter
	// would be, and groups share blocks counts.
	if len(res.Directory.Groups) > 40 {
		t.Errorf("%d groups for 4 classes under a 64 KiB budget", len(res.Directory.Groups))
	}
}

func TestMergeKeepsChosenMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := makeFilters(t, rng, 300, 1, func(int) int { return 4 })
	b := makeFilters(t, rng, 200, 1, func(int) int { return 4 })
	write := func(fs []built) ([]byte, Result) {
		return writeSegment(t, WriterOptions{}, func(w *Writer) error {
			for _, f := range fs {
				if err := w.Add(f.FilterInput); err != nil {
					return err
				}
			}
			return nil
		})
	}
	fileA, resA := write(a)
	fileB, resB := write(b)
	var want []built
	sources := []Source{}
	for _, s := range []struct {
		file []byte
		res  Result
		in   []built
	}{{fileA, resA, a}, {fileB, resB, b}} {
		byPath := map[string]built{}
		for _, f := range s.in {
			byPath[f.File.Path] = f
		}
		for gi := range s.res.Directory.Groups {
			g := &s.res.Directory.Groups[gi]
			src := Source{Path: "src", R: bytes.NewReader(s.file), Group: g, Files: &s.res.Directory.Files}
			for m, mem := range g.Members {
				if m%3 != 1 {
					src.Keep = append(src.Keep, m)
					want = append(want, byPath[s.res.Directory.Files.Path(mem.File)])
				}
			}
			sources = append(sources, src)
		}
	}
	merged, res := writeSegment(t, WriterOptions{}, func(w *Writer) error { return w.Merge(sources) })
	got := filtersOf(t, merged, res)
	if len(got) != len(want) {
		t.Fatalf("merged %d filters, want %d", len(got), len(want))
	}
	for _, f := range want {
		if !bytes.Equal(got[fmt.Sprintf("%s/1", f.File.Path)], f.Bits) {
			t.Fatalf("filter of %s changed in the merge", f.File.Path)
		}
	}

	// A flipped bit in a source run fails the merge with ErrChecksum.
	g := &resA.Directory.Groups[0]
	fileA[g.RunOffset(2)+5] ^= 0x10
	_, err := func() (r Result, err error) {
		var buf bytes.Buffer
		pw, _ := puffin.NewWriter(&buf)
		w := NewWriter(pw, WriterOptions{})
		if err := w.Merge(sources[:1]); err != nil {
			return r, err
		}
		return w.Finish()
	}()
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("merge of a corrupt run: %v, want ErrChecksum", err)
	}
}

func TestDirectoryCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fs := makeFilters(t, rng, 50, 7, func(int) int { return 2 })
	_, res := writeSegment(t, WriterOptions{}, func(w *Writer) error {
		for _, f := range fs {
			if err := w.Add(f.FilterInput); err != nil {
				return err
			}
		}
		return nil
	})
	enc := res.Directory.Encode()
	if _, err := DecodeDirectory(enc, res.DirectoryOffset); err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		bad := bytes.Clone(enc)
		bad[i] ^= 0x01
		if _, err := DecodeDirectory(bad, res.DirectoryOffset); err == nil {
			t.Fatalf("a flipped bit at byte %d of the directory decoded", i)
		}
	}
	if _, err := DecodeDirectory(enc[:len(enc)-3], res.DirectoryOffset); err == nil {
		t.Fatal("a truncated directory decoded")
	}
	// Groups must lie before the directory.
	if _, err := DecodeDirectory(enc, res.Directory.Groups[0].Offset+1); err == nil {
		t.Fatal("a directory whose groups reach past it decoded")
	}
}

func TestChunkChecksumBindsPosition(t *testing.T) {
	g := Group{Blocks: 3, Members: make([]Member, 300), Tag: 42, Offset: 4}
	data := make([]byte, 4096+ChecksumBytes)
	c := g.ChunkOf(1, 5)
	sum := c.sum(data[:c.Length])
	data[c.Length], data[c.Length+1], data[c.Length+2], data[c.Length+3] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
	if !c.Verify(data) {
		t.Fatal("chunk does not verify")
	}
	for _, other := range []Chunk{g.ChunkOf(2, 5), g.ChunkOf(1, 200)} {
		if other.Length == c.Length && other.Verify(data) {
			t.Fatalf("the chunk verifies at another position %+v", other)
		}
	}
	g.Tag = 43
	if g.ChunkOf(1, 5).Verify(data) {
		t.Fatal("the chunk verifies in another group")
	}
	if c.Verify(make([]byte, len(data))) {
		t.Fatal("a zeroed chunk verifies")
	}
}

func TestSizeClass(t *testing.T) {
	prev := 0
	for n := 1; n < 1<<20; n++ {
		c := SizeClass(n)
		if c < n || float64(c) > float64(n)*(1+1.0/16)+1e-9 {
			t.Fatalf("SizeClass(%d) = %d", n, c)
		}
		if c < prev {
			t.Fatalf("SizeClass not monotone at %d", n)
		}
		prev = c
	}
}

// TestWriterMemoryBudget: the filters a Writer holds never exceed its
// budget by more than one filter's growth: under a small budget a class is
// written as several groups, and every filter still round-trips.
func TestWriterMemoryBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	filters := makeFilters(t, rng, 2000, 1, func(int) int { return 8 }) // 256 B each, 500 KiB in all
	const budget = 32 << 10
	var peak int64
	file, res := writeSegment(t, WriterOptions{MemoryBudget: budget}, func(w *Writer) error {
		for _, f := range filters {
			if err := w.Add(f.FilterInput); err != nil {
				return err
			}
			peak = max(peak, w.buffered)
		}
		return nil
	})
	if peak > budget {
		t.Errorf("buffered %d bytes at the peak, budget %d", peak, budget)
	}
	if n := len(res.Directory.Groups); n < 500<<10/budget {
		t.Errorf("%d groups for 500 KiB of filters under a %d-byte budget", n, budget)
	}
	got := filtersOf(t, file, res)
	for _, f := range filters {
		if !bytes.Equal(got[fmt.Sprintf("%s/1", f.File.Path)], f.Bits) {
			t.Fatalf("filter of %s differs", f.File.Path)
		}
	}
}

// TestDirectoryLinks: links round-trip; a directory without links encodes
// as it did before links existed (no section), so older segments read
// unchanged; links out of bounds are refused.
func TestDirectoryLinks(t *testing.T) {
	plain := Directory{Files: listOf(File{"s3://b/t/data/a.parquet", 10})}
	before := plain.Encode()
	link := Link{Path: "s3://b/t/metadata/icebloom-1-x.puffin", Size: 5000, FooterSize: 300, DirectoryOffset: 4000, DirectoryLength: 600,
		Fields: []int{1, 7}, Run: "job-1", Shard: 3, Shards: 4}
	linked := plain
	linked.Links = []Link{link, {Path: "s3://b/t/metadata/icebloom-1-y.puffin", Size: 100, FooterSize: 10, DirectoryOffset: 4, DirectoryLength: 80}}
	enc := linked.Encode()
	if !bytes.Equal(enc[:len(before)-4], before[:len(before)-4]) {
		t.Fatal("links changed the bytes before them")
	}
	got, err := DecodeDirectory(enc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Links, linked.Links) {
		t.Fatalf("links %+v, want %+v", got.Links, linked.Links)
	}
	if d, err := DecodeDirectory(before, 1<<20); err != nil || d.Links != nil {
		t.Fatalf("a directory without links: %+v, %v", d, err)
	}
	for name, edit := range map[string]func(*Link){
		"no path":            func(l *Link) { l.Path = "" },
		"directory past end": func(l *Link) { l.DirectoryOffset = 4500 },
		"directory at 0":     func(l *Link) { l.DirectoryOffset = 0 },
		"empty directory":    func(l *Link) { l.DirectoryLength = 0 },
		"shard out of range": func(l *Link) { l.Shard = 4 },
		"shard of no run":    func(l *Link) { l.Shards = 0 },
	} {
		bad := plain
		l := link
		edit(&l)
		bad.Links = []Link{l}
		if _, err := DecodeDirectory(bad.Encode(), 1<<20); err == nil {
			t.Errorf("%s: a link %+v decoded", name, l)
		}
	}
}

// memberOfNoFile is a directory whose one group has a member naming file 0,
// but which lists no files.
func memberOfNoFile() *Directory {
	return &Directory{Groups: []Group{{FieldID: 1, ValueType: iceberg.PrimitiveTypes.Int64, FPP: 0.01, Blocks: 1,
		Members: []Member{{File: 0, NDV: 1}}, Tag: 42, Offset: 4}}}
}

// TestDirectoryMemberOfNoFile: a member must name one of the directory's
// files, also when there are none (docs/format.md §2.3): with a valid
// checksum, such a directory is refused rather than handing a reader an
// index into an empty list.
func TestDirectoryMemberOfNoFile(t *testing.T) {
	bad := memberOfNoFile()
	if d, err := DecodeDirectory(bad.Encode(), 1<<20); err == nil {
		t.Fatalf("a member of file 0 of no files decoded: %+v", d)
	} else if !strings.Contains(err.Error(), "no files") {
		t.Errorf("error %q does not say the directory lists no files", err)
	}
	ok := *bad
	ok.Files = listOf(File{"s3://b/t/data/a.parquet", 10})
	if _, err := DecodeDirectory(ok.Encode(), 1<<20); err != nil {
		t.Fatalf("the same directory with its file: %v", err)
	}
}

// TestDirectoryFieldIDBounds: a group's field id is at most 2^31 − 1
// (docs/format.md §2.3), also when its uvarint is above 2^63, which a plain
// conversion to int would wrap to a negative id.
func TestDirectoryFieldIDBounds(t *testing.T) {
	for id, ok := range map[int]bool{1: true, math.MaxInt32: true, math.MaxInt32 + 1: false, -1: false, math.MinInt64: false} {
		d := memberOfNoFile()
		d.Files, d.Groups[0].FieldID = listOf(File{"s3://b/t/data/a.parquet", 10}), id // -1 encodes as 2^64−1
		got, err := DecodeDirectory(d.Encode(), 1<<20)
		if (err == nil) != ok {
			t.Errorf("field id %d (uvarint %d): %+v, %v; want ok %v", id, uint64(id), got, err, ok)
		}
	}
}

// listOf returns a list of files.
func listOf(files ...File) (l filelist.List) {
	for _, f := range files {
		l.Append(f.Path, f.Size)
	}
	return l
}
