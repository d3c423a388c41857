package filescan

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"io"
	iofs "io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"golang.org/x/sync/semaphore"

	"github.com/icebloom/icebloom/index/hashing"
)

// Reading ahead (issue 17, "Keep object storage busy"). On object storage a
// build is bound by request latency, not by CPU: a worker reading its own
// file waits a round trip for the footer, then one per column chunk, and
// with as many workers as CPUs that is two requests in flight on a 2-core
// pod. So the I/O is separated from the CPU: a prefetcher reads the next
// files' footers and then the byte ranges of their indexed column chunks —
// the exact ranges chunkReader.Fetch would read, the dictionary page alone
// where the dictionary shortcut applies — with up to RequestsInFlight
// requests in flight across many files, and hands each file's bytes to the
// CPU workers, which parse and hash from memory.
//
// Reading ahead only ever decides speed, never results: a read ahead that
// fails or does not validate is dropped, and the worker reads that part
// from the file as it always did, meeting (and reporting) any real error
// itself. Every request of the run, the workers' own included, passes the
// same gate, so no more than RequestsInFlight are ever in flight; and the
// bytes held ahead are bounded (Config.prefetchBytes).

// DefaultRequestsInFlight is how many storage requests a run has in flight
// at most by default: sized for object storage, where each costs a round
// trip of milliseconds while its bytes take microseconds to hash.
const DefaultRequestsInFlight = 32

const (
	// footerReadSize is how much of a file's end the prefetcher reads in
	// its first request: the Parquet footer of most files, in one round
	// trip (arrow-go needs two, and a HEAD for the size before them), and
	// the whole of a small file.
	footerReadSize = 64 << 10
	// footerTrailer is the Parquet file's last 8 bytes: the footer's
	// length and the magic "PAR1".
	footerTrailer = 8
	// pooledMax is the largest buffer the prefetcher's pool keeps; larger
	// ones are made to measure and left to the garbage collector.
	pooledMax = 1 << 20
)

var parquetMagic = []byte("PAR1")

// Config is how a run reads its data files: from FS, the Columns (hashed
// into filters of at most MaxFilterBytes), leaf columns told apart by field
// id or else by the table's NameMapping; NoDictShortcut decodes every data
// page even where the dictionary page alone would do.
type Config struct {
	FS             icebergio.IO
	Columns        []Column
	NameMapping    iceberg.NameMapping
	MaxFilterBytes int
	NoDictShortcut bool
	Filters        *FilterPool // the filters' bitsets; nil: none reused
	Parallel       int         // CPU workers
	Requests       int         // storage requests in flight at most
	// PrefetchBytes bounds the bytes read ahead and held at once; 0 reads
	// nothing ahead: each worker reads its own file, as before prefetching.
	PrefetchBytes int64
	// stats, for tests, counts what was read ahead; nil: not counted.
	stats *prefetchStats
}

// prefetchStats count what a prefetcher read ahead, for tests.
type prefetchStats struct {
	held, peak atomic.Int64 // bytes held under the bounds now, and at most
	ahead      atomic.Int64 // chunk ranges read ahead
	left       atomic.Int64 // chunk ranges planned but left to the workers
}

// hold counts n bytes more held (negative: given back).
func (s *prefetchStats) hold(n int64) {
	if s == nil {
		return
	}
	now := s.held.Add(n)
	for {
		peak := s.peak.Load()
		if now <= peak || s.peak.CompareAndSwap(peak, now) {
			return
		}
	}
}

// PrefetchBytesOf derives the bound of the bytes read ahead from a run's
// memory budget for filters: a quarter of it, at least 1 MiB.
func PrefetchBytesOf(budget int64) int64 { return max(budget/4, 1<<20) }

// Result is what reading one data file gave: the filters of its columns
// read, or the error that kept the whole file from being read.
type Result struct {
	File    File
	Filters []ColumnFilter
	Err     error
	Elapsed time.Duration // reading and hashing the file's columns
}

