//go:build icebloom_bench

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/procstat"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/cmd/internal/scanrows"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/where"
)

// BenchCmd is `icebloom bench`: it generates a table and measures the index
// against its targets, each as a ratio measured in the same run.
type BenchCmd struct {
	Files  int     `arg:"--files" default:"200" help:"data files to write"`
	Rows   int     `arg:"--rows" default:"20000" help:"rows per data file"`
	Dir    string  `arg:"--dir" help:"directory of the embedded catalog [default: a new temporary directory]"`
	Keep   bool    `arg:"--keep" help:"keep the generated catalog and warehouse"`
	Repeat int     `arg:"--repeat" default:"3" help:"runs of each timing; the median is reported"`
	Probes int     `arg:"--probes" default:"100000" help:"absent ids probed against every file's filter to measure the false-positive rate"`
	FPP    float64 `arg:"--fpp" default:"0.01" help:"target false-positive rate of the filters"`
	// PruneFiles is the size of the second, many-file table on which the
	// pruning step alone is timed.
	PruneFiles int `arg:"--prune-files" default:"10000" help:"data files of the table the pruning step alone is timed on (0: skip)"`
	// Scale and S3Files select the scale benchmark of index format v2
	// (bench_scale.go) instead.
	Scale   string `arg:"--scale" placeholder:"N,N,..." help:"measure index format v2 on tables of these many tiny data files instead (e.g. 1000,10000,100000)"`
	S3Files int    `arg:"--s3-files" default:"1000" help:"with --scale: data files of the table timed on the in-process S3 server (0: skip)"`
	Shards  string `arg:"--shards" placeholder:"N,N,..." help:"with --scale: also index each size by sharded runs of these many shards (e.g. 1,4,16,64), the shards of a run at once, and report their CPU and wall side by side"`
	// S3Floor selects the benchmark of reading ahead on object storage
	// (bench_s3floor.go) instead.
	S3Floor     int `arg:"--s3-floor" placeholder:"FILES" help:"measure the build on the in-process S3 server (10 ms per request) against the network floor and the build without reading ahead, on a table of this many data files, instead"`
	S3FloorRows int `arg:"--s3-floor-rows" default:"2000" help:"with --s3-floor: rows per data file"`
	// Serve and the flags after it select the benchmark of server-side
	// scan planning (bench_serve.go) instead.
	Serve           string `arg:"--serve" placeholder:"[N,N,...]" help:"measure icebloom serve's planning (warm, cold) against the client's own on tables of these many data files instead [default with no value: 10000,100000]"`
	ServeClients    int    `arg:"--serve-clients" default:"16" help:"with --serve: clients planning at once"`
	ServePlans      int    `arg:"--serve-plans" default:"8" help:"with --serve: plans of each concurrent client"`
	MemoryBudgetMiB int64  `arg:"--memory-budget-mib" default:"256" help:"with --serve: the server's memory budget (icebloom serve --memory-budget-mib), MiB"`
	// ServeKind and the flags after it select the table of --serve and
	// how its server runs: the best case in-process (bench_serve.go), or
	// issue 35's table of random keys with the server as a process of its
	// own (bench_serve_random.go).
	ServeKind           string        `arg:"--serve-kind" default:"best-case" help:"with --serve: best-case (every file holds the smallest and largest id, so min/max keep every file; id indexed; icebloom serve in-process) or random (uniformly random ids and emails, 100 rows a file, both indexed, made once in --dir and reused; icebloom serve a process of its own; docs/benchmarks.md)"`
	ServeDuration       time.Duration `arg:"--serve-duration" default:"30s" help:"with --serve-kind random: how long --serve-clients clients plan at once"`
	ServeAppendDuration time.Duration `arg:"--serve-append-duration" default:"30s" help:"with --serve-kind random: how long files are appended while clients plan (0: no appends)"`
	ServeAppendEvery    time.Duration `arg:"--serve-append-every" default:"5s" help:"with --serve-kind random: how often a file is appended"`
	ServeColdRounds     int           `arg:"--serve-cold-rounds" default:"3" help:"with --serve-kind random: fresh server processes whose first plan is timed"`
	ServeBin            string        `arg:"--serve-bin" placeholder:"PATH" help:"with --serve-kind random: the icebloom binary to run [default: built from ./cmd/icebloom of the module]"`
	// ServeAbuse and the flags after it select the benchmark of icebloom
	// serve under hostile clients (bench_abuse.go) instead.
	ServeAbuse            bool          `arg:"--serve-abuse" help:"run icebloom serve as a process of its own and drive it with ordinary plans beside hostile requests, measuring its RSS, the plans' latency and the answers' statuses, instead"`
	AbuseFiles            int           `arg:"--serve-abuse-files" default:"4000" help:"with --serve-abuse: data files of the table planned"`
	AbuseClients          int           `arg:"--serve-abuse-clients" default:"256" help:"with --serve-abuse: clients at once, --serve-abuse-ordinary of them ordinary, the rest hostile"`
	AbuseOrdinary         int           `arg:"--serve-abuse-ordinary" default:"16" help:"with --serve-abuse: ordinary clients, which retry 429 and 503 as Iceberg's Java REST client does; 16, the plans serve takes at once, so that they alone do not overload it"`
	AbuseDuration         time.Duration `arg:"--serve-abuse-duration" default:"60s" help:"with --serve-abuse: how long the clients run beside the hostile ones"`
	AbuseBaseline         time.Duration `arg:"--serve-abuse-baseline" default:"10s" help:"with --serve-abuse: how long the ordinary clients run alone first"`
	AbuseBudgetMiB        int64         `arg:"--serve-abuse-budget-mib" default:"64" help:"with --serve-abuse: the server's --memory-budget-mib"`
	AbuseBin              string        `arg:"--serve-abuse-bin" placeholder:"PATH" help:"with --serve-abuse: the icebloom binary to run [default: built from ./cmd/icebloom of the module]"`
	AbuseHostileInProcess bool          `arg:"--serve-abuse-hostile-in-process" help:"with --serve-abuse: run the hostile clients in the bench's own process, beside the ordinary ones, rather than in a process of their own at a lower CPU priority (nice 10)"`
	AbuseHostileCallers   int           `arg:"--serve-abuse-hostile-callers" default:"1" help:"with --serve-abuse: callers the hostile clients are spread over (1: none sends Authorization, so serve sees one caller, their address; more: each sends one of so many bearer tokens); each ordinary client is a caller of its own"`
}

