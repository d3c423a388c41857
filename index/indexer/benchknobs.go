//go:build icebloom_bench

package indexer

import (
	"github.com/apache/arrow-go/v18/parquet"
)

// This file is built only with -tags icebloom_bench, for the bench
// (cmd/icebloom-bench): it exports the build's switches that change no
// result and the reading the bench measures its floor with, which are no
// public API of the package (as restic builds its debug command with a tag).

// Knobs are the switches of a build only the bench sets: reading ahead
// off or forced, exactly the named columns, no dictionary shortcut.
type Knobs = knobs

// WithKnobs returns o with the knobs k.
func (o Options) WithKnobs(k Knobs) Options {
	o.knobs = k
	return o
}

// DefaultRequestsInFlight and DefaultMaxFilterBytes are the defaults of
// Options.RequestsInFlight and Options.MaxFilterBytes, which the bench
// reports and sizes against.
const (
	DefaultRequestsInFlight = defaultRequestsInFlight
	DefaultMaxFilterBytes   = defaultMaxFilterBytes
)

// ChunkReader is a Parquet data file as a build worker reads it, for the
// bench's floor to read the same way.
type ChunkReader = chunkReader

// NewChunkReader reads f for Parquet readers with props, through buf (see
// newChunkReader).
func NewChunkReader(f parquet.ReaderAtSeeker, props *parquet.ReaderProperties, buf *[]byte) *ChunkReader {
	return newChunkReader(f, props, buf)
}

// ReaderProperties returns Parquet reader properties as a build worker
// reads with (see readerProperties).
func ReaderProperties() *parquet.ReaderProperties { return readerProperties() }
