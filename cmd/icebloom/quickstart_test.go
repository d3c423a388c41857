package main

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/icebloom/icebloom/cmd/icebloom/internal/quickstart"
)

// randomEvents is the demo's rows, which BenchmarkScanCells renders.
var randomEvents = quickstart.RandomEvents

// TestQuickstartExplainsTheNumbers: for each lookup the quickstart says how
// many files after the index hold the value — counted by reading them —
// and how many are false positives against the expectation from the
// filters' FPP over the indexed files that lack the value.
func TestQuickstartExplainsTheNumbers(t *testing.T) {
	t.Chdir(t.TempDir())
	stdout, stderr, code := icebloom(t, "--output", "json", "quickstart", "--files", "12", "--rows", "300")
	if code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	var qs QuickstartOutput
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatal(err)
	}
	// The present id was drawn from one file's rows, out of 10^12 ids; the
	// absent one from ids no file holds.
	for _, c := range []struct {
		name    string
		l       quickstart.Lookup
		holding int
	}{{"present", qs.Present, 1}, {"absent", qs.Absent, 0}} {
		l := c.l
		if l.Holding != c.holding || l.FalsePositives != l.Candidates-c.holding || l.Unindexed != 0 || l.FPP != 0.01 ||
			math.Abs(l.ExpectedFalsePositives-0.01*float64(12-c.holding)) > 1e-9 {
			t.Errorf("%s lookup %+v: want %d holding, the other candidates false positives, %v expected at fpp 0.01",
				c.name, l, c.holding, 0.01*float64(12-c.holding))
		}
	}
	for _, f := range []string{`"files_holding"`, `"false_positives"`, `"false_positives_expected"`, `"fpp"`} {
		if !strings.Contains(stdout, f) {
			t.Errorf("quickstart JSON lacks %s", f)
		}
	}

	stdout, stderr, code = icebloom(t, "quickstart", "--files", "12", "--rows", "300")
	if code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	for _, want := range []string{
		"of those, 1 holds the value and ", " (expected ≈ 0.11 at fpp 0.01 over the 11 indexed files without it)",
		" (expected ≈ 0.12 at fpp 0.01 over the 12 indexed files without it)",
		"writing 12 data files of 300 rows", "scan: 1 row in ", "scan: 0 rows in ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("quickstart's output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestQuickLookupExplain: the sentences for every case, in the singular and
// the plural, and the reason files remain for a value no file holds.
func TestQuickLookupExplain(t *testing.T) {
	for _, c := range []struct {
		l    quickstart.Lookup
		want []string
	}{
		{quickstart.Lookup{FilesAfterStats: 200, Candidates: 3, Holding: 1, FalsePositives: 2, FPP: 0.01, ExpectedFalsePositives: 1.99},
			[]string{"of those, 1 holds the value and 2 are false positives (expected ≈ 1.99 at fpp 0.01 over the 199 indexed files without it)"}},
		{quickstart.Lookup{FilesAfterStats: 64, Candidates: 1, Holding: 1, FPP: 0.01, ExpectedFalsePositives: 0.63},
			[]string{"of those, 1 holds the value and none is a false positive (expected ≈ 0.63 at fpp 0.01 over the 63 indexed files without it)"}},
		{quickstart.Lookup{FilesAfterStats: 64, Candidates: 3, FalsePositives: 3, FPP: 0.01, ExpectedFalsePositives: 0.64},
			[]string{"of those, none holds the value and 3 are false positives (expected ≈ 0.64 at fpp 0.01 over the 64 indexed files without it)",
				`files remain for a value no file holds because a bloom filter answers "maybe" for a value it lacks with probability fpp`}},
		{quickstart.Lookup{FilesAfterStats: 2, Candidates: 1, FalsePositives: 1, FPP: 0.05, ExpectedFalsePositives: 0.1},
			[]string{"of those, none holds the value and 1 is a false positive (expected ≈ 0.10 at fpp 0.05 over the 2 indexed files without it)",
				`files remain for a value no file holds because a bloom filter answers "maybe" for a value it lacks with probability fpp`}},
		{quickstart.Lookup{FilesAfterStats: 1, Candidates: 0, FPP: 0.01, ExpectedFalsePositives: 0.01},
			[]string{"no file holds the value, and no false positive remains (expected ≈ 0.01 at fpp 0.01 over the 1 indexed file without it)"}},
		{quickstart.Lookup{FilesAfterStats: 10, Candidates: 3, Holding: 2, Unindexed: 1, FPP: 0.01, ExpectedFalsePositives: 0.07},
			[]string{"of those, 2 hold the value and none is a false positive (expected ≈ 0.07 at fpp 0.01 over the 7 indexed files without it)",
				"1 other file no filter covers, which the index keeps"}},
	} {
		if got := explain(c.l); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%+v:\n%s\nwant\n%s", c.l, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// TestTryItYourselfRunsAsPrinted: the quickstart's "try it yourself"
// command, split as a shell splits it, runs from the same directory and
// finds the present id's file — with the embedded default (no catalog
// flags), with another --dir (a path with a space and a quote, which the
// command must quote), and with a config file whose default catalog is
// another (which a command without flags would open).
func TestTryItYourselfRunsAsPrinted(t *testing.T) {
	for _, c := range []struct {
		name, dir string
		config    bool
		flags     bool
	}{{"default", "", false, false}, {"dir", "demo dir's", false, true}, {"config", "", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			if c.config {
				os.WriteFile(filepath.Join(home, ".iceberg-go.yaml"), []byte(
					"default-catalog: lake\ncatalog:\n  lake:\n    type: rest\n    uri: http://127.0.0.1:9/\n"), 0o644)
			}
			t.Chdir(t.TempDir())
			args := []string{"quickstart", "--files", "3", "--rows", "20"}
			if c.dir != "" {
				args = append(args, "--dir", c.dir)
			}
			stdout, stderr, code := icebloom(t, args...)
			if code != 0 {
				t.Fatalf("quickstart exited %d: %s", code, stderr)
			}
			_, try, ok := strings.Cut(stdout, "try it yourself:\n  ")
			if !ok {
				t.Fatalf("no command to try in %s", stdout)
			}
			try, serveStep, _ := strings.Cut(try, "\n")
			if strings.Contains(try, "--catalog sql") != c.flags {
				t.Errorf("catalog flags in %q: want %v", try, c.flags)
			}
			words := shellWords(t, strings.TrimSuffix(try, "\n"))
			prog := shellWords(t, quickstart.ProgramName())
			if len(words) < len(prog) || strings.Join(words[:len(prog)], " ") != strings.Join(prog, " ") {
				t.Fatalf("command %q does not start with this program %q", try, prog)
			}
			out, errOut, code := icebloom(t, words[len(prog):]...)
			if code != 0 || !strings.HasSuffix(out, ".parquet\n") || strings.Count(out, "\n") != 1 {
				t.Fatalf("%q: exit %d, stdout %q, stderr %s", try, code, out, errOut)
			}
			checkServeStep(t, serveStep, prog)
		})
	}
}

// shellWords splits a command line as a POSIX shell does for the quoting
// tryCommand writes: words apart by spaces, 'single' and "double" quotes,
// backslash escapes outside single quotes.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unclosed ' in %s", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				t.Fatalf(`unclosed " in %s`, line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			i++
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestTryItYourselfAfterGoRun runs the README's step for real — go run
// from the module's root — and then the command it prints, through a
// shell, from the same directory: it must find the present id's file.
// (With --dir, so that nothing is written into the module; without it the
// command differs only by the catalog flags, which
// TestTryItYourselfRunsAsPrinted covers.) It builds the binary, so -short
// skips it.
func TestTryItYourselfAfterGoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command with go run")
	}
	if raceEnabled {
		// go run builds the command without the race detector, and this
		// test runs it: the plain run checks it (15 s of CI's race step).
		t.Skip("runs a command go run built, which the race detector does not watch")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "demo")
	run := exec.Command(goBin, "run", "./cmd/icebloom", "quickstart", "--files", "2", "--rows", "20", "--dir", dir)
	run.Dir = root
	out, err := run.Output()
	if err != nil {
		t.Fatalf("go run ./cmd/icebloom quickstart: %v\n%s", err, stderrOf(err))
	}
	_, try, ok := strings.Cut(string(out), "try it yourself:\n  ")
	try, _, _ = strings.Cut(try, "\n")
	if !ok || !strings.HasPrefix(try, "go run ./cmd/icebloom ") {
		t.Fatalf("the command to try after go run is %q, want go run ./cmd/icebloom …", try)
	}
	sh := exec.Command("/bin/sh", "-c", strings.TrimSpace(try))
	sh.Dir = root
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	found, err := sh.Output()
	if err != nil || !strings.HasSuffix(string(found), ".parquet\n") {
		t.Fatalf("%s: %v, stdout %q\n%s", try, err, found, stderrOf(err))
	}
}

