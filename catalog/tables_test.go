package catalog_test

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

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
