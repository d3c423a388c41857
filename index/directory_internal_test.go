package index

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// metadataOf is table metadata that lists statistics files; Load reads
// nothing else of it.
type metadataOf struct {
	table.Metadata
	stats []table.StatisticsFile
}

func (m metadataOf) Statistics() iter.Seq[table.StatisticsFile] { return slices.Values(m.stats) }

// writeV2Segment writes a v2 segment of one filter of field 1 for each of
// files data files and returns its statistics entry, with the directory's
// place recorded, and its directory as written.
func writeV2Segment(t *testing.T, files int) (table.StatisticsFile, *segment.Directory) {
	t.Helper()
	var buf bytes.Buffer
	pw, err := puffin.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w := segment.NewWriter(pw, segment.WriterOptions{SnapshotID: 1})
	for k := range files {
		f := sbbf.New(1)
		f.Insert(uint64(k))
		err := w.Add(segment.FilterInput{File: segment.File{Path: fmt.Sprintf("s3://b/t/data/%05d-%x.parquet", k, k*7919), Size: int64(1000 + k)},
			FieldID: 1, ValueType: iceberg.PrimitiveTypes.Int64, FPP: 0.01, NDV: 1, Bits: f.Bytes()})
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	st, err := pw.Finish()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "segment.puffin")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sf := table.StatisticsFile{SnapshotID: 1, StatisticsPath: path, FileSizeInBytes: st.FileSize, FileFooterSizeInBytes: st.FooterSize,
		BlobMetadata: []table.BlobMetadata{{Type: table.BlobType(segment.DirectoryBlobType), Fields: []int32{1}, Properties: map[string]string{
			segment.PropDirectoryOffset: strconv.FormatInt(res.DirectoryOffset, 10),
			segment.PropDirectoryLength: strconv.FormatInt(res.DirectoryLength, 10),
		}}}}
	return sf, res.Directory
}

// TestDirectoryKeptAsStored: a loaded index keeps its directories as
// stored, not decoded (87 MB at 1,000,000 files, against 6.6 MB stored);
// a directory is decoded while someone holds it, shared by its callers
// meanwhile, and decoded again, the same, once nothing holds it. Matching
// holds it only while it runs.
func TestDirectoryKeptAsStored(t *testing.T) {
	const files = 3000
	ix, written := loadV2Segment(t, files)
	seg := &ix.segments[0]
	decodedNow := func() bool {
		runtime.GC()
		return seg.dir.decoded.Value() != nil
	}
	if decodedNow() {
		t.Fatal("the loaded index keeps its directory decoded")
	}
	held := seg.Directory()
	if ix.Bytes() >= seg.dir.decodedBytes.Load() || seg.dir.decodedBytes.Load() != held.Bytes() || ix.DecodedBytes() != held.Bytes() {
		t.Errorf("index of %d bytes, its directory %d bytes decoded (%d held): want it counted as stored", ix.Bytes(), seg.dir.decodedBytes.Load(), held.Bytes())
	}
	if again := seg.Directory(); again != held {
		t.Error("a directory held decoded was decoded again")
	}
	if !decodedNow() {
		t.Error("a directory held decoded was let go")
	}
	if held.Files.Len() != files {
		t.Errorf("decoded %d files, not the %d written", held.Files.Len(), files)
	}
	for k, path := range held.Files.All() {
		if string(path) != written.Files.Path(k) || held.Files.Size(k) != written.Files.Size(k) {
			t.Fatalf("file %d decoded as %s (%d bytes), written as %s (%d bytes)", k, path, held.Files.Size(k), written.Files.Path(k), written.Files.Size(k))
		}
	}
	runtime.KeepAlive(held)
	held = nil

	matched := 0
	ix.Match(func(path []byte, size int64) (int, bool) { return int(size), true }, []int{1}, func(file int, ref FilterRef) {
		if f := ref.Filter(); f.DataFileSize != int64(file) || f.DataFile != written.Files.Path(file-1000) {
			t.Fatalf("matched %s (%d bytes) as file %d", f.DataFile, f.DataFileSize, file)
		}
		matched++
	})
	if matched != files {
		t.Errorf("matched %d files, want %d", matched, files)
	}
	if decodedNow() {
		t.Error("the directory stays decoded after matching")
	}
	if again := seg.Directory(); again.Files.Len() != files || !slices.EqualFunc(again.Groups, written.Groups, func(a, b segment.Group) bool {
		return a.Layout() == b.Layout() && a.FieldID == b.FieldID && slices.Equal(a.Members, b.Members)
	}) {
		t.Error("the directory decoded again is not the one written")
	}
}

