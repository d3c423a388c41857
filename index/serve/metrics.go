package serve

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/icebloom/icebloom/index/serve/planning"
)

// latencyBuckets are the upper bounds, in seconds, of the latency
// histograms.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// histogram is a Prometheus histogram of durations.
type histogram struct {
	counts []int64 // per bucket, not cumulative
	sum    float64
	n      int64
}

func (h *histogram) observe(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]int64, len(latencyBuckets))
	}
	s := d.Seconds()
	h.sum += s
	h.n++
	if i := sort.SearchFloat64s(latencyBuckets, s); i < len(latencyBuckets) {
		h.counts[i]++
	}
}

func (h *histogram) write(w io.Writer, name, labels string) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cum int64
	for i, le := range latencyBuckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"%g\"} %d\n", name, labels, sep, le, cum)
	}
	fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, h.n)
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %g\n%s_count%s %d\n", name, labels, h.sum, name, labels, h.n)
}

// metrics are the server's counters, written in the Prometheus text format
// by /metrics.
type metrics struct {
	mu sync.Mutex
	// plans by outcome: planned, cached, bad_request, upstream_error, error, rejected
	plans                                 map[string]int64
	filesTotal, filesAfterStats, filesOut int64
	fastPlans                             int64               // plans made by the fast path
	indexUnreadable                       int64               // plans that could not read (all of) the index
	planLatency                           map[bool]*histogram // by cached
	requests                              map[string]int64    // by route kind
	commits                               int64               // 2xx commits seen passing through
}

func newMetrics() *metrics {
	return &metrics{plans: map[string]int64{}, requests: map[string]int64{},
		planLatency: map[bool]*histogram{false: {}, true: {}}}
}

func (m *metrics) planned(res *planning.PlanResult, cached bool, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cached {
		m.plans["cached"]++
	} else {
		m.plans["planned"]++
		if res.FastPath {
			m.fastPlans++
		}
	}
	if len(res.IndexErrors) > 0 {
		m.indexUnreadable++
	}
	m.filesTotal += int64(res.FilesTotal)
	m.filesAfterStats += int64(res.FilesAfterStats)
	m.filesOut += int64(res.FilesPlanned)
	m.planLatency[cached].observe(d)
}

func (m *metrics) count(kind string) {
	m.mu.Lock()
	m.plans[kind]++
	m.mu.Unlock()
}

func (m *metrics) request(kind string) {
	m.mu.Lock()
	m.requests[kind]++
	m.mu.Unlock()
}

func (m *metrics) commit() {
	m.mu.Lock()
	m.commits++
	m.mu.Unlock()
}

// SyncStats are the commit syncer's counters, shown in /metrics.
type SyncStats struct{ Scheduled, Started, Succeeded, Failed, Retried, GaveUp, Dropped int64 }

func (m *metrics) write(w io.Writer, cacheBytes int64, cacheEntries int, hits, misses, evicted int64, sync *SyncStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# HELP icebloom_serve_requests_total HTTP requests served, by route.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_requests_total counter")
	for _, k := range sortedKeys(m.requests) {
		fmt.Fprintf(w, "icebloom_serve_requests_total{route=%q} %d\n", k, m.requests[k])
	}
	fmt.Fprintln(w, "# HELP icebloom_serve_plans_total Scan plan requests, by outcome.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plans_total counter")
	for _, k := range sortedKeys(m.plans) {
		fmt.Fprintf(w, "icebloom_serve_plans_total{outcome=%q} %d\n", k, m.plans[k])
	}
	fmt.Fprintln(w, "# HELP icebloom_serve_fast_path_plans_total Plans made from a kept plan of the filter without its = and IN conjuncts, without decoding manifests.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_fast_path_plans_total counter")
	fmt.Fprintf(w, "icebloom_serve_fast_path_plans_total %d\n", m.fastPlans)
	fmt.Fprintln(w, "# HELP icebloom_serve_plans_index_unreadable_total Plans that could not read the index (or part of it) and kept the files it would have spoken for; such plans are not cached.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plans_index_unreadable_total counter")
	fmt.Fprintf(w, "icebloom_serve_plans_index_unreadable_total %d\n", m.indexUnreadable)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_files_total Data files of the planned snapshots, by stage: live in the snapshot, left by partitions and statistics, left by the index (answered).")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_files_total counter")
	fmt.Fprintf(w, "icebloom_serve_plan_files_total{stage=\"snapshot\"} %d\n", m.filesTotal)
	fmt.Fprintf(w, "icebloom_serve_plan_files_total{stage=\"stats\"} %d\n", m.filesAfterStats)
	fmt.Fprintf(w, "icebloom_serve_plan_files_total{stage=\"index\"} %d\n", m.filesOut)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_seconds Time to plan a scan, by whether the plan came from the cache.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_seconds histogram")
	m.planLatency[false].write(w, "icebloom_serve_plan_seconds", `cached="false"`)
	m.planLatency[true].write(w, "icebloom_serve_plan_seconds", `cached="true"`)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_cache_bytes Estimated bytes of plans held in memory.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_cache_bytes gauge")
	fmt.Fprintf(w, "icebloom_serve_plan_cache_bytes %d\n", cacheBytes)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_cache_entries Plans held in memory.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_cache_entries gauge")
	fmt.Fprintf(w, "icebloom_serve_plan_cache_entries %d\n", cacheEntries)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_cache_lookups_total Plan cache lookups, by result.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_cache_lookups_total counter")
	fmt.Fprintf(w, "icebloom_serve_plan_cache_lookups_total{result=\"hit\"} %d\n", hits)
	fmt.Fprintf(w, "icebloom_serve_plan_cache_lookups_total{result=\"miss\"} %d\n", misses)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_cache_evictions_total Plans evicted to stay within the memory budget.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_cache_evictions_total counter")
	fmt.Fprintf(w, "icebloom_serve_plan_cache_evictions_total %d\n", evicted)
	fmt.Fprintln(w, "# HELP icebloom_serve_commits_total Successful commits seen passing through the proxy.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_commits_total counter")
	fmt.Fprintf(w, "icebloom_serve_commits_total %d\n", m.commits)
	if sync != nil {
		fmt.Fprintln(w, "# HELP icebloom_serve_syncs_total Index syncs of the commit syncer, by event.")
		fmt.Fprintln(w, "# TYPE icebloom_serve_syncs_total counter")
		for _, kv := range []struct {
			k string
			v int64
		}{{"scheduled", sync.Scheduled}, {"started", sync.Started}, {"succeeded", sync.Succeeded}, {"failed", sync.Failed}, {"retried", sync.Retried},
			{"gave_up", sync.GaveUp}, {"dropped", sync.Dropped}} {
			fmt.Fprintf(w, "icebloom_serve_syncs_total{event=%q} %d\n", kv.k, kv.v)
		}
	}
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
