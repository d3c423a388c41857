//go:build icebloom_bench

package indexer

// This file is built only with -tags icebloom_bench, for the bench
// (cmd/icebloom-bench): it exports the switches of a run that change no
// result and that only comparisons and measurements set, which are no
// public API of the package (as restic builds its debug command only with
// a tag). TestBenchKnobsNotExported checks that the build without the tag
// exports none of them.

// Knobs are the switches of a run only the bench sets: reading ahead off
// or forced on local storage, exactly the named columns, no dictionary
// shortcut (see knobs).
type Knobs = knobs

// WithKnobs returns o with the knobs k.
func (o Options) WithKnobs(k Knobs) Options {
	o.knobs = k
	return o
}
