// Package puffin reads and writes Puffin files, the container Apache Iceberg
// uses for statistics and indexes (https://iceberg.apache.org/puffin-spec/).
//
// A Puffin file is
//
//	Magic Blob* Magic FooterPayload FooterPayloadSize Flags Magic
//
// where Magic is "PFA1", each blob is an opaque byte sequence, the footer
// payload is UTF-8 JSON (optionally one LZ4 frame) describing the blobs and
// the file, FooterPayloadSize is a little-endian int32 and Flags are four
// bytes of which only bit 0 of the first (compressed footer) is defined.
//
// The metadata types are iceberg-go's own (as aliases), so footers read or
// written here can be handed to iceberg-go and back without conversion. The
// Reader and Writer are this package's: unlike iceberg-go's, the Reader
// decompresses blobs, reads parts of a blob, works from an io.ReaderAt of
// known size and can be told the footer size to open a file with a single
// read, and the Writer compresses blobs and copies them between files.
//
// This package knows nothing about what the blobs contain.
package puffin

import "github.com/apache/iceberg-go/puffin"

// BlobMetadata describes one blob in a footer: its type, the table fields
// and snapshot it was computed from, where it is stored and how.
type BlobMetadata = puffin.BlobMetadata

// Footer is a file's decoded footer payload: its blobs and file properties.
type Footer = puffin.Footer

// BlobType names what a blob contains, such as
// "apache-datasketches-theta-v1".
type BlobType = puffin.BlobType

// Blob types defined by the Iceberg specification.
const (
	BlobTypeDataSketchesTheta = puffin.BlobTypeDataSketchesTheta
	BlobTypeDeletionVector    = puffin.BlobTypeDeletionVector
)

// Compression codecs a blob's "compression-codec" may name. A blob without
// one is stored uncompressed. Each codec stores one frame that declares the
// content size, as the specification requires.
const (
	CodecZstd = "zstd"
	CodecLZ4  = "lz4"
)

const (
	// MagicSize is the length of the "PFA1" magic that starts a file, starts
	// its footer and ends it.
	MagicSize = puffin.MagicSize

	// FooterFlagCompressed is bit 0 of the first flags byte: the footer
	// payload is one LZ4 frame.
	FooterFlagCompressed = puffin.FooterFlagCompressed

	// DefaultMaxFooterSize bounds a footer payload, stored and decompressed,
	// unless WithMaxFooterSize says otherwise.
	DefaultMaxFooterSize = puffin.DefaultMaxFooterSize

	// DefaultMaxBlobSize bounds a blob read whole, stored and decompressed,
	// unless WithMaxBlobSize says otherwise.
	DefaultMaxBlobSize = puffin.DefaultMaxBlobSize

	// CreatedBy is the file property naming the application that wrote the
	// file and its version, such as "Trino version 381".
	CreatedBy = puffin.CreatedBy
)

// magic is the four bytes that start a file, start its footer and end it.
var magic = [MagicSize]byte{'P', 'F', 'A', '1'}

// trailerSize is the fixed end of a file after the footer payload: payload
// size, flags and magic.
const trailerSize = 12

// footerOverhead is what a footer adds to its payload: the start magic and
// the trailer. A footer's size, as table metadata records it, is the payload
// size plus this.
const footerOverhead = MagicSize + trailerSize
