//go:build icebloom_bench

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/procstat"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/randomkeys"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/indexer"
)

// The serve benchmark's random kind (`bench --serve N --serve-kind random`,
// issue 35, "How it is shown") measures icebloom serve on the kind of table
// users have: files of uniformly random ids and emails
// (internal/randomkeys), both columns indexed, so that min/max statistics
// keep nearly every file for a value from the middle of a column's range
// and drop some for a value near either end. The table and its index are
// made once in --dir and reused by later runs (a run returns the table to
// the recorded version after appending to it).
//
// The server is the real `icebloom serve` binary in catalog mode as a
// process of its own (serverproc.go), with --memory-budget-mib (256) and
// GOMEMLIMIT in serve.yaml's proportion to it; the clients are iceberg-go's
// REST client with remote scan planning, and the same client's local
// planning (iceberg-go's PlanFiles, which knows no index) of the same
// filters, interleaved. In one run, per size: warm plans of new values of
// id and email alternating, from the middle of each column and from its
// edges, against local planning; --serve-clients clients planning at once
// (latency, the server's live heap at each collection, its RSS, 429s); a
// file appended every few seconds while clients plan (the first plan after
// each commit against warm ones); and the first plan of fresh server
// processes (cold) against local planning. Every plan of a value a file
// holds must keep that file, every answer must be no 5xx, and the server
// must not die: the run fails otherwise (exit 1). A missed latency or
// memory target is reported, not a failure: the machine is shared.

const (
	// serveKindBestCase and serveKindRandom are the kinds of --serve-kind.
	serveKindBestCase = "best-case"
	serveKindRandom   = "random"
	// randomWarmFrom, randomWarmVsLocal, randomWarmFromLarge and
	// randomWarmVsLocalLarge are the warm/local targets: 0.02x from
	// 100,000 files, 0.01x from 1,000,000.
	randomWarmFrom         = 100_000
	randomWarmVsLocal      = 0.02
	randomWarmFromLarge    = 1_000_000
	randomWarmVsLocalLarge = 0.01
	// randomColdFrom and randomColdVsLocal are the cold/local target.
	randomColdFrom    = 1_000_000
	randomColdVsLocal = 0.5
	// randomAfterCommitVsWarm bounds the first plan after a commit by a
	// warm plan.
	randomAfterCommitVsWarm = 2
	// randomRSSMiB bounds the server's peak RSS.
	randomRSSMiB = 512
	// randomWarmPerRound is how many warm plans of middle values each
	// side-by-side round takes (half of each column), beside one edge
	// value of each column.
	randomWarmPerRound = 6
	// randomEdgeEvery makes every so many concurrent plans one of an edge
	// value: about the share of edge values among uniformly random ones
	// (2 x 3% of ids, 2 x 1/36 of emails).
	randomEdgeEvery = 16
	// randomAppendClients is how many clients plan beside the measuring
	// one while files are appended.
	randomAppendClients = 4
	// randomMaxFailures bounds the failures a run lists (each counted).
	randomMaxFailures = 20
)

// randomColumns are the indexed columns, in the order plans alternate.
var randomColumns = []string{randomkeys.IDCol, randomkeys.EmailCol}

// ServeRandomOutput is the JSON output of bench --serve --serve-kind random.
type ServeRandomOutput struct {
	Kind            string      `json:"kind"`
	Sizes           []int       `json:"sizes"`
	RowsPerFile     int         `json:"rows_per_file"`
	Columns         []string    `json:"columns"`
	Clients         int         `json:"clients"`
	DurationS       float64     `json:"duration_s"`
	AppendDurationS float64     `json:"append_duration_s"`
	AppendEveryS    float64     `json:"append_every_s"`
	Rounds          int         `json:"rounds"`
	ColdRounds      int         `json:"cold_rounds"`
	MemoryBudgetMiB int64       `json:"memory_budget_mib"`
	GoMemLimit      string      `json:"gomemlimit"`
	Driver          string      `json:"driver"`
	Binary          string      `json:"binary"`
	GOMAXPROCS      int         `json:"gomaxprocs"`
	NumCPU          int         `json:"num_cpu"`
	GoVersion       string      `json:"go_version"`
	LoadBefore      string      `json:"load_before"`
	LoadAfter       string      `json:"load_after"`
	Dir             string      `json:"dir"`
	Runs            []RandomRun `json:"runs"`
	// Failures are what makes the run fail (exit 1), each naming its size;
	// empty when it passed.
	Failures []string `json:"failures"`
	Notes    []string `json:"notes"`
}

// RandomRun is one size's results.
type RandomRun struct {
	Files int `json:"files"`
	// Reused says the table was made by an earlier run; Made is when.
	Reused       bool        `json:"reused"`
	Made         time.Time   `json:"made"`
	ServerPID    int         `json:"server_pid"`
	Measurements []BenchLine `json:"measurements"`
	Failures     []string    `json:"failures"`
}

func (r *RandomRun) add(l BenchLine) { r.Measurements = append(r.Measurements, l) }

// checkRandomValues checks the flags of the random kind.
func (c *BenchCmd) checkRandomValues() []error {
	errs := []error{cli.CheckAtLeast("--serve-cold-rounds", c.ServeColdRounds, 1, "round"),
		checkPositive("--serve-duration", c.ServeDuration)}
	if c.ServeAppendDuration < 0 {
		errs = append(errs, fmt.Errorf("--serve-append-duration %s: want 0 (no appends) or a positive duration", c.ServeAppendDuration))
	}
	if c.ServeAppendDuration > 0 {
		errs = append(errs, checkPositive("--serve-append-every", c.ServeAppendEvery))
	}
	return errs
}

// randomGoMemLimit is the GOMEMLIMIT the server runs with: in serve.yaml's
// proportion to its budget (1536 MiB for 1024), none without a budget.
func randomGoMemLimit(budgetMiB int64) string {
	if budgetMiB <= 0 {
		return ""
	}
	return strconv.FormatInt(budgetMiB*serveYAMLGoMemLimitMiB/serveYAMLBudgetMiB, 10) + "MiB"
}

