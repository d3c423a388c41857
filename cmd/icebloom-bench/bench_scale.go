//go:build icebloom_bench

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/procstat"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/smallfiles"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// The scale benchmark (`bench --scale`) measures index format v2 on tables
// of many tiny data files (issue 14, "How it is shown"): per table size,
// the Puffin footer and the directory, a build, a sync of one new file,
// a compaction of the two segments, a cold lookup split into iceberg-go's
// planning and the index's part, the index's size and false-positive rate;
// and, on the in-process S3 server with a fixed delay per request, the
// requests and bytes of a lookup and the index's part of it against a scan
// that opens every file.

const (
	// scaleChecks is about how many absent-id checks the false-positive
	// rate is measured on, spread over the id filters (at least
	// scaleMinProbes each): 20 million checks at p = 1% expect 200,000
	// hits, a relative standard error of 0.2%.
	scaleChecks    = 20_000_000
	scaleMinProbes = 200
	// scaleS3Delay is the S3 server's delay per request while lookups and
	// scans are timed on it: a round trip to a remote object store.
	scaleS3Delay = 10 * time.Millisecond
	// scaleScanConcurrency is how many files the scan that opens every
	// file reads at once.
	scaleScanConcurrency = 16
	// scaleSyncTargetFrom and scaleCompactTargetFrom are the sizes from
	// which the targets apply.
	scaleSyncTargetFrom    = 100_000
	scaleCompactTargetFrom = 10_000
)

// scaleColumns are the indexed columns of a scale table.
var scaleColumns = []string{benchIDCol, benchStrCol}

// ScaleOutput is the JSON output of bench --scale.
type ScaleOutput struct {
	Sizes       []int      `json:"sizes"`
	S3Files     int        `json:"s3_files"`
	S3DelayMS   float64    `json:"s3_delay_ms"`
	RowsPerFile int        `json:"rows_per_file"`
	GOMAXPROCS  int        `json:"gomaxprocs"`
	NumCPU      int        `json:"num_cpu"`
	GoVersion   string     `json:"go_version"`
	Dir         string     `json:"dir"`
	Notes       []string   `json:"notes"`
	Runs        []ScaleRun `json:"runs"`
}

// ScaleRun is the measurements of one table: Storage "local" (the
// embedded catalog's warehouse) or "s3" (the in-process S3 server).
type ScaleRun struct {
	Files        int         `json:"files"`
	Storage      string      `json:"storage"`
	Measurements []BenchLine `json:"measurements"`
}

func (r *ScaleRun) add(l BenchLine) { r.Measurements = append(r.Measurements, l) }

// parseSizes reads the value of flag (--scale, --serve): comma-separated
// positive file counts.
func parseSizes(flag, s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(f, "_", "")))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: want comma-separated positive file counts", flag, s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// runScale is bench --scale.
func (c *BenchCmd) runScale(ctx context.Context, e *env) error {
	sizes, err := parseSizes("--scale", c.Scale)
	if err != nil {
		return err
	}
	counts, err := parseShardCounts(c.Shards)
	if err != nil {
		return err
	}
	if c.S3Files < 0 || c.Repeat < 1 || !(c.FPP > 0 && c.FPP < 1) {
		return fmt.Errorf("--s3-files must not be negative, --repeat positive, --fpp within (0, 1)")
	}
	dir, cat, cleanup, err := c.benchCatalog(ctx, e, "icebloom-bench-scale")
	if err != nil {
		return err
	}
	defer cleanup()
	out := &ScaleOutput{Sizes: sizes, S3Files: c.S3Files, S3DelayMS: float64(scaleS3Delay) / 1e6, RowsPerFile: smallfiles.Rows,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), Dir: dir,
		Notes: []string{}, Runs: []ScaleRun{}}
	s := &scaler{c: c, e: e, out: out}
	for _, n := range sizes {
		run, err := s.local(ctx, cat, n)
		if err != nil {
			return fmt.Errorf("scale %d: %w", n, err)
		}
		out.Runs = append(out.Runs, run)
	}
	if len(counts) > 0 {
		for _, n := range sizes {
			run, err := s.sharded(ctx, cat, n, counts)
			if err != nil {
				return fmt.Errorf("scale %d, shards %s: %w", n, c.Shards, err)
			}
			out.Runs = append(out.Runs, run)
			// The largest count once more, shard after shard: per shard, the
			// linked index's cold load and the merge.
			if run, err = s.shardedOneByOne(ctx, cat, n, slices.Max(counts)); err != nil {
				return fmt.Errorf("scale %d, %d shards one by one: %w", n, slices.Max(counts), err)
			}
			out.Runs = append(out.Runs, run)
		}
	}
	if c.S3Files > 0 {
		run, err := s.onS3(ctx, dir, c.S3Files)
		if err != nil {
			return fmt.Errorf("scale on S3, %d files: %w", c.S3Files, err)
		}
		out.Runs = append(out.Runs, run)
	}
	if e.json {
		return e.printJSON(out)
	}
	printScale(e.stdout, out)
	return nil
}

