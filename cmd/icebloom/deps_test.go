package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestShippedBinaryLeavesOutTestParts: the icebloom binary links neither
// the test catalog nor the in-process S3 server (they serve the tests and
// cmd/icebloom-bench), nor the bench itself. It lists the command's
// dependencies with the go command, so it is skipped where there is none.
func TestShippedBinaryLeavesOutTestParts(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderrOf(err))
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/icebloom/icebloom/index/indexer") {
		t.Fatalf("go list -deps lists no indexer: %q", deps)
	}
	for _, p := range []string{
		"github.com/icebloom/icebloom/catalog/catalogtest",
		"github.com/johannesboyne/gofakes3",
		"github.com/icebloom/icebloom/cmd/icebloom-bench",
	} {
		for _, d := range deps {
			if d == p || strings.HasPrefix(d, p+"/") {
				t.Errorf("cmd/icebloom links %s", d)
			}
		}
	}
}
