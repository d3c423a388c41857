package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/icebloom/icebloom/maintenance"
)

// TestMaintainCommand: one round over every table prints a JSON report per
// table; a failing table makes the exit code non-zero; --every keeps
// running rounds until the context (SIGTERM) ends it, then exits cleanly.
func TestMaintainCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "3", "--rows", "50"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := icebloom(t, "--output", "json", "maintain")
	if code != 0 {
		t.Fatalf("maintain exited %d: %s", code, stderr)
	}
	var out MaintainOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Round != 1 || out.Failed != 0 || len(out.Tables) != 1 || out.Tables[0].Table != "demo.events" ||
		out.Tables[0].Sync == nil || out.Tables[0].Sync.FilesCovered != 3 || out.Tables[0].GC == nil {
		t.Fatalf("maintain %+v", out)
	}

	stdout, _, code = icebloom(t, "--output", "json", "maintain", "demo.events", "demo.missing")
	if code != 1 || !strings.Contains(stdout, `"error"`) {
		t.Fatalf("a missing table: exit %d, %s", code, stdout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var buf, errBuf bytes.Buffer
	if code := run(ctx, []string{"--output", "json", "maintain", "--every", "50ms"}, &buf, &errBuf); code != 0 {
		t.Fatalf("maintain --every exited %d: %s", code, errBuf.String())
	}
	dec := json.NewDecoder(&buf)
	rounds := 0
	for dec.More() {
		var r MaintainOutput
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rounds++
		if r.Round != rounds {
			t.Fatalf("round %d printed as %d", rounds, r.Round)
		}
	}
	if rounds < 2 {
		t.Fatalf("--every ran %d rounds before the context ended", rounds)
	}
}

// TestIndexCommands runs compact-index, rebuild and expire on the demo
// table, checking their JSON output.
func TestIndexCommands(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "3", "--rows", "50"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := icebloom(t, "--output", "json", "rebuild", "demo.events")
	var rebuilt map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &rebuilt) != nil || rebuilt["segments"] != 1.0 || rebuilt["files_indexed"] != 3.0 {
		t.Fatalf("rebuild: %d %s %s", code, stdout, stderr)
	}
	stdout, _, code = icebloom(t, "--output", "json", "compact-index", "demo.events")
	var compacted map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &compacted) != nil || compacted["segments_after"] != 1.0 {
		t.Fatalf("compact-index: %d %s", code, stdout)
	}
	stdout, _, code = icebloom(t, "--output", "json", "expire", "demo.events", "--older-than", "1ns", "--retain-last", "1")
	var expired map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &expired) != nil {
		t.Fatalf("expire: %d %s", code, stdout)
	}
	if n := len(expired["snapshots_expired"].([]any)); n != 2 {
		t.Fatalf("expired %d snapshots, want 2 of the 3 quickstart appends", n)
	}
	stdout, _, _ = icebloom(t, "--output", "json", "inspect", "demo.events")
	var in InspectOutput
	json.Unmarshal([]byte(stdout), &in)
	for _, col := range in.Columns {
		if col.Uncovered != 0 {
			t.Fatalf("after expiry %+v", col)
		}
	}
}

// TestExpireOlderThanZero: --older-than 0s (expire) and --expire-older-than
// 0s (maintain) mean now, as gc's --older-than 0s does: every snapshot but
// the retained last one expires, instead of none under iceberg-go's 5-day
// default.
func TestExpireOlderThanZero(t *testing.T) {
	quickstart := func() {
		t.Helper()
		t.Chdir(t.TempDir())
		if _, stderr, code := icebloom(t, "quickstart", "--files", "3", "--rows", "50"); code != 0 {
			t.Fatal(stderr)
		}
	}

	quickstart()
	stdout, stderr, code := icebloom(t, "--output", "json", "expire", "demo.events", "--older-than", "0s", "--retain-last", "1")
	var expired maintenance.ExpireSummary
	if code != 0 || json.Unmarshal([]byte(stdout), &expired) != nil {
		t.Fatalf("expire: %d %s %s", code, stdout, stderr)
	}
	if n := len(expired.SnapshotsExpired); n != 2 {
		t.Fatalf("expire --older-than 0s expired %d snapshots, want 2 of the 3 quickstart appends", n)
	}

	quickstart()
	stdout, stderr, code = icebloom(t, "--output", "json", "maintain", "--expire-older-than", "0s")
	var out MaintainOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("maintain: %d %s %s", code, stdout, stderr)
	}
	if len(out.Tables) != 1 || out.Tables[0].Expire == nil || len(out.Tables[0].Expire.SnapshotsExpired) != 2 {
		t.Fatalf("maintain --expire-older-than 0s: %+v, want 2 snapshots expired", out)
	}
}

// TestRunLeaseFlag: --run-lease reaches expire, maintain and sync, and a lease
// a working shard could outlive between two touches is refused, naming
// the flag.
func TestRunLeaseFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "20"); code != 0 {
		t.Fatal(stderr)
	}
	for _, args := range [][]string{
		{"expire", "demo.events", "--older-than", "0s", "--run-lease", "1m"},
		{"maintain", "--run-lease", "1m"},
		{"sync", "demo.events", "--run-lease", "1m"},
	} {
		if _, stderr, code := icebloom(t, args...); code == 0 || !strings.Contains(stderr, "--run-lease: run lease 1m0s: want at least 5m0s") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	for _, args := range [][]string{
		{"expire", "demo.events", "--older-than", "0s", "--run-lease", "30m"},
		{"maintain", "--run-lease", "30m"},
		{"sync", "demo.events", "--run-lease", "30m"},
	} {
		if _, stderr, code := icebloom(t, args...); code != 0 {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}
