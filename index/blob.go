// Package index is a table's index as readers see it: one Split Block Bloom
// Filter per data file and column (a StoredFilter), located by Load in the
// table's index
// segments — format v2 groups (package segment) or format v1 blobs, one
// per filter, of type split-block-bloom-filter-v1 (docs/format.md is the
// specification, v1 its Appendix A). Subpackages hold the parts: sbbf the
// filter itself, hashing the canonical hashing of Iceberg values, segment
// the v2 layout.
package index

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// BlobType is the Puffin blob type of a format v1 index entry. It differs from the
// bloom-filter-v1 of Iceberg's proof of concept, whose classic Murmur3 bloom
// filters are incompatible with these.
const BlobType puffin.BlobType = "split-block-bloom-filter-v1"

// Blob property keys. Values are strings, as the Puffin spec requires.
const (
	// PropReferencedDataFile is the data file's location exactly as the
	// manifests list it (as deletion vectors name theirs).
	PropReferencedDataFile = "referenced-data-file"
	// PropDataFileSize is the data file's size in bytes; with the location it
	// decides whether the entry applies to a file.
	PropDataFileSize = "data-file-size-in-bytes"
	// PropNDV is the number of distinct values inserted.
	PropNDV = "ndv"
	// PropFPP is the false-positive rate the filter was sized for.
	PropFPP = "fpp"
	// PropValueType is the Iceberg type the values were hashed as.
	PropValueType = "value-type"
	// PropHash names the hash function; the only one is HashXXH64.
	PropHash = "hash"
)

// HashXXH64 is the value of PropHash: XXH64, seed 0, over the PLAIN encoding
// of the canonical value, as Parquet's bloom filters hash.
const HashXXH64 = "xxhash64"

// Entry describes one index entry, everything but its bitset: what a reader
// learns from the Puffin footer alone, enough to decide which entry applies
// to a data file and where its bitset lies.
type Entry struct {
	DataFile       string
	DataFileSize   int64
	FieldID        int
	ValueType      iceberg.PrimitiveType
	NDV            int64
	FPP            float64
	SnapshotID     int64 // snapshot the entry was built from
	SequenceNumber int64
	// Offset and Length locate the bitset in the Puffin file (set when
	// decoded from a footer).
	Offset, Length int64
}

// Covers reports whether the entry applies to a data file: the index is
// advisory, and an entry whose location or size differs from the file's
// says nothing about it.
func (e Entry) Covers(location string, size int64) bool {
	return e.DataFile == location && e.DataFileSize == size
}

// NumBlocks returns the number of 32-byte blocks of the entry's bitset.
func (e Entry) NumBlocks() int { return int(e.Length / sbbf.BlockBytes) }

// BlobInput returns the Puffin blob that stores the entry with bitset f.
// Bitsets are written uncompressed: a well-sized filter does not compress,
// and only an uncompressed one can be read one 32-byte block at a time.
func (e Entry) BlobInput() puffin.BlobInput {
	return puffin.BlobInput{
		Type:           BlobType,
		Fields:         []int32{int32(e.FieldID)},
		SnapshotID:     e.SnapshotID,
		SequenceNumber: e.SequenceNumber,
		Properties: map[string]string{
			PropReferencedDataFile: e.DataFile,
			PropDataFileSize:       strconv.FormatInt(e.DataFileSize, 10),
			PropNDV:                strconv.FormatInt(e.NDV, 10),
			PropFPP:                strconv.FormatFloat(e.FPP, 'g', -1, 64),
			PropValueType:          hashing.FormatValueType(e.ValueType),
			PropHash:               HashXXH64,
		},
	}
}

// IsEntry reports whether a Puffin blob is an index entry (as opposed to a
// blob of another tool that shares the statistics file).
func IsEntry(meta puffin.BlobMetadata) bool { return meta.Type == BlobType }

// DecodeEntry reads an index entry from its Puffin blob metadata, checking
// everything a reader relies on. An entry that fails here must be ignored
// (its data file treated as unindexed), never guessed at.
func DecodeEntry(meta puffin.BlobMetadata) (Entry, error) {
	fail := func(format string, args ...any) (Entry, error) {
		return Entry{}, fmt.Errorf("index: blob at offset %d (%s): %s", meta.Offset,
			meta.Properties[PropReferencedDataFile], fmt.Sprintf(format, args...))
	}
	if meta.Type != BlobType {
		return fail("type %q is not %q", meta.Type, BlobType)
	}
	if len(meta.Fields) != 1 {
		return fail("fields %v: want exactly one field id", meta.Fields)
	}
	if meta.CompressionCodec != nil && *meta.CompressionCodec != "" {
		return fail("compressed with %s: bitsets must be stored uncompressed", *meta.CompressionCodec)
	}
	if meta.Length <= 0 || meta.Length%sbbf.BlockBytes != 0 {
		return fail("length %d is not a positive multiple of %d", meta.Length, sbbf.BlockBytes)
	}
	p := meta.Properties
	if h := p[PropHash]; h != HashXXH64 {
		return fail("hash %q is not %q", h, HashXXH64)
	}
	e := Entry{
		DataFile:       p[PropReferencedDataFile],
		FieldID:        int(meta.Fields[0]),
		SnapshotID:     meta.SnapshotID,
		SequenceNumber: meta.SequenceNumber,
		Offset:         meta.Offset,
		Length:         meta.Length,
	}
	if e.DataFile == "" {
		return fail("no %s", PropReferencedDataFile)
	}
	var err error
	if e.DataFileSize, err = strconv.ParseInt(p[PropDataFileSize], 10, 64); err != nil || e.DataFileSize < 0 {
		return fail("bad %s %q", PropDataFileSize, p[PropDataFileSize])
	}
	if e.NDV, err = strconv.ParseInt(p[PropNDV], 10, 64); err != nil || e.NDV < 0 {
		return fail("bad %s %q", PropNDV, p[PropNDV])
	}
	if e.FPP, err = strconv.ParseFloat(p[PropFPP], 64); err != nil || !(e.FPP > 0 && e.FPP < 1) {
		return fail("bad %s %q", PropFPP, p[PropFPP])
	}
	if e.ValueType, err = hashing.ParseValueType(p[PropValueType]); err != nil {
		return fail("bad %s: %v", PropValueType, err)
	}
	return e, nil
}
