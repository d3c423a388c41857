package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
)

// icebloomTTY is icebloom with stderr a terminal 80 columns wide: text
// messages, usage errors with the usage.
func icebloomTTY(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runOn(context.Background(), args, &out, &errOut, true, 80, time.Now)
	return out.String(), errOut.String(), code
}

// lastLine is the last line of a command's stderr: its error.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

// emptyDir fails the test unless dir holds nothing.
func emptyDir(t *testing.T, dir, after string) {
	t.Helper()
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("%s left %s behind", after, entries[0].Name())
	}
}

// TestNoCatalogCreated: with nothing configured, no command but quickstart
// creates the embedded catalog; the others say there is none, naming its
// path, and leave the directory empty. Errors about a bad catalog path
// name the path.
func TestNoCatalogCreated(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	db := filepath.Join(dir, "warehouse", "catalog.db")
	for _, args := range [][]string{
		{"inspect", "db.missing"},
		{"lookup", "db.t", "--where", "id = 1"},
		{"scan", "db.t", "--where", "id = 1"},
		{"verify", "db.t"},
		{"gc", "db.t"},
		{"expire", "db.t", "--older-than", "7d"},
		{"compact-index", "db.t"},
		{"build", "db.t", "--columns", "id"},
		{"sync", "db.t"},
		{"rebuild", "db.t"},
		{"maintain"},
		{"maintain", "db.t"},
	} {
		_, stderr, code := icebloom(t, args...)
		if want := "no catalog at " + db; code != 1 || !strings.HasPrefix(failure(t, stderr), want) {
			t.Errorf("%v in an empty directory: exit %d, %q; want 1 and %q", args, code, stderr, want)
		}
		emptyDir(t, dir, strings.Join(args, " "))
	}

	// A directory where the database file is expected, a file that is no
	// SQLite database, a file where the directory is expected.
	if err := os.MkdirAll(db, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := icebloom(t, "inspect", "db.t"); code != 1 || !strings.Contains(lastLine(stderr), db+": is a directory") {
		t.Errorf("catalog.db a directory: exit %d, %q", code, lastLine(stderr))
	}
	os.Remove(db)
	if err := os.WriteFile(db, []byte(strings.Repeat("not SQLite\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := icebloom(t, "inspect", "db.t"); code != 1 || !strings.Contains(lastLine(stderr), db+": file is not a database") {
		t.Errorf("catalog.db not a database: exit %d, %q", code, lastLine(stderr))
	}
	other := filepath.Join(dir, "other", "c.db")
	if _, stderr, code := icebloom(t, "--catalog", "sql", "--uri", other, "inspect", "db.t"); code != 1 ||
		!strings.Contains(lastLine(stderr), other+": directory "+filepath.Dir(other)+": no such file or directory") {
		t.Errorf("SQLite catalog in a missing directory: exit %d, %q", code, lastLine(stderr))
	}
	os.RemoveAll(filepath.Join(dir, "warehouse"))

	// An explicit SQLite catalog that does not exist is not created, by
	// reading commands or by any other: a typo in the path is said as one.
	missing := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{
		{"inspect", "db.t"}, {"lookup", "db.t", "--where", "id = 1"}, {"scan", "db.t", "--where", "id = 1"},
		{"verify", "db.t"}, {"gc", "db.t"}, {"maintain"}, {"build", "db.t", "--columns", "id"},
	} {
		for _, uri := range []string{missing, "file:" + missing + "?_journal_mode=WAL"} {
			_, stderr, code := icebloom(t, append([]string{"--catalog", "sql", "--uri", uri}, args...)...)
			if want := "SQLite catalog " + missing + ": no such file"; code != 1 || !strings.Contains(failure(t, stderr), want) {
				t.Errorf("%v --uri %s: exit %d, %q; want 1 and %q", args, uri, code, stderr, want)
			}
			emptyDir(t, dir, strings.Join(args, " "))
		}
	}

	// quickstart writes a table: it creates the catalog, which the others
	// then open.
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "20"); code != 0 {
		t.Fatalf("quickstart: %s", stderr)
	}
	if _, stderr, code := icebloom(t, "inspect", "demo.events"); code != 0 {
		t.Fatalf("inspect after quickstart: %s", stderr)
	}
}

// TestNotFound: a missing namespace and a missing table are told apart,
// on the SQL and the REST catalog, and an unknown column in --where is
// named with the table's columns, without iceberg-go's words.
func TestNotFound(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "20"); code != 0 {
		t.Fatalf("quickstart: %s", stderr)
	}
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	srv.Catalog.NewTable(t, "events", catalogtest.IDSchema, nil)
	rest := []string{"--catalog", "rest", "--uri", srv.URL, "--credential", srv.Credential}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "dbx.events"}, `load table dbx.events: namespace "dbx" does not exist`},
		{[]string{"inspect", "demo.nope"}, "load table demo.nope: table demo.nope does not exist"},
		{[]string{"lookup", "dbx.events", "--where", "user_id = 1"}, `load table dbx.events: namespace "dbx" does not exist`},
		{[]string{"build", "dbx.events", "--columns", "user_id"}, `namespace "dbx" does not exist`},
		{[]string{"verify", "demo.nope"}, "table demo.nope does not exist"},
		{append(slices.Clone(rest), "inspect", "dbx.events"), `load table dbx.events: namespace "dbx" does not exist`},
		{append(slices.Clone(rest), "inspect", "db.nope"), "load table db.nope: table db.nope does not exist"},
		{[]string{"lookup", "demo.events", "--where", "user_id = 1 AND nosuch = 2"},
			`unknown column "nosuch" in the filter (table demo.events has columns user_id, email, order_id, amount)`},
		{[]string{"scan", "demo.events", "--where", "Nosuch IS NULL"},
			`unknown column "Nosuch" in the filter (table demo.events has columns user_id, email, order_id, amount)`},
	} {
		_, stderr, code := icebloom(t, c.args...)
		if got := failure(t, stderr); code != 1 || !strings.Contains(got, c.want) || strings.Contains(got, "[") {
			t.Errorf("%v: exit %d, %q; want 1 and %q", c.args, code, got, c.want)
		}
	}
	stdout, _, code := icebloom(t, "maintain", "dbx.events")
	if want := `dbx.events: FAILED: load table dbx.events: namespace "dbx" does not exist` + "\n"; code != 1 || stdout != want {
		t.Errorf("maintain dbx.events: exit %d, %q; want 1 and %q", code, stdout, want)
	}
}

