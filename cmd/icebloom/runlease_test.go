package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/runfiles"
)

// TestSyncRunLease: sync's --run-lease decides when a sharded run stops
// being live. One shard of two finished 7 minutes ago: under the default
// lease (10m) a sync leaves the run's files to it; with --run-lease 5m the
// run has stalled, and the sync covers every file, linking the finished
// shard's segment (when its files hashed to it) and indexing the rest
// (before, sync had no such flag).
func TestSyncRunLease(t *testing.T) {
	const nFiles = 4
	it := newIDTable(t, nFiles)
	if _, stderr, code := icebloom(t, it.args("build", "db.ids", "--shard", "0/2", "--run-id", "lease")...); code != 0 {
		t.Fatalf("shard 0/2: exit %d: %s", code, stderr)
	}
	// Leases are the run files' modification times.
	ago := time.Now().Add(-7 * time.Minute)
	touched := 0
	err := filepath.WalkDir(it.cat.Warehouse, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.Contains(filepath.ToSlash(path), "/"+runfiles.Dir+"/") {
			return err
		}
		touched++
		return os.Chtimes(path, ago, ago)
	})
	if err != nil || touched == 0 {
		t.Fatalf("aging the run's files: %v (%d aged)", err, touched)
	}
	sync := func(more ...string) indexer.Summary {
		t.Helper()
		stdout, stderr, code := icebloom(t, it.args(append([]string{"--output", "json", "sync", "db.ids"}, more...)...)...)
		var sum indexer.Summary
		if code != 0 {
			t.Fatalf("sync %v: exit %d: %s", more, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("sync %v: %v: %s", more, err, stdout)
		}
		return sum
	}
	if sum := sync(); sum.FilesLeftToRuns != nFiles || sum.FilesIndexed != 0 {
		t.Fatalf("sync under the default lease: %d files left to the run, %d indexed; want %d and 0", sum.FilesLeftToRuns, sum.FilesIndexed, nFiles)
	}
	if sum := sync("--run-lease", "30m"); sum.FilesLeftToRuns != nFiles || sum.FilesIndexed != 0 {
		t.Fatalf("sync --run-lease 30m: %d files left to the run, %d indexed; want %d and 0", sum.FilesLeftToRuns, sum.FilesIndexed, nFiles)
	}
	sum := sync("--run-lease", "5m")
	if sum.FilesLeftToRuns != 0 || sum.FilesFromRuns+sum.FilesIndexed != nFiles {
		t.Fatalf("sync --run-lease 5m: %d left to the run, %d from its finished shard, %d indexed; want 0 and all %d covered",
			sum.FilesLeftToRuns, sum.FilesFromRuns, sum.FilesIndexed, nFiles)
	}
}
