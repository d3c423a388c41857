//go:build icebloom_bench

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// icebloomBench runs the command in-process, as the binary would.
func icebloomBench(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestBenchFlagValues: values the bench cannot use are usage errors (exit
// 2) naming the flag and the value, refused before anything is written.
// (These were cases of cmd/icebloom's TestFlagValues while the bench was
// `icebloom bench`.)
func TestBenchFlagValues(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("TMPDIR", dir) // where the bench's directory would be made
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--repeat", "0"}, "--repeat 0: want 1 or more runs"},
		{[]string{"--probes", "0"}, "--probes 0: want 1 or more probes"},
		{[]string{"--fpp", "1.5"}, "--fpp 1.5: want"},
		{[]string{"--prune-files", "-1"}, "--prune-files -1: want 0 or more data files"},
		{[]string{"--scale", "1000", "--s3-files", "-1"}, "--s3-files -1: want 0 or more data files"},
		{[]string{"--scale", "ten"}, `--scale "ten": want`},
		{[]string{"--serve", "0"}, `--serve "0": want`},
		{[]string{"--serve", "50", "--serve-clients", "0"}, "--serve-clients 0: want 1 or more clients"},
		{[]string{"--serve", "50", "--memory-budget-mib", "-1"}, "--memory-budget-mib -1: want 0 or more MiBs"},
		{[]string{"--serve", "50", "--serve-kind", "worst"}, `--serve-kind "worst": want best-case or random`},
		{[]string{"--serve", "50", "--serve-kind", "random", "--serve-cold-rounds", "0"}, "--serve-cold-rounds 0: want 1 or more rounds"},
		{[]string{"--serve", "50", "--serve-kind", "random", "--serve-append-every", "0s"}, "--serve-append-every 0s: want a positive duration"},
		{[]string{"--serve-abuse", "--serve-abuse-clients", "8"}, "--serve-abuse-clients 8: want 24 or more clients"}, // 16 ordinary and one of each of 8 hostile kinds
		{[]string{"--serve-abuse", "--serve-abuse-clients", "8", "--serve-abuse-ordinary", "1"}, "--serve-abuse-clients 8: want 9 or more clients"},
		{[]string{"--serve-abuse", "--serve-abuse-duration", "0s"}, "--serve-abuse-duration 0s: want a positive duration"},
		{[]string{"--output", "yaml"}, `--output "yaml": want text or json`},
	} {
		_, stderr, code := icebloomBench(t, c.args...)
		if code != 2 || !strings.Contains(stderr, "icebloom-bench: "+c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%v left %s behind", c.args, entries[0].Name())
		}
	}
}

// TestMain makes the test binary the hostile clients' process of a bench
// --serve-abuse when the bench starts it so (hostileWorkerEnv), as main
// does, so that the bench's tests run it in a process of its own too.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(hostileWorkerEnv); cfg != "" {
		if err := hostileWorker(cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "icebloom-bench:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
