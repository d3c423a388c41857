//go:build icebloom_bench

package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchServeAbuseJSON runs bench --serve-abuse briefly (a table of 150
// files, 4 ordinary clients and one of each hostile kind for 3 s after a
// 1 s baseline) and checks that it works: the server ran as a process of
// its own and was measured, every hostile kind was sent and answered,
// ordinary plans were begun and planned in both phases and counted, the
// server's live heap was read at its collections, and nothing failed (no
// 5xx, no ordinary transport error, RSS within the limit, no file
// dropped). Timings are not asserted. It builds the icebloom binary, so it
// needs the go command.
func TestBenchServeAbuseJSON(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("builds icebloom with the go command: %v", err)
	}
	dir := t.TempDir()
	stdout, stderr, code := icebloomBench(t, "--output", "json", "--serve-abuse", "--serve-abuse-files", "150",
		"--serve-abuse-clients", "12", "--serve-abuse-ordinary", "4", "--serve-abuse-duration", "3s", "--serve-abuse-baseline", "1s", "--dir", dir)
	var out AbuseOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bench --serve-abuse exited %d, output %q: %v; stderr %s", code, stdout, err, stderr)
	}
	if code != 0 || len(out.Failures) > 0 {
		t.Fatalf("bench --serve-abuse exited %d, failures %q: %s", code, out.Failures, stderr)
	}
	if out.Files != 150 || out.Clients != 12 || out.OrdinaryClients != 4 || out.HostileClients != 8 || out.MemoryBudgetMiB != 64 ||
		out.GoMemLimit != serveYAMLGoMemLimit || out.ServerPID <= 0 || out.Binary == "" {
		t.Errorf("output %+v, want 150 files, 4 + 8 clients, budget 64 MiB, a server process", out)
	}
	got := checkLines(t, out.Measurements, []string{"server_peak_rss_mib", "server_peak_rss_vs_budget",
		"baseline_p50_ms", "baseline_p99_ms", "abuse_p50_ms", "abuse_p99_ms", "abuse_p99_vs_baseline_p50", "abuse_p99_vs_baseline_p99",
		"baseline_planned_pct", "baseline_ordinary_429s", "abuse_planned_pct", "abuse_ordinary_429s",
		"server_cpu_baseline_cores", "server_cpu_abuse_cores",
		"after_abuse_plan_ms", "files_dropped", "server_live_heap_baseline_mib", "server_live_heap_abuse_mib"},
		map[string]bool{"server_peak_rss_mib": true, "abuse_p99_vs_baseline_p50": true, "files_dropped": true},
		map[string]bool{"files_dropped": true, "server_live_heap_baseline_mib": true, "baseline_ordinary_429s": true, "abuse_ordinary_429s": true})
	if l := got["server_peak_rss_mib"]; l.Pass == nil || !*l.Pass || l.Value < 1 {
		t.Errorf("server_peak_rss_mib = %v, target %q", l.Value, l.Target)
	}
	// The live heap is read from the server's gctrace: the hostile mix
	// makes it collect.
	if l := got["server_live_heap_abuse_mib"]; l.Value < 1 || l.Value > float64(out.MemoryLimitMiB) {
		t.Errorf("server_live_heap_abuse_mib = %v (%s), want the server's live heap at its collections", l.Value, l.Detail)
	}
	if out.HostileCallers != 1 {
		t.Errorf("hostile callers %d, want 1 (the default)", out.HostileCallers)
	}
	// The hostile clients ran in a process of their own (the test binary
	// again, TestMain), whose CPU time is reported.
	if d := got["server_cpu_abuse_cores"].Detail; !strings.Contains(d, "the hostile clients' process") {
		t.Errorf("server_cpu_abuse_cores: %s; want the hostile clients' process's CPU beside", d)
	}
	if len(out.Baseline) != 1 || out.Baseline[0].Kind != kindOrdinary || out.Baseline[0].Classes["2xx"] == 0 {
		t.Errorf("baseline answers %+v, want ordinary plans planned", out.Baseline)
	}
	for _, ph := range [][]AbuseKind{out.Baseline, out.Abuse} {
		if k := ph[0]; k.Planned == 0 || k.Plans < k.Planned+k.GaveUp || k.Planned != k.Classes["2xx"] || k.Retried > k.Statuses["429"]+k.Statuses["503"] {
			t.Errorf("ordinary plans: %d begun, %d planned, %d gave up, %d retried; answers %v", k.Plans, k.Planned, k.GaveUp, k.Retried, k.Statuses)
		}
	}
	var kinds []string
	for _, k := range out.Abuse {
		kinds = append(kinds, k.Kind)
		if k.Requests == 0 || k.Clients != 1 && k.Kind != kindOrdinary {
			t.Errorf("%s: %d clients sent %d requests", k.Kind, k.Clients, k.Requests)
		}
	}
	if want := append([]string{kindOrdinary}, hostileKinds...); !slices.Equal(kinds, want) {
		t.Errorf("kinds %q, want %q", kinds, want)
	}
	// A browser's simple POST and the path tricks are refused whatever
	// the load.
	for _, k := range out.Abuse {
		if (k.Kind == kindTextPlain || k.Kind == kindPathTricks) && (k.Classes["4xx"] == 0 || k.Classes["2xx"] > 0) {
			t.Errorf("%s: answered %v, want 4xx only", k.Kind, k.Statuses)
		}
	}
}

