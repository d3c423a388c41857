//go:build icebloom_bench

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/procstat"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/smallfiles"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/serve"
)

// The serve benchmark (`bench --serve`) measures server-side scan planning
// (issue 21, "How it is shown"): for a table of N tiny data files with an
// icebloom index on id, a point lookup is planned by `icebloom serve` warm,
// by a fresh server (cold), and by the client itself (iceberg-go's local
// PlanFiles, which knows no index), side by side in one run; then 16
// clients plan at once against the warm server; and the server's memory is
// held against its budget.
//
// The server is index/serve's Server in catalog mode over the bench's SQLite
// catalog, on a loopback port; the client is iceberg-go's REST catalog
// client (catalog/rest) with remote scan planning, so a plan is what such a
// client pays: POST .../plan, the decoding of the tasks, and the DELETE of
// the plan iceberg-go sends once it has them. No rows are read.

const (
	// serveTargetFrom is the table size from which the warm/local target
	// applies.
	serveTargetFrom = 100_000
	// serveWarmVsLocal is that target: warm server planning at most this
	// fraction of the client's local planning.
	serveWarmVsLocal = 0.05
	// serveP99VsP50 bounds the p99 of the concurrent clients' warm plans
	// by their p50.
	serveP99VsP50 = 3
	// serveWarmPerRep is how many warm plans each interleaved round takes:
	// they are the fast ones, and the target's numerator.
	serveWarmPerRep = 5
	// serveDefaultSizes is what a bare --serve runs.
	serveDefaultSizes = "10000,100000"
)

// ServeOutput is the JSON output of bench --serve.
type ServeOutput struct {
	Sizes           []int  `json:"sizes"`
	RowsPerFile     int    `json:"rows_per_file"`
	Clients         int    `json:"clients"`
	PlansPerClient  int    `json:"plans_per_client"`
	Rounds          int    `json:"rounds"`
	MemoryBudgetMiB int64  `json:"memory_budget_mib"`
	Driver          string `json:"driver"`
	GOMAXPROCS      int    `json:"gomaxprocs"`
	NumCPU          int    `json:"num_cpu"`
	GoVersion       string `json:"go_version"`
	// LoadBefore and LoadAfter are /proc/loadavg's three load averages at
	// the start and the end of the run: how busy the shared machine was.
	LoadBefore string     `json:"load_before"`
	LoadAfter  string     `json:"load_after"`
	Dir        string     `json:"dir"`
	Notes      []string   `json:"notes"`
	Runs       []ScaleRun `json:"runs"`
}

// serveDriver says how the server is driven, in the output.
const serveDriver = "iceberg-go v0.7.0 REST catalog client (catalog/rest), Scan.PlanFiles with table.ScanPlanningRemote, over HTTP on loopback"

// bareServe gives a --serve without sizes (last, or followed by another
// flag) the default sizes, which go-arg cannot do for a flag with a value.
func bareServe(argv []string) []string {
	out := make([]string, 0, len(argv)+1)
	for i, a := range argv {
		out = append(out, a)
		if a == "--serve" && (i+1 == len(argv) || strings.HasPrefix(argv[i+1], "-")) {
			out = append(out, serveDefaultSizes)
		}
	}
	return out
}

// runServe is bench --serve.
func (c *BenchCmd) runServe(ctx context.Context, e *env) error {
	sizes, err := parseSizes("--serve", c.Serve)
	if err != nil {
		return err
	}
	dir, cat, cleanup, err := c.benchCatalog(ctx, e, "icebloom-bench-serve")
	if err != nil {
		return err
	}
	defer cleanup()
	out := &ServeOutput{Sizes: sizes, RowsPerFile: smallfiles.Rows, Clients: c.ServeClients, PlansPerClient: c.ServePlans,
		Rounds: max(c.Repeat, 5), MemoryBudgetMiB: c.MemoryBudgetMiB, Driver: serveDriver,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
		LoadBefore: procstat.LoadAvg(), Dir: dir, Notes: []string{}, Runs: []ScaleRun{}}
	sb := &serveBench{c: c, e: e, cat: cat, out: out}
	for _, n := range sizes {
		run, err := sb.size(ctx, n)
		if err != nil {
			return fmt.Errorf("serve %d: %w", n, err)
		}
		out.Runs = append(out.Runs, run)
	}
	out.LoadAfter = procstat.LoadAvg()
	if e.json {
		return e.printJSON(out)
	}
	printServe(e.stdout, out)
	return nil
}

