package indexer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

var ctx = context.Background()

var eventsSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "uid", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
	iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 6, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 7, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
)

// row is one generated row; the literal of each column is what a query
// would compare with.
type row struct {
	id     int64
	email  string
	uid    uuid.UUID
	amount int64 // unscaled, scale 2
	day    int32
	ts     int64
	score  float64
}

func (r row) literals() map[string]iceberg.Literal {
	return map[string]iceberg.Literal{
		"id":     iceberg.Int64Literal(r.id),
		"email":  iceberg.StringLiteral(r.email),
		"uid":    iceberg.UUIDLiteral(r.uid),
		"amount": iceberg.DecimalLiteral(iceberg.Decimal{Val: decimal128.FromI64(r.amount), Scale: 2}),
		"day":    iceberg.DateLiteral(r.day),
		"ts":     iceberg.TimestampLiteral(r.ts),
		"score":  iceberg.Float64Literal(r.score),
	}
}

func randomRows(rng *rand.Rand, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{
			id: rng.Int64(), email: fmt.Sprintf("user%d@example.com", rng.IntN(1_000_000)),
			uid: uuid.Must(uuid.NewRandomFromReader(rngReader{rng})), amount: rng.Int64N(1e10) - 5e9,
			day: int32(rng.IntN(20_000)), ts: rng.Int64N(2e15), score: float64(rng.IntN(1000)) / 8,
		}
	}
	rows[0].score = negZero() // -0.0 must be found as 0.0
	return rows
}

func negZero() float64 { z := 0.0; return -z }

type rngReader struct{ *rand.Rand }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return len(p), nil
}

func eventsRecord(t testing.TB, sc *iceberg.Schema, rows []row) arrow.RecordBatch {
	t.Helper()
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.email)
		b.Field(2).(*extensions.UUIDBuilder).Append(r.uid)
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(r.amount))
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32(r.day))
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		b.Field(6).(*array.Float64Builder).Append(r.score)
	}
	// A NULL row in every nullable column: never inserted.
	b.Field(0).(*array.Int64Builder).Append(-1)
	for i := 1; i < len(b.Fields()); i++ {
		b.Field(i).AppendNull()
	}
	return b.NewRecordBatch()
}

// eventsTable creates db.events with files appends of rows each.
func eventsTable(t *testing.T, files, rowsPerFile int, props iceberg.Properties) (*catalogtest.Catalog, *table.Table, [][]row) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "events", eventsSchema, props)
	rng := rand.New(rand.NewPCG(1, 2))
	var all [][]row
	for range files {
		rows := randomRows(rng, rowsPerFile)
		rec := eventsRecord(t, tbl.Schema(), rows)
		tbl = catalogtest.Append(t, tbl, rec)
		rec.Release()
		all = append(all, rows)
	}
	return cat, tbl, all
}

// indexOf reads the committed index of the table's current snapshot: every
// entry with its bitset, by data file and field.
func indexOf(t *testing.T, tbl *table.Table) (table.StatisticsFile, map[string]map[int]indexed) {
	t.Helper()
	var sf *table.StatisticsFile
	for s := range tbl.Metadata().Statistics() {
		if s.SnapshotID == tbl.CurrentSnapshot().SnapshotID {
			s := s
			sf = &s
		}
	}
	if sf == nil {
		t.Fatal("no statistics file for the current snapshot")
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seg, err := index.ReadSegment(fs, *sf)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[int]indexed{}
	for e := range seg.Filters() {
		raw, err := index.ReadFilter(f, e)
		if err != nil {
			t.Fatal(err)
		}
		filter, err := sbbf.FromBytes(raw)
		if err != nil {
			t.Fatal(err)
		}
		if out[e.DataFile] == nil {
			out[e.DataFile] = map[int]indexed{}
		}
		out[e.DataFile][e.FieldID] = indexed{e, filter}
	}
	return *sf, out
}

type indexed struct {
	entry  index.StoredFilter
	filter sbbf.Filter
}

func (ix indexed) mayContain(t *testing.T, lit iceberg.Literal) bool {
	t.Helper()
	h, outcome, err := hashing.Literal(ix.entry.ValueType, lit)
	if err != nil {
		t.Fatal(err)
	}
	return outcome != hashing.NeverPresent && (outcome == hashing.CannotPrune || ix.filter.Check(h))
}

// liveFiles lists the current snapshot's data files in append order.
func liveFiles(t *testing.T, tbl *table.Table) []iceberg.DataFile {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]iceberg.DataFile, len(tasks))
	for i, task := range tasks {
		files[i] = task.File
	}
	return files
}

