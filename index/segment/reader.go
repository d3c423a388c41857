package segment

import (
	"fmt"
	"io"

	"github.com/icebloom/icebloom/puffin"
)

// ReadDirectory reads the directory stored (zstd-compressed) in the length
// bytes at off of a segment's Puffin file, with one read, and checks it.
func ReadDirectory(r io.ReaderAt, off, length int64) (*Directory, error) {
	if off < 4 || length <= 0 || length > MaxDirectoryBytes {
		return nil, fmt.Errorf("directory: %d bytes at offset %d is not a directory's place", length, off)
	}
	stored := make([]byte, length)
	if n, err := r.ReadAt(stored, off); n < len(stored) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("directory: read %d bytes at offset %d: %w", length, off, err)
	}
	data, err := puffin.Decompress(puffin.CodecZstd, stored, MaxDirectoryBytes)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	return DecodeDirectory(data, off)
}

// FindDirectory returns the place of the directory blob a segment's footer
// lists; ok is false for a Puffin file without one.
func FindDirectory(pr *puffin.Reader) (off, length int64, ok bool) {
	for i := range pr.NumBlobs() {
		b, _ := pr.Blob(i)
		if b.Type == DirectoryBlobType {
			return b.Offset, b.Length, true
		}
	}
	return 0, 0, false
}
