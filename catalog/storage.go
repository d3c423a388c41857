package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// TableIO returns the table's storage as icebloom reads it: the table's own
// file IO, with object storage (s3, gs, azure) wrapped so that opening a
// file reads nothing (see rangeReadIO). Every reader of data and index
// files goes through it, so that on object storage they cost range GETs
// only.
func TableIO(ctx context.Context, tbl *table.Table) (icebergio.IO, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	if bfs, ok := fs.(*blobfs.FileIO); ok {
		if prefix, ok := bucketPrefix(tbl); ok {
			return &rangeReadIO{FileIO: bfs, ctx: ctx, prefix: prefix}, nil
		}
	}
	return fs, nil
}

type requestTimeoutKey struct{}

// WithRequestTimeout returns ctx under which each request to object storage
// that a file of TableIO sends (a range GET, a HEAD, the GET of a
// sequential read, which must be read to its end in that time) is bounded
// by d: a store that accepts a request and never answers fails it with
// *TimeoutError after d, rather than holding the caller for as long as its
// own context lasts (icebloom serve: a plan's whole timeout, or for ever).
// d <= 0 leaves requests bounded by ctx alone.
func WithRequestTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, requestTimeoutKey{}, d)
}

// TimeoutError is a storage operation that did not finish within the
// bound its caller set (WithRequestTimeout, or a server's bound on a table
// load), while the caller's own context was still live.
type TimeoutError struct {
	// What is the operation: "read s3://bucket/key", "load table db.t".
	What string
	// After is the bound.
	After time.Duration
	// Err is the error the operation failed with (a deadline exceeded,
	// as the storage client reports it).
	Err error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no answer within %s: %v", e.What, e.After, e.Err)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// rangeReadIO is iceberg-go's object storage IO (s3, gs, azure) with a lazy
// Open. iceberg-go's Open starts an unranged GET of the whole object, which
// the readers here never use: Parquet footers and column chunks, Puffin
// footers and blobs are all read with ReadAt, which that IO already serves
// with range GETs. So every data file indexed and every statistics file read
// cost a whole-object GET on top of its range GETs; on a large file the
// server streams until the connection is dropped. Here Open sends nothing:
// ReadAt is one range GET, Stat (and Seek from the end, how the Parquet
// reader learns the size) one HEAD, and sequential Reads (manifests,
// metadata) one GET from the current offset, as before.
type rangeReadIO struct {
	*blobfs.FileIO
	ctx context.Context
	// prefix is scheme://bucket/ of the bucket the IO was opened for:
	// other locations are left to the IO, which refuses or resolves them.
	prefix string
}

// bucketPrefix returns the scheme://authority/ prefix of the table's
// locations, the bucket iceberg-go opened its IO for, when the table and
// its metadata agree on it.
func bucketPrefix(tbl *table.Table) (string, bool) {
	prefixOf := func(loc string) string {
		scheme, rest, ok := strings.Cut(loc, "://")
		authority, _, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || scheme == "" || authority == "" {
			return ""
		}
		return scheme + "://" + authority + "/"
	}
	p := prefixOf(tbl.Location())
	return p, p != "" && p == prefixOf(tbl.MetadataLocation())
}

func (r *rangeReadIO) Open(name string) (icebergio.File, error) {
	key, ok := strings.CutPrefix(name, r.prefix)
	// Object keys are raw (blobfs does not unescape them either); anything
	// fs.ValidPath refuses, the IO's own Open refuses too.
	if !ok || !iofs.ValidPath(key) {
		return r.FileIO.Open(name)
	}
	d, _ := r.ctx.Value(requestTimeoutKey{}).(time.Duration)
	return &rangeFile{ctx: r.ctx, timeout: d, bucket: r.FileIO.Bucket, name: name, key: key, size: -1}, nil
}

// rangeFile is an object opened by rangeReadIO. ReadAt is safe for
// concurrent use; Read, Seek and Close are not, as for any File.
type rangeFile struct {
	ctx       context.Context
	timeout   time.Duration // of each request (WithRequestTimeout), 0: none
	bucket    *blob.Bucket
	name, key string

	mu   sync.Mutex
	size int64 // -1 until known
	mod  time.Time

	pos      int64
	rd       *blob.Reader       // the sequential reader at pos; nil until Read
	rdCtx    context.Context    // rd's request context
	rdCancel context.CancelFunc // ends rdCtx
}

// request returns the context of one storage request: f's, bounded by
// f.timeout.
func (f *rangeFile) request() (context.Context, context.CancelFunc) {
	if f.timeout <= 0 {
		return f.ctx, func() {}
	}
	return context.WithTimeout(f.ctx, f.timeout)
}

// pathError reports err of op on the file, a missing object as
// fs.ErrNotExist as blobfs reports it, and a request that ran out of its
// own time (ctx, while f's context is live) as *TimeoutError.
func (f *rangeFile) pathError(ctx context.Context, op string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		err = iofs.ErrNotExist
	}
	if ctx != f.ctx && errors.Is(ctx.Err(), context.DeadlineExceeded) && f.ctx.Err() == nil {
		err = &TimeoutError{What: op + " " + f.name, After: f.timeout, Err: err}
	}
	return &iofs.PathError{Op: op, Path: f.name, Err: err}
}

