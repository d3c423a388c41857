package lookup

// Test fixture: real Iceberg tables in a SQLite catalog, written by
// iceberg-go, and an index built for them here, directly from the Parquet
// files with arrow-go's column readers. This builder is only a fixture for
// the reading side; the real one is index/indexer.

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/index/where"
	"github.com/icebloom/icebloom/puffin"
)

// column is a column of the test tables: its type, a generator of random
// values, how the lookup filter writes a value, and how arrow takes one.
type column struct {
	name    string
	typ     iceberg.Type
	random  func(*rand.Rand) any
	literal func(any) string
	append  func(array.Builder, any)
}

// mustParse parses a filter of the test, failing the test on an error.
func mustParse(t testing.TB, text string) iceberg.BooleanExpression {
	t.Helper()
	expr, err := where.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return expr
}

// quoted writes text as a filter literal.
func quoted(s string) string { return where.Quote(iceberg.StringLiteral(s)) }

// columns have random values over wide ranges, so that the min/max of a
// file of a few dozen rows spans almost all of them and statistics cannot
// prune: only the index can.
var columns = []column{
	{"id", iceberg.PrimitiveTypes.Int64,
		func(r *rand.Rand) any { return int64(r.Uint64()) },
		func(v any) string { return strconv.FormatInt(v.(int64), 10) },
		func(b array.Builder, v any) { b.(*array.Int64Builder).Append(v.(int64)) }},
	{"email", iceberg.PrimitiveTypes.String,
		func(r *rand.Rand) any { return fmt.Sprintf("u%x'%d@example.com", r.Uint32(), r.IntN(10)) },
		func(v any) string { return quoted(v.(string)) },
		func(b array.Builder, v any) { b.(*array.StringBuilder).Append(v.(string)) }},
	{"uid", iceberg.PrimitiveTypes.UUID,
		func(r *rand.Rand) any {
			var u uuid.UUID
			for i := range u {
				u[i] = byte(r.Uint32())
			}
			return u
		},
		func(v any) string { return quoted(v.(uuid.UUID).String()) },
		func(b array.Builder, v any) { b.(*extensions.UUIDBuilder).Append(v.(uuid.UUID)) }},
	{"amount", iceberg.DecimalTypeOf(12, 2),
		func(r *rand.Rand) any { return r.Int64N(2e10) - 1e10 }, // cents
		func(v any) string {
			c, sign := v.(int64), ""
			if c < 0 {
				c, sign = -c, "-"
			}
			return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
		},
		func(b array.Builder, v any) { b.(*array.Decimal128Builder).Append(decimal128.FromI64(v.(int64))) }},
	{"day", iceberg.PrimitiveTypes.Date,
		func(r *rand.Rand) any { return int32(r.IntN(40000)) }, // days since 1970
		func(v any) string { return quoted(time.Unix(int64(v.(int32))*86400, 0).UTC().Format(time.DateOnly)) },
		func(b array.Builder, v any) { b.(*array.Date32Builder).Append(arrow.Date32(v.(int32))) }},
	{"ts", iceberg.PrimitiveTypes.Timestamp,
		func(r *rand.Rand) any { return r.Int64N(4e15) }, // microseconds since 1970
		func(v any) string {
			return quoted(time.UnixMicro(v.(int64)).UTC().Format("2006-01-02T15:04:05.000000"))
		},
		func(b array.Builder, v any) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.(int64))) }},
	{"score", iceberg.PrimitiveTypes.Float64,
		func(r *rand.Rand) any { return r.Float64() * 1000 },
		func(v any) string { return strconv.FormatFloat(v.(float64), 'g', -1, 64) },
		func(b array.Builder, v any) { b.(*array.Float64Builder).Append(v.(float64)) }},
}

// qty is an int column without statistics, to be promoted to long.
var qty = column{"qty", iceberg.PrimitiveTypes.Int32,
	func(r *rand.Rand) any { return int32(r.Uint32()) },
	func(v any) string { return strconv.FormatInt(int64(v.(int32)), 10) },
	func(b array.Builder, v any) { b.(*array.Int32Builder).Append(v.(int32)) }}

