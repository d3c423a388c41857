package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// s3Env is a table db.events of catalogtest.IDSchema in an S3 bucket,
// catalogued by a SQL catalog on a local SQLite file, and the global flags
// that reach both.
type s3Env struct {
	s3     *catalogtest.S3
	opts   catalog.Options
	global []string
	// dataKeys are the object keys of the data files, in append order.
	dataKeys []string
}

const (
	s3Table     = "db.events"
	s3TablePath = "warehouse/db.db/events/" // the table's location in the bucket
)

// The S3 end-to-end tests below run as subtests against the in-process fake
// (gofakes3) and a real S3-compatible server, Versity's S3 gateway, which
// .ci/run starts (catalogtest.ForEachS3; the gateway subtests fail without
// it unless ICEBLOOM_SKIP_S3GW=1), with the same request counts for both.
// The fake alone serves where latency is injected (SetDelay: the bench's
// --s3-floor and --scale, which run outside tests where no gateway is
// started, and index/indexer's BenchmarkBuildS3) and where a fault is
// (TestPrefetchOnS3BrokenFile's corrupt object); index/indexer's
// TestPrefetchOnS3SameFilters also still uses only the fake.

// newS3Env creates the (empty) table in s3's bucket through catalog.Open
// with the options the command line would give.
func newS3Env(t *testing.T, s3 *catalogtest.S3) *s3Env {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "catalog.db")
	e := &s3Env{s3: s3, opts: catalog.Options{
		Type:       "sql",
		URI:        dsn,
		Warehouse:  s3.Location("warehouse"),
		Properties: s3.Properties(),
	}}
	e.global = append([]string{"--catalog", "sql", "--uri", dsn, "--warehouse", e.opts.Warehouse}, s3.PropertyFlags()...)
	cat := e.catalog(t)
	ctx := t.Context()
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "events"}, catalogtest.IDSchema)
	if err != nil {
		t.Fatal(err)
	}
	if want := s3.Location(strings.TrimSuffix(s3TablePath, "/")); tbl.Location() != want {
		t.Fatalf("table location %s, want %s", tbl.Location(), want)
	}
	return e
}

