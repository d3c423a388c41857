package report

import (
	"strings"
	"testing"
	"time"
)

// TestValue checks the text tables' value column: counts and large values
// whole, others to three digits.
func TestValue(t *testing.T) {
	for _, c := range []struct {
		l    Line
		want string
	}{
		{Line{Value: 14157, Unit: "B"}, "14157 B"},
		{Line{Value: 3, Unit: "requests"}, "3 requests"},
		{Line{Value: 123.4, Unit: "ms"}, "123 ms"},
		{Line{Value: 1.23456, Unit: "x"}, "1.23 x"},
	} {
		if got := Value(c.l); got != c.want {
			t.Errorf("Value(%+v) = %q, want %q", c.l, got, c.want)
		}
	}
}

// TestTargets checks the targets' text and verdicts, and that TargetFrom
// holds a ratio to its limit only from its size on.
func TestTargets(t *testing.T) {
	if target, pass := AtMost(2, 3, "x"); target != "<= 3x" || pass == nil || !*pass {
		t.Errorf("AtMost(2, 3) = %q, %v", target, pass)
	}
	if target, pass := AtLeast(2, 3, "x"); target != ">= 3x" || pass == nil || *pass {
		t.Errorf("AtLeast(2, 3) = %q, %v", target, pass)
	}
	if target, pass := TargetFrom(100, 1000, 5, 3); target != "none (<= 3x from 1000 files)" || pass != nil {
		t.Errorf("TargetFrom below its size = %q, %v", target, pass)
	}
	if _, pass := TargetFrom(1000, 1000, 5, 3); pass == nil || *pass {
		t.Errorf("TargetFrom at its size: pass %v, want a miss", pass)
	}
}

// TestPercentile checks the nearest-rank quantiles and the median, and
// that neither reorders its argument.
func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if got := Percentile(ds, 0.5); got != 5 {
		t.Errorf("p50 = %d, want 5", got)
	}
	if got := Percentile(ds, 0.99); got != 10 {
		t.Errorf("p99 = %d, want 10", got)
	}
	if got := Median(ds); got != 6 {
		t.Errorf("median = %d, want 6 (the upper of the middle two)", got)
	}
	if ds[0] != 5 {
		t.Errorf("ds reordered: %v", ds)
	}
	if got := Ratio(10, 0); got != 10 {
		t.Errorf("Ratio(10, 0) = %g, want 10 (no division by zero)", got)
	}
}

// TestPrintLines checks the text table's header, verdicts and the
// " (reported)" suffix dropped from targets.
func TestPrintLines(t *testing.T) {
	pass := false
	var b strings.Builder
	PrintLines(&b, []Line{
		ReportedMS("build_ms", 1500*time.Microsecond, "one run"),
		{Key: "ratio", Value: 4, Unit: "x", Target: "<= 3x", Pass: &pass},
	})
	PrintNotes(&b, []string{"a note"})
	out := b.String()
	for _, want := range []string{"measurement", "build_ms", "1.5 ms", "none ", "MISSED", "\nnotes:\n  - a note\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(reported)") {
		t.Errorf("output keeps \" (reported)\":\n%s", out)
	}
}
