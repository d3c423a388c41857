// Package filescan reads the Parquet data files of an Iceberg table and
// builds, for each file, the Split Block Bloom Filter of each indexed
// column (docs/format.md §2, §4): it opens the file by its path, finds the
// columns by field id (or through the table's name mapping), hashes every
// non-null value — from the dictionary page alone when that is known to hold
// every value of a chunk — and counts the distinct values that size the
// filter. ReadFiles does this for many files with bounded parallelism and
// bounded storage requests, reading footers and column chunks ahead on
// object storage; Scanner does it for one file at a time. LiveFiles lists
// the live data files of a snapshot from its manifests.
//
// Columns fail one by one: a column that cannot be decoded gets an error
// and no filter while the file's other columns are still read, and a panic
// of a decoder becomes an error, never the end of the run.
//
// The package reads data files only. It does not decide which columns or
// files to index, write segments, commit anything to a catalog or read an
// existing index: that is index/indexer's job.
package filescan

import "github.com/apache/iceberg-go"

// Column is a column to read and hash: the field whose values are hashed,
// the type they are hashed as (its type in the table's current schema) and
// the target false-positive rate of its filters.
type Column struct {
	Field iceberg.NestedField
	Name  string // full dotted name in the schema
	Type  iceberg.PrimitiveType
	FPP   float64
}

// File is a data file to read: where it is, how large, and what of it to
// read.
type File struct {
	Path string
	Size int64
	// Identity maps the source field of each identity partition field to
	// the file's partition value: writers may leave such a column out of
	// the file, and readers then fill it in from the partition.
	Identity map[int]any
	// Columns are the columns to read (indexes into the caller's columns),
	// in order; nil reads them all. A sync reads only the columns the index
	// lacks for the file, never the chunks of those it covers.
	Columns []int
}
