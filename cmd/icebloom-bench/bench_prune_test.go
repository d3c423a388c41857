//go:build icebloom_bench

package main

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/lookup"
)

// BenchmarkPrune10k is the pruning step alone for the bench command's
// pruning table of 10,000 data files (newPruneTable), with a warm footer
// cache. Each op is one lookup.Plan of an absent id; the reported
// index-ms/op is Result.IndexTime (loading the index from the cache and
// pruning, without iceberg-go's planning). Setting up takes a while, so it
// runs only with -bench.
func BenchmarkPrune10k(b *testing.B) {
	const files = 10_000
	ctx := context.Background()
	cat := catalogtest.NewCatalog(b)
	tbl, err := newPruneTable(ctx, cat, table.Identifier{"db", "wide"}, files, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	cache := index.NewFooterCache(16)
	absent := iceberg.EqualTo(iceberg.Reference(benchIDCol), int64(pruneAbsentID))
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
