package catalog_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/lookup"
)

// Helpers the catalog tests share, whatever catalog the table is in.

// dataFiles returns the locations of the live data files of tbl's current
// snapshot.
func dataFiles(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		paths = append(paths, task.File.FilePath())
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// candidates plans col = v on tbl with its index and returns the candidate
// files, sorted, checking that statistics alone kept every file.
func candidates(t *testing.T, tbl *table.Table, col string, v int64) (files, unindexed []string) {
	t.Helper()
	res, err := lookup.Plan(t.Context(), tbl, iceberg.EqualTo(iceberg.Reference(col), v), lookup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IndexErrors) > 0 {
		t.Fatalf("lookup %s = %d: index errors %v", col, v, res.IndexErrors)
	}
	if live := dataFiles(t, tbl); len(res.AfterStats) != len(live) {
		t.Fatalf("lookup %s = %d: statistics kept %d of the %d files; the test wants them to keep all", col, v, len(res.AfterStats), len(live))
	}
	for _, task := range res.Candidates {
		files = append(files, task.File.FilePath())
	}
	slices.Sort(files)
	return files, res.Unindexed
}

// statisticsPaths returns the statistics files of tbl's metadata.
func statisticsPaths(tbl *table.Table) []string {
	var paths []string
	for f := range tbl.Metadata().Statistics() {
		paths = append(paths, f.StatisticsPath)
	}
	slices.Sort(paths)
	return paths
}

// newestFile returns the one live data file of tbl that is not in known.
func newestFile(t *testing.T, tbl *table.Table, known []string) string {
	t.Helper()
	var added []string
	for _, p := range dataFiles(t, tbl) {
		if !slices.Contains(known, p) {
			added = append(added, p)
		}
	}
	if len(added) != 1 {
		t.Fatalf("data files added by the last append: %v, want one", added)
	}
	return added[0]
}

// residues returns the n ids step·j+k, j < n.
func residues(step, k int64, n int) []int64 {
	ids := make([]int64, n)
	for j := range ids {
		ids[j] = step*int64(j) + k
	}
	return ids
}

// appendPairs appends a data file of the rows (id, id+1000), one for each
// of ids, to a table of the long columns id and id2.
func appendPairs(t *testing.T, tbl *table.Table, ids []int64) *table.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]string, len(ids))
	for j, id := range ids {
		rows[j] = fmt.Sprintf(`{"id": %d, "id2": %d}`, id, id+1000)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader("["+strings.Join(rows, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	return catalogtest.Append(t, tbl, rec)
}

// eventsIdent is db.events, the table the lifecycle tests of every catalog
// create.
var eventsIdent = table.Identifier{"db", "events"}

// newEventsTable creates db.events (one long column, id) with four data
// files, file k holding the ids 8j+k for j < 100: every file's id range
// spans nearly all of 0..799, so min/max statistics prune no file for an id
// in the middle, and ids 8j+4 … 8j+7 are in none. It returns the table and
// its data file locations in the order written.
func newEventsTable(t *testing.T, cat icecatalog.Catalog) (*table.Table, []string) {
	t.Helper()
	ctx := t.Context()
	if err := cat.CreateNamespace(ctx, icecatalog.NamespaceFromIdent(eventsIdent), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, eventsIdent, catalogtest.IDSchema)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for k := range int64(4) {
		tbl = appendResidue(t, tbl, k)
		files = append(files, newestFile(t, tbl, files))
	}
	return tbl, files
}

// appendResidue appends a data file of the ids 8j+k, j < 100.
func appendResidue(t *testing.T, tbl *table.Table, k int64) *table.Table {
	t.Helper()
	return catalogtest.AppendIDs(t, tbl, residues(8, k, 100)...)
}

// checkCandidates fails the test unless the lookup id = v on tbl leaves
// exactly the files want and reports the files unindexed unindexed.
func checkCandidates(t *testing.T, tbl *table.Table, v int64, want []string, unindexed ...string) {
	t.Helper()
	got, gotUnindexed := candidates(t, tbl, "id", v)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("lookup id = %d: candidates %v, want %v", v, got, want)
	}
	slices.Sort(gotUnindexed)
	slices.Sort(unindexed)
	if !slices.Equal(gotUnindexed, unindexed) {
		t.Errorf("lookup id = %d: unindexed %v, want %v", v, gotUnindexed, unindexed)
	}
}

// load loads db.events (eventsIdent) through cat.
func load(t *testing.T, cat icecatalog.Catalog) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), eventsIdent)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