// BenchOutput is the JSON output of bench: the run's setup, notes on what
// could not be measured as asked, and the measurements in order.
type BenchOutput struct {
	Files        int         `json:"files"`
	Rows         int         `json:"rows_per_file"`
	GOMAXPROCS   int         `json:"gomaxprocs"`
	NumCPU       int         `json:"num_cpu"`
	GoVersion    string      `json:"go_version"`
	Dir          string      `json:"dir"`
	Notes        []string    `json:"notes"`
	Measurements []BenchLine `json:"measurements"`
}

// BenchLine is one measurement of any mode.
type BenchLine = report.Line

var benchTable = table.Identifier{"bench", "events"}

const (
	benchName   = "bench.events"
	benchCats   = 16 // distinct values of the low-cardinality column
	benchIDCol  = "id"
	benchStrCol = "name"
	benchCatCol = "category"
)

func (c *BenchCmd) run(ctx context.Context, e *env) error {
	if c.Scale != "" {
		return c.runScale(ctx, e)
	}
	if c.S3Floor != 0 {
		return c.runS3Floor(ctx, e)
	}
	if c.Serve != "" && c.ServeKind == serveKindRandom {
		return c.runServeRandom(ctx, e)
	}
	if c.Serve != "" {
		return c.runServe(ctx, e)
	}
	if c.ServeAbuse {
		return c.runServeAbuse(ctx, e)
	}
	if c.Files < 1 || c.Rows < 1 || c.Repeat < 1 || c.Probes < 1 || c.PruneFiles < 0 {
		return fmt.Errorf("--files, --rows, --repeat and --probes must be positive, --prune-files not negative")
	}
	dir, cleanup, err := c.workDir("icebloom-bench")
	if err != nil {
		return err
	}
	defer cleanup()
	cat, err := e.embedded(ctx, dir)
	if err != nil {
		return err
	}
	out := &BenchOutput{Files: c.Files, Rows: c.Rows, GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), Dir: dir, Notes: []string{}}
	if out.GOMAXPROCS < 2 {
		out.Notes = append(out.Notes, fmt.Sprintf("GOMAXPROCS is %d: Parallel 2 cannot run two files at once", out.GOMAXPROCS))
	}
	progress := func(format string, args ...any) {
		if !e.json {
			fmt.Fprintf(e.stderr, format+"\n", args...)
		}
	}

	progress("writing %d data files of %d rows to %s in %s", c.Files, c.Rows, benchName, dir)
	start := time.Now()
	needle, err := c.createTable(ctx, cat)
	if err != nil {
		return err
	}
	progress("  written in %s", cli.DurationText(time.Since(start)))
	b := &bencher{c: c, cat: cat, out: out}
	if b.tbl, err = cat.LoadTable(ctx, benchTable); err != nil {
		return fmt.Errorf("load %s: %w", benchName, err)
	}
	if b.fs, err = b.tbl.FS(ctx); err != nil {
		return fmt.Errorf("%s storage: %w", benchName, err)
	}
	tasks, err := b.tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan %s: %w", benchName, err)
	}
	b.files = cli.DataFiles(tasks)

	// The dictionary builds run first: a build copies the entries of other
	// columns from the snapshot's statistics file, and there are none yet.
	steps := []struct {
		what string
		run  func(context.Context) error
	}{
		{"dictionary encoding check", b.checkDictionary},
		{"dictionary shortcut", b.dictionaryShortcut},
		{"build vs floor", b.buildVsFloor},
		{"index size and false-positive rate", b.indexSize},
		{"lookups", func(ctx context.Context) error { return b.lookups(ctx, needle) }},
		{"peak memory", b.peakMemory},
		{fmt.Sprintf("pruning step for %d files", c.PruneFiles), b.pruneStep},
	}
	for _, s := range steps {
		progress("measuring: %s", s.what)
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if e.json {
		return e.printJSON(out)
	}
	printBench(e.stdout, out)
	return nil
}

