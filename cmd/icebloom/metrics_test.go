package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/cmd/internal/metricsfile"
)

// idTable is a catalogtest table db.ids of one long column, id, whose
// bloom filter its properties enable, in a SQLite catalog the command
// reaches with global.
type idTable struct {
	cat    *catalogtest.Catalog
	tbl    *table.Table
	global []string
}

// newIDTable appends files data files of a few ids each.
func newIDTable(t *testing.T, files int) *idTable {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml of the machine's
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "ids", catalogtest.IDSchema, iceberg.Properties{"write.parquet.bloom-filter-enabled.column.id": "true"})
	for i := range files {
		tbl = catalogtest.AppendIDs(t, tbl, int64(10*i), int64(10*i+1), int64(10*i+2))
	}
	return &idTable{cat: cat, tbl: tbl, global: []string{
		"--catalog", "sql",
		"--uri", "file:" + filepath.Join(filepath.Dir(cat.Warehouse), "catalog.db"),
		"--warehouse", "file://" + cat.Warehouse,
	}}
}

// args returns the global flags, then more.
func (it *idTable) args(more ...string) []string {
	return append(append([]string{}, it.global...), more...)
}

// dataFiles returns the table's live data files by path, with their sizes.
func (it *idTable) dataFiles(t *testing.T) map[string]int64 {
	t.Helper()
	tbl, err := it.cat.LoadTable(context.Background(), table.Identifier{"db", "ids"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, task := range tasks {
		out[task.File.FilePath()] = task.File.FileSizeBytes()
	}
	return out
}

// corrupt overwrites one data file with bytes that are not Parquet and
// returns its path.
func (it *idTable) corrupt(t *testing.T) string {
	t.Helper()
	for path := range it.dataFiles(t) {
		if err := os.WriteFile(strings.TrimPrefix(path, "file://"), []byte("not parquet"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Fatal("no data file")
	return ""
}

// readMetrics parses the metrics file into values by metric name and
// "command table" labels, checking that every sample has both labels and
// a HELP and TYPE line before it.
func readMetrics(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	typed := map[string]string{}
	helped := map[string]bool{}
	out := map[string]map[string]float64{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(rest, " ")
			typed[name] = kind
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			helped[name] = true
			continue
		}
		s, err := metricsfile.ParseSample(line)
		if err != nil {
			t.Fatalf("metrics file line %q: %v\n%s", line, err, b)
		}
		if kind := typed[s.Name]; !helped[s.Name] || (kind != "counter" && kind != "gauge") {
			t.Fatalf("sample of %s before its HELP and TYPE lines:\n%s", s.Name, b)
		}
		if kind := typed[s.Name]; (kind == "counter") != strings.HasSuffix(s.Name, "_total") {
			t.Errorf("%s is a %s: counters, and only they, end in _total", s.Name, kind)
		}
		cmd, okc := s.Labels["command"]
		tbl, okt := s.Labels["table"]
		if !okc || !okt || len(s.Labels) != 2 {
			t.Fatalf("sample %q: want labels command and table", line)
		}
		if out[s.Name] == nil {
			out[s.Name] = map[string]float64{}
		}
		out[s.Name][cmd+" "+tbl] = s.Value
	}
	return out
}

// TestMetricsFileAfterBuild: after a real build the metrics file holds the
// run's counts — files indexed and failed, data bytes as the manifests list
// them, the committed statistics file's size — and its duration and time;
// it is world-readable and no temporary file is left. A failing run still
// writes the file, counting the failure and keeping the previous success
// time, and still fails.
func TestMetricsFileAfterBuild(t *testing.T) {
	it := newIDTable(t, 4)
	files := it.dataFiles(t)
	bad := it.corrupt(t)
	var dataBytes int64
	for _, size := range files {
		dataBytes += size
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "icebloom.prom")

	before := time.Now()
	stdout, stderr, code := icebloom(t, it.args("--output", "json", "--metrics-file", path, "build", "db.ids")...)
	after := time.Now()
	if code != 0 {
		t.Fatalf("build exited %d: %s", code, stderr)
	}
	var sum struct {
		StatisticsPath string `json:"statistics_path"`
		FilesIndexed   int    `json:"files_indexed"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.FilesIndexed != 3 {
		t.Fatalf("build output %s: %v", stdout, err)
	}
	st, err := os.Stat(strings.TrimPrefix(sum.StatisticsPath, "file://"))
	if err != nil {
		t.Fatal(err)
	}

	m := readMetrics(t, path)
	const l = "build db.ids"
	for name, want := range map[string]float64{
		"icebloom_files_indexed_total":       3,
		"icebloom_files_failed_total":        1,
		"icebloom_data_bytes_indexed_total":  float64(dataBytes),
		"icebloom_index_bytes_written_total": float64(st.Size()),
		"icebloom_runs_total":                1,
		"icebloom_runs_failed_total":         0,
		"icebloom_last_run_failed":           0,
		"icebloom_index_segments":            1,
	} {
		if got, ok := m[name][l]; !ok || got != want {
			t.Errorf("%s{%s} = %v (present %v), want %v", name, l, got, ok, want)
		}
	}
	success := m["icebloom_last_success_timestamp_seconds"][l]
	if success < float64(before.Unix()) || success > float64(after.Unix()+1) {
		t.Errorf("last success %v, want between %v and %v", success, before.Unix(), after.Unix())
	}
	if d := m["icebloom_run_duration_seconds"][l]; d <= 0 || d > after.Sub(before).Seconds() {
		t.Errorf("duration %v s, want in (0, %v]", d, after.Sub(before).Seconds())
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("metrics file mode %v (%v), want 0644 for a collector running as another user", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the metrics directory, want the metrics file alone", len(entries))
	}

	// --fail-fast makes the unreadable file fail the build.
	_, stderr, code = icebloom(t, it.args("--metrics-file", path, "build", "db.ids", "--fail-fast")...)
	if code != 1 || !strings.Contains(stderr, bad) {
		t.Fatalf("build --fail-fast: exit %d, stderr %s; want 1 naming %s", code, stderr, bad)
	}
	m = readMetrics(t, path)
	for name, want := range map[string]float64{
		"icebloom_runs_total":                     1, // a new process: its own count
		"icebloom_runs_failed_total":              1,
		"icebloom_last_run_failed":                1,
		"icebloom_files_indexed_total":            0,
		"icebloom_last_success_timestamp_seconds": success, // carried from the file
	} {
		if got, ok := m[name][l]; !ok || got != want {
			t.Errorf("after a failure: %s{%s} = %v (present %v), want %v", name, l, got, ok, want)
		}
	}
	if _, ok := m["icebloom_index_segments"]; ok {
		t.Error("a failed run reports index segments")
	}

	// A failure before the table is even loaded is a failed run too.
	missing := filepath.Join(t.TempDir(), "missing.prom")
	if _, _, code := icebloom(t, it.args("--metrics-file", missing, "sync", "db.missing")...); code != 1 {
		t.Fatalf("sync db.missing exited %d", code)
	}
	if got := readMetrics(t, missing)["icebloom_runs_failed_total"]["sync db.missing"]; got != 1 {
		t.Errorf("sync db.missing: runs failed %v, want 1", got)
	}

	// A metrics file that cannot be written fails the command before it
	// runs (TestMetricsFileCheckedFirst).
	unwritable := filepath.Join(t.TempDir(), "no-such-dir", "icebloom.prom")
	stdout, stderr, code = icebloom(t, it.args("--metrics-file", unwritable, "compact-index", "db.ids")...)
	if code != 2 || !strings.Contains(stderr, "--metrics-file "+unwritable) || stdout != "" {
		t.Fatalf("unwritable metrics file: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	// Other commands take no metrics file.
	if _, stderr, code := icebloom(t, it.args("--metrics-file", unwritable, "inspect", "db.ids")...); code != 0 {
		t.Fatalf("inspect with --metrics-file: exit %d: %s", code, stderr)
	}
}

// TestMetricsFileMaintainEvery: maintain --every rewrites the file each
// round, its counters summing the rounds; compact-index writes its own.
func TestMetricsFileMaintainEvery(t *testing.T) {
	it := newIDTable(t, 2)
	path := filepath.Join(t.TempDir(), "maintain.prom")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	code := run(ctx, it.args("--output", "json", "--metrics-file", path, "maintain", "--every", "100ms"), &out, &errOut)
	if code != 0 {
		t.Fatalf("maintain --every exited %d: %s", code, errOut.String())
	}
	// A round the deadline stopped midway abandons its table, which is
	// printed but not counted as a run.
	rounds := strings.Count(out.String(), `"round"`) - strings.Count(out.String(), "abandoned")
	m := readMetrics(t, path)
	const l = "maintain db.ids"
	if got := m["icebloom_runs_total"][l]; rounds < 2 || got != float64(rounds) {
		t.Fatalf("%d rounds printed and not abandoned, runs_total %v: want one run per round, summed", rounds, got)
	}
	// The first round's sync indexed both files; later ones had nothing new.
	if got := m["icebloom_files_indexed_total"][l]; got != 2 {
		t.Errorf("files indexed over the rounds %v, want 2", got)
	}
	if m["icebloom_runs_failed_total"][l] != 0 || m["icebloom_last_success_timestamp_seconds"][l] == 0 {
		t.Errorf("maintain metrics %v", m)
	}

	cpath := filepath.Join(t.TempDir(), "compact.prom")
	if _, stderr, code := icebloom(t, it.args("--metrics-file", cpath, "compact-index", "db.ids")...); code != 0 {
		t.Fatal(stderr)
	}
	c := readMetrics(t, cpath)
	if c["icebloom_runs_total"]["compact-index db.ids"] != 1 || c["icebloom_index_segments"]["compact-index db.ids"] != 1 {
		t.Errorf("compact-index metrics %v", c)
	}
}
