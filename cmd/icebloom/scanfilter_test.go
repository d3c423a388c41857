package main

import (
	"encoding/json"
	"testing"
)

// TestScanBindsAsLookup: scan finds a column whatever the case of its name,
// as lookup does (scan said "ID: no such column" where lookup planned).
func TestScanBindsAsLookup(t *testing.T) {
	it := newIDTable(t, 2)
	for _, cmd := range []string{"lookup", "scan"} {
		stdout, stderr, code := icebloom(t, it.args("--output", "json", cmd, "db.ids", "--where", "ID = 11")...)
		if code != 0 {
			t.Fatalf("%s ID = 11: exit %d: %s", cmd, code, stderr)
		}
		if cmd == "scan" {
			var out ScanOutput
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out.Rows) != 1 || out.Rows[0]["id"] != 11.0 {
				t.Errorf("scan ID = 11: %s (%v), want the row of id 11", stdout, err)
			}
		}
	}
}