// runServeRandom is bench --serve --serve-kind random.
func (c *BenchCmd) runServeRandom(ctx context.Context, e *env) error {
	sizes, err := parseSizes("--serve", c.Serve)
	if err != nil {
		return err
	}
	dir, cleanup, err := c.workDir("icebloom-bench-serve-random")
	if err != nil {
		return err
	}
	defer cleanup()
	out := &ServeRandomOutput{Kind: serveKindRandom, Sizes: sizes, RowsPerFile: randomkeys.Rows, Columns: randomColumns,
		Clients: c.ServeClients, DurationS: c.ServeDuration.Seconds(), AppendDurationS: c.ServeAppendDuration.Seconds(),
		AppendEveryS: c.ServeAppendEvery.Seconds(), Rounds: max(c.Repeat, 5), ColdRounds: c.ServeColdRounds,
		MemoryBudgetMiB: c.MemoryBudgetMiB, GoMemLimit: randomGoMemLimit(c.MemoryBudgetMiB), Driver: serveDriver,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
		LoadBefore: procstat.LoadAvg(), Dir: dir, Runs: []RandomRun{}, Failures: []string{}, Notes: []string{}}
	rb := &randomBench{c: c, e: e, out: out, dir: dir}
	if out.Binary, err = serveBinary(ctx, c.ServeBin, "--serve-bin", dir, rb.progress); err != nil {
		return err
	}
	if rb.cat, err = e.embedded(ctx, filepath.Join(dir, "warehouse")); err != nil {
		return err
	}
	if err := rb.cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace bench: %w", err)
	}
	for _, n := range sizes {
		run := RandomRun{Files: n, Measurements: []BenchLine{}, Failures: []string{}}
		// A size that cannot go on is a failure of the run, listed with the
		// others; the next size runs all the same.
		if err := rb.size(ctx, &run); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("serve %d (random): %w", n, err)
			}
			run.Failures = append(run.Failures, "stopped: "+err.Error())
		}
		for _, f := range run.Failures {
			out.Failures = append(out.Failures, fmt.Sprintf("%d files: %s", n, f))
		}
		out.Runs = append(out.Runs, run)
	}
	out.LoadAfter = procstat.LoadAvg()
	if e.json {
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		printServeRandom(e.stdout, out)
	}
	if len(out.Failures) > 0 {
		return fmt.Errorf("serve (random) failed: %s", strings.Join(out.Failures, "; "))
	}
	return nil
}

// randomBench holds what the sizes of a run share.
type randomBench struct {
	c   *BenchCmd
	e   *env
	out *ServeRandomOutput
	dir string
	cat icecatalog.Catalog
}

func (rb *randomBench) progress(format string, args ...any) {
	if !rb.e.json {
		fmt.Fprintf(rb.e.stderr, format+"\n", args...)
	}
}

// randomSize is one size's run: its table, server, clients and what they
// measured.
type randomSize struct {
	rb    *randomBench
	run   *RandomRun
	n     int
	ident table.Identifier
	rec   *randomkeys.Record
	vals  *randomkeys.Drawer
	srv   *serverProcess
	// statuses counts every answer the REST clients got, 429s retried by
	// iceberg-go included.
	statuses statusCounter
	// clients are REST clients' tables of the warm server: [0] measures
	// (side by side, after commits), the others plan at once.
	clients []*table.Table
	// local is the table the client plans locally.
	local   *table.Table
	dropped atomic.Int64
	// refused counts the plans the server did not make for want of room
	// (refusal), failed those that failed otherwise; refusals are the first
	// few refused.
	refused, failed atomic.Int64
	refusals        []string
	// callers numbers the clients' bearer tokens.
	callers atomic.Int64
	mu      sync.Mutex // guards run.Failures
}

func (rs *randomSize) fail(format string, args ...any) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.run.Failures) < randomMaxFailures {
		rs.run.Failures = append(rs.run.Failures, fmt.Sprintf(format, args...))
	}
}

