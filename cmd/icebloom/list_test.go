package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestListCommand: list names every table of the catalog, or of one
// namespace, with its index: segments, columns with the live files they
// cover, last sync; a table without an index says how to build one.
func TestListCommand(t *testing.T) {
	it := newIDTable(t, 3)
	it.cat.NewTable(t, "bare", catalogtest.IDSchema, nil)
	if _, stderr, code := icebloom(t, it.args("build", "db.ids")...); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := icebloom(t, it.args("--output", "json", "list")...)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	var out ListOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tables) != 2 || out.Tables[0].Table != "db.bare" || out.Tables[1].Table != "db.ids" {
		t.Fatalf("list: %s", stdout)
	}
	bare, ids := out.Tables[0], out.Tables[1]
	if bare.Segments != 0 || len(bare.Columns) != 0 || bare.LastSync != nil || bare.Error != "" {
		t.Errorf("db.bare: %+v", bare)
	}
	if ids.LiveFiles != 3 || ids.Segments != 1 || len(ids.Columns) != 1 || ids.Columns[0] != (ColumnCoverage{"id", 3}) || ids.LastSync == nil {
		t.Errorf("db.ids: %+v", ids)
	}
	stdout, _, code = icebloom(t, it.args("list", "db")...)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "db.bare\t0 data files, no index (icebloom build db.bare") ||
		!strings.HasPrefix(lines[1], "db.ids\t3 data files, 1 segment: id 3/3; synced ") {
		t.Errorf("list db: exit %d\n%s", code, stdout)
	}
	if _, stderr, code := icebloom(t, it.args("list", "nope")...); code != 1 || !strings.Contains(stderr, "nope") {
		t.Errorf("list nope: exit %d, %s", code, stderr)
	}
}
