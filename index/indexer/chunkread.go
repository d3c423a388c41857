package indexer

import (
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// maxFetch bounds the column chunk a ChunkReader reads whole into memory.
// A larger chunk is read page by page from the file instead (one read per
// page with buffered streams), so a worker's memory does not follow the
// largest chunk of the table.
const maxFetch = 32 << 20

// ChunkReader is a Parquet data file as a build worker reads it: before a
// column chunk (or only its dictionary page) is read, Fetch reads its byte
// range with one ReadAt into a buffer reused from chunk to chunk, and
// arrow-go's reads inside that range are served from memory. Without it a
// buffered stream (ReaderProperties) makes one read per buffer's worth
// (16 KiB), which on an object store is one GET each; without buffered
// streams arrow-go makes a fresh slice of every chunk. Reads outside the
// fetched range (the footer, a chunk whose metadata is off) go to the file,
// so the range only ever decides speed, never what is read.
type ChunkReader struct {
	file       parquet.ReaderAtSeeker
	bufferSize int64   // of the buffered streams reading the chunks
	buf        *[]byte // the worker's, kept across files
	start      int64   // file offset of (*buf)[0]
	n          int     // bytes of *buf fetched
}

// NewChunkReader reads f for Parquet readers with props, through buf, which
// holds the fetched bytes and is grown as needed; the caller keeps it for
// the next file.
func NewChunkReader(f parquet.ReaderAtSeeker, props *parquet.ReaderProperties, buf *[]byte) *ChunkReader {
	return &ChunkReader{file: f, bufferSize: props.BufferSize, buf: buf}
}

// ReadAt implements io.ReaderAt.
func (c *ChunkReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= c.start && off+int64(len(p)) <= c.start+int64(c.n) {
		return copy(p, (*c.buf)[off-c.start:]), nil
	}
	return c.file.ReadAt(p, off)
}

// Seek implements io.Seeker, for the Parquet reader to find the file's size.
func (c *ChunkReader) Seek(offset int64, whence int) (int64, error) {
	return c.file.Seek(offset, whence)
}

// Fetch reads the column chunk md describes, the range arrow-go's page
// reader reads it from, or only as much of it as reading the dictionary
// page takes when dictionaryPage is set: the page, and at least the
// stream's first buffer. A chunk larger than maxFetch, or a range the file
// does not hold, is not fetched: arrow-go then reads the file itself and
// reports any damage.
func (c *ChunkReader) Fetch(md *metadata.ColumnChunkMetaData, dictionaryPage bool) {
	c.n = 0
	start, size := md.DataPageOffset(), md.TotalCompressedSize()
	if dict := md.DictionaryPageOffset(); md.HasDictionaryPage() && dict > 0 && dict < start {
		if dictionaryPage {
			size = min(size, max(start-dict, c.bufferSize))
		}
		start = dict
	}
	if start < 0 || size <= 0 || size > maxFetch {
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
