package puffin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
)

// Writer writes a Puffin file to an io.Writer. It streams: each blob is
// written as it is added, and only blob metadata is kept until Finish writes
// the footer. It never seeks, so it can write to an object store upload.
// A Writer is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	offset int64 // bytes written so far, which is where the next blob goes
	blobs  []BlobMetadata
	props  map[string]string
	err    error // set once the writer cannot go on: a failed write, or Finish
}

// BlobInput describes a blob for AddBlob; the Writer adds where it is
// stored.
type BlobInput struct {
	Type           BlobType
	Fields         []int32 // table field IDs; nil is written as [], never null
	SnapshotID     int64
	SequenceNumber int64
	Properties     map[string]string
	// Codec is the compression to store the blob with: "" for none or
	// CodecZstd.
	Codec string
}

// Stats describes a finished file with what an Iceberg statistics entry
// records about it.
type Stats struct {
	FileSize   int64 // file-size-in-bytes
	FooterSize int64 // file-footer-size-in-bytes
	Blobs      []BlobMetadata
}

var errFinished = errors.New("puffin: writer already finished")

// NewWriter starts a Puffin file on w by writing the header magic.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := &Writer{w: w}
	if err := pw.write(magic[:]); err != nil {
		return nil, err
	}
	return pw, nil
}

// SetProperty sets a file property, such as CreatedBy, for the footer.
// The Writer sets none of its own, so a file gets exactly the properties it
// is given, and none gives a footer without a "properties" key, as Java's
// writer does. Properties set after Finish are not written.
func (w *Writer) SetProperty(key, value string) {
	if w.props == nil {
		w.props = make(map[string]string)
	}
	w.props[key] = value
}

// SetProperties sets each of props as SetProperty does.
func (w *Writer) SetProperties(props map[string]string) {
	for k, v := range props {
		w.SetProperty(k, v)
	}
}

// AddBlob compresses data with in.Codec, writes it and returns its metadata
// as the footer will record it.
func (w *Writer) AddBlob(in BlobInput, data []byte) (BlobMetadata, error) {
	if in.Type == "" {
		return BlobMetadata{}, errors.New("puffin: add blob: blob has no type")
	}
	stored, err := compress(in.Codec, data)
	if err != nil {
		return BlobMetadata{}, fmt.Errorf("puffin: add blob (%s): %w", in.Type, err)
	}
	b := BlobMetadata{
		Type:           in.Type,
		Fields:         slices.Clone(in.Fields),
		SnapshotID:     in.SnapshotID,
		SequenceNumber: in.SequenceNumber,
		Properties:     maps.Clone(in.Properties),
	}
	if in.Codec != "" {
		codec := in.Codec
		b.CompressionCodec = &codec
	}
	return w.add(b, int64(len(stored)), func(dst io.Writer) (int64, error) {
		n, err := dst.Write(stored) // one Write: no copy buffer
		return int64(n), err
	})
}

// CopyBlob copies blob i of src as it is stored, compressed or not, with all
// its metadata but the offset, so that a blob can move to a new file without
// being decoded or held in memory.
func (w *Writer) CopyBlob(src *Reader, i int) (BlobMetadata, error) {
	b, r, err := src.section(i)
	if err != nil {
		return BlobMetadata{}, err
	}
	return w.add(b, b.Length, func(dst io.Writer) (int64, error) { return io.CopyN(dst, r, b.Length) })
}

// AddBlobStream writes an uncompressed blob of exactly n bytes that write
// produces, streaming: a blob larger than memory (a merged index group)
// goes straight to the file. Writing other than n bytes fails the Writer.
func (w *Writer) AddBlobStream(in BlobInput, n int64, write func(io.Writer) error) (BlobMetadata, error) {
	if in.Type == "" {
		return BlobMetadata{}, errors.New("puffin: add blob: blob has no type")
	}
	if in.Codec != "" {
		return BlobMetadata{}, fmt.Errorf("puffin: add blob (%s): a streamed blob cannot be compressed", in.Type)
	}
	b := BlobMetadata{
		Type:           in.Type,
		Fields:         slices.Clone(in.Fields),
		SnapshotID:     in.SnapshotID,
		SequenceNumber: in.SequenceNumber,
		Properties:     maps.Clone(in.Properties),
	}
	return w.add(b, n, func(dst io.Writer) (int64, error) {
		cw := &countingWriter{w: dst}
		err := write(cw)
		if err == nil && cw.n != n {
			err = fmt.Errorf("wrote %d bytes, announced %d", cw.n, n)
		}
		return cw.n, err
	})
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Offset returns where the next blob will start: the bytes written so far.
func (w *Writer) Offset() int64 { return w.offset }

// add writes a blob of n stored bytes with writeTo and records b, at the
// blob's offset, for the footer.
func (w *Writer) add(b BlobMetadata, n int64, writeTo func(io.Writer) (int64, error)) (BlobMetadata, error) {
	if w.err != nil {
		return BlobMetadata{}, w.err
	}
	if b.Fields == nil {
		b.Fields = []int32{}
	}
	b.Offset, b.Length = w.offset, n
	written, err := writeTo(w.w)
	w.offset += written
	if err == nil && written < n {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("puffin: add blob %d (%s): %w", len(w.blobs), b.Type, err)
		return BlobMetadata{}, w.err
	}
	w.blobs = append(w.blobs, b)
	return cloneBlob(b), nil
}

// Finish writes the footer and returns what the file's statistics entry
// needs. The footer JSON is compact, with keys in the order of Java's
// writer, so that the same input gives the same bytes; it is written
// uncompressed, as Java's writer does, which every reader can read. The
// Writer cannot be used after Finish; closing the io.Writer is the caller's.
func (w *Writer) Finish() (Stats, error) {
	if w.err != nil {
		return Stats{}, w.err
	}
	blobs := w.blobs
	if blobs == nil {
		blobs = []BlobMetadata{}
	}
	var payload bytes.Buffer
	enc := json.NewEncoder(&payload)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Footer{Blobs: blobs, Properties: w.props}); err != nil {
		return Stats{}, fmt.Errorf("puffin: encode footer: %w", err)
	}
	payload.Truncate(payload.Len() - 1) // Encode's newline
	if payload.Len() > math.MaxInt32 {
		return Stats{}, fmt.Errorf("puffin: footer payload of %d bytes does not fit its int32 size field", payload.Len())
	}
	footer := make([]byte, 0, payload.Len()+footerOverhead)
	footer = append(footer, magic[:]...)
	footer = append(footer, payload.Bytes()...)
	footer = binary.LittleEndian.AppendUint32(footer, uint32(payload.Len()))
	footer = append(footer, 0, 0, 0, 0) // flags
	footer = append(footer, magic[:]...)
	if err := w.write(footer); err != nil {
		return Stats{}, err
	}
	w.err = errFinished
	return Stats{FileSize: w.offset, FooterSize: int64(len(footer)), Blobs: cloneBlobs(blobs)}, nil
}

// write writes p whole, counting it, and stops the writer if it fails.
func (w *Writer) write(p []byte) error {
	n, err := w.w.Write(p)
	w.offset += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("puffin: write: %w", err)
	}
	return w.err
}