// ReadFiles reads and hashes files with rc.Parallel workers, reading ahead
// as rc says, and sends one result per file (in no particular order) on
// the channel it returns, which it closes when done. When ctx is done the
// files not yet read are skipped.
func ReadFiles(ctx context.Context, files []File, rc Config) <-chan Result {
	gate := make(requestGate, max(rc.Requests, 1))
	fs := gatedIO{IO: rc.FS, gate: gate, ctx: ctx}
	p := newPrefetcher(fs, rc)

	queue := make(chan File)
	go func() {
		defer close(queue)
		for _, df := range files {
			select {
			case queue <- df:
			case <-ctx.Done():
				return
			}
		}
	}()

	// Fetchers take the files in order: twice as many as requests can be
	// in flight, so that footers alone fill the gate while as many fetchers
	// wait to hand their files to busy workers (the bounds on memory and on
	// requests still hold).
	fetchers := 1
	if p.enabled() {
		fetchers = max(2*rc.Requests, rc.Parallel)
	}
	ready := make(chan *readAhead)
	var fetching sync.WaitGroup
	for range fetchers {
		fetching.Add(1)
		go func() {
			defer fetching.Done()
			for df := range queue {
				ra := p.fetch(ctx, df)
				select {
				case ready <- ra:
				case <-ctx.Done():
					ra.release()
				}
			}
		}()
	}
	go func() { fetching.Wait(); close(ready) }()

	results := make(chan Result, rc.Parallel)
	var workers sync.WaitGroup
	for range rc.Parallel {
		workers.Add(1)
		go func() {
			defer workers.Done()
			ix := NewScanner(fs, rc.Columns, rc.NameMapping, rc.MaxFilterBytes, rc.NoDictShortcut)
			ix.filters = rc.Filters
			for ra := range ready {
				start := time.Now()
				filters, err := ix.indexRead(ctx, ra)
				elapsed := time.Since(start) + ra.readTime
				ra.release()
				results <- Result{File: ra.df, Filters: filters, Err: err, Elapsed: elapsed}
			}
		}()
	}
	go func() { workers.Wait(); close(results) }()
	return results
}

// readAhead is a data file as the prefetcher hands it to a worker: the
// file opened, its footer parsed and the bytes read ahead, or as much of
// that as succeeded.
type readAhead struct {
	df File
	// file is the data file opened by the prefetcher, closed by release;
	// nil: the worker opens it (openErr: opening failed, the file's error).
	file    icebergio.File
	openErr error
	// meta is the footer, parsed as arrow-go parses it, with the file's
	// size from the manifest; nil: the worker's Parquet reader reads it.
	meta *metadata.FileMetaData
	// spans are the bytes read ahead, by offset, not overlapping: the
	// file's end (which holds the footer) and the chunks' ranges.
	spans []span
	// readTime is the time the file's reads ahead took, added up.
	readTime time.Duration

	p                   *prefetcher
	footerMem, chunkMem int64 // held of p's bounds until release
}

// release closes the file and gives back what ra holds: its buffers and
// its share of the bound on bytes held.
func (ra *readAhead) release() {
	if ra.file != nil {
		ra.file.Close()
		ra.file = nil
	}
	ra.drop()
}

// drop forgets what was read ahead and gives back its memory, keeping the
// file open.
func (ra *readAhead) drop() {
	for _, s := range ra.spans {
		ra.p.pool.put(s.b)
	}
	ra.spans, ra.meta = nil, nil
	if ra.footerMem > 0 {
		ra.p.stats.hold(-ra.footerMem)
		ra.p.footers.Release(ra.footerMem)
		ra.footerMem = 0
	}
	if ra.chunkMem > 0 {
		ra.p.stats.hold(-ra.chunkMem)
		ra.p.chunks.Release(ra.chunkMem)
		ra.chunkMem = 0
	}
}

