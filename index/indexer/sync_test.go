package indexer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// TestSyncIndexesOnlyNewFiles: after a build and an append, sync reads only
// the new file, attaches a segment to the new snapshot, and leaves every
// live file covered; a second sync with nothing new commits nothing; a sync
// of the same snapshot that indexes more (a newly configured column) keeps
// the earlier sync's entries, which set-statistics would otherwise replace.
func TestSyncIndexesOnlyNewFiles(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 3, 100, nil)
	opts := indexer.Options{Columns: []string{"id", "email"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	rec := eventsRecord(t, tbl.Schema(), randomRows(newRand(), 50))
	tbl = catalogtest.Append(t, tbl, rec)
	rec.Release()

	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 1 || sum.FilesCovered != 3 || sum.FilesTotal != 4 || sum.Blobs != 2 {
		t.Fatalf("sync %+v, want only the appended file read", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	segments := 0
	for range tbl.Metadata().Statistics() {
		segments++
	}
	if segments != 2 {
		t.Fatalf("%d statistics files, want the build's and the sync's", segments)
	}
	_, entries := indexOf(t, tbl) // the current snapshot's segment: the new file only
	if len(entries) != 1 {
		t.Fatalf("the sync's segment holds %d files, want 1", len(entries))
	}
	coveredByAll(t, tbl, 1, 2)

	before := tbl.MetadataLocation()
	again, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.FilesIndexed != 0 || again.FilesCovered != 4 || again.StatisticsPath != "" {
		t.Fatalf("second sync %+v, want nothing to do", again)
	}
	if tbl, _ = cat.LoadTable(ctx, tbl.Identifier()); tbl.MetadataLocation() != before {
		t.Fatal("a sync with nothing new committed")
	}

	// A column added to the configuration makes every file uncovered.
	wider, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	if wider.FilesIndexed != 4 {
		t.Fatalf("sync with a new column %+v", wider)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries = indexOf(t, tbl)
	if len(entries) != 4 {
		t.Fatalf("the current snapshot's segment covers %d files, want its earlier entries kept and 3 more", len(entries))
	}
	coveredByAll(t, tbl, 1, 2, 5)
}

// coveredByAll checks, through the table's whole index (all segments),
// that every live data file has an applicable entry for each field.
func coveredByAll(t *testing.T, tbl *table.Table, fieldIDs ...int) {
	t.Helper()
	ix := loadIndex(t, tbl)
	for _, df := range liveFiles(t, tbl) {
		for _, id := range fieldIDs {
			if _, ok := ix.Lookup(df.FilePath(), df.FileSizeBytes(), id); !ok {
				t.Errorf("%s is not covered for field %d", df.FilePath(), id)
			}
		}
	}
}

// racingCatalog runs before() once, right before the first commit reaches
// the catalog: another run's whole commit lands between this run's load
// and its commit.
type racingCatalog struct {
	*catalogtest.Catalog
	before func()
}

func (c *racingCatalog) CommitTable(ctx2 context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if c.before != nil {
		before := c.before
		c.before = nil
		before()
	}
	return c.Catalog.CommitTable(ctx2, ident, reqs, ups)
}

// TestConcurrentSyncsKeepBothCommits: two syncs of the same snapshot index
// different columns at once. The second to commit replaces the first's
// statistics file without having seen it (Iceberg cannot refuse that), then
// notices from the metadata it replaced and commits again with both, so no
// commit is lost.
func TestConcurrentSyncsKeepBothCommits(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 50, nil)
	racing := &racingCatalog{Catalog: cat, before: func() {
		if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"email"}}); err != nil {
			t.Error(err)
		}
	}}
	sum, err := indexer.Sync(ctx, racing, tbl.Identifier(), indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 {
		t.Fatalf("sync %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1, 2)
	n := 0
	for range tbl.Metadata().Statistics() {
		n++
	}
	if n != 1 {
		t.Fatalf("%d statistics files, want the one merged segment of the snapshot", n)
	}
}

// filtersPerFileAndField counts, over every segment of the table's index,
// the filters of each (data file, field).
func filtersPerFileAndField(t *testing.T, tbl *table.Table) map[string]map[int]int {
	t.Helper()
	ix := loadIndex(t, tbl)
	out := map[string]map[int]int{}
	for _, seg := range ix.Segments() {
		for f := range seg.Filters() {
			if out[f.DataFile] == nil {
				out[f.DataFile] = map[int]int{}
			}
			out[f.DataFile][f.FieldID]++
		}
	}
	return out
}

// columnReport returns the summary's report of a column.
func columnReport(t *testing.T, sum *indexer.Summary, name string) indexer.ColumnSummary {
	t.Helper()
	for _, c := range sum.PerColumn {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no report of column %s in %+v", name, sum.PerColumn)
	return indexer.ColumnSummary{}
}

// TestIndexRemembersItsColumns: after a build naming its columns and an
// append, sync, rebuild and compaction need no columns named: the columns
// the index holds are indexed columns.
func TestIndexRemembersItsColumns(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 50, nil)
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email"}}); err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, 20)

	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{})
	if err != nil {
		t.Fatalf("sync with no columns named: %v", err)
	}
	if sum.FilesIndexed != 1 || sum.FilesCovered != 2 || strings.Join(sum.Columns, ",") != "email,id" {
		t.Fatalf("sync %+v, want the appended file indexed for email and id", sum)
	}
	for _, name := range []string{"id", "email"} {
		if c := columnReport(t, sum, name); strings.Join(c.Sources, ",") != indexer.SourceIndex || c.FilesCovered != 2 || c.FilesRead != 1 || c.FilesIndexed != 1 {
			t.Errorf("sync's report of %s: %+v", name, c)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1, 2)

	rebuilt, err := indexer.Rebuild(ctx, cat, tbl.Identifier(), indexer.Options{})
	if err != nil {
		t.Fatalf("rebuild with no columns named: %v", err)
	}
	if rebuilt.FilesIndexed != 3 || rebuilt.Segments != 1 || strings.Join(rebuilt.Columns, ",") != "email,id" {
		t.Fatalf("rebuild %+v", rebuilt)
	}
	tbl = appendRows(t, tbl, 20)
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{CompactAbove: -1}); err != nil {
		t.Fatal(err)
	}
	cs, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{})
	if err != nil || cs.SegmentsAfter != 1 || cs.EntriesKept != 8 {
		t.Fatalf("compact-index: %+v, %v", cs, err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1, 2)
}

// TestSyncAddsAColumnOnly: a column added to an index of other columns
// (named, or enabled by a table property) is read for every live file, the
// covered files' other columns are neither read nor written again — one
// filter per (file, column) in the whole index — new files get every
// column, and lookups on the added column prune.
func TestSyncAddsAColumnOnly(t *testing.T) {
	cat, tbl, rows := eventsTable(t, 3, 50, nil)
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "uid"}}); err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, 30)

	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"email"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 4 || sum.Blobs != 3*1+1*3 {
		t.Fatalf("sync %+v, want email of the 3 covered files and all of the new one", sum)
	}
	for _, want := range []indexer.ColumnSummary{
		{Name: "email", Sources: []string{indexer.SourceNamed}, FilesCovered: 0, FilesRead: 4, FilesIndexed: 4},
		{Name: "id", Sources: []string{indexer.SourceIndex}, FilesCovered: 3, FilesRead: 1, FilesIndexed: 1},
		{Name: "uid", Sources: []string{indexer.SourceIndex}, FilesCovered: 3, FilesRead: 1, FilesIndexed: 1},
	} {
		got := columnReport(t, sum, want.Name)
		if strings.Join(got.Sources, ",") != strings.Join(want.Sources, ",") || got.FilesCovered != want.FilesCovered ||
			got.FilesRead != want.FilesRead || got.FilesIndexed != want.FilesIndexed || got.FilesFailedCount != 0 {
			t.Errorf("report of %s: %+v, want %+v", want.Name, got, want)
		}
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	counts := filtersPerFileAndField(t, tbl)
	files := liveFiles(t, tbl)
	for _, df := range files {
		for _, id := range []int{1, 2, 3} {
			if n := counts[df.FilePath()][id]; n != 1 {
				t.Errorf("%s has %d filters of field %d, want 1", df.FilePath(), n, id)
			}
		}
	}

	// Lookups on the added column prune: a value of the first file keeps
	// it and drops (nearly) every other.
	email := rows[0][7].email
	res, err := lookup.Plan(ctx, tbl, iceberg.EqualTo(iceberg.Reference("email"), email), lookup.Options{})
	if err != nil || len(res.IndexErrors) > 0 {
		t.Fatal(err, res.IndexErrors)
	}
	kept := map[string]bool{}
	for _, task := range res.Candidates {
		kept[task.File.FilePath()] = true
	}
	first, err := tbl.Scan(table.WithSnapshotID(tbl.Metadata().Snapshots()[0].SnapshotID)).PlanFiles(ctx)
	if err != nil || len(first) != 1 {
		t.Fatal("the first append's file:", err)
	}
	if !kept[first[0].File.FilePath()] || len(res.Candidates) >= len(res.AfterStats) || len(res.Unindexed) > 0 {
		t.Fatalf("email = %q kept %d of %d files (unindexed %v), want its file and fewer", email, len(res.Candidates), len(res.AfterStats), res.Unindexed)
	}

	// The same through a table property, on the next sync: only the
	// newly enabled column is read for the covered files.
	tbl = setProperty(t, tbl, indexer.PropBloomEnabledPrefix+"day", "true")
	sum, err = indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if day := columnReport(t, sum, "day"); sum.Blobs != 4 || day.FilesRead != 4 || strings.Join(day.Sources, ",") != indexer.SourceProperty {
		t.Fatalf("sync after enabling day: %+v, day %+v", sum, day)
	}
	for _, name := range []string{"email", "id", "uid"} {
		if c := columnReport(t, sum, name); c.FilesRead != 0 || c.FilesCovered != 4 {
			t.Errorf("report of %s after enabling day: %+v, want nothing read", name, c)
		}
	}
}

