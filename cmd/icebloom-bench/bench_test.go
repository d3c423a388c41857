//go:build icebloom_bench

package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBenchJSON runs bench at tiny sizes and checks the shape of its JSON
// output: every measurement is present with a value and a target, and a
// pass verdict where it has a target. The verdicts themselves are not
// asserted: timings on shared machines are noise at this size.
func TestBenchJSON(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := icebloomBench(t, "--output", "json", "--files", "6", "--rows", "500",
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

// TestBenchScaleJSON runs bench --scale at a tiny size and checks the shape
// of its JSON output: a local run and an S3 run, each with its
// measurements, sane values, and a verdict wherever a target applies. The
// verdicts of timed targets are not asserted; the counts are.
func TestBenchScaleJSON(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := icebloomBench(t, "--output", "json", "--scale", "200", "--s3-files", "50",
		"--dir", dir, "--repeat", "1")
	if code != 0 {
		t.Fatalf("bench --scale exited %d: %s", code, stderr)
	}
	var out ScaleOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bench --scale output %q: %v", stdout, err)
	}
	if len(out.Runs) != 2 || out.Runs[0].Files != 200 || out.Runs[0].Storage != "local" ||
		out.Runs[1].Files != 50 || out.Runs[1].Storage != "s3" {
		t.Fatalf("runs %+v, want 200 files local and 50 on s3", out.Runs)
	}
	want := [][]string{{
		"footer_bytes", "directory_bytes", "index_bytes", "build_ms", "build_read_ms", "build_write_ms",
		"index_size_vs_sbbf_optimum", "measured_fpp_vs_target",
		"lookup_cold_ms", "lookup_index_ms", "lookup_planning_ms", "lookup_index_vs_planning",
		"sync_1_file_ms", "sync_peak_heap", "sync_files_read", "sync_vs_planning",
		"compact_ms", "compact_vs_build_write", "false_negatives",
	}, {
		"s3_lookup_index_requests", "s3_lookup_index_bytes", "s3_lookup_index_ms", "s3_lookup_planning_ms",
		"s3_scan_all_ms", "s3_index_vs_scan",
	}}
	// Lines whose target applies at 200 files; the others report only.
	targeted := map[string]bool{"index_size_vs_sbbf_optimum": true, "measured_fpp_vs_target": true,
		"sync_files_read": true, "false_negatives": true, "s3_lookup_index_requests": true, "s3_index_vs_scan": true}
	mayBeZero := map[string]bool{"false_negatives": true, "sync_peak_heap": true}
	for i, run := range out.Runs {
		got := map[string]BenchLine{}
		for _, l := range run.Measurements {
			got[l.Key] = l
		}
		for _, key := range want[i] {
			l, ok := got[key]
			switch {
			case !ok:
				t.Errorf("%s run: no measurement %q", run.Storage, key)
			case math.IsNaN(l.Value) || math.IsInf(l.Value, 0) || l.Value < 0 || (l.Value == 0 && !mayBeZero[key]):
				t.Errorf("%s = %v", key, l.Value)
			case l.Target == "" || l.Unit == "" || l.Detail == "":
				t.Errorf("%s: target %q, unit %q, detail %q", key, l.Target, l.Unit, l.Detail)
			case targeted[key] != (l.Pass != nil):
				t.Errorf("%s: target %q, pass %v", key, l.Target, l.Pass)
			}
		}
		if len(got) != len(want[i]) {
			t.Errorf("%s run: %d measurements, want %d", run.Storage, len(got), len(want[i]))
		}
	}
	local, s3 := map[string]BenchLine{}, map[string]BenchLine{}
	for _, l := range out.Runs[0].Measurements {
		local[l.Key] = l
	}
	for _, l := range out.Runs[1].Measurements {
		s3[l.Key] = l
	}
	// What is counted, not timed, holds at any size.
	for _, key := range []string{"sync_files_read", "false_negatives", "index_size_vs_sbbf_optimum", "s3_lookup_index_requests"} {
		l, ok := local[key]
		if !ok {
			l = s3[key]
		}
		if l.Pass == nil || !*l.Pass {
			t.Errorf("%s = %v, target %s: %s", key, l.Value, l.Target, l.Detail)
		}
	}
	if local["directory_bytes"].Value >= local["index_bytes"].Value || local["footer_bytes"].Value >= local["index_bytes"].Value {
		t.Errorf("footer %v B, directory %v B, index %v B", local["footer_bytes"].Value, local["directory_bytes"].Value, local["index_bytes"].Value)
	}
	if f := local["measured_fpp_vs_target"].Value; f > 1.05 {
		t.Errorf("measured FPP %vx the target: %s", f, local["measured_fpp_vs_target"].Detail)
	}
}

// TestBenchServeJSON runs bench --serve on a table of 50 files with 4
// clients and checks the shape of its JSON output: every line present with
// a sane value, a verdict where a target applies (the warm/local target
// only from 100,000 files), the plans' file counts (the index pruned the
// server's, the client's kept every file), and memory held to the budget
// given. The verdicts of timed targets are not asserted.
func TestBenchServeJSON(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := icebloomBench(t, "--output", "json", "--serve", "50", "--serve-clients", "4",
		"--serve-plans", "3", "--memory-budget-mib", "64", "--dir", dir, "--repeat", "1")
	if code != 0 {
		t.Fatalf("bench --serve exited %d: %s", code, stderr)
	}
	var out ServeOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bench --serve output %q: %v", stdout, err)
	}
	if len(out.Runs) != 1 || out.Runs[0].Files != 50 || out.Clients != 4 || out.PlansPerClient != 3 ||
		out.MemoryBudgetMiB != 64 || out.Rounds < 1 || out.Driver == "" {
		t.Fatalf("output %+v, want one run of 50 files, 4 clients x 3 plans, budget 64 MiB", out)
	}
	want := []string{"serve_setup_ms", "serve_files_planned", "serve_warm_ms", "serve_warm_planner_ms", "serve_cached_ms",
		"serve_cold_ms", "local_plan_ms", "serve_warm_vs_local", "serve_cold_vs_local",
		"serve_concurrent_p50_ms", "serve_concurrent_p99_ms", "serve_concurrent_p99_vs_p50",
		"serve_heap_retained_mib", "serve_heap_peak_mib", "serve_heap_in_use_peak_mib", "process_rss_mib"}
	targeted := map[string]bool{"serve_concurrent_p99_vs_p50": true, "serve_heap_retained_mib": true, "serve_heap_peak_mib": true}
	// What the server keeps is a difference of two heap samples of the
	// whole test process, clamped at 0: at 50 files it can be none.
	got := checkLines(t, out.Runs[0].Measurements, want, targeted, map[string]bool{"serve_heap_retained_mib": true})
	if l := got["serve_warm_vs_local"]; !strings.Contains(l.Target, "from 100000 files") {
		t.Errorf("serve_warm_vs_local at 50 files: target %q, want none below 100000 files", l.Target)
	}
	// Counted, not timed: the server's plan is pruned by the index (a
	// lookup keeps its file and few others at fpp 1%), the client's keeps
	// every file, and what the server keeps is within a 64 MiB budget.
	if f := got["serve_files_planned"]; f.Value >= 50 || !strings.Contains(f.Detail, "by the client locally 50 ") {
		t.Errorf("serve_files_planned = %v: %s", f.Value, f.Detail)
	}
	if l := got["serve_heap_retained_mib"]; l.Pass == nil || !*l.Pass || l.Target != "<= 64 MiB" {
		t.Errorf("serve_heap_retained_mib = %v, target %q: %s", l.Value, l.Target, l.Detail)
	}
	if p50, p99 := got["serve_concurrent_p50_ms"].Value, got["serve_concurrent_p99_ms"].Value; p99 < p50 {
		t.Errorf("p99 %v ms < p50 %v ms", p99, p50)
	}
	if !strings.Contains(stdout, `"load_before":`) {
		t.Errorf("JSON lacks load_before: %s", stdout)
	}
}

// TestBareServe: --serve without sizes means the default sizes; with
// sizes, they are kept.
func TestBareServe(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"--serve"}, []string{"--serve", serveDefaultSizes}},
		{[]string{"--serve", "--output", "json"}, []string{"--serve", serveDefaultSizes, "--output", "json"}},
		{[]string{"--serve", "50,100"}, []string{"--serve", "50,100"}},
		{[]string{"--scale", "1000"}, []string{"--scale", "1000"}},
	} {
		if got := bareServe(c.in); !slices.Equal(got, c.want) {
			t.Errorf("bareServe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