// benchCatalog opens the embedded catalog in the bench's directory (see
// workDir) with the namespace bench, for the runs that make their own
// tables; cleanup removes the directory unless it is kept.
func (c *BenchCmd) benchCatalog(ctx context.Context, e *env, prefix string) (string, icecatalog.Catalog, func(), error) {
	dir, cleanup, err := c.workDir(prefix)
	if err != nil {
		return "", nil, nil, err
	}
	cat, err := e.embedded(ctx, dir)
	if err == nil {
		err = cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil)
		if errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
			err = nil
		} else if err != nil {
			err = fmt.Errorf("create namespace bench: %w", err)
		}
	}
	if err != nil {
		cleanup()
		return "", nil, nil, err
	}
	return dir, cat, cleanup, nil
}

// scaler holds what the scale runs share.
type scaler struct {
	c   *BenchCmd
	e   *env
	out *ScaleOutput
}

func (s *scaler) progress(format string, args ...any) {
	if !s.e.json {
		fmt.Fprintf(s.e.stderr, format+"\n", args...)
	}
}

func (s *scaler) note(format string, args ...any) {
	s.out.Notes = append(s.out.Notes, fmt.Sprintf(format, args...))
}

// local measures a table of n data files in the embedded catalog's
// warehouse.
func (s *scaler) local(ctx context.Context, cat icecatalog.Catalog, n int) (ScaleRun, error) {
	run := ScaleRun{Files: n, Storage: "local"}
	ident := table.Identifier{"bench", fmt.Sprintf("scale_%d", n)}
	if _, err := cat.LoadTable(ctx, ident); err == nil {
		return run, fmt.Errorf("%s exists already in the catalog; use an empty --dir", strings.Join(ident, "."))
	}
	s.progress("scale %d: writing %d data files of %d rows and adding them with one add_files commit", n, n, smallfiles.Rows)
	start := time.Now()
	st, err := smallfiles.Create(ctx, cat, ident, n, smallfiles.LocalPut)
	if err != nil {
		return run, err
	}
	s.progress("  written and added in %s", cli.DurationText(time.Since(start)))

	// Build.
	s.progress("scale %d: build", n)
	start = time.Now()
	built, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: scaleColumns, FPP: s.c.FPP, FailFast: true})
	if err != nil {
		return run, fmt.Errorf("build: %w", err)
	}
	buildTime := time.Since(start)
	if built.FilesIndexed != n {
		return run, fmt.Errorf("build indexed %d files, want %d", built.FilesIndexed, n)
	}
	tbl, fs, ix, err := loadScaleIndex(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	if len(ix.Segments()) != 1 {
		return run, fmt.Errorf("%d segments after the build, want 1", len(ix.Segments()))
	}
	seg := ix.Segments()[0]
	sf := seg.File
	_, dirLen, ok := segment.DirectoryPlace(sf)
	if !ok {
		return run, fmt.Errorf("statistics entry %s records no directory place", sf.StatisticsPath)
	}
	groups := 0
	if dir := seg.Directory(); dir != nil {
		groups = len(dir.Groups)
	}
	bytesLine := func(key string, v int64, detail string) {
		run.add(BenchLine{Key: key, Value: float64(v), Unit: "B", Target: "none (reported)", Detail: detail})
	}
	bytesLine("footer_bytes", sf.FileFooterSizeInBytes, fmt.Sprintf("Puffin footer of the statistics file (%s), which no lookup reads", cli.BytesText(sf.FileFooterSizeInBytes)))
	bytesLine("directory_bytes", dirLen, fmt.Sprintf("the segment's directory as stored (%s; %.1f B per data file), read whole by every cold lookup", cli.BytesText(dirLen), float64(dirLen)/float64(n)))
	bytesLine("index_bytes", sf.FileSizeInBytes, fmt.Sprintf("the statistics file (%s) for %d files x %d columns in %d groups",
		cli.BytesText(sf.FileSizeInBytes), n, len(scaleColumns), groups))
	msLine := func(key string, d time.Duration, target string, pass *bool, detail string) {
		run.add(BenchLine{Key: key, Value: float64(d.Nanoseconds()) / 1e6, Unit: "ms", Target: target, Pass: pass, Detail: detail})
	}
	msLine("build_ms", buildTime, "none (reported)", nil,
		fmt.Sprintf("indexer.Build of %s, all CPUs (one run)", strings.Join(scaleColumns, ",")))
	msLine("build_read_ms", built.ReadTime, "none (reported)", nil, "Summary.ReadTime: reading and hashing the files, added up over the workers")
	msLine("build_write_ms", built.WriteTime, "none (reported)", nil, "Summary.WriteTime: filters into groups, directory, file, commit")

	if err := s.sizeAndFPP(ctx, &run, fs, ix); err != nil {
		return run, err
	}

	// A cold lookup: no footer cache.
	s.progress("scale %d: cold lookups", n)
	absent := iceberg.EqualTo(iceberg.Reference(benchIDCol), int64(smallfiles.AbsentID))
	var total, ixTime, planning []time.Duration
	var res *lookup.Result
	reps := max(s.c.Repeat, 5)
	for i := range reps + 1 { // the first is a warm-up, untimed
		start := time.Now()
		if res, err = lookup.Plan(ctx, tbl, absent, lookup.Options{}); err != nil {
			return run, err
		}
		d := time.Since(start)
		if len(res.IndexErrors) > 0 {
			return run, fmt.Errorf("lookup: index errors: %w", errors.Join(res.IndexErrors...))
		}
		if len(res.AfterStats) != n {
			return run, fmt.Errorf("lookup: %d files after statistics, want all %d", len(res.AfterStats), n)
		}
		if i > 0 {
			total, ixTime, planning = append(total, d), append(ixTime, res.IndexTime), append(planning, d-res.IndexTime)
		}
	}
	plan := report.Median(planning)
	msLine("lookup_cold_ms", report.Median(total), "none (reported)", nil,
		fmt.Sprintf("lookup.Plan of an absent id, no footer cache, median of %d; %d of %d files left (%d requests, %d blocks, %s read)",
			reps, len(res.Candidates), n, res.Requests, res.BlocksRead, cli.BytesText(res.BytesRead)))
	msLine("lookup_index_ms", report.Median(ixTime), "none (reported)", nil, "Result.IndexTime: reading the directory and the runs, pruning")
	msLine("lookup_planning_ms", plan, "none (reported)", nil, "iceberg-go's planning: the lookup's total minus IndexTime, per run")
	r := report.Ratio(report.Median(ixTime), plan)
	target, pass := report.TargetFrom(n, scaleSyncTargetFrom, r, 0.25)
	run.add(BenchLine{Key: "lookup_index_vs_planning", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("index part %s vs iceberg-go's planning %s", cli.DurationText(report.Median(ixTime)), cli.DurationText(plan))})

	// Sync of one new file, after one more add_files.
	s.progress("scale %d: add_files of 1 more file, then sync", n)
	paths, err := st.WriteFiles(1)
	if err != nil {
		return run, err
	}
	if err := st.AddFiles(ctx, cat, paths); err != nil {
		return run, err
	}
	var synced *indexer.Summary
	var syncTime time.Duration
	peak, err := procstat.HeapPeak(func() error {
		start := time.Now()
		var err error
		synced, err = indexer.Sync(ctx, cat, ident, indexer.Options{Columns: scaleColumns, FPP: s.c.FPP, FailFast: true, CompactAbove: -1})
		syncTime = time.Since(start)
		return err
	})
	if err != nil {
		return run, fmt.Errorf("sync: %w", err)
	}
	msLine("sync_1_file_ms", syncTime, "none (reported)", nil,
		fmt.Sprintf("indexer.Sync after add_files of 1 file: %d files covered, %d indexed, %d segments after", synced.FilesCovered, synced.FilesIndexed, synced.Segments))
	run.add(BenchLine{Key: "sync_peak_heap", Value: float64(peak) / (1 << 20), Unit: "MiB", Target: "none (reported)",
		Detail: fmt.Sprintf("peak live heap growth during the sync (%s), sampled every 200 µs from runtime/metrics", cli.BytesText(peak))})
	read := float64(synced.FilesIndexed)
	ok = synced.FilesIndexed == 1
	run.add(BenchLine{Key: "sync_files_read", Value: read, Unit: "files", Target: "== 1", Pass: &ok,
		Detail: "Summary.FilesIndexed: data files the sync read"})
	r = report.Ratio(syncTime, plan)
	target, pass = report.TargetFrom(n, scaleSyncTargetFrom, r, 1.5)
	run.add(BenchLine{Key: "sync_vs_planning", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("sync of 1 file %s vs iceberg-go's planning of the cold lookup %s", cli.DurationText(syncTime), cli.DurationText(plan))})

	// Compaction of the two segments.
	s.progress("scale %d: compact-index", n)
	start = time.Now()
	compacted, err := indexer.Compact(ctx, cat, ident, indexer.CompactOptions{})
	if err != nil {
		return run, fmt.Errorf("compact: %w", err)
	}
	compactTime := time.Since(start)
	if compacted.SegmentsBefore != 2 || compacted.SegmentsAfter != 1 || compacted.EntriesKept != 2*(n+1) {
		return run, fmt.Errorf("compact: %+v, want 2 segments into 1 keeping %d entries", compacted, 2*(n+1))
	}
	msLine("compact_ms", compactTime, "none (reported)", nil,
		fmt.Sprintf("indexer.Compact of the build's and the sync's segments: %d filters kept, %s copied", compacted.EntriesKept, cli.BytesText(compacted.BytesCopied)))
	r = report.Ratio(compactTime, built.WriteTime)
	target, pass = report.TargetFrom(n, scaleCompactTargetFrom, r, 2)
	run.add(BenchLine{Key: "compact_vs_build_write", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("compact-index %s vs the build's index-writing part %s (Summary.WriteTime)", cli.DurationText(compactTime), cli.DurationText(built.WriteTime))})

	// No false negative through build, sync and compaction: an id of the
	// first file and one of the synced file keep their files.
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		return run, err
	}
	missed := 0
	for _, c := range []struct {
		id   int64
		path string
	}{{st.Present[0], st.Paths[0]}, {st.Present[n], st.Paths[n]}} {
		res, err := lookup.Plan(ctx, tbl, iceberg.EqualTo(iceberg.Reference(benchIDCol), c.id), lookup.Options{})
		if err != nil {
			return run, err
		}
		if len(res.IndexErrors) > 0 {
			return run, fmt.Errorf("lookup after compaction: index errors: %w", errors.Join(res.IndexErrors...))
		}
		if !slices.Contains(cli.DataFiles(res.Candidates), c.path) {
			missed++
		}
	}
	target, pass = report.AtMost(float64(missed), 0, " files")
	run.add(BenchLine{Key: "false_negatives", Value: float64(missed), Unit: "files", Target: target, Pass: pass,
		Detail: "cold lookups after the compaction of an id of the first file and one of the synced file: files holding them that the index dropped"})
	return run, nil
}

