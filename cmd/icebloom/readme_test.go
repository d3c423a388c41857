package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommands returns the command lines of the sh blocks of README's
// section "## Using it", comments and blank lines left out.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n## Using it\n")
	if start < 0 {
		t.Fatal("README has no section Using it")
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var lines []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for _, line := range strings.Split(block[1], "\n") {
			if line = strings.TrimSpace(uncomment(line)); line != "" {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// uncomment drops a shell comment: from a # that starts a word outside
// quotes.
func uncomment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return line[:i]
		}
	}
	return line
}

// TestReadmeUsingItRunsAsPrinted runs every command of README's "Using it"
// section, in order, on the quickstart's table: each exits 0 (go install
// is the one line that is not icebloom's).
func TestReadmeUsingItRunsAsPrinted(t *testing.T) {
	lines := readmeCommands(t) // before leaving the package's directory
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "6", "--rows", "200"); code != 0 {
		t.Fatalf("quickstart: %s", stderr)
	}
	if len(lines) < 20 {
		t.Fatalf("%d command lines in Using it: %q", len(lines), lines)
	}
	for _, line := range lines {
		if line == "go install ./cmd/icebloom" {
			continue
		}
		words := shellWords(t, line)
		if words[0] != "icebloom" {
			t.Errorf("%q is not an icebloom command", line)
			continue
		}
		stdout, stderr, code := icebloom(t, words[1:]...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", line, code, stdout, stderr)
		}
	}
}
