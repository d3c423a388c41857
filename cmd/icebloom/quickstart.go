package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/indexer"
)

// QuickstartCmd is `icebloom quickstart`: the end-to-end demo on an
// embedded catalog.
type QuickstartCmd struct {
	Dir   string `arg:"--dir" default:"warehouse" help:"directory of the demo's embedded catalog and warehouse"`
	Files int    `arg:"--files" default:"64" help:"data files to write"`
	Rows  int    `arg:"--rows" default:"10000" help:"rows per data file"`
}

// quickstartMarker is the table property that marks the demo table, so a
// rerun replaces it and never a table of the user's.
const quickstartMarker = "icebloom.quickstart"

var quickstartTable = table.Identifier{"demo", "events"}

// QuickstartOutput is the JSON output of quickstart.
type QuickstartOutput struct {
	Catalog string           `json:"catalog"`
	Table   string           `json:"table"`
	Build   *indexer.Summary `json:"build"`
	Present QuickLookup      `json:"present"`
	Absent  QuickLookup      `json:"absent"`
}

// QuickLookup is one demo lookup: how many files each step leaves, and the
// scan with and without the index.
type QuickLookup struct {
	Where           string  `json:"where"`
	FilesTotal      int     `json:"files_total"`
	FilesAfterStats int     `json:"files_after_stats"`
	Candidates      int     `json:"candidates"`
	Rows            int     `json:"rows"`
	ScanMillis      float64 `json:"scan_ms"`
	NoIndexMillis   float64 `json:"scan_no_index_ms"`
}

func (c *QuickstartCmd) run(ctx context.Context, e *env) error {
	if c.Files < 1 || c.Rows < 1 {
		return fmt.Errorf("--files and --rows must be positive")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return err
	}
	e.options = catalog.Embedded(dir)
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	if !e.json {
		e.printf("writing %d data files of %d rows to demo.events in %s\n", c.Files, c.Rows, dir)
	}
	needle, absent, err := c.createTable(ctx, cat)
	if err != nil {
		return err
	}
	sum, err := indexer.Build(ctx, cat, quickstartTable, indexer.Options{})
	if err != nil {
		return err
	}
	if !e.json {
		printBuildSummary(e, "demo.events", sum)
	}
	out := QuickstartOutput{Catalog: filepath.Join(dir, "catalog.db"), Table: "demo.events", Build: sum}
	if out.Present, err = quickLookup(ctx, e, fmt.Sprintf("user_id = %d", needle)); err != nil {
		return err
	}
	if out.Absent, err = quickLookup(ctx, e, fmt.Sprintf("user_id = %d", absent)); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(out)
	}
	for _, l := range []QuickLookup{out.Present, out.Absent} {
		e.printf("\nlookup %s\n", l.Where)
		e.printf("  data files: %d in the table, %d after min/max statistics, %d after the index\n",
			l.FilesTotal, l.FilesAfterStats, l.Candidates)
		e.printf("  scan: %d rows in %.1f ms with the index, %.1f ms without (%.0fx)\n",
			l.Rows, l.ScanMillis, l.NoIndexMillis, l.NoIndexMillis/max(l.ScanMillis, 0.001))
	}
	flags := ""
	if filepath.Clean(c.Dir) != "warehouse" { // the embedded default needs no flags
		flags = fmt.Sprintf("--catalog sql --uri 'file:%s' --warehouse file://%s ", out.Catalog, dir)
	}
	e.printf("\ntry it yourself:\n  icebloom %slookup demo.events --where \"user_id = %d\"\n", flags, needle)
	return nil
}

// createTable (re)creates the demo table with random, high-cardinality
// columns — min/max statistics cannot prune them — and returns a user id
// that one of its files holds and one, within the same range, that none
// holds.
func (c *QuickstartCmd) createTable(ctx context.Context, cat icecat.Catalog) (needle, absent int64, err error) {
	if err := cat.CreateNamespace(ctx, table.Identifier{"demo"}, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return 0, 0, fmt.Errorf("create namespace demo: %w", err)
	}
	if old, err := cat.LoadTable(ctx, quickstartTable); err == nil {
		if old.Properties()[quickstartMarker] != "true" {
			return 0, 0, fmt.Errorf("demo.events exists and was not made by quickstart; use another --dir")
		}
		if err := cat.DropTable(ctx, quickstartTable); err != nil {
			return 0, 0, fmt.Errorf("replace demo.events: %w", err)
		}
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "order_id", Type: iceberg.PrimitiveTypes.UUID, Required: true},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64, Required: true},
	)
	// Manifests are merged as Java and Spark writers do by default, so that
	// planning reads a few manifests, not one per append.
	props := iceberg.Properties{quickstartMarker: "true", table.ManifestMergeEnabledKey: "true"}
	for _, col := range []string{"user_id", "email", "order_id"} {
		props[indexer.PropBloomEnabledPrefix+col] = "true"
	}
	tbl, err := cat.CreateTable(ctx, quickstartTable, sc, icecat.WithProperties(props))
	if err != nil {
		return 0, 0, fmt.Errorf("create demo.events: %w", err)
	}
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return 0, 0, err
	}
	rng := rand.New(rand.NewPCG(7842913, 1))
	ids := map[int64]bool{}
	for i := range c.Files {
		rec := randomEvents(as, rng, c.Rows)
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			ids[id] = true
		}
		if i == c.Files/2 {
			needle = rec.Column(0).(*array.Int64).Value(c.Rows / 2)
		}
		tbl, err = appendRecord(ctx, tbl, rec)
		rec.Release()
		if err != nil {
			return 0, 0, fmt.Errorf("append to demo.events: %w", err)
		}
	}
	for absent = needle; ids[absent]; {
		absent = 1 + rng.Int64N(1_000_000_000_000)
	}
	return needle, absent, nil
}

func randomEvents(as *arrow.Schema, rng *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	var u uuid.UUID
	for range n {
		b.Field(0).(*array.Int64Builder).Append(1 + rng.Int64N(1_000_000_000_000))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", rng.Int64N(100_000_000)))
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		b.Field(2).(*extensions.UUIDBuilder).Append(u)
		b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
	}
	return b.NewRecordBatch()
}

func appendRecord(ctx context.Context, tbl *table.Table, rec arrow.RecordBatch) (*table.Table, error) {
	at := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer at.Release()
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, at, rec.NumRows(), nil); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

// quickLookup plans and scans one filter with and without the index.
func quickLookup(ctx context.Context, e *env, where string) (QuickLookup, error) {
	name := "demo.events"
	_, _, res, err := plan(ctx, e, name, where, 0)
	if err != nil {
		return QuickLookup{}, err
	}
	withIndex, err := scanRows(ctx, e, name, where, 0, 0, false)
	if err != nil {
		return QuickLookup{}, err
	}
	without, err := scanRows(ctx, e, name, where, 0, 0, true)
	if err != nil {
		return QuickLookup{}, err
	}
	if len(withIndex.rows) != len(without.rows) {
		return QuickLookup{}, fmt.Errorf("%s: %d rows with the index, %d without", where, len(withIndex.rows), len(without.rows))
	}
	return QuickLookup{
		Where: where, FilesTotal: res.FilesTotal, FilesAfterStats: len(dataFiles(res.AfterStats)),
		Candidates: len(dataFiles(res.Candidates)), Rows: len(withIndex.rows),
		ScanMillis:    float64(withIndex.elapsed.Microseconds()) / 1000,
		NoIndexMillis: float64(without.elapsed.Microseconds()) / 1000,
	}, nil
}
