package main

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestMemoryBudgetReachesCompactions: --memory-budget-mib reaches the
// compactions that sync, rebuild, maintain and expire start, as the debug
// record each compaction starts with says (sync, rebuild and maintain
// handed them 0, the 256 MiB default; expire and maintain had no flag).
func TestMemoryBudgetReachesCompactions(t *testing.T) {
	it := newIDTable(t, 2)
	appendFile := func() {
		t.Helper()
		tbl, err := it.cat.LoadTable(context.Background(), table.Identifier{"db", "ids"})
		if err != nil {
			t.Fatal(err)
		}
		n := int64(len(it.dataFiles(t)) * 10)
		catalogtest.AppendIDs(t, tbl, n, n+1)
	}
	const budget = 3 << 20
	check := func(what string, args ...string) {
		t.Helper()
		_, stderr, code := icebloom(t, it.args(append([]string{"--log-level", "debug"}, args...)...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", what, code, stderr)
		}
		started := find(logRecords(t, stderr), "index compaction started")
		if len(started) == 0 {
			t.Fatalf("%s: no compaction started: %s", what, stderr)
		}
		for _, r := range started {
			if r["memory_budget_bytes"] != float64(budget) {
				t.Errorf("%s: compaction started with %v bytes of budget, want %d", what, r["memory_budget_bytes"], budget)
			}
		}
	}
	if _, stderr, code := icebloom(t, it.args("build", "db.ids")...); code != 0 {
		t.Fatal(stderr)
	}
	appendFile()
	if _, stderr, code := icebloom(t, it.args("sync", "db.ids", "--compact-above", "-1")...); code != 0 {
		t.Fatal(stderr)
	}
	check("sync", "sync", "db.ids", "--compact-above", "1", "--memory-budget-mib", "3")
	check("rebuild", "rebuild", "db.ids", "--memory-budget-mib", "3")
	appendFile()
	if _, stderr, code := icebloom(t, it.args("sync", "db.ids", "--compact-above", "-1")...); code != 0 {
		t.Fatal(stderr)
	}
	check("expire", "expire", "db.ids", "--older-than", "0s", "--memory-budget-mib", "3")
	appendFile()
	if _, stderr, code := icebloom(t, it.args("sync", "db.ids", "--compact-above", "-1")...); code != 0 {
		t.Fatal(stderr)
	}
	appendFile()
	check("maintain", "maintain", "db.ids", "--compact-above", "1", "--expire-older-than", "0s", "--memory-budget-mib", "3")
}