// size runs the phases on a table of run.Files files.
func (rb *randomBench) size(ctx context.Context, run *RandomRun) error {
	n := run.Files
	rs := &randomSize{rb: rb, run: run, n: n, ident: table.Identifier{"bench", fmt.Sprintf("random_%d", n)}}
	if err := rs.table(ctx); err != nil {
		return err
	}
	defer rs.outcomes() // last, also when a phase stops the size
	rs.vals = randomkeys.NewDrawer(rs.rec.Spec, rs.rec.Location, uint64(time.Now().UnixNano()))
	var err error
	if rs.srv, err = rs.start(ctx, "serve.log"); err != nil {
		return err
	}
	defer rs.srv.stop()
	run.ServerPID = rs.srv.cmd.Process.Pid
	if err := rs.openClients(ctx); err != nil {
		return err
	}
	// Warm-up: the server reads the table's manifests and index, for each
	// column, and the local client its manifest list.
	for _, col := range randomColumns {
		if _, _, err := rs.plan(ctx, rs.clients[0], table.ScanPlanningRemote, rs.vals.Present(col, false)); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	if _, _, err := rs.plan(ctx, rs.local, table.ScanPlanningLocal, rs.vals.Present(randomkeys.IDCol, false)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := rs.sideBySide(ctx); err != nil {
		return err
	}
	window, err := rs.concurrent(ctx)
	if err != nil {
		return err
	}
	if rb.c.ServeAppendDuration > 0 {
		if err := rs.appends(ctx); err != nil {
			return err
		}
	}
	rs.memory(window)
	return rs.cold(ctx)
}

// table makes the table of n files and indexes it, or reuses the one an
// earlier run made (returned to the version its record names), and adds
// what making it cost per 1,000 files.
func (rs *randomSize) table(ctx context.Context) error {
	rb, n := rs.rb, rs.n
	name := strings.Join(rs.ident, ".")
	recPath := filepath.Join(rb.dir, fmt.Sprintf("random_%d.json", n))
	rec, err := randomkeys.ReadRecord(recPath)
	switch {
	case err == nil:
		removed, err := randomkeys.Restore(ctx, rb.cat, rs.ident, rec)
		if err != nil {
			return err
		}
		if len(removed) > 0 {
			rb.out.Notes = append(rb.out.Notes, fmt.Sprintf("%s: an earlier run left %d snapshots after the recorded one; they were removed", name, len(removed)))
		}
		if rb.c.FPP != rec.FPP {
			rb.out.Notes = append(rb.out.Notes, fmt.Sprintf("%s was indexed at fpp %g when it was made; --fpp %g is not applied to it", name, rec.FPP, rb.c.FPP))
		}
		rs.run.Reused = true
		rb.progress("serve %d (random): reusing %s, made %s (%s)", n, name, rec.Made.Format(time.RFC3339), recPath)
	case errors.Is(err, fs.ErrNotExist):
		if _, err := rb.cat.LoadTable(ctx, rs.ident); err == nil {
			return fmt.Errorf("%s exists in %s without its record %s: use another --dir", name, rb.dir, recPath)
		}
		if rec, err = rs.make(ctx, recPath); err != nil {
			return err
		}
	default:
		return err
	}
	rs.rec = rec
	rs.run.Made = rec.Made
	per := func(s float64) time.Duration { return time.Duration(s * 1000 / float64(n) * float64(time.Second)) }
	how := "made by this run"
	if rs.run.Reused {
		how = "made by an earlier run at " + rec.Made.Format(time.RFC3339) + ", reused"
	}
	rs.run.add(report.ReportedMS("make_write_ms_per_1000", per(rec.WriteS), fmt.Sprintf("writing %d files of %d rows (id, email) with arrow-go, %d at a time: %s in all; %s",
		n, rec.Spec.Rows, max(runtime.GOMAXPROCS(0), 2), cli.DurationText(time.Duration(rec.WriteS*float64(time.Second))), how)))
	rs.run.add(report.ReportedMS("make_add_files_ms_per_1000", per(rec.AddS), fmt.Sprintf("add_files commits of up to %d files (iceberg-go reads each footer): %s in all",
		rec.Spec.Batch, cli.DurationText(time.Duration(rec.AddS*float64(time.Second))))))
	rs.run.add(report.ReportedMS("make_index_ms_per_1000", per(rec.IndexS), fmt.Sprintf("indexer.Build of id and email at fpp %g: %s in all",
		rec.FPP, cli.DurationText(time.Duration(rec.IndexS*float64(time.Second))))))
	return nil
}

// make makes the table and its index, and writes its record.
func (rs *randomSize) make(ctx context.Context, recPath string) (*randomkeys.Record, error) {
	rb, n := rs.rb, rs.n
	spec := randomkeys.NewSpec(n)
	rb.progress("serve %d (random): writing %d files of %d rows, add_files commits of %d, then a build of %s",
		n, n, spec.Rows, spec.Batch, strings.Join(randomColumns, " and "))
	_, t, err := randomkeys.Create(ctx, rb.cat, rs.ident, spec, func(done int, t randomkeys.Timings) {
		rb.progress("  %d of %d files written (%s) and added (%s)", done, n, cli.DurationText(t.Write), cli.DurationText(t.Add))
	})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	step := max(n/10, 10_000)
	built, err := indexer.Build(ctx, rb.cat, rs.ident, indexer.Options{Columns: randomColumns, FPP: rb.c.FPP, FailFast: true,
		Progress: func(p indexer.Progress) {
			if p.FilesDone > 0 && p.FilesDone%step == 0 {
				rb.progress("  %d of %d files indexed (%s)", p.FilesDone, p.FilesTotal, cli.DurationText(time.Since(start)))
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if built.FilesIndexed != n {
		return nil, fmt.Errorf("build indexed %d files, want %d", built.FilesIndexed, n)
	}
	index := time.Since(start)
	tbl, err := rb.cat.LoadTable(ctx, rs.ident) // as the build left it
	if err != nil {
		return nil, err
	}
	rec := &randomkeys.Record{Table: strings.Join(rs.ident, "."), Spec: spec, Location: tbl.Location(),
		SnapshotID: tbl.CurrentSnapshot().SnapshotID, Statistics: randomkeys.StatisticsPaths(tbl.Metadata()),
		FPP: rb.c.FPP, Made: time.Now().UTC(), WriteS: t.Write.Seconds(), AddS: t.Add.Seconds(), IndexS: index.Seconds(),
		GoVersion: runtime.Version()}
	if err := rec.Write(recPath); err != nil {
		return nil, fmt.Errorf("record of %s: %w", rec.Table, err)
	}
	rb.progress("  made in %s (write %s, add_files %s, index %s); recorded in %s", cli.DurationText(t.Write+t.Add+index),
		cli.DurationText(t.Write), cli.DurationText(t.Add), cli.DurationText(index), recPath)
	return rec, nil
}

// start starts a server process logging to log in the run's directory.
func (rs *randomSize) start(ctx context.Context, log string) (*serverProcess, error) {
	c := rs.rb.c
	return startServer(ctx, serverConfig{bin: rs.rb.out.Binary, dir: rs.rb.dir, log: log, budgetMiB: c.MemoryBudgetMiB,
		goMemLimit: rs.rb.out.GoMemLimit, extra: []string{"--max-plans-in-flight", strconv.Itoa(max(c.ServeClients+1, 16))}})
}

// client opens a REST client of the server at addr, its own connection
// counting its answers, and loads the table through it. Each client sends
// a bearer token of its own (catalog mode without --bearer-token-file takes
// any), so that serve sees each as a caller of its own, as it would see
// engines with credentials of their own: clients without one are one
// caller, their address, whose plans admission bounds to a quarter of the
// plan slots.
func (rs *randomSize) client(ctx context.Context, addr string) (*table.Table, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	token := "bench-client-" + strconv.FormatInt(rs.callers.Add(1), 10)
	cl, err := rest.NewCatalog(ctx, "bench", "http://"+addr, rest.WithOAuthToken(token),
		rest.WithCustomTransport(&countingTransport{c: &rs.statuses, rt: tr}))
	if err != nil {
		return nil, fmt.Errorf("REST client of %s: %w", addr, err)
	}
	tbl, err := cl.LoadTable(ctx, rs.ident)
	if err != nil {
		return nil, fmt.Errorf("load %s through %s: %w", strings.Join(rs.ident, "."), addr, err)
	}
	return tbl, nil
}

func (rs *randomSize) openClients(ctx context.Context) error {
	rs.clients = make([]*table.Table, rs.rb.c.ServeClients+1)
	for i := range rs.clients {
		var err error
		if rs.clients[i], err = rs.client(ctx, rs.srv.addr); err != nil {
			return err
		}
	}
	var err error
	rs.local, err = rs.client(ctx, rs.srv.addr)
	return err
}

// plan plans the point lookup of v on tbl in mode and returns the data
// files planned and the time it took. A plan that drops the file holding v
// is counted and a failure of the run, not an error.
func (rs *randomSize) plan(ctx context.Context, tbl *table.Table, mode table.ScanPlanningMode, v randomkeys.Value) (int, time.Duration, error) {
	start := time.Now()
	tasks, err := tbl.Scan(table.WithRowFilter(v.Filter()), table.WithScanPlanningMode(mode)).PlanFiles(ctx)
	d := time.Since(start)
	if err != nil {
		return 0, d, fmt.Errorf("plan %s (%s): %w", v, mode, err)
	}
	files := cli.DataFiles(tasks)
	if v.Holder != "" && !slices.Contains(files, v.Holder) {
		rs.dropped.Add(1)
		rs.fail("plan %s (%s) dropped %s, which holds it", v, mode, v.Holder)
	}
	return len(files), d, nil
}

// try plans v as plan does; the measurement goes on without a plan that
// was not made (false): one the server refused for want of room is counted
// (refusal; the first few kept as examples), any other is a failure of the
// run, listed as what.
func (rs *randomSize) try(ctx context.Context, tbl *table.Table, mode table.ScanPlanningMode, v randomkeys.Value, what string) (int, time.Duration, bool) {
	f, d, err := rs.plan(ctx, tbl, mode, v)
	switch {
	case err == nil:
		return f, d, true
	case refusal(err):
		if rs.refused.Add(1) <= 3 {
			rs.mu.Lock()
			rs.refusals = append(rs.refusals, fmt.Sprintf("%s: %v", what, err))
			rs.mu.Unlock()
		}
	case ctx.Err() == nil:
		rs.failed.Add(1)
		rs.fail("%s: %v", what, err)
	}
	return 0, d, false
}

// median is the median of ds, 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return report.Median(ds)
}

// ratio adds the median of num over that of den as key, held to target;
// when either has no plan (each refused or failed), it says so without a
// verdict.
func (rs *randomSize) ratio(key string, num, den []time.Duration, target func(float64) (string, *bool), detail func(n, d time.Duration) string) {
	if len(num) == 0 || len(den) == 0 {
		rs.run.add(BenchLine{Key: key, Value: 0, Unit: "x", Target: "none (nothing to compare)",
			Detail: "no plan of one side was made: each was refused (plans_refused) or failed (the failures)"})
		return
	}
	n, d := report.Median(num), report.Median(den)
	r := report.Ratio(n, d)
	t, pass := target(r)
	rs.run.add(BenchLine{Key: key, Value: r, Unit: "x", Target: t, Pass: pass, Detail: detail(n, d)})
}

// next is the k-th value of a sequence that alternates the columns, and
// within each alternates a value some file holds with one drawn afresh.
func (rs *randomSize) next(k int, edge bool) randomkeys.Value {
	col := randomColumns[k%len(randomColumns)]
	if k/len(randomColumns)%2 == 0 {
		return rs.vals.Present(col, edge)
	}
	return rs.vals.Fresh(col, edge)
}

// sideBySide plans new values warm, of the middle and of the edges of both
// columns, and locally, in interleaved rounds, and adds their medians and
// ratios.
func (rs *randomSize) sideBySide(ctx context.Context) error {
	rounds := rs.rb.out.Rounds
	rs.rb.progress("serve %d (random): %d rounds of %d warm plans of middle values and %d of edge values (id and email alternating) and a local plan, interleaved",
		rs.n, rounds, randomWarmPerRound, len(randomColumns))
	tbl := rs.clients[0]
	warm := map[string][]time.Duration{}
	var middle, edge, local []time.Duration
	var middleFiles, edgeFiles, localFiles []int
	k, e := 0, 0
	steps := []func(r int){
		func(int) {
			for range randomWarmPerRound {
				v := rs.next(k, false)
				k++
				if f, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, v, "warm"); ok {
					middle, middleFiles, warm[v.Column] = append(middle, d), append(middleFiles, f), append(warm[v.Column], d)
				}
			}
			for range randomColumns {
				v := rs.next(e, true)
				e++
				if f, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, v, "warm, edge"); ok {
					edge, edgeFiles = append(edge, d), append(edgeFiles, f)
				}
			}
		},
		func(r int) {
			v := rs.vals.Present(randomColumns[r%len(randomColumns)], false)
			if f, d, ok := rs.try(ctx, rs.local, table.ScanPlanningLocal, v, "local"); ok {
				local, localFiles = append(local, d), append(localFiles, f)
			}
		},
	}
	for r := range rounds {
		for i := range steps { // rotated, so neither kind always runs first
			steps[(i+r)%len(steps)](r)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	run := rs.run
	spread := func(fs []int) string {
		if len(fs) == 0 {
			return "none planned"
		}
		s := slices.Sorted(slices.Values(fs))
		return fmt.Sprintf("median %d, %d to %d", s[len(s)/2], s[0], s[len(s)-1])
	}
	mid, edg, loc := median(middle), median(edge), median(local)
	files := 0
	if len(middleFiles) > 0 {
		files = slices.Sorted(slices.Values(middleFiles))[len(middleFiles)/2]
	}
	run.add(BenchLine{Key: "serve_files_planned", Value: float64(files), Unit: "files", Target: "none (reported)",
		Detail: fmt.Sprintf("data files of a point lookup planned by the warm server: middle values %s; edge values %s; by the client locally (min/max statistics alone) %s",
			spread(middleFiles), spread(edgeFiles), spread(localFiles))})
	run.add(report.ReportedMS("serve_warm_ms", mid, fmt.Sprintf("the client's PlanFiles, server planning warm, a new value from the middle of its column each time, id and email alternating, half held by a file: median of %d", len(middle))))
	for _, col := range randomColumns {
		run.add(report.ReportedMS("serve_warm_"+col+"_ms", median(warm[col]), fmt.Sprintf("the same, the plans of %s alone: median of %d", col, len(warm[col]))))
	}
	run.add(report.ReportedMS("serve_warm_edge_ms", edg, fmt.Sprintf("the same for new values from either edge of their column (the lowest or highest %d%% of ids, emails starting with 0 or z), where min/max statistics drop some files: median of %d",
		randomkeys.EdgePercent, len(edge))))
	run.add(report.ReportedMS("local_plan_ms", loc, fmt.Sprintf("the client's own PlanFiles (table.ScanPlanningLocal, the table loaded once, so its manifest list is cached) of a middle value, id and email alternating: median of %d", len(local))))
	for _, l := range []struct {
		key  string
		warm []time.Duration
		what string
	}{{"serve_warm_vs_local", middle, "middle values"}, {"serve_warm_edge_vs_local", edge, "edge values"}} {
		rs.ratio(l.key, l.warm, local, func(r float64) (string, *bool) { return randomWarmTarget(rs.n, r) }, func(w, loc time.Duration) string {
			return fmt.Sprintf("server planning warm, %s of id and email alternating, %s vs the client's local planning %s, interleaved",
				l.what, cli.DurationText(w), cli.DurationText(loc))
		})
	}
	return nil
}

// randomWarmTarget holds a warm/local ratio to 0.02x from 100,000 files and
// 0.01x from 1,000,000; below, it is reported (the target names only the
// first).
func randomWarmTarget(files int, r float64) (string, *bool) {
	if files >= randomWarmFromLarge {
		return report.AtMost(r, randomWarmVsLocalLarge, "x")
	}
	if files < randomWarmFrom {
		return fmt.Sprintf("none (<= %gx from %d)", randomWarmVsLocal, randomWarmFrom), nil
	}
	return report.AtMost(r, randomWarmVsLocal, "x")
}

// planners has clients plan new values until stop is closed: id and email
// alternating, half held by a file, one in randomEdgeEvery from an edge.
// It returns the latencies of the plans that were answered; a plan that
// was not is counted as try does.
func (rs *randomSize) planners(ctx context.Context, clients []*table.Table, stop <-chan struct{}) func() []time.Duration {
	lat := make([][]time.Duration, len(clients))
	var wg sync.WaitGroup
	for i, tbl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				v := rs.next(k, k%randomEdgeEvery == randomEdgeEvery-1)
				_, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, v, fmt.Sprintf("client %d", i))
				switch {
				case ok:
					lat[i] = append(lat[i], d)
				case ctx.Err() != nil:
					return
				default:
					time.Sleep(100 * time.Millisecond) // no busy loop against a dead server
				}
			}
		}()
	}
	return func() []time.Duration {
		wg.Wait()
		return slices.Concat(lat...)
	}
}

// refusal reports whether err, of iceberg-go's REST client, is a plan the
// server did not make for want of room: its 429 (SlowDownException) that
// outlived iceberg-go's retries, a submitted plan that failed waiting for
// room in the work budget or over its caller's share (both say "retry
// later"), or one iceberg-go stopped polling for before it was done.
func refusal(err error) bool {
	m := err.Error()
	return strings.Contains(m, "SlowDownException") || strings.Contains(m, "retry later") || strings.Contains(m, "polling exhausted")
}

// concurrent has the clients but the first plan at once for
// --serve-duration, and adds their p50, p99 and its ratio and the 429s
// they got; it returns when they ran, since the server started.
func (rs *randomSize) concurrent(ctx context.Context) ([2]time.Duration, error) {
	c := rs.rb.c
	clients := rs.clients[1:]
	rs.rb.progress("serve %d (random): %d clients planning at once for %s", rs.n, len(clients), c.ServeDuration)
	before, refusedBefore := rs.statuses.snapshot(), rs.refused.Load()
	rs.srv.rss.restart()
	stop := make(chan struct{})
	window := [2]time.Duration{time.Since(rs.srv.started)}
	wait := rs.planners(ctx, clients, stop)
	select {
	case <-time.After(c.ServeDuration):
	case <-ctx.Done():
	}
	close(stop)
	lat := wait()
	window[1] = time.Since(rs.srv.started)
	if err := ctx.Err(); err != nil {
		return window, err
	}
	rssWindow := rs.srv.rss.restart()
	after, refused := rs.statuses.snapshot(), rs.refused.Load()-refusedBefore
	run := rs.run
	if len(lat) == 0 {
		return window, errors.New("the concurrent clients planned nothing")
	}
	wall := window[1] - window[0]
	p50, p99 := report.Percentile(lat, 0.50), report.Percentile(lat, 0.99)
	run.add(report.ReportedMS("serve_concurrent_p50_ms", p50, fmt.Sprintf("%d clients (each its own REST client, connection and bearer token: a caller of its own) planning new values for %s, id and email alternating, half held by a file, 1 in %d from an edge: %d plans, %.1f plans/s",
		len(clients), c.ServeDuration, randomEdgeEvery, len(lat), float64(len(lat))/wall.Seconds())))
	run.add(report.ReportedMS("serve_concurrent_p99_ms", p99, fmt.Sprintf("p99 of the same %d plans (nearest rank)", len(lat))))
	r := report.Ratio(p99, p50)
	target, pass := report.AtMost(r, serveP99VsP50, "x")
	run.add(BenchLine{Key: "serve_concurrent_p99_vs_p50", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("p99 %s vs p50 %s of %d clients' warm plans", cli.DurationText(p99), cli.DurationText(p50), len(clients))})
	n429 := after.codes[http.StatusTooManyRequests] - before.codes[http.StatusTooManyRequests]
	run.add(BenchLine{Key: "serve_concurrent_refused", Value: float64(n429 + refused), Unit: "requests", Target: "0", Pass: ptr(n429+refused == 0),
		Detail: fmt.Sprintf("answers 429 the clients got (%d; iceberg-go retries them) and plans the server did not make for want of room (%d: a 429 after iceberg-go's retries, a submitted plan failed 'retry later', or one iceberg-go stopped polling for); --max-plans-in-flight %d",
			n429, refused, max(c.ServeClients+1, 16))})
	run.add(BenchLine{Key: "rss_concurrent_mib", Value: float64(rssWindow) / (1 << 20), Unit: "MiB", Target: "none (reported)",
		Detail: fmt.Sprintf("icebloom serve's VmRSS sampled every %s during the %d clients, peak", rssPeriod, len(clients))})
	return window, nil
}

// appends appends a file every --serve-append-every for
// --serve-append-duration while some clients plan: an add_files commit of
// one file, the measuring client's first plan after it (of a value of the
// new file, which the index does not cover yet), a sync of the index, its
// first plan after that, then warm plans until the next append. It adds the
// first plans against the warm ones, then returns the table to its
// recorded version and deletes the files the appends wrote.
func (rs *randomSize) appends(ctx context.Context) error {
	c, rb := rs.rb.c, rs.rb
	bg := rs.clients[1 : 1+min(randomAppendClients, len(rs.clients)-1)]
	rb.progress("serve %d (random): a file appended every %s for %s while %d clients plan", rs.n, c.ServeAppendEvery, c.ServeAppendDuration, len(bg))
	refusedBefore := rs.refused.Load()
	stop := make(chan struct{})
	wait := rs.planners(ctx, bg, stop)
	tbl := rs.clients[0]
	rng := rs.vals.Rand()
	var afterAppend, afterSync, warm, commitT, syncT []time.Duration
	var written []string
	var loopErr error
	deadline := time.Now().Add(c.ServeAppendDuration)
	for k := 0; time.Now().Before(deadline) && loopErr == nil && ctx.Err() == nil; k++ {
		tick := time.Now()
		loopErr = func() error {
			path, ids, emails, err := randomkeys.WriteExtra(rs.rec.Location, rng, rs.rec.Spec.Rows, rs.n+k)
			if err != nil {
				return err
			}
			written = append(written, path)
			start := time.Now()
			if _, err := randomkeys.AddFiles(ctx, rb.cat, rs.ident, []string{path}); err != nil {
				return err
			}
			commitT = append(commitT, time.Since(start))
			of := func(col string) randomkeys.Value {
				j := rng.IntN(len(ids))
				v := randomkeys.Value{Column: col, ID: ids[j], Email: emails[j], Holder: path}
				rs.vals.Take(v)
				return v
			}
			if _, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, of(randomColumns[k%2]), "the first plan after appending "+path); ok {
				afterAppend = append(afterAppend, d)
			}
			start = time.Now()
			synced, err := indexer.Sync(ctx, rb.cat, rs.ident, indexer.Options{FailFast: true, CompactAbove: -1})
			if err != nil {
				return fmt.Errorf("sync after appending %s: %w", path, err)
			}
			syncT = append(syncT, time.Since(start))
			if synced.FilesIndexed != 1 {
				return fmt.Errorf("sync after appending %s indexed %d files, want 1", path, synced.FilesIndexed)
			}
			if _, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, of(randomColumns[(k+1)%2]), "the first plan after syncing "+path); ok {
				afterSync = append(afterSync, d)
			}
			for w := 0; w == 0 || time.Since(tick) < c.ServeAppendEvery && time.Now().Before(deadline); w++ {
				if _, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, rs.next(w, false), "warm, between appends"); ok {
					warm = append(warm, d)
				}
			}
			return nil
		}()
	}
	close(stop)
	bgLat := wait()
	restoreErr := rs.restore(ctx, written)
	if loopErr != nil {
		return loopErr
	}
	if restoreErr != nil {
		return restoreErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(commitT) == 0 {
		return errors.New("no append completed within --serve-append-duration")
	}
	run := rs.run
	w := median(warm)
	run.add(report.ReportedMS("append_warm_ms", w, fmt.Sprintf("the measuring client's warm plans between appends (new middle values, id and email alternating), while %d clients plan: median of %d",
		len(bg), len(warm))))
	for _, l := range []struct {
		key, what string
		lat       []time.Duration
	}{
		{"after_append_vs_warm", "after an add_files commit of one file (one manifest more; a value of that file, which the index does not cover yet)", afterAppend},
		{"after_sync_vs_warm", "after the sync that indexes it (indexer.Sync: a statistics commit; a value of that file)", afterSync},
	} {
		rs.ratio(l.key, l.lat, warm, func(r float64) (string, *bool) { return report.AtMost(r, randomAfterCommitVsWarm, "x") },
			func(first, w time.Duration) string {
				return fmt.Sprintf("the measuring client's first plan %s: median %s of %d, worst %s, vs its warm plans %s", l.what,
					cli.DurationText(first), len(l.lat), cli.DurationText(slices.Max(l.lat)), cli.DurationText(w))
			})
	}
	bgDetail := "no plan answered"
	if len(bgLat) > 0 {
		bgDetail = fmt.Sprintf("p50 %s, p99 %s of %d plans", cli.DurationText(report.Percentile(bgLat, 0.5)), cli.DurationText(report.Percentile(bgLat, 0.99)), len(bgLat))
	}
	run.add(report.ReportedMS("append_commit_ms", median(commitT), fmt.Sprintf("%d appends: the add_files commit of one file, median (the sync after it: median %s); the %d clients planning meanwhile: %s; %d plans refused for want of room",
		len(commitT), cli.DurationText(median(syncT)), len(bg), bgDetail, rs.refused.Load()-refusedBefore)))
	return nil
}