// prefetcher reads files ahead of the workers. Footers and chunks are held
// under separate bounds (a quarter and three quarters of the whole), so
// that fetchers holding footers while they wait for room for chunks never
// hold up the workers' release of the chunks before them.
type prefetcher struct {
	fs             icebergio.IO
	cols           []Column
	nameMapping    iceberg.NameMapping
	noDictShortcut bool
	bufferSize     int64 // of the workers' streams (readerProperties)

	footerCap, chunkCap int64
	footers, chunks     *semaphore.Weighted
	pool                bytePool
	stats               *prefetchStats
}

func newPrefetcher(fs icebergio.IO, rc Config) *prefetcher {
	p := &prefetcher{fs: fs, cols: rc.Columns, nameMapping: rc.NameMapping, noDictShortcut: rc.NoDictShortcut,
		bufferSize: readerProperties().BufferSize, stats: rc.stats}
	if rc.PrefetchBytes > 0 {
		p.footerCap = rc.PrefetchBytes / 4
		p.chunkCap = rc.PrefetchBytes - p.footerCap
		p.footers = semaphore.NewWeighted(p.footerCap)
		p.chunks = semaphore.NewWeighted(p.chunkCap)
		p.pool.max = rc.PrefetchBytes // no more free than may be held
	}
	return p
}

func (p *prefetcher) enabled() bool { return p.footers != nil }

// fetch reads df ahead: it opens the file, reads its end and parses the
// footer, then reads the ranges of the indexed columns' chunks. Whatever
// fails is left out, for the worker to read from the file.
func (p *prefetcher) fetch(ctx context.Context, df File) (ra *readAhead) {
	ra = &readAhead{df: df, p: p}
	if !p.enabled() {
		return ra
	}
	defer func() {
		// A data file is untrusted input, and arrow-go's footer decoding
		// may panic on a damaged one: then nothing is read ahead, and the
		// worker, reading the footer itself, fails the file (file.go).
		if recover() != nil {
			ra.drop()
		}
	}()
	ra.file, ra.openErr = p.fs.Open(df.Path)
	if ra.openErr != nil {
		return ra
	}
	tail, ok := p.readFooter(ctx, ra)
	if !ok {
		return ra
	}
	p.readChunks(ctx, ra, p.plan(ra.meta, df.Size-int64(len(tail.b))))
	return ra
}

// readFooter reads the end of the file — footerReadSize bytes, or the
// whole footer if it is longer — with the size the manifest gives, so no
// request asks for the size, and parses the footer. It returns the end it
// read, and false (holding nothing) when the end is not a plaintext Parquet
// footer of a file of that size: a manifest size that is wrong, a damaged
// or encrypted file. The worker then reads the footer as arrow-go does and
// meets the problem, if it is real, itself.
func (p *prefetcher) readFooter(ctx context.Context, ra *readAhead) (span, bool) {
	size := ra.df.Size
	if size <= footerTrailer {
		return span{}, false
	}
	n := min(size, footerReadSize)
	tail, ok := p.readEnd(ctx, ra, n)
	if !ok || !bytes.Equal(tail.b[n-4:], parquetMagic) {
		return p.dropFooter(ra, tail)
	}
	metaLen := int64(binary.LittleEndian.Uint32(tail.b[n-footerTrailer:]))
	if metaLen+footerTrailer > size {
		return p.dropFooter(ra, tail)
	}
	if metaLen+footerTrailer > n { // a long footer: read all of it
		p.dropFooter(ra, tail)
		n = metaLen + footerTrailer
		if tail, ok = p.readEnd(ctx, ra, n); !ok {
			return p.dropFooter(ra, tail)
		}
	}
	md, err := metadata.NewFileMetaData(tail.b[n-footerTrailer-metaLen:n-footerTrailer], nil)
	if err != nil || md.IsSetEncryptionAlgorithm() {
		return p.dropFooter(ra, tail)
	}
	md.SetSourceFileSize(size) // as arrow-go does with the size it finds
	ra.meta = md
	ra.spans = append(ra.spans, tail)
	return tail, true
}

