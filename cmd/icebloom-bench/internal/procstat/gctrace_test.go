package procstat

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestGCTrace: the collections of a gctrace are read from a log that has
// other lines between them, and those of a real process (this test's
// binary, rerun with GODEBUG=gctrace=1) are found in order of time.
func TestGCTrace(t *testing.T) {
	log := `{"level":"WARN","msg":"x"}
gc 1 @0.012s 1%: 0.010+0.50+0.003 ms clock, 0.020+0.1/0.4/0.2+0.006 ms cpu, 3->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 2 @12.500s 3%: 0.1+2+0.01 ms clock, 0.2+0.3/1.5/0+0.02 ms cpu, 40->45->21 MB, 44 MB goal, 1 MB stacks, 1 MB globals, 2 P (forced)
not gc 3`
	gcs, err := GCTrace(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []GC{{At: 12 * time.Millisecond, Start: 3, End: 4, Live: 1, Goal: 4}, {At: 12500 * time.Millisecond, Start: 40, End: 45, Live: 21, Goal: 44}}
	if len(gcs) != len(want) || gcs[0] != want[0] || gcs[1] != want[1] {
		t.Fatalf("read %+v, want %+v", gcs, want)
	}
	if os.Getenv("PROCSTAT_GCTRACE_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGCTrace$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1", "PROCSTAT_GCTRACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test rerun with gctrace: %v\n%s", err, out)
	}
	real, err := GCTrace(strings.NewReader(string(out)))
	if err != nil || len(real) == 0 {
		t.Fatalf("a real process's gctrace: %d collections read (%v) of:\n%s", len(real), err, out)
	}
	for i := 1; i < len(real); i++ {
		if real[i].At < real[i-1].At || real[i].Goal <= 0 {
			t.Errorf("collection %d: %+v after %+v", i, real[i], real[i-1])
		}
	}
}