// sizeAndFPP compares the filters' bytes with the per-file SBBF optimum and
// measures the false-positive rate of the id filters on absent ids,
// reading each filter with index.ReadFilter.
func (s *scaler) sizeAndFPP(ctx context.Context, run *ScaleRun, fs icebergio.IO, ix *index.TableIndex) error {
	var actual, optimum int64
	var idFilters []index.StoredFilter
	for _, seg := range ix.Segments() {
		for f := range seg.Filters() {
			blocks, err := sbbf.NumBlocks(uint64(f.NDV), f.FPP, indexer.DefaultMaxFilterBytes)
			if err != nil {
				return err
			}
			actual += int64(f.Blocks) * sbbf.BlockBytes
			optimum += int64(blocks) * sbbf.BlockBytes
			if f.FieldID == 1 {
				idFilters = append(idFilters, f)
			}
		}
	}
	r := float64(actual) / float64(max(optimum, 1))
	target, pass := report.AtMost(r, 1.06, "x")
	run.add(BenchLine{Key: "index_size_vs_sbbf_optimum", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("%s of filter blocks vs %s, the per-file optimum (sbbf.NumBlocks of each filter's ndv and fpp)",
			cli.BytesText(actual), cli.BytesText(optimum))})

	probes := max(scaleMinProbes, scaleChecks/max(len(idFilters), 1))
	rng := rand.New(rand.NewPCG(3, 4))
	hashes := make([]uint64, probes)
	for i := range hashes {
		hashes[i] = hashing.Int64(2*rng.Int64N(smallfiles.MaxID/2) + 1) // odd: absent
	}
	open := map[string]icebergio.File{}
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	var hits, checks int64
	var predicted float64
	for _, f := range idFilters {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, ok := open[f.Path]
		if !ok {
			var err error
			if r, err = fs.Open(f.Path); err != nil {
				return fmt.Errorf("open %s: %w", f.Path, err)
			}
			open[f.Path] = r
		}
		bits, err := index.ReadFilter(r, f)
		if err != nil {
			return err
		}
		sf, err := sbbf.FromBytes(bits)
		if err != nil {
			return err
		}
		for _, h := range hashes {
			if sf.Check(h) {
				hits++
			}
		}
		checks += int64(len(hashes))
		predicted += sbbf.FalsePositiveRate(f.Blocks, uint64(f.NDV)) * float64(len(hashes))
	}
	measured := float64(hits) / float64(max(checks, 1))
	if hits == 0 {
		measured = 0.5 / float64(max(checks, 1))
		s.note("no false positive in %d checks at %d files: the FPP ratio uses half a hit as an upper estimate", checks, len(idFilters))
	}
	r = measured / s.c.FPP
	target, pass = report.AtMost(r, 1.05, "x")
	run.add(BenchLine{Key: "measured_fpp_vs_target", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("%d of %d absent-id checks passed (%.4f%%) vs target %g%%; %d id filters x %d probes; sbbf.FalsePositiveRate of these filters predicts %.4f%%",
			hits, checks, 100*float64(hits)/float64(max(checks, 1)), 100*s.c.FPP, len(idFilters), probes, 100*predicted/float64(max(checks, 1)))})
	return nil
}

