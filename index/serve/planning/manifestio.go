package planning

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// manifestIO is a table's storage with its manifest lists and manifests
// (the .avro files of its metadata) kept in memory once read: they are
// immutable, each version a file of its own name, so a kept copy is never
// stale. Warm plans of a table then read none of them from storage; every
// other file (data, deletes, index) is read as before. They are kept under
// the storage access they were read with (Loaded.Access): a manifest read
// with one caller's credentials is not another's to plan from.
type manifestIO struct {
	icebergio.IO
	cache  *lruCache[[]byte]
	access string
	// opens counts the manifest lists and manifests opened, from memory or
	// storage: each is decoded by whoever opened it.
	opens *atomic.Int64
}

func (m *manifestIO) Open(name string) (icebergio.File, error) {
	if !strings.HasSuffix(name, ".avro") {
		return m.IO.Open(name)
	}
	m.opens.Add(1)
	key := name
	if m.access != "" {
		key = m.access + "\x00" + name
	}
	if b, ok := m.cache.get(key); ok {
		return newMemFile(name, b), nil
	}
	f, err := m.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	m.cache.add(key, b, int64(len(b)+len(name)))
	return newMemFile(name, b), nil
}

// memFile is a file read into memory.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func newMemFile(name string, b []byte) *memFile {
	return &memFile{Reader: bytes.NewReader(b), name: name, size: int64(len(b))}
}

func (f *memFile) Close() error               { return nil }
func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name[strings.LastIndex(i.f.name, "/")+1:] }
func (i memInfo) Size() int64        { return i.f.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
