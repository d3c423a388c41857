//go:build icebloom_bench

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/segment"
)

// sharded measures a sharded build of a table of n tiny data files by
// shards runs, one after another as the pods of an Indexed Job would
// finish: each shard's time, peak heap and commit, the cold load of the
// linked index before the merge, and the merge itself — the numbers
// docs/scale.md extrapolates from.
func (s *scaler) sharded(ctx context.Context, cat icecatalog.Catalog, n, shards int) (ScaleRun, error) {
	run := ScaleRun{Files: n, Storage: fmt.Sprintf("local, %d shards", shards)}
	ident := table.Identifier{"bench", fmt.Sprintf("sharded_%d_%d", n, shards)}
	if _, err := cat.LoadTable(ctx, ident); err == nil {
		return run, fmt.Errorf("%s exists already in the catalog; use an empty --dir", strings.Join(ident, "."))
	}
	s.progress("sharded %d files, %d shards: writing the table", n, shards)
	st, err := createScaleTable(ctx, cat, ident, n, localPut)
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
		peak, err := heapPeak(func() (err error) {
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
	run.add(reportedMS("shard_ms_max", slowest, fmt.Sprintf("the slowest shard's build (about %d files each)", n/shards)))
	run.add(reportedMS("shards_ms_total", total, "the shards' builds added up: the CPU the run costs"))
	run.add(reportedMS("shard_write_ms_mean", commits/time.Duration(shards), "Summary.WriteTime per shard: its segment, the file linking it, the commit"))
	run.add(BenchLine{Key: "shard_peak_heap", Value: float64(heap), Unit: "B", Target: "none (reported)",
		Detail: fmt.Sprintf("the largest peak heap growth of one shard (%s)", cli.BytesText(heap))})

	// A cold load of the index while the shards are linked: one directory
	// read for the linking file, then one per shard at once.
	start := time.Now()
	_, _, ix, err := loadScaleIndex(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	run.add(reportedMS("linked_load_ms", time.Since(start), fmt.Sprintf("index.Load of %d segments (the linking file and the shards'), cold", len(ix.Segments()))))
	if r := indexer.ShardsCommitted(ix)["bench"]; r.Committed != shards {
		return run, fmt.Errorf("the index links %d shards of %d", r.Committed, shards)
	}

	s.progress("  merge")
	start = time.Now()
	cs, err := indexer.Compact(ctx, cat, ident, indexer.CompactOptions{})
	if err != nil {
		return run, err
	}
	run.add(reportedMS("merge_ms", time.Since(start), fmt.Sprintf("compact-index of the %d shard segments into one (%s copied)", shards, cli.BytesText(cs.BytesCopied))))
	tbl, _, ix, err := loadScaleIndex(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	if segs := ix.Segments(); len(segs) != 1 || len(segs[0].Dir.Files) != len(st.paths) {
		return run, fmt.Errorf("after the merge: %d segments", len(segs))
	}
	_, dirLen, _ := segment.DirectoryPlace(ix.Segments()[0].File)
	run.add(BenchLine{Key: "merged_directory_bytes", Value: float64(dirLen), Unit: "B", Target: "none (reported)",
		Detail: fmt.Sprintf("%.1f B per data file", float64(dirLen)/float64(n))})
	start = time.Now()
	if _, err := cat.LoadTable(ctx, tbl.Identifier()); err != nil {
		return run, err
	}
	run.add(reportedMS("catalog_load_ms", time.Since(start), "one LoadTable of the embedded SQLite catalog, for scale: a shard's commit is two or three"))
	return run, nil
}
