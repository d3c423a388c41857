package maintenance_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/maintenance"
)

// scenario drives one table through appends, data compaction, expiry and
// index maintenance, checking the index after every step.
type scenario struct {
	t      *testing.T
	cat    *catalogtest.Catalog
	ident  table.Identifier
	nextID int64
}

func newScenario(t *testing.T) *scenario {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, iceberg.Properties{indexer.PropBloomEnabledPrefix + "id": "true"})
	return &scenario{t: t, cat: cat, ident: tbl.Identifier(), nextID: 1}
}

func (s *scenario) table() *table.Table {
	s.t.Helper()
	tbl, err := s.cat.LoadTable(bg, s.ident)
	if err != nil {
		s.t.Fatal(err)
	}
	return tbl
}

// appendFile appends one data file of n fresh ids.
func (s *scenario) appendFile(n int) {
	s.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = s.nextID * 7919 // spread out, still ordered
		s.nextID++
	}
	catalogtest.AppendIDs(s.t, s.table(), ids...)
}

// maintain runs one maintenance pass and returns its report.
func (s *scenario) maintain(o maintenance.MaintainOptions) maintenance.TableReport {
	s.t.Helper()
	reports := maintenance.Maintain(bg, s.cat, []table.Identifier{s.ident}, o)
	if len(reports) != 1 || reports[0].Failed() || reports[0].Skipped != "" {
		s.t.Fatalf("maintain: %+v", reports)
	}
	return reports[0]
}

// check asserts the invariants: every live file covered, every present id
// kept by lookup, table metadata and segments bounded, and every index file
// the metadata references present (gc, run with no grace, deleted none).
func (s *scenario) check(step string, maxSegments int) {
	s.t.Helper()
	tbl := s.table()
	for f, ok := range covered(s.t, tbl) {
		if !ok {
			s.t.Fatalf("%s: %s is not covered", step, f)
		}
	}
	segments := 0
	for sf := range tbl.Metadata().Statistics() {
		segments++
		if len(sf.BlobMetadata) > 2 { // the column's and the directory's
			s.t.Fatalf("%s: statistics entry lists %d blob-metadata items for one column", step, len(sf.BlobMetadata))
		}
		if _, err := os.Stat(strings.TrimPrefix(sf.StatisticsPath, "file://")); err != nil {
			s.t.Fatalf("%s: a referenced index file is gone: %v", step, err)
		}
	}
	if segments > maxSegments {
		s.t.Fatalf("%s: %d segments, want at most %d", step, segments, maxSegments)
	}
	for id := int64(1); id < s.nextID; id += 5 {
		res, err := lookup.Plan(bg, tbl, iceberg.EqualTo(iceberg.Reference("id"), id*7919), lookup.Options{})
		if err != nil {
			s.t.Fatal(err)
		}
		if len(res.Candidates) == 0 {
			s.t.Fatalf("%s: id %d is in the table but its file was pruned", step, id*7919)
		}
	}
}

// rewriteData compacts all data files into one with iceberg-go's
// RewriteDataFiles, as a data compaction job would.
func (s *scenario) rewriteData() {
	s.t.Helper()
	tbl := s.table()
	tasks, err := tbl.Scan().PlanFiles(bg)
	if err != nil {
		s.t.Fatal(err)
	}
	var size int64
	for _, task := range tasks {
		size += task.File.FileSizeBytes()
	}
	if _, err := tbl.RewriteDataFiles(bg, []table.CompactionTaskGroup{{Tasks: tasks, TotalSizeBytes: size}}, table.RewriteDataFilesOptions{}); err != nil {
		s.t.Fatal(err)
	}
	if got := len(covered(s.t, s.table())); got != 1 {
		s.t.Fatalf("after the rewrite %d data files, want 1", got)
	}
}

// TestMaintenanceScenario: appends, sync, a data compaction, sync, expiry,
// gc, then a long run of small appends with periodic maintenance.
func TestMaintenanceScenario(t *testing.T) {
	s := newScenario(t)
	gcNow := maintenance.GCOptions{OlderThan: maintenance.NoGrace, Force: true}

	for range 3 {
		s.appendFile(40)
	}
	r := s.maintain(maintenance.MaintainOptions{})
	if r.Sync.FilesIndexed != 3 || r.Sync.FilesCovered != 0 {
		t.Fatalf("first sync %+v", r.Sync)
	}
	s.check("first sync", 1)

	s.appendFile(40)
	r = s.maintain(maintenance.MaintainOptions{})
	if r.Sync.FilesIndexed != 1 || r.Sync.FilesCovered != 3 {
		t.Fatalf("sync after an append read %d files, want only the new one (%+v)", r.Sync.FilesIndexed, r.Sync)
	}
	s.check("sync after append", 2)

	s.rewriteData()
	r = s.maintain(maintenance.MaintainOptions{})
	if r.Sync.FilesIndexed != 1 {
		t.Fatalf("sync after the data compaction %+v, want the one rewritten file read", r.Sync)
	}
	s.check("sync after data compaction", 3)

	r = s.maintain(maintenance.MaintainOptions{Expire: &maintenance.ExpireOptions{OlderThan: new(time.Nanosecond), RetainLast: 1}, GC: gcNow})
	if len(r.Expire.SnapshotsExpired) == 0 || r.Expire.Folded == nil {
		t.Fatalf("expire %+v", r.Expire)
	}
	if r.Expire.Folded.EntriesDropped != 4 {
		t.Fatalf("fold dropped %d entries, want the 4 of the rewritten-away files", r.Expire.Folded.EntriesDropped)
	}
	if len(r.GC.Deleted) == 0 {
		t.Fatalf("gc after expiry deleted nothing: %+v", r.GC)
	}
	s.check("expire and gc", 1)

	// Many small appends, maintenance after each: segments stay bounded by
	// the compaction threshold, and each sync reads only the new file.
	for i := range 12 {
		s.appendFile(5)
		r = s.maintain(maintenance.MaintainOptions{CompactAbove: 4, GC: gcNow})
		if r.Sync.FilesIndexed != 1 {
			t.Fatalf("append %d: sync read %d files", i, r.Sync.FilesIndexed)
		}
		s.check("small appends", 5)
	}
}

// TestMaintainSkipsTablesWithoutColumns: a table without indexed columns
// configured is reported as skipped, not failed, and left alone.
func TestMaintainSkipsTablesWithoutColumns(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	plain := cat.NewTable(t, "plain", catalogtest.IDSchema, nil)
	catalogtest.AppendIDs(t, plain, 1, 2)
	indexed := cat.NewTable(t, "indexed", catalogtest.IDSchema, iceberg.Properties{indexer.PropBloomEnabledPrefix + "id": "true"})
	catalogtest.AppendIDs(t, indexed, 1, 2)
	tables, err := maintenance.Tables(bg, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	reports := maintenance.Maintain(bg, cat, tables, maintenance.MaintainOptions{})
	if len(reports) != 2 {
		t.Fatalf("%d reports for tables %v", len(reports), tables)
	}
	for _, r := range reports {
		switch r.Table {
		case "db.plain":
			if r.Skipped == "" || r.Sync != nil {
				t.Errorf("plain table: %+v", r)
			}
		case "db.indexed":
			if r.Failed() || r.Sync == nil || r.Sync.FilesIndexed != 1 {
				t.Errorf("indexed table: %+v", r)
			}
		}
	}
}