// serveBench holds what the sizes of a serve run share.
type serveBench struct {
	c   *BenchCmd
	e   *env
	cat icecatalog.Catalog
	out *ServeOutput
}

func (sb *serveBench) progress(format string, args ...any) {
	if !sb.e.json {
		fmt.Fprintf(sb.e.stderr, format+"\n", args...)
	}
}

// budget is the server's MemoryBudget for --memory-budget-mib, as icebloom
// serve sets it: 0 keeps nothing warm.
func (sb *serveBench) budget() int64 {
	if sb.c.MemoryBudgetMiB <= 0 {
		return -1
	}
	return sb.c.MemoryBudgetMiB << 20
}

// swapHandler serves with whichever server it holds, so that a cold plan
// is answered by a fresh server behind the same listener and connections.
type swapHandler struct{ cur atomic.Pointer[serve.Server] }

func (h *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.cur.Load().ServeHTTP(w, r) }

// values hands out a new point-lookup value each time: first an id of each
// file in a random order (with the file that holds it), then odd ids no
// file holds, all within every file's min/max.
type values struct {
	st   *smallfiles.Table
	perm []int
	next atomic.Int64
}

func (v *values) take() (id int64, holder string) {
	k := int(v.next.Add(1) - 1)
	if k < len(v.perm) {
		i := v.perm[k]
		return v.st.Present[i], v.st.Paths[i]
	}
	return 2*int64(k) + 1, ""
}

func pointFilter(id int64) iceberg.BooleanExpression {
	return iceberg.EqualTo(iceberg.Reference(benchIDCol), id)
}

// plan plans a point lookup of id on tbl with iceberg-go's PlanFiles in
// mode and returns the data files planned and the time it took. A value
// some file holds must keep that file.
func plan(ctx context.Context, tbl *table.Table, mode table.ScanPlanningMode, id int64, holder string) (int, time.Duration, error) {
	start := time.Now()
	tasks, err := tbl.Scan(table.WithRowFilter(pointFilter(id)), table.WithScanPlanningMode(mode)).PlanFiles(ctx)
	d := time.Since(start)
	if err != nil {
		return 0, d, fmt.Errorf("plan %s = %d (%s): %w", benchIDCol, id, mode, err)
	}
	files := cli.DataFiles(tasks)
	if holder != "" && !slices.Contains(files, holder) {
		return 0, d, fmt.Errorf("plan %s = %d (%s) dropped %s, which holds it", benchIDCol, id, mode, holder)
	}
	return len(files), d, nil
}

// size measures a table of n files.
func (sb *serveBench) size(ctx context.Context, n int) (ScaleRun, error) {
	run := ScaleRun{Files: n, Storage: "local"}
	ident := table.Identifier{"bench", fmt.Sprintf("serve_%d", n)}
	st, err := sb.makeTable(ctx, &run, ident, n)
	if err != nil {
		return run, err
	}
	runtime.GC()
	heapBase := procstat.HeapObjects()
	sr, stop, err := sb.start(ctx, ident, st)
	if err != nil {
		return run, err
	}
	defer stop()
	sr.run, sr.heapBase = &run, heapBase
	for _, step := range []func(context.Context) error{sr.sideBySide, sr.concurrent} {
		if err := step(ctx); err != nil {
			return run, err
		}
	}
	sr.memory()
	return run, nil
}