func schemaOf(cols []column) *iceberg.Schema {
	fields := make([]iceberg.NestedField, len(cols))
	for i, c := range cols {
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c.name, Type: c.typ}
	}
	return iceberg.NewSchema(0, fields...)
}

// dataFile is a data file of a fixture table with the rows written to it.
type dataFile struct {
	path string
	size int64
	rows [][]any // by row, then column
}

// fixture is a table in its own catalog, the files appended to it and the
// values each column holds in the whole table.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	cat     *sqlcat.Catalog
	ident   table.Identifier
	tbl     *table.Table
	cols    []column
	rand    *rand.Rand
	files   []dataFile
	present []map[any]bool // by column
	// columnar counts the plans the columnar prober checked (plan);
	// uncrossed turns the check off, for a test counting the I/O of Plan.
	columnar  atomic.Int64
	uncrossed bool
	// grouped makes index write version 2 segments.
	grouped bool
}

func newFixture(t testing.TB, cols []column, props iceberg.Properties) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("test", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	tbl, err := cat.CreateTable(ctx, ident, schemaOf(cols), icecatalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{t: t, ctx: ctx, cat: cat, ident: ident, tbl: tbl, cols: cols, rand: rand.New(rand.NewPCG(1, 2))}
	for range cols {
		fx.present = append(fx.present, make(map[any]bool))
	}
	return fx
}

// appendFile appends n random rows, which iceberg-go writes as one data
// file, and returns it.
func (fx *fixture) appendFile(n int) dataFile {
	fx.t.Helper()
	sc, err := table.SchemaToArrowSchema(fx.tbl.Schema(), nil, false, false)
	if err != nil {
		fx.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	df := dataFile{rows: make([][]any, n)}
	for r := range df.rows {
		for i, c := range fx.cols {
			v := c.random(fx.rand)
			df.rows[r] = append(df.rows[r], v)
			fx.present[i][v] = true
			c.append(b.Field(i), v)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		fx.t.Fatal(err)
	}
	before := fx.liveFiles()
	if fx.tbl, err = fx.tbl.Append(fx.ctx, rdr, nil); err != nil {
		fx.t.Fatal(err)
	}
	var added []iceberg.DataFile
	for path, f := range fx.liveFiles() {
		if _, old := before[path]; !old {
			added = append(added, f)
		}
	}
	if len(added) != 1 {
		fx.t.Fatalf("append wrote %d data files, want 1", len(added))
	}
	df.path, df.size = added[0].FilePath(), added[0].FileSizeBytes()
	fx.files = append(fx.files, df)
	return df
}

// liveFiles returns the data files of the current snapshot by path.
func (fx *fixture) liveFiles() map[string]iceberg.DataFile {
	fx.t.Helper()
	tasks, err := fx.tbl.Scan().PlanFiles(fx.ctx)
	if err != nil {
		fx.t.Fatal(err)
	}
	files := make(map[string]iceberg.DataFile)
	for _, task := range tasks {
		files[task.File.FilePath()] = task.File
	}
	return files
}

// absent returns a random value of column i that no row of the table holds.
func (fx *fixture) absent(i int) any {
	for {
		if v := fx.cols[i].random(fx.rand); !fx.present[i][v] {
			return v
		}
	}
}

// where returns the lookup filter col = v for column i.
func (fx *fixture) where(i int, v any) iceberg.BooleanExpression {
	fx.t.Helper()
	return mustParse(fx.t, fx.cols[i].name+" = "+fx.cols[i].literal(v))
}

// indexBlob is an entry the fixture builder made, with its bitset and
// properties to override in its blob (to break it).
type indexBlob struct {
	entry index.Entry
	bits  []byte
	props map[string]string
}

// entries builds the entries of data files for every column of the table
// schema, reading each file through the table's FileIO.
func (fx *fixture) entries(files ...dataFile) []indexBlob {
	fx.t.Helper()
	fsys, err := fx.tbl.FS(fx.ctx)
	if err != nil {
		fx.t.Fatal(err)
	}
	snap := fx.tbl.CurrentSnapshot()
	var blobs []indexBlob
	for _, df := range files {
		f, err := fsys.Open(df.path)
		if err != nil {
			fx.t.Fatal(err)
		}
		rdr, err := file.NewParquetReader(f)
		if err != nil {
			fx.t.Fatal(err)
		}
		sc := rdr.MetaData().Schema
		for i := range sc.NumColumns() {
			col := sc.Column(i)
			field, ok := fx.tbl.Schema().FindFieldByID(int(col.SchemaNode().FieldID()))
			if !ok {
				fx.t.Fatalf("%s: column %s has no field", df.path, col.Path())
			}
			typ := field.Type.(iceberg.PrimitiveType)
			hc, err := hashing.NewColumn(typ, col)
			if err != nil {
				fx.t.Fatal(err)
			}
			distinct := make(map[uint64]bool)
			for g := range rdr.NumRowGroups() {
				for _, h := range fx.hashChunk(rdr.RowGroup(g), i, hc) {
					distinct[h] = true
				}
			}
			n, err := sbbf.NumBlocks(uint64(len(distinct)), 0.01, 1<<20)
			if err != nil {
				fx.t.Fatal(err)
			}
			filter := sbbf.New(n)
			for h := range distinct {
				filter.Insert(h)
			}
			blobs = append(blobs, indexBlob{index.Entry{
				DataFile: df.path, DataFileSize: df.size, FieldID: field.ID, ValueType: typ,
				NDV: int64(len(distinct)), FPP: 0.01, SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
			}, filter.Bytes(), nil})
		}
		rdr.Close()
	}
	return blobs
}

// hashChunk hashes the values of column i of a row group with hc.
func (fx *fixture) hashChunk(rg *file.RowGroupReader, i int, hc *hashing.Column) []uint64 {
	fx.t.Helper()
	cr, err := rg.Column(i)
	if err != nil {
		fx.t.Fatal(err)
	}
	n := rg.NumRows()
	var hs []uint64
	switch cr := cr.(type) {
	case *file.Int32ColumnChunkReader:
		hs, err = readAndHash(cr.ReadBatch, hc.Int32s, n)
	case *file.Int64ColumnChunkReader:
		hs, err = readAndHash(cr.ReadBatch, hc.Int64s, n)
	case *file.Float64ColumnChunkReader:
		hs, err = readAndHash(cr.ReadBatch, hc.Float64s, n)
	case *file.ByteArrayColumnChunkReader:
		hs, err = readAndHash(cr.ReadBatch, hc.ByteArrays, n)
	case *file.FixedLenByteArrayColumnChunkReader:
		hs, err = readAndHash(cr.ReadBatch, hc.FixedLenByteArrays, n)
	default:
		err = fmt.Errorf("no reader for %T", cr)
	}
	if err != nil {
		fx.t.Fatalf("column %d: %v", i, err)
	}
	return hs
}

// readAndHash reads a column chunk of n rows in one batch and hashes its
// non-null values.
func readAndHash[T any](read func(int64, []T, []int16, []int16) (int64, int, error),
	hash func([]uint64, []T) ([]uint64, error), n int64) ([]uint64, error) {
	vals, def := make([]T, n), make([]int16, n)
	levels, got, err := read(n, vals, def, nil)
	if err == nil && levels != n {
		err = fmt.Errorf("read %d of %d rows", levels, n)
	}
	if err != nil {
		return nil, err
	}
	return hash(nil, vals[:got])
}

// writeSegment writes blobs to a Puffin file under the table's metadata
// location and returns its statistics entry for the current snapshot, with
// one blob-metadata item per indexed field (docs/format.md §7).
func (fx *fixture) writeSegment(blobs []indexBlob, foreign ...puffin.BlobInput) table.StatisticsFile {
	fx.t.Helper()
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		fx.t.Fatal(err)
	}
	snap := fx.tbl.CurrentSnapshot()
	sf := table.StatisticsFile{
		SnapshotID:     snap.SnapshotID,
		StatisticsPath: fmt.Sprintf("%s/metadata/icebloom-%d-%d.puffin", fx.tbl.Location(), snap.SnapshotID, fx.rand.Uint32()),
	}
	for _, in := range foreign {
		if _, err := w.AddBlob(in, []byte("theta sketch bytes")); err != nil {
			fx.t.Fatal(err)
		}
		sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{Type: table.BlobType(in.Type), SnapshotID: snap.SnapshotID, Fields: in.Fields})
	}
	perField := make(map[int]int)
	for _, b := range blobs {
		in := b.entry.BlobInput()
		maps.Copy(in.Properties, b.props)
		if _, err := w.AddBlob(in, b.bits); err != nil {
			fx.t.Fatal(err)
		}
		perField[b.entry.FieldID]++
	}
	for id := range len(fx.cols) + 1 {
		if perField[id] > 0 {
			sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
				Type: table.BlobType(index.BlobType), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
				Fields: []int32{int32(id)}, Properties: map[string]string{"entry-count": strconv.Itoa(perField[id])},
			})
		}
	}
	st, err := w.Finish()
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.upload(sf.StatisticsPath, buf.Bytes())
	sf.FileSizeInBytes, sf.FileFooterSizeInBytes = st.FileSize, st.FooterSize
	return sf
}