// loadScaleIndex loads a bench table, its storage and its whole index; an
// index problem is an error here, where the bench wrote every file itself.
func loadScaleIndex(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier) (*table.Table, icebergio.IO, *index.TableIndex, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, nil, nil, err
	}
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, nil, nil, err
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		return nil, nil, nil, fmt.Errorf("load index: %w", errors.Join(errs...))
	}
	return tbl, fs, ix, nil
}

// onS3 measures lookups of a table of n data files on the in-process S3
// server, answering each request after scaleS3Delay: the requests and
// bytes a cold lookup reads of the index, and the index's part of the
// lookup against a scan that opens every file.
func (s *scaler) onS3(ctx context.Context, dir string, n int) (ScaleRun, error) {
	run := ScaleRun{Files: n, Storage: "s3"}
	srv, err := catalogtest.StartS3()
	if err != nil {
		return run, err
	}
	defer srv.Close()
	cat, err := catalog.Open(ctx, catalog.Options{Type: "sql", URI: filepath.Join(dir, "s3-catalog.db"),
		Warehouse: srv.Location("warehouse"), Properties: srv.Properties()})
	if err != nil {
		return run, err
	}
	if c, ok := cat.(icecatalog.Closer); ok {
		defer c.Close()
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return run, fmt.Errorf("create namespace bench: %w", err)
	}
	ident := table.Identifier{"bench", "s3"}
	put := func(location, base string, data []byte) (string, error) {
		key, ok := srv.Key(location + "/data/" + base)
		if !ok {
			return "", fmt.Errorf("table location %s is not in the bucket", location)
		}
		return srv.Location(key), srv.PutObject(key, data)
	}
	s.progress("S3, %d files: writing the files, add_files, build (no delay)", n)
	if _, err := smallfiles.Create(ctx, cat, ident, n, put); err != nil {
		return run, err
	}
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: scaleColumns, FPP: s.c.FPP, FailFast: true}); err != nil {
		return run, fmt.Errorf("build: %w", err)
	}
	tbl, _, ix, err := loadScaleIndex(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	var segments, groups int
	var dirBytes int64
	for _, seg := range ix.Segments() {
		segments++
		if _, l, ok := segment.DirectoryPlace(seg.File); ok {
			dirBytes += l
		}
		dir := seg.Directory()
		if dir == nil {
			continue
		}
		for _, g := range dir.Groups {
			if g.FieldID == 1 {
				groups++
			}
		}
	}

	s.progress("S3, %d files: cold lookups and a scan of every file, %s per request", n, scaleS3Delay)
	srv.SetDelay(scaleS3Delay)
	defer srv.SetDelay(0)
	absent := iceberg.EqualTo(iceberg.Reference(benchIDCol), int64(smallfiles.AbsentID))
	var ixTime, planning []time.Duration
	var res *lookup.Result
	var indexReqs, otherReqs, indexBytes int64
	reps := max(s.c.Repeat, 3)
	for i := range reps + 1 { // the first is a warm-up, untimed
		srv.Reset()
		start := time.Now()
		if res, err = lookup.Plan(ctx, tbl, absent, lookup.Options{}); err != nil {
			return run, err
		}
		d := time.Since(start)
		if len(res.IndexErrors) > 0 {
			return run, fmt.Errorf("lookup: index errors: %w", errors.Join(res.IndexErrors...))
		}
		indexReqs, otherReqs, indexBytes = 0, 0, 0
		for _, r := range srv.Requests() {
			if strings.HasSuffix(r.Key, ".puffin") {
				indexReqs++
				indexBytes += r.BytesOut
			} else {
				otherReqs++
			}
		}
		if i > 0 {
			ixTime, planning = append(ixTime, res.IndexTime), append(planning, d-res.IndexTime)
		}
	}
	bound := int64(groups*1 + segments)
	target, pass := report.AtMost(float64(indexReqs), float64(bound), " requests")
	run.add(BenchLine{Key: "s3_lookup_index_requests", Value: float64(indexReqs), Unit: "requests", Target: target, Pass: pass,
		Detail: fmt.Sprintf("requests of the index per cold lookup of 1 value (%d reads of runs as the lookup counts them); bound: %d groups of %s x 1 value + %d directory reads; the lookup made %d other requests (iceberg-go's planning)",
			res.Requests, groups, benchIDCol, segments, otherReqs)})
	run.add(BenchLine{Key: "s3_lookup_index_bytes", Value: float64(indexBytes), Unit: "B", Target: "none (reported)",
		Detail: fmt.Sprintf("bytes of the index per cold lookup, as the server sent them: the directory (%s) and %s of runs (%d blocks checked)",
			cli.BytesText(dirBytes), cli.BytesText(res.BytesRead), res.BlocksRead)})
	run.add(report.ReportedMS("s3_lookup_index_ms", report.Median(ixTime), fmt.Sprintf("Result.IndexTime, median of %d cold lookups, %d of %d files left", reps, len(res.Candidates), n)))
	run.add(report.ReportedMS("s3_lookup_planning_ms", report.Median(planning), "iceberg-go's planning of the same lookups (total minus IndexTime)"))

	// The scan without the index: iceberg-go's reader over every file the
	// statistics leave, scaleScanConcurrency at a time.
	var scans []time.Duration
	var scanReqs int
	for range min(reps, 3) {
		srv.Reset()
		start := time.Now()
		rows, err := scanAll(ctx, tbl, absent, res.AfterStats)
		if err != nil {
			return run, err
		}
		scans = append(scans, time.Since(start))
		if rows != 0 {
			return run, fmt.Errorf("scan of an absent id returned %d rows", rows)
		}
		scanReqs = len(srv.Requests())
	}
	run.add(report.ReportedMS("s3_scan_all_ms", report.Median(scans), fmt.Sprintf("iceberg-go's ReadTasks of all %d files, %d at a time (%d requests), median of %d",
		len(res.AfterStats), scaleScanConcurrency, scanReqs, len(scans))))
	r := report.Ratio(report.Median(ixTime), report.Median(scans))
	target, pass = report.AtMost(r, 0.1, "x")
	run.add(BenchLine{Key: "s3_index_vs_scan", Value: r, Unit: "x", Target: target, Pass: pass,
		Detail: fmt.Sprintf("the index's part of the lookup %s vs the scan that opens every file %s", cli.DurationText(report.Median(ixTime)), cli.DurationText(report.Median(scans)))})
	return run, nil
}

