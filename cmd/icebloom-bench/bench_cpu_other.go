//go:build icebloom_bench && !unix

package main

import "time"

// processCPU is not measured on this system: 0.
func processCPU() time.Duration { return 0 }
