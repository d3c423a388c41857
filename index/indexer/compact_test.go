package indexer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/internal/testfixture"
	"github.com/icebloom/icebloom/puffin"
)

func statisticsFiles(tbl *table.Table) []table.StatisticsFile {
	var out []table.StatisticsFile
	for sf := range tbl.Metadata().Statistics() {
		out = append(out, sf)
	}
	return out
}

func appendRows(t *testing.T, tbl *table.Table, n int) *table.Table {
	t.Helper()
	rec := eventsRecord(t, tbl.Schema(), randomRows(newRand(), n))
	defer rec.Release()
	return catalogtest.Append(t, tbl, rec)
}

// TestCompactBoundsSegments: a long run of small appends, each followed by a
// sync, leaves one segment per snapshot; compaction merges them into one
// segment of the current snapshot by copying blobs, table metadata lists one
// item per column again, every live file stays covered, and a second
// compaction has nothing to do.
func TestCompactBoundsSegments(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 1, 20, nil)
	opts := indexer.Options{Columns: []string{"id", "email"}}
	for range 6 {
		if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
			t.Fatal(err)
		}
		tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
		tbl = appendRows(t, tbl, 20)
	}
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if n := len(statisticsFiles(tbl)); n != 7 {
		t.Fatalf("%d segments before compaction, want 7", n)
	}
	sum, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.SegmentsBefore != 7 || sum.SegmentsAfter != 1 || sum.EntriesKept != 14 || sum.EntriesDropped != 0 || sum.BytesCopied == 0 {
		t.Fatalf("compaction %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	files := statisticsFiles(tbl)
	if len(files) != 1 || files[0].SnapshotID != tbl.CurrentSnapshot().SnapshotID || len(files[0].BlobMetadata) != 3 {
		t.Fatalf("statistics after compaction: %+v", files)
	}
	coveredByAll(t, tbl, 1, 2)
	again, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil || again.StatisticsPath != "" || again.SegmentsAfter != 1 {
		t.Fatalf("second compaction %+v, %v: want nothing to do", again, err)
	}
}

// TestCompactDropsEntriesOfRemovedFiles: after the data is rewritten (an
// overwrite standing for a compaction of data files) and synced, compacting
// for the current snapshot alone drops the entries of the rewritten-away
// files, while compacting for all snapshots keeps them for time travel.
func TestCompactDropsEntriesOfRemovedFiles(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 3, 30, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	var all []row
	for _, rows := range rowsByFile {
		all = append(all, rows...)
	}
	rec := eventsRecord(t, tbl.Schema(), all)
	at := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	txn := tbl.NewTransaction()
	if err := txn.OverwriteTable(ctx, at, rec.NumRows(), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, _ = txn.Commit(ctx); tbl == nil {
		t.Fatal("overwrite failed")
	}
	at.Release()
	rec.Release()
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}

	keepAll, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if keepAll.EntriesKept != 4 || keepAll.EntriesDropped != 0 {
		t.Fatalf("compaction for all snapshots %+v: want the 3 old entries kept for time travel", keepAll)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	var others []int64
	for _, s := range tbl.Metadata().Snapshots() {
		if s.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			others = append(others, s.SnapshotID)
		}
	}
	onlyCurrent, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{Expiring: others})
	if err != nil {
		t.Fatal(err)
	}
	if onlyCurrent.EntriesKept != 1 || onlyCurrent.EntriesDropped != 3 {
		t.Fatalf("compaction for the current snapshot %+v", onlyCurrent)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1)
}

// TestCompactKeepsForeignBlobs: an older segment shares its statistics file
// with Trino's sketches; compaction moves its entries into the current
// snapshot's segment and rewrites the older file with the sketches alone.
func TestCompactKeepsForeignBlobs(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 30, nil)
	registerTheta(t, cat, tbl)
	opts := indexer.Options{Columns: []string{"id"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	old := tbl.CurrentSnapshot().SnapshotID
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	tbl = appendRows(t, tbl, 30)
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1)
	var sawOld bool
	for _, sf := range statisticsFiles(tbl) {
		if sf.SnapshotID != old {
			continue
		}
		sawOld = true
		if len(sf.BlobMetadata) != 3 {
			t.Fatalf("old snapshot's statistics entry %+v: want the 3 sketch items only", sf.BlobMetadata)
		}
		r := openStatistics(t, tbl, sf)
		for _, b := range r.Blobs() {
			if index.IsEntry(b) {
				t.Fatal("the old snapshot's file still holds index entries")
			}
		}
		if len(r.Blobs()) != 3 {
			t.Fatalf("old file has %d blobs", len(r.Blobs()))
		}
	}
	if !sawOld {
		t.Fatal("the sketches' statistics file was removed")
	}
}

// registerTheta registers Trino's theta-sketch file as the current
// snapshot's statistics file.
func registerTheta(t *testing.T, cat *catalogtest.Catalog, tbl *table.Table) {
	t.Helper()
	theta := testfixture.ReadExternal(t, "puffin", "iceberg-python-trino", "theta-sketches.puffin")
	path := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "metadata", "trino-stats.puffin")
	if err := os.WriteFile(path, theta, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := puffin.Open(bytes.NewReader(theta), int64(len(theta)))
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	var items []table.BlobMetadata
	for _, b := range src.Blobs() {
		items = append(items, table.BlobMetadata{Type: table.BlobType(b.Type), SnapshotID: snap.SnapshotID,
			SequenceNumber: snap.SequenceNumber, Fields: b.Fields, Properties: b.Properties})
	}
	_, _, err = cat.CommitTable(ctx, tbl.Identifier(), nil, []table.Update{table.NewSetStatisticsUpdate(table.StatisticsFile{
		SnapshotID: snap.SnapshotID, StatisticsPath: "file://" + path, FileSizeInBytes: int64(len(theta)),
		FileFooterSizeInBytes: src.FooterSize(), BlobMetadata: items,
	})})
	if err != nil {
		t.Fatal(err)
	}
}

