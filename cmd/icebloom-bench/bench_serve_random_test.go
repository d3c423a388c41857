//go:build icebloom_bench

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchServeRandomJSON runs bench --serve --serve-kind random tiny (a
// table of 200 files, 4 clients for 1 s, appends every 300 ms for 1 s, two
// fresh servers) and checks that it works: the table was made and
// recorded, the server ran as a process of its own and was measured in
// every phase, nothing failed (no file dropped, no 5xx, no transport
// error, the server alive); then that a second run reuses the table, which
// the first returned to its recorded version after its appends. Timings
// and their targets are not asserted. It builds the icebloom binary, so it
// needs the go command.
func TestBenchServeRandomJSON(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("builds icebloom with the go command: %v", err)
	}
	dir := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"--output", "json", "--serve", "200", "--serve-kind", "random", "--dir", dir,
			"--serve-clients", "4", "--serve-append-every", "300ms"}, extra...)
	}
	stdout, stderr, code := icebloomBench(t, args("--serve-duration", "1s", "--serve-append-duration", "1s", "--serve-cold-rounds", "2")...)
	var out ServeRandomOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bench exited %d, output %q: %v; stderr %s", code, stdout, err, stderr)
	}
	if code != 0 || len(out.Failures) > 0 {
		t.Fatalf("bench exited %d, failures %q: %s", code, out.Failures, stderr)
	}
	if len(out.Runs) != 1 || out.Runs[0].Files != 200 || out.Runs[0].Reused || out.Runs[0].ServerPID <= 0 ||
		out.MemoryBudgetMiB != 256 || out.GoMemLimit != "384MiB" || out.Binary == "" || out.RowsPerFile != 100 {
		t.Fatalf("output %+v, want one run of 200 new files, budget 256 MiB, GOMEMLIMIT 384MiB, a server process", out)
	}
	got := checkLines(t, out.Runs[0].Measurements, []string{
		"make_write_ms_per_1000", "make_add_files_ms_per_1000", "make_index_ms_per_1000",
		"serve_files_planned", "serve_warm_ms", "serve_warm_id_ms", "serve_warm_email_ms", "serve_warm_edge_ms", "local_plan_ms",
		"serve_warm_vs_local", "serve_warm_edge_vs_local",
		"serve_concurrent_p50_ms", "serve_concurrent_p99_ms", "serve_concurrent_p99_vs_p50", "serve_concurrent_refused", "rss_concurrent_mib",
		"append_warm_ms", "after_append_vs_warm", "after_sync_vs_warm", "append_commit_ms",
		"server_peak_rss_mib", "live_heap_concurrent_mib", "live_heap_life_mib",
		"serve_cold_ms", "local_plan_cold_ms", "serve_cold_vs_local", "files_dropped", "plans_refused", "plans_failed", "server_5xx",
	}, map[string]bool{"serve_concurrent_p99_vs_p50": true, "serve_concurrent_refused": true, "after_append_vs_warm": true,
		"after_sync_vs_warm": true, "server_peak_rss_mib": true, "live_heap_concurrent_mib": true, "files_dropped": true, "plans_refused": true, "plans_failed": true, "server_5xx": true},
		map[string]bool{"serve_concurrent_refused": true, "files_dropped": true, "plans_refused": true, "plans_failed": true, "server_5xx": true})
	// A warm plan of a middle value keeps a few of the 200 files; local
	// planning, with min/max statistics alone, nearly all.
	if l := got["serve_files_planned"]; l.Value > 20 || !strings.Contains(l.Detail, "locally") {
		t.Errorf("serve_files_planned = %v: %s", l.Value, l.Detail)
	}
	if l := got["server_peak_rss_mib"]; l.Value < 1 || l.Value > 4096 {
		t.Errorf("server_peak_rss_mib = %v", l.Value)
	}
	data, err := os.ReadDir(filepath.Join(dir, "warehouse", "bench.db", "random_200", "data"))
	if err != nil || len(data) != 200 {
		t.Errorf("%d data files left after the appends (%v), want the 200 of the table", len(data), err)
	}

	stdout, stderr, code = icebloomBench(t, args("--serve-bin", out.Binary, "--serve-duration", "500ms", "--serve-append-duration", "0", "--serve-cold-rounds", "1")...)
	var again ServeRandomOutput
	if err := json.Unmarshal([]byte(stdout), &again); err != nil || code != 0 || len(again.Failures) > 0 {
		t.Fatalf("the second run exited %d, failures %q, output %q (%v): %s", code, again.Failures, stdout, err, stderr)
	}
	if len(again.Runs) != 1 || !again.Runs[0].Reused || !again.Runs[0].Made.Equal(out.Runs[0].Made) || len(again.Notes) > 0 {
		t.Errorf("second run %+v, notes %q: want the table of the first reused as it was recorded", again.Runs, again.Notes)
	}
	for _, l := range again.Runs[0].Measurements {
		if strings.HasPrefix(l.Key, "after_") {
			t.Errorf("%s measured with --serve-append-duration 0", l.Key)
		}
	}
}