// TestBuildEndToEnd indexes a table written by iceberg-go and checks what was
// committed: one statistics file for the snapshot listing one blob-metadata
// item per column, one entry per data file and column covering the file by
// location and size, the exact distinct count, every present value found
// (including -0.0 as 0.0) and absent values rejected at about the target.
func TestBuildEndToEnd(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 4, 500, nil)
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{
		Columns: []string{"id", "email", "uid", "amount", "day", "ts", "score"}, Parallel: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesTotal != 4 || sum.FilesIndexed != 4 || len(sum.FilesFailed) != 0 || sum.Blobs != 28 {
		t.Fatalf("summary %+v", sum)
	}
	tbl, err = cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	sf, entries := indexOf(t, tbl)
	if sf.StatisticsPath != sum.StatisticsPath || sf.FileSizeInBytes != sum.IndexBytes {
		t.Fatalf("statistics entry %+v does not match the summary %+v", sf, sum)
	}
	if len(sf.BlobMetadata) != 8 {
		t.Fatalf("table metadata lists %d blob-metadata items, want one per column (7) and the directory", len(sf.BlobMetadata))
	}
	for _, bm := range sf.BlobMetadata[:7] {
		if bm.Type != table.BlobType(segment.GroupBlobType) || len(bm.Fields) != 1 || bm.Properties[indexfile.PropEntryCount] != "4" {
			t.Errorf("blob-metadata item %+v", bm)
		}
	}
	if dir := sf.BlobMetadata[7]; dir.Type != table.BlobType(segment.DirectoryBlobType) || len(dir.Fields) != 7 ||
		dir.Properties[segment.PropDirectoryOffset] == "" || dir.Properties[segment.PropDirectoryLength] == "" {
		t.Errorf("directory item %+v", dir)
	}
	files := liveFiles(t, tbl)
	if len(entries) != len(files) {
		t.Fatalf("%d files have entries, want %d", len(entries), len(files))
	}
	var distinct int64
	for _, df := range files {
		byField := entries[df.FilePath()]
		if len(byField) != 7 {
			t.Fatalf("%s has %d entries, want 7", df.FilePath(), len(byField))
		}
		for _, ix := range byField {
			if ix.entry.DataFile != df.FilePath() || ix.entry.DataFileSize != df.FileSizeBytes() {
				t.Fatalf("entry %+v does not cover %s (%d bytes)", ix.entry, df.FilePath(), df.FileSizeBytes())
			}
			distinct += ix.entry.NDV
		}
	}
	if distinct != sum.DistinctValues {
		t.Errorf("entries hold %d distinct values, the summary says %d", distinct, sum.DistinctValues)
	}

	// Which file holds which rows: match by the first row's id.
	ids := tbl.Schema()
	absentMisses, absentProbes := 0, 0
	rng := rand.New(rand.NewPCG(9, 9))
	for _, df := range files {
		byField := entries[df.FilePath()]
		rows := rowsOfFile(t, byField, rowsByFile)
		// Distinct values by canonical hash, so -0.0 and 0.0 count once; the
		// NULL row's required id is -1.
		exact := map[string]map[uint64]bool{"id": {hashing.Int64(-1): true}}
		for i, r := range rows {
			for col, lit := range r.literals() {
				field, _ := ids.FindFieldByName(col)
				ix := byField[field.ID]
				if !ix.mayContain(t, lit) {
					t.Fatalf("%s: present %s = %v is pruned", df.FilePath(), col, lit)
				}
				// Through the lookup API too, for a sample and for row 0,
				// whose score is -0.0.
				if (i == 0 || r.id%32 == 0) && !planKeeps(t, tbl, iceberg.LiteralPredicate(iceberg.OpEQ, iceberg.Reference(col), lit), df.FilePath()) {
					t.Fatalf("lookup %s = %v drops %s", col, lit, df.FilePath())
				}
				h, _, _ := hashing.Literal(ix.entry.ValueType, lit)
				if exact[col] == nil {
					exact[col] = map[uint64]bool{}
				}
				exact[col][h] = true
			}
		}
		for col, values := range exact {
			field, _ := ids.FindFieldByName(col)
			if got := byField[field.ID].entry.NDV; got != int64(len(values)) {
				t.Errorf("%s %s: ndv %d, the file holds %d distinct values", df.FilePath(), col, got, len(values))
			}
		}
		idField, _ := ids.FindFieldByName("id")
		for range 2000 {
			absentProbes++
			if byField[idField.ID].mayContain(t, iceberg.Int64Literal(rng.Int64())) {
				absentMisses++
			}
		}
	}
	if rate := float64(absentMisses) / float64(absentProbes); rate > 0.02 {
		t.Errorf("absent ids pass %.4f of the time, target 0.01", rate)
	}
}

