//go:build icebloom_bench

package main

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/procstat"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/report"
	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/smallfiles"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/segment"
)

// parseShardCounts reads --shards: comma-separated shard counts, e.g.
// 1,4,16,64.
func parseShardCounts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var counts []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--shards %q: want comma-separated shard counts of at least 1, e.g. 1,4,16,64", s)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// sharded measures sharded runs of N = each of counts shards, each on a
// table of its own of n tiny data files, side by side: the shards of a run
// start at once, as the pods of an Indexed Job would (here goroutines of
// one process, sharing its cores), and the run is timed until its one
// linking commit landed. The CPU is the process's (user and system) over
// the run: what N shards cost together, each shard's fixed work — its
// catalog loads, its walk of every manifest — included, a process's own
// start not. The merge is left out (CompactAbove -1: left to maintain).
func (s *scaler) sharded(ctx context.Context, cat icecatalog.Catalog, n int, counts []int) (ScaleRun, error) {
	run := ScaleRun{Files: n, Storage: "local, sharded runs side by side"}
	var baseCPU time.Duration
	for _, k := range counts {
		ident := table.Identifier{"bench", fmt.Sprintf("sharded_%d_%d", n, k)}
		if _, err := cat.LoadTable(ctx, ident); err == nil {
			return run, fmt.Errorf("%s exists already in the catalog; use an empty --dir", strings.Join(ident, "."))
		}
		s.progress("sharded %d files, %d shards: writing the table", n, k)
		if _, err := smallfiles.Create(ctx, cat, ident, n, smallfiles.LocalPut); err != nil {
			return run, err
		}
		before, err := catalogVersion(ctx, cat, ident)
		if err != nil {
			return run, err
		}
		s.progress("  %d shards at once", k)
		sums := make([]*indexer.Summary, k)
		errs := make([]error, k)
		cpu0, start := processCPU(), time.Now()
		var wg sync.WaitGroup
		for i := range k {
			wg.Go(func() {
				sums[i], errs[i] = indexer.Build(ctx, cat, ident, indexer.Options{Columns: scaleColumns, FPP: s.c.FPP, FailFast: true,
					CompactAbove: -1, Parallel: 1, Shard: &indexer.Shard{Index: i, Count: k, Run: "bench"}})
			})
		}
		wg.Wait()
		wall, cpu := time.Since(start), processCPU()-cpu0
		indexed, linkers := 0, 0
		for i := range k {
			if errs[i] != nil {
				return run, fmt.Errorf("%d shards: shard %d: %w", k, i, errs[i])
			}
			indexed += sums[i].FilesIndexed
			if sums[i].Shard.Linked {
				linkers++
			}
		}
		if indexed != n || linkers < 1 {
			return run, fmt.Errorf("%d shards indexed %d files of %d, %d linked the run", k, indexed, n, linkers)
		}
		after, err := catalogVersion(ctx, cat, ident)
		if err != nil {
			return run, err
		}
		if baseCPU == 0 {
			baseCPU = cpu
		}
		run.add(report.ReportedMS(fmt.Sprintf("shards_%d_wall_ms", k), wall, fmt.Sprintf("%d shards started at once, until the run is linked", k)))
		run.add(report.ReportedMS(fmt.Sprintf("shards_%d_cpu_ms", k), cpu, fmt.Sprintf("CPU of the %d shards together (user+system)", k)))
		run.add(BenchLine{Key: fmt.Sprintf("shards_%d_cpu_ratio", k), Value: float64(cpu) / float64(baseCPU), Unit: "x", Target: "none (reported)",
			Detail: fmt.Sprintf("CPU against the run of %d shards", counts[0])})
		run.add(BenchLine{Key: fmt.Sprintf("shards_%d_commits", k), Value: float64(after - before), Unit: "commits", Target: "none (reported)",
			Detail: "catalog commits of the run (metadata versions written)"})
		run.add(BenchLine{Key: fmt.Sprintf("shards_%d_linkers", k), Value: float64(linkers), Unit: "shards", Target: "none (reported)",
			Detail: "shards whose linking commit landed: one, unless shards finished at the same moment and each saw every marker (a later one then commits once more, on top of the file it replaced unseen)"})
	}
	return run, nil
}

// catalogVersion is the version number of a table's current metadata
// file (00042-<uuid>.metadata.json), one more per commit.
func catalogVersion(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier) (int, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, err
	}
	v, _, _ := strings.Cut(path.Base(tbl.MetadataLocation()), "-")
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("metadata file %s has no version number", tbl.MetadataLocation())
	}
	return n, nil
}

