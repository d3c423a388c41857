package index_test

import (
	"bytes"
	"context"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// statsOnly is table metadata that lists statistics files; Load reads
// nothing else of it.
type statsOnly struct {
	table.Metadata
	stats []table.StatisticsFile
}

func (m statsOnly) Statistics() iter.Seq[table.StatisticsFile] { return slices.Values(m.stats) }

type blob struct {
	in   puffin.BlobInput
	data []byte
}

// entryBlob is the blob of an entry for a data file and field whose filter
// holds the given hashes.
func entryBlob(dataFile string, size int64, field int, hashes ...uint64) blob {
	e := index.Entry{DataFile: dataFile, DataFileSize: size, FieldID: field,
		ValueType: sampleEntry().ValueType, NDV: int64(len(hashes)), FPP: 0.01, SnapshotID: 1}
	f := sbbf.New(2)
	for _, h := range hashes {
		f.Insert(h)
	}
	return blob{e.BlobInput(), f.Bytes()}
}

var theta = blob{puffin.BlobInput{Type: puffin.BlobTypeDataSketchesTheta, Fields: []int32{1}}, []byte("sketch")}

// writeStats writes a Puffin file of blobs and returns its statistics entry,
// whose blob-metadata lists one item per blob type and field as writers
// list them (docs/format.md §7).
func writeStats(t *testing.T, dir, name string, blobs ...blob) table.StatisticsFile {
	t.Helper()
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	sf := table.StatisticsFile{SnapshotID: 1, StatisticsPath: filepath.Join(dir, name)}
	type item struct {
		typ   puffin.BlobType
		field int32
	}
	listed := make(map[item]bool)
	for _, b := range blobs {
		if _, err := w.AddBlob(b.in, b.data); err != nil {
			t.Fatal(err)
		}
		key := item{b.in.Type, b.in.Fields[0]}
		if !listed[key] {
			listed[key] = true
			sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{Type: table.BlobType(b.in.Type), Fields: b.in.Fields})
		}
	}
	st, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sf.StatisticsPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sf.FileSizeInBytes, sf.FileFooterSizeInBytes = st.FileSize, st.FooterSize
	return sf
}

func load(t *testing.T, cache *index.FooterCache, stats ...table.StatisticsFile) (*index.TableIndex, []error) {
	t.Helper()
	return index.Load(context.Background(), icebergio.LocalFS{}, statsOnly{stats: stats}, cache)
}

// TestLoadUnion loads the union of two segments, with a foreign blob in
// one; a statistics file whose blob-metadata lists no entries is not opened
// (its path does not even exist).
func TestLoadUnion(t *testing.T) {
	dir := t.TempDir()
	a := writeStats(t, dir, "a.puffin", entryBlob("f1", 100, 1, 11), theta, entryBlob("f1", 100, 2, 12))
	b := writeStats(t, dir, "b.puffin", entryBlob("f2", 200, 1, 21), entryBlob("f1", 100, 1, 99))
	onlyTheta := writeStats(t, dir, "theta.puffin", theta)
	onlyTheta.StatisticsPath = filepath.Join(dir, "missing.puffin")

	ix, errs := load(t, nil, a, onlyTheta, b)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	segs := ix.Segments()
	if len(segs) != 2 || segs[0].File.StatisticsPath != a.StatisticsPath || segs[1].File.StatisticsPath != b.StatisticsPath {
		t.Fatalf("segments %+v, want a.puffin then b.puffin", segs)
	}
	if len(segs[0].Entries) != 2 || segs[0].HasDirectory() {
		t.Errorf("segment a: %d entries, directory %v; want 2 v1 entries", len(segs[0].Entries), segs[0].Directory())
	}

	for _, c := range []struct {
		file  string
		size  int64
		field int
		path  string // "" for no applicable entry
		hash  uint64
	}{
		{"f1", 100, 1, a.StatisticsPath, 11}, // the first of two segments
		{"f1", 100, 2, a.StatisticsPath, 12},
		{"f2", 200, 1, b.StatisticsPath, 21},
		{"f1", 101, 1, "", 0}, // the size must match too
		{"f1", 100, 3, "", 0},
		{"f3", 100, 1, "", 0},
	} {
		e, ok := ix.Lookup(c.file, c.size, c.field)
		path := e.Path
		if ok != (c.path != "") || path != c.path {
			t.Errorf("Lookup(%s, %d, %d) = %q, %v; want %q", c.file, c.size, c.field, path, ok, c.path)
			continue
		}
		if !ok {
			continue
		}
		// The entry locates its bitset in the file it names.
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bits, err := index.ReadFilter(bytes.NewReader(raw), e)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := sbbf.FromBytes(bits); err != nil || !f.Check(c.hash) {
			t.Errorf("Lookup(%s, %d, %d): bitset does not hold its hash (%v)", c.file, c.size, c.field, err)
		}
	}
}