func (fx *fixture) upload(path string, data []byte) {
	fx.t.Helper()
	fsys, err := fx.tbl.FS(fx.ctx)
	if err != nil {
		fx.t.Fatal(err)
	}
	if err := fsys.(icebergio.WriteFileIO).WriteFile(path, data); err != nil {
		fx.t.Fatal(err)
	}
}

// register commits a statistics file to the catalog (replacing any of its
// snapshot) and reloads the table.
func (fx *fixture) register(sf table.StatisticsFile) {
	fx.t.Helper()
	reqs := []table.Requirement{table.AssertTableUUID(fx.tbl.Metadata().TableUUID())}
	if _, _, err := fx.cat.CommitTable(fx.ctx, fx.ident, reqs, []table.Update{table.NewSetStatisticsUpdate(sf)}); err != nil {
		fx.t.Fatal(err)
	}
	fx.reload()
}

func (fx *fixture) reload() {
	fx.t.Helper()
	var err error
	if fx.tbl, err = fx.cat.LoadTable(fx.ctx, fx.ident); err != nil {
		fx.t.Fatal(err)
	}
}

// index indexes files as one new segment of the current snapshot: of
// version 2 (groups, as the indexer writes them) when fx.grouped, else of
// version 1 (a blob per entry).
func (fx *fixture) index(files ...dataFile) {
	fx.t.Helper()
	if fx.grouped {
		fx.register(fx.writeGroups(fx.entries(files...)))
		return
	}
	fx.register(fx.writeSegment(fx.entries(files...)))
}

