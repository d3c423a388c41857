//go:build !race

package serve_test

// raceEnabled says that the tests run under the race detector, which checks
// the server's concurrency as well with a quarter of the random filters.
const raceEnabled = false
