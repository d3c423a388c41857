package indexer

import "time"

// SetClock replaces the indexer's clock for a test, and returns what
// restores it.
func SetClock(now func() time.Time) (restore func()) {
	clock = now
	return func() { clock = time.Now }
}