// checkServeStep runs the quickstart's server step as printed (step holds
// its explanation, the serve command and the client's plan request): the
// server, on another port, answers the plan with the file that holds the
// value, and logs the plan's data files after statistics and the index.
func checkServeStep(t *testing.T, step string, prog []string) {
	t.Helper()
	_, cmds, ok := strings.Cut(step, "after the index:\n  ")
	lines := strings.Split(strings.TrimSpace(cmds), "\n  ")
	if !ok || len(lines) != 2 {
		t.Fatalf("no serve step in %q", step)
	}
	serveWords := shellWords(t, lines[0])
	if len(serveWords) <= len(prog) || serveWords[len(serveWords)-1] != "serve" {
		t.Fatalf("the serve command %q", lines[0])
	}
	base, _, log := runServe(t, append(serveWords[len(prog):], "--listen", "127.0.0.1:0"))
	addr := strings.TrimPrefix(base, "http://")
	curl := shellWords(t, lines[1]) // curl -s -H header -d body url
	if len(curl) != 7 || curl[0] != "curl" || curl[4] != "-d" {
		t.Fatalf("the plan request %q", lines[1])
	}
	url := strings.Replace(curl[6], quickstart.ServeAddress, addr, 1)
	resp, err := http.Post(url, "application/json", strings.NewReader(curl[5]))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(body), `"file-path"`) < 1 {
		t.Fatalf("%s: %d %s", lines[1], resp.StatusCode, body)
	}
	m := regexp.MustCompile(`"files_in_snapshot":(\d+),"files_after_statistics":\d+,"files_after_index":(\d+)`).FindStringSubmatch(log.String())
	if m == nil || m[2] == "0" || len(m[2]) > len(m[1]) || len(m[2]) == len(m[1]) && m[2] > m[1] {
		t.Fatalf("serve logged no plan with its files (at least the one holding the value): %s", log)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