// catalog opens the catalog, closed at the end of the test.
func (e *s3Env) catalog(t *testing.T) icecatalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(t.Context(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(icecatalog.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return cat
}

// appendFile appends one data file (written by iceberg-go to the bucket)
// holding the ids 10k+r for k < n, and records its object key. Files with
// different r interleave, so min/max statistics prune none of them and any
// pruning is the index's.
func (e *s3Env) appendFile(t *testing.T, r, n int) {
	t.Helper()
	tbl, err := e.catalog(t).LoadTable(t.Context(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for k := range ids {
		ids[k] = int64(10*k + r)
	}
	before := e.s3.Objects(t, s3TablePath+"data/")
	catalogtest.AppendIDs(t, tbl, ids...)
	var added []string
	for key := range e.s3.Objects(t, s3TablePath+"data/") {
		if _, ok := before[key]; !ok {
			added = append(added, key)
		}
	}
	if len(added) != 1 || !strings.HasSuffix(added[0], ".parquet") {
		t.Fatalf("append wrote data objects %v, want one Parquet file", added)
	}
	e.dataKeys = append(e.dataKeys, added[0])
}

// icebloomJSON runs the command with the global flags and --output json,
// fails the test unless it succeeds, and decodes its output into out.
func (e *s3Env) icebloomJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	argv := append(slices.Clone(e.global), "--output", "json")
	stdout, stderr, code := icebloom(t, append(argv, args...)...)
	if code != 0 {
		t.Fatalf("icebloom %s exited %d: %s", strings.Join(args, " "), code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("icebloom %s output %q: %v", strings.Join(args, " "), stdout, err)
	}
}

// requestsOn returns the recorded requests on objects whose key has the
// suffix.
func requestsOn(reqs []catalogtest.S3Request, suffix string) []catalogtest.S3Request {
	var out []catalogtest.S3Request
	for _, r := range reqs {
		if strings.HasSuffix(r.Key, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// lookupWholeObjectGETs is how many unranged GETs of each statistics file a
// lookup makes: none. iceberg-go's blob IO starts an unranged GET of the
// whole object on Open; lookups, like builds, read through catalog.TableIO,
// whose Open reads nothing, so a lookup reads only footers and blocks.
const lookupWholeObjectGETs = 0

// TestS3 runs icebloom end to end on a table whose data, metadata and index
// live in an S3 bucket (on each of s3Servers, reached through
// --property s3.endpoint=... with path-style addressing and static
// credentials the server checks): build, an append and sync, lookups of
// present and absent values with their index reads counted, scan with and
// without the index, compact-index, and gc of an orphan index file and of
// the merged segments, with the grace period read from the bucket's
// modification times.
func TestS3(t *testing.T) { catalogtest.ForEachS3(t, testS3) }

func testS3(t *testing.T, s3 *catalogtest.S3) {
	e := newS3Env(t, s3)
	const rows = 8000
	for r := range 3 {
		e.appendFile(t, r, rows)
	}

	// build: every data file is read with range GETs only (its end with
	// the Parquet footer, then the id column chunk if that end does not
	// hold it), with the size the manifest gives; the index is one PUT of a
	// Puffin file next to the table's metadata.
	s3.Reset()
	var built indexer.Summary
	e.icebloomJSON(t, &built, "build", s3Table, "--columns", "id")
	if built.FilesIndexed != 3 || built.FilesTotal != 3 || built.Segments != 1 || len(built.FilesFailed) != 0 {
		t.Fatalf("build %+v", built)
	}
	first, ok := s3.Key(built.StatisticsPath)
	if !ok || path.Dir(first) != s3TablePath+"metadata" || !maintenance.IsIndexFileName(path.Base(first)) {
		t.Fatalf("statistics file %s is not an index file in the table's metadata directory in the bucket", built.StatisticsPath)
	}
	reqs := s3.Requests()
	checkDataReads(t, reqs, e.dataKeys)
	objects := s3.Objects(t, s3TablePath)
	// One PUT, then one HEAD: the run's check that the file it committed
	// exists.
	puts := requestsOn(reqs, first)
	if len(puts) != 2 || puts[0].Method != "PUT" || puts[0].Status != 200 || puts[0].BytesIn != objects[first] || objects[first] == 0 ||
		puts[1].Method != "HEAD" {
		t.Fatalf("index file %s (%d bytes) written by %v, want one PUT of it and one HEAD", first, objects[first], puts)
	}

	// append, then sync: only the new file is read, as a second segment.
	e.appendFile(t, 3, rows)
	s3.Reset()
	var synced indexer.Summary
	e.icebloomJSON(t, &synced, "sync", s3Table, "--columns", "id")
	if synced.FilesIndexed != 1 || synced.FilesCovered != 3 || synced.Segments != 2 || synced.StatisticsPath == "" {
		t.Fatalf("sync %+v", synced)
	}
	second, _ := s3.Key(synced.StatisticsPath)
	reqs = s3.Requests()
	checkDataReads(t, reqs, e.dataKeys[3:])
	for _, key := range e.dataKeys[:3] {
		if r := requestsOn(reqs, key); len(r) != 0 {
			t.Errorf("sync read %s, which the index covers: %v", key, r)
		}
	}
	objects = s3.Objects(t, s3TablePath)
	index := map[string]indexFile{first: {objects[first], 1}, second: {objects[second], 1}}

	// lookups: a value of the first segment, one of the second, an absent
	// one. Each reads both statistics files' directories (one range GET
	// each, at the place table metadata records) and, in each file's one
	// group of the id column, the run of the block the value hashes to:
	// one range GET holding the blocks of all the group's files.
	for _, c := range []struct {
		where string
		want  []string
	}{
		{"id = 2501", e.dataKeys[1:2]},
		{"id = 6503", e.dataKeys[3:4]},
		{"id = 5005", nil}, // within every file's min/max, in none
	} {
		s3.Reset()
		var lk LookupOutput
		e.icebloomJSON(t, &lk, "lookup", s3Table, "--where", c.where)
		var got []string
		for _, loc := range lk.Candidates {
			key, _ := s3.Key(loc)
			got = append(got, key)
		}
		if !slices.Equal(got, c.want) || lk.FilesTotal != 4 || lk.FilesAfterStats != 4 ||
			len(lk.Unindexed) != 0 || len(lk.IndexErrors) != 0 || lk.BlocksRead != 4 {
			t.Fatalf("lookup %s: candidates %v, want %v; %+v", c.where, got, c.want, lk)
		}
		checkLookupReads(t, c.where, s3.Requests(), index, lk)
	}

	// scan reads the one candidate file with the index, all four without.
	var with, without ScanOutput
	e.icebloomJSON(t, &with, "scan", s3Table, "--where", "id = 2501")
	e.icebloomJSON(t, &without, "scan", s3Table, "--where", "id = 2501", "--no-index")
	if len(with.Rows) != 1 || with.FilesRead != 1 || len(without.Rows) != 1 || without.FilesRead != 4 ||
		with.Rows[0]["id"] != float64(2501) {
		t.Fatalf("scan with index %+v, without %+v", with, without)
	}

	// compact-index merges the two segments into one by copying blob
	// bytes: range GETs of the footers and blobs, never a whole object, and
	// one PUT.
	s3.Reset()
	var compacted indexer.CompactSummary
	e.icebloomJSON(t, &compacted, "compact-index", s3Table)
	if compacted.SegmentsBefore != 2 || compacted.SegmentsAfter != 1 || compacted.EntriesKept != 4 ||
		compacted.EntriesDropped != 0 || compacted.BytesCopied == 0 {
		t.Fatalf("compact-index %+v", compacted)
	}
	merged, _ := s3.Key(compacted.StatisticsPath)
	reqs = s3.Requests()
	for _, key := range []string{first, second} {
		got := requestsOn(reqs, key)
		if len(got) == 0 {
			t.Errorf("compact-index did not read %s", key)
		}
		for _, r := range got {
			if !r.IsRangeGet() || r.Status != 206 {
				t.Errorf("compact-index: request %v of a segment it merges, want range GETs only", r)
			}
		}
	}
	if puts := requestsOn(reqs, merged); len(puts) != 2 || puts[0].Method != "PUT" || puts[1].Method != "HEAD" {
		t.Fatalf("merged index file %s written by %v, want one PUT and the HEAD that checks it", merged, puts)
	}
	objects = s3.Objects(t, s3TablePath)
	s3.Reset()
	var lk LookupOutput
	e.icebloomJSON(t, &lk, "lookup", s3Table, "--where", "id = 6503")
	if len(lk.Candidates) != 1 || lk.Candidates[0] != s3.Location(e.dataKeys[3]) || len(lk.IndexErrors) != 0 {
		t.Fatalf("lookup after compact-index: %+v", lk)
	}
	checkLookupReads(t, "id = 6503", s3.Requests(), map[string]indexFile{merged: {objects[merged], 1}}, lk)

	// gc: besides the merged segments, which the previous table metadata
	// referenced until just now, an orphan index file (as a build whose
	// commit failed leaves one) and another tool's file, both written an
	// hour ago by the bucket's clock. The default grace period (3 days)
	// keeps all three; 30 minutes deletes the orphan, with one DELETE, and
	// keeps the merged segments; no grace at all deletes those too. The
	// merged index and the other tool's file stay.
	s3.Backdate(time.Hour)
	orphan := s3TablePath + "metadata/icebloom-1-00000000-0000-4000-8000-000000000000.puffin"
	other := s3TablePath + "metadata/other-tool-stats.puffin"
	s3.Put(t, orphan, []byte("PFA1 not really"))
	s3.Put(t, other, []byte("PFA1 not ours"))
	s3.Backdate(0)
	locs := func(keys ...string) []string {
		var out []string
		for _, k := range keys {
			out = append(out, s3.Location(k))
		}
		slices.Sort(out)
		return out
	}
	var sum maintenance.GCSummary
	e.icebloomJSON(t, &sum, "gc", s3Table, "--dry-run")
	if sum.Scanned != 4 || sum.Referenced != 1 || len(sum.Deleted) != 0 || !slices.Equal(sum.Kept, locs(first, second, orphan)) {
		t.Fatalf("gc --dry-run, default grace: %+v", sum)
	}
	gc := func(olderThan string, deleted []string, kept []string) {
		t.Helper()
		s3.Reset()
		e.icebloomJSON(t, &sum, "gc", s3Table, "--older-than", olderThan, "--force")
		var bytes int64
		for _, k := range deleted {
			bytes += objects[k]
		}
		if !slices.Equal(sum.Deleted, locs(deleted...)) || !slices.Equal(sum.Kept, locs(kept...)) ||
			sum.Referenced != 1 || sum.BytesDeleted != bytes || len(sum.Failed) != 0 {
			t.Fatalf("gc --older-than %s: %+v", olderThan, sum)
		}
		var deletes []string
		for _, r := range s3.Requests() {
			if r.Method == "DELETE" {
				deletes = append(deletes, r.Key)
			}
		}
		slices.Sort(deletes)
		if !slices.Equal(deletes, slices.Sorted(slices.Values(deleted))) {
			t.Fatalf("gc --older-than %s sent DELETEs of %v, want %v", olderThan, deletes, deleted)
		}
	}
	objects[orphan] = int64(len("PFA1 not really"))
	gc("30m", []string{orphan}, []string{first, second})
	gc("0s", []string{first, second}, nil)
	left := slices.Sorted(maps.Keys(s3.Objects(t, s3TablePath+"metadata/icebloom-")))
	if want := []string{merged}; !slices.Equal(left, want) {
		t.Errorf("index files left in the bucket: %v, want %v", left, want)
	}
	if _, ok := s3.Objects(t, other)[other]; !ok {
		t.Errorf("gc deleted another tool's file %s", other)
	}

	// The index still answers after gc.
	e.icebloomJSON(t, &lk, "lookup", s3Table, "--where", "id = 2501")
	if len(lk.Candidates) != 1 || len(lk.IndexErrors) != 0 || lk.Candidates[0] != s3.Location(e.dataKeys[1]) {
		t.Fatalf("lookup after gc: %+v", lk)
	}
}

// checkDataReads checks that an index job read each of the data files keys,
// and read data files only with a HEAD and range GETs: never a whole-object
// GET, whose bytes the job does not use.
func checkDataReads(t *testing.T, reqs []catalogtest.S3Request, keys []string) {
	t.Helper()
	for _, key := range keys {
		var ranged int
		for _, r := range requestsOn(reqs, key) {
			switch {
			case r.IsRangeGet() && r.Status == 206:
				ranged++
			default:
				t.Errorf("data file %s: request %v, want range GETs only (the manifest gives the size: no HEAD)", key, r)
			}
		}
		// The file's end with the footer, then the column chunk unless
		// that end holds it (reading ahead, index/filescan/prefetch.go).
		if ranged < 1 || ranged > 2 {
			t.Errorf("data file %s: %d range GETs, want 1 or 2", key, ranged)
		}
	}
	for _, r := range requestsOn(reqs, ".parquet") {
		if !slices.Contains(keys, r.Key) {
			t.Errorf("read data file %s, want only %v", r.Key, keys)
		}
	}
}

// indexFile is a statistics file of the index: its size and how many reads
// of its runs a lookup of one value makes (one per group of the column).
type indexFile struct {
	size  int64
	reads int
}

// checkLookupReads checks the requests a lookup made of the statistics files
// index (by object key): one range GET of each file's directory (never its
// footer), one per group and value, and lookupWholeObjectGETs unranged GETs;
// nothing else of the index. The block reads are those the lookup reports,
// and all the range GETs together carry a small fraction of the index.
func checkLookupReads(t *testing.T, where string, reqs []catalogtest.S3Request, index map[string]indexFile, lk LookupOutput) {
	t.Helper()
	var rangeGETs, rangeBytes, wholeGETs, wholeBytes, sizes, blockReads int64
	for _, key := range slices.Sorted(maps.Keys(index)) {
		f := index[key]
		sizes += f.size
		blockReads += int64(f.reads)
		var ranges, whole int
		for _, r := range requestsOn(reqs, key) {
			switch {
			case r.IsRangeGet() && r.Status == 206:
				ranges++
				rangeGETs++
				rangeBytes += r.BytesOut
				if strings.HasSuffix(r.Range, "-"+strconv.FormatInt(f.size-1, 10)) {
					t.Errorf("lookup %s: index file %s: a read of the footer, want the directory alone", where, key)
				}
			case r.Method == "GET" && r.Range == "" && r.Status == 200:
				whole++
				wholeGETs++
				wholeBytes += r.BytesOut
			default:
				t.Errorf("lookup %s: request %v of index file %s", where, r, key)
			}
		}
		// One read of the directory, whose place table metadata records,
		// and one per group and value.
		if ranges != 1+f.reads || whole != lookupWholeObjectGETs {
			t.Errorf("lookup %s: index file %s: %d range reads, %d whole-object GETs; want 1 + %d, %d",
				where, key, ranges, whole, f.reads, lookupWholeObjectGETs)
		}
	}
	if lk.Requests != blockReads || lk.BytesRead >= rangeBytes {
		t.Errorf("lookup %s: the lookup reports %d block reads of %d bytes; the server saw %d reads of %d bytes, want %d block reads and the directories besides",
			where, lk.Requests, lk.BytesRead, rangeGETs, rangeBytes, blockReads)
	}
	if rangeBytes*20 > sizes {
		t.Errorf("lookup %s: range GETs of the index carried %d bytes of its %d; want under 5%%", where, rangeBytes, sizes)
	}
	// How much of a whole-object GET crosses the wire before the client
	// closes it depends on socket buffers, so it is only reported.
	t.Logf("lookup %s: %d range GETs of the index carrying %d bytes (%d of them blocks) of its %d; %d whole-object GETs carrying %d bytes",
		where, rangeGETs, rangeBytes, lk.BytesRead, sizes, wholeGETs, wholeBytes)
}

// TestS3BadProperty: a --property without '=' is refused before anything is
// opened, naming the property; credentials the server refuses fail the
// command with the server's reason, never prune anything silently.
func TestS3BadProperty(t *testing.T) { catalogtest.ForEachS3(t, testS3BadProperty) }

func testS3BadProperty(t *testing.T, s3 *catalogtest.S3) {
	e := newS3Env(t, s3)
	e.appendFile(t, 0, 10)

	argv := append(slices.Clone(e.global), "--property", "s3.endpoint", "lookup", s3Table, "--where", "id = 1")
	stdout, stderr, code := icebloom(t, argv...)
	if code != 1 || stdout != "" || !strings.Contains(failure(t, stderr), `property "s3.endpoint": want key=value`) {
		t.Errorf("--property s3.endpoint: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// A later --property overrides an earlier one: here the access key.
	argv = append(slices.Clone(e.global), "--property", "s3.access-key-id=someone-else", "lookup", s3Table, "--where", "id = 1")
	stdout, stderr, code = icebloom(t, argv...)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "InvalidAccessKeyId") || !strings.Contains(stderr, "db.events") {
		t.Errorf("wrong access key: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Logf("wrong access key: %s", stderr)
}

// TestS3GCListsEveryPage: an S3 listing returns at most 1000 keys a page,
// and a table's metadata directory outgrows that; gc still sees every index
// file in it, across pages.
func TestS3GCListsEveryPage(t *testing.T) { catalogtest.ForEachS3(t, testS3GCListsEveryPage) }

func testS3GCListsEveryPage(t *testing.T, s3 *catalogtest.S3) {
	e := newS3Env(t, s3)
	e.appendFile(t, 0, 10)
	var built indexer.Summary
	e.icebloomJSON(t, &built, "build", s3Table, "--columns", "id")

	const orphans = 1001
	e.s3.Backdate(time.Hour)
	for i := range orphans {
		e.s3.Put(t, fmt.Sprintf("%smetadata/icebloom-%d-00000000-0000-4000-8000-%012d.puffin", s3TablePath, i, i), []byte("x"))
	}
	e.s3.Backdate(0)
	e.s3.Reset()
	var sum maintenance.GCSummary
	e.icebloomJSON(t, &sum, "gc", s3Table, "--dry-run", "--older-than", "30m", "--force")
	if sum.Scanned != orphans+1 || sum.Referenced != 1 || len(sum.Deleted) != orphans || sum.BytesDeleted != orphans ||
		slices.Contains(sum.Deleted, built.StatisticsPath) {
		t.Fatalf("gc --dry-run: scanned %d, referenced %d, would delete %d (%d bytes); want %d, 1, %d",
			sum.Scanned, sum.Referenced, len(sum.Deleted), sum.BytesDeleted, orphans+1, orphans)
	}
	var pages, continued int
	for _, r := range e.s3.Requests() {
		if r.Method == "DELETE" || r.Method == "PUT" {
			t.Errorf("gc --dry-run changed the bucket: %v", r)
		}
		if r.Key == "" && strings.Contains(r.Query, "list-type=2") {
			pages++
			if strings.Contains(r.Query, "continuation-token=") {
				continued++
			}
		}
	}
	t.Logf("gc listed %d pages, %d continuing", pages, continued)
	if continued == 0 {
		t.Errorf("gc listed %d pages, none continuing another: the listing was not paged", pages)
	}
}
