package main

import (
	"strings"
	"testing"
)

// TestNoIndexSaysSo: inspect, compact-index and verify on a table without
// an index say that it has none and how to build one; verify, a check,
// fails.
func TestNoIndexSaysSo(t *testing.T) {
	it := newIDTable(t, 2)
	for _, c := range []struct {
		cmd  string
		code int
	}{{"inspect", 0}, {"compact-index", 0}, {"verify", 1}} {
		stdout, stderr, code := icebloom(t, it.args(c.cmd, "db.ids")...)
		said := stdout
		if c.code != 0 {
			said = failure(t, stderr)
		}
		if code != c.code || !strings.Contains(said, "db.ids has no icebloom index") || !strings.Contains(said, "icebloom build db.ids") {
			t.Errorf("%s without an index: exit %d, %q %s; want %d and how to build one", c.cmd, code, stdout, stderr, c.code)
		}
	}
}
