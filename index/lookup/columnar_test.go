package lookup

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// TestColumnarINInBatches: an IN of many values read in batches of a few
// chunks (columnarBatchBytes) keeps what the general evaluation keeps,
// with and without ANDs of the other column (fx.plan checks PruneFiles
// against Plan).
func TestColumnarINInBatches(t *testing.T) {
	fx := groupedFixture(t, 3, rowsPerFile)
	defer func(b int64) { columnarBatchBytes = b }(columnarBatchBytes)
	columnarBatchBytes = 64 // a chunk or two a batch
	for c := range fx.cols {
		var values []any
		for i, f := range fx.files {
			values = append(values, f.rows[i%len(f.rows)][c], fx.absent(c))
		}
		for range 30 {
			values = append(values, fx.absent(c))
		}
		lits := make([]string, len(values))
		for i, v := range values {
			lits[i] = fx.cols[c].literal(v)
		}
		in := mustParse(t, fx.cols[c].name+" IN ("+strings.Join(lits, ", ")+")")
		res := fx.plan(in, Options{})
		if len(res.Candidates) != len(fx.files) {
			t.Errorf("%s IN (…%d values): kept %d of %d files, each holding one", fx.cols[c].name, len(values), len(res.Candidates), len(fx.files))
		}
		other := (c + 1) % len(fx.cols)
		fx.plan(iceberg.NewAnd(in, fx.where(other, fx.absent(other))), Options{})
		fx.plan(iceberg.NewAnd(fx.where(other, fx.files[2].rows[0][other]), in), Options{})
	}
	if fx.columnar.Load() == 0 {
		t.Fatal("no lookup went through the columnar prober")
	}
}

