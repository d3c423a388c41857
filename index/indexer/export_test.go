package indexer

import "time"

// SetClock replaces the indexer's clock for a test, and returns what
// restores it.
func SetClock(now func() time.Time) (restore func()) {
	clock = now
	return func() { clock = time.Now }
}

// WithExactColumns returns o with knobs.ExactColumns set, for the tests of
// package indexer_test (the bench sets it through benchknobs.go).
func WithExactColumns(o Options) Options {
	o.knobs.ExactColumns = true
	return o
}
