package puffin

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// defaultTailSize is how much of a file's end Open reads when it is not told
// the footer size. It holds the footer of a file with dozens of blobs, so one
// request usually finds the whole footer.
const defaultTailSize = 16 << 10

// Reader gives access to the footer and blobs of a Puffin file. It keeps the
// parsed footer and no blob data, and reads blobs on request through the
// io.ReaderAt it was opened with; it is safe for concurrent use when that
// io.ReaderAt is.
type Reader struct {
	r           io.ReaderAt
	size        int64
	footer      Footer
	footerSize  int64
	maxBlobSize int64
}

// ReadOption configures Open.
type ReadOption func(*readOptions)

type readOptions struct {
	footerSize    int64 // 0 when unknown
	maxFooterSize int64
	maxBlobSize   int64
}

// WithFooterSize tells Open the file's footer size in bytes (start magic,
// payload and trailer), as table metadata records it in
// file-footer-size-in-bytes, so that Open reads the footer with exactly one
// ReadAt of n bytes. A size that does not match the file fails Open rather
// than falling back to searching, as it does in Iceberg's Java reader. Zero
// means unknown, so an absent value can be passed as it is.
func WithFooterSize(n int64) ReadOption {
	return func(o *readOptions) { o.footerSize = n }
}

// WithMaxFooterSize bounds the footer payload, both as stored and after
// decompression, to protect against hostile files. It defaults to
// DefaultMaxFooterSize.
func WithMaxFooterSize(n int64) ReadOption {
	return func(o *readOptions) { o.maxFooterSize = n }
}

// WithMaxBlobSize bounds what one blob read returns or allocates, both as
// stored and after decompression, to protect against hostile files. It
// defaults to DefaultMaxBlobSize.
func WithMaxBlobSize(n int64) ReadOption {
	return func(o *readOptions) { o.maxBlobSize = n }
}

// Open reads and validates the footer of the size-byte Puffin file r.
//
// Object stores charge a request per read, so Open reads as little as it
// can: with WithFooterSize, exactly one ReadAt of the footer; otherwise one
// ReadAt of the last 16 KiB (or the whole file, if smaller) and a second one
// only for the rest of a footer larger than that. The header magic is checked
// when those reads cover it, that is for files of up to 16 KiB without a
// footer size; larger files are identified by the footer's two magics alone,
// as Iceberg's Java reader always does, rather than spending a request on
// the header.
//
// Open checks that every blob lies between the header and the footer, so
// that no later read can reach outside them; it does not read the blobs.
func Open(r io.ReaderAt, size int64, opts ...ReadOption) (*Reader, error) {
	o := readOptions{maxFooterSize: DefaultMaxFooterSize, maxBlobSize: DefaultMaxBlobSize}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxFooterSize <= 0 || o.maxBlobSize <= 0 {
		return nil, fmt.Errorf("puffin: size limits must be positive (footer %d, blob %d)", o.maxFooterSize, o.maxBlobSize)
	}
	if size < MagicSize+footerOverhead {
		return nil, fmt.Errorf("puffin: file of %d bytes is too small to be a Puffin file (minimum %d)", size, MagicSize+footerOverhead)
	}
	footer, err := readFooter(r, size, o)
	if err != nil {
		return nil, err
	}
	flags := footer[len(footer)-8 : len(footer)-4]
	payload := footer[MagicSize : len(footer)-trailerSize]
	if flags[0]&FooterFlagCompressed != 0 {
		if payload, err = lz4Codec.decompress(payload, o.maxFooterSize); err != nil {
			return nil, fmt.Errorf("puffin: compressed footer: %w", err)
		}
	}
	pr := &Reader{r: r, size: size, footerSize: int64(len(footer)), maxBlobSize: o.maxBlobSize}
	if err := json.Unmarshal(payload, &pr.footer); err != nil {
		return nil, fmt.Errorf("puffin: decode footer JSON: %w", err)
	}
	if pr.footer.Blobs == nil {
		return nil, errors.New(`puffin: footer JSON has no "blobs" list`)
	}
	footerStart := size - pr.footerSize
	for i, b := range pr.footer.Blobs {
		if err := checkBlob(b, footerStart); err != nil {
			return nil, blobError(i, b, err)
		}
	}
	return pr, nil
}

