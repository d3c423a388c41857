package indexer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/internal/testfixture"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/puffin"
)

// TestForeignBlobsSurvive: the snapshot already has a statistics file with
// another tool's blobs (Trino's theta sketches); the build's statistics file
// replaces it, so it must carry those blobs byte for byte and keep their
// blob-metadata items.
func TestForeignBlobsSurvive(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 100, nil)
	registerTheta(t, cat, tbl)
	theta := testfixture.ReadExternal(t, "puffin", "iceberg-python-trino", "theta-sketches.puffin")
	src, err := puffin.Open(bytes.NewReader(theta), int64(len(theta)))
	if err != nil {
		t.Fatal(err)
	}

	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"id", "email"}}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	sf, entries := indexOf(t, tbl)
	if len(entries) != 2 {
		t.Fatalf("entries for %d files", len(entries))
	}
	if len(sf.BlobMetadata) != 3+3 {
		t.Fatalf("blob-metadata %+v: want the 3 theta items, 2 index items and the directory", sf.BlobMetadata)
	}
	for i := range 3 {
		if sf.BlobMetadata[i].Type != "apache-datasketches-theta-v1" {
			t.Fatalf("item %d is %s", i, sf.BlobMetadata[i].Type)
		}
	}
	fs, _ := tbl.FS(ctx)
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := puffin.Open(f, sf.FileSizeInBytes)
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for i, b := range got.Blobs() {
		if index.IsIndexBlobType(b.Type) {
			continue
		}
		raw, err := got.ReadRawBlob(i)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := src.ReadRawBlob(copied)
		if !bytes.Equal(raw, want) || *b.CompressionCodec != "zstd" || b.Properties["ndv"] != "5" {
			t.Fatalf("theta blob %d not carried byte for byte: %+v", copied, b)
		}
		copied++
	}
	if copied != 3 {
		t.Fatalf("%d theta blobs carried, want 3", copied)
	}
}

// appendingCatalog makes a writer append to the table right before the
// index's commit reaches the catalog, as a concurrent job would.
type appendingCatalog struct {
	*catalogtest.Catalog
	t    *testing.T
	done bool
}

func (c *appendingCatalog) CommitTable(ctx2 context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if !c.done {
		c.done = true
		tbl, err := c.Catalog.LoadTable(ctx2, ident)
		if err != nil {
			c.t.Fatal(err)
		}
		rec := eventsRecord(c.t, tbl.Schema(), randomRows(newRand(), 10))
		catalogtest.Append(c.t, tbl, rec)
		rec.Release()
	}
	return c.Catalog.CommitTable(ctx2, ident, reqs, ups)
}

var _ icecatalog.Catalog = (*appendingCatalog)(nil)

// TestConcurrentAppend: an append committed while the index is built does
// not break the index's commit, and the index stays attached to the snapshot
// it was built from while the append's snapshot becomes current.
func TestConcurrentAppend(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 50, nil)
	built := tbl.CurrentSnapshot().SnapshotID
	ac := &appendingCatalog{Catalog: cat, t: t}
	sum, err := indexer.Build(ctx, ac, tbl.Identifier(), indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	if tbl.CurrentSnapshot().SnapshotID == built || len(tbl.Metadata().Snapshots()) != 3 {
		t.Fatal("the concurrent append is lost")
	}
	found := false
	for sf := range tbl.Metadata().Statistics() {
		found = found || sf.SnapshotID == built && sf.StatisticsPath == sum.StatisticsPath
	}
	if !found {
		t.Fatal("the index is not registered for the snapshot it was built from")
	}
}