// TestMatchGroupsStreams: MatchGroups hands over what Match does (each
// file's field, group and member) without decoding a directory nothing
// holds, both with the directory decoded and without; the Filter of a ref
// it gave decodes it then, and is the filter Match gives. A segment whose
// statistics entry lists only other fields is not read.
func TestMatchGroupsStreams(t *testing.T) {
	const files = 3000
	ix, _ := loadV2Segment(t, files)
	seg := &ix.segments[0]
	type hit struct {
		file, field, member int
		layout              segment.Layout
		filter              StoredFilter
	}
	find := func(path []byte, size int64) (int, bool) { return int(size), size%3 != 0 }
	collect := func(match func(fn func(int, FilterRef))) []hit {
		var hits []hit
		match(func(file int, ref FilterRef) {
			g, m := ref.Group()
			hits = append(hits, hit{file, ref.FieldID(), m, g.Layout(), StoredFilter{}})
		})
		return hits
	}
	want := collect(func(fn func(int, FilterRef)) { ix.Match(find, []int{1}, fn) })
	runtime.GC()
	var refs []FilterRef
	got := collect(func(fn func(int, FilterRef)) {
		ix.MatchGroups(0, find, []int{1}, func(file int, ref FilterRef) { refs = append(refs, ref); fn(file, ref) })
	})
	for k := range min(len(got), len(want)) {
		if got[k] != want[k] {
			t.Logf("first difference at %d: %+v, want %+v", k, got[k], want[k])
			break
		}
	}
	if len(want) != files*2/3 || !slices.Equal(got, want) {
		t.Fatalf("MatchGroups handed over %d refs, Match %d (want %d), or others", len(got), len(want), files*2/3)
	}
	if runtime.GC(); seg.dir.decoded.Value() != nil {
		t.Fatal("MatchGroups decoded the directory")
	}
	var filters []StoredFilter
	ix.Match(find, []int{1}, func(_ int, ref FilterRef) { filters = append(filters, ref.Filter()) })
	for k, ref := range refs {
		if f := ref.Filter(); f.DataFile != filters[k].DataFile || f.DataFileSize != filters[k].DataFileSize || f.NDV != filters[k].NDV {
			t.Fatalf("the filter of ref %d: %s (%d bytes), want %s", k, f.DataFile, f.DataFileSize, filters[k].DataFile)
		}
	}
	// With the directory held decoded, MatchGroups reads it.
	held := seg.Directory()
	if again := collect(func(fn func(int, FilterRef)) { ix.MatchGroups(0, find, []int{1}, fn) }); !slices.Equal(again, want) {
		t.Fatal("MatchGroups over a held directory differs")
	}
	runtime.KeepAlive(held)
	calls := 0
	ix.MatchGroups(0, func([]byte, int64) (int, bool) { calls++; return 0, false }, []int{7}, func(int, FilterRef) {})
	if calls != 0 {
		t.Fatalf("a segment of field 1 alone was read for field 7: %d finds", calls)
	}
}

// loadV2Segment loads the index of one v2 segment of files files
// (writeV2Segment), and returns it with the directory written.
func loadV2Segment(t *testing.T, files int) (*TableIndex, *segment.Directory) {
	t.Helper()
	sf, written := writeV2Segment(t, files)
	ix, errs := Load(context.Background(), icebergio.LocalFS{}, metadataOf{stats: []table.StatisticsFile{sf}}, NewFooterCache(8))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return ix, written
}