func openStatistics(t *testing.T, tbl *table.Table, sf table.StatisticsFile) *puffin.Reader {
	t.Helper()
	fs, _ := tbl.FS(ctx)
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := puffin.Open(f, sf.FileSizeInBytes, puffin.WithFooterSize(sf.FileFooterSizeInBytes))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRebuild replaces every segment by one fresh one.
func TestRebuild(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 20, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	for range 3 {
		if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
			t.Fatal(err)
		}
		tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
		tbl = appendRows(t, tbl, 20)
	}
	sum, err := indexer.Rebuild(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 5 || sum.Segments != 1 {
		t.Fatalf("rebuild %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if n := len(statisticsFiles(tbl)); n != 1 {
		t.Fatalf("%d statistics files after rebuild", n)
	}
	coveredByAll(t, tbl, 1)
}

// TestCompactDuringSync: a sync of the current snapshot commits between a
// compaction's plan and its commit; the compaction's commit replaces the
// sync's statistics file unseen, notices from the metadata it replaced, and
// merges the sync's entries in another pass, so neither run's work is lost.
func TestCompactDuringSync(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 30, nil)
	ids := indexer.Options{Columns: []string{"id"}}
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), ids); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	tbl = appendRows(t, tbl, 30)
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), ids); err != nil {
		t.Fatal(err)
	}
	racing := &racingCatalog{Catalog: cat, before: func() {
		if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"email"}}); err != nil {
			t.Error(err)
		}
	}}
	sum, err := indexer.Compact(ctx, racing, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1, 2)
	if n := len(statisticsFiles(tbl)); n != 1 || sum.SegmentsAfter != 1 {
		t.Fatalf("%d statistics files, summary %+v", n, sum)
	}
}

// TestSyncCompactsPastThreshold: sync itself compacts the index once it
// has more segments than CompactAbove, so segments stay bounded however
// many small appends it follows.
func TestSyncCompactsPastThreshold(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 1, 10, nil)
	opts := indexer.Options{Columns: []string{"id"}, CompactAbove: 3}
	compactions := 0
	for i := range 8 {
		sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Compacted != nil {
			compactions++
		}
		if sum.Segments > 3 {
			t.Fatalf("sync %d left %d segments", i, sum.Segments)
		}
		tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
		if n := len(statisticsFiles(tbl)); n != sum.Segments {
			t.Fatalf("sync %d reports %d segments, the table lists %d", i, sum.Segments, n)
		}
		tbl = appendRows(t, tbl, 10)
	}
	if compactions == 0 {
		t.Fatal("no sync compacted")
	}
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1)
}

// conflicting is a catalog whose commit number failAt (from 1) fails as a
// commit that lost a race to another writer does.
type conflicting struct {
	icecatalog.Catalog
	commits, failAt int
}

func (c *conflicting) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.commits++; c.commits == c.failAt {
		return nil, "", fmt.Errorf("injected conflict: %w", table.ErrCommitFailed)
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestCompactLogsRetries: a compaction's commit that conflicts is retried
// and logged as a warning to the compaction's logger, whether the
// compaction is run on its own or by a sync past its threshold.
func TestCompactLogsRetries(t *testing.T) {
	warnings := func(t *testing.T, logged *bytes.Buffer, ident table.Identifier) {
		t.Helper()
		var rec struct{ Level, Msg, Table string }
		if err := json.Unmarshal(logged.Bytes(), &rec); err != nil || rec.Level != "WARN" || rec.Table != strings.Join(ident, ".") ||
			!strings.Contains(rec.Msg, "retrying") {
			t.Errorf("logged %q (%v), want one warning of a retried commit naming the table", logged.String(), err)
		}
	}
	segments := func(t *testing.T) (*catalogtest.Catalog, table.Identifier) {
		cat, tbl, _ := eventsTable(t, 1, 20, nil)
		opts := indexer.Options{Columns: []string{"id"}, CompactAbove: -1}
		for range 3 {
			if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
				t.Fatal(err)
			}
			tbl = appendRows(t, tbl, 20)
		}
		return cat, tbl.Identifier()
	}

	t.Run("compact", func(t *testing.T) {
		cat, ident := segments(t)
		var logged bytes.Buffer
		raced := &conflicting{Catalog: cat, failAt: 1}
		sum, err := indexer.Compact(ctx, raced, ident, indexer.CompactOptions{Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
		if err != nil || sum.SegmentsAfter != 1 || raced.commits != 2 {
			t.Fatalf("compact: %+v, %d commits, %v; want 1 segment after 2 commits", sum, raced.commits, err)
		}
		warnings(t, &logged, ident)
	})
	t.Run("sync", func(t *testing.T) {
		cat, ident := segments(t)
		var logged bytes.Buffer
		raced := &conflicting{Catalog: cat, failAt: 2} // the sync's own commit succeeds, its compaction's conflicts
		sum, err := indexer.Sync(ctx, raced, ident, indexer.Options{Columns: []string{"id"}, CompactAbove: 1,
			Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
		if err != nil || sum.Compacted == nil || sum.Segments != 1 || raced.commits != 3 {
			t.Fatalf("sync: %+v, %d commits, %v; want a compaction to 1 segment, 3 commits", sum, raced.commits, err)
		}
		warnings(t, &logged, ident)
	})
}
