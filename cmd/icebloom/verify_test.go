package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/verify"
)

// TestVerifyCommand: verify passes on the quickstart's index (text and
// JSON), and after a bit flips in the index file it exits 1, naming the
// file, with the problem in its JSON; maintain --no-repair --verify-sample
// fails the table the same way, and maintain --verify-sample repairs the
// index first, after which it verifies.
func TestVerifyCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "3", "--rows", "50"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := icebloom(t, "verify", "demo.events", "--sample", "2")
	if code != 0 || !strings.Contains(stdout, "no problem found") || !strings.Contains(stdout, "2 data files re-read") {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, code = icebloom(t, "--output", "json", "verify", "demo.events", "--sample", "3", "--seed", "9")
	var rep verify.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || !rep.OK() || rep.Seed != 9 || len(rep.Sampled) != 3 {
		t.Fatalf("verify --output json: exit %d, %s", code, stdout)
	}

	// Flip one bit in the middle of the first group's runs.
	path := strings.TrimPrefix(rep.Segments[0].Path, "file://")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[8] ^= 0x01
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = icebloom(t, "--output", "json", "verify", "demo.events")
	rep = verify.Report{}
	if code != 1 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.OK() ||
		!strings.Contains(rep.Problems[0], rep.Segments[0].Path) || !strings.Contains(rep.Problems[0], "checksum mismatch") ||
		!strings.Contains(stderr, "icebloom maintain demo.events") || !strings.Contains(stderr, "icebloom rebuild demo.events") {
		t.Fatalf("verify of a corrupt index: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, code = icebloom(t, "--output", "json", "maintain", "--no-repair", "--verify-sample", "1")
	if code != 1 || !strings.Contains(stdout, "checksum mismatch") {
		t.Fatalf("maintain --no-repair --verify-sample of a corrupt index: exit %d, %s", code, stdout)
	}
	// Without --no-repair, maintain repairs the index before verifying it.
	stdout, _, code = icebloom(t, "--output", "json", "maintain", "--verify-sample", "1")
	var out MaintainOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Tables) != 1 || out.Tables[0].Repair == nil ||
		len(out.Tables[0].Repair.Damaged) != 1 || out.Tables[0].Verify == nil || !out.Tables[0].Verify.OK() {
		t.Fatalf("maintain --verify-sample of a corrupt index: exit %d, %s", code, stdout)
	}
	if stdout, stderr, code := icebloom(t, "verify", "demo.events"); code != 0 {
		t.Fatalf("verify after maintain: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := icebloom(t, "verify", "demo.events", "--sample", "-1"); code != 2 || !strings.Contains(stderr, "--sample -1") {
		t.Fatalf("verify --sample -1: exit %d, %s", code, stderr)
	}
}

// TestRepairMetric: a sync that replaces a missing index file reports it in
// its JSON and counts it in icebloom_index_repairs_total.
func TestRepairMetric(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "50"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, _, _ := icebloom(t, "--output", "json", "verify", "demo.events")
	var rep verify.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Segments) == 0 {
		t.Fatalf("verify: %s", stdout)
	}
	for _, s := range rep.Segments {
		if s.SnapshotID == rep.SnapshotID {
			os.Remove(strings.TrimPrefix(s.Path, "file://"))
		}
	}
	metrics := "sync.prom"
	stdout, stderr, code := icebloom(t, "--output", "json", "--metrics-file", metrics, "sync", "demo.events")
	var sum indexer.Summary
	if code != 0 || json.Unmarshal([]byte(stdout), &sum) != nil || len(sum.BrokenFiles) != 1 {
		t.Fatalf("sync: exit %d, %s %s", code, stdout, stderr)
	}
	if m := readMetrics(t, metrics); m["icebloom_index_repairs_total"]["sync demo.events"] != 1 {
		t.Fatalf("metrics %v", m["icebloom_index_repairs_total"])
	}
}
