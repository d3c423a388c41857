//go:build !race

package planning

// raceEnabled says that the tests run under the race detector, whose
// instrumented allocations make heap measurements meaningless (a base of
// 4,000 files holds 1,160 bytes a file under -race, 974 without).
const raceEnabled = false
