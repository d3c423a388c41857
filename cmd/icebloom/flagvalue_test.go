package main

import (
	"strings"
	"testing"
)

// TestFlagValueNamesTheFlag: a flag value its type cannot hold is refused
// with the flag, the value and what the flag wants, and no Go package
// (before: "error processing --fpp: strconv.ParseFloat: parsing "abc":
// invalid syntax").
func TestFlagValueNamesTheFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "a.b", "--fpp", "abc"}, `icebloom: --fpp "abc": not a number`},
		{[]string{"build", "a.b", "--fpp", "1e999"}, `icebloom: --fpp "1e999": out of range, want a number that fits in 64 bits`},
		{[]string{"scan", "a.b", "--snapshot", "abc"}, `icebloom: --snapshot "abc": not a whole number`},
		{[]string{"lookup", "a.b", "--where", "x = 1", "--snapshot", "99999999999999999999"}, `icebloom: --snapshot "99999999999999999999": out of range, want a whole number that fits in 64 bits`},
		{[]string{"scan", "a.b", "--limit", "1e9"}, `icebloom: --limit "1e9": not a whole number`},
		{[]string{"maintain", "--every", "xyz"}, `icebloom: --every: "xyz" is not an age`},
	} {
		_, stderr, code := icebloomTTY(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "strconv") || strings.Contains(stderr, "error processing") {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
