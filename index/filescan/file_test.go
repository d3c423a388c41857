package filescan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/internal/testfixture"
	"github.com/icebloom/icebloom/index/sbbf"
)

// badFileColumns are the indexed columns of testfixture.WriteBadColumnFile's file.
func badFileColumns() []Column {
	id := iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}
	n := iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true}
	return []Column{
		{Field: id, Name: "id", Type: iceberg.PrimitiveTypes.Int64, FPP: testFPP},
		{Field: n, Name: "n", Type: iceberg.PrimitiveTypes.Int32, FPP: testFPP},
	}
}

// TestColumnsFailOneByOne: in a file where one column chunk cannot be
// decoded — arrow-go refuses it with an error, or panics reading it — that
// column gets an error naming it and its cause and no filter, while the
// other column's filter is built in full, with or without the dictionary
// shortcut. The worker's indexer then reads the next file as if nothing had
// happened.
func TestColumnsFailOneByOne(t *testing.T) {
	good := testfixture.WriteBadColumnFile(t, t.TempDir(), testfixture.Undamaged)
	_, want := indexWith(t, good, badFileColumns(), true)
	for _, tc := range []struct {
		name   string
		damage testfixture.Damage
		cause  string
	}{
		{"error", testfixture.DeltaTooWide, "delta bit width 33 exceeds decoder width 32"},
		{"panic", testfixture.PageTypeV2, "panic while reading: runtime error"},
	} {
		for _, shortcut := range []bool{true, false} {
			for _, nFirst := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/shortcut=%v/nFirst=%v", tc.name, shortcut, nFirst), func(t *testing.T) {
					path := testfixture.WriteBadColumnFile(t, t.TempDir(), tc.damage)
					cols := badFileColumns()
					if nFirst { // the damaged column read first, the good one after it
						cols[0], cols[1] = cols[1], cols[0]
					}
					x := NewScanner(icebergio.LocalFS{}, cols, nil, testMaxFilterBytes, !shortcut)
					out, err := x.Scan(t.Context(), File{Path: path})
					if err != nil {
						t.Fatalf("the file failed: %v", err)
					}
					if len(out) != 2 || out[0].Col != 0 || out[1].Col != 1 {
						t.Fatalf("results %+v, want one per column in order", out)
					}
					id, n := out[0], out[1]
					if nFirst {
						id, n = n, id
					}
					if id.Err != nil || id.NDV != testfixture.BadColumnRows {
						t.Fatalf("column id: ndv %d, error %v; want %d distinct values", id.NDV, id.Err, testfixture.BadColumnRows)
					}
					for i := range testfixture.BadColumnRows {
						if v, _ := testfixture.BadColumnValues(i); !id.Filter.Check(hashing.Int64(v)) {
							t.Fatalf("column id: present %d is pruned", v)
						}
					}
					if n.Err == nil || n.Filter.Bytes() != nil || n.NDV != 0 {
						t.Fatalf("column n: error %v, %d filter bytes, ndv %d; want an error and no filter", n.Err, len(n.Filter.Bytes()), n.NDV)
					}
					if msg := n.Err.Error(); !strings.HasPrefix(msg, "column n: ") || !strings.Contains(msg, tc.cause) {
						t.Fatalf("column n: error %q, want it to name the column and %q", msg, tc.cause)
					}

					// The same worker, next file: the filters of a fresh one.
					got, err := x.Scan(t.Context(), File{Path: good})
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range got {
						if f.Err != nil {
							t.Fatalf("next file: %v", f.Err)
						}
					}
					if nFirst {
						got[0], got[1] = got[1], got[0]
					}
					sameFilters(t, badFileColumns(), want, got)
				})
			}
		}
	}
}

// TestFileThatPanicsOnOpen: a footer that makes arrow-go panic while the
// file is opened is an error of the file, not a crash of the worker.
func TestFileThatPanicsOnOpen(t *testing.T) {
	path := testfixture.WriteBadColumnFile(t, t.TempDir(), testfixture.NegativeChildren)
	x := NewScanner(icebergio.LocalFS{}, badFileColumns(), nil, testMaxFilterBytes, false)
	out, err := x.Scan(t.Context(), File{Path: path})
	if err == nil || !strings.Contains(err.Error(), "panic while reading") || out != nil {
		t.Fatalf("results %+v, error %v; want a file error saying arrow-go panicked", out, err)
	}
}

// TestCorruptFilterIsColumnError: a filter with no bit set although its
// column has distinct values (which only a bug could make: here its inserts
// are lost) is an error of that column, never a filter that would prune
// every lookup. An all-NULL column's empty filter is not corrupt.
func TestCorruptFilterIsColumnError(t *testing.T) {
	tcs := lowCardinality(t)
	tcs = append(tcs, testColumn{primitive(t, "none", 7, parquet.Types.Int64, nil, -1), iceberg.PrimitiveTypes.Int64,
		func(int) any { return nil }})
	path := writeColumns(t, tcs, 1, 500)
	cols := buildColumns(tcs)
	var pool FilterPool
	x := NewScanner(icebergio.LocalFS{}, cols, nil, testMaxFilterBytes, false)
	x.filters = &pool
	calls := 0
	x.insertHook = func(f sbbf.Filter, hs []uint64) {
		if calls++; calls != 2 { // the second column's inserts are lost
			f.InsertMany(hs)
		}
	}
	out, err := x.Scan(t.Context(), File{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range out {
		switch {
		case i == 1:
			if f.Err == nil || !strings.Contains(f.Err.Error(), "column l: corrupt filter") || f.Filter.Bytes() != nil {
				t.Errorf("column l: error %v, %d filter bytes; want a corrupt filter error and no filter", f.Err, len(f.Filter.Bytes()))
			}
		case f.Err != nil:
			t.Errorf("column %s: %v", cols[i].Name, f.Err)
		case i == len(out)-1:
			if f.NDV != 0 || !allZero(f.Filter.Bytes()) {
				t.Errorf("all-NULL column: ndv %d", f.NDV)
			}
		case f.NDV == 0 || allZero(f.Filter.Bytes()):
			t.Errorf("column %s: ndv %d, empty filter", cols[i].Name, f.NDV)
		}
	}
}

// The defaults of index/indexer, which the tests read with: a filter of at
// most 128 MiB, a false-positive rate of 1%.
const (
	testMaxFilterBytes = 128 << 20
	testFPP            = 0.01
)
