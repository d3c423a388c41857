package serve

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
)

// manyMaxID is the largest id of addFilesTable; every file holds 0 and
// it, so that min/max statistics keep every file and the index decides.
const manyMaxID = 1 << 40

// addFilesTable is a catalog with db.events of files data files, registered
// with one add_files commit and indexed: file i holds the ids 0, 2i+2 and
// manyMaxID, so an odd id is in no file.
func addFilesTable(b testing.TB, files int) *catalogtest.Catalog {
	ctx := context.Background()
	cat := catalogtest.NewCatalog(b)
	tbl := cat.NewTable(b, "events", catalogtest.IDSchema, nil)
	dir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		b.Fatal(err)
	}
	paths := make([]string, files)
	var g errgroup.Group
	g.SetLimit(4)
	for i := range files {
		g.Go(func() error {
			bld := array.NewInt64Builder(memory.DefaultAllocator)
			defer bld.Release()
			bld.AppendValues([]int64{0, 2*int64(i) + 2, manyMaxID}, nil)
			col := bld.NewArray()
			defer col.Release()
			rec := array.NewRecordBatch(as, []arrow.Array{col}, 3)
			defer rec.Release()
			var buf bytes.Buffer
			tab := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
			defer tab.Release()
			if err := pqarrow.WriteTable(tab, &buf, 3, nil, pqarrow.DefaultWriterProps()); err != nil {
				return err
			}
			paths[i] = filepath.Join(dir, fmt.Sprintf("f%07d.parquet", i))
			return os.WriteFile(paths[i], buf.Bytes(), 0o644)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	for i := range paths {
		paths[i] = "file://" + paths[i]
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, paths, nil, false); err != nil {
		b.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := indexer.Build(ctx, cat, table.Identifier{"db", "events"}, indexer.Options{Columns: []string{"id"}}); err != nil {
		b.Fatal(err)
	}
	return cat
}