// TestSchemaEvolution: a column added after the first file holds only NULLs
// there, so that file's entry is empty and answers no; an int column
// promoted to long hashes the old file's int32 data as long.
func TestSchemaEvolution(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true})
	tbl := cat.NewTable(t, "evolving", sc, nil)
	tbl = catalogtest.Append(t, tbl, intRecord(t, tbl, []int32{1, 2, 3}, nil))

	txn := tbl.NewTransaction()
	upd := txn.UpdateSchema(true, false).
		UpdateColumn([]string{"n"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}}).
		AddColumn([]string{"tag"}, iceberg.PrimitiveTypes.String, "", false, nil)
	if err := upd.Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl = catalogtest.Append(t, tbl, intRecord(t, tbl, []int32{3_000_000_000 - (1 << 31)}, []string{"x"}))

	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"n", "tag"}}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries := indexOf(t, tbl)
	files := liveFiles(t, tbl)
	if len(files) != 2 {
		t.Fatalf("%d files", len(files))
	}
	var old, recent map[int]indexed
	for _, df := range files {
		if entries[df.FilePath()][1].entry.NDV == 3 {
			old = entries[df.FilePath()]
		} else {
			recent = entries[df.FilePath()]
		}
	}
	if old == nil || recent == nil {
		t.Fatal("cannot tell the files apart")
	}
	for _, v := range []int64{1, 2, 3} {
		if old[1].entry.ValueType.String() != "long" || !old[1].mayContain(t, iceberg.Int64Literal(v)) {
			t.Errorf("old file: long %d not found (value type %s)", v, old[1].entry.ValueType)
		}
	}
	if old[2].entry.NDV != 0 || old[2].entry.Blocks != 1 || old[2].mayContain(t, iceberg.StringLiteral("x")) {
		t.Errorf("old file's entry for the added column: %+v", old[2].entry)
	}
	if !recent[2].mayContain(t, iceberg.StringLiteral("x")) || !recent[1].mayContain(t, iceberg.Int64Literal(3_000_000_000-(1<<31))) {
		t.Error("new file's values not found")
	}
}

// planKeeps reports whether lookup.Plan keeps the data file for filter.
func planKeeps(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression, path string) bool {
	t.Helper()
	res, err := lookup.Plan(ctx, tbl, filter, lookup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IndexErrors) > 0 {
		t.Fatalf("index errors: %v", res.IndexErrors)
	}
	for _, task := range res.Candidates {
		if task.File.FilePath() == path {
			return true
		}
	}
	return false
}

func intRecord(t *testing.T, tbl *table.Table, ns []int32, tags []string) arrow.RecordBatch {
	t.Helper()
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i, n := range ns {
		switch nb := b.Field(0).(type) {
		case *array.Int32Builder:
			nb.Append(n)
		case *array.Int64Builder:
			nb.Append(int64(n))
		}
		if tags != nil {
			b.Field(1).(*array.StringBuilder).Append(tags[i])
		}
	}
	return b.NewRecordBatch()
}

// TestExternalTables indexes the Iceberg tables Spark, Iceberg Java and
// DuckDB wrote (paths relative, registered in a SQLite catalog) and checks
// every value their EXPECTED.json lists for each live data file.
func TestExternalTables(t *testing.T) {
	root := catalogtest.CopyExternalTables(t)
	cat := catalogtest.NewCatalog(t)
	for _, tc := range externalTables(t, root) {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.base)
			ident := cat.Register(t, tc.name, tc.metadata)
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			for _, f := range tbl.Schema().Fields() {
				cols = append(cols, f.Name)
			}
			sum, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: cols})
			if err != nil {
				t.Fatal(err)
			}
			if sum.FilesIndexed != len(tc.files) || len(sum.FilesFailed) != 0 {
				t.Fatalf("summary %+v, want %d files indexed", sum, len(tc.files))
			}
			tbl, _ = cat.LoadTable(ctx, ident)
			_, entries := indexOf(t, tbl)
			checked := 0
			for path, fieldValues := range tc.files {
				byField := entries[path]
				if byField == nil {
					t.Fatalf("no entries for %s", path)
				}
				for fieldID, lits := range fieldValues {
					name, _ := tbl.Schema().FindColumnName(fieldID)
					for _, lit := range lits {
						checked++
						if !byField[fieldID].mayContain(t, lit) {
							t.Errorf("%s field %d: present value %v is pruned", path, fieldID, lit)
						}
						// And through the lookup API, which plans with iceberg-go
						// first: the file stays a candidate.
						if !planKeeps(t, tbl, iceberg.LiteralPredicate(iceberg.OpEQ, iceberg.Reference(name), lit), path) {
							t.Errorf("lookup %s = %v drops %s", name, lit, path)
						}
					}
				}
			}
			// Identity partition values, which writers may keep out of the file
			// (partition_integer's DuckDB files do), must be found too.
			for _, df := range liveFiles(t, tbl) {
				spec := tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
				for _, pf := range spec.Fields() {
					if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok {
						continue
					}
					v := df.Partition()[pf.FieldID]
					lit := iceberg.NewLiteral(v.(int32))
					checked++
					if !entries[df.FilePath()][pf.SourceID()].mayContain(t, lit) {
						t.Errorf("%s: its partition value %s = %v is pruned", df.FilePath(), pf.Name, v)
					}
				}
			}
			if checked == 0 {
				t.Fatal("no values checked")
			}
			t.Logf("%d files, %d blobs, %d values checked", sum.FilesIndexed, sum.Blobs, checked)
		})
	}
}