// TestMaintainNoSnapshot: maintain on a table created and never written
// prints one line saying there is nothing to index, and succeeds.
func TestMaintainNoSnapshot(t *testing.T) {
	it := newIDTable(t, 0)
	stdout, stderr, code := icebloom(t, it.args("maintain", "db.ids")...)
	if want := "db.ids: skipped, no snapshot yet: nothing to index\n"; code != 0 || stdout != want {
		t.Errorf("maintain of a table without snapshot: exit %d, stdout %q (stderr %s); want 0 and %q", code, stdout, stderr, want)
	}
	stdout, _, code = icebloom(t, it.args("--output", "json", "maintain")...)
	var out MaintainOutput
	if err := json.Unmarshal([]byte(stdout), &out); code != 0 || err != nil || len(out.Tables) != 1 ||
		out.Tables[0].Skipped == "" || out.Tables[0].Sync != nil || out.Failed != 0 {
		t.Errorf("maintain --output json of a table without snapshot: exit %d, %s", code, stdout)
	}
}

// TestRepairAdvice: an index problem lookup or inspect meets names the
// command that repairs it, and that command does: sync for a missing
// index file, maintain for runs that fail their checksums (which sync
// never reads; maintain's repair reads every run).
func TestRepairAdvice(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	stdout, stderr, code := icebloom(t, "--output", "json", "quickstart", "--files", "4", "--rows", "50")
	if code != 0 {
		t.Fatalf("quickstart: %s", stderr)
	}
	var qs QuickstartOutput
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatal(err)
	}
	segments := func() []index.Segment {
		t.Helper()
		cat, err := catalog.Open(t.Context(), catalog.Embedded("warehouse"))
		if err != nil {
			t.Fatal(err)
		}
		defer cat.(interface{ Close() error }).Close()
		tbl, err := cat.LoadTable(t.Context(), table.Identifier{"demo", "events"})
		if err != nil {
			t.Fatal(err)
		}
		fs, err := catalog.TableIO(t.Context(), tbl)
		if err != nil {
			t.Fatal(err)
		}
		ix, errs := index.Load(t.Context(), fs, tbl.Metadata(), nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return ix.Segments()
	}
	lookupAdvice := func(want string) {
		t.Helper()
		var out LookupOutput
		stdout, stderr, code := icebloom(t, "--output", "json", "lookup", "demo.events", "--where", qs.Present.Where)
		if err := json.Unmarshal([]byte(stdout), &out); code != 0 || err != nil {
			t.Fatalf("lookup: exit %d, %v: %s", code, err, stderr)
		}
		if len(out.IndexErrors) == 0 || out.FilesTotal != 4 || len(out.Candidates) != 4 {
			t.Fatalf("lookup of a broken index: %+v; want every file kept and the problem reported", out)
		}
		for _, msg := range out.IndexErrors {
			if !strings.Contains(msg, want) {
				t.Errorf("lookup: index problem %q does not say %q", msg, want)
			}
		}
	}
	verified := func(after string) {
		t.Helper()
		if stdout, stderr, code := icebloom(t, "verify", "demo.events", "--sample", "4"); code != 0 {
			t.Fatalf("verify after %s: exit %d\n%s%s", after, code, stdout, stderr)
		}
	}

	// Every run of every group fails its checksum; the directory is sound.
	segs := segments()
	local := strings.TrimPrefix(segs[0].File.StatisticsPath, "file://")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range segs[0].Directory().Groups {
		for i := g.Offset; i < g.Offset+g.Bytes(); i++ {
			b[i] ^= 0xff
		}
	}
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lookupAdvice("`icebloom maintain demo.events` repairs it")
	if _, stderr, code := icebloom(t, "maintain", "demo.events"); code != 0 {
		t.Fatalf("maintain: %s", stderr)
	}
	verified("maintain")

	// The index file is gone.
	if err := os.Remove(strings.TrimPrefix(segments()[0].File.StatisticsPath, "file://")); err != nil {
		t.Fatal(err)
	}
	lookupAdvice("`icebloom sync demo.events` indexes its files again and removes it")
	_, stderr, code = icebloom(t, "inspect", "demo.events")
	if problems := find(logRecords(t, stderr), indexProblem); code != 0 || len(problems) != 1 ||
		!strings.Contains(problems[0]["error"].(string), "`icebloom sync demo.events`") {
		t.Errorf("inspect of a missing index file: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := icebloom(t, "sync", "demo.events"); code != 0 {
		t.Fatalf("sync: %s", stderr)
	}
	verified("sync")
}

// TestFlagValues: values no command can use are usage errors (exit 2)
// naming the flag and the value, refused before anything is opened.
func TestFlagValues(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "db.t", "--fpp", "0"}, "--fpp 0: want a false-positive rate between 0 and 1"},
		{[]string{"build", "db.t", "--fpp", "1"}, "--fpp 1: want"},
		{[]string{"sync", "db.t", "--fpp", "-0.5"}, "--fpp -0.5: want"},
		{[]string{"rebuild", "db.t", "--fpp", "NaN"}, "--fpp NaN: want"},
		{[]string{"build", "db.t", "--parallel", "0"}, "--parallel 0: want 1 or more data files"},
		{[]string{"sync", "db.t", "--parallel", "-2"}, "--parallel -2: want 1 or more"},
		{[]string{"build", "db.t", "--memory-budget-mib", "0"}, "--memory-budget-mib 0: want a positive number of MiB"},
		{[]string{"compact-index", "db.t", "--memory-budget-mib", "-1"}, "--memory-budget-mib -1: want a positive number of MiB"},
		{[]string{"rebuild", "db.t", "--memory-budget-mib", "9999999999"}, "--memory-budget-mib 9999999999: want at most"},
		{[]string{"sync", "db.t", "--compact-above", "0"}, "--compact-above 0: want 1 or more segments"},
		{[]string{"maintain", "--compact-above", "0"}, "--compact-above 0: want 1 or more segments"},
		{[]string{"maintain", "--every", "0s"}, "--every 0s: want a pause between rounds"},
		{[]string{"maintain", "--every", "0d"}, "--every 0d: want a pause between rounds"},
		{[]string{"maintain", "--every=-1m"}, `"-1m" is not an age: negative`},
		{[]string{"maintain", "--parallel", "0"}, "--parallel 0: want 1 or more"},
		{[]string{"maintain", "--retain-last", "0"}, "--retain-last 0: want 1 or more snapshots"},
		{[]string{"maintain", "--verify-sample", "-1"}, "--verify-sample -1: want 0 or more"},
		{[]string{"maintain", "--gc-older-than=-3d"}, `"-3d" is not an age: negative`},
		{[]string{"expire", "db.t", "--older-than", "1d", "--retain-last", "-1"}, "--retain-last -1: want 1 or more snapshots"},
		{[]string{"scan", "db.t", "--where", "id = 1", "--limit", "-1"}, "--limit -1: want 0 (every row) or more rows"},
		{[]string{"verify", "db.t", "--sample", "-3"}, "--sample -3: want 0 or more data files"},
		{[]string{"quickstart", "--files", "0"}, "--files 0: want 1 or more data files"},
		{[]string{"quickstart", "--rows", "-5"}, "--rows -5: want 1 or more rows"},
	} {
		_, stderr, code := icebloomTTY(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
		emptyDir(t, dir, strings.Join(c.args, " "))
	}
	// Several bad values are each named.
	_, stderr, _ := icebloomTTY(t, "build", "db.t", "--fpp", "0", "--parallel", "0")
	if !strings.Contains(stderr, "icebloom: --fpp 0") || !strings.Contains(stderr, "icebloom: --parallel 0") {
		t.Errorf("two bad values: %s", stderr)
	}
	// Good values pass the check (and fail for want of a catalog).
	for _, args := range [][]string{
		{"build", "db.t", "--fpp", "0.001", "--parallel", "1", "--memory-budget-mib", "1"},
		{"sync", "db.t", "--compact-above", "-1"},
		{"maintain", "--every", "1s", "--retain-last", "1", "--verify-sample", "0"},
		{"scan", "db.t", "--where", "id = 1", "--limit", "0"},
	} {
		if _, stderr, code := icebloom(t, args...); code != 1 || !strings.Contains(stderr, "no catalog") {
			t.Errorf("%v: exit %d, %s; want 1 for want of a catalog", args, code, stderr)
		}
	}
}

