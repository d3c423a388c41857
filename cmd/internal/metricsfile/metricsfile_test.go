package metricsfile

import (
	"math"
	"strings"
	"testing"
)

// TestMetricsEncoding: label values and help are escaped as the format
// requires and parse back; values are integers where they are, and the
// format's spellings otherwise; families and samples come sorted.
func TestMetricsEncoding(t *testing.T) {
	m := &File{families: map[metricFamily]map[Labels]float64{}}
	odd := "we\"ird\\ta\nble"
	m.set(metricLastSuccess, Labels{"build", odd}, 1756000000.25)
	m.add(metricFilesIndexed, Labels{"sync", "b.t"}, 12345678)
	m.add(metricFilesIndexed, Labels{"build", "a.t"}, 3)
	m.set(metricDuration, Labels{"build", "a.t"}, math.Inf(1))
	m.families[metricFamily{"icebloom_test_help", gauge, "back\\slash\nnewline"}] = map[Labels]float64{{"x", "y"}: math.NaN()}
	var b strings.Builder
	m.encode(&b)
	want := `# HELP icebloom_files_indexed_total Data files indexed.
# TYPE icebloom_files_indexed_total counter
icebloom_files_indexed_total{command="build",table="a.t"} 3
icebloom_files_indexed_total{command="sync",table="b.t"} 12345678
# HELP icebloom_last_success_timestamp_seconds ` + metricLastSuccess.help + `
# TYPE icebloom_last_success_timestamp_seconds gauge
icebloom_last_success_timestamp_seconds{command="build",table="we\"ird\\ta\nble"} 1756000000.25
# HELP icebloom_run_duration_seconds ` + metricDuration.help + `
# TYPE icebloom_run_duration_seconds gauge
icebloom_run_duration_seconds{command="build",table="a.t"} +Inf
# HELP icebloom_test_help back\\slash\nnewline
# TYPE icebloom_test_help gauge
icebloom_test_help{command="x",table="y"} NaN
`
	if b.String() != want {
		t.Fatalf("encoded\n%s\nwant\n%s", b.String(), want)
	}
	samples, err := Parse(strings.NewReader(b.String()))
	if err != nil || len(samples) != 5 {
		t.Fatalf("parsed %d samples: %v", len(samples), err)
	}
	if s := samples[2]; s.Labels["table"] != odd || s.Value != 1756000000.25 {
		t.Fatalf("round trip of %q: %+v", odd, s)
	}
	for _, bad := range []string{`x{a="b} 1`, `x{a=b} 1`, `x 1 2 3`, `x{a="b"} one`, `{a="b"} 1`} {
		if _, err := ParseSample(bad); err == nil {
			t.Errorf("ParseSample(%q) accepted it", bad)
		}
	}
}
