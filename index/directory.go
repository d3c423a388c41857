package index

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/icebloom/icebloom/index/segment"
)

// storedDirectory is a v2 segment's directory as Load keeps it: its blob
// as the file stores it (zstd-compressed), its links, and its decoded form
// only while something else holds that. At 1,000,000 data files the
// decoded directory takes 87 MB (locations sorted, so neighbours share
// little: 47 bytes a file; sizes; members of 16 bytes), the stored one
// 6.6 MB. A server decodes it to match a table version's files, keeps of
// it what its lookups read (each group's segment.Layout), and lets the rest
// go; a table whose index was loaded before costs no read when it is
// loaded again.
type storedDirectory struct {
	stored []byte
	offset int64 // the blob's place in its file: where the groups must end
	links  []segment.Link
	// decodedBytes is the decoded directory's size (segment.Directory.Bytes),
	// once it was decoded.
	decodedBytes atomic.Int64
	// mu serializes decoding, so that callers at once share one.
	mu      sync.Mutex
	decoded weak.Pointer[segment.Directory]
}

// readStoredDirectory reads and checks the directory blob of length bytes
// at off of a statistics file, and keeps it as stored. It is checked, not
// decoded: a server loads the index while it reads a table's manifests and
// matches files to it after, by when a directory decoded here would most
// often have been collected, and decoded again.
func readStoredDirectory(r io.ReaderAt, off, length int64) (*storedDirectory, error) {
	stored, err := segment.ReadStoredDirectory(r, off, length)
	if err != nil {
		return nil, err
	}
	links, err := segment.CheckStoredDirectory(stored, off)
	if err != nil {
		return nil, err
	}
	return &storedDirectory{stored: stored, offset: off, links: links}, nil
}

// directory returns the decoded directory: the one decoded last while
// something holds it, else decoded again from the stored blob.
func (d *storedDirectory) directory() *segment.Directory {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dir := d.decoded.Value(); dir != nil {
		return dir
	}
	dir, err := segment.DecodeStoredDirectory(d.stored, d.offset)
	if err != nil {
		// The same bytes decoded and checked when they were read, and are
		// never written to.
		panic(fmt.Sprintf("index: a directory that decoded when it was read does not decode again: %v", err))
	}
	d.decoded = weak.Make(dir)
	d.decodedBytes.Store(dir.Bytes())
	return dir
}

// held returns the decoded directory while something holds it, nil when
// nothing does.
func (d *storedDirectory) held() *segment.Directory {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.decoded.Value()
}

// match hands fn the members of fields whose files find finds, decoding
// the stored blob without keeping its files and members
// (segment.MatchStoredDirectory).
func (d *storedDirectory) match(find FindFile, fields []int, fn func(dir *segment.Directory, group, member, file int)) {
	if _, err := segment.MatchStoredDirectory(d.stored, d.offset, find, fields, fn); err != nil {
		// As in directory: the bytes were checked when they were read.
		panic(fmt.Sprintf("index: a directory that decoded when it was read does not decode again: %v", err))
	}
}

// bytes is the memory the stored directory holds, not counting its
// decoded form.
func (d *storedDirectory) bytes() int64 {
	n := int64(unsafe.Sizeof(*d)) + int64(cap(d.stored))
	for _, l := range d.links {
		n += int64(unsafe.Sizeof(l)) + int64(len(l.Path)+len(l.Run)+8*len(l.Fields))
	}
	return n
}
