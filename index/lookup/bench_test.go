package lookup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/build"
	"github.com/icebloom/icebloom/index/lookup"
)

// BenchmarkPrune10k is the pruning step alone for a table of 10,000 data
// files with a warm footer cache. The files hold random ids, so min/max
// statistics keep all of them for any id, and the index decides; they are
// written directly with arrow-go, added in one add_files commit and indexed
// by the real build. Each op is one lookup.Plan of an absent id; the
// reported index-ms/op is Result.IndexTime (loading the index from the
// cache and pruning, without iceberg-go's planning). Setting up takes a
// while, so it runs only with -bench.
func BenchmarkPrune10k(b *testing.B) {
	const files, rows = 10_000, 20
	ctx := context.Background()
	cat := catalogtest.NewCatalog(b)
	tbl := cat.NewTable(b, "wide", catalogtest.IDSchema, nil)
	dir := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(10_000, 20))
	paths := make([]string, files)
	for i := range files {
		ids := make([]int64, rows)
		for j := range ids {
			ids[j] = 2 * rng.Int64N(1<<40) // even: odd ids are absent
		}
		ids[0], ids[1] = 0, 2<<40 // every file spans the whole range
		paths[i] = "file://" + writeIDs(b, filepath.Join(dir, fmt.Sprintf("f%05d.parquet", i)), ids)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, paths, nil, false); err != nil {
		b.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := build.Build(ctx, cat, tbl.Identifier(), build.Options{Columns: []string{"id"}}); err != nil {
		b.Fatal(err)
	}
	if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
		b.Fatal(err)
	}
	cache := index.NewFooterCache(16)
	absent := iceberg.EqualTo(iceberg.Reference("id"), int64(12345677))
	res, err := lookup.Plan(ctx, tbl, absent, lookup.Options{Cache: cache}) // warms the cache
	if err != nil {
		b.Fatal(err)
	}
	if len(res.AfterStats) != files {
		b.Fatalf("%d files after statistics, want all %d", len(res.AfterStats), files)
	}
	var indexNs, plans int64
	for b.Loop() {
		res, err := lookup.Plan(ctx, tbl, absent, lookup.Options{Cache: cache})
		if err != nil {
			b.Fatal(err)
		}
		indexNs += res.IndexTime.Nanoseconds()
		plans++
	}
	b.ReportMetric(float64(indexNs)/float64(plans)/1e6, "index-ms/op")
	b.ReportMetric(float64(len(res.Candidates)), "candidates")
}

// writeIDs writes a Parquet file of one required INT64 column "id" without
// field ids, as a file from outside Iceberg would be, and returns its path.
func writeIDs(tb testing.TB, path string, ids []int64) string {
	tb.Helper()
	node, err := schema.NewPrimitiveNode("id", parquet.Repetitions.Required, parquet.Types.Int64, -1, -1)
	if err != nil {
		tb.Fatal(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{node}, -1)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := file.NewParquetWriter(f, root)
	rg, err := w.AppendRowGroupChecked()
	if err != nil {
		tb.Fatal(err)
	}
	cw, err := rg.NextColumn()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(ids, nil, nil); err != nil {
		tb.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := rg.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}
