package lookup

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebloom/icebloom/index/sbbf"
)

// TestReadBlocks checks how probes become reads: sorted, the same block
// read once, blocks less than maxGap apart read together, no read longer
// than maxRead, and a block past the end of the file answering present with
// an error.
func TestReadBlocks(t *testing.T) {
	const size = 6 << 20
	const h = 0x9e3779b97f4a7c15
	data := make([]byte, size)
	holding := sbbf.New(1)
	holding.Insert(h)
	copy(data[4064:], holding.Bytes()) // one block holds h, the others are empty

	mem := icebergio.NewMemFS()
	if err := mem.WriteFile("stats.puffin", data); err != nil {
		t.Fatal(err)
	}
	counting := &countingIO{IO: mem}
	offsets := []int64{4064, 0, 32, 32, 10000}
	var wantReads []readAt
	wantReads = append(wantReads, readAt{"stats.puffin", 0, 4096}, readAt{"stats.puffin", 10000, 32})
	// A run of blocks 4000 bytes apart: coalesced up to maxRead.
	run := int64(20000)
	for off := run; off < run+maxRead+8000; off += 4000 {
		offsets = append(offsets, off)
	}
	last := offsets[len(offsets)-1]
	firstEnd := run + (maxRead-sbbf.BlockBytes)/4000*4000 + sbbf.BlockBytes
	wantReads = append(wantReads, readAt{"stats.puffin", run, firstEnd - run}, readAt{"stats.puffin", firstEnd - sbbf.BlockBytes + 4000, last + sbbf.BlockBytes - (firstEnd - sbbf.BlockBytes + 4000)})
	offsets = append(offsets, size-16) // past the end
	wantReads = append(wantReads, readAt{"stats.puffin", size - 16, 32})

	var probes []*probe
	for _, off := range offsets {
		probes = append(probes, &probe{path: "stats.puffin", offset: off, length: sbbf.BlockBytes, hash: h})
	}
	probes = append(probes, &probe{path: "missing.puffin", offset: 0, length: sbbf.BlockBytes, hash: h})
	s := readBlocks(context.Background(), counting, slices.Clone(probes))

	reads := counting.take()
	slices.SortFunc(reads, func(a, b readAt) int { return cmp.Compare(a.off, b.off) }) // issued concurrently
	if !slices.Equal(reads, wantReads) {
		t.Errorf("reads\n%v, want\n%v", reads, wantReads)
	}
	var bytes int64 // the failed read counts too
	for _, r := range wantReads {
		bytes += r.len
	}
	if s.blocks != int64(len(offsets)-1) || s.bytes != bytes || s.requests != int64(len(wantReads)) {
		t.Errorf("%d blocks, %d bytes, %d requests; want %d, %d, %d", s.blocks, s.bytes, s.requests, len(offsets)-1, bytes, len(wantReads))
	}
	if len(s.errs) != 2 || !strings.Contains(s.errs[0].Error()+s.errs[1].Error(), "missing.puffin") {
		t.Errorf("errors %v, want one for the missing file and one for the short read", s.errs)
	}
	for _, p := range probes {
		unreadable := p.path == "missing.puffin" || p.offset == size-16
		if !p.done || p.present != (p.offset == 4064 || unreadable) {
			t.Errorf("probe at %s:%d: done %v, present %v", p.path, p.offset, p.done, p.present)
		}
	}
}

// panickingFile panics on every read, as a broken storage client might.
type panickingFile struct{ icebergio.File }

func (panickingFile) ReadAt([]byte, int64) (int, error) { panic("storage client bug") }

// TestReadSpanRecoversAPanic: a panic reading index blocks in a worker is
// the span's error, and its probes answer "maybe" (their files stay
// candidates): no panic ends the process.
func TestReadSpanRecoversAPanic(t *testing.T) {
	p := &probe{path: "stats.puffin"}
	sp := span{file: panickingFile{}, path: "stats.puffin", start: 0, end: 32, probes: []*probe{p}}
	s := readSpanSafely(context.Background(), &sp)
	if len(s.errs) != 1 || !strings.Contains(s.errs[0].Error(), "internal error: storage client bug") || !p.done || !p.present {
		t.Fatalf("errors %v, probe %+v", s.errs, p)
	}
}