// restore returns the table to its recorded version after the appends and
// deletes the data files and index files they wrote.
func (rs *randomSize) restore(ctx context.Context, written []string) error {
	tbl, err := rs.rb.cat.LoadTable(ctx, rs.ident)
	if err != nil {
		return err
	}
	for _, p := range randomkeys.StatisticsPaths(tbl.Metadata()) {
		if !slices.Contains(rs.rec.Statistics, p) {
			written = append(written, p)
		}
	}
	if _, err := randomkeys.Restore(ctx, rs.rb.cat, rs.ident, rs.rec); err != nil {
		return err
	}
	for _, p := range written {
		if err := os.Remove(strings.TrimPrefix(p, "file://")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// memory stops the warm server and adds its live heap at its collections
// (its gctrace) during the concurrent clients and over its life, against
// the budget, and its peak RSS. A server that exited meanwhile fails the
// run.
func (rs *randomSize) memory(window [2]time.Duration) {
	c, run := rs.rb.c, rs.run
	hwm := procstat.StatusOf(rs.srv.cmd.Process.Pid, "VmHWM")
	if exited := rs.srv.exited(); exited != nil {
		rs.fail("the server exited during the run: %v; its log: %s", exited, rs.srv.logTail())
	}
	rs.srv.stop()
	peak := max(hwm, rs.srv.rss.peak.Load())
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	target, pass := report.AtMost(mib(peak), randomRSSMiB, " MiB")
	run.add(BenchLine{Key: "server_peak_rss_mib", Value: mib(peak), Unit: "MiB", Target: target, Pass: pass,
		Detail: fmt.Sprintf("icebloom serve's peak RSS over its life (warm-up, side by side, %d clients, appends): VmHWM %s at the end, VmRSS sampled every %s peaked at %s; --memory-budget-mib %d, GOMEMLIMIT %s",
			c.ServeClients, cli.BytesText(hwm), rssPeriod, cli.BytesText(rs.srv.rss.peak.Load()), c.MemoryBudgetMiB, cmp.Or(rs.rb.out.GoMemLimit, "none"))})
	gcs, err := rs.srv.gcs()
	if err != nil {
		rs.rb.out.Notes = append(rs.rb.out.Notes, fmt.Sprintf("%d files: %v", rs.n, err))
		return
	}
	var during, all []procstat.GC
	for _, gc := range gcs {
		all = append(all, gc)
		if gc.At >= window[0] && gc.At <= window[1] {
			during = append(during, gc)
		}
	}
	liveLine := func(key, what string, gcs []procstat.GC, targeted bool) {
		if len(gcs) == 0 {
			run.add(BenchLine{Key: key, Value: 0, Unit: "MiB", Target: "none (reported)",
				Detail: fmt.Sprintf("icebloom serve collected no garbage %s: no live heap was marked", what)})
			return
		}
		var peak, goal int64
		for _, gc := range gcs {
			peak, goal = max(peak, gc.Live), max(goal, gc.Goal)
		}
		target, pass := "none (reported)", (*bool)(nil)
		if targeted && c.MemoryBudgetMiB > 0 {
			target, pass = report.AtMost(float64(peak), float64(c.MemoryBudgetMiB), " MiB")
		}
		run.add(BenchLine{Key: key, Value: float64(peak), Unit: "MiB", Target: target, Pass: pass,
			Detail: fmt.Sprintf("icebloom serve's live heap after marking (GODEBUG=gctrace=1), peak of %d collections %s; largest heap goal %d MiB; --memory-budget-mib %d",
				len(gcs), what, goal, c.MemoryBudgetMiB)})
	}
	liveLine("live_heap_concurrent_mib", fmt.Sprintf("during the %d clients", c.ServeClients), during, true)
	liveLine("live_heap_life_mib", "over its life", all, false)
}

// cold starts a fresh server process for each of --serve-cold-rounds,
// times its first plan, interleaved with local plans, and adds their
// medians and ratio.
func (rs *randomSize) cold(ctx context.Context) error {
	c, run := rs.rb.c, rs.run
	rs.rb.progress("serve %d (random): %d fresh server processes' first plans and local plans, interleaved", rs.n, c.ServeColdRounds)
	var cold, local []time.Duration
	var rss int64
	for r := range c.ServeColdRounds {
		col := randomColumns[r%len(randomColumns)]
		steps := []func() error{
			func() error {
				sp, err := rs.start(ctx, "serve-cold.log")
				if err != nil {
					return err
				}
				defer sp.stop()
				tbl, err := rs.client(ctx, sp.addr) // a client loads the table before it plans
				if err != nil {
					return err
				}
				if _, d, ok := rs.try(ctx, tbl, table.ScanPlanningRemote, rs.vals.Present(col, false), "cold"); ok {
					cold = append(cold, d)
				}
				rss = max(rss, procstat.StatusOf(sp.cmd.Process.Pid, "VmHWM"), sp.rss.peak.Load())
				if exited := sp.exited(); exited != nil {
					rs.fail("a fresh server exited: %v; its log: %s", exited, sp.logTail())
				}
				return nil
			},
			func() error {
				if _, d, ok := rs.try(ctx, rs.local, table.ScanPlanningLocal, rs.vals.Present(col, false), "local, cold phase"); ok {
					local = append(local, d)
				}
				return ctx.Err()
			},
		}
		for i := range steps {
			if err := steps[(i+r)%len(steps)](); err != nil {
				return err
			}
		}
	}
	cm, lm := median(cold), median(local)
	run.add(report.ReportedMS("serve_cold_ms", cm, fmt.Sprintf("the first plan of a fresh icebloom serve process (after the client loaded the table through it; the OS page cache stays warm), a middle value, id and email alternating: median of %d; peak RSS of those processes %s",
		len(cold), cli.BytesText(rss))))
	run.add(report.ReportedMS("local_plan_cold_ms", lm, fmt.Sprintf("the client's local planning interleaved with them: median of %d", len(local))))
	rs.ratio("serve_cold_vs_local", cold, local, func(r float64) (string, *bool) { return report.TargetFrom(rs.n, randomColdFrom, r, randomColdVsLocal) },
		func(cm, lm time.Duration) string {
			return fmt.Sprintf("a fresh server's first plan %s vs the client's local planning %s, interleaved", cli.DurationText(cm), cli.DurationText(lm))
		})
	return nil
}

// outcomes adds the counts that fail the run: plans that dropped the file
// holding their value, plans that failed, 5xx answers and requests that got
// none.
func (rs *randomSize) outcomes() {
	run := rs.run
	n := rs.dropped.Load()
	run.add(BenchLine{Key: "files_dropped", Value: float64(n), Unit: "requests", Target: "0", Pass: ptr(n == 0),
		Detail: "plans (warm, concurrent, after commits, cold, local) of a value a file holds that did not keep that file"})
	r := rs.refused.Load()
	detail := "plans the server did not make for want of room, in every step (a 429 after iceberg-go's retries, a submitted plan failed 'retry later', one iceberg-go stopped polling for)"
	rs.mu.Lock()
	if len(rs.refusals) > 0 {
		detail += "; the first: " + strings.Join(rs.refusals, "; ")
	}
	rs.mu.Unlock()
	run.add(BenchLine{Key: "plans_refused", Value: float64(r), Unit: "requests", Target: "0", Pass: ptr(r == 0), Detail: detail})
	f := rs.failed.Load()
	run.add(BenchLine{Key: "plans_failed", Value: float64(f), Unit: "requests", Target: "0", Pass: ptr(f == 0),
		Detail: "plans that failed otherwise (answered status failed for another reason, or another error), each a failure of the run"})
	st := rs.statuses.snapshot()
	var fivexx int64
	for code, k := range st.codes {
		if code >= 500 {
			fivexx += k
		}
	}
	run.add(BenchLine{Key: "server_5xx", Value: float64(fivexx), Unit: "requests", Target: "0", Pass: ptr(fivexx == 0),
		Detail: fmt.Sprintf("answers 5xx any client got, of %d answers; %d requests got no answer (transport errors)", st.total(), st.errs)})
	if fivexx > 0 {
		rs.fail("%d answers 5xx (%v)", fivexx, st.codes)
	}
	if st.errs > 0 {
		rs.fail("%d requests got no answer", st.errs)
	}
}

// statusCounter counts the HTTP answers of the REST clients by status,
// and the requests that got none.
type statusCounter struct {
	mu    sync.Mutex
	codes map[int]int64
	errs  int64
}

type statusCounts struct {
	codes map[int]int64
	errs  int64
}

func (s statusCounts) total() int64 {
	var t int64
	for _, k := range s.codes {
		t += k
	}
	return t
}

func (c *statusCounter) count(resp *http.Response, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs++
		return
	}
	if c.codes == nil {
		c.codes = map[int]int64{}
	}
	c.codes[resp.StatusCode]++
}

func (c *statusCounter) snapshot() statusCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	codes := map[int]int64{}
	for k, v := range c.codes {
		codes[k] = v
	}
	return statusCounts{codes: codes, errs: c.errs}
}

// countingTransport counts every answer of rt in c.
type countingTransport struct {
	c  *statusCounter
	rt http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if req.Context().Err() == nil || err == nil {
		t.c.count(resp, err)
	}
	return resp, err
}

// printServeRandom writes the results as one text table per size.
func printServeRandom(w io.Writer, out *ServeRandomOutput) {
	fmt.Fprintf(w, "icebloom bench --serve --serve-kind random: %d rows per file, %s indexed, %d rounds, %d clients for %gs, a file appended every %gs for %gs, %d cold rounds, --memory-budget-mib %d, GOMEMLIMIT %s, GOMAXPROCS %d, %d CPUs, %s\n",
		out.RowsPerFile, strings.Join(out.Columns, " and "), out.Rounds, out.Clients, out.DurationS, out.AppendEveryS, out.AppendDurationS, out.ColdRounds,
		out.MemoryBudgetMiB, cmp.Or(out.GoMemLimit, "none"), out.GOMAXPROCS, out.NumCPU, out.GoVersion)
	fmt.Fprintf(w, "server: %s, catalog mode, a process of its own on loopback; driven by %s; load average %s before, %s after\n", out.Binary, out.Driver, out.LoadBefore, out.LoadAfter)
	for _, run := range out.Runs {
		made := "made by this run"
		if run.Reused {
			made = "made " + run.Made.Format(time.RFC3339) + ", reused"
		}
		fmt.Fprintf(w, "\n%d files (%s; server pid %d)\n", run.Files, made, run.ServerPID)
		report.PrintLines(w, run.Measurements)
	}
	report.PrintNotes(w, out.Notes)
	if len(out.Failures) == 0 {
		fmt.Fprintln(w, "\nresult: pass (no file dropped, no 5xx, no transport error, the server did not die)")
		return
	}
	fmt.Fprintln(w, "\nresult: FAILED")
	for _, f := range out.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}
