package lookup

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// The columnar prober is PruneFiles's way through the index for the
// filters a server's fast path sends it: an AND of tests (col = v, col IN
// (…)) over files held in columns, all of whose filters are in version 2
// groups. The general evaluation (eval.go, blocks.go) makes a check and a
// probe per file and value, about 200 ns a file; a lookup of a new value
// over 100,000 files and more spends most of its time there. Here the
// memo keeps, per field, each group's files by member (8 bytes a file, not
// a 120-byte StoredFilter), and a lookup walks each group once per value:
// the value's block is the same for every member of a group, its members'
// blocks lie side by side in one run, so each chunk of the run that holds
// a live file is read and verified once, and each file costs one bit test.

// columnIndex is one field's filters for the files of a Files.
type columnIndex struct {
	groups []columnGroup
	// indexed says which files have a filter of the field (in a group);
	// v1 is set when some file's applicable filter is a version 1 entry,
	// which the columnar prober does not read.
	indexed []bool
	v1      bool
}

// columnGroup is a v2 group holding filters of the files, and those files
// by member. It keeps what a lookup reads of the group, not the group:
// that would keep the index's whole directory decoded, its members and
// data file locations (87 MB at 1,000,000 files), which only matching
// needs.
type columnGroup struct {
	layout    segment.Layout
	valueType iceberg.PrimitiveType
	path      string // of the statistics file
	files     []memberFile
}

// memberFile is a member of a group and the file (index in Files) it is
// the filter of.
type memberFile struct{ member, file int32 }