// TestMetricsFileCheckedFirst: a --metrics-file that cannot be written is
// refused before the command commits anything.
func TestMetricsFileCheckedFirst(t *testing.T) {
	it := newIDTable(t, 2)
	metadata := func() string {
		t.Helper()
		tbl, err := it.cat.LoadTable(context.Background(), table.Identifier{"db", "ids"})
		if err != nil {
			t.Fatal(err)
		}
		return tbl.MetadataLocation()
	}
	before := metadata()
	tmp := t.TempDir()
	for path, want := range map[string]string{
		filepath.Join(tmp, "missing", "m.prom"): "directory " + filepath.Join(tmp, "missing") + " does not exist",
		tmp:                                     "is a directory",
	} {
		stdout, stderr, code := icebloom(t, it.args("--metrics-file", path, "build", "db.ids")...)
		if code != 2 || stdout != "" || !strings.Contains(lastLine(stderr), "--metrics-file "+path+": "+want) {
			t.Errorf("build --metrics-file %s: exit %d, %q, %q; want 2 and %q", path, code, stdout, lastLine(stderr), want)
		}
	}
	if after := metadata(); after != before {
		t.Errorf("a refused --metrics-file committed %s", after)
	}
	// A writable one is taken, and written.
	path := filepath.Join(tmp, "m.prom")
	if _, stderr, code := icebloom(t, it.args("--metrics-file", path, "build", "db.ids")...); code != 0 {
		t.Fatalf("build with a writable --metrics-file: %s", stderr)
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}

// TestVersionHelpUsage: --version and version print the module version
// (text, and JSON with --output json); each subcommand's help starts with
// what it does; a missing argument names its flag; bare icebloom is a
// usage error with an error line.
func TestVersionHelpUsage(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"--version"}, {"version"}} {
		stdout, stderr, code := icebloom(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "icebloom ") || !strings.Contains(stdout, "go1.") || stderr != "" {
			t.Errorf("%v: exit %d, %q, %q", args, code, stdout, stderr)
		}
	}
	stdout, _, code := icebloom(t, "--output", "json", "version")
	var v VersionOutput
	if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil || v.Module != modulePath || v.Version == "" || v.GoVersion == "" {
		t.Errorf("version --output json: exit %d, %s", code, stdout)
	}

	_, commands := commandFlags()
	if len(commands) < 14 { // 15 before the bench became cmd/icebloom-bench
		t.Fatalf("%d subcommands found in Args", len(commands))
	}
	for _, cmd := range commands {
		stdout, _, code := icebloom(t, cmd.name, "--help")
		first, _, _ := strings.Cut(stdout, "\n")
		if want := "icebloom " + cmd.name + ": " + subcommandHelp(cmd.name) + "."; code != 0 || first != want {
			t.Errorf("%s --help: exit %d, first line %q, want %q", cmd.name, code, first, want)
		}
		if strings.Contains(stdout, Args{}.Description()) {
			t.Errorf("%s --help repeats icebloom's description", cmd.name)
		}
	}
	stdout, _, code = icebloom(t, "--help")
	if code != 0 || !strings.HasPrefix(stdout, Args{}.Description()) || !strings.Contains(stdout, "--version") {
		t.Errorf("--help: exit %d, %s", code, stdout)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "icebloom: a command is required (icebloom help COMMAND says what each does)"},
		{[]string{"build"}, "icebloom: TABLE is required"},
		{[]string{"expire", "db.t"}, "icebloom: --older-than is required"},
		{[]string{"lookup", "db.t"}, "icebloom: --where or --where-file is required"},
		{[]string{"completion"}, "icebloom: SHELL is required"},
		{[]string{"completion", "tcsh"}, `icebloom: completion "tcsh": want bash, zsh or fish`},
	} {
		stdout, stderr, code := icebloomTTY(t, c.args...)
		if code != 2 || stdout != "" || lastLine(stderr) != c.want || !strings.Contains(stderr, "Usage: icebloom") {
			t.Errorf("%v: exit %d, last line %q; want 2, usage and %q", c.args, code, lastLine(stderr), c.want)
		}
	}
}

