package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWhereSyntaxCaret: a --where that does not parse is a bad command
// line, exit 2, that shows the filter with a caret under the spot the
// error names (it was exit 1 with the position in words only).
func TestWhereSyntaxCaret(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, c := range []struct {
		where string
		want  string
	}{
		{"name = 'a' AND x", "icebloom: --where: position 17: expected a comparison, IN, BETWEEN or IS after x, found the end of the filter\n" +
			"  name = 'a' AND x\n" +
			"                  ^\n"},
		{"n IN (1, 2", "icebloom: --where: position 11: expected , or ), found the end of the filter\n" +
			"  n IN (1, 2\n" +
			"            ^\n"},
		{"s = 'abc", "icebloom: --where: position 5: unterminated '\n" +
			"  s = 'abc\n" +
			"      ^\n"},
		{"d = 1 OR é = DATE 'x'", "icebloom: --where: position 19: DATE 'x': not a date (YYYY-MM-DD)\n" +
			"  d = 1 OR é = DATE 'x'\n" +
			"                    ^\n"},
	} {
		for _, cmd := range []string{"scan", "lookup"} {
			var out, errOut bytes.Buffer
			code := runFrom(context.Background(), []string{cmd, "db.t", "--where", c.where}, strings.NewReader(""), &out, &errOut, true, 80, time.Now)
			if code != 2 || errOut.String() != c.want {
				t.Errorf("%s --where %q: exit %d, stderr\n%s\nwant 2 and\n%s", cmd, c.where, code, errOut.String(), c.want)
			}
		}
	}
}