// setProperty commits a table property.
func setProperty(t *testing.T, tbl *table.Table, key, value string) *table.Table {
	t.Helper()
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{key: value}); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestDropColumns: compact-index's DropColumns removes a column's filters
// from every segment; lookups on it then keep every file, a sync does not
// index it again unless it is named; dropping a column the index does not
// hold, or one a table property enables, is an error naming it.
func TestDropColumns(t *testing.T) {
	cat, tbl, rows := eventsTable(t, 3, 50, iceberg.Properties{indexer.PropBloomEnabledPrefix + "id": "true"})
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"email", "day"}}); err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, 20)
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{CompactAbove: -1}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ drop, want string }{
		{"score", `drop column "score": the index holds no filters of it`},
		{"nope", `drop column "nope": column "nope" is not in the table schema`},
		{"ID", `drop column "ID": table property write.parquet.bloom-filter-enabled.column.id=true enables it, so the next sync would index it again; unset the property first`},
	} {
		_, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{DropColumns: []string{tc.drop}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drop %s: %v, want %q", tc.drop, err, tc.want)
		}
	}

	cs, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{DropColumns: []string{"Email"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.DroppedColumns) != 1 || cs.DroppedColumns[0] != (indexer.DroppedColumn{Name: "email", FieldID: 2, Filters: 4}) ||
		cs.SegmentsAfter != 1 || cs.EntriesKept != 8 {
		t.Fatalf("compaction dropping email: %+v", cs)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	for file, byField := range filtersPerFileAndField(t, tbl) {
		if byField[2] != 0 || byField[1] != 1 || byField[5] != 1 {
			t.Errorf("%s after the drop: filters by field %v", file, byField)
		}
	}
	res, err := lookup.Plan(ctx, tbl, iceberg.EqualTo(iceberg.Reference("email"), rows[0][3].email), lookup.Options{})
	if err != nil || len(res.Candidates) != len(res.AfterStats) || len(res.Candidates) != 4 {
		t.Fatalf("lookup on the dropped column kept %d of %d files: %v", len(res.Candidates), len(res.AfterStats), err)
	}

	tbl = appendRows(t, tbl, 20)
	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{})
	if err != nil || strings.Join(sum.Columns, ",") != "day,id" || sum.FilesIndexed != 1 {
		t.Fatalf("sync after the drop: %+v, %v; want email no longer indexed", sum, err)
	}
	if _, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{DropColumns: []string{"email"}}); err == nil ||
		!strings.Contains(err.Error(), `drop column "email": the index holds no filters of it`) {
		t.Errorf("dropping email twice: %v", err)
	}
	sum, err = indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"email"}})
	if err != nil || columnReport(t, sum, "email").FilesIndexed != 5 {
		t.Fatalf("sync naming email again: %+v, %v", sum, err)
	}
}