// TestCompletion: the bash, zsh and fish scripts are valid shell, and the
// bash one completes subcommands, each subcommand's flags, the values of
// --output, --format, --log-level and --catalog, and table names (listed
// by icebloom itself, with the global flags typed so far: here the test
// binary run as icebloom). Before, flag values and tables got file names,
// and there was no fish script.
func TestCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	it := newIDTable(t, 1)
	binary, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script, stderr, code := icebloom(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: %s", stderr)
	}
	file := filepath.Join(t.TempDir(), "icebloom.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(words ...string) []string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		// icebloom is the test binary run as icebloom (TestRunAsIcebloom).
		prog := "icebloom() { ICEBLOOM_RUN_ARGS=\"$(printf '%s\\n' \"$@\")\" '" + binary + "' -test.run='^TestRunAsIcebloom$'; }\n" +
			"source " + file + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_icebloom\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("completing %v: %v\n%s", words, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{"icebloom", "sy"}, []string{"sync"}},
		{[]string{"icebloom", "--output", "json", "comp"}, []string{"compact-index", "completion"}},
		{[]string{"icebloom", "--met"}, []string{"--metrics-file"}},
		{[]string{"icebloom", "build", "db.t", "--f"}, []string{"--fpp", "--fail-fast"}},
		{[]string{"icebloom", "maintain", "--ev"}, []string{"--every"}},
		{[]string{"icebloom", "completion", "z"}, []string{"zsh"}},
		{[]string{"icebloom", "completion", "f"}, []string{"fish"}},
		{[]string{"icebloom", "--output", ""}, []string{"text", "json"}},
		{[]string{"icebloom", "--log-level", "w"}, []string{"warn"}},
		{[]string{"icebloom", "--catalog", "h"}, []string{"hive", "hadoop"}},
		{[]string{"icebloom", "scan", "db.t", "--format", "c"}, []string{"csv"}},
		{[]string{"icebloom", "scan", "db.t", "--where-file", ""}, nil}, // a file name: bash's default
		{append(append([]string{"icebloom"}, it.global...), "scan", ""), []string{"db.ids"}},
		{append(append([]string{"icebloom"}, it.global...), "inspect", "db.i"), []string{"db.ids"}},
		{append(append([]string{"icebloom"}, it.global...), "inspect", "--"), []string{"--snapshot", "--help"}},
	} {
		if got := complete(c.words...); !slices.Equal(got, c.want) {
			t.Errorf("completing %q: %q, want %q", c.words, got, c.want)
		}
	}

	script, _, _ = icebloom(t, "completion", "fish")
	for _, want := range []string{
		"complete -c icebloom -n \"true\" -l output -x -a \"text json\"",
		"complete -c icebloom -n \"__fish_seen_subcommand_from scan\" -l format -x -a \"text tsv csv jsonl\"",
		"complete -c icebloom -n \"__fish_seen_subcommand_from scan\" -a '(__icebloom_tables)'",
		"\ticebloom $global list --names 2>/dev/null\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("completion fish: no %q in\n%s", want, script)
		}
	}
	if fish, err := exec.LookPath("fish"); err == nil {
		ffile := filepath.Join(t.TempDir(), "icebloom.fish")
		os.WriteFile(ffile, []byte(script), 0o644)
		if out, err := exec.Command(fish, "-n", ffile).CombinedOutput(); err != nil {
			t.Fatalf("fish -n: %v\n%s", err, out)
		}
	} else {
		t.Log("no fish: its script is not run")
	}

	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Log("no zsh: its script is not checked")
		return
	}
	script, _, _ = icebloom(t, "completion", "zsh")
	zfile := filepath.Join(t.TempDir(), "_icebloom")
	os.WriteFile(zfile, []byte(script), 0o644)
	if out, err := exec.Command(zsh, "-n", zfile).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
}

