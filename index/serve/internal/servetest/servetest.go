// Package servetest makes the tables index/serve's tests and benchmarks
// plan over: many data files registered at once (add_files) and indexed.
package servetest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

// ManyMaxID is the largest id of AddFilesTable; every file holds 0 and
// it, so that min/max statistics keep every file and the index decides.
const ManyMaxID = 1 << 40

// AddFilesTable is a catalog with db.events of files data files, registered
// with one add_files commit and indexed: file i holds the ids 0, 2i+2 and
// ManyMaxID, so an odd id is in no file.
func AddFilesTable(b testing.TB, files int) *catalogtest.Catalog {
	return AddFilesTableOf(b, files, func(i int) []int64 { return []int64{0, 2*int64(i) + 2, ManyMaxID} })
}

// AddFilesTableOf is AddFilesTable with the ids of file i given by ids
// (called from several goroutines at once).
func AddFilesTableOf(b testing.TB, files int, ids func(i int) []int64) *catalogtest.Catalog {
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
			bld.AppendValues(ids(i), nil)
			col := bld.NewArray()
			defer col.Release()
			rec := array.NewRecordBatch(as, []arrow.Array{col}, int64(col.Len()))
			defer rec.Release()
			var buf bytes.Buffer
			tab := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
			defer tab.Release()
			if err := pqarrow.WriteTable(tab, &buf, max(tab.NumRows(), 1), nil, pqarrow.DefaultWriterProps()); err != nil {
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

// Tri is a truth value of SQL's three-valued logic, for ground truths of
// filters over rows with NULLs: AND is the lesser of two, OR the greater.
type Tri int8

// The truth values, in order.
const (
	False Tri = iota
	Unknown
	True
)

// TriOf is b as a Tri.
func TriOf(b bool) Tri {
	if b {
		return True
	}
	return False
}

// Not is NOT a: unknown stays unknown.
func (a Tri) Not() Tri { return 2 - a }

// Seed is the seed of a randomized test: ICEBLOOM_SERVE_SEED's when set,
// else a random one; it is logged, so that a failure can be replayed.
func Seed(t testing.TB) uint64 {
	s := rand.Uint64()
	if v := os.Getenv("ICEBLOOM_SERVE_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("ICEBLOOM_SERVE_SEED: %v", err)
		}
	}
	t.Logf("seed %d (ICEBLOOM_SERVE_SEED=%d replays)", s, s)
	return s
}
