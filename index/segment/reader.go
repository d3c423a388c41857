package segment

import (
	"fmt"
	"io"
	"strconv"

	"github.com/apache/iceberg-go/table"

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

// DirectoryPlace returns where table metadata says a v2 segment's directory
// lies (PropDirectoryOffset), ok false when it does not say.
func DirectoryPlace(sf table.StatisticsFile) (off, length int64, ok bool) {
	for _, b := range sf.BlobMetadata {
		if puffin.BlobType(b.Type) != DirectoryBlobType {
			continue
		}
		off, err1 := strconv.ParseInt(b.Properties[PropDirectoryOffset], 10, 64)
		length, err2 := strconv.ParseInt(b.Properties[PropDirectoryLength], 10, 64)
		return off, length, err1 == nil && err2 == nil
	}
	return 0, 0, false
}

// ReadPlacedDirectory reads the directory of the v2 segment sf with one
// read, at the place its table-metadata entry records (DirectoryPlace),
// without reading the Puffin footer; ok is false, and nothing is read, when
// the entry does not record one. A place that overlaps the footer is an
// error.
func ReadPlacedDirectory(r io.ReaderAt, sf table.StatisticsFile) (dir *Directory, ok bool, err error) {
	off, length, ok := DirectoryPlace(sf)
	if !ok {
		return nil, false, nil
	}
	if off+length > sf.FileSizeInBytes-sf.FileFooterSizeInBytes {
		return nil, true, fmt.Errorf("directory of %d bytes at %d overlaps the footer", length, off)
	}
	dir, err = ReadDirectory(r, off, length)
	return dir, true, err
}
