// Package metricsfile writes the metrics file of icebloom's --metrics-file:
// the counts and outcomes of build, sync, rebuild, compact-index and
// maintain runs in Prometheus's text exposition format, replaced
// atomically for node_exporter's textfile collector. It reads back only
// what it wrote before (the last-success times); it serves no HTTP
// endpoint and checks no command line.
package metricsfile

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// The metrics file is Prometheus's text exposition format (version 0.0.4),
// for node_exporter's textfile collector or anything else that reads it.
//
// It is written here rather than with client_golang: this module's go.sum
// holds no checksums for client_golang's own dependencies (client_model,
// common, procfs, perks), so importing it does not build without changing
// go.mod and go.sum. The format is small — HELP and TYPE lines, then one
// sample a line — and the writer below follows client_golang's text
// encoder: families sorted by name, samples by labels, label values and
// help escaped the same way. Counters count since the process started, so a
// one-shot command writes its run's counts and `maintain --every` the sums
// over its rounds; Prometheus reads a drop to a smaller value as a restart.

// metricFamily is one metric: its name, type and help.
type metricFamily struct {
	name, kind, help string
}

const (
	counter = "counter"
	gauge   = "gauge"
)

var (
	metricRuns          = metricFamily{"icebloom_runs_total", counter, "Runs of the command on the table (maintain: one per table and round)."}
	metricRunsFailed    = metricFamily{"icebloom_runs_failed_total", counter, "Runs of the command on the table that failed."}
	metricFilesIndexed  = metricFamily{"icebloom_files_indexed_total", counter, "Data files indexed."}
	metricFilesFailed   = metricFamily{"icebloom_files_failed_total", counter, "Data files, or columns of data files, that could not be read and stay unindexed (never pruned)."}
	metricDataBytes     = metricFamily{"icebloom_data_bytes_indexed_total", counter, "Size of the data files read for indexing, indexed or failed, as the manifests list them; only the indexed columns' chunks of them are read."}
	metricIndexBytes    = metricFamily{"icebloom_index_bytes_written_total", counter, "Bytes of index files written: the committed statistics file of a build, sync or rebuild, the blob bytes a compaction copied."}
	metricExpired       = metricFamily{"icebloom_snapshots_expired_total", counter, "Snapshots expired."}
	metricOrphans       = metricFamily{"icebloom_orphan_files_deleted_total", counter, "Orphan index files deleted."}
	metricRepairs       = metricFamily{"icebloom_index_repairs_total", counter, "Index files found missing or corrupt and replaced or removed, and groups of filters left out of a compaction for failing their checksums; their data files are indexed again."}
	metricSegments      = metricFamily{"icebloom_index_segments", gauge, "Statistics files holding index entries after the last successful run."}
	metricDuration      = metricFamily{"icebloom_run_duration_seconds", gauge, "Duration of the last run, failed or not."}
	metricLastRun       = metricFamily{"icebloom_last_run_timestamp_seconds", gauge, "Unix time the last run ended, failed or not."}
	metricLastSuccess   = metricFamily{"icebloom_last_success_timestamp_seconds", gauge, "Unix time the last successful run ended; kept from the previous file when this run failed."}
	metricLastRunFailed = metricFamily{"icebloom_last_run_failed", gauge, "1 if the last run failed, else 0."}
)

// Labels are the labels of every sample: the command and the table, ns.table
// ("" for a maintain failure before any table, such as listing them).
type Labels struct{ Command, Table string }

// File collects the samples of a process's runs and writes them to the
// metrics file.
type File struct {
	path     string
	families map[metricFamily]map[Labels]float64
	// previousSuccess holds the last-success times the file had before
	// this process wrote it: a failed one-shot run keeps them, so an alert
	// on the age of the last success keeps counting from the true one.
	previousSuccess map[Labels]float64
}

