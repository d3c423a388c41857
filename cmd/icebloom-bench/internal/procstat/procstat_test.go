package procstat

import (
	"os"
	"testing"
	"time"
)

// TestCPUOf: the CPU time of this test's process, read from /proc, grows
// with work it does, and is -1 for a process that does not exist.
func TestCPUOf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	before := CPUOf(os.Getpid())
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
	}
	if after := CPUOf(os.Getpid()); before < 0 || after-before < 100*time.Millisecond {
		t.Errorf("CPU %s before 300 ms of spinning, %s after", before, after)
	}
	if got := CPUOf(1 << 30); got != -1 {
		t.Errorf("a process that does not exist: %s, want -1", got)
	}
}