func (f *rangeFile) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	ctx, cancel := f.request()
	defer cancel()
	rd, err := f.bucket.NewRangeReader(ctx, f.key, off, int64(len(p)), nil)
	if err != nil {
		return 0, f.pathError(ctx, "read", err)
	}
	defer rd.Close()
	n, err := io.ReadFull(rd, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF // the range ran past the end: io.ReaderAt's short read
	} else if err != nil && !errors.Is(err, io.EOF) {
		err = f.pathError(ctx, "read", err)
	}
	return n, err
}

func (f *rangeFile) Read(p []byte) (int, error) {
	if f.rd == nil {
		ctx, cancel := f.request()
		rd, err := f.bucket.NewRangeReader(ctx, f.key, f.pos, -1, nil)
		if err != nil {
			err = f.pathError(ctx, "read", err)
			cancel()
			return 0, err
		}
		f.rd, f.rdCtx, f.rdCancel = rd, ctx, cancel
		f.setSize(rd.Size(), rd.ModTime())
	}
	n, err := f.rd.Read(p)
	f.pos += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		err = f.pathError(f.rdCtx, "read", err)
	}
	return n, err
}

// closeReader closes the sequential reader and ends its request.
func (f *rangeFile) closeReader() error {
	err := f.rd.Close()
	f.rdCancel()
	f.rd, f.rdCtx, f.rdCancel = nil, nil, nil
	return err
}

func (f *rangeFile) Seek(offset int64, whence int) (int64, error) {
	pos := offset
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		pos += f.pos
	case io.SeekEnd:
		info, err := f.Stat()
		if err != nil {
			return 0, err
		}
		pos += info.Size()
	default:
		return 0, f.pathError(f.ctx, "seek", errors.New("invalid whence"))
	}
	if pos < 0 {
		return 0, f.pathError(f.ctx, "seek", errors.New("negative position"))
	}
	if pos != f.pos && f.rd != nil {
		f.closeReader() // the next Read opens a reader at the new position
	}
	f.pos = pos
	return pos, nil
}

func (f *rangeFile) setSize(size int64, mod time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.size, f.mod = size, mod
}

func (f *rangeFile) Stat() (iofs.FileInfo, error) {
	f.mu.Lock()
	size, mod := f.size, f.mod
	f.mu.Unlock()
	if size < 0 {
		ctx, cancel := f.request()
		attrs, err := f.bucket.Attributes(ctx, f.key)
		cancel()
		if err != nil {
			return nil, f.pathError(ctx, "stat", err)
		}
		size, mod = attrs.Size, attrs.ModTime
		f.setSize(size, mod)
	}
	return rangeFileInfo{name: path.Base(f.key), size: size, mod: mod}, nil
}

func (f *rangeFile) Close() error {
	if f.rd == nil {
		return nil
	}
	return f.closeReader()
}

// rangeFileInfo describes a rangeFile.
type rangeFileInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i rangeFileInfo) Name() string        { return i.name }
func (i rangeFileInfo) Size() int64         { return i.size }
func (i rangeFileInfo) Mode() iofs.FileMode { return iofs.ModeIrregular }
func (i rangeFileInfo) ModTime() time.Time  { return i.mod }
func (i rangeFileInfo) IsDir() bool         { return false }
func (i rangeFileInfo) Sys() any            { return nil }

// IsLocal reports whether a location is on the local file system — a
// file: URI or a plain path — where a read takes microseconds, rather than
// on object storage, where it takes milliseconds and reading ahead pays.
func IsLocal(location string) bool {
	scheme, _, ok := strings.Cut(location, "://")
	return !ok || strings.EqualFold(scheme, "file")
}
