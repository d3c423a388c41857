//go:build icebloom_bench

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/smallfiles"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/indexer"
)

// The S3 floor benchmark (`bench --s3-floor N`, issue 17 "Keep object
// storage busy"): on the in-process S3 server answering each request after
// a fixed delay, a table of N data files is indexed by a build reading
// ahead (the defaults: DefaultRequestsInFlight requests in flight, a CPU
// worker per CPU) and by a build whose workers read their own files (as
// before reading ahead: DisablePrefetch), and both are held against the
// network floor: the same range GETs of the data files that the build
// sent, replayed with the same number in flight and nothing done with the
// bytes. The same files in a local warehouse show what reading ahead costs
// where requests are cheap.

// s3FloorDelay is the S3 server's delay per request: a round trip to a
// remote object store.
const s3FloorDelay = 10 * time.Millisecond

// S3FloorOutput is the JSON output of bench --s3-floor.
type S3FloorOutput struct {
	Files            int         `json:"files"`
	RowsPerFile      int         `json:"rows_per_file"`
	Columns          []string    `json:"columns"`
	S3DelayMS        float64     `json:"s3_delay_ms"`
	RequestsInFlight int         `json:"requests_in_flight"`
	GOMAXPROCS       int         `json:"gomaxprocs"`
	NumCPU           int         `json:"num_cpu"`
	GoVersion        string      `json:"go_version"`
	Repeat           int         `json:"repeat"`
	Dir              string      `json:"dir"`
	Notes            []string    `json:"notes"`
	Measurements     []BenchLine `json:"measurements"`
}

func (o *S3FloorOutput) add(l BenchLine) { o.Measurements = append(o.Measurements, l) }

// floorRead is one range GET of a data file, as the S3 server recorded it.
type floorRead struct {
	location string
	off, n   int64
}