// makeTable makes the table ident of n tiny files, as --scale does, and
// indexes its id column.
func (sb *serveBench) makeTable(ctx context.Context, run *ScaleRun, ident table.Identifier, n int) (*smallfiles.Table, error) {
	if _, err := sb.cat.LoadTable(ctx, ident); err == nil {
		return nil, fmt.Errorf("%s exists already in the catalog; use an empty --dir", strings.Join(ident, "."))
	}
	sb.progress("serve %d: writing %d data files of %d rows, one add_files commit, build of %s", n, n, smallfiles.Rows, benchIDCol)
	start := time.Now()
	st, err := smallfiles.Create(ctx, sb.cat, ident, n, smallfiles.LocalPut)
	if err != nil {
		return nil, err
	}
	made := time.Since(start)
	start = time.Now()
	built, err := indexer.Build(ctx, sb.cat, ident, indexer.Options{Columns: []string{benchIDCol}, FPP: sb.c.FPP, FailFast: true})
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if built.FilesIndexed != n {
		return nil, fmt.Errorf("build indexed %d files, want %d", built.FilesIndexed, n)
	}
	buildTime := time.Since(start)
	sb.progress("  written and added in %s, indexed in %s", cli.DurationText(made), cli.DurationText(buildTime))
	run.add(report.ReportedMS("serve_setup_ms", made+buildTime, fmt.Sprintf("making the table: writing %d files with arrow-go and one add_files commit %s, indexer.Build of %s %s",
		n, cli.DurationText(made), benchIDCol, cli.DurationText(buildTime))))
	return st, nil
}

// serveRun is one size's server, its clients and what they measure.
type serveRun struct {
	sb        *serveBench
	run       *ScaleRun
	n         int
	ident     table.Identifier
	uri       string
	h         *swapHandler
	warm      *serve.Server
	newServer func() (*serve.Server, error)
	// clients are iceberg-go REST clients' tables: [0] for the side-by-side
	// rounds, the others for the concurrent plans.
	clients  []*table.Table
	vals     *values
	heapBase uint64 // the live heap before the server started
	// peaks are the heap's during the concurrent plans, over heapBase.
	peaks procstat.Peaks
}