// TestHeldColumnsFollowTheSchema: the index's columns are field ids, so a
// renamed column stays indexed under its new name; a column the schema
// dropped is reported as no longer indexed, not an error, and can be
// dropped from the index by its former name.
func TestHeldColumnsFollowTheSchema(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 30, nil)
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email", "day"}}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	txn := tbl.NewTransaction()
	if err := txn.UpdateSchema(true, false).RenameColumn([]string{"email"}, "mail").DeleteColumn([]string{"day"}).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{CompactAbove: -1})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sum.Columns, ",") != "id,mail" || sum.FilesCovered != 2 || len(sum.NotIndexed) != 1 ||
		sum.NotIndexed[0] != (indexer.NotIndexed{FieldID: 5, Name: "day", Reason: "no longer in the table schema"}) {
		t.Fatalf("sync after a rename and a drop: %+v", sum)
	}
	cs, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{DropColumns: []string{"day"}})
	if err != nil || len(cs.DroppedColumns) != 1 || cs.DroppedColumns[0].Filters != 2 {
		t.Fatalf("dropping the column the schema dropped: %+v, %v", cs, err)
	}
	if sum, err = indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{}); err != nil || len(sum.NotIndexed) != 0 {
		t.Fatalf("sync after dropping it from the index too: %+v, %v", sum, err)
	}
}

