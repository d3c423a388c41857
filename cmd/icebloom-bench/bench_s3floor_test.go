//go:build icebloom_bench

package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestBenchS3FloorJSON runs bench --s3-floor at a tiny size and checks the
// shape of its JSON output: every measurement, sane values, a verdict
// wherever a target applies. The verdicts of timed targets are not
// asserted; the request count is: reading ahead sends no HEAD and at most
// two requests per data file (here one: each small file lies whole in the
// end read with its footer).
func TestBenchS3FloorJSON(t *testing.T) {
	stdout, stderr, code := icebloomBench(t, "--output", "json", "--s3-floor", "6", "--s3-floor-rows", "300",
		"--dir", t.TempDir(), "--repeat", "1")
	if code != 0 {
		t.Fatalf("bench --s3-floor exited %d: %s", code, stderr)
	}
	var out S3FloorOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bench --s3-floor output %q: %v", stdout, err)
	}
	if out.Files != 6 || out.RowsPerFile != 300 || out.S3DelayMS != 10 || out.RequestsInFlight != 32 {
		t.Fatalf("setup %+v", out)
	}
	targeted := map[string]bool{"s3_build_vs_floor_throughput": true, "s3_build_vs_workers_speedup": true}
	want := []string{"s3_build_vs_floor_throughput", "s3_whole_build_vs_floor", "s3_build_vs_workers_speedup",
		"s3_data_requests_per_file", "s3_build_ms", "s3_floor_ms", "s3_workers_build_ms",
		"local_build_ahead_vs_workers", "local_build_ahead_vs_workers_cpu"}
	got := checkLines(t, out.Measurements, want, targeted, nil)
	if l := got["s3_data_requests_per_file"]; l.Value != 1 || !strings.Contains(l.Detail, "no HEAD") {
		t.Errorf("reading ahead: %v requests per data file (%s), want 1", l.Value, l.Detail)
	}
	if _, _, code := icebloomBench(t, "--s3-floor", "-2", "--dir", t.TempDir()); code == 0 {
		t.Error("bench --s3-floor -2 succeeded")
	}
}

// checkLines checks that lines are exactly the measurements want, each
// with a finite value, positive unless mayBeZero says it may be 0, a
// target, unit and detail, and a verdict just where targeted says a target
// applies; it returns them by key.
func checkLines(t *testing.T, lines []BenchLine, want []string, targeted, mayBeZero map[string]bool) map[string]BenchLine {
	t.Helper()
	got := map[string]BenchLine{}
	for _, l := range lines {
		got[l.Key] = l
	}
	for _, key := range want {
		l, ok := got[key]
		switch {
		case !ok:
			t.Errorf("no measurement %q", key)
		case math.IsNaN(l.Value) || math.IsInf(l.Value, 0) || l.Value < 0 || (l.Value == 0 && !mayBeZero[key]):
			t.Errorf("%s = %v", key, l.Value)
		case l.Target == "" || l.Unit == "" || l.Detail == "":
			t.Errorf("%s: target %q, unit %q, detail %q", key, l.Target, l.Unit, l.Detail)
		case targeted[key] != (l.Pass != nil):
			t.Errorf("%s: target %q, pass %v", key, l.Target, l.Pass)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d measurements, want %d", len(got), len(want))
	}
	return got
}
