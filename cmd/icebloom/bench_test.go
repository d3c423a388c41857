package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchJSON runs bench at tiny sizes and checks the shape of its JSON
// output: every measurement is present with a value and a target, and a
// pass verdict where it has a target. The verdicts themselves are not
// asserted: timings on shared machines are noise at this size.
func TestBenchJSON(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := icebloom(t, "--output", "json", "bench", "--files", "6", "--rows", "500",
		"--dir", dir, "--repeat", "1", "--probes", "2000", "--prune-files", "40")
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, stderr)
	}
	var out BenchOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bench output %q: %v", stdout, err)
	}
	if out.Files != 6 || out.Rows != 500 {
		t.Errorf("bench ran %d files x %d rows, want 6 x 500", out.Files, out.Rows)
	}
	// Counts of files left after the index may be zero (a miss prunes all).
	counts := map[string]bool{"lookup_needle_files_after_index": true, "lookup_miss_files_after_index": true}
	noTarget := map[string]bool{"index_bits_per_distinct_value": true,
		"lookup_needle_files_after_index": true, "lookup_miss_files_after_index": true, "plan_needle_warm_cache": true,
		"plan_miss_warm_cache": true, "build_peak_heap_vs_8B_per_value": true, "prune_step_warm_cache": true, "dictionary_shortcut_whole_build": true,
		"build_vs_hash_floor_1core": true, "floor_parallel2_speedup": true}
	want := []string{
		"dictionary_shortcut_speedup", "dictionary_shortcut_whole_build", "build_vs_floor_1core", "build_vs_hash_floor_1core",
		"build_parallel2_speedup", "floor_parallel2_speedup",
		"index_size_vs_sbbf_optimum", "index_bits_per_distinct_value", "measured_fpp_vs_target",
		"lookup_needle_files_after_index", "scan_needle_speedup", "plan_needle_warm_cache", "index_bytes_per_file_value_needle",
		"lookup_miss_files_after_index", "scan_miss_speedup", "plan_miss_warm_cache", "index_bytes_per_file_value_miss",
		"build_peak_heap_vs_8B_per_value", "prune_step_warm_cache",
	}
	got := map[string]BenchLine{}
	for _, l := range out.Measurements {
		got[l.Key] = l
	}
	for _, key := range want {
		l, ok := got[key]
		switch {
		case !ok:
			t.Errorf("no measurement %q in %s", key, stdout)
		case counts[key] && l.Value < 0, !counts[key] && !(l.Value > 0):
			t.Errorf("%s = %v", key, l.Value)
		case l.Target == "":
			t.Errorf("%s has no target", key)
		case noTarget[key] != (l.Pass == nil):
			t.Errorf("%s: target %q, pass %v", key, l.Target, l.Pass)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d measurements, want %d", len(got), len(want))
	}
	// The raw JSON carries the fields by name, pass included even when null.
	if !strings.Contains(stdout, `"pass": null`) || !strings.Contains(stdout, `"target":`) {
		t.Errorf("JSON lacks pass/target fields: %s", stdout)
	}
}