// readFooter reads and checks the framing of the footer (start magic,
// payload, trailer) and returns its bytes.
func readFooter(r io.ReaderAt, size int64, o readOptions) ([]byte, error) {
	tailSize := min(size, defaultTailSize)
	if o.footerSize != 0 {
		if o.footerSize < footerOverhead || o.footerSize > size-MagicSize {
			return nil, fmt.Errorf("puffin: invalid footer size %d for a file of %d bytes", o.footerSize, size)
		}
		if o.footerSize-footerOverhead > o.maxFooterSize {
			return nil, fmt.Errorf("puffin: footer size %d exceeds the limit of %d payload bytes", o.footerSize, o.maxFooterSize)
		}
		tailSize = o.footerSize
	}
	tail := make([]byte, tailSize)
	if err := readAt(r, tail, size-tailSize); err != nil {
		return nil, fmt.Errorf("puffin: read footer: %w", err)
	}
	if tailSize == size {
		if err := checkMagic(tail, 0); err != nil {
			return nil, err
		}
	}
	// A wrong hint shows first as a missing start magic where the hint
	// says the footer starts.
	if o.footerSize != 0 {
		if err := checkMagic(tail[:MagicSize], size-tailSize); err != nil {
			return nil, err
		}
	}
	trailer := tail[tailSize-trailerSize:]
	if err := checkMagic(trailer[8:], size-MagicSize); err != nil {
		return nil, err
	}
	if flags := trailer[4:8]; flags[0]&^FooterFlagCompressed != 0 || flags[1]|flags[2]|flags[3] != 0 {
		return nil, fmt.Errorf("puffin: unknown footer flags %x (only bit 0 of the first byte is defined)", flags)
	}
	payloadSize := int64(int32(binary.LittleEndian.Uint32(trailer)))
	switch {
	case payloadSize < 0:
		return nil, fmt.Errorf("puffin: negative footer payload size %d", payloadSize)
	case payloadSize > o.maxFooterSize:
		return nil, fmt.Errorf("puffin: footer payload size %d exceeds the limit of %d bytes", payloadSize, o.maxFooterSize)
	case payloadSize+footerOverhead > size-MagicSize:
		return nil, fmt.Errorf("puffin: footer payload size %d does not fit in a file of %d bytes", payloadSize, size)
	}
	footerSize := payloadSize + footerOverhead
	if o.footerSize != 0 && footerSize != o.footerSize {
		return nil, fmt.Errorf("puffin: footer size %d does not match the payload size %d in the trailer", o.footerSize, payloadSize)
	}
	footer := tail
	if footerSize > tailSize {
		// Read only what the tail did not cover.
		footer = make([]byte, footerSize)
		copy(footer[footerSize-tailSize:], tail)
		if err := readAt(r, footer[:footerSize-tailSize], size-footerSize); err != nil {
			return nil, fmt.Errorf("puffin: read footer: %w", err)
		}
	}
	footer = footer[int64(len(footer))-footerSize:]
	if err := checkMagic(footer, size-footerSize); err != nil {
		return nil, err
	}
	return footer, nil
}

// checkMagic checks that b, read at offset off of the file, starts with the
// magic.
func checkMagic(b []byte, off int64) error {
	if [MagicSize]byte(b) != magic {
		return fmt.Errorf("puffin: expected magic at offset %d, found %q", off, b[:MagicSize])
	}
	return nil
}

// checkBlob checks that a blob lies between the header and the footer
// starting at footerStart.
func checkBlob(b BlobMetadata, footerStart int64) error {
	switch {
	case b.Type == "":
		return errors.New("blob has no type")
	case b.Offset < MagicSize:
		return fmt.Errorf("offset %d is before the end of the header magic", b.Offset)
	case b.Length < 0:
		return fmt.Errorf("negative length %d", b.Length)
	case b.Length > footerStart-b.Offset: // b.Offset+b.Length could overflow
		return fmt.Errorf("offset %d + length %d reaches past the footer start at %d", b.Offset, b.Length, footerStart)
	}
	return nil
}

// readAt fills p from r at off. io.ReaderAt may return io.EOF with a full
// read at the end of its data; a short read means the file is shorter than
// its declared size.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Footer returns a copy of the file's footer.
func (r *Reader) Footer() Footer {
	return Footer{Blobs: r.Blobs(), Properties: r.Properties()}
}

// Blobs returns a copy of the metadata of the file's blobs, in footer order;
// blob i is the one ReadBlob(i) reads.
func (r *Reader) Blobs() []BlobMetadata {
	return cloneBlobs(r.footer.Blobs)
}

// NumBlobs returns the number of blobs the footer lists.
func (r *Reader) NumBlobs() int { return len(r.footer.Blobs) }

// Blob returns a copy of the metadata of blob i alone: cheaper than Blobs
// for a caller that walks a large footer one blob at a time.
func (r *Reader) Blob(i int) (BlobMetadata, error) {
	b, err := r.blob(i)
	if err != nil {
		return BlobMetadata{}, err
	}
	return cloneBlob(b), nil
}