// shardedOneByOne measures a sharded run of a table of n tiny data files
// by shards runs, one after another as the pods of an Indexed Job would
// finish (the last links the run): each shard's time, peak heap and commit, the cold load of the
// linked index before the merge, and the merge itself — the numbers
// docs/scale.md extrapolates from.
func (s *scaler) shardedOneByOne(ctx context.Context, cat icecatalog.Catalog, n, shards int) (ScaleRun, error) {
	run := ScaleRun{Files: n, Storage: fmt.Sprintf("local, %d shards one by one", shards)}
	ident := table.Identifier{"bench", fmt.Sprintf("onebyone_%d_%d", n, shards)}
	if _, err := cat.LoadTable(ctx, ident); err == nil {
		return run, fmt.Errorf("%s exists already in the catalog; use an empty --dir", strings.Join(ident, "."))
	}
	s.progress("sharded %d files, %d shards: writing the table", n, shards)
	st, err := smallfiles.Create(ctx, cat, ident, n, smallfiles.LocalPut)
	if err != nil {
		return run, err
	}
	var slowest, total, commits time.Duration
	var heap int64
	indexed := 0
	for i := range shards {
		s.progress("  shard %d of %d", i, shards)
		var sum *indexer.Summary
		start := time.Now()
		peak, err := procstat.HeapPeak(func() (err error) {
			sum, err = indexer.Build(ctx, cat, ident, indexer.Options{Columns: scaleColumns, FPP: s.c.FPP, FailFast: true, CompactAbove: -1,
				Shard: &indexer.Shard{Index: i, Count: shards, Run: "bench"}})
			return err
		})
		if err != nil {
			return run, fmt.Errorf("shard %d: %w", i, err)
		}
		d := time.Since(start)
		slowest, total, heap = max(slowest, d), total+d, max(heap, peak)
		commits += sum.WriteTime
		indexed += sum.FilesIndexed
	}
	if indexed != n {
		return run, fmt.Errorf("the shards indexed %d files, want %d", indexed, n)
	}
	run.add(report.ReportedMS("shard_ms_max", slowest, fmt.Sprintf("the slowest shard's build (about %d files each)", n/shards)))
	run.add(report.ReportedMS("shards_ms_total", total, "the shards' builds added up: the CPU the run costs"))
	run.add(report.ReportedMS("shard_write_ms_mean", commits/time.Duration(shards), "Summary.WriteTime per shard: its segment (the last shard: and the run's linking file and commit)"))
	run.add(BenchLine{Key: "shard_peak_heap", Value: float64(heap), Unit: "B", Target: "none (reported)",
		Detail: fmt.Sprintf("the largest peak heap growth of one shard (%s)", cli.BytesText(heap))})

	// A cold load of the index while the shards are linked: one directory
	// read for the linking file, then one per shard at once.
	start := time.Now()
	_, _, ix, err := loadScaleIndex(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	run.add(report.ReportedMS("linked_load_ms", time.Since(start), fmt.Sprintf("index.Load of %d segments (the linking file and the shards'), cold", len(ix.Segments()))))
	if r := indexer.ShardsCommitted(ix)["bench"]; r.Committed != shards {
		return run, fmt.Errorf("the index links %d shards of %d", r.Committed, shards)
	}

	s.progress("  merge")
	start = time.Now()
	cs, err := indexer.Compact(ctx, cat, ident, indexer.CompactOptions{})
	if err != nil {
		return run, err
	}
	run.add(report.ReportedMS("merge_ms", time.Since(start), fmt.Sprintf("compact-index of the %d shard segments into one (%s copied)", shards, cli.BytesText(cs.BytesCopied))))
	tbl, _, ix, err := loadScaleIndex(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	if segs := ix.Segments(); len(segs) != 1 || segs[0].Directory().Files.Len() != len(st.Paths) {
		return run, fmt.Errorf("after the merge: %d segments", len(segs))
	}
	_, dirLen, _ := segment.DirectoryPlace(ix.Segments()[0].File)
	run.add(BenchLine{Key: "merged_directory_bytes", Value: float64(dirLen), Unit: "B", Target: "none (reported)",
		Detail: fmt.Sprintf("%.1f B per data file", float64(dirLen)/float64(n))})
	start = time.Now()
	if _, err := cat.LoadTable(ctx, tbl.Identifier()); err != nil {
		return run, err
	}
	run.add(report.ReportedMS("catalog_load_ms", time.Since(start), "one LoadTable of the embedded SQLite catalog, for scale: the run's one commit is two or three"))
	return run, nil
}
