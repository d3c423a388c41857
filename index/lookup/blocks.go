package lookup

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebloom/icebloom/index/sbbf"
)

// probe is the check of one hash against the one block of an entry's bitset
// it falls in (docs/format.md §3.1).
type probe struct {
	path    string // of the statistics file
	offset  int64  // of the block in the file
	hash    uint64
	done    bool // the block was read, or could not be (then present)
	present bool // the block may hold the hash
}

const (
	// maxGap is the largest gap between blocks that one read spans: on
	// object storage a request costs far more than a few KiB more of it.
	maxGap = 4 << 10
	// maxRead bounds one read, so that spanning gaps never turns into
	// fetching a whole large statistics file.
	maxRead = 1 << 20
	// readConcurrency bounds how many statistics files are read at once.
	readConcurrency = 8
)

// blockStats counts the index I/O of a lookup.
type blockStats struct {
	blocks, bytes int64
	errs          []error
}

func (s *blockStats) add(o blockStats) {
	s.blocks += o.blocks
	s.bytes += o.bytes
	s.errs = append(s.errs, o.errs...)
}

// readBlocks answers every probe, reading the statistics files in parallel.
// A block that cannot be read answers present, which keeps its data file.
func readBlocks(fsys icebergio.IO, probes []*probe) blockStats {
	byPath := make(map[string][]*probe)
	for _, p := range probes {
		byPath[p.path] = append(byPath[p.path], p)
	}
	var (
		total blockStats
		mu    sync.Mutex
		wg    sync.WaitGroup
		sem   = make(chan struct{}, readConcurrency)
	)
	for _, path := range slices.Sorted(maps.Keys(byPath)) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s := readFile(fsys, path, byPath[path])
			mu.Lock()
			defer mu.Unlock()
			total.add(s)
		})
	}
	wg.Wait()
	return total
}

// readFile answers the probes of one statistics file: sorted by offset, the
// blocks are coalesced into ranges (see maxGap and maxRead), each read with
// one ReadAt.
func readFile(fsys icebergio.IO, path string, probes []*probe) blockStats {
	var s blockStats
	f, err := fsys.Open(path)
	if err != nil {
		answerUnread(probes)
		s.errs = append(s.errs, fmt.Errorf("lookup: open statistics file %s: %w", path, err))
		return s
	}
	defer f.Close()

	byOffset := func(a, b *probe) int { return cmp.Compare(a.offset, b.offset) }
	if !slices.IsSortedFunc(probes, byOffset) { // they mostly come in file order
		slices.SortFunc(probes, byOffset)
	}
	for len(probes) > 0 {
		start, end, n := probes[0].offset, probes[0].offset+sbbf.BlockBytes, 1
		s.blocks++
		for ; n < len(probes); n++ {
			off := probes[n].offset
			if off >= end && (off-end >= maxGap || off+sbbf.BlockBytes-start > maxRead) {
				break
			}
			if off != probes[n-1].offset {
				s.blocks++
			}
			end = max(end, off+sbbf.BlockBytes)
		}
		rng := probes[:n]
		probes = probes[n:]

		buf := make([]byte, end-start)
		s.bytes += int64(len(buf))
		if _, err := io.ReadFull(io.NewSectionReader(f, start, end-start), buf); err != nil {
			answerUnread(rng)
			s.errs = append(s.errs, fmt.Errorf("lookup: read index blocks of %s at offset %d (%d bytes): %w", path, start, len(buf), err))
			continue
		}
		for _, p := range rng {
			p.present = sbbf.CheckBlock(buf[p.offset-start:][:sbbf.BlockBytes], p.hash)
			p.done = true
		}
	}
	return s
}

// answerUnread answers probes whose blocks could not be read: maybe.
func answerUnread(probes []*probe) {
	for _, p := range probes {
		p.present, p.done = true, true
	}
}