// scanAll reads tasks with iceberg-go's reader, filtering rows, and returns
// the rows that matched.
func scanAll(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, tasks []table.FileScanTask) (int64, error) {
	scan := tbl.Scan(table.WithRowFilter(filter), table.WithMaxConcurrency(scaleScanConcurrency))
	_, records, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return 0, err
	}
	var rows int64
	for rec, err := range records {
		if err != nil {
			return 0, err
		}
		rows += rec.NumRows()
		rec.Release()
	}
	return rows, nil
}

// printScale writes the results as one text table per run.
func printScale(w io.Writer, out *ScaleOutput) {
	fmt.Fprintf(w, "icebloom bench --scale: %d rows per file, columns %s, GOMAXPROCS %d, %d CPUs, %s\n",
		out.RowsPerFile, strings.Join(scaleColumns, ","), out.GOMAXPROCS, out.NumCPU, out.GoVersion)
	for _, run := range out.Runs {
		fmt.Fprintf(w, "\n%d files (%s)\n", run.Files, run.Storage)
		if run.Storage == "s3" {
			fmt.Fprintf(w, "  in-process S3 server, %.0f ms per request\n", out.S3DelayMS)
		}
		report.PrintLines(w, run.Measurements)
	}
	report.PrintNotes(w, out.Notes)
}