// readEnd reads the last n bytes of the file into a buffer held under the
// footers' bound (when n fits it).
func (p *prefetcher) readEnd(ctx context.Context, ra *readAhead, n int64) (span, bool) {
	alloc := allocSize(n)
	if alloc > p.footerCap || p.footers.Acquire(ctx, alloc) != nil {
		return span{}, false
	}
	ra.footerMem += alloc
	p.stats.hold(alloc)
	s := span{off: ra.df.Size - n, b: p.pool.get(int(n))}
	if !p.read(ra, s) {
		return s, false
	}
	return s, true
}

// dropFooter gives back the end read of a file whose footer is not used.
func (p *prefetcher) dropFooter(ra *readAhead, tail span) (span, bool) {
	if tail.b != nil {
		p.pool.put(tail.b)
	}
	p.stats.hold(-ra.footerMem)
	p.footers.Release(ra.footerMem)
	ra.footerMem = 0
	return span{}, false
}

// read fills s from the file, reporting whether all of it was read.
func (p *prefetcher) read(ra *readAhead, s span) bool {
	start := time.Now()
	k, err := ra.file.ReadAt(s.b, s.off)
	ra.readTime += time.Since(start)
	return k == len(s.b) && (err == nil || err == io.EOF)
}

// readRange is a range of a file to read: [off, end).
type readRange struct{ off, end int64 }