// writeGroups writes blobs as a version 2 segment of the current
// snapshot, with indexfile's writer, and returns its statistics entry.
func (fx *fixture) writeGroups(blobs []indexBlob) table.StatisticsFile {
	fx.t.Helper()
	fsys, err := fx.tbl.FS(fx.ctx)
	if err != nil {
		fx.t.Fatal(err)
	}
	snap := fx.tbl.CurrentSnapshot()
	path := fmt.Sprintf("%s/metadata/icebloom-%d-%d.puffin", fx.tbl.Location(), snap.SnapshotID, fx.rand.Uint32())
	w, err := indexfile.Create(fsys.(icebergio.WriteFileIO), path, segment.WriterOptions{SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}, time.Now)
	if err != nil {
		fx.t.Fatal(err)
	}
	for _, b := range blobs {
		e := b.entry
		if err := w.Add(segment.FilterInput{File: segment.File{Path: e.DataFile, Size: e.DataFileSize}, FieldID: e.FieldID,
			ValueType: e.ValueType, FPP: e.FPP, NDV: e.NDV, Bits: b.bits}); err != nil {
			fx.t.Fatal(err)
		}
	}
	f, err := w.Finish()
	if err != nil {
		fx.t.Fatal(err)
	}
	return f.StatisticsFile(snap, nil)
}
