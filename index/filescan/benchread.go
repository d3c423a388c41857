//go:build icebloom_bench

package filescan

import "github.com/apache/arrow-go/v18/parquet"

// This file is built only with -tags icebloom_bench, for the bench
// (cmd/icebloom-bench): its floor reads data files exactly as a build's
// workers do, with the reader and properties below, which are no public API
// of the package (a program reads data files through Scanner or ReadFiles).
// TestBenchReadNotExported checks that the build without the tag exports
// none of them.

// ChunkReader is a Parquet data file as a build worker reads it (see
// chunkReader).
type ChunkReader = chunkReader

// NewChunkReader reads f for Parquet readers with props, through buf (see
// newChunkReader).
func NewChunkReader(f parquet.ReaderAtSeeker, props *parquet.ReaderProperties, buf *[]byte) *ChunkReader {
	return newChunkReader(f, props, buf)
}

// ReaderProperties returns Parquet reader properties as a build worker
// reads with (see readerProperties).
func ReaderProperties() *parquet.ReaderProperties { return readerProperties() }
