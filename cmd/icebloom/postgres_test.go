package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// TestPostgresCatalog runs the commands against a SQL catalog on the test
// PostgreSQL server (catalogtest.PostgresDSN), selected by the global flags
// alone: build, lookups of a present and an absent id, sync after an
// append, inspect, rebuild and gc. A dialect iceberg-go does not know is
// refused by name.
func TestPostgresCatalog(t *testing.T) {
	dsn := catalogtest.PostgresDSN(t)
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml
	t.Chdir(t.TempDir())          // and no ./warehouse to fall back on unnoticed
	warehouse := "file://" + filepath.ToSlash(t.TempDir())
	flags := []string{"--catalog", "sql", "--uri", dsn, "--sql-driver", "pgx", "--sql-dialect", "postgres", "--warehouse", warehouse}

	// The table, written by iceberg-go through the same catalog: file k of
	// four holds the ids 8j+k, so min/max statistics keep every file for
	// an id in the middle and ids 8j+4 … 8j+7 are in none.
	cat, err := catalog.Open(t.Context(), catalog.Options{Type: "sql", URI: dsn, Warehouse: warehouse, SQLDriver: "pgx", SQLDialect: "postgres"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
	ident := table.Identifier{"db", "events"}
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	// sync and rebuild take the column from the table's properties.
	tbl, err := cat.CreateTable(t.Context(), ident, catalogtest.IDSchema,
		icecatalog.WithProperties(iceberg.Properties{"write.parquet.bloom-filter-enabled.column.id": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	appendIDs := func(k int64) {
		ids := make([]int64, 100)
		for j := range ids {
			ids[j] = 8*int64(j) + k
		}
		tbl = catalogtest.AppendIDs(t, tbl, ids...)
		files = append(files, newFile(t, tbl, files))
	}
	for k := range int64(4) {
		appendIDs(k)
	}

	pg := func(v any, args ...string) {
		t.Helper()
		stdout, stderr, code := icebloom(t, append(append([]string{"--output", "json"}, flags...), args...)...)
		if code != 0 {
			t.Fatalf("%v exited %d: %s", args, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), v); err != nil {
			t.Fatalf("%v output %q: %v", args, stdout, err)
		}
	}
	lookupIDs := func(where string, want ...string) {
		t.Helper()
		var lk LookupOutput
		pg(&lk, "lookup", "db.events", "--where", where)
		slices.Sort(lk.Candidates)
		slices.Sort(want)
		if lk.FilesTotal != len(files) || lk.FilesAfterStats != len(files) || !slices.Equal(lk.Candidates, want) ||
			len(lk.Unindexed) != 0 || len(lk.IndexErrors) != 0 {
			t.Fatalf("lookup %s: %+v, want of %d files the candidates %v, all indexed", where, lk, len(files), want)
		}
	}

	var sum indexer.Summary
	pg(&sum, "build", "db.events", "--columns", "id")
	if sum.FilesIndexed != 4 || sum.Segments != 1 {
		t.Fatalf("build %+v", sum)
	}
	lookupIDs("id = 201", files[1])
	lookupIDs("id = 205")
	lookupIDs("id IN (203, 204, 206)", files[3])

	appendIDs(5) // ids 8j+5, 205 among them
	pg(&sum, "sync", "db.events")
	if sum.FilesIndexed != 1 || sum.FilesCovered != 4 || sum.Segments != 2 {
		t.Fatalf("sync %+v, want the appended file alone indexed, in a second segment", sum)
	}
	lookupIDs("id = 205", files[4])
	lookupIDs("id = 206")
	var in InspectOutput
	pg(&in, "inspect", "db.events")
	if in.LiveFiles != 5 || len(in.Segments) != 2 || len(in.Columns) != 1 || in.Columns[0].Covered != 5 || len(in.IndexErrors) != 0 {
		t.Fatalf("inspect %+v", in)
	}

	pg(&sum, "rebuild", "db.events")
	if sum.FilesIndexed != 5 || sum.Segments != 1 {
		t.Fatalf("rebuild %+v", sum)
	}
	var gc maintenance.GCSummary
	pg(&gc, "gc", "db.events", "--older-than", "0s", "--force")
	if gc.Referenced != 1 || gc.Scanned != len(gc.Deleted)+1 || len(gc.Deleted) < 2 || len(gc.Failed) != 0 {
		t.Fatalf("gc %+v, want all but the rebuild's index file deleted", gc)
	}
	pg(&in, "inspect", "db.events")
	if len(in.Segments) != 1 || in.Segments[0].Path != sum.StatisticsPath || in.Columns[0].Covered != 5 || len(in.IndexErrors) != 0 {
		t.Fatalf("inspect after gc %+v", in)
	}
	lookupIDs("id = 205", files[4])

	bad := slices.Clone(flags)
	bad[slices.Index(bad, "postgres")] = "postgresql"
	_, stderr, code := icebloom(t, append(bad, "inspect", "db.events")...)
	if code != 1 || !strings.Contains(failure(t, stderr), `unsupported sql dialect: "postgresql"`) {
		t.Fatalf("--sql-dialect postgresql: exit %d, %s", code, stderr)
	}
}

// newFile returns the one live data file of tbl not in known.
func newFile(t *testing.T, tbl *table.Table, known []string) string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, task := range tasks {
		if p := task.File.FilePath(); !slices.Contains(known, p) && !slices.Contains(added, p) {
			added = append(added, p)
		}
	}
	if len(added) != 1 {
		t.Fatalf("new data files %v, want one", added)
	}
	return added[0]
}
