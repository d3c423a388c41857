package smallfiles

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestCreate makes a table of 5 files, adds 2 more, and checks what the
// scale benchmarks rely on: one data file per path, Rows rows each, every
// file holding 0 and MaxID (so min/max statistics keep every file), the id
// recorded for each file being one of its ids, and files that depend only
// on the table's size.
func TestCreate(t *testing.T) {
	ctx := context.Background()
	cat := catalogtest.NewCatalog(t)
	st, err := Create(ctx, cat, table.Identifier{"db", "small"}, 5, LocalPut)
	if err != nil {
		t.Fatal(err)
	}
	more, err := st.WriteFiles(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddFiles(ctx, cat, more); err != nil {
		t.Fatal(err)
	}
	if len(st.Paths) != 7 || len(st.Present) != 7 {
		t.Fatalf("%d paths, %d present ids; want 7 each", len(st.Paths), len(st.Present))
	}
	tbl, err := cat.LoadTable(ctx, st.Ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range tasks {
		got = append(got, task.File.FilePath())
		if task.File.Count() != Rows {
			t.Errorf("%s: %d rows, want %d", task.File.FilePath(), task.File.Count(), Rows)
		}
		lo, hi := task.File.LowerBoundValues()[1], task.File.UpperBoundValues()[1]
		if len(lo) != 8 || len(hi) != 8 || binary.LittleEndian.Uint64(lo) != 0 || binary.LittleEndian.Uint64(hi) != MaxID {
			t.Errorf("%s: id bounds %x..%x, want 0..MaxID", task.File.FilePath(), lo, hi)
		}
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(st.Paths)); !slices.Equal(got, want) {
		t.Errorf("table's files %v, want %v", got, want)
	}
	for i, id := range st.Present {
		if id%2 != 0 || id <= 0 || id >= MaxID {
			t.Errorf("file %d: present id %d, want an even id in (0, MaxID)", i, id)
		}
	}
	other, err := Create(ctx, cat, table.Identifier{"db", "again"}, 5, LocalPut)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(other.Present, st.Present[:5]) {
		t.Errorf("a second table of 5 files holds ids %v, want %v", other.Present, st.Present[:5])
	}
}