// Properties returns a copy of the file's properties, such as created-by.
func (r *Reader) Properties() map[string]string {
	return maps.Clone(r.footer.Properties)
}

// FileSize returns the size the file was opened with.
func (r *Reader) FileSize() int64 { return r.size }

// FooterSize returns the size of the footer (start magic, payload and
// trailer), which table metadata records as file-footer-size-in-bytes so
// that a later Open can use WithFooterSize.
func (r *Reader) FooterSize() int64 { return r.footerSize }

// ReadBlob returns the content of blob i, decompressed. Both the stored and
// the decompressed size are bounded by the maximum blob size.
func (r *Reader) ReadBlob(i int) ([]byte, error) {
	b, err := r.blob(i)
	if err != nil {
		return nil, err
	}
	// An unknown codec is reported before spending a read on the blob.
	var codec *frameCodec
	if b.CompressionCodec != nil {
		if codec, err = lookupCodec(*b.CompressionCodec); err != nil {
			return nil, blobError(i, b, err)
		}
	}
	data, err := r.readRange(i, b, 0, b.Length)
	if err != nil || codec == nil {
		return data, err
	}
	if data, err = codec.decompress(data, r.maxBlobSize); err != nil {
		return nil, blobError(i, b, err)
	}
	return data, nil
}

// ReadRawBlob returns blob i as stored, compressed if it is.
func (r *Reader) ReadRawBlob(i int) ([]byte, error) {
	b, err := r.blob(i)
	if err != nil {
		return nil, err
	}
	return r.readRange(i, b, 0, b.Length)
}

// ReadBlobRange returns n bytes of uncompressed blob i from offset off
// within the blob, with a single ReadAt, so that one block of a large index
// can be read without the rest. A compressed blob cannot be read in part.
func (r *Reader) ReadBlobRange(i int, off, n int64) ([]byte, error) {
	b, err := r.blob(i)
	if err != nil {
		return nil, err
	}
	if b.CompressionCodec != nil {
		return nil, blobError(i, b, fmt.Errorf("cannot read part of a blob compressed with %q", *b.CompressionCodec))
	}
	if off < 0 || n < 0 || off > b.Length || n > b.Length-off {
		return nil, blobError(i, b, fmt.Errorf("range of %d bytes at %d is outside the blob's %d bytes", n, off, b.Length))
	}
	return r.readRange(i, b, off, n)
}

// section returns a reader of blob i as stored, for copying it without
// holding it in memory.
func (r *Reader) section(i int) (BlobMetadata, *io.SectionReader, error) {
	b, err := r.blob(i)
	if err != nil {
		return BlobMetadata{}, nil, err
	}
	return cloneBlob(b), io.NewSectionReader(r.r, b.Offset, b.Length), nil
}

// blob returns the metadata of blob i, which Open has checked.
func (r *Reader) blob(i int) (BlobMetadata, error) {
	if i < 0 || i >= len(r.footer.Blobs) {
		return BlobMetadata{}, fmt.Errorf("puffin: blob index %d out of range (file has %d blobs)", i, len(r.footer.Blobs))
	}
	return r.footer.Blobs[i], nil
}

// readRange reads n stored bytes of blob i, described by b, from offset off
// within it; the range has been checked against the blob.
func (r *Reader) readRange(i int, b BlobMetadata, off, n int64) ([]byte, error) {
	if n > r.maxBlobSize {
		return nil, blobError(i, b, fmt.Errorf("read of %d bytes exceeds the limit of %d bytes", n, r.maxBlobSize))
	}
	p := make([]byte, n)
	if err := readAt(r.r, p, b.Offset+off); err != nil {
		return nil, blobError(i, b, err)
	}
	return p, nil
}

func blobError(i int, b BlobMetadata, err error) error {
	return fmt.Errorf("puffin: blob %d (%s): %w", i, b.Type, err)
}

// cloneBlobs returns copies of blobs, as cloneBlob does.
func cloneBlobs(blobs []BlobMetadata) []BlobMetadata {
	c := make([]BlobMetadata, len(blobs))
	for i, b := range blobs {
		c[i] = cloneBlob(b)
	}
	return c
}

// cloneBlob returns a copy of b that shares nothing with it, so that callers
// cannot change the Reader's footer.
func cloneBlob(b BlobMetadata) BlobMetadata {
	b.Fields = slices.Clone(b.Fields)
	b.Properties = maps.Clone(b.Properties)
	if b.CompressionCodec != nil {
		codec := *b.CompressionCodec
		b.CompressionCodec = &codec
	}
	return b
}