// start starts a warm server on a loopback port, opens the REST clients
// and warms the server and the first client up with a plan each (untimed).
func (sb *serveBench) start(ctx context.Context, ident table.Identifier, st *smallfiles.Table) (*serveRun, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	sr := &serveRun{sb: sb, n: len(st.Paths), ident: ident, uri: "http://" + addr, h: &swapHandler{},
		vals: &values{st: st, perm: rand.New(rand.NewPCG(uint64(len(st.Paths)), 21)).Perm(len(st.Paths))}}
	sr.newServer = func() (*serve.Server, error) {
		return serve.New(serve.Options{Catalog: sb.cat, MemoryBudget: sb.budget(), Hosts: serve.LoopbackHosts(addr),
			MaxPlansInFlight: max(sb.c.ServeClients, serve.DefaultMaxPlansInFlight)})
	}
	if sr.warm, err = sr.newServer(); err != nil {
		ln.Close()
		return nil, nil, err
	}
	sr.h.cur.Store(sr.warm)
	hs := &http.Server{Handler: sr.h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	stop := func() { hs.Close() }
	sr.clients = make([]*table.Table, sb.c.ServeClients+1)
	for i := range sr.clients {
		cl, err := rest.NewCatalog(ctx, "bench", sr.uri)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("REST client of %s: %w", sr.uri, err)
		}
		if sr.clients[i], err = cl.LoadTable(ctx, ident); err != nil {
			stop()
			return nil, nil, fmt.Errorf("load %s through %s: %w", strings.Join(ident, "."), sr.uri, err)
		}
	}
	// The warm server reads the table's manifests and index once, and the
	// client's table its manifest list.
	for _, mode := range []table.ScanPlanningMode{table.ScanPlanningRemote, table.ScanPlanningLocal} {
		id, holder := sr.vals.take()
		if _, _, err := plan(ctx, sr.clients[0], mode, id, holder); err != nil {
			stop()
			return nil, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return sr, stop, nil
}

// sideBySide plans point lookups warm, cold and locally in interleaved
// rounds, and adds their medians and ratios.
func (sr *serveRun) sideBySide(ctx context.Context) error {
	sr.sb.progress("serve %d: %d rounds of %d warm plans, a cold plan and a local plan, interleaved", sr.n, sr.sb.out.Rounds, serveWarmPerRep)
	tbl := sr.clients[0]
	var warmT, coldT, localT, plannerT, cachedT []time.Duration
	var warmFiles []int
	var coldFiles, localFiles int
	steps := []func() error{
		func() error { // warm: the same server, a new value each time
			for range serveWarmPerRep {
				id, holder := sr.vals.take()
				f, d, err := plan(ctx, tbl, table.ScanPlanningRemote, id, holder)
				if err != nil {
					return err
				}
				warmT, warmFiles = append(warmT, d), append(warmFiles, f)
			}
			// The same value again: the server's plan cache answers.
			id, holder := sr.vals.take()
			if _, _, err := plan(ctx, tbl, table.ScanPlanningRemote, id, holder); err != nil {
				return err
			}
			_, d, err := plan(ctx, tbl, table.ScanPlanningRemote, id, holder)
			if err != nil {
				return err
			}
			cachedT = append(cachedT, d)
			// The planner alone, without HTTP and the client's decoding.
			id, _ = sr.vals.take()
			start := time.Now()
			if _, err := sr.warm.Planner().Plan(ctx, sr.ident, rest.PlanTableScanRequest{
				Filter: []byte(`{"type":"eq","term":"` + benchIDCol + `","value":` + strconv.FormatInt(id, 10) + `}`)}); err != nil {
				return fmt.Errorf("Planner.Plan: %w", err)
			}
			plannerT = append(plannerT, time.Since(start))
			return nil
		},
		func() error { // cold: a fresh server, nothing warm
			fresh, err := sr.newServer()
			if err != nil {
				return err
			}
			sr.h.cur.Store(fresh)
			defer sr.h.cur.Store(sr.warm)
			id, holder := sr.vals.take()
			f, d, err := plan(ctx, tbl, table.ScanPlanningRemote, id, holder)
			coldT, coldFiles = append(coldT, d), f
			return err
		},
		func() error { // local: the client plans itself, as without server planning
			id, holder := sr.vals.take()
			f, d, err := plan(ctx, tbl, table.ScanPlanningLocal, id, holder)
			localT, localFiles = append(localT, d), f
			return err
		},
	}
	for r := range sr.sb.out.Rounds {
		for i := range steps { // rotated, so no kind always runs first
			if err := steps[(i+r)%len(steps)](); err != nil {
				return err
			}
		}
	}
	if localFiles != sr.n {
		return fmt.Errorf("local planning kept %d files, want all %d (every file spans every id)", localFiles, sr.n)
	}
	run := sr.run
	w, cold, local := report.Median(warmT), report.Median(coldT), report.Median(localT)
	slices.Sort(warmFiles)
	run.add(BenchLine{Key: "serve_files_planned", Value: float64(warmFiles[len(warmFiles)/2]), Unit: "files", Target: "none (reported)",
		Detail: fmt.Sprintf("data files of a point lookup planned by the server warm (the index prunes): median %d, %d to %d; the last cold plan %d; by the client locally %d (statistics keep every file)",
			warmFiles[len(warmFiles)/2], warmFiles[0], warmFiles[len(warmFiles)-1], coldFiles, localFiles)})
	run.add(report.ReportedMS("serve_warm_ms", w, fmt.Sprintf("the client's PlanFiles, server planning warm, a new value each time (POST plan, decoding the tasks, DELETE plan), median of %d", len(warmT))))
	run.add(report.ReportedMS("serve_warm_planner_ms", report.Median(plannerT), fmt.Sprintf("the warm server's Planner.Plan alone, no HTTP, a new value each time, median of %d", len(plannerT))))
	run.add(report.ReportedMS("serve_cached_ms", report.Median(cachedT), fmt.Sprintf("the client's PlanFiles of a value planned just before (the server's plan cache), median of %d", len(cachedT))))
	run.add(report.ReportedMS("serve_cold_ms", cold, fmt.Sprintf("the client's PlanFiles against a fresh server (no cached manifest, index footer or plan; the OS page cache stays warm), median of %d", len(coldT))))
	run.add(report.ReportedMS("local_plan_ms", local, fmt.Sprintf("the client's own PlanFiles (table.ScanPlanningLocal, the table loaded once, so its manifest list is cached), median of %d", len(localT))))
	r := report.Ratio(w, local)
	target, pass := report.TargetFrom(sr.n, serveTargetFrom, r, serveWarmVsLocal)
	run.add(BenchLine{Key: "serve_warm_vs_local", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("server planning warm %s vs the client's local planning %s, interleaved", cli.DurationText(w), cli.DurationText(local))})
	run.add(BenchLine{Key: "serve_cold_vs_local", Value: report.Ratio(cold, local), Unit: "x", Target: "none (reported)",
		Detail: fmt.Sprintf("server planning cold %s vs the client's local planning %s, interleaved", cli.DurationText(cold), cli.DurationText(local))})
	return nil
}

// concurrent has the other clients plan at once against the warm server,
// and adds their p50, p99 and its ratio; it samples the heap meanwhile.
func (sr *serveRun) concurrent(ctx context.Context) error {
	clients, per := sr.clients[1:], sr.sb.c.ServePlans
	sr.sb.progress("serve %d: %d clients x %d warm plans at once", sr.n, len(clients), per)
	runtime.GC()
	before := max(int64(procstat.HeapObjects())-int64(sr.heapBase), 0)
	var lat []time.Duration
	var wall time.Duration
	peaks, err := procstat.HeapPeaks(func() error {
		var err error
		lat, wall, err = concurrentPlans(ctx, clients, per, sr.vals)
		return err
	})
	if err != nil {
		return err
	}
	peaks.InUse += before
	peaks.Live += before
	sr.peaks = peaks
	p50, p99 := report.Percentile(lat, 0.50), report.Percentile(lat, 0.99)
	sr.run.add(report.ReportedMS("serve_concurrent_p50_ms", p50, fmt.Sprintf("%d clients (each its own REST client and connection) x %d plans, a new value each: %d plans in %s, %.1f plans/s",
		len(clients), per, len(lat), cli.DurationText(wall), float64(len(lat))/wall.Seconds())))
	sr.run.add(report.ReportedMS("serve_concurrent_p99_ms", p99, fmt.Sprintf("p99 of the same %d plans (nearest rank: %d of %d, sorted)",
		len(lat), report.PercentileIndex(len(lat), 0.99)+1, len(lat))))
	r := report.Ratio(p99, p50)
	target, pass := report.AtMost(r, serveP99VsP50, "x")
	sr.run.add(BenchLine{Key: "serve_concurrent_p99_vs_p50", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("p99 %s vs p50 %s of %d clients' warm plans", cli.DurationText(p99), cli.DurationText(p50), len(clients))})
	return nil
}

// memory adds what the warm server keeps and its peak under the clients,
// against the budget, and the process's RSS.
func (sr *serveRun) memory() {
	c := sr.sb.c
	runtime.GC()
	retained := max(int64(procstat.HeapObjects())-int64(sr.heapBase), 0)
	planCache := procstat.ScrapeMetric(sr.uri+"/metrics", "icebloom_serve_plan_cache_bytes")
	line := func(key string, v int64, detail string) {
		mib := float64(v) / (1 << 20)
		target, pass := "none (nothing is kept with budget 0)", (*bool)(nil)
		if c.MemoryBudgetMiB > 0 {
			target, pass = report.AtMost(mib, float64(c.MemoryBudgetMiB), " MiB")
		}
		sr.run.add(BenchLine{Key: key, Value: mib, Unit: "MiB", Target: target, Pass: pass, Detail: detail})
	}
	line("serve_heap_retained_mib", retained, fmt.Sprintf("live heap after GC over the heap before the server started: the warm server's caches and plans (plan cache %s by /metrics), %d REST clients' tables; --memory-budget-mib %d",
		planCache, len(sr.clients), c.MemoryBudgetMiB))
	peak, how := sr.peaks.Live, fmt.Sprintf("as the %d collections meanwhile marked it", sr.peaks.GCs)
	if sr.peaks.GCs == 0 { // no collection to tell the live heap: what was in use bounds it
		peak, how = sr.peaks.InUse, "no collection ran meanwhile: the heap in use"
	}
	line("serve_heap_peak_mib", peak, fmt.Sprintf("peak live heap during the %d clients' plans over the heap before the server started, %s (the clients run in the same process)", len(sr.clients)-1, how))
	sr.run.add(BenchLine{Key: "serve_heap_in_use_peak_mib", Value: float64(sr.peaks.InUse) / (1 << 20), Unit: "MiB", Target: "none (reported)",
		Detail: "peak heap in use (live and not yet collected) over the heap before the server started, sampled every 200 µs: the collector lets garbage reach the live heap's size (GOGC=100) unless GOMEMLIMIT bounds it"})
	rss, hwm := procstat.Status("VmRSS"), procstat.Status("VmHWM")
	if rss < 0 {
		sr.sb.out.Notes = append(sr.sb.out.Notes, "no /proc/self/status: the process RSS is not reported")
		return
	}
	sr.run.add(BenchLine{Key: "process_rss_mib", Value: float64(rss) / (1 << 20), Unit: "MiB", Target: "none (reported)",
		Detail: fmt.Sprintf("RSS of the whole bench process (server, clients, the table's making), peak %s; no target: not the server's alone", cli.BytesText(hwm))})
}

// concurrentPlans has each client plan perClient point lookups of new
// values, all clients at once, and returns every plan's latency and the
// wall time.
func concurrentPlans(ctx context.Context, clients []*table.Table, perClient int, vals *values) ([]time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, len(clients))
	errs := make([]error, len(clients))
	var ready, done sync.WaitGroup
	begin := make(chan struct{})
	for i, tbl := range clients {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-begin
			for range perClient {
				id, holder := vals.take()
				_, d, err := plan(ctx, tbl, table.ScanPlanningRemote, id, holder)
				if err != nil {
					errs[i] = err
					return
				}
				lat[i] = append(lat[i], d)
			}
		}()
	}
	ready.Wait()
	start := time.Now()
	close(begin)
	done.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, 0, fmt.Errorf("concurrent plans: %w", err)
	}
	return slices.Concat(lat...), wall, nil
}

// printServe writes the results as one text table per size.
func printServe(w io.Writer, out *ServeOutput) {
	fmt.Fprintf(w, "icebloom bench --serve: %d rows per file, index on %s, %d clients x %d plans, %d rounds, --memory-budget-mib %d, GOMAXPROCS %d, %d CPUs, %s\n",
		out.RowsPerFile, benchIDCol, out.Clients, out.PlansPerClient, out.Rounds, out.MemoryBudgetMiB, out.GOMAXPROCS, out.NumCPU, out.GoVersion)
	fmt.Fprintf(w, "driven by %s; load average %s before, %s after\n", out.Driver, out.LoadBefore, out.LoadAfter)
	for _, run := range out.Runs {
		fmt.Fprintf(w, "\n%d files\n", run.Files)
		report.PrintLines(w, run.Measurements)
	}
	report.PrintNotes(w, out.Notes)
}
