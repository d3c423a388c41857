package serve_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve"
)

// benchTable is a catalog with db.events of files one-id data files,
// indexed.
func benchTable(b *testing.B, files int) *catalogtest.Catalog {
	cat := catalogtest.NewCatalog(b)
	tbl := cat.NewTable(b, "events", catalogtest.IDSchema, nil)
	for i := range int64(files) {
		tbl = catalogtest.AppendIDs(b, tbl, i)
	}
	if _, err := indexer.Build(context.Background(), cat, table.Identifier{"db", "events"}, indexer.Options{Columns: []string{"id"}}); err != nil {
		b.Fatal(err)
	}
	return cat
}

func filterJSON(v int64) rest.PlanTableScanRequest {
	return rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + strconv.FormatInt(v, 10) + `}`)}
}

// BenchmarkPlan compares a point lookup planned by the server's Planner
// warm (the same scan again: from its cache), cold (another value each
// time), and by lookup.Plan locally, on a table of 200 files.
// go test -run - -bench BenchmarkPlan ./index/serve
func BenchmarkPlan(b *testing.B) {
	const files = 200
	cat := benchTable(b, files)
	ident := table.Identifier{"db", "events"}
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("server-warm", func(b *testing.B) {
		req := filterJSON(7)
		for b.Loop() {
			if _, err := srv.Planner().Plan(ctx, ident, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("server-cold", func(b *testing.B) {
		v := int64(files)
		for b.Loop() {
			v++ // a value not planned before: no cached plan
			if _, err := srv.Planner().Plan(ctx, ident, filterJSON(v)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local", func(b *testing.B) {
		for b.Loop() {
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := lookup.Plan(ctx, tbl, iceberg.EqualTo(iceberg.Reference("id"), int64(7)), lookup.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
