//go:build icebloom_bench && unix

package main

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used,
// what the benchmarks report beside wall times: on a machine shared with
// other work, wall times follow the load, CPU times much less.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
