package main

import (
	"os"
	"strings"
	"testing"
)

// TestRequestsInFlightFlag: build, sync, rebuild and maintain refuse fewer
// than one request in flight with an error naming the flag, before opening
// any catalog (no catalog file is left behind), and a valid value reaches
// the indexer's options.
func TestRequestsInFlightFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, cmd := range [][]string{{"build", "db.t"}, {"sync", "db.t"}, {"rebuild", "db.t"}, {"maintain", "db.t"}} {
		for _, v := range []string{"0", "-3"} {
			args := append(cmd, "--requests-in-flight", v)
			_, stderr, code := icebloom(t, args...)
			if code == 0 || !strings.Contains(stderr, "--requests-in-flight "+v) || !strings.Contains(stderr, "at least 1") {
				t.Errorf("icebloom %s: exit %d, stderr %q; want an error naming --requests-in-flight %s", strings.Join(args, " "), code, stderr, v)
			}
		}
	}
	if _, err := os.Stat("warehouse"); !os.IsNotExist(err) {
		t.Errorf("a refused flag left ./warehouse behind (%v)", err)
	}
	n := 5
	if got := (indexFlags{requestsFlag: requestsFlag{&n}}).options().RequestsInFlight; got != 5 {
		t.Errorf("--requests-in-flight 5 gives Options.RequestsInFlight %d", got)
	}
	if got := (indexFlags{}).options().RequestsInFlight; got != 0 {
		t.Errorf("no --requests-in-flight gives Options.RequestsInFlight %d, want 0 (the default)", got)
	}
}