// runS3Floor is bench --s3-floor.
func (c *BenchCmd) runS3Floor(ctx context.Context, e *env) error {
	n, rows := c.S3Floor, c.S3FloorRows
	if n < 1 || rows < 1 || c.Repeat < 1 || !(c.FPP > 0 && c.FPP < 1) {
		return fmt.Errorf("--s3-floor and --s3-floor-rows must be positive, --repeat positive, --fpp within (0, 1)")
	}
	dir, cleanup, err := c.workDir("icebloom-bench-s3floor")
	if err != nil {
		return err
	}
	defer cleanup()
	out := &S3FloorOutput{Files: n, RowsPerFile: rows, Columns: scaleColumns, S3DelayMS: float64(s3FloorDelay) / 1e6,
		RequestsInFlight: filescan.DefaultRequestsInFlight, GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(),
		GoVersion: runtime.Version(), Repeat: c.Repeat, Dir: dir, Notes: []string{}}
	progress := func(format string, args ...any) {
		if !e.json {
			fmt.Fprintf(e.stderr, format+"\n", args...)
		}
	}

	srv, err := catalogtest.StartS3()
	if err != nil {
		return err
	}
	defer srv.Close()
	s3cat, err := catalog.Open(ctx, catalog.Options{Type: "sql", URI: filepath.Join(dir, "s3-catalog.db"),
		Warehouse: srv.Location("warehouse"), Properties: srv.Properties()})
	if err != nil {
		return err
	}
	if cl, ok := s3cat.(icecatalog.Closer); ok {
		defer cl.Close()
	}
	localCat, err := e.embedded(ctx, dir)
	if err != nil {
		return err
	}

	progress("writing %d data files of %d rows to S3 and to a local warehouse", n, rows)
	files, err := floorFiles(n, rows)
	if err != nil {
		return err
	}
	ident := table.Identifier{"bench", "s3floor"}
	s3put := func(location, base string, data []byte) (string, error) {
		key, ok := srv.Key(location + "/data/" + base)
		if !ok {
			return "", fmt.Errorf("table location %s is not in the bucket", location)
		}
		return srv.Location(key), srv.PutObject(key, data)
	}
	if err := floorTable(ctx, s3cat, ident, files, s3put); err != nil {
		return err
	}
	if err := floorTable(ctx, localCat, ident, files, smallfiles.LocalPut); err != nil {
		return err
	}
	tbl, err := s3cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return err
	}

	build := func(cat icecatalog.Catalog, o indexer.Options) (total, reading, cpu time.Duration, err error) {
		o.Columns, o.FPP, o.FailFast = scaleColumns, c.FPP, true
		var first, last time.Time
		o.Progress = func(p indexer.Progress) {
			if p.FilesDone == 0 {
				first = time.Now()
			}
			last = time.Now()
		}
		start, cpu0 := time.Now(), processCPU()
		sum, err := indexer.Build(ctx, cat, ident, o)
		if err != nil {
			return 0, 0, 0, err
		}
		if sum.FilesIndexed != n {
			return 0, 0, 0, fmt.Errorf("build indexed %d of %d files", sum.FilesIndexed, n)
		}
		return time.Since(start), last.Sub(first), processCPU() - cpu0, nil
	}
	ahead := indexer.Options{}.WithKnobs(indexer.Knobs{ForcePrefetch: true})                               // the defaults on S3; forced locally
	workers := indexer.Options{Parallel: runtime.NumCPU()}.WithKnobs(indexer.Knobs{DisablePrefetch: true}) // as before reading ahead

	progress("warm-up builds (no delay)")
	for _, o := range []indexer.Options{ahead, workers} {
		if _, _, _, err := build(s3cat, o); err != nil {
			return err
		}
		if _, _, _, err := build(localCat, o); err != nil {
			return err
		}
	}

	progress("S3 with %s per request: build reading ahead, the network floor, build of workers reading their own files (x%d)", s3FloorDelay, c.Repeat)
	srv.SetDelay(s3FloorDelay)
	defer srv.SetDelay(0)
	var tAhead, tRead, tFloor, tWorkers, cAhead, cFloor, cWorkers []time.Duration
	var reads []floorRead
	var aheadReqs, otherReqs, workerReqs, workerHeads int
	for i := range c.Repeat {
		srv.Reset()
		d, r, cpu, err := build(s3cat, ahead)
		if err != nil {
			return err
		}
		tAhead, tRead, cAhead = append(tAhead, d), append(tRead, r), append(cAhead, cpu)
		if i == 0 {
			if reads, aheadReqs, err = floorReads(srv); err != nil {
				return err
			}
			otherReqs = len(srv.Requests()) - aheadReqs
		}
		srv.Reset()
		cpu0 := processCPU()
		if d, err = floor(ctx, fs, reads, filescan.DefaultRequestsInFlight); err != nil {
			return err
		}
		tFloor, cFloor = append(tFloor, d), append(cFloor, processCPU()-cpu0)
		srv.Reset()
		if d, _, cpu, err = build(s3cat, workers); err != nil {
			return err
		}
		tWorkers, cWorkers = append(tWorkers, d), append(cWorkers, cpu)
		if i == 0 {
			for _, r := range srv.Requests() {
				if strings.HasSuffix(r.Key, ".parquet") {
					workerReqs++
					if r.Method == http.MethodHead {
						workerHeads++
					}
				}
			}
		}
	}
	srv.SetDelay(0)

	// Local builds are short, and a shared machine's load moves them: more
	// runs for the median.
	localRepeat := max(c.Repeat, 9)
	progress("local warehouse: build reading ahead and build of workers reading their own files, interleaved (x%d)", localRepeat)
	var lAhead, lWorkers, lcAhead, lcWorkers []time.Duration
	for range localRepeat {
		d, _, cpu, err := build(localCat, ahead)
		if err != nil {
			return err
		}
		lAhead, lcAhead = append(lAhead, d), append(lcAhead, cpu)
		if d, _, cpu, err = build(localCat, workers); err != nil {
			return err
		}
		lWorkers, lcWorkers = append(lWorkers, d), append(lcWorkers, cpu)
	}

	build1, read1, floor1, workers1 := report.Median(tAhead), report.Median(tRead), report.Median(tFloor), report.Median(tWorkers)
	// Throughput is data files read per second: the build's reading of the
	// data files (first to last file done) against the floor. The whole
	// build adds what does not grow with the data files read — planning,
	// writing and committing the index, some requests one after another —
	// reported beside it.
	r := report.Ratio(floor1, read1)
	target, pass := report.AtLeast(r, 0.8, "x")
	out.add(BenchLine{Key: "s3_build_vs_floor_throughput", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("the floor %s (%d range GETs of the data files, %d in flight, nothing done with the bytes) vs the build's reading and hashing of the data files %s (first to last file done), median of %d",
			cli.DurationText(floor1), len(reads), filescan.DefaultRequestsInFlight, cli.DurationText(read1), c.Repeat)})
	out.add(BenchLine{Key: "s3_whole_build_vs_floor", Value: report.Ratio(floor1, build1), Unit: "x", Target: "none (reported)",
		Detail: fmt.Sprintf("the floor vs the whole build %s: %s more for planning, writing and committing the index (%d requests that are not of data files)",
			cli.DurationText(build1), cli.DurationText(max(build1-read1, 0)), otherReqs)})
	r = report.Ratio(workers1, build1)
	target, pass = report.AtLeast(r, 5, "x")
	out.add(BenchLine{Key: "s3_build_vs_workers_speedup", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("build of %d workers reading their own files (the default before reading ahead: --parallel %d, DisablePrefetch) %s vs the build reading ahead %s",
			runtime.NumCPU(), runtime.NumCPU(), cli.DurationText(workers1), cli.DurationText(build1))})
	out.add(BenchLine{Key: "s3_data_requests_per_file", Value: float64(aheadReqs) / float64(n), Unit: "requests", Target: "none (reported)",
		Detail: fmt.Sprintf("requests of data files per file reading ahead: %d in all, no HEAD; workers reading their own files: %.2f per file (%d, of which %d HEAD)",
			aheadReqs, float64(workerReqs)/float64(n), workerReqs, workerHeads)})
	out.add(report.ReportedMS("s3_build_ms", build1, fmt.Sprintf("indexer.Build with the defaults, reading ahead; CPU time of the process (server included) %s", cli.DurationText(report.Median(cAhead)))))
	out.add(report.ReportedMS("s3_floor_ms", floor1, fmt.Sprintf("the network floor; CPU time of the process (server included) %s", cli.DurationText(report.Median(cFloor)))))
	out.add(report.ReportedMS("s3_workers_build_ms", workers1, fmt.Sprintf("indexer.Build, workers reading their own files; CPU time of the process (server included) %s", cli.DurationText(report.Median(cWorkers)))))

	la, lw := report.Median(lAhead), report.Median(lWorkers)
	r = report.Ratio(la, lw)
	out.add(BenchLine{Key: "local_build_ahead_vs_workers", Value: r, Unit: "x", Target: "none (reported)",
		Detail: fmt.Sprintf("the same files in a local warehouse: build reading ahead (forced: by default a local warehouse reads nothing ahead, for this cost) %s vs workers reading their own files %s, interleaved, median of %d",
			cli.DurationText(la), cli.DurationText(lw), localRepeat)})
	out.add(BenchLine{Key: "local_build_ahead_vs_workers_cpu", Value: report.Ratio(report.Median(lcAhead), report.Median(lcWorkers)), Unit: "x", Target: "none (reported)",
		Detail: fmt.Sprintf("CPU time of the same builds: %s reading ahead, %s workers reading their own files (wall times follow the machine's load, CPU times much less)",
			cli.DurationText(report.Median(lcAhead)), cli.DurationText(report.Median(lcWorkers)))})
	if e.json {
		return e.printJSON(out)
	}
	printS3Floor(e.stdout, out)
	return nil
}