// createTable writes the benchmark table: a random even long id (odd ids are
// certainly absent, yet within the files' min/max), a random string, and a
// string of benchCats distinct values. It returns an id one file holds.
func (c *BenchCmd) createTable(ctx context.Context, cat icecatalog.Catalog) (needle int64, err error) {
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return 0, fmt.Errorf("create namespace bench: %w", err)
	}
	if _, err := cat.LoadTable(ctx, benchTable); err == nil {
		return 0, fmt.Errorf("%s exists already in the catalog; use an empty --dir", benchName)
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: benchIDCol, Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: benchStrCol, Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: benchCatCol, Type: iceberg.PrimitiveTypes.String, Required: true},
	)
	// Manifests are merged as Java and Spark writers merge them by default
	// (iceberg-go does not): without it, the 200 appends would leave 200
	// manifests, and planning a lookup would be reading them.
	tbl, err := cat.CreateTable(ctx, benchTable, sc, icecatalog.WithProperties(iceberg.Properties{
		table.ManifestMergeEnabledKey: "true",
	}))
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", benchName, err)
	}
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(20000, 200))
	// One transaction, one commit: a file per AppendTable.
	txn := tbl.NewTransaction()
	for i := range c.Files {
		rec := benchRecord(as, rng, c.Rows)
		if i == c.Files/2 {
			needle = rec.Column(0).(*array.Int64).Value(c.Rows / 2)
		}
		at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
		err := txn.AppendTable(ctx, at, rec.NumRows(), nil)
		at.Release()
		rec.Release()
		if err != nil {
			return 0, fmt.Errorf("append file %d to %s: %w", i, benchName, err)
		}
	}
	if _, err := txn.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit %s: %w", benchName, err)
	}
	return needle, nil
}

func benchRecord(as *arrow.Schema, rng *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	names := b.Field(1).(*array.StringBuilder)
	cats := b.Field(2).(*array.StringBuilder)
	for range n {
		ids.Append(2 * (1 + rng.Int64N(1<<61)))
		names.Append(fmt.Sprintf("user-%016x", rng.Uint64()))
		cats.Append(fmt.Sprintf("category-%02d", rng.IntN(benchCats)))
	}
	return b.NewRecordBatch()
}

// bencher holds what the measurements share.
type bencher struct {
	c     *BenchCmd
	cat   icecatalog.Catalog
	tbl   *table.Table
	fs    icebergio.IO
	files []string
	out   *BenchOutput
}

func (b *bencher) add(l BenchLine) { b.out.Measurements = append(b.out.Measurements, l) }

func (b *bencher) note(format string, args ...any) {
	b.out.Notes = append(b.out.Notes, fmt.Sprintf(format, args...))
}

// build runs indexer.Build on the benchmark table with the knobs k and
// times it.
func (b *bencher) build(ctx context.Context, o indexer.Options, k indexer.Knobs) (*indexer.Summary, time.Duration, error) {
	if o.FPP == 0 {
		o.FPP = b.c.FPP
	}
	o.FailFast = true
	k.ExactColumns = true // each measurement's columns alone, not those earlier builds left in the index
	o = o.WithKnobs(k)
	start := time.Now()
	sum, err := indexer.Build(ctx, b.cat, benchTable, o)
	if err != nil {
		return nil, 0, fmt.Errorf("build %v: %w", o.Columns, err)
	}
	return sum, time.Since(start), nil
}