// rowsOfFile finds which generated batch a file holds by its id filter.
func rowsOfFile(t *testing.T, byField map[int]indexed, rowsByFile [][]row) []row {
	t.Helper()
	for _, rows := range rowsByFile {
		all := true
		for _, r := range rows[:20] {
			if !byField[1].mayContain(t, iceberg.Int64Literal(r.id)) {
				all = false
				break
			}
		}
		if all {
			return rows
		}
	}
	t.Fatal("no batch of rows matches the file")
	return nil
}

// TestColumnsFromTableProperties: without --columns the table's Parquet
// bloom-filter properties choose the columns and their rates; without those
// the build refuses with an error saying what to do.
func TestColumnsFromTableProperties(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 1, 50, iceberg.Properties{
		indexer.PropBloomEnabledPrefix + "email": "true",
		indexer.PropBloomEnabledPrefix + "id":    "true",
		indexer.PropBloomEnabledPrefix + "score": "false",
		indexer.PropBloomFPPPrefix + "email":     "0.001",
	})
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sum.Columns, ",") != "email,id" {
		t.Fatalf("columns %v", sum.Columns)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries := indexOf(t, tbl)
	for _, byField := range entries {
		if byField[2].entry.FPP != 0.001 || byField[1].entry.FPP != indexer.DefaultFPP {
			t.Errorf("fpp %v and %v, want 0.001 and the default", byField[2].entry.FPP, byField[1].entry.FPP)
		}
	}

	plainCat, plain, _ := eventsTable(t, 1, 10, nil)
	_, err = indexer.Build(ctx, plainCat, plain.Identifier(), indexer.Options{})
	if err == nil || !strings.Contains(err.Error(), indexer.PropBloomEnabledPrefix) {
		t.Errorf("no columns: %v", err)
	}
	for _, cols := range [][]string{{"nope"}, {"id", "nope"}} {
		if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: cols}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("columns %v: %v", cols, err)
		}
	}
}

// TestCorruptDataFile: a data file that is not Parquet is reported with its
// path and left unindexed, the others are indexed and committed; with
// FailFast the build fails and commits nothing.
func TestCorruptDataFile(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 3, 100, nil)
	files := liveFiles(t, tbl)
	bad := files[1].FilePath()
	if err := os.WriteFile(strings.TrimPrefix(bad, "file://"), []byte("not a parquet file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tbl.MetadataLocation()
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}, FailFast: true}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("FailFast: %v, want an error naming %s", err, bad)
	}
	if tbl, _ := cat.LoadTable(ctx, tbl.Identifier()); tbl.MetadataLocation() != before {
		t.Fatal("a failed build changed the table metadata")
	}
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 || len(sum.FilesFailed) != 1 || sum.FilesFailed[0].Path != bad {
		t.Fatalf("summary %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if _, entries := indexOf(t, tbl); entries[bad] != nil || len(entries) != 2 {
		t.Fatalf("entries for %d files, bad file indexed: %v", len(entries), entries[bad] != nil)
	}
}

// TestFormatVersion1: v1 tables (manifests without content types or
// sequence numbers) are walked and indexed like v2 ones.
func TestFormatVersion1(t *testing.T) {
	cat, tbl, rowsByFile := eventsTable(t, 2, 100, iceberg.Properties{"format-version": "1"})
	if v := tbl.Metadata().Version(); v != 1 {
		t.Fatalf("table format version %d, want 1", v)
	}
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 || sum.Blobs != 4 {
		t.Fatalf("summary %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries := indexOf(t, tbl)
	for _, df := range liveFiles(t, tbl) {
		rows := rowsOfFile(t, entries[df.FilePath()], rowsByFile)
		for _, r := range rows {
			if !entries[df.FilePath()][2].mayContain(t, iceberg.StringLiteral(r.email)) {
				t.Fatalf("%s: email %s pruned", df.FilePath(), r.email)
			}
		}
	}
}