// TestInitialDefault: in a v3 table, a column added with a default reads as
// that default in files written before it, so their entries hold it.
func TestInitialDefault(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "v3", catalogtest.IDSchema, iceberg.Properties{"format-version": "3"})
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2)
	txn := tbl.NewTransaction()
	if err := txn.UpdateSchema(true, false).AddColumn([]string{"region"}, iceberg.PrimitiveTypes.String, "", false, iceberg.StringLiteral("eu")).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := tbl.Schema().FindFieldByName("region"); f.InitialDefault == nil {
		t.Fatalf("region has no initial default: %+v", f)
	}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), indexer.Options{Columns: []string{"region"}}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries := indexOf(t, tbl)
	if len(entries) != 1 {
		t.Fatalf("entries for %d files, want the one", len(entries))
	}
	field, _ := tbl.Schema().FindFieldByName("region")
	for path, byField := range entries {
		ix := byField[field.ID]
		if ix.entry.NDV != 1 || !ix.mayContain(t, iceberg.StringLiteral("eu")) {
			t.Errorf("%s: entry %+v does not hold the default", path, ix.entry)
		}
		if !planKeeps(t, tbl, iceberg.EqualTo(iceberg.Reference("region"), "eu"), path) {
			t.Errorf("lookup region = 'eu' drops %s", path)
		}
	}
}

// TestFileWithoutFieldIDs: a Parquet file written outside Iceberg (parquet-mr,
// no field ids) added with add_files is resolved through the table's name
// mapping; without a mapping it is reported and left unindexed, never
// indexed as if all its values were NULL.
func TestFileWithoutFieldIDs(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "String", Type: iceberg.PrimitiveTypes.String})
	tbl := cat.NewTable(t, "added", sc, nil)
	data := testfixture.ReadExternal(t, "parquet-bloom", "parquet-testing", "data_index_bloom_encoding_stats.parquet")
	local := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "external.parquet")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, []string{"file://" + local}, nil, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Metadata().NameMapping() == nil {
		t.Fatal("add_files set no name mapping")
	}
	opts := indexer.Options{Columns: []string{"String"}}
	sum, err := indexer.Build(ctx, cat, tbl.Identifier(), opts)
	if err != nil || sum.FilesIndexed != 1 {
		t.Fatalf("build with a name mapping: %+v, %v", sum, err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	_, entries := indexOf(t, tbl)
	for _, byField := range entries {
		for _, v := range []string{"Hello", "doing ", "dog"} {
			if !byField[1].mayContain(t, iceberg.StringLiteral(v)) {
				t.Errorf("%q pruned", v)
			}
		}
		if byField[1].entry.NDV != 14 {
			t.Errorf("ndv %d, want the file's 14", byField[1].entry.NDV)
		}
	}

	txn = tbl.NewTransaction()
	if err := txn.RemoveProperties([]string{table.DefaultNameMappingKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sum, err = indexer.Build(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 0 || len(sum.FilesFailed) != 1 || !strings.Contains(sum.FilesFailed[0].Error, "name mapping") {
		t.Fatalf("build without a name mapping: %+v", sum)
	}
}
