package filescan

import (
	"bytes"
	"testing"
)

// TestIndexReadsOnlyTheMissingColumns: a data file the index covers for
// some columns (File.cols set, as a sync sets it) is read only for the
// others: no read touches the chunks of a covered column, and the filters
// of the columns read are those of a read of every column.
func TestIndexReadsOnlyTheMissingColumns(t *testing.T) {
	const rowGroups, rows = 2, 2000
	tcs := lowCardinality(t)
	if len(tcs) < 3 {
		t.Fatalf("%d test columns, want at least 3", len(tcs))
	}
	cols := buildColumns(tcs)
	path := writeColumns(t, tcs, rowGroups, rows)
	chunks, _ := chunkRanges(t, path) // row group then column order
	_, all := indexWith(t, path, cols, false)

	want := []int{1} // one column of several: the others are covered
	rec := &readRecordingIO{}
	x := NewScanner(rec, cols, nil, testMaxFilterBytes, true)
	got, err := x.Scan(t.Context(), File{Path: path, Columns: want})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Col != 1 || got[0].Err != nil {
		cols := make([]int, len(got))
		for i, f := range got {
			cols[i] = f.Col
		}
		t.Fatalf("filters of columns %v, want one of column 1", cols)
	}
	if got[0].NDV != all[1].NDV || !bytes.Equal(got[0].Filter.Bytes(), all[1].Filter.Bytes()) {
		t.Error("the filter of the column read alone differs from a read of every column")
	}
	for i, r := range chunks {
		in := readsWithin(rec.reads, r)
		if c := i % len(tcs); c == 1 && len(in) == 0 {
			t.Errorf("chunk %d of the missing column %s was not read", i, cols[c].Name)
		} else if c != 1 && len(in) > 0 {
			t.Errorf("chunk %d of the covered column %s was read: %v", i, cols[c].Name, in)
		}
	}
}
