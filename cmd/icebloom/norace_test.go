//go:build !race

package main

// raceEnabled says that the tests run under the race detector, whose
// instrumented allocations make heap measurements meaningless.
const raceEnabled = false
