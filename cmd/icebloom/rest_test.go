package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
)

// TestRESTCommands runs the commands against a REST catalog the global
// flags select — --catalog rest --uri --credential --rest-prefix — on a
// server whose config does not name its prefix: build, lookups of a present
// and an absent value, maintain after an append (its sync indexes the new
// file), and a bad credential that fails with the server's reason. Every
// catalog request went under the prefix with the bearer token, and the
// embedded catalog in ./warehouse was never created.
func TestRESTCommands(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "lake"})
	tbl := srv.Catalog.NewTable(t, "events", catalogtest.IDSchema, iceberg.Properties{
		"write.parquet.bloom-filter-enabled.column.id": "true",
	})
	var files []string
	appendResidue := func(k int64) {
		ids := make([]int64, 100)
		for j := range ids {
			ids[j] = 4*int64(j) + k // every file spans 0..399: min/max prune none
		}
		before := tbl
		tbl = catalogtest.AppendIDs(t, tbl, ids...)
		files = append(files, addedFile(t, before, tbl))
	}
	appendResidue(0)
	appendResidue(1)
	flags := []string{"--catalog", "rest", "--uri", srv.URL, "--credential", srv.Credential, "--rest-prefix", "lake", "--output", "json"}
	cli := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := icebloom(t, append(slices.Clone(flags), args...)...)
		if code != 0 {
			t.Fatalf("%v exited %d: %s", args, code, stderr)
		}
		return stdout
	}
	lookup := func(where string, want ...string) {
		t.Helper()
		var out LookupOutput
		if err := json.Unmarshal([]byte(cli("lookup", "db.events", "--where", where)), &out); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out.Candidates)
		if out.FilesAfterStats != len(files) || !slices.Equal(out.Candidates, want) || len(out.Unindexed) != 0 {
			t.Errorf("lookup %s: %d files after statistics, candidates %v, unindexed %v; want %d, %v, none",
				where, out.FilesAfterStats, out.Candidates, out.Unindexed, len(files), want)
		}
	}

	var sum indexer.Summary
	if err := json.Unmarshal([]byte(cli("build", "db.events")), &sum); err != nil || sum.FilesIndexed != 2 {
		t.Fatalf("build: %+v, %v", sum, err)
	}
	lookup("id = 8", files[0])
	lookup("id IN (9, 10)", files[1]) // 10 = 4j+2: in no file

	appendResidue(2)
	var maintained MaintainOutput
	if err := json.Unmarshal([]byte(cli("maintain", "--namespace", "db")), &maintained); err != nil {
		t.Fatal(err)
	}
	if maintained.Failed != 0 || len(maintained.Tables) != 1 || maintained.Tables[0].Sync == nil || maintained.Tables[0].Sync.FilesIndexed != 1 {
		t.Fatalf("maintain %+v", maintained)
	}
	lookup("id = 10", files[2])
	lookup("id = 11")

	_, stderr, code := icebloom(t, "--catalog", "rest", "--uri", srv.URL, "--credential", "icebloom-test:wrong", "lookup", "db.events", "--where", "id = 8")
	if code != 1 || !strings.Contains(stderr, "invalid_client") || !strings.Contains(stderr, "wrong client secret") {
		t.Errorf("bad credential: exit %d, stderr %q", code, stderr)
	}

	for _, r := range srv.Requests() {
		if r.Path == "/v1/config" || r.Path == "/v1/oauth/tokens" {
			continue
		}
		if !strings.HasPrefix(r.Path, "/v1/lake/") || r.Header.Get("Authorization") != "Bearer "+srv.Token || r.Status >= 400 {
			t.Errorf("%s %s: authorization %q, status %d", r.Method, r.Path, r.Header.Get("Authorization"), r.Status)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); !os.IsNotExist(err) {
		t.Errorf("./warehouse: %v; the embedded catalog should not have been created", err)
	}
}

// addedFile returns the one live data file after has and before lacks.
func addedFile(t *testing.T, before, after *table.Table) string {
	t.Helper()
	live := func(tbl *table.Table) []string {
		var paths []string
		if tbl.CurrentSnapshot() == nil {
			return nil
		}
		tasks, err := tbl.Scan().PlanFiles(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			paths = append(paths, task.File.FilePath())
		}
		return paths
	}
	old := live(before)
	var added []string
	for _, p := range live(after) {
		if !slices.Contains(old, p) {
			added = append(added, p)
		}
	}
	if len(added) != 1 {
		t.Fatalf("the append added data files %v, want one", added)
	}
	return added[0]
}