// TestAbuseMatchesServeYAML: the memory settings the abuse bench runs the
// server with and holds it to are those of docs/kubernetes/serve.yaml.
func TestAbuseMatchesServeYAML(t *testing.T) {
	b, err := os.ReadFile("../../docs/kubernetes/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	find := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(y)
		if m == nil {
			t.Fatalf("serve.yaml has no match of %s", re)
		}
		return m[1]
	}
	if v := find(`name: GOMEMLIMIT\s+value: (\S+)`); v != serveYAMLGoMemLimit || v != strconv.Itoa(serveYAMLGoMemLimitMiB)+"MiB" {
		t.Errorf("serve.yaml GOMEMLIMIT %s, the bench %s (%d MiB)", v, serveYAMLGoMemLimit, serveYAMLGoMemLimitMiB)
	}
	if v := find(`--memory-budget-mib=(\d+)`); v != strconv.Itoa(serveYAMLBudgetMiB) {
		t.Errorf("serve.yaml --memory-budget-mib %s, the bench %d", v, serveYAMLBudgetMiB)
	}
	limits := y[strings.Index(y, "limits:"):]
	if v := regexp.MustCompile(`memory: (\d+)Gi`).FindStringSubmatch(limits); v == nil || v[1] != strconv.Itoa(serveYAMLMemLimitMiB>>10) {
		t.Errorf("serve.yaml memory limit %q, the bench %d MiB", v, serveYAMLMemLimitMiB)
	}
}

// TestRetryWaitAsJavasClient: the ordinary clients wait before a retry as
// Iceberg's Java REST client does (ExponentialHttpRequestRetryStrategy):
// the answer's Retry-After when positive, in seconds or as a date; else
// 1, 2, 4 ... s, at most 64 s, and up to a tenth more.
func TestRetryWaitAsJavasClient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := http.Header{}
	h.Set("Retry-After", "3")
	if d := retryWait(h, 4, rng); d != 3*time.Second {
		t.Errorf("Retry-After 3: %s, want 3s", d)
	}
	h.Set("Retry-After", time.Now().Add(10*time.Second).UTC().Format(http.TimeFormat))
	if d := retryWait(h, 1, rng); d < 8*time.Second || d > 10*time.Second {
		t.Errorf("Retry-After in 10 s as a date: %s", d)
	}
	for _, v := range []string{"", "0", "soon"} {
		h.Set("Retry-After", v)
		for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 7: 64 * time.Second, 12: 64 * time.Second} {
			if d := retryWait(h, attempt, rng); d < base || d >= base+base/10 {
				t.Errorf("Retry-After %q, attempt %d: %s, want %s and up to a tenth more", v, attempt, d, base)
			}
		}
	}
	for code, want := range map[int]bool{429: true, 502: true, 503: true, 504: true, 500: false, 400: false, 413: false, 200: false} {
		if retriable(code) != want {
			t.Errorf("retriable(%d) = %v, want %v", code, !want, want)
		}
	}
}