// columns returns the column indexes of fields for files, matching the
// index once for the fields not matched yet (its first applicable filter
// for a file and field wins, as Lookup's does), or carrying them over from
// the memo Carry named.
func (m *Memo) columns(ix *index.TableIndex, files *filelist.List, fields []int) map[int]*columnIndex {
	if m == nil {
		return matchColumns(ix, files, fields)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// A map returned is read by its lookups without the lock: a change
	// makes a new one.
	if m.cols == nil || m.colsIx != ix || m.colsFiles != files {
		prev, prevIx, prevFiles := m.cols, m.colsIx, m.colsFiles
		m.cols, m.colsIx, m.colsFiles = map[int]*columnIndex{}, ix, files
		switch c := m.carry; {
		case c != nil && c.files == files && ix.Extends(c.ix):
			for id, col := range c.cols {
				m.cols[id] = carryColumn(col, c.moves, files.Len())
			}
			extendColumns(ix, len(c.ix.Segments()), files, m.cols)
		case prev != nil && prevFiles == files && ix.Extends(prevIx):
			// The index gained segments (a sync indexed new files): the
			// files keep their filters, and those without one are matched
			// against the new segments alone. Matched whole again, the
			// first plan after a sync of 1,000,000 files took 4.7 times a
			// warm one.
			for id, col := range prev {
				m.cols[id] = sharedColumn(col, files.Len())
			}
			extendColumns(ix, len(prevIx.Segments()), files, m.cols)
		}
		m.carry = nil
	}
	var missing []int
	for _, id := range fields {
		if m.cols[id] == nil && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		m.fullMatches++
		cols := maps.Clone(m.cols)
		for id, c := range matchColumns(ix, files, missing) {
			cols[id] = c
		}
		m.cols = cols
	}
	return m.cols
}

// RowMove says that rows [From, From+N) of one Files are rows [To, To+N)
// of another.
type RowMove struct{ From, To, N int }

// carried is what a Memo starts from (Memo.Carry).
type carried struct {
	cols  map[int]*columnIndex
	ix    *index.TableIndex
	files *filelist.List
	moves []RowMove
}

// Carry makes m, the memo of files, start from what prev, the memo of
// prevFiles, matched: the files moves takes from prevFiles keep their
// filters, and the others are matched against the segments the index
// gained since, alone, as long as it only gained some (TableIndex.Extends;
// otherwise m matches the whole index, as a new memo does). A server that
// makes a table version's plan from the last version's (a commit added a
// manifest and the index a segment) calls it before the new plan's first
// lookup: matching 1,000,000 files again costs more than the lookup.
func (m *Memo) Carry(prev *Memo, prevFiles, files *filelist.List, moves []RowMove) {
	prev.mu.Lock()
	c := &carried{cols: prev.cols, ix: prev.colsIx, files: files, moves: moves}
	ok := prev.colsFiles == prevFiles && prev.cols != nil
	prev.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok {
		m.carry = c
	}
}

// carryColumn returns col, a column index of other files, for n files
// of which moves says which were col's.
func carryColumn(col *columnIndex, moves []RowMove, n int) *columnIndex {
	if len(moves) == 1 && moves[0] == (RowMove{N: len(col.indexed)}) && n >= len(col.indexed) {
		return sharedColumn(col, n) // every file stays where it was (an append)
	}
	to := make([]int32, len(col.indexed))
	for i := range to {
		to[i] = -1
	}
	for _, mv := range moves {
		for k := range mv.N {
			to[mv.From+k] = int32(mv.To + k)
		}
	}
	out := &columnIndex{indexed: make([]bool, n), v1: col.v1}
	for _, g := range col.groups {
		files := make([]memberFile, 0, len(g.files))
		for _, mf := range g.files {
			if f := to[mf.file]; f >= 0 {
				files = append(files, memberFile{mf.member, f})
				out.indexed[f] = true
			}
		}
		if len(files) > 0 {
			out.groups = append(out.groups, columnGroup{layout: g.layout, valueType: g.valueType, path: g.path, files: slices.Clip(files)})
		}
	}
	return out
}

// sharedColumn returns col for n files whose first are col's, where they
// were: its groups shared (extendColumns changes only the groups it adds
// to the slice, which is copied), which files have a filter copied.
func sharedColumn(col *columnIndex, n int) *columnIndex {
	indexed := make([]bool, n)
	copy(indexed, col.indexed)
	return &columnIndex{groups: slices.Clone(col.groups), indexed: indexed, v1: col.v1}
}

// matchColumns matches the index's filters of fields to files.
func matchColumns(ix *index.TableIndex, files *filelist.List, fields []int) map[int]*columnIndex {
	cols := map[int]*columnIndex{}
	for _, id := range fields {
		cols[id] = &columnIndex{indexed: make([]bool, files.Len())}
	}
	extendColumns(ix, 0, files, cols)
	return cols
}

// extendColumns matches the files of cols without a filter of some field
// against the segments of ix from the first-th on (the first one met for a
// file and field wins, as Lookup's does).
func extendColumns(ix *index.TableIndex, first int, files *filelist.List, cols map[int]*columnIndex) {
	if first >= len(ix.Segments()) || len(cols) == 0 {
		return
	}
	var fields []int
	var indexed [][]bool
	seen := map[int][]bool{} // by field, of files
	for id, c := range cols {
		fields = append(fields, id)
		indexed = append(indexed, c.indexed)
		seen[id] = make([]bool, files.Len())
	}
	unmatched := func(i int) bool { // by some field: only those are looked for
		for _, ind := range indexed {
			if !ind[i] {
				return true
			}
		}
		return false
	}
	groupOf := map[*segment.Group]int{}
	gained := map[*columnIndex][]int{} // the groups each column gained
	ix.MatchGroups(first, filelist.NewIndex(files, unmatched).Find, fields, func(i int, ref index.FilterRef) {
		id := ref.FieldID()
		c, seen := cols[id], seen[id]
		if c.indexed[i] || seen[i] {
			return
		}
		seen[i] = true
		g, member := ref.Group()
		if g == nil {
			c.v1 = true
			return
		}
		gi, ok := groupOf[g]
		if !ok {
			gi = len(c.groups)
			groupOf[g] = gi
			c.groups = append(c.groups, columnGroup{layout: g.Layout(), valueType: g.ValueType, path: ref.StatisticsPath()})
			gained[c] = append(gained[c], gi)
		}
		c.groups[gi].files = append(c.groups[gi].files, memberFile{int32(member), int32(i)})
		c.indexed[i] = true
	})
	for c, gis := range gained {
		for _, gi := range gis {
			fs := c.groups[gi].files
			slices.SortFunc(fs, func(a, b memberFile) int { return cmp.Compare(a.member, b.member) })
			c.groups[gi].files = slices.Clone(fs) // exactly sized: appending left up to twice the room
		}
	}
}

// conjunction returns the tests of f when its root is one test or an AND
// of tests, the shape the columnar prober evaluates; ok is false else.
func conjunction(f *predicate) (tests []*test, ok bool) {
	switch f.root.kind {
	case testNode:
		return []*test{f.root.test}, true
	case andNode:
		for _, kid := range f.root.kids {
			if kid.kind != testNode {
				return nil, false
			}
			tests = append(tests, kid.test)
		}
		return tests, true
	}
	return nil, false
}

// columnar is one lookup of the columnar prober.
type columnar struct {
	fsys      icebergio.IO
	alive     []bool // files not ruled out so far
	hit       []bool // files the current test keeps: a value may be present
	units     []chunkUnit
	unitBytes int64
	// batch is how many bytes of chunks are read before they are checked
	// (columnarWork), and maxRead bounds one read of them: a small batch
	// is still read in readsPerBatch reads at once, not one after another.
	batch, maxRead int64
	buf            []byte // the last batch's reads, reused by the next
	blockStats
}

// readsPerBatch is how many reads at once a batch is cut into where it is
// smaller than maxRead that many times (each read at least minBatchBytes),
// so that on object storage a lookup bounded to small batches waits for
// about as many round trips as with large ones.
const readsPerBatch = 8

// chunkUnit is one chunk to read and verify, the hash to check in it, and
// the group files (columnGroup.files[first:end]) whose blocks it holds.
type chunkUnit struct {
	path       string
	chunk      segment.Chunk
	hash       uint64
	group      *columnGroup
	first, end int32
}

// columnarBatchBytes bounds the chunks a lookup reads before it checks
// them: an IN of many values over many files reads in batches, so its
// buffers do not grow with files × values.
var columnarBatchBytes int64 = 8 << 20 // a variable for tests

// minBatchBytes is the smallest batch a lookup bounded by
// Options.MaxWorkBytes reads in.
const minBatchBytes = 64 << 10

// columnarWork is the memory the columnar prober works in for a lookup of
// files data files, within most bytes (0: no bound): two flags a file, and
// the chunks one batch reads with the gaps its reads span. The batch is
// columnarBatchBytes, less for few files and values, and less where most
// bounds the whole (at least minBatchBytes): at 1,000,000 files a value's
// chunks are 32 MB, and 8 MiB batches made each lookup reserve 18 MiB,
// more than a quarter of the 64 MiB plans of a 256 MiB budget work in,
// which the budget takes one at a time (16 clients: 408 refusals in 30 s).
func columnarWork(files int, tests []*test, most int64) (work, batch int64) {
	values := 0
	for _, t := range tests {
		values = max(values, len(t.values))
	}
	chunks := int64(files) * int64(values) * (sbbf.BlockBytes + segment.ChecksumBytes)
	fixed := 2*int64(files) + 64<<10
	batch = columnarBatchBytes
	if most > 0 {
		batch = max(min(batch, (most-fixed)/2), min(batch, minBatchBytes))
	}
	return fixed + 2*min(chunks, batch), batch
}

// pruneColumns evaluates the conjunction tests for the files alive marks
// (all of them when nil), with the column indexes cols, and returns which
// survive. Problems are reported in the returned stats, and keep the files
// they concern.
func pruneColumns(ctx context.Context, fsys icebergio.IO, n int, alive []bool, tests []*test, cols map[int]*columnIndex, batch int64) ([]bool, blockStats, error) {
	c := &columnar{fsys: fsys, alive: make([]bool, n), hit: make([]bool, n), batch: batch,
		maxRead: min(maxRead, max(batch/readsPerBatch, minBatchBytes))}
	if alive == nil {
		for i := range c.alive {
			c.alive[i] = true
		}
	} else {
		copy(c.alive, alive)
	}
	// The test of fewest values first: it reads least, and the others
	// read only for the files it keeps.
	tests = slices.Clone(tests)
	slices.SortStableFunc(tests, func(a, b *test) int { return cmp.Compare(len(a.values), len(b.values)) })
	for _, t := range tests {
		col := cols[t.fieldID]
		clear(c.hit)
		for i, ok := range col.indexed {
			if !ok {
				c.hit[i] = true // no filter: the file is kept
			}
		}
		for gi := range col.groups {
			if err := c.group(ctx, t, &col.groups[gi]); err != nil {
				return nil, c.blockStats, err
			}
		}
		if err := c.flush(ctx); err != nil {
			return nil, c.blockStats, err
		}
		for i := range c.alive {
			c.alive[i] = c.alive[i] && c.hit[i]
		}
	}
	return c.alive, c.blockStats, nil
}

// group queues the chunks of one group that t's values need: for each
// value, the chunks of its block's run that hold a live file.
func (c *columnar) group(ctx context.Context, t *test, g *columnGroup) error {
	var hashes []uint64
	for _, v := range t.values {
		h, outcome, err := hashing.Literal(g.valueType, v)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("lookup: %s = %s (filters in %s): %w", t.column, v, g.path, err))
		}
		switch outcome {
		case hashing.NeverPresent:
			continue
		case hashing.CannotPrune:
			for _, mf := range g.files {
				c.hit[mf.file] = true
			}
			return nil
		}
		hashes = append(hashes, h)
	}
	for _, h := range hashes {
		b := sbbf.BlockIndex(h, g.layout.Blocks)
		for start := 0; start < len(g.files); {
			k := g.files[start].member / segment.ChunkMembers
			end, live := start, false
			for end < len(g.files) && g.files[end].member/segment.ChunkMembers == k {
				f := g.files[end].file
				live = live || c.alive[f] && !c.hit[f]
				end++
			}
			if live {
				ch := g.layout.ChunkOf(b, int(k)*segment.ChunkMembers)
				c.units = append(c.units, chunkUnit{path: g.path, chunk: ch, hash: h, group: g, first: int32(start), end: int32(end)})
				c.unitBytes += ch.Length + segment.ChecksumBytes
				if c.unitBytes >= c.batch {
					if err := c.flush(ctx); err != nil {
						return err
					}
				}
			}
			start = end
		}
	}
	return nil
}

