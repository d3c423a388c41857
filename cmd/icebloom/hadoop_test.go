package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// TestHadoopCatalog runs the commands against iceberg-go's Hadoop catalog on
// a local warehouse directory, selected by --catalog hadoop --warehouse
// alone, on a table iceberg-go created and appended to through the same
// catalog: build, lookups of present and absent ids, sync after an append,
// compact-index, expire, gc, verify, inspect and maintain over the
// namespace. Each command that commits adds one metadata version, those
// that only read add none, and the metadata directory stays whole. A Hadoop
// catalog without a warehouse, or on object storage, is refused by name,
// and the embedded catalog in ./warehouse is never created.
func TestHadoopCatalog(t *testing.T) {
	work := t.TempDir()
	t.Setenv("HOME", work) // no ~/.iceberg-go.yaml
	t.Chdir(work)          // and no ./warehouse to fall back on unnoticed
	warehouse := t.TempDir()
	flags := []string{"--catalog", "hadoop", "--warehouse", warehouse}

	// The table, written by iceberg-go through the same catalog: file k of
	// four holds the ids 8j+k, so min/max statistics keep every file for
	// an id in the middle and ids 8j+4 … 8j+7 are in none.
	cat, err := catalog.Open(t.Context(), catalog.Options{Type: "hadoop", Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
	ident := table.Identifier{"db", "events"}
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	// sync and maintain take the column from the table's properties.
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
	// versions checks the metadata directory and that it holds want
	// versions: the create, the appends and the commits so far.
	versions := func(what string, want int) {
		t.Helper()
		loaded, err := cat.LoadTable(t.Context(), ident)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := catalogtest.CheckHadoopMetadata(t, loaded); n != want {
			t.Fatalf("after %s: %d metadata versions, want %d", what, n, want)
		}
	}
	versions("the create and 4 appends", 5)

	hadoop := func(v any, args ...string) {
		t.Helper()
		stdout, stderr, code := icebloom(t, append(append([]string{"--output", "json"}, flags...), args...)...)
		if code != 0 {
			t.Fatalf("%v exited %d: %s", args, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), v); err != nil {
			t.Fatalf("%v output %q: %v", args, stdout, err)
		}
	}
	lookupIDs := func(where string, want []string, unindexed ...string) {
		t.Helper()
		var lk LookupOutput
		hadoop(&lk, "lookup", "db.events", "--where", where)
		slices.Sort(lk.Candidates)
		slices.Sort(want)
		if lk.FilesTotal != len(files) || lk.FilesAfterStats != len(files) || !slices.Equal(lk.Candidates, want) ||
			!slices.Equal(lk.Unindexed, unindexed) || len(lk.IndexErrors) != 0 {
			t.Fatalf("lookup %s: %+v, want of %d files the candidates %v, unindexed %v", where, lk, len(files), want, unindexed)
		}
	}

	var sum indexer.Summary
	hadoop(&sum, "build", "db.events", "--columns", "id")
	if sum.FilesIndexed != 4 || sum.Segments != 1 || len(sum.FilesFailed) != 0 {
		t.Fatalf("build %+v", sum)
	}
	versions("build", 6)
	lookupIDs("id = 201", files[1:2])
	lookupIDs("id = 205", nil)
	lookupIDs("id IN (203, 204, 206)", files[3:4])

	appendIDs(5) // ids 8j+5, 205 among them: kept, unindexed, until the sync
	lookupIDs("id = 205", files[4:5], files[4])
	hadoop(&sum, "sync", "db.events")
	if sum.FilesIndexed != 1 || sum.FilesCovered != 4 || sum.Segments != 2 {
		t.Fatalf("sync %+v, want the appended file alone indexed, in a second segment", sum)
	}
	versions("an append and sync", 8)
	lookupIDs("id = 205", files[4:5])
	lookupIDs("id = 206", nil)

	var compacted indexer.CompactSummary
	hadoop(&compacted, "compact-index", "db.events")
	if compacted.SegmentsBefore != 2 || compacted.SegmentsAfter != 1 || compacted.EntriesKept != 5 {
		t.Fatalf("compact-index %+v", compacted)
	}
	var expired maintenance.ExpireSummary
	hadoop(&expired, "expire", "db.events", "--older-than", "0s", "--retain-last", "1")
	if len(expired.SnapshotsExpired) != 4 {
		t.Fatalf("expire %+v, want the 4 snapshots before the current one expired", expired)
	}
	versions("compact-index and expire", 10)
	var gc maintenance.GCSummary
	hadoop(&gc, "gc", "db.events", "--older-than", "0s", "--force")
	if gc.Scanned != 3 || gc.Referenced != 1 || len(gc.Deleted) != 2 || len(gc.Failed) != 0 {
		t.Fatalf("gc %+v, want the build's and the sync's segments deleted, the compaction's kept", gc)
	}
	for _, p := range gc.Deleted {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("gc left %s: %v", p, err)
		}
	}
	var rep verify.Report
	hadoop(&rep, "verify", "db.events", "--sample", "5", "--seed", "1")
	if !rep.OK() || len(rep.Sampled) != 5 || len(rep.Columns) != 1 || rep.Columns[0].Covered != 5 {
		t.Fatalf("verify %+v", rep)
	}
	var in InspectOutput
	hadoop(&in, "inspect", "db.events")
	if in.LiveFiles != 5 || len(in.Segments) != 1 || in.Segments[0].Path != compacted.StatisticsPath ||
		len(in.Columns) != 1 || in.Columns[0].Covered != 5 || len(in.IndexErrors) != 0 {
		t.Fatalf("inspect %+v", in)
	}
	for i, k := range []int{0, 1, 2, 3, 5} { // the residues of files 0 … 4
		lookupIDs(fmt.Sprintf("id = %d", 8*30+k), files[i:i+1])
	}
	lookupIDs("id = 244", nil)
	versions("gc, verify, inspect and lookups", 10)

	// maintain lists the namespace's tables through the Hadoop catalog and
	// syncs the one whose properties enable the column.
	appendIDs(6)
	var maintained MaintainOutput
	hadoop(&maintained, "maintain", "--namespace", "db")
	if maintained.Failed != 0 || len(maintained.Tables) != 1 || maintained.Tables[0].Table != "db.events" ||
		maintained.Tables[0].Sync == nil || maintained.Tables[0].Sync.FilesIndexed != 1 {
		t.Fatalf("maintain %+v", maintained)
	}
	lookupIDs("id = 246", files[5:6])
	versions("an append and maintain", 12)

	_, stderr, code := icebloom(t, "--catalog", "hadoop", "inspect", "db.events")
	if code != 1 || !strings.Contains(stderr, "hadoop catalog: no warehouse (--warehouse)") {
		t.Errorf("--catalog hadoop without --warehouse: exit %d, %s", code, stderr)
	}
	// On object storage iceberg-go's Hadoop catalog cannot commit atomically
	// and refuses to open unless told to accept that.
	_, stderr, code = icebloom(t, "--catalog", "hadoop", "--warehouse", "s3://lake/warehouse", "inspect", "db.events")
	if code != 1 || !strings.Contains(stderr, "allow-unsafe-commits") {
		t.Errorf("--catalog hadoop on s3: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "warehouse")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("./warehouse: %v; the embedded catalog should not have been created", err)
	}
}