// TestExactColumns: with ExactColumns a build indexes the columns named
// and no other, whatever the index holds or table properties enable (the
// benchmarks time one column set after another on one table).
func TestExactColumns(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 20, iceberg.Properties{indexer.PropBloomEnabledPrefix + "day": "true"})
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.WithExactColumns(indexer.Options{Columns: []string{"email"}}))
	if err != nil || strings.Join(sum.Columns, ",") != "email" || sum.Blobs != 2 {
		t.Fatalf("exact build of email: %+v, %v", sum, err)
	}
	sum, err = indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}})
	if err != nil || strings.Join(sum.Columns, ",") != "id,day,email" {
		t.Fatalf("build adding to what the index holds: %+v, %v", sum, err)
	}
}

// BenchmarkSyncAddColumn times a sync that adds a column (day) to an index
// of three others on a table of 8 files × 20,000 rows: the covered files
// are read for that column alone. Each iteration first drops day from the
// index again (untimed). read-ms/op is the summary's ReadTime, the reading
// and hashing of data files.
func BenchmarkSyncAddColumn(b *testing.B) {
	cat := catalogtest.NewCatalog(b)
	tbl := cat.NewTable(b, "events", eventsSchema, nil)
	rng := newRand()
	for range 8 {
		rec := eventsRecord(b, tbl.Schema(), randomRows(rng, 20_000))
		tbl = catalogtest.Append(b, tbl, rec)
		rec.Release()
	}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email", "uid"}}); err != nil {
		b.Fatal(err)
	}
	var read time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i > 0 {
			if _, err := indexer.Compact(ctx, cat, tbl.Identifier(), indexer.CompactOptions{DropColumns: []string{"day"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"day"}, Parallel: 1})
		if err != nil {
			b.Fatal(err)
		}
		if sum.Blobs != 8 {
			b.Fatalf("sync wrote %d filters, want day's of the 8 files", sum.Blobs)
		}
		read += sum.ReadTime
	}
	b.ReportMetric(float64(read.Milliseconds())/float64(b.N), "read-ms/op")
}

// TestMergeBackSurvivesAThirdCommit: a sync of id replaces a sync of email
// unseen and merges it back; before the merge-back commits, a sync of uid
// commits on top of the first commit, so the next attempt's base lacks
// email. Every column stays covered.
func TestMergeBackSurvivesAThirdCommit(t *testing.T) {
	// id covers the first file; the run syncing id then indexes the
	// second alone, so the email filters it merges back are of a file it
	// does not index itself.
	cat, tbl, _ := eventsTable(t, 1, 50, nil)
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.WithExactColumns(indexer.Options{Columns: []string{"id"}})); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	tbl = appendRows(t, tbl, 50)
	syncOf := func(col string) func() {
		return func() {
			if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), indexer.WithExactColumns(indexer.Options{Columns: []string{col}})); err != nil {
				t.Error(err)
			}
		}
	}
	hooked := &commitHooks{Catalog: cat, hooks: []func(){syncOf("email"), syncOf("uid")}}
	if _, err := indexer.Sync(ctx, hooked, tbl.Identifier(), indexer.WithExactColumns(indexer.Options{Columns: []string{"id"}})); err != nil {
		t.Fatal(err)
	}
	if hooked.n < 3 {
		t.Fatalf("%d commits: the race did not happen", hooked.n)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredByAll(t, tbl, 1, 2, 3)
}

// TestFilesCoveredTwiceReportedAndRepaired: an index holding two filters
// of the same files (a second build of a later snapshot, which covers
// every file again) fails verify, naming the column; one maintain's sync
// finds the duplicates and compacts them away, whatever the threshold:
// each file covered once and verify passes (before, verify passed and
// maintain left the duplicates).
func TestFilesCoveredTwiceReportedAndRepaired(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 4, 50, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, 10)
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !slices.ContainsFunc(rep.Problems, func(p string) bool {
		return strings.HasPrefix(p, "column id (field 1): 4 live data files have more than one filter")
	}) {
		t.Fatalf("verify of an index covering 4 files twice: %q", rep.Problems)
	}
	r := maintenance.MaintainTable(ctx, cat, tbl.Identifier(), maintenance.MaintainOptions{CompactAbove: -1})
	if r.Failed() || r.Sync == nil || r.Sync.FiltersDuplicated != 4 || r.Compact == nil {
		t.Fatalf("maintain %+v, sync %+v", r, r.Sync)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	coveredOnce(t, tbl, 1)
	lookupsKeepTrueFiles(t, tbl, rowsByFile)
	if rep, err := verify.Table(ctx, cat, tbl.Identifier(), verify.Options{Sample: 1}); err != nil || !rep.OK() {
		t.Fatalf("verify after maintain: %+v, %v", rep, err)
	}
}