// checkDictionary reports whether every data page of every chunk of the
// low-cardinality column is dictionary-encoded, from the files' metadata.
func (b *bencher) checkDictionary(ctx context.Context) error {
	var chunks, dict int
	props := filescan.ReaderProperties()
	var chunk []byte // unused: only metadata is read
	for _, path := range b.files {
		err := withParquet(b.fs, path, props, &chunk, func(rdr *file.Reader, _ *filescan.ChunkReader) error {
			ci := rdr.MetaData().Schema.ColumnIndexByName(benchCatCol)
			if ci < 0 {
				return fmt.Errorf("%s: no column %s", path, benchCatCol)
			}
			for rg := range rdr.NumRowGroups() {
				cc, err := rdr.MetaData().RowGroup(rg).ColumnChunk(ci)
				if err != nil {
					return err
				}
				chunks++
				if allDictionary(cc.EncodingStats()) {
					dict++
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if dict == chunks {
		b.note("all %d chunks of %s are dictionary-encoded (Parquet page encoding stats)", chunks, benchCatCol)
	} else {
		b.note("only %d of %d chunks of %s are dictionary-encoded: the shortcut applies to those only", dict, chunks, benchCatCol)
	}
	return nil
}

// allDictionary reports whether the encoding stats list data pages and all
// are dictionary-encoded. Page types: 0 data page, 3 data page v2.
func allDictionary(stats []metadata.PageEncodingStats) bool {
	data := 0
	for _, st := range stats {
		if st.PageType != 0 && st.PageType != 3 {
			continue
		}
		data++
		if st.Encoding != parquet.Encodings.RLEDict && st.Encoding != parquet.Encodings.PlainDict {
			return false
		}
	}
	return data > 0
}

// withParquet opens the data file at path as a build worker does, through
// a filescan.ChunkReader fetching into chunk, and calls fn with its Parquet
// reader.
func withParquet(fs icebergio.IO, path string, props *parquet.ReaderProperties, chunk *[]byte, fn func(*file.Reader, *filescan.ChunkReader) error) error {
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	cr := filescan.NewChunkReader(f, props, chunk)
	rdr, err := file.NewParquetReader(cr, file.WithReadProps(props))
	if err != nil {
		return fmt.Errorf("read Parquet footer of %s: %w", path, err)
	}
	defer rdr.Close()
	return fn(rdr, cr)
}

// dictionaryShortcut times the build of the low-cardinality column alone
// with and without the dictionary shortcut, interleaved. The target is held
// by the column reading the shortcut replaces (Summary.ReadTime: hashing
// the dictionary page vs decoding the data pages); the whole build, with
// its fixed costs of planning, writing and committing, is reported beside.
func (b *bencher) dictionaryShortcut(ctx context.Context) error {
	// Workers read their own files (no reading ahead), so Parallel 1 is
	// one goroutine reading and hashing: the CPU paths are compared, not
	// how busy storage is kept (bench --s3-floor).
	o := indexer.Options{Columns: []string{benchCatCol}, Parallel: 1}
	with := indexer.Knobs{DisablePrefetch: true}
	without := with
	without.DisableDictionaryShortcut = true
	var readWith, readWithout, tWith, tWithout []time.Duration
	for _, k := range []indexer.Knobs{without, with} { // warm-up, untimed
		if _, _, err := b.build(ctx, o, k); err != nil {
			return err
		}
	}
	for range b.c.Repeat {
		sum, d, err := b.build(ctx, o, without)
		if err != nil {
			return err
		}
		tWithout, readWithout = append(tWithout, d), append(readWithout, sum.ReadTime)
		if sum, d, err = b.build(ctx, o, with); err != nil {
			return err
		}
		tWith, readWith = append(tWith, d), append(readWith, sum.ReadTime)
	}
	ratio := report.Ratio(report.Median(readWithout), report.Median(readWith))
	target, pass := report.AtLeast(ratio, 5, "x")
	detail := fmt.Sprintf("reading the column: %s decoding the data pages, %s hashing the dictionary pages (Parallel 1, median of %d)",
		cli.DurationText(report.Median(readWithout)), cli.DurationText(report.Median(readWith)), b.c.Repeat)
	b.add(BenchLine{Key: "dictionary_shortcut_speedup", Value: ratio, Unit: "x", Detail: detail, Target: target, Pass: pass})
	b.add(BenchLine{Key: "dictionary_shortcut_whole_build", Value: report.Ratio(report.Median(tWithout), report.Median(tWith)), Unit: "x",
		Target: "none (reported)",
		Detail: fmt.Sprintf("whole build of the column: %s without, %s with the shortcut", cli.DurationText(report.Median(tWithout)), cli.DurationText(report.Median(tWith)))})
	return nil
}

// buildVsFloor times the floor (reading the indexed chunks with arrow-go
// and discarding the values) with one and two goroutines, the floor plus
// hashing every value, and indexer.Build with Parallel 1 and 2, on the id and
// string columns, interleaved. The floors beside the targets say what of a
// miss is the machine's and the format's: the floor's own speedup on two
// goroutines bounds the build's, and XXH64 of every value is work any
// build of these filters does.
func (b *bencher) buildVsFloor(ctx context.Context) error {
	cols := []string{benchIDCol, benchStrCol}
	var floor, floor2, hashFloor, p1, p2, p1Files []time.Duration
	// The builds' workers read their own files, one goroutine each, as the
	// floor's do: reading ahead would add goroutines reading for them.
	if _, _, err := b.build(ctx, indexer.Options{Columns: cols, Parallel: 1}, indexer.Knobs{DisablePrefetch: true}); err != nil { // warm-up, untimed
		return err
	}
	for range b.c.Repeat {
		for _, f := range []struct {
			into    *[]time.Duration
			workers int
			hash    bool
		}{{&floor, 1, false}, {&floor2, 2, false}, {&hashFloor, 1, true}} {
			d, err := b.floor(cols, f.workers, f.hash)
			if err != nil {
				return err
			}
			*f.into = append(*f.into, d)
		}
		for _, par := range []int{1, 2} {
			sum, d, err := b.build(ctx, indexer.Options{Columns: cols, Parallel: par}, indexer.Knobs{DisablePrefetch: true})
			if err != nil {
				return err
			}
			if par == 1 {
				p1, p1Files = append(p1, d), append(p1Files, sum.ReadTime)
			} else {
				p2 = append(p2, d)
			}
		}
	}
	build1, files1 := report.Median(p1), report.Median(p1Files)
	r := report.Ratio(build1, report.Median(floor))
	target, pass := report.AtMost(r, 1.25, "x")
	b.add(BenchLine{Key: "build_vs_floor_1core", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("build %s (reading and hashing the files %s, planning, writing and committing %s), floor %s (columns %s, median of %d)",
			cli.DurationText(build1), cli.DurationText(files1), cli.DurationText(max(build1-files1, 0)),
			cli.DurationText(report.Median(floor)), strings.Join(cols, ","), b.c.Repeat)})
	b.add(BenchLine{Key: "build_vs_hash_floor_1core", Value: report.Ratio(build1, report.Median(hashFloor)), Unit: "x", Target: "none (reported)",
		Detail: fmt.Sprintf("the floor plus XXH64 of every value (the hashing the format requires): %s, %.2fx the floor",
			cli.DurationText(report.Median(hashFloor)), report.Ratio(report.Median(hashFloor), report.Median(floor)))})
	s := report.Ratio(build1, report.Median(p2))
	target, pass = report.AtLeast(s, 1.8, "x")
	b.add(BenchLine{Key: "build_parallel2_speedup", Value: s, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("Parallel 1 %s, Parallel 2 %s, GOMAXPROCS %d", cli.DurationText(build1),
			cli.DurationText(report.Median(p2)), runtime.GOMAXPROCS(0))})
	b.add(BenchLine{Key: "floor_parallel2_speedup", Value: report.Ratio(report.Median(floor), report.Median(floor2)), Unit: "x", Target: "none (reported)",
		Detail: fmt.Sprintf("the floor on 2 goroutines, each reading whole files: %s vs %s on 1; what this machine gives the reading itself",
			cli.DurationText(report.Median(floor2)), cli.DurationText(report.Median(floor)))})
	return nil
}

// floor reads the named columns' chunks of every data file with arrow-go's
// typed readers into reused buffers, on workers goroutines taking a file at
// a time, and does nothing with the values, or only hashes them (hash). It
// reads as the build does, with ReadBatchInPage, the cheapest way arrow-go
// has: byte array values alias the page instead of being copied, and page
// buffers are reused from chunk to chunk (filescan.ReaderProperties).
func (b *bencher) floor(cols []string, workers int, hash bool) (time.Duration, error) {
	var types map[string]iceberg.PrimitiveType // nil: the values are not hashed
	if hash {
		types = make(map[string]iceberg.PrimitiveType, len(cols))
		for _, name := range cols {
			f, ok := b.tbl.Schema().FindFieldByName(name)
			if !ok {
				return 0, fmt.Errorf("%s: no column %s", benchName, name)
			}
			types[name] = f.Type.(iceberg.PrimitiveType)
		}
	}
	paths := make(chan string)
	errs := make(chan error, workers)
	start := time.Now()
	for range workers {
		go func() {
			r := floorReader{props: filescan.ReaderProperties(), types: types}
			var err error
			for path := range paths {
				if err == nil {
					err = r.read(b.fs, path, cols)
				}
			}
			errs <- err
		}()
	}
	for _, path := range b.files {
		paths <- path
	}
	close(paths)
	var err error
	for range workers {
		err = errors.Join(err, <-errs)
	}
	return time.Since(start), err
}

// floorReader is one goroutine of the floor, with its buffers.
type floorReader struct {
	props  *parquet.ReaderProperties
	chunk  []byte                           // of its filescan.ChunkReader
	types  map[string]iceberg.PrimitiveType // of the columns, to hash them as; nil: no hashing
	i64    [4096]int64
	ba     [4096]parquet.ByteArray
	defs   [4096]int16
	hashes []uint64
}

func (r *floorReader) read(fs icebergio.IO, path string, cols []string) error {
	return withParquet(fs, path, r.props, &r.chunk, func(rdr *file.Reader, chunks *filescan.ChunkReader) error {
		for _, name := range cols {
			ci := rdr.MetaData().Schema.ColumnIndexByName(name)
			var hc *hashing.Column // nil: the values are not hashed
			if r.types != nil {
				var err error
				if hc, err = hashing.NewColumn(r.types[name], rdr.MetaData().Schema.Column(ci)); err != nil {
					return err
				}
			}
			for rg := range rdr.NumRowGroups() {
				g := rdr.RowGroup(rg)
				md, err := g.MetaData().ColumnChunk(ci)
				if err != nil {
					return err
				}
				chunks.Fetch(md, false)
				cr, err := g.Column(ci)
				if err != nil {
					return err
				}
				err = r.readChunk(cr, hc)
				cr.(interface{ Close() error }).Close() // its page buffers go to the next chunk, as in the build
				if err != nil {
					return fmt.Errorf("column %s: %w", name, err)
				}
			}
		}
		return nil
	})
}

func (r *floorReader) readChunk(cr file.ColumnChunkReader, hc *hashing.Column) error {
	var err error
	for cr.HasNext() && err == nil {
		var n int
		switch c := cr.(type) {
		case *file.Int64ColumnChunkReader:
			if _, n, err = c.ReadBatchInPage(int64(len(r.i64)), r.i64[:], r.defs[:], nil); err == nil && hc != nil {
				r.hashes, err = hc.Int64s(r.hashes[:0], r.i64[:n])
			}
		case *file.ByteArrayColumnChunkReader:
			if _, n, err = c.ReadBatchInPage(int64(len(r.ba)), r.ba[:], r.defs[:], nil); err == nil && hc != nil {
				r.hashes, err = hc.ByteArrays(r.hashes[:0], r.ba[:n])
			}
		default:
			return fmt.Errorf("unexpected reader %T", cr)
		}
	}
	return err
}

// idFilters loads the table's index and returns the id column's filters.
func (b *bencher) idFilters(ctx context.Context) ([]index.StoredFilter, error) {
	tbl, err := b.cat.LoadTable(ctx, benchTable)
	if err != nil {
		return nil, err
	}
	ix, errs := index.Load(ctx, b.fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		return nil, fmt.Errorf("load index: %w", errors.Join(errs...))
	}
	var filters []index.StoredFilter
	for _, seg := range ix.Segments() {
		for f := range seg.Filters() {
			if f.FieldID == 1 {
				filters = append(filters, f)
			}
		}
	}
	if len(filters) == 0 {
		return nil, fmt.Errorf("the index holds no entry for %s", benchIDCol)
	}
	return filters, nil
}

// indexSize compares the id column's filter bytes with the SBBF optimum and
// the classic formula, and measures the false-positive rate on absent ids
// against the filters as stored in the Puffin files.
func (b *bencher) indexSize(ctx context.Context) error {
	entries, err := b.idFilters(ctx)
	if err != nil {
		return err
	}
	var bytes, optimum, ndv int64
	for _, en := range entries {
		blocks, err := sbbf.NumBlocks(uint64(en.NDV), b.c.FPP, indexer.DefaultMaxFilterBytes)
		if err != nil {
			return err
		}
		bytes += int64(en.Blocks) * sbbf.BlockBytes
		optimum += int64(blocks) * sbbf.BlockBytes
		ndv += en.NDV
	}
	r := float64(bytes) / float64(optimum)
	target, pass := report.AtMost(r, 1.05, "x")
	b.add(BenchLine{Key: "index_size_vs_sbbf_optimum", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("%s of filters for %d distinct ids in %d files; optimum %s",
			cli.BytesText(bytes), ndv, len(entries), cli.BytesText(optimum))})
	bits := 8 * float64(bytes) / float64(ndv)
	classic := -math.Log(b.c.FPP) / (math.Ln2 * math.Ln2)
	b.add(BenchLine{Key: "index_bits_per_distinct_value", Value: bits, Unit: "bits", Target: "none (reported)",
		Detail: fmt.Sprintf("SBBF optimum %.2f bits, classic -ln(p)/ln(2)^2 %.2f bits at p=%g",
			8*float64(optimum)/float64(ndv), classic, b.c.FPP)})

	// Absent ids are odd; the table's are even.
	rng := rand.New(rand.NewPCG(1, 2))
	probes := make([]uint64, b.c.Probes)
	for i := range probes {
		probes[i] = hashing.Int64(2*rng.Int64N(1<<61) + 1)
	}
	var hits, checks int64
	for _, en := range entries {
		f, err := b.readFilter(en)
		if err != nil {
			return err
		}
		for _, h := range probes {
			if f.Check(h) {
				hits++
			}
		}
		checks += int64(len(probes))
	}
	measured := float64(hits) / float64(checks)
	if hits == 0 { // keep the ratio positive and honest: below one in checks
		measured = 0.5 / float64(checks)
		b.note("no false positive in %d checks: the FPP ratio uses half a hit as an upper estimate", checks)
	}
	r = measured / b.c.FPP
	target, pass = report.AtMost(r, 1.2, "x")
	b.add(BenchLine{Key: "measured_fpp_vs_target", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("%d of %d absent-id checks passed (%.4f%%) vs target %g%%",
			hits, checks, 100*float64(hits)/float64(checks), 100*b.c.FPP)})
	return nil
}

// readFilter reads a filter's bitset from its Puffin file.
func (b *bencher) readFilter(en index.StoredFilter) (sbbf.Filter, error) {
	f, err := b.fs.Open(en.Path)
	if err != nil {
		return sbbf.Filter{}, fmt.Errorf("open %s: %w", en.Path, err)
	}
	defer f.Close()
	bits, err := index.ReadFilter(f, en)
	if err != nil {
		return sbbf.Filter{}, err
	}
	return sbbf.FromBytes(bits)
}

// lookups measures a present and an absent id: files left by statistics and
// by the index, scans with and without the index, the pruning step alone
// with a warm footer cache, and the index bytes it reads.
func (b *bencher) lookups(ctx context.Context, needle int64) error {
	tbl, err := b.cat.LoadTable(ctx, benchTable)
	if err != nil {
		return err
	}
	entries, err := b.idFilters(ctx)
	if err != nil {
		return err
	}
	blobBytes := map[string]int64{}
	for _, en := range entries {
		blobBytes[en.DataFile] = int64(en.Blocks) * sbbf.BlockBytes
	}
	miss := needle + 1 // odd: no file holds it
	for _, l := range []struct {
		name string
		id   int64
		want int
	}{{"needle", needle, 1}, {"miss", miss, 0}} {
		whereText := fmt.Sprintf("%s = %d", benchIDCol, l.id)
		filter, err := where.Parse(whereText)
		if err != nil {
			return err
		}
		cache := index.NewFooterCache(1024)
		res, err := lookup.Plan(ctx, tbl, filter, lookup.Options{Cache: cache}) // warms the cache
		if err != nil {
			return err
		}
		var planTimes []time.Duration
		for range max(b.c.Repeat, 20) {
			start := time.Now()
			if res, err = lookup.Plan(ctx, tbl, filter, lookup.Options{Cache: cache}); err != nil {
				return err
			}
			planTimes = append(planTimes, time.Since(start))
		}
		after, cands := cli.DataFiles(res.AfterStats), cli.DataFiles(res.Candidates)
		b.add(BenchLine{Key: "lookup_" + l.name + "_files_after_index", Value: float64(len(cands)), Unit: "files",
			Target: "none (reported)",
			Detail: fmt.Sprintf("%d files in the table, %d after min/max statistics, %d after the index (expected %d + fpp x %d = %.1f)",
				res.FilesTotal, len(after), len(cands), l.want, len(after), float64(l.want)+b.c.FPP*float64(len(after)-l.want))})

		var with, without []time.Duration
		for range b.c.Repeat {
			w, err := scanrows.Count(ctx, b.cat, benchTable, whereText, false)
			if err != nil {
				return err
			}
			wo, err := scanrows.Count(ctx, b.cat, benchTable, whereText, true)
			if err != nil {
				return err
			}
			if w.Rows != wo.Rows || w.Rows != int64(l.want) {
				return fmt.Errorf("%s: %d rows with the index, %d without, want %d", whereText, w.Rows, wo.Rows, l.want)
			}
			with, without = append(with, w.Elapsed), append(without, wo.Elapsed)
		}
		r := report.Ratio(report.Median(without), report.Median(with))
		target, pass := report.AtLeast(r, 20, "x")
		b.add(BenchLine{Key: "scan_" + l.name + "_speedup", Value: r, Unit: "x", Target: target, Pass: pass,
			Detail: fmt.Sprintf("%s without, %s with the index (median of %d, %d files)",
				cli.DurationText(report.Median(without)), cli.DurationText(report.Median(with)), b.c.Repeat, res.FilesTotal)})

		b.add(BenchLine{Key: "plan_" + l.name + "_warm_cache", Value: float64(report.Median(planTimes).Microseconds()) + 1e-3,
			Unit: "µs", Target: "none (reported)",
			Detail: fmt.Sprintf("lookup.Plan with iceberg-go's planning, warm footer cache, median of %d, %d files",
				len(planTimes), res.FilesTotal)})

		var whole int64
		for _, f := range after {
			whole += blobBytes[f]
		}
		checked := max(len(after), 1)
		perFile := float64(res.BytesRead) / float64(checked)
		target, pass = report.AtMost(perFile, 64, " B")
		b.add(BenchLine{Key: "index_bytes_per_file_value_" + l.name, Value: perFile, Unit: "B", Target: target, Pass: pass,
			Detail: fmt.Sprintf("%d B read for %d files x 1 value (%d blocks); whole blobs: %s, %.0f B per file",
				res.BytesRead, len(after), res.BlocksRead, cli.BytesText(whole), float64(whole)/float64(checked))})
	}
	return nil
}

// peakMemory samples the heap during a build of the id column with
// Parallel 1 and compares its growth with 8 bytes per distinct value of
// the largest file.
func (b *bencher) peakMemory(ctx context.Context) error {
	entries, err := b.idFilters(ctx)
	if err != nil {
		return err
	}
	var maxNDV int64
	for _, en := range entries {
		maxNDV = max(maxNDV, en.NDV)
	}
	growth, err := procstat.HeapPeak(func() error {
		_, _, err := b.build(ctx, indexer.Options{Columns: []string{benchIDCol}, Parallel: 1}, indexer.Knobs{})
		return err
	})
	if err != nil {
		return err
	}
	growth = max(growth, 1)
	ideal := 8 * maxNDV
	b.add(BenchLine{Key: "build_peak_heap_vs_8B_per_value", Value: float64(growth) / float64(ideal), Unit: "x",
		Target: "none (reported)",
		Detail: fmt.Sprintf("peak live heap growth %s during a Parallel 1 build of %s; 8 B x %d distinct values of the largest file = %s",
			cli.BytesText(growth), benchIDCol, maxNDV, cli.BytesText(ideal))})
	return nil
}

// printBench writes the results as one text table.
func printBench(w io.Writer, out *BenchOutput) {
	fmt.Fprintf(w, "icebloom bench: %d files x %d rows, GOMAXPROCS %d, %d CPUs, %s\n\n",
		out.Files, out.Rows, out.GOMAXPROCS, out.NumCPU, out.GoVersion)
	fmt.Fprintf(w, "%-36s %12s  %-14s %-6s %s\n", "measurement", "value", "target", "result", "detail")
	for _, l := range out.Measurements {
		verdict := "-"
		if l.Pass != nil {
			verdict = map[bool]string{true: "pass", false: "MISSED"}[*l.Pass]
		}
		fmt.Fprintf(w, "%-36s %12s  %-14s %-6s %s\n", l.Key, fmt.Sprintf("%.3g %s", l.Value, l.Unit),
			strings.TrimSuffix(l.Target, " (reported)"), verdict, l.Detail)
	}
	report.PrintNotes(w, out.Notes)
}

// workDir returns the bench's directory as an absolute path: --dir, else
// a new temporary one named after prefix, which cleanup removes unless
// --keep.
func (c *BenchCmd) workDir(prefix string) (dir string, cleanup func(), err error) {
	cleanup = func() {}
	if dir = c.Dir; dir == "" {
		if dir, err = os.MkdirTemp("", prefix+"-"); err != nil {
			return "", nil, fmt.Errorf("bench directory: %w", err)
		}
		if !c.Keep {
			tmp := dir
			cleanup = func() { os.RemoveAll(tmp) }
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}