// TestColumnarIndexProblems: a chunk that fails its checksum and a
// statistics file gone after its directory was cached keep the files
// concerned, report an error naming the problem, and leave the others
// pruned.
func TestColumnarIndexProblems(t *testing.T) {
	fx := groupedFixture(t, 2, rowsPerFile)
	fsys, err := fx.tbl.FS(fx.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(fx.ctx, fsys, fx.tbl.Metadata(), nil)
	if len(errs) > 0 || len(ix.Segments()) != 2 {
		t.Fatalf("Load: %d segments, errors %v", len(ix.Segments()), errs)
	}
	// The first segment holds files 0 and 1: flip a byte of each of its
	// groups' runs.
	seg := ix.Segments()[0]
	f, err := fsys.Open(seg.File.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range seg.Directory().Groups {
		for b := range g.Blocks {
			data[g.ChunkOf(b, 0).Offset] ^= 0x40
		}
	}
	fx.upload(seg.File.StatisticsPath, data)

	files := &filelist.List{}
	for _, df := range fx.files {
		files.Append(df.path, df.size)
	}
	check := func(what string, o Options) {
		t.Helper()
		for c := range fx.cols {
			filter := fx.where(c, fx.absent(c))
			o.Memo = &Memo{}
			res, err := PruneFiles(fx.ctx, fx.tbl, files, filter, o)
			if err != nil {
				t.Fatal(err)
			}
			if o.Memo.cols == nil || o.Memo.pf != nil {
				t.Fatalf("%s, %s: not by the columnar prober", what, filter)
			}
			for i := range 2 {
				if !slices.Contains(res.Kept, int32(i)) {
					t.Errorf("%s, %s: dropped file %d, whose filters cannot be read", what, filter, i)
				}
			}
			if len(res.IndexErrors) == 0 || !strings.Contains(fmt.Sprint(res.IndexErrors), seg.File.StatisticsPath) {
				t.Errorf("%s, %s: errors %v, want one naming %s", what, filter, res.IndexErrors, seg.File.StatisticsPath)
			}
			if what == "corrupt chunks" && !errors.Is(res.IndexErrors[0], segment.ErrChecksum) {
				t.Errorf("%s, %s: error %v, want a checksum error", what, filter, res.IndexErrors[0])
			}
			if len(res.Kept) == files.Len() {
				t.Errorf("%s, %s: every file kept, the good segment's too", what, filter)
			}
		}
	}
	check("corrupt chunks", Options{})

	// The directory cached, the file gone: its chunks cannot be read.
	cache := index.NewFooterCache(8)
	if _, err := PruneFiles(fx.ctx, fx.tbl, files, fx.where(0, fx.absent(0)), Options{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(seg.File.StatisticsPath); err != nil {
		t.Fatal(err)
	}
	check("statistics file gone", Options{Cache: cache})
}

// sameAsNewMemo checks that PruneFiles of files with memo keeps what it
// keeps with a new memo, for a value of the last file, one of the first
// and an absent one of each column.
func (fx *fixture) sameAsNewMemo(t *testing.T, what string, cache *index.FooterCache, files *filelist.List, memo *Memo) {
	t.Helper()
	for c := range fx.cols {
		for _, v := range []any{fx.files[len(fx.files)-1].rows[1][c], fx.files[0].rows[2][c], fx.absent(c)} {
			filter := fx.where(c, v)
			want, err := PruneFiles(fx.ctx, fx.tbl, files, filter, Options{Cache: cache, Memo: &Memo{}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := PruneFiles(fx.ctx, fx.tbl, files, filter, Options{Cache: cache, Memo: memo})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Kept, want.Kept) || !slices.Equal(got.Unindexed, want.Unindexed) {
				t.Fatalf("%s, %s: the memo keeps %v (unindexed %v), a new one %v (%v)", what, filter, got.Kept, got.Unindexed, want.Kept, want.Unindexed)
			}
		}
	}
}

// TestMemoIndexExtended: a memo whose index gained a segment (a sync
// indexed a file appended) matches only that segment's files, and keeps
// what a new memo keeps.
func TestMemoIndexExtended(t *testing.T) {
	fx := groupedFixture(t, 2, rowsPerFile) // files 0-3 in two segments
	fx.appendFile(rowsPerFile)              // file 4, not indexed yet
	cache := index.NewFooterCache(16)
	files := &filelist.List{}
	for _, df := range fx.files {
		files.Append(df.path, df.size)
	}
	memo := &Memo{}
	fx.sameAsNewMemo(t, "before the sync", cache, files, memo)
	matched := memo.fullMatches
	fx.index(fx.files[4]) // a third segment
	fx.sameAsNewMemo(t, "after the sync", cache, files, memo)
	if memo.fullMatches != matched {
		t.Fatalf("the memo matched every file again (%d times, %d before)", memo.fullMatches, matched)
	}
}

// TestMemoCarry: a memo carried over from the last version's (a file
// appended, its filters in a new segment) keeps what a new memo keeps,
// with the kept files' matches carried and only the new file matched; an
// index that did not only gain segments is matched whole again.
func TestMemoCarry(t *testing.T) {
	fx := groupedFixture(t, 2, rowsPerFile) // files 0-3 in two segments
	cache := index.NewFooterCache(16)
	filesOf := func(dfs ...dataFile) *filelist.List {
		f := &filelist.List{}
		for _, df := range dfs {
			f.Append(df.path, df.size)
		}
		return f
	}
	old := filesOf(fx.files...)
	oldMemo := &Memo{}
	fx.sameAsNewMemo(t, "before", cache, old, oldMemo)

	fx.appendFile(rowsPerFile)
	fx.index(fx.files[4]) // a third segment
	files := filesOf(append([]dataFile{fx.files[4]}, fx.files[:4]...)...)
	memo := &Memo{}
	memo.Carry(oldMemo, old, files, []RowMove{{From: 0, To: 1, N: 4}})
	fx.sameAsNewMemo(t, "after an append", cache, files, memo)
	if memo.fullMatches != 0 {
		t.Fatalf("the carried memo matched every file %d times", memo.fullMatches)
	}
	// A file appended after the kept ones, as a server's bases order them:
	// the groups are shared, and neither memo changes the other's.
	fx.appendFile(rowsPerFile)
	fx.index(fx.files[5])
	tail := filesOf(append(append([]dataFile{fx.files[4]}, fx.files[:4]...), fx.files[5])...)
	tailMemo := &Memo{}
	tailMemo.Carry(memo, files, tail, []RowMove{{N: files.Len()}})
	fx.sameAsNewMemo(t, "after an append at the end", cache, tail, tailMemo)
	fx.sameAsNewMemo(t, "the last version's after it", cache, files, memo)
	if tailMemo.fullMatches != 0 {
		t.Fatalf("the memo carried whole matched every file %d times", tailMemo.fullMatches)
	}

	// The snapshot's segment replaced by one of other files: the index no
	// longer extends the last one, and is matched whole.
	fx.index(fx.files[0], fx.files[1])
	again := &Memo{}
	again.Carry(memo, files, files, []RowMove{{From: 0, To: 0, N: files.Len()}})
	fx.sameAsNewMemo(t, "after the index changed", cache, files, again)
	if again.colsIx.Extends(memo.colsIx) {
		t.Fatal("the replaced segment left an index that extends the last one")
	}
	if again.fullMatches == 0 {
		t.Fatal("an index that did not only gain segments was not matched whole")
	}
}

// TestPruneFilesReserves: PruneFiles reserves what its way through the
// index works in before it works (the columnar prober's few bytes a file,
// or the general evaluation's check and probes a file for version 1
// entries), releases it, and fails when the reservation does.
func TestPruneFilesReserves(t *testing.T) {
	for _, grouped := range []bool{true, false} {
		fx := indexedFixture(t, 2, rowsPerFile, grouped)
		files := &filelist.List{}
		for _, df := range fx.files {
			files.Append(df.path, df.size)
		}
		filter := fx.where(0, fx.absent(0))
		var reserved []int64
		released := 0
		o := Options{Reserve: func(n int64) (func(), error) {
			reserved = append(reserved, n)
			return func() { released++ }, nil
		}}
		if _, err := PruneFiles(fx.ctx, fx.tbl, files, filter, o); err != nil {
			t.Fatal(err)
		}
		want := workBytes(files.Len(), []int{1})
		if grouped {
			want, _ = columnarWork(files.Len(), []*test{{values: make([]iceberg.Literal, 1)}}, 0)
		}
		if len(reserved) != 1 || reserved[0] != want || released != 1 {
			t.Fatalf("grouped %v: reserved %v, released %d times; want %d once, released", grouped, reserved, released, want)
		}
		busy := errors.New("no room")
		o.Reserve = func(int64) (func(), error) { return nil, busy }
		if _, err := PruneFiles(fx.ctx, fx.tbl, files, filter, o); !errors.Is(err, busy) {
			t.Fatalf("grouped %v: a refused reservation gave %v", grouped, err)
		}
	}
}

// TestColumnarWorkBounded: a lookup bounded by Options.MaxWorkBytes reads
// in batches that keep it within the bound, down to minBatchBytes; its
// flags a file are the least it works in. Unbounded, 1,000,000 files
// reserved 18 MiB a lookup.
func TestColumnarWorkBounded(t *testing.T) {
	one := []*test{{values: make([]iceberg.Literal, 1)}}
	const files = 1_000_000
	fixed := int64(2*files + 64<<10)
	for _, c := range []struct {
		most, work, batch int64
	}{
		{0, fixed + 2*columnarBatchBytes, columnarBatchBytes},
		{8 << 20, 8 << 20, (8<<20 - fixed) / 2},
		{64 << 20, fixed + 2*columnarBatchBytes, columnarBatchBytes},
		{1 << 20, fixed + 2*minBatchBytes, minBatchBytes},
	} {
		work, batch := columnarWork(files, one, c.most)
		if work != c.work || batch != c.batch {
			t.Errorf("at most %d bytes: work %d in batches of %d, want %d in batches of %d", c.most, work, batch, c.work, c.batch)
		}
	}
	// Few files: their chunks, not the batch, bound the work.
	if work, _ := columnarWork(10, one, 8<<20); work != 20+64<<10+2*10*(sbbf.BlockBytes+segment.ChecksumBytes) {
		t.Errorf("10 files work in %d bytes", work)
	}
}
