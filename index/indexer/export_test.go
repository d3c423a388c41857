package indexer

// WithExactColumns returns o with knobs.ExactColumns set, for the tests of
// package indexer_test (the bench sets it through benchknobs.go).
func WithExactColumns(o Options) Options {
	o.knobs.ExactColumns = true
	return o
}
