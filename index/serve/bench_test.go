package serve_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

func filterJSON(v int64) rest.PlanTableScanRequest {
	return rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":` + strconv.FormatInt(v, 10) + `}`)}
}

// benchFiles is the bench table's size: ICEBLOOM_BENCH_FILES, else 200.
func benchFiles(b *testing.B) int {
	if s := os.Getenv("ICEBLOOM_BENCH_FILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("ICEBLOOM_BENCH_FILES=%q is not a number of files", s)
		}
		return n
	}
	return 200
}

// BenchmarkPlan compares point lookups of a table whose statistics keep
// every file, planned by the server's Planner warm (the same scan again:
// from its plan cache), warm with a new value each time (the fast path:
// iceberg-go's plan kept in memory, then the index), cold (a new Planner
// each time: the table's manifests read and decoded), and by the client
// locally: iceberg-go's planning alone, as an engine without icebloom
// plans, and lookup.Plan (that planning and the index). It logs the ratio
// of the warm new-value plan to each local one, measured in the same run.
// ICEBLOOM_BENCH_FILES sets the number of files (default 200).
//
//	ICEBLOOM_BENCH_FILES=10000 go test -run - -bench BenchmarkPlan -benchtime 20x ./index/serve
func BenchmarkPlan(b *testing.B) {
	files := benchFiles(b)
	start := time.Now()
	cat := servetest.AddFilesTable(b, files)
	b.Logf("table of %d files made and indexed in %s", files, time.Since(start).Round(time.Millisecond))
	ident := table.Identifier{"db", "events"}
	newServer := func() *serve.Server {
		srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
		if err != nil {
			b.Fatal(err)
		}
		return srv
	}
	srv := newServer()
	ctx := context.Background()
	plan := func(b *testing.B, p *planning.Planner, v int64) *planning.PlanResult {
		res, err := p.Plan(ctx, ident, filterJSON(v))
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	perOp := map[string]time.Duration{}
	measure := func(name string, fn func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			fn(b)
			perOp[name] = b.Elapsed() / time.Duration(b.N)
		})
	}
	measure("server-warm", func(b *testing.B) {
		plan(b, srv.Planner(), 7)
		b.ResetTimer()
		for b.Loop() {
			if res := plan(b, srv.Planner(), 7); !res.Cached {
				b.Fatal("a repeated plan was not cached")
			}
		}
	})
	plan(b, srv.Planner(), 1) // the base plan, once (7 is server-warm's)
	v := int64(9)             // across the runs b.Run makes
	measure("server-warm-new-value", func(b *testing.B) {
		for b.Loop() {
			v += 2 // an odd id: in no file, and never planned before
			if res := plan(b, srv.Planner(), v); res.Cached || !res.FastPath || res.FilesAfterStats != files {
				b.Fatalf("id = %d: cached %v, fast path %v, %d files after statistics", v, res.Cached, res.FastPath, res.FilesAfterStats)
			}
		}
	})
	measure("server-cold", func(b *testing.B) {
		for b.Loop() {
			plan(b, newServer().Planner(), 7)
		}
	})
	filter := iceberg.EqualTo(iceberg.Reference("id"), int64(7))
	measure("local-iceberg-go", func(b *testing.B) {
		for b.Loop() {
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	measure("local-lookup", func(b *testing.B) {
		for b.Loop() {
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := lookup.Plan(ctx, tbl, filter, lookup.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	warm := perOp["server-warm-new-value"]
	for _, local := range []string{"local-iceberg-go", "local-lookup"} {
		if perOp[local] > 0 {
			b.Logf("%d files: warm server plan of a new value %s, %s %s: %.3f×", files, warm, local, perOp[local], float64(warm)/float64(perOp[local]))
		}
	}
}

// BenchmarkPlanEdgeValues: warm plans of new values on a table of files
// holding uniformly random ids (100 a file, from [0, 2^40)), as users'
// keys are: values from the middle of the key range, where min/max keep
// every file, beside values from its lowest or highest 3%, where they drop
// a few percent of the files, and both alternating. It logs each against
// the middle's, measured in the same run. ICEBLOOM_BENCH_FILES sets the
// number of files (default 200).
//
//	ICEBLOOM_BENCH_FILES=20000 go test -run - -bench BenchmarkPlanEdgeValues -benchtime 40x ./index/serve
func BenchmarkPlanEdgeValues(b *testing.B) {
	files := benchFiles(b)
	const perFile, keyRange = 100, int64(1) << 40
	cat := servetest.AddFilesTableOf(b, files, func(i int) []int64 {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		ids := make([]int64, perFile)
		for j := range ids {
			ids[j] = rng.Int64N(keyRange)
		}
		return ids
	})
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		b.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	rng := rand.New(rand.NewPCG(1, 2))
	middle := func() int64 { return keyRange/4 + rng.Int64N(keyRange/2) }
	edge := func() int64 {
		if rng.IntN(2) == 0 {
			return rng.Int64N(keyRange * 3 / 100)
		}
		return keyRange - 1 - rng.Int64N(keyRange*3/100)
	}
	plan := func(b *testing.B, v int64) *planning.PlanResult {
		res, err := srv.Planner().Plan(context.Background(), ident, filterJSON(v))
		if err != nil {
			b.Fatal(err)
		}
		if res.Cached || !res.FastPath {
			b.Fatalf("id = %d: cached %v, fast path %v", v, res.Cached, res.FastPath)
		}
		return res
	}
	plan(b, middle()) // the base plan, once
	perOp := map[string]time.Duration{}
	for _, c := range []struct {
		name  string
		value func(i int) int64
	}{
		{"middle", func(int) int64 { return middle() }},
		{"edge", func(int) int64 { return edge() }},
		{"alternating", func(i int) int64 {
			if i%2 == 0 {
				return edge()
			}
			return middle()
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			dropped := 0
			i := 0
			for b.Loop() {
				res := plan(b, c.value(i))
				dropped += files - res.FilesAfterStats
				i++
			}
			perOp[c.name] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(dropped)/float64(b.N), "files-dropped-by-stats/op")
		})
	}
	for _, name := range []string{"edge", "alternating"} {
		if perOp["middle"] > 0 {
			b.Logf("%d files: warm plan of a %s value %s, of a middle value %s: %.2f×", files, name, perOp[name], perOp["middle"],
				float64(perOp[name])/float64(perOp["middle"]))
		}
	}
}

// BenchmarkPlanManyMatches: warm plans of new values on a table where each
// value is in about a fifth of the files (file i holds 0, ManyMaxID and 80
// random even ids of 400), so the plan's cost beyond the index is encoding
// many tasks (REST FileScanTasks with a residual each, sized for the plan
// cache): the share a large table's false positives give a point lookup
// (3,600 of 1,000,000 files). ICEBLOOM_BENCH_FILES sets the number of files
// (default 200).
//
//	ICEBLOOM_BENCH_FILES=5000 go test -run - -bench BenchmarkPlanManyMatches -benchtime 20x -count 6 ./index/serve
func BenchmarkPlanManyMatches(b *testing.B) {
	files := benchFiles(b)
	const perFile, values = 80, 400
	cat := servetest.AddFilesTableOf(b, files, func(i int) []int64 {
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		ids := []int64{0, servetest.ManyMaxID}
		for range perFile {
			ids = append(ids, 2+2*rng.Int64N(values))
		}
		return ids
	})
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		b.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	plan := func(v int64) *planning.PlanResult {
		res, err := srv.Planner().Plan(context.Background(), ident, filterJSON(v))
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	plan(1) // the base plan, once
	next := int64(0)
	b.Run("warm-new-value", func(b *testing.B) {
		planned := 0
		for b.Loop() {
			next++
			if next > values {
				b.Fatalf("more than %d plans: the values repeat, and would come from the plan cache", values)
			}
			res := plan(2 * next)
			if res.Cached || !res.FastPath {
				b.Fatalf("id = %d: cached %v, fast path %v", 2*next, res.Cached, res.FastPath)
			}
			planned += res.FilesPlanned
		}
		b.ReportMetric(float64(planned)/float64(b.N), "files-planned/op")
	})
}
