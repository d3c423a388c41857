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
	stored, err := ReadStoredDirectory(r, off, length)
	if err != nil {
		return nil, err
	}
	return DecodeStoredDirectory(stored, off)
}

// ReadStoredDirectory reads the directory blob of length bytes at off of a
// segment's Puffin file as stored (zstd-compressed), with one read,
// without checking it: what a reader keeps to decode the directory again
// (DecodeStoredDirectory) where its decoded form is too large to keep.
func ReadStoredDirectory(r io.ReaderAt, off, length int64) ([]byte, error) {
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
	return stored, nil
}

// DecodeStoredDirectory decompresses, decodes and checks a directory blob
// as stored at off of its Puffin file.
func DecodeStoredDirectory(stored []byte, off int64) (*Directory, error) {
	return decodeStored(stored, off, true, nil)
}

// CheckStoredDirectory checks a directory blob as stored at off of its
// Puffin file as DecodeStoredDirectory does, keeping none of its files and
// members, and returns its links: a reader that keeps the blob stored, to
// decode it when it matches files, checks it so at less than half the cost
// of decoding it (of 1,000,000 files: 47 MB of locations not copied, 32 MB
// of members not made).
func CheckStoredDirectory(stored []byte, off int64) ([]Link, error) {
	dir, err := decodeStored(stored, off, false, nil)
	if err != nil {
		return nil, err
	}
	return dir.Links, nil
}

// MatchStoredDirectory decodes a directory blob as stored at off of its
// Puffin file as DecodeStoredDirectory does, keeping none of its files and
// members (its Files are empty, its groups' Members nil) but handing them
// over as they are decoded: each file to find, and, once its group is
// decoded, each member of a group of fields whose file find found to fn,
// with the directory being decoded (its Groups hold the member's group
// from then on, at the same place), the group's index, the member's and
// find's file. A reader matching its data files to an index that does not
// keep the directory decoded matches so without the directory's files and
// members (of 1,000,000 files: 47 MB of locations, 32 MB of members). fn
// may have been called when it returns an error: a reader calls it for a
// blob that CheckStoredDirectory accepted before.
func MatchStoredDirectory(stored []byte, off int64, find func(path []byte, size int64) (int, bool), fields []int,
	fn func(dir *Directory, group, member, file int)) (*Directory, error) {
	return decodeStored(stored, off, false, &matcher{find: find, fields: fields, fn: fn})
}

func decodeStored(stored []byte, off int64, keep bool, m *matcher) (*Directory, error) {
	data, err := puffin.Decompress(puffin.CodecZstd, stored, MaxDirectoryBytes)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	return decodeDirectory(data, off, keep, m)
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
	off, length, ok, err := PlacedDirectory(sf)
	if !ok || err != nil {
		return nil, ok, err
	}
	dir, err = ReadDirectory(r, off, length)
	return dir, true, err
}

// PlacedDirectory is DirectoryPlace, with a place that overlaps the footer
// of sf an error.
func PlacedDirectory(sf table.StatisticsFile) (off, length int64, ok bool, err error) {
	off, length, ok = DirectoryPlace(sf)
	if ok && off+length > sf.FileSizeInBytes-sf.FileFooterSizeInBytes {
		return 0, 0, true, fmt.Errorf("directory of %d bytes at %d overlaps the footer", length, off)
	}
	return off, length, ok, nil
}
