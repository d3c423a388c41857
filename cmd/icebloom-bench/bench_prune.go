//go:build icebloom_bench

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
)

// pruneRows is the row count of each file of the pruning table: the step
// measured is the index's, whatever the files hold.
const pruneRows = 20

// pruneAbsentID is an id no file of a pruning table holds (it is odd),
// though every file's min/max range spans it.
const pruneAbsentID = 12345677

// newPruneTable creates table ident (its namespace must exist) of n data
// files, each holding pruneRows random even ids and spanning the whole id
// range, so that min/max statistics keep every file for any id and the
// index decides. The files are written with arrow-go and added in one
// add_files commit (n appends through iceberg-go would take far longer),
// then indexed by the real build at fpp; it returns the indexed table.
func newPruneTable(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, n int, fpp float64) (*table.Table, error) {
	name := strings.Join(ident, ".")
	tbl, err := cat.CreateTable(ctx, ident, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: benchIDCol, Type: iceberg.PrimitiveTypes.Int64, Required: true}))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	dir := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(10_000, pruneRows))
	paths := make([]string, n)
	ids := make([]int64, pruneRows)
	for i := range n {
		for j := range ids {
			ids[j] = 2 * rng.Int64N(1<<40) // even: odd ids are absent
		}
		ids[0], ids[1] = 0, 2<<40 // every file spans the whole range
		path := filepath.Join(dir, fmt.Sprintf("f%06d.parquet", i))
		if err := writeIDFile(path, ids); err != nil {
			return nil, err
		}
		paths[i] = "file://" + path
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, paths, nil, false); err != nil {
		return nil, fmt.Errorf("add %d files to %s: %w", n, name, err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit %s: %w", name, err)
	}
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{benchIDCol}, FPP: fpp, FailFast: true}); err != nil {
		return nil, fmt.Errorf("build %s: %w", name, err)
	}
	return cat.LoadTable(ctx, ident)
}

// pruneStep measures the pruning step alone for a table of --prune-files
// data files (newPruneTable) from a warm footer cache: Result.IndexTime of
// lookup.Plan (loading the index from the cache and pruning), without
// iceberg-go's planning.
func (b *bencher) pruneStep(ctx context.Context) error {
	n := b.c.PruneFiles
	if n == 0 {
		b.note("pruning step for many files skipped (--prune-files 0)")
		return nil
	}
	tbl, err := newPruneTable(ctx, b.cat, table.Identifier{"bench", "wide"}, n, b.c.FPP)
	if err != nil {
		return err
	}

	absent := iceberg.EqualTo(iceberg.Reference(benchIDCol), int64(pruneAbsentID))
	cache := index.NewFooterCache(16)
	res, err := lookup.Plan(ctx, tbl, absent, lookup.Options{Cache: cache}) // warms the cache
	if err != nil {
		return err
	}
	if len(res.AfterStats) != n {
		return fmt.Errorf("bench.wide: %d files after statistics, want all %d", len(res.AfterStats), n)
	}
	var prune, plan []time.Duration
	for range max(b.c.Repeat, 10) {
		start := time.Now()
		if res, err = lookup.Plan(ctx, tbl, absent, lookup.Options{Cache: cache}); err != nil {
			return err
		}
		plan = append(plan, time.Since(start))
		prune = append(prune, res.IndexTime)
		if len(res.IndexErrors) > 0 {
			return fmt.Errorf("bench.wide: index errors: %w", errors.Join(res.IndexErrors...))
		}
	}
	p := report.Median(prune)
	b.add(BenchLine{Key: "prune_step_warm_cache", Value: float64(p.Nanoseconds()) / 1e3, Unit: "µs", Target: "none (reported)",
		Detail: fmt.Sprintf("%d files, %.2f µs per file, %d candidates left; the whole lookup.Plan with iceberg-go's planning %s (median of %d)",
			n, float64(p.Nanoseconds())/1e3/float64(n), len(res.Candidates), cli.DurationText(report.Median(plan)), len(prune))})
	return nil
}

// writeIDFile writes a Parquet file of one required INT64 column "id"
// without field ids, as a file from outside Iceberg would be; add_files
// gives the table a name mapping for such files.
func writeIDFile(path string, ids []int64) error {
	node, err := schema.NewPrimitiveNode(benchIDCol, parquet.Repetitions.Required, parquet.Types.Int64, -1, -1)
	if err != nil {
		return err
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{node}, -1)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := file.NewParquetWriter(f, root)
	err = func() error {
		rg, err := w.AppendRowGroupChecked()
		if err != nil {
			return err
		}
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(slices.Clone(ids), nil, nil); err != nil {
			return err
		}
		if err := cw.Close(); err != nil {
			return err
		}
		return rg.Close()
	}()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