// plan returns the byte ranges the worker's chunkReader.Fetch calls will
// read of the file whose footer is md, left of tailOff (the end read with
// the footer holds the rest), merged where they touch, in file order.
func (p *prefetcher) plan(md *metadata.FileMetaData, tailOff int64) []readRange {
	leaves, err := leafColumns(md.Schema, p.nameMapping)
	if err != nil {
		return nil // the worker fails the file
	}
	var ranges []readRange
	for _, col := range p.cols {
		leaf, ok := leaves[col.Field.ID]
		if !ok {
			continue
		}
		if _, err := hashing.NewColumn(col.Type, md.Schema.Column(leaf)); err != nil {
			continue // the worker reads nothing of the column
		}
		for rg := range md.NumRowGroups() {
			cc, err := md.RowGroup(rg).ColumnChunk(leaf)
			if err != nil {
				continue
			}
			start, size, ok := fetchRange(cc, !p.noDictShortcut && dictionaryOnly(cc), p.bufferSize)
			if end := min(start+size, tailOff); ok && end > start {
				ranges = append(ranges, readRange{start, end})
			}
		}
	}
	slices.SortFunc(ranges, func(a, b readRange) int { return cmp.Compare(a.off, b.off) })
	var merged []readRange
	for _, r := range ranges {
		if k := len(merged) - 1; k >= 0 && r.off <= merged[k].end && max(r.end, merged[k].end)-merged[k].off <= maxFetch {
			merged[k].end = max(merged[k].end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// readChunks reads the planned ranges, at once, as much of them as the
// chunks' bound holds for one file; a range that does not fit, or whose
// read fails, is left to the worker.
func (p *prefetcher) readChunks(ctx context.Context, ra *readAhead, plan []readRange) {
	var take []readRange
	var mem int64
	for _, r := range plan {
		if a := allocSize(r.end - r.off); mem+a <= p.chunkCap {
			take, mem = append(take, r), mem+a
		}
	}
	if p.stats != nil {
		p.stats.left.Add(int64(len(plan) - len(take)))
		p.stats.ahead.Add(int64(len(take)))
	}
	if len(take) == 0 || p.chunks.Acquire(ctx, mem) != nil {
		return
	}
	ra.chunkMem = mem
	p.stats.hold(mem)
	got := make([]span, len(take))
	times := make([]time.Duration, len(take))
	read := func(i int) {
		r := take[i]
		s := span{off: r.off, b: p.pool.get(int(r.end - r.off))}
		start := time.Now()
		k, err := ra.file.ReadAt(s.b, s.off)
		times[i] = time.Since(start)
		if k == len(s.b) && (err == nil || err == io.EOF) {
			got[i] = s
		} else {
			p.pool.put(s.b)
		}
	}
	if len(take) == 1 {
		read(0) // most files: no goroutine to start and wait for
	} else {
		var wg sync.WaitGroup
		for i := range take {
			wg.Add(1)
			go func() {
				defer wg.Done()
				read(i)
			}()
		}
		wg.Wait()
	}
	for i, s := range got {
		ra.readTime += times[i]
		if s.b != nil {
			ra.spans = append(ra.spans, s)
		}
	}
	slices.SortFunc(ra.spans, func(a, b span) int { return cmp.Compare(a.off, b.off) })
}

// allocSize is the memory a buffer of n bytes from the pool takes.
func allocSize(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n > pooledMax {
		return n
	}
	return 1 << sizeClass(int(n))
}

// bytePool recycles the prefetcher's buffers by power-of-two capacity, up
// to pooledMax, keeping at most max bytes free: without it every file read
// ahead would be garbage. A sync.Pool would not do: it is emptied at every
// garbage collection, and a build collects often, so nearly every read
// ahead made (and cleared) a fresh buffer.
type bytePool struct {
	mu   sync.Mutex
	free [21][][]byte
	kept int64 // bytes in free
	max  int64
}

func (p *bytePool) get(n int) []byte {
	if n > pooledMax {
		return make([]byte, n)
	}
	c := sizeClass(n)
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		p.kept -= int64(cap(b))
		p.mu.Unlock()
		return b[:n] // every byte is read into before it is used
	}
	p.mu.Unlock()
	return make([]byte, n, 1<<c)
}

func (p *bytePool) put(b []byte) {
	c := cap(b)
	if c == 0 || c > pooledMax || c&(c-1) != 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kept+int64(c) <= p.max {
		p.free[sizeClass(c)] = append(p.free[sizeClass(c)], b[:0])
		p.kept += int64(c)
	}
}

// requestGate bounds the requests in flight: a token per request.
type requestGate chan struct{}

func (g requestGate) acquire(ctx context.Context) error {
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g requestGate) release() { <-g }

// gatedIO is the run's storage with every call that may be a request —
// Open (iceberg-go's object storage sends a GET), ReadAt, Read, Seek and
// Stat (a HEAD) — holding a token of the gate while it runs.
type gatedIO struct {
	icebergio.IO
	gate requestGate
	ctx  context.Context
}

func (g gatedIO) Open(name string) (icebergio.File, error) {
	if err := g.gate.acquire(g.ctx); err != nil {
		return nil, err
	}
	defer g.gate.release()
	f, err := g.IO.Open(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{File: f, g: g}, nil
}

type gatedFile struct {
	icebergio.File
	g gatedIO
}

func (f gatedFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.g.gate.acquire(f.g.ctx); err != nil {
		return 0, err
	}
	defer f.g.gate.release()
	return f.File.ReadAt(p, off)
}

func (f gatedFile) Read(p []byte) (int, error) {
	if err := f.g.gate.acquire(f.g.ctx); err != nil {
		return 0, err
	}
	defer f.g.gate.release()
	return f.File.Read(p)
}

func (f gatedFile) Seek(offset int64, whence int) (int64, error) {
	if err := f.g.gate.acquire(f.g.ctx); err != nil {
		return 0, err
	}
	defer f.g.gate.release()
	return f.File.Seek(offset, whence)
}

func (f gatedFile) Stat() (iofs.FileInfo, error) {
	if err := f.g.gate.acquire(f.g.ctx); err != nil {
		return nil, err
	}
	defer f.g.gate.release()
	return f.File.Stat()
}
