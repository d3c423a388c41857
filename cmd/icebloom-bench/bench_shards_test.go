//go:build icebloom_bench

package main

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestShardedSideBySide: bench --shards runs each count on a table of its
// own and reports, per count, wall, CPU, the CPU ratio to the first count
// and the run's commits — one commit per run at every count.
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
	want := []string{"shards_1_wall_ms", "shards_1_cpu_ms", "shards_1_cpu_ratio", "shards_1_commits",
		"shards_4_wall_ms", "shards_4_cpu_ms", "shards_4_cpu_ratio", "shards_4_commits"}
	var keys []string
	for _, l := range run.Measurements {
		keys = append(keys, l.Key)
		if (l.Key == "shards_1_commits" || l.Key == "shards_4_commits") && l.Value != 1 {
			t.Errorf("%s = %v, want 1", l.Key, l.Value)
		}
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("measurements %v, want %v", keys, want)
	}
}
