// Package report holds what every bench mode's results are made of and
// how they are shown: a measurement line (the JSON object of each
// measurement), the targets a line is held to with their verdicts, the
// text table of lines and notes, and the statistics of timings (median,
// percentile, ratio).
package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Line is one measurement: its value (a ratio unless Unit says
// otherwise), the target it is held to, and whether it met it. Pass is nil
// for measurements without a target.
type Line struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Detail string  `json:"detail"`
	Target string  `json:"target"`
	Pass   *bool   `json:"pass"`
}

// PercentileIndex is the index of the q-quantile in a sorted list of n: the
// nearest-rank method.
func PercentileIndex(n int, q float64) int {
	i := int(float64(n)*q+0.999999) - 1
	return min(max(i, 0), n-1)
}

// Percentile is the q-quantile of ds (nearest rank); ds is not changed.
func Percentile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[PercentileIndex(len(s), q)]
}

// AtMost makes the target "<= limit unit" and v's verdict against it.
func AtMost(v, limit float64, unit string) (string, *bool) {
	ok := v <= limit
	return fmt.Sprintf("<= %g%s", limit, unit), &ok
}

// AtLeast makes the target ">= limit unit" and v's verdict against it.
func AtLeast(v, limit float64, unit string) (string, *bool) {
	ok := v >= limit
	return fmt.Sprintf(">= %g%s", limit, unit), &ok
}

// Median is the median of ds; ds is not changed.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Ratio divides two durations, never by zero.
func Ratio(a, b time.Duration) float64 {
	return float64(max(a, 1)) / float64(max(b, 1))
}

// ReportedMS is a measurement in milliseconds held to no target.
func ReportedMS(key string, d time.Duration, detail string) Line {
	return Line{Key: key, Value: float64(d.Nanoseconds()) / 1e6, Unit: "ms", Target: "none (reported)", Detail: detail}
}

// TargetFrom holds a ratio to limit only for tables of at least from files,
// the sizes the issue sets it for; below it is reported.
func TargetFrom(files, from int, v, limit float64) (string, *bool) {
	if files < from {
		return fmt.Sprintf("none (<= %gx from %d files)", limit, from), nil
	}
	return AtMost(v, limit, "x")
}

// PrintLines writes measurements as the rows of a text table.
func PrintLines(w io.Writer, lines []Line) {
	fmt.Fprintf(w, "%-28s %14s  %-30s %-6s %s\n", "measurement", "value", "target", "result", "detail")
	for _, l := range lines {
		verdict := "-"
		if l.Pass != nil {
			verdict = map[bool]string{true: "pass", false: "MISSED"}[*l.Pass]
		}
		fmt.Fprintf(w, "%-28s %14s  %-30s %-6s %s\n", l.Key, Value(l),
			strings.TrimSuffix(l.Target, " (reported)"), verdict, l.Detail)
	}
}

// PrintNotes writes the run's notes, if any.
func PrintNotes(w io.Writer, notes []string) {
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

// Value is a line's value and unit as the text tables show it: counts
// and values of 100 or more whole, others to three digits.
func Value(l Line) string {
	switch {
	case l.Unit == "B" || l.Unit == "files" || l.Unit == "requests":
		return fmt.Sprintf("%.0f %s", l.Value, l.Unit)
	case math.Abs(l.Value) >= 100:
		return fmt.Sprintf("%.0f %s", l.Value, l.Unit)
	default:
		return fmt.Sprintf("%.3g %s", l.Value, l.Unit)
	}
}
