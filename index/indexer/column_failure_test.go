package indexer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/internal/testfixture"
)

// TestBuildColumnFailures: a table of four files added with add_files —
// one whole, one whose column n arrow-go refuses to decode, one whose
// column n makes arrow-go panic, and one whose footer makes it panic. The
// build neither fails nor crashes: it indexes every column it can read,
// reports each failed (file, column) and the failed file, and lookups prune
// by the columns indexed and keep every file where a column is not. With
// FailFast the first column failure fails the build and commits nothing.
func TestBuildColumnFailures(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	)
	tbl := cat.NewTable(t, "partial", sc, nil)
	data := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	add := func(name string, damage testfixture.Damage) string {
		dir := filepath.Join(data, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return "file://" + testfixture.WriteBadColumnFile(t, dir, damage)
	}
	whole, refused, panics := add("whole", testfixture.Undamaged), add("refused", testfixture.DeltaTooWide), add("panics", testfixture.PageTypeV2)
	footer := add("footer", testfixture.Undamaged) // damaged once added: add_files reads footers
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, []string{whole, refused, panics, footer}, nil, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	damaged := testfixture.WriteBadColumnFile(t, t.TempDir(), testfixture.NegativeChildren)
	raw, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimPrefix(footer, "file://"), raw, 0o644); err != nil {
		t.Fatal(err)
	}

	opts := indexer.Options{Columns: []string{"id", "n"}, Parallel: 1, FailFast: true}
	before := tbl.MetadataLocation()
	_, err = indexer.Build(ctx, cat, tbl.Identifier(), opts)
	if err == nil || !strings.Contains(err.Error(), refused+": column n: ") || !strings.Contains(err.Error(), "delta bit width 33") {
		t.Fatalf("FailFast: %v, want the error of %s's column n", err, refused)
	}
	if tbl, _ := cat.LoadTable(ctx, tbl.Identifier()); tbl.MetadataLocation() != before {
		t.Fatal("a failed build changed the table metadata")
	}

	opts.FailFast, opts.Parallel = false, 3
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesTotal != 4 || sum.FilesIndexed != 3 || sum.Blobs != 4 || len(sum.FilesFailed) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	failed := map[[2]string]string{}
	for _, f := range sum.FilesFailed {
		failed[[2]string{f.Path, f.Column}] = f.Error
	}
	for _, want := range []struct{ path, column, cause string }{
		{refused, "n", "column n: row group 0: parquet: delta bit width 33 exceeds decoder width 32"},
		{panics, "n", "column n: panic while reading: runtime error: invalid memory address"},
		{footer, "", "panic while reading: runtime error: makeslice"},
	} {
		if msg, ok := failed[[2]string{want.path, want.column}]; !ok || !strings.HasPrefix(msg, want.cause) {
			t.Errorf("failure of %s, column %q: %q, want %q", want.path, want.column, msg, want.cause)
		}
	}
	js, err := json.Marshal(sum.FilesFailed)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(js), `"column":"n"`); n != 2 || strings.Count(string(js), `"column"`) != 2 {
		t.Errorf("JSON %s: want a column for the two column failures only", js)
	}

	tbl, err = cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	_, entries := indexOf(t, tbl)
	for path, fields := range map[string][]int{whole: {1, 2}, refused: {1}, panics: {1}, footer: nil} {
		if len(entries[path]) != len(fields) {
			t.Errorf("%s: entries for %d fields, want %v", path, len(entries[path]), fields)
		}
		for _, id := range fields {
			if entries[path][id].entry.NDV != testfixture.BadColumnRows {
				t.Errorf("%s field %d: ndv %d", path, id, entries[path][id].entry.NDV)
			}
		}
	}

	// Lookups: the ids of the files, present and absent, and n, whose
	// entries only the whole file has.
	presentID, presentN := testfixture.BadColumnValues(17)
	const absentID, absentN = 2, 1 // neither is a value of any file
	for _, tc := range []struct {
		filter iceberg.BooleanExpression
		keeps  map[string]bool
	}{
		{iceberg.EqualTo(iceberg.Reference("id"), presentID), map[string]bool{whole: true, refused: true, panics: true, footer: true}},
		{iceberg.EqualTo(iceberg.Reference("id"), int64(absentID)), map[string]bool{footer: true}},
		{iceberg.EqualTo(iceberg.Reference("n"), presentN), map[string]bool{whole: true, refused: true, panics: true, footer: true}},
		{iceberg.EqualTo(iceberg.Reference("n"), int32(absentN)), map[string]bool{refused: true, panics: true, footer: true}},
	} {
		for _, path := range []string{whole, refused, panics, footer} {
			if kept := planKeeps(t, tbl, tc.filter, path); kept != tc.keeps[path] {
				t.Errorf("lookup %v: keeps %s %v, want %v", tc.filter, path, kept, tc.keeps[path])
			}
		}
	}

	// A sync reads the partly indexed files again (their failed column
	// is still uncovered) but writes no second filter for the columns the
	// index has: nothing to commit.
	synced, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if synced.Blobs != 0 || synced.StatisticsPath != "" || synced.Segments != 1 {
		t.Fatalf("sync of the partly indexed files: %+v", synced)
	}
}
