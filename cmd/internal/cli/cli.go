// Package cli holds what icebloom's commands (cmd/icebloom and
// cmd/icebloom-bench) print and check the same way: byte counts and
// durations for people, JSON output, the data files of a plan, and the
// checks of numeric flag values. It runs no command and parses no command
// line; each command keeps its own flags and exit codes.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
)

// PrintJSON writes v to w as one indented JSON object, the form of every
// --output json.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// BytesText renders a byte count for people: "512 B", "1.5 KiB".
func BytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// DurationText rounds a duration for people: to the microsecond below a
// millisecond, to 10 µs below a second, to the millisecond above.
func DurationText(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// DataFiles lists the data files of tasks once each, in order: a large
// file may be planned as several tasks.
func DataFiles(tasks []table.FileScanTask) []string {
	seen := map[string]bool{}
	files := []string{}
	for _, t := range tasks {
		if p := t.File.FilePath(); !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	return files
}

// CheckFPP refuses a --fpp outside (0, 1): 0 would need infinite filters,
// 1 prunes nothing.
func CheckFPP(v float64) error {
	if !(v > 0 && v < 1) { // NaN too
		return fmt.Errorf("--fpp %s: want a false-positive rate between 0 and 1, such as 0.01", strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// CheckAtLeast refuses an integer flag below least; unit names what it
// counts ("data file": "--files 0: want 1 or more data files").
func CheckAtLeast(flag string, v, least int, unit string) error {
	if v >= least {
		return nil
	}
	if least == 0 {
		return fmt.Errorf("%s %d: want 0 or more %ss", flag, v, unit)
	}
	return fmt.Errorf("%s %d: want %d or more %ss", flag, v, least, unit)
}