// columnSpan is one read of the columnar prober: units of one statistics
// file, sorted by offset, lying in [start, end).
type columnSpan struct {
	file       icebergio.File
	path       string
	start, end int64
	units      []chunkUnit
	buf        []byte
	err        error
}

// flush reads the queued chunks (coalesced as readBlocks coalesces, all
// reads at once) and checks their files' blocks.
func (c *columnar) flush(ctx context.Context) error {
	if len(c.units) == 0 {
		return nil
	}
	defer func() { c.units, c.unitBytes = c.units[:0], 0 }()
	slices.SortFunc(c.units, func(a, b chunkUnit) int {
		return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.chunk.Offset, b.chunk.Offset))
	})
	var spans []columnSpan
	units := c.units
	for len(units) > 0 {
		path, n := units[0].path, 1
		for n < len(units) && units[n].path == path {
			n++
		}
		us := units[:n]
		units = units[n:]
		f, err := c.fsys.Open(path)
		if err != nil {
			c.unread(us)
			c.errs = append(c.errs, fmt.Errorf("lookup: open statistics file %s: %w", path, err))
			continue
		}
		defer f.Close()
		for len(us) > 0 {
			start := us[0].chunk.Offset
			end := start + us[0].chunk.Length + segment.ChecksumBytes
			k := 1
			for ; k < len(us); k++ {
				off, length := us[k].chunk.Offset, us[k].chunk.Length+segment.ChecksumBytes
				if off >= end && (off-end >= maxGap || off+length-start > c.maxRead) {
					break
				}
				end = max(end, off+length)
			}
			spans = append(spans, columnSpan{file: f, path: path, start: start, end: end, units: us[:k]})
			us = us[k:]
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lookup: %w", err)
	}
	// The spans are read into one buffer the lookup keeps for its next
	// batch: a lookup of 1,000,000 files reads 32 MB a value, which
	// allocated anew batch by batch was most of the 46 MB a warm plan
	// allocated, and of the collections 16 clients' plans caused.
	total := int64(0)
	for i := range spans {
		total += spans[i].end - spans[i].start
	}
	if int64(cap(c.buf)) < total {
		c.buf = make([]byte, total)
	}
	at := int64(0)
	for i := range spans {
		n := spans[i].end - spans[i].start
		spans[i].buf = c.buf[at : at+n : at+n]
		at += n
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readConcurrency)
	var mu sync.Mutex
	for i := range spans {
		g.Go(func() error {
			sp := &spans[i]
			err := readSection(gctx, sp.file, sp.start, sp.buf)
			mu.Lock()
			defer mu.Unlock()
			c.requests++
			c.bytes += sp.end - sp.start
			if err != nil {
				sp.err = fmt.Errorf("lookup: read index blocks of %s at offset %d (%d bytes): %w", sp.path, sp.start, len(sp.buf), err)
			}
			return nil
		})
	}
	g.Wait()
	for i := range spans {
		sp := &spans[i]
		if sp.err != nil {
			c.unread(sp.units)
			c.errs = append(c.errs, sp.err)
			continue
		}
		for _, u := range sp.units {
			data := sp.buf[u.chunk.Offset-sp.start:][:u.chunk.Length+segment.ChecksumBytes]
			if !u.chunk.Verify(data) {
				c.unread([]chunkUnit{u})
				c.errs = append(c.errs, fmt.Errorf("lookup: index chunk of %d bytes at offset %d of %s: %w", u.chunk.Length, u.chunk.Offset, sp.path, segment.ErrChecksum))
				continue
			}
			base := u.group.files[u.first].member / segment.ChunkMembers * segment.ChunkMembers
			for _, mf := range u.group.files[u.first:u.end] {
				if !c.alive[mf.file] || c.hit[mf.file] {
					continue
				}
				c.blocks++
				at := int(mf.member-base) * sbbf.BlockBytes
				if sbbf.CheckBlock(data[at:at+sbbf.BlockBytes], u.hash) {
					c.hit[mf.file] = true
				}
			}
		}
	}
	return nil
}

// unread answers units whose chunks could not be read or verified: their
// files are kept.
func (c *columnar) unread(units []chunkUnit) {
	for _, u := range units {
		for _, mf := range u.group.files[u.first:u.end] {
			c.hit[mf.file] = true
		}
	}
}

// readSection reads len(buf) bytes at off of f, or the context's error.
func readSection(ctx context.Context, f icebergio.File, off int64, buf []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := io.ReadFull(io.NewSectionReader(f, off, int64(len(buf))), buf)
	return err
}
