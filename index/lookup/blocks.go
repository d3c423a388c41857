package lookup

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// probe is the check of one hash against the one block of a filter it falls
// in (docs/format.md §3.1). It is kept small (a lookup makes one per file
// and value): the unit read for the block is located by offset and length,
// and a v2 chunk's checksum is derived from its filter when it is verified.
type probe struct {
	path   string // of the statistics file
	offset int64  // of the unit read: a v2 chunk and its checksum, or a v1 block
	length int32  // of the unit
	inUnit int32  // where the block lies in the unit
	hash   uint64
	// chunkOf is the v2 filter whose chunk the unit is, and block the
	// filter's block in it; nil for a v1 block, which has no checksum.
	chunkOf *index.StoredFilter
	block   int32
	done    bool // the block was read, or could not be (then present)
	present bool // the block may hold the hash
}

// newProbe returns the probe of hash in block b of flt.
func newProbe(flt *index.StoredFilter, b int, hash uint64) probe {
	pl := flt.Place(b)
	p := probe{path: flt.Path, offset: pl.Offset, length: int32(pl.Length), inUnit: int32(pl.Block), hash: hash}
	if pl.Checked {
		p.chunkOf, p.block = flt, int32(b)
	}
	return p
}

const (
	// maxGap is the largest gap between blocks that one read spans: on
	// object storage a request costs far more than a few KiB more of it.
	maxGap = 4 << 10
	// maxRead bounds one read, so that spanning gaps never turns into
	// fetching a whole large statistics file; a v2 run (at most
	// segment.MaxGroupMembers blocks and their checksums) fits in one.
	maxRead = 4 << 20
	// readConcurrency bounds the reads in flight, over all statistics
	// files: enough to hide object-store latency.
	readConcurrency = 32
)

// blockStats counts the index I/O of a lookup.
type blockStats struct {
	blocks, bytes, requests int64
	errs                    []error
}

func (s *blockStats) add(o blockStats) {
	s.blocks += o.blocks
	s.bytes += o.bytes
	s.requests += o.requests
	s.errs = append(s.errs, o.errs...)
}

// span is one read: the probes it answers, sorted by place, whose places
// lie in [start, end) of the file.
type span struct {
	file       icebergio.File
	path       string
	start, end int64
	probes     []*probe
}

// readBlocks answers every probe: the places of each statistics file are
// coalesced into reads (see maxGap and maxRead), and all reads, of all
// files, are issued concurrently. A v2 chunk is verified against its
// checksum before any of its blocks is trusted. A block that cannot be read
// or verified answers present, which keeps its data file, and is reported.
func readBlocks(ctx context.Context, fsys icebergio.IO, probes []*probe) blockStats {
	// By file and offset: a lookup's probes mostly come so already, from
	// files evaluated in the order of their filters in the index (Memo).
	byPlace := func(a, b *probe) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return cmp.Compare(a.offset, b.offset)
	}
	if !slices.IsSortedFunc(probes, byPlace) {
		slices.SortFunc(probes, byPlace)
	}
	var (
		total blockStats
		spans []span
	)
	for len(probes) > 0 {
		path, n := probes[0].path, 1
		for n < len(probes) && probes[n].path == path {
			n++
		}
		ps := probes[:n]
		probes = probes[n:]
		f, err := fsys.Open(path)
		if err != nil {
			answerUnread(ps)
			total.errs = append(total.errs, fmt.Errorf("lookup: open statistics file %s: %w", path, err))
			continue
		}
		defer f.Close()
		spans = appendSpans(spans, f, path, ps)
	}
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(readConcurrency)
	for i := range spans {
		g.Go(func() error {
			s := readSpanSafely(ctx, &spans[i])
			mu.Lock()
			defer mu.Unlock()
			total.add(s)
			return nil
		})
	}
	g.Wait()
	return total
}

// appendSpans cuts the probes of one file, sorted by offset, into reads.
func appendSpans(spans []span, f icebergio.File, path string, probes []*probe) []span {
	for len(probes) > 0 {
		start := probes[0].offset
		end := start + int64(probes[0].length)
		n := 1
		for ; n < len(probes); n++ {
			off, length := probes[n].offset, int64(probes[n].length)
			if off >= end && (off-end >= maxGap || off+length-start > maxRead) {
				break
			}
			end = max(end, off+length)
		}
		spans = append(spans, span{file: f, path: path, start: start, end: end, probes: probes[:n]})
		probes = probes[n:]
	}
	return spans
}

// readSpan reads one span and answers its probes.
// readSpanSafely is readSpan with a panic (a storage client's, a decoder's)
// turned into the span's error: its probes answer "maybe", so their files
// stay candidates, and the process lives on.
func readSpanSafely(ctx context.Context, sp *span) (s blockStats) {
	defer func() {
		if r := recover(); r != nil {
			answerUnread(sp.probes)
			s.errs = append(s.errs, fmt.Errorf("lookup: read index blocks of %s: internal error: %v", sp.path, r))
		}
	}()
	return readSpan(ctx, sp)
}

func readSpan(ctx context.Context, sp *span) blockStats {
	s := blockStats{requests: 1, bytes: sp.end - sp.start}
	if err := ctx.Err(); err != nil {
		answerUnread(sp.probes)
		s.errs = append(s.errs, fmt.Errorf("lookup: read index blocks of %s: %w", sp.path, err))
		return s
	}
	buf := make([]byte, sp.end-sp.start)
	if _, err := io.ReadFull(io.NewSectionReader(sp.file, sp.start, sp.end-sp.start), buf); err != nil {
		answerUnread(sp.probes)
		s.errs = append(s.errs, fmt.Errorf("lookup: read index blocks of %s at offset %d (%d bytes): %w", sp.path, sp.start, len(buf), err))
		return s
	}
	// Probes of one chunk come together: each chunk is verified once.
	for i := 0; i < len(sp.probes); {
		first := sp.probes[i]
		j := i + 1
		for j < len(sp.probes) && sp.probes[j].offset == first.offset {
			j++
		}
		unit := buf[first.offset-sp.start:][:first.length]
		if first.chunkOf != nil && !first.chunkOf.Place(int(first.block)).Check.Verify(unit) {
			answerUnread(sp.probes[i:j])
			s.errs = append(s.errs, fmt.Errorf("lookup: index chunk of %d bytes at offset %d of %s: %w", first.length, first.offset, sp.path, segment.ErrChecksum))
			i = j
			continue
		}
		for _, p := range sp.probes[i:j] { // of members of one chunk
			p.present = sbbf.CheckBlock(unit[p.inUnit:][:sbbf.BlockBytes], p.hash)
			p.done = true
		}
		s.blocks += int64(j - i)
		i = j
	}
	return s
}

// answerUnread answers probes whose blocks could not be read: maybe.
func answerUnread(probes []*probe) {
	for _, p := range probes {
		p.present, p.done = true, true
	}
}