// Open starts the metrics written to path, taking the last-success
// times from the file if it exists. A file that cannot be read or parsed is
// reported but not fatal: the run writes a new one.
func Open(path string) (*File, error) {
	m := &File{path: path, families: map[metricFamily]map[Labels]float64{}, previousSuccess: map[Labels]float64{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read the previous metrics file: %w", err)
	}
	samples, err := Parse(bytes.NewReader(b))
	if err != nil {
		return m, fmt.Errorf("read the previous metrics file %s: %w", path, err)
	}
	for _, s := range samples {
		if s.Name == metricLastSuccess.name {
			m.previousSuccess[Labels{s.Labels["command"], s.Labels["table"]}] = s.Value
		}
	}
	return m, nil
}

func (m *File) series(f metricFamily) map[Labels]float64 {
	s := m.families[f]
	if s == nil {
		s = map[Labels]float64{}
		m.families[f] = s
	}
	return s
}

func (m *File) add(f metricFamily, l Labels, v float64) { m.series(f)[l] += v }
func (m *File) set(f metricFamily, l Labels, v float64) { m.series(f)[l] = v }

// Run records the end of one run: the counters every run has, at zero if
// need be so that the file always has them, and the outcome.
func (m *File) Run(l Labels, dur time.Duration, end time.Time, failed bool) {
	for _, f := range []metricFamily{metricFilesIndexed, metricFilesFailed, metricDataBytes, metricIndexBytes} {
		m.add(f, l, 0)
	}
	m.add(metricRuns, l, 1)
	m.add(metricRunsFailed, l, 0)
	m.set(metricDuration, l, dur.Seconds())
	m.set(metricLastRun, l, unixSeconds(end))
	if failed {
		m.add(metricRunsFailed, l, 1)
		m.set(metricLastRunFailed, l, 1)
		if _, ok := m.series(metricLastSuccess)[l]; !ok {
			if t, ok := m.previousSuccess[l]; ok {
				m.set(metricLastSuccess, l, t)
			}
		}
		return
	}
	m.set(metricLastRunFailed, l, 0)
	m.set(metricLastSuccess, l, unixSeconds(end))
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Indexed records a build, sync or rebuild; sum is nil when it failed.
func (m *File) Indexed(l Labels, sum *indexer.Summary, dataBytes int64, dur time.Duration, end time.Time) {
	m.Run(l, dur, end, sum == nil)
	m.add(metricDataBytes, l, float64(dataBytes))
	if sum == nil {
		return
	}
	m.add(metricFilesIndexed, l, float64(sum.FilesIndexed))
	m.add(metricFilesFailed, l, float64(len(sum.FilesFailed)))
	if sum.StatisticsPath != "" {
		m.add(metricIndexBytes, l, float64(sum.IndexBytes))
	}
	if sum.Compacted != nil {
		m.add(metricIndexBytes, l, float64(sum.Compacted.BytesCopied))
	}
	m.add(metricRepairs, l, float64(repairs(sum, nil)))
	m.set(metricSegments, l, float64(sum.Segments))
}

// repairs counts the broken index files and groups a sync's summary (with
// its compaction) and another compaction's report; either may be nil.
func repairs(sum *indexer.Summary, cs *indexer.CompactSummary) int {
	n := 0
	if sum != nil {
		n += len(sum.BrokenFiles)
		if sum.Compacted != nil {
			n += len(sum.Compacted.BrokenFiles) + len(sum.Compacted.BrokenGroups)
		}
	}
	if cs != nil {
		n += len(cs.BrokenFiles) + len(cs.BrokenGroups)
	}
	return n
}

// Compacted records a compact-index run; sum is nil when it failed.
func (m *File) Compacted(l Labels, sum *indexer.CompactSummary, dur time.Duration, end time.Time) {
	m.Run(l, dur, end, sum == nil)
	if sum == nil {
		return
	}
	m.add(metricIndexBytes, l, float64(sum.BytesCopied))
	m.add(metricRepairs, l, float64(repairs(nil, sum)))
	m.set(metricSegments, l, float64(sum.SegmentsAfter))
}

// Maintained records one table of a maintain round. A table skipped (no
// indexed columns, or the run stopped) is no run.
func (m *File) Maintained(r maintenance.TableReport, dataBytes int64, dur time.Duration, end time.Time) {
	if r.Skipped != "" {
		return
	}
	l := Labels{"maintain", r.Table}
	m.Run(l, dur, end, r.Failed())
	m.add(metricDataBytes, l, float64(dataBytes))
	if s := r.Sync; s != nil {
		m.add(metricFilesIndexed, l, float64(s.FilesIndexed))
		m.add(metricFilesFailed, l, float64(len(s.FilesFailed)))
		if s.StatisticsPath != "" {
			m.add(metricIndexBytes, l, float64(s.IndexBytes))
		}
		if s.Compacted != nil {
			m.add(metricIndexBytes, l, float64(s.Compacted.BytesCopied))
		}
		if !r.Failed() {
			m.set(metricSegments, l, float64(s.Segments))
		}
	}
	if r.Expire != nil {
		m.add(metricExpired, l, float64(len(r.Expire.SnapshotsExpired)))
	}
	var folded *indexer.CompactSummary
	if r.Expire != nil {
		folded = r.Expire.Folded
	}
	m.add(metricRepairs, l, float64(repairs(r.Sync, folded)))
	if r.GC != nil {
		m.add(metricOrphans, l, float64(len(r.GC.Deleted)))
	}
}

// Write replaces the metrics file atomically — a temporary file in the same
// directory, renamed over it — so a collector never reads half a file. The
// temporary name does not end in .prom, which the textfile collector would
// pick up.
func (m *File) Write() error {
	tmp, err := os.CreateTemp(filepath.Dir(m.path), "."+filepath.Base(m.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	w := bufio.NewWriter(tmp)
	m.encode(w)
	err = w.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp makes the file private; a collector often runs as
		// another user.
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), m.path)
	}
	if err != nil {
		return fmt.Errorf("write metrics file %s: %w", m.path, err)
	}
	return nil
}

// encode writes the text exposition of every family with samples.
func (m *File) encode(w io.Writer) {
	fams := make([]metricFamily, 0, len(m.families))
	for f, s := range m.families {
		if len(s) > 0 {
			fams = append(fams, f)
		}
	}
	slices.SortFunc(fams, func(a, b metricFamily) int { return strings.Compare(a.name, b.name) })
	for _, f := range fams {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
		series := m.families[f]
		keys := make([]Labels, 0, len(series))
		for l := range series {
			keys = append(keys, l)
		}
		slices.SortFunc(keys, func(a, b Labels) int {
			return cmp.Or(strings.Compare(a.Command, b.Command), strings.Compare(a.Table, b.Table))
		})
		for _, l := range keys {
			fmt.Fprintf(w, "%s{command=\"%s\",table=\"%s\"} %s\n", f.name, escapeLabel(l.Command), escapeLabel(l.Table), formatValue(series[l]))
		}
	}
}

// escapeHelp escapes a HELP text: backslash and newline.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// escapeLabel escapes a label value: backslash, double quote and newline.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// formatValue writes a sample value: integers as integers, others in plain
// decimal (timestamps), and the format's spellings of infinities and NaN.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Sample is one parsed sample line: metric name, labels and value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Parse reads the samples of a text exposition, skipping comments
// and blank lines: enough for the files this command writes (and others'
// simple ones), which is what carrying the last-success times over needs.
func Parse(r io.Reader) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := ParseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// ParseSample parses `name{k="v",...} value [timestamp]`.
func ParseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, fmt.Errorf("%q is not a sample", line)
	}
	s.Name, line = line[:i], line[i:]
	if strings.HasPrefix(line, "{") {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " \t,")
			if strings.HasPrefix(line, "}") {
				line = line[1:]
				break
			}
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, fmt.Errorf("bad labels in a sample of %s", s.Name)
			}
			key := strings.TrimSpace(line[:eq])
			line = line[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(line); j++ {
				c := line[j]
				if c == '\\' && j+1 < len(line) {
					j++
					switch line[j] {
					case 'n':
						val.WriteByte('\n')
					default: // \\ and \"
						val.WriteByte(line[j])
					}
					continue
				}
				if c == '"' {
					line, closed = line[j+1:], true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value in a sample of %s", s.Name)
			}
			s.Labels[key] = val.String()
		}
	}
	fields := strings.Fields(line)
	if len(fields) < 1 || len(fields) > 2 {
		return s, fmt.Errorf("bad value in a sample of %s", s.Name)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value in a sample of %s: %w", s.Name, err)
	}
	s.Value = v
	return s, nil
}
