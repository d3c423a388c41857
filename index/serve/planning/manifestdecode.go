package planning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebloom/icebloom/index/serve/planning/internal/manifestdec"
)

// A manifest's set is made by icebloom's own manifest decoder
// (internal/manifestdec), which reads only what a set holds — the scan
// task's fields of each live data file and the statistics of the set's
// columns — and hands it to the set builder without making iceberg-go's
// DataFile and its maps: a cold plan of a large table spends most of its
// time decoding manifests, and iceberg-go's decoding of a file costs some
// eighty allocations. What the decoder does not read as iceberg-go does
// (manifestdec.ErrUnsupported: an unknown codec or schema shape, a value
// iceberg-go converts in a way of its own) is decoded by iceberg-go
// (manifestSetIceberg), so the set is the same either way
// (TestManifestSetDecodersAgree).

// manifestDecodes and manifestFallbacks count the manifests decoded by
// icebloom's decoder and those decoded by iceberg-go because icebloom's
// did not read them, for tests.
var manifestDecodes, manifestFallbacks atomic.Int64

// manifestSet decodes the live data files of one data manifest into a
// set with the statistics of fields.
func manifestSet(ctx context.Context, fsys icebergio.IO, m iceberg.ManifestFile, schema *iceberg.Schema, fields []int) (*fileSet, error) {
	set, err := decodeManifestSet(ctx, fsys, m, schema, fields)
	if errors.Is(err, manifestdec.ErrUnsupported) {
		manifestFallbacks.Add(1)
		return manifestSetIceberg(ctx, fsys, m, schema, fields)
	}
	if err == nil {
		manifestDecodes.Add(1)
	}
	return set, err
}

// decodeManifestSet is manifestSet with icebloom's decoder; an error
// wrapping manifestdec.ErrUnsupported says to decode m with iceberg-go.
func decodeManifestSet(ctx context.Context, fsys icebergio.IO, m iceberg.ManifestFile, schema *iceberg.Schema, fields []int) (_ *fileSet, err error) {
	defer func() { // a decoder's bug on a hostile file is that manifest's error, not the server's end
		if p := recover(); p != nil {
			err = fmt.Errorf("manifest %s: decoder failed: %v", m.FilePath(), p)
		}
	}()
	data, err := readManifest(fsys, m.FilePath())
	if err != nil {
		return nil, err
	}
	sb := newSetBuilder(schema, fields, max(0, int(m.AddedDataFiles())+int(m.ExistingDataFiles())))
	ids := make([]int, len(sb.fields))
	for i, f := range sb.fields {
		ids[i] = f.ID
	}
	md, err := manifestdec.Open(data, m, ids)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
	}
	// First row ids are inherited as iceberg-go's ManifestReader does:
	// from the manifest list's first_row_id, by each live file without
	// one, advancing by its record count.
	inherit := m.FirstRowID() != nil
	var next int64
	if inherit {
		if next = *m.FirstRowID(); next < 0 {
			return nil, fmt.Errorf("manifest %s: %w: first row id %d", m.FilePath(), manifestdec.ErrUnsupported, next)
		}
	}
	feed := func(blk *manifestdec.Block) error {
		n := len(ids)
		for k := range blk.Entries {
			e := &blk.Entries[k]
			var firstRowID *int64
			switch {
			case e.HasFirstRowID:
				firstRowID = &e.FirstRowID
			case inherit:
				if e.Records < 0 || e.Records > math.MaxInt64-next {
					return fmt.Errorf("%w: cannot inherit a first row id for %s", manifestdec.ErrUnsupported, e.Path)
				}
				id := next
				next += e.Records
				firstRowID = &id
			}
			sb.row(e.Path, e.Size, e.Records, m.PartitionSpecID(), e.Format, e.Partition,
				fileExtra{keyMetadata: e.KeyMetadata, splits: e.SplitOffsets, sortOrder: e.SortOrderID}, firstRowID)
			for j, st := range sb.stats {
				st.add(&blk.Stats[k*n+j])
			}
		}
		return nil
	}
	if err = decodeBlocks(ctx, md, feed); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
	}
	return sb.finish(), nil
}

// parallelBlocks is the fewest blocks a manifest has for them to be
// decoded by several goroutines: a manifest of fewer (Java's and
// iceberg-go's writers make blocks of 64 KiB to 1 MiB) is decoded whole
// in less time than that would save.
const parallelBlocks = 4

// decodeBlocks decodes md's blocks and feeds each to feed, in order. A
// manifest of many blocks is decompressed and decoded by several
// goroutines (GOMAXPROCS, at most 4), a few blocks ahead of feed, which
// adds their files to the set one after another: the first large manifest
// of a table is often alone, while the rest of a plan decodes several
// manifests at once.
func decodeBlocks(ctx context.Context, md *manifestdec.Manifest, feed func(*manifestdec.Block) error) error {
	n := md.Blocks()
	workers := min(runtime.GOMAXPROCS(0), 4)
	if n < parallelBlocks || workers < 2 {
		dec := md.NewDecoder()
		var blk manifestdec.Block
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := dec.Decode(i, &blk); err != nil {
				return err
			}
			if err := feed(&blk); err != nil {
				return err
			}
		}
		return nil
	}
	// Blocks in flight are bounded by buffers: a worker takes a buffer,
	// then the next block's number, so the buffers taken are always those
	// of the blocks next to be fed, and the block fed next is being
	// decoded or waits for a free buffer that its feeding will not hold.
	type decoded struct {
		blk *manifestdec.Block
		err error
	}
	free := make(chan *manifestdec.Block, 2*workers)
	for range cap(free) {
		free <- new(manifestdec.Block)
	}
	results := make([]chan decoded, n)
	for i := range results {
		results[i] = make(chan decoded, 1)
	}
	done := make(chan struct{})
	defer close(done)
	var next atomic.Int64
	for range workers {
		go func() {
			dec := md.NewDecoder()
			for {
				var blk *manifestdec.Block
				select {
				case blk = <-free:
				case <-done:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				results[i] <- decoded{blk, dec.Decode(i, blk)}
			}
		}()
	}
	for i := range n {
		var r decoded
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
		if err := feed(r.blk); err != nil {
			return err
		}
		free <- r.blk
	}
	return nil
}

// readManifest reads a manifest whole.
func readManifest(fsys icebergio.IO, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	defer f.Close()
	var data []byte
	if info, err := f.Stat(); err == nil && info.Size() > 0 && info.Size() < 1<<31 {
		data = make([]byte, 0, info.Size()+1) // one more, so ReadAll sees the end without growing
	}
	for {
		if len(data) == cap(data) {
			data = slices.Grow(data, max(512, len(data)))
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", path, err)
		}
	}
}