// TestVersionOf: the version reports the module version and the VCS stamp
// of the build information go build records (here parsed by runtime/debug
// from the text go version -m prints).
func TestVersionOf(t *testing.T) {
	info, err := debug.ParseBuildInfo("go\tgo1.26.8\npath\tgithub.com/icebloom/icebloom/cmd/icebloom\n" +
		"mod\tgithub.com/icebloom/icebloom\tv0.1.1-0.20261203164244-678932b0c0de+dirty\t\n" +
		"build\t-buildmode=exe\nbuild\tCGO_ENABLED=0\nbuild\tvcs=git\n" +
		"build\tvcs.revision=678932b0c0de1a2b3c4d5e6f708192a3b4c5d6e7\n" +
		"build\tvcs.time=2026-12-03T16:42:44Z\nbuild\tvcs.modified=true\n")
	if err != nil {
		t.Fatal(err)
	}
	v := versionOf(info)
	want := VersionOutput{Module: modulePath, Version: "v0.1.1-0.20261203164244-678932b0c0de+dirty",
		Revision: "678932b0c0de1a2b3c4d5e6f708192a3b4c5d6e7", Time: "2026-12-03T16:42:44Z", Modified: true,
		GoVersion: "go1.26.8", Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v != want {
		t.Errorf("versionOf: %+v, want %+v", v, want)
	}
	if got, want := v.text(), "icebloom v0.1.1-0.20261203164244-678932b0c0de+dirty (revision 678932b0c0de1a2b3c4d5e6f708192a3b4c5d6e7, 2026-12-03T16:42:44Z, modified) go1.26.8 "+want.Platform; got != want {
		t.Errorf("text: %q, want %q", got, want)
	}
	if v := versionOf(nil); v.Version != "(unknown)" || v.Revision != "" {
		t.Errorf("versionOf(nil): %+v", v)
	}
}

// TestCompactIndexRepairAdvice: compact-index of an index with a segment
// whose runs fail their checksums leaves that group out and says which
// command indexes its data files again; after that command the index
// verifies.
func TestCompactIndexRepairAdvice(t *testing.T) {
	it := newIDTable(t, 2)
	if _, stderr, code := icebloom(t, it.args("build", "db.ids", "--columns", "id")...); code != 0 {
		t.Fatalf("build: %s", stderr)
	}
	catalogtest.AppendIDs(t, it.tbl, 1000, 1001)
	if _, stderr, code := icebloom(t, it.args("sync", "db.ids")...); code != 0 {
		t.Fatalf("sync: %s", stderr)
	}
	tbl, err := it.cat.LoadTable(t.Context(), table.Identifier{"db", "ids"})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := catalog.TableIO(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(t.Context(), fs, tbl.Metadata(), nil)
	if len(errs) > 0 || len(ix.Segments()) != 2 {
		t.Fatalf("index of %d segments (%v), want 2", len(ix.Segments()), errs)
	}
	seg := ix.Segments()[0]
	local := strings.TrimPrefix(seg.File.StatisticsPath, "file://")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range seg.Directory().Groups {
		for i := g.Offset; i < g.Offset+g.Bytes(); i++ {
			b[i] ^= 0xff
		}
	}
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := icebloom(t, it.args("compact-index", "db.ids")...)
	if want := "broken groups left out: `icebloom sync db.ids` indexes their data files again"; code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("compact-index of a corrupt segment: exit %d, %s%s; want %q", code, stdout, stderr, want)
	}
	if _, stderr, code := icebloom(t, it.args("sync", "db.ids")...); code != 0 {
		t.Fatalf("sync: %s", stderr)
	}
	if stdout, stderr, code := icebloom(t, it.args("verify", "db.ids", "--sample", "3")...); code != 0 {
		t.Fatalf("verify after compact-index and sync: exit %d\n%s%s", code, stdout, stderr)
	}
}