// floorFiles generates n Parquet files of rows rows of the scale tables'
// columns (a random even id, a random name), as smallfiles.WriteFile writes them.
func floorFiles(n, rows int) ([][]byte, error) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(rows)))
	files := make([][]byte, n)
	for i := range files {
		ids, names := smallfiles.RandomRows(rng, rows)
		var buf bytes.Buffer
		if err := smallfiles.WriteFile(&buf, ids, names); err != nil {
			return nil, err
		}
		files[i] = buf.Bytes()
	}
	return files, nil
}

// floorTable creates table ident of the scale tables' schema in cat and
// adds the files, stored with put, in one add_files commit.
func floorTable(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, files [][]byte,
	put smallfiles.Put) error {
	if err := cat.CreateNamespace(ctx, table.Identifier{ident[0]}, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %s: %w", ident[0], err)
	}
	if _, err := cat.LoadTable(ctx, ident); err == nil {
		return fmt.Errorf("%s exists already in the catalog; use an empty --dir", strings.Join(ident, "."))
	}
	tbl, err := cat.CreateTable(ctx, ident, smallfiles.Schema())
	if err != nil {
		return fmt.Errorf("create %s: %w", strings.Join(ident, "."), err)
	}
	paths := make([]string, len(files))
	for i, data := range files {
		if paths[i], err = put(tbl.Location(), fmt.Sprintf("f%07d.parquet", i), data); err != nil {
			return err
		}
	}
	return smallfiles.AddFiles(ctx, cat, ident, paths)
}

