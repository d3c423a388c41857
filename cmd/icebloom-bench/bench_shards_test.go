//go:build icebloom_bench

package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestShardedSideBySide: bench --shards runs each count on a table of its
// own and reports, per count, wall, CPU, the CPU ratio to the first count,
// the run's commits and the shards that linked it — one commit per run at
// every count when one shard linked it. Shards started at once may finish
// at the same moment and each link the run (a race the run survives:
// every later linker commits again on top of the file it replaced), so
// the test allows two commits more per linker beyond the first.
func TestShardedSideBySide(t *testing.T) {
	if got, err := parseShardCounts("1, 4,16"); err != nil || !slices.Equal(got, []int{1, 4, 16}) {
		t.Fatalf("parseShardCounts: %v, %v", got, err)
	}
	for _, bad := range []string{"0", "4,x", "-1"} {
		if _, err := parseShardCounts(bad); err == nil {
			t.Errorf("--shards %q accepted", bad)
		}
	}
	cat := catalogtest.NewCatalog(t)
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"bench"}, nil); err != nil {
		t.Fatal(err)
	}
	s := &scaler{c: &BenchCmd{FPP: 0.01}, e: &env{json: true}, out: &ScaleOutput{}}
	run, err := s.sharded(t.Context(), cat, 40, []int{1, 4})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"shards_1_wall_ms", "shards_1_cpu_ms", "shards_1_cpu_ratio", "shards_1_commits", "shards_1_linkers",
		"shards_4_wall_ms", "shards_4_cpu_ms", "shards_4_cpu_ratio", "shards_4_commits", "shards_4_linkers"}
	var keys []string
	values := map[string]float64{}
	for _, l := range run.Measurements {
		keys = append(keys, l.Key)
		values[l.Key] = l.Value
	}
	for _, k := range []int{1, 4} {
		commits, linkers := values[fmt.Sprintf("shards_%d_commits", k)], values[fmt.Sprintf("shards_%d_linkers", k)]
		if linkers < 1 || commits < 1 || commits > 2*linkers-1 { // one linker: one commit

			t.Errorf("%d shards: %v commits by %v linkers, want 1 by 1 (or at most 2 more for each linker beyond the first)", k, commits, linkers)
		}
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("measurements %v, want %v", keys, want)
	}
}