// TestLoadProblems: unreadable statistics files and invalid entries are
// reported, naming the file, and skipped; what remains still loads.
func TestLoadProblems(t *testing.T) {
	dir := t.TempDir()
	missing := writeStats(t, dir, "missing.puffin", entryBlob("f1", 100, 1))
	if err := os.Remove(missing.StatisticsPath); err != nil {
		t.Fatal(err)
	}
	corrupt := writeStats(t, dir, "corrupt.puffin", entryBlob("f1", 100, 1))
	raw, _ := os.ReadFile(corrupt.StatisticsPath)
	copy(raw[len(raw)-int(corrupt.FileFooterSizeInBytes):], "garbage!")
	if err := os.WriteFile(corrupt.StatisticsPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	wrongFooterSize := writeStats(t, dir, "footer.puffin", entryBlob("f1", 100, 1))
	wrongFooterSize.FileFooterSizeInBytes--
	murmur := entryBlob("f1", 100, 2)
	murmur.in.Properties[index.PropHash] = "murmur3"
	mixed := writeStats(t, dir, "mixed.puffin", murmur, entryBlob("f2", 200, 1, 5))

	ix, errs := load(t, nil, missing, corrupt, wrongFooterSize, mixed)
	for _, want := range []string{"missing.puffin", "corrupt.puffin", "footer.puffin", "mixed.puffin"} {
		found := false
		for _, err := range errs {
			found = found || strings.Contains(err.Error(), want)
		}
		if !found {
			t.Errorf("no error names %s: %v", want, errs)
		}
	}
	if len(errs) != 4 {
		t.Errorf("%d errors, want 4: %v", len(errs), errs)
	}
	if _, ok := ix.Lookup("f2", 200, 1); !ok {
		t.Error("the valid entry beside an invalid one is missing")
	}
	if _, ok := ix.Lookup("f1", 100, 2); ok {
		t.Error("an entry with hash murmur3 was used")
	}
	if len(ix.Segments()) != 1 {
		t.Errorf("%d segments, want only mixed.puffin", len(ix.Segments()))
	}
}

// TestFooterCache: a cached footer is not read again (the files can be
// gone), the cache holds at most its size, and concurrent loads share it.
func TestFooterCache(t *testing.T) {
	dir := t.TempDir()
	a := writeStats(t, dir, "a.puffin", entryBlob("f1", 100, 1))
	b := writeStats(t, dir, "b.puffin", entryBlob("f2", 200, 1))

	cache := index.NewFooterCache(8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, errs := load(t, cache, a, b); len(errs) != 0 {
				t.Errorf("errors: %v", errs)
			}
		})
	}
	wg.Wait()
	small := index.NewFooterCache(1)
	load(t, small, a, b)

	for _, sf := range []table.StatisticsFile{a, b} {
		if err := os.Remove(sf.StatisticsPath); err != nil {
			t.Fatal(err)
		}
	}
	ix, errs := load(t, cache, a, b)
	if len(errs) != 0 {
		t.Errorf("errors with a warm cache: %v", errs)
	}
	if _, ok := ix.Lookup("f2", 200, 1); !ok {
		t.Error("cached entry missing")
	}
	if _, errs := load(t, small, a, b); len(errs) != 1 {
		t.Errorf("a cache of one footer: %d errors for two deleted files, want 1: %v", len(errs), errs)
	}
}

// TestIndexCache: loading the same statistics files again through a cache
// returns the very index loaded before, without reading anything; a change
// of the table's statistics files gives a new one.
func TestIndexCache(t *testing.T) {
	dir := t.TempDir()
	a := writeStats(t, dir, "a.puffin", entryBlob("f1", 100, 1))
	b := writeStats(t, dir, "b.puffin", entryBlob("f2", 200, 1))
	cache := index.NewFooterCache(8)
	first, errs := load(t, cache, a)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if again, _ := load(t, cache, a); again != first {
		t.Error("the same statistics files were loaded into a new index")
	}
	both, _ := load(t, cache, a, b)
	if both == first {
		t.Fatal("a new statistics file gave the cached index")
	}
	if _, ok := both.Lookup("f2", 200, 1); !ok {
		t.Error("the new segment's entry is missing")
	}
}

// panickingFS panics on every Open, as a broken storage client might.
type panickingFS struct{ icebergio.IO }

func (panickingFS) Open(string) (icebergio.File, error) { panic("storage client bug") }

// TestLoadRecoversAPanic: a panic reading one statistics file in Load's
// workers is that file's error (its files stay unindexed, so every lookup
// keeps them), not the end of the process.
func TestLoadRecoversAPanic(t *testing.T) {
	dir := t.TempDir()
	sf := writeStats(t, dir, "a.puffin", entryBlob("s3://b/d1.parquet", 10, 1, 7))
	ix, errs := index.Load(context.Background(), panickingFS{icebergio.LocalFS{}}, statsOnly{stats: []table.StatisticsFile{sf}}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "internal error: storage client bug") || len(ix.Segments()) != 0 {
		t.Fatalf("Load with a panicking storage: %v, %d segments", errs, len(ix.Segments()))
	}
}

// TestFooterCacheScoped: a scoped view of a cache shares none of its
// entries with other scopes, neither footers nor whole indexes: what was
// read with one storage access (serve keeps a caller's vended credentials
// apart) is read again, with its own, by another; the same scope finds
// its own.
func TestFooterCacheScoped(t *testing.T) {
	dir := t.TempDir()
	a := writeStats(t, dir, "a.puffin", entryBlob("f1", 100, 1))
	cache := index.NewFooterCache(8)
	if _, errs := load(t, cache.Scoped("caller-a"), a); len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if err := os.Remove(a.StatisticsPath); err != nil {
		t.Fatal(err)
	}
	for _, scope := range []string{"caller-b", ""} {
		if _, errs := load(t, cache.Scoped(scope), a); len(errs) != 1 {
			t.Errorf("scope %q: %d errors for a file gone, want it read (1 error), not taken from caller-a's", scope, len(errs))
		}
	}
	if ix, errs := load(t, cache.Scoped("caller-a"), a); len(errs) != 0 {
		t.Errorf("caller-a's own scope: errors %v", errs)
	} else if _, ok := ix.Lookup("f1", 100, 1); !ok {
		t.Error("caller-a's cached entry missing")
	}
}