// floorReads returns the range GETs of data files the server answered since
// its last Reset, and all its requests of data files.
func floorReads(srv *catalogtest.S3) ([]floorRead, int, error) {
	var reads []floorRead
	all := 0
	for _, r := range srv.Requests() {
		if !strings.HasSuffix(r.Key, ".parquet") {
			continue
		}
		all++
		if !r.IsRangeGet() {
			continue
		}
		first, last, ok := strings.Cut(strings.TrimPrefix(r.Range, "bytes="), "-")
		a, err1 := strconv.ParseInt(first, 10, 64)
		b, err2 := strconv.ParseInt(last, 10, 64)
		if !ok || err1 != nil || err2 != nil || b < a {
			return nil, 0, fmt.Errorf("range %q of %s: not bytes=first-last", r.Range, r.Key)
		}
		reads = append(reads, floorRead{location: srv.Location(r.Key), off: a, n: b - a + 1})
	}
	if len(reads) == 0 {
		return nil, 0, errors.New("the build sent no range GET of a data file")
	}
	return reads, all, nil
}

// floor replays the reads with inFlight at once through fs, doing nothing
// with the bytes, and returns how long that took.
func floor(ctx context.Context, fs icebergio.IO, reads []floorRead, inFlight int) (time.Duration, error) {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	start := time.Now()
	for _, r := range reads {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f, err := fs.Open(r.location)
			if err != nil {
				return err
			}
			defer f.Close()
			buf := make([]byte, r.n)
			if k, err := f.ReadAt(buf, r.off); k != len(buf) || (err != nil && err != io.EOF) {
				return fmt.Errorf("read %d bytes at %d of %s: %d read, %v", r.n, r.off, r.location, k, err)
			}
			return nil
		})
	}
	err := g.Wait()
	return time.Since(start), err
}

// printS3Floor writes the results as one text table.
func printS3Floor(w io.Writer, out *S3FloorOutput) {
	fmt.Fprintf(w, "icebloom bench --s3-floor: %d files x %d rows, columns %s, in-process S3 server %.0f ms per request, %d requests in flight, GOMAXPROCS %d, %d CPUs, %s\n\n",
		out.Files, out.RowsPerFile, strings.Join(out.Columns, ","), out.S3DelayMS, out.RequestsInFlight, out.GOMAXPROCS, out.NumCPU, out.GoVersion)
	fmt.Fprintf(w, "%-30s %12s  %-10s %-6s %s\n", "measurement", "value", "target", "result", "detail")
	for _, l := range out.Measurements {
		verdict := "-"
		if l.Pass != nil {
			verdict = map[bool]string{true: "pass", false: "MISSED"}[*l.Pass]
		}
		fmt.Fprintf(w, "%-30s %12s  %-10s %-6s %s\n", l.Key, report.Value(l), strings.TrimSuffix(l.Target, " (reported)"), verdict, l.Detail)
	}
	if len(out.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range out.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}
