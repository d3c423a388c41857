// Package smallfiles makes the bench's tables of many tiny data files (the
// tables of bench --scale, --serve, --shards and --s3-floor): Parquet files
// of a required long column id and a required string column name, written
// without field ids as a file from outside Iceberg would be, and registered
// with add_files commits, so that a table's size is its file count.
package smallfiles

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
)

const (
	// IDCol and NameCol are the tables' columns.
	IDCol   = "id"
	NameCol = "name"
	// Rows is the row count of each data file: the files are tiny, so
	// that the table's size is its file count.
	Rows = 20
	// MaxID is the largest id; ids are even, and every file holds 0 and
	// MaxID, so min/max statistics keep every file for any id.
	MaxID = 2 << 40
	// AbsentID is odd, so no file holds it, and within every file's
	// min/max.
	AbsentID = 12345677
)

// Put stores a data file named base of the table at location and returns
// the file's location.
type Put func(location, base string, data []byte) (string, error)

// Table is a generated table: its data file locations in order, an id each
// file holds, and the writer of further files.
type Table struct {
	Ident    table.Identifier
	Name     string
	Location string   // the table's
	Paths    []string // the data files, in the order written
	Present  []int64  // an id of each file, in the order of Paths
	rng      *rand.Rand
	put      Put
}

// Schema is the tables' Iceberg schema: id (long) and name (string), both
// required.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: IDCol, Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: NameCol, Type: iceberg.PrimitiveTypes.String, Required: true},
	)
}

// Create creates table ident of Schema in cat and registers n generated
// data files, stored with put, with one add_files commit. The files depend
// only on n.
func Create(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, n int, put Put) (*Table, error) {
	t := &Table{Ident: ident, Name: strings.Join(ident, "."), put: put,
		rng: rand.New(rand.NewPCG(uint64(n), Rows))}
	tbl, err := cat.CreateTable(ctx, ident, Schema())
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", t.Name, err)
	}
	t.Location = tbl.Location()
	paths, err := t.WriteFiles(n)
	if err != nil {
		return nil, err
	}
	if err := t.AddFiles(ctx, cat, paths); err != nil {
		return nil, err
	}
	return t, nil
}

// WriteFiles writes the next n data files, as many at a time as
// GOMAXPROCS (at least two), and returns their locations; AddFiles
// registers them.
func (t *Table) WriteFiles(n int) ([]string, error) {
	first := len(t.Paths)
	ids := make([][]int64, n)
	names := make([][]string, n)
	for i := range n { // drawn in order, so the files do not depend on the workers
		ids[i], names[i] = file1(t.rng)
	}
	for i := range n {
		t.Present = append(t.Present, ids[i][2])
	}
	paths := make([]string, n)
	var g errgroup.Group
	g.SetLimit(max(runtime.GOMAXPROCS(0), 2))
	for i := range n {
		g.Go(func() error {
			var buf bytes.Buffer
			if err := WriteFile(&buf, ids[i], names[i]); err != nil {
				return err
			}
			loc, err := t.put(t.Location, fmt.Sprintf("f%07d.parquet", first+i), buf.Bytes())
			paths[i] = loc
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return paths, nil
}

// AddFiles registers paths with one add_files commit and appends them to
// t.Paths.
func (t *Table) AddFiles(ctx context.Context, cat icecatalog.Catalog, paths []string) error {
	if err := AddFiles(ctx, cat, t.Ident, paths); err != nil {
		return err
	}
	t.Paths = append(t.Paths, paths...)
	return nil
}

// AddFiles registers paths with table ident of cat in one add_files commit.
func AddFiles(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, paths []string) error {
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, paths, nil, false); err != nil {
		return fmt.Errorf("add %d files to %s: %w", len(paths), name, err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("commit %s: %w", name, err)
	}
	return nil
}

// file1 draws one file's rows: even ids and hex names, the first two rows
// the smallest and largest of the whole table, so that min/max statistics
// keep every file.
func file1(rng *rand.Rand) ([]int64, []string) {
	ids, names := RandomRows(rng, Rows)
	ids[0], ids[1] = 0, MaxID
	names[0], names[1] = "user-0000000000000000", "user-ffffffffffffffff"
	return ids, names
}

// RandomRows draws n rows of the tables' columns: a random even id in
// [2, MaxID) and a random name "user-" and 16 hex digits.
func RandomRows(rng *rand.Rand, n int) ([]int64, []string) {
	ids := make([]int64, n)
	names := make([]string, n)
	for j := range ids {
		ids[j] = 2 * (1 + rng.Int64N(MaxID/2-1))
		names[j] = fmt.Sprintf("user-%016x", rng.Uint64()|1)
	}
	return ids, names
}

// WriteFile writes a Parquet file of one row group of a required INT64
// column id and a required string column name, without field ids, as a
// file from outside Iceberg would be; add_files gives the table a name
// mapping for it.
func WriteFile(w io.Writer, ids []int64, names []string) error {
	return WriteColumns(w, IDCol, ids, NameCol, names)
}

// WriteColumns writes a Parquet file as WriteFile does, of a required
// INT64 column named longCol and a required string column named strCol.
func WriteColumns(w io.Writer, longCol string, ids []int64, strCol string, names []string) error {
	idNode, err := schema.NewPrimitiveNode(longCol, parquet.Repetitions.Required, parquet.Types.Int64, -1, -1)
	if err != nil {
		return err
	}
	nameNode, err := schema.NewPrimitiveNodeLogical(strCol, parquet.Repetitions.Required, schema.StringLogicalType{},
		parquet.Types.ByteArray, -1, -1)
	if err != nil {
		return err
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{idNode, nameNode}, -1)
	if err != nil {
		return err
	}
	pw := file.NewParquetWriter(w, root)
	err = func() error {
		rg, err := pw.AppendRowGroupChecked()
		if err != nil {
			return err
		}
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(ids, nil, nil); err != nil {
			return err
		}
		if err := cw.Close(); err != nil {
			return err
		}
		if cw, err = rg.NextColumn(); err != nil {
			return err
		}
		ba := make([]parquet.ByteArray, len(names))
		for i, s := range names {
			ba[i] = parquet.ByteArray(s)
		}
		if _, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(ba, nil, nil); err != nil {
			return err
		}
		if err := cw.Close(); err != nil {
			return err
		}
		return rg.Close()
	}()
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	return err
}

// LocalPut is a Put that stores a data file in the data directory under a
// local (file://) table location.
func LocalPut(location, base string, data []byte) (string, error) {
	dir := filepath.Join(strings.TrimPrefix(location, "file://"), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, base)
	return "file://" + path, os.WriteFile(path, data, 0o644)
}
