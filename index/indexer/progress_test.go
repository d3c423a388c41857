package indexer_test

import (
	"os"
	"strings"
	"testing"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
)

// progressLog records Options.Progress calls. It takes no lock: the calls
// are documented as serialized, and the race detector checks that claim
// while several workers read files at once.
type progressLog []indexer.Progress

func (l *progressLog) record(p indexer.Progress) { *l = append(*l, p) }

// check verifies the calls of one run over total data files: a first call
// at 0, then done counts rising by one to the total, the total never
// changing, bytes rising by each file's size, and each file named once.
func (l progressLog) check(t *testing.T, total int, sizes map[string]int64) {
	t.Helper()
	if len(l) != total+1 {
		t.Fatalf("%d Progress calls for %d data files, want one at the start and one per file: %+v", len(l), total, l)
	}
	if first := l[0]; first != (indexer.Progress{FilesTotal: total}) {
		t.Fatalf("first call %+v, want 0 of %d", first, total)
	}
	seen := map[string]bool{}
	for i, p := range l[1:] {
		prev := l[i]
		if p.FilesDone != prev.FilesDone+1 || p.FilesTotal != total {
			t.Fatalf("call %d: %d of %d after %d: done counts must rise by one to the total", i+1, p.FilesDone, p.FilesTotal, prev.FilesDone)
		}
		size, ok := sizes[p.File]
		if !ok || seen[p.File] {
			t.Fatalf("call %d names %q: not a data file of the run, or named twice", i+1, p.File)
		}
		seen[p.File] = true
		if p.Bytes != prev.Bytes+size {
			t.Fatalf("call %d: bytes %d after %d, want the file's size %d added", i+1, p.Bytes, prev.Bytes, size)
		}
	}
	if last := l[len(l)-1]; last.FilesDone != total {
		t.Fatalf("last call %+v does not reach the total %d", last, total)
	}
}

// TestProgress: Build calls Progress once at the start and once per data
// file — an unreadable one included — with done counts rising to the total,
// from several workers at once; Sync counts only the files it reads, and a
// sync with nothing to read makes no call.
func TestProgress(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 8, 50, nil)
	sizes := map[string]int64{}
	for _, df := range liveFiles(t, tbl) {
		sizes[df.FilePath()] = df.FileSizeBytes()
	}
	// One file that is not Parquet: it stays unindexed but is still done.
	// Its size in the manifest is what Progress counts.
	bad := liveFiles(t, tbl)[3].FilePath()
	if err := os.WriteFile(strings.TrimPrefix(bad, "file://"), []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}

	var calls progressLog
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, Parallel: 4, Progress: calls.record})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 7 || len(sum.FilesFailed) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	calls.check(t, 8, sizes)

	// An append: sync reads the one new file only.
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	rec := eventsRecord(t, tbl.Schema(), randomRows(newRand(), 20))
	tbl = catalogtest.Append(t, tbl, rec)
	rec.Release()
	newSizes := map[string]int64{}
	for _, df := range liveFiles(t, tbl) {
		if _, old := sizes[df.FilePath()]; !old {
			newSizes[df.FilePath()] = df.FileSizeBytes()
		}
	}
	calls = nil
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, Progress: calls.record}); err != nil {
		t.Fatal(err)
	}
	// The unreadable file is uncovered, so sync tries it again.
	newSizes[bad] = sizes[bad]
	calls.check(t, 2, newSizes)

	// A table whose files are all covered: sync reads nothing.
	cat2, tbl2, _ := eventsTable(t, 2, 10, nil)
	if _, err := indexer.Build(ctx, cat2, tbl2.Identifier(), indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	calls = nil
	if _, err := indexer.Sync(ctx, cat2, tbl2.Identifier(), indexer.Options{Columns: []string{"id"}, Progress: calls.record}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("a sync with nothing to read called Progress: %+v", calls)
	}
}
