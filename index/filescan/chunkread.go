package filescan

import (
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// maxFetch bounds the column chunk a chunkReader reads whole into memory.
// A larger chunk is read page by page from the file instead (one read per
// page with buffered streams), so a worker's memory does not follow the
// largest chunk of the table.
const maxFetch = 32 << 20

// chunkReader is a Parquet data file as a build worker reads it: before a
// column chunk (or only its dictionary page) is read, Fetch reads its byte
// range with one ReadAt into a buffer reused from chunk to chunk, and
// arrow-go's reads inside that range are served from memory. Without it a
// buffered stream (readerProperties) makes one read per buffer's worth
// (16 KiB), which on an object store is one GET each; without buffered
// streams arrow-go makes a fresh slice of every chunk. Reads outside the
// fetched range (the footer, a chunk whose metadata is off) go to the file,
// so the range only ever decides speed, never what is read.
//
// In a build the ranges are usually read ahead by the prefetcher
// (prefetch.go) and held: Fetch of a held range reads nothing, and reads
// inside any held range are served from it.
type chunkReader struct {
	file       parquet.ReaderAtSeeker
	bufferSize int64   // of the buffered streams reading the chunks
	buf        *[]byte // the worker's, kept across files
	start      int64   // file offset of (*buf)[0]
	n          int     // bytes of *buf fetched
	held       []span  // bytes read ahead, by offset; not overlapping
}

// span is bytes of a file read ahead: b holds the file's bytes from off.
type span struct {
	off int64
	b   []byte
}

// newChunkReader reads f for Parquet readers with props, through buf, which
// holds the fetched bytes and is grown as needed; the caller keeps it for
// the next file.
func newChunkReader(f parquet.ReaderAtSeeker, props *parquet.ReaderProperties, buf *[]byte) *chunkReader {
	return &chunkReader{file: f, bufferSize: props.BufferSize, buf: buf}
}

// hold makes c serve reads inside the spans (sorted by offset, not
// overlapping) from them. The spans must stay unchanged while c is used.
func (c *chunkReader) hold(spans []span) { c.held = spans }

// readHeld copies into p the held bytes from off and reports whether the
// held spans (one, or adjacent ones) cover all of [off, off+len(p)); when
// they do not, p is left as it was.
func (c *chunkReader) readHeld(p []byte, off int64) bool {
	if !c.isHeld(off, int64(len(p))) {
		return false
	}
	i := c.spanAt(off)
	for pos := off; pos < off+int64(len(p)); i++ {
		pos += int64(copy(p[pos-off:], c.held[i].b[pos-c.held[i].off:]))
	}
	return true
}

// spanAt returns the index of the last held span starting at or before
// off, -1 if none.
func (c *chunkReader) spanAt(off int64) int {
	return sort.Search(len(c.held), func(i int) bool { return c.held[i].off > off }) - 1
}

// ReadAt implements io.ReaderAt.
func (c *chunkReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= c.start && off+int64(len(p)) <= c.start+int64(c.n) {
		return copy(p, (*c.buf)[off-c.start:]), nil
	}
	if len(c.held) > 0 && c.readHeld(p, off) {
		return len(p), nil
	}
	return c.file.ReadAt(p, off)
}

// Seek implements io.Seeker, for the Parquet reader to find the file's size.
func (c *chunkReader) Seek(offset int64, whence int) (int64, error) {
	return c.file.Seek(offset, whence)
}

// isHeld reports whether the held spans cover [off, off+n).
func (c *chunkReader) isHeld(off, n int64) bool {
	i := c.spanAt(off)
	for pos := off; pos < off+n; i++ {
		if i < 0 || i == len(c.held) || c.held[i].off > pos || pos >= c.held[i].off+int64(len(c.held[i].b)) {
			return false
		}
		pos = c.held[i].off + int64(len(c.held[i].b))
	}
	return true
}

// Fetch reads the column chunk md describes, the range arrow-go's page
// reader reads it from, or only as much of it as reading the dictionary
// page takes when dictionaryPage is set: the page, and at least the
// stream's first buffer. A chunk larger than maxFetch, or a range the file
// does not hold, is not fetched: arrow-go then reads the file itself and
// reports any damage. A range held already is not read again.
func (c *chunkReader) Fetch(md *metadata.ColumnChunkMetaData, dictionaryPage bool) {
	c.n = 0
	start, size, ok := fetchRange(md, dictionaryPage, c.bufferSize)
	if !ok || c.isHeld(start, size) {
		return
	}
	if int64(cap(*c.buf)) < size {
		*c.buf = make([]byte, size)
	}
	b := (*c.buf)[:size]
	if k, err := c.file.ReadAt(b, start); k != len(b) || (err != nil && err != io.EOF) {
		return
	}
	c.start, c.n = start, len(b)
}

// fetchRange returns the byte range Fetch reads for the chunk md describes
// (see Fetch), with streams of bufferSize bytes, and false when Fetch reads
// nothing. The prefetcher reads ahead exactly these ranges.
func fetchRange(md *metadata.ColumnChunkMetaData, dictionaryPage bool, bufferSize int64) (start, size int64, ok bool) {
	start, size = md.DataPageOffset(), md.TotalCompressedSize()
	if dict := md.DictionaryPageOffset(); md.HasDictionaryPage() && dict > 0 && dict < start {
		if dictionaryPage {
			size = min(size, max(start-dict, bufferSize))
		}
		start = dict
	}
	if start < 0 || size <= 0 || size > maxFetch {
		return 0, 0, false
	}
	return start, size, true
}
