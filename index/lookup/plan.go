// Package lookup plans a scan of an Iceberg table with the help of its
// icebloom index: iceberg-go prunes by partitions and manifest statistics,
// then the index drops the data files that provably hold no row equal to
// the filter's values (docs/format.md §5, §8). The index is advisory: a file
// it cannot speak for is always kept.
package lookup

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/where"
)

// Options configure Plan.
type Options struct {
	// SnapshotID selects the snapshot to plan; nil means the current one.
	// As in iceberg-go, the filter binds to the schema of a selected
	// snapshot and otherwise to the table's current schema.
	SnapshotID *int64
	// CaseSensitive makes column names match exactly; by default they match
	// regardless of case, as in SQL.
	CaseSensitive bool
	// Cache keeps Puffin footers across calls (and tables); nil reads every
	// footer on every call.
	Cache *index.FooterCache
	// Memo keeps what Prune derives from its tasks for its next call with
	// the same tasks (see Memo); nil derives it every call. Plan ignores it.
	Memo *Memo
	// Keep, when not nil, has an entry per task of Prune's tasks: those it
	// marks false are dropped without consulting the index (the caller's
	// own partition or statistics checks ruled them out), and AfterStats
	// holds the others. The Memo stays that of the whole tasks, so a
	// caller whose checks drop a different few files for each value does
	// not derive it again for each. Plan ignores it.
	Keep []bool
	// Reserve, when not nil, is called by PruneFiles with the bytes its
	// lookup will work in, before it allocates them, and the returned
	// release when it is done; an error fails the call. A server bounding
	// the memory of its lookups passes its budget's reservation: which way
	// PruneFiles goes (the columnar prober or the general evaluation,
	// whose work grows with files and values) is known only once the
	// index is loaded. Plan and Prune ignore it.
	Reserve func(bytes int64) (release func(), err error)
	// MaxWorkBytes, when not 0, bounds what PruneFiles's columnar prober
	// works in, by reading the index's blocks in smaller batches (never
	// below 64 KiB): a server gives each lookup a share of its budget
	// small enough that several run at once. Plan and Prune ignore it.
	MaxWorkBytes int64
}

// Result is a planned lookup: what statistics left and what the index
// left of that, with what reading the index cost.
type Result struct {
	SnapshotID int64
	// Schema is the schema the filter was bound to, and Bound the filter
	// bound to it, for a reader of the candidates to apply to rows as the
	// plan applied it (index/rowscan does).
	Schema *iceberg.Schema
	Bound  iceberg.BooleanExpression
	// FilesTotal is the number of live data files in the snapshot: its
	// summary's total-data-files when present, else counted.
	FilesTotal int
	// AfterStats is iceberg-go's own plan: pruned by partitions and
	// manifest statistics. A large file may be split into several tasks.
	AfterStats []table.FileScanTask
	// Candidates is AfterStats without the tasks of files the index proves
	// cannot match, in the same order.
	Candidates []table.FileScanTask
	// Kept is PruneFiles's answer: the indexes in its Files of the files
	// kept, ascending.
	Kept []int32
	// Unindexed lists, once each, the candidate data files that lack an
	// applicable entry for a column the filter could prune with.
	Unindexed []string
	// IndexErrors are the problems met reading the index; the files they
	// concern were kept.
	IndexErrors []error
	// ScratchBytes is the memory of the checks and probes the call worked
	// in (their lists' and slabs' capacities), which WorkBytes estimates
	// before it runs; 0 when the index had nothing to do.
	ScratchBytes int64
	// BlocksRead, BytesRead and Requests count the index I/O of the call:
	// 32-byte blocks checked (one per candidate file and value), bytes
	// fetched including the gaps and checksums coalesced reads span, and
	// reads. Footers and directories are not counted.
	BlocksRead, BytesRead, Requests int64
	// IndexTime is the time the index's part took: loading the index
	// (footers, from the cache when warm) and pruning, without iceberg-go's
	// planning.
	IndexTime time.Duration
}

// Plan plans a scan of tbl with filter and drops the data files that the
// table's index proves cannot match: col = v prunes a file whose applicable
// entry says no, col IN (…) one whose entry says no for every value, AND
// prunes when either side does and OR when both do; nothing else prunes.
// Filters from where.Parse bind as where.Bind binds them.
//
// The index is consulted only for the files statistics leave, and only the
// 32-byte blocks that the values fall in are read, nearby ones together.
// Errors in the filter (an unknown column, a value that does not fit its
// column) and errors of iceberg-go's planning are returned; problems with
// the index are reported in Result.IndexErrors and never fail the call.
// Plan is safe for concurrent use.
func Plan(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, o Options) (*Result, error) {
	snap, schema, bound, f, err := prepare(tbl, filter, o)
	if err != nil {
		return nil, err
	}
	if snap == nil {
		return &Result{Schema: schema, Bound: bound}, nil // a table without snapshots has no files
	}

	scanOpts := []table.ScanOption{table.WithCaseSensitive(o.CaseSensitive)}
	if o.SnapshotID != nil {
		scanOpts = append(scanOpts, table.WithSnapshotID(*o.SnapshotID))
	}
	tasks, err := PlanFiles(ctx, tbl, o.SnapshotID, filter, o.CaseSensitive)
	if err != nil {
		return nil, fmt.Errorf("lookup: plan scan of snapshot %d: %w", snap.SnapshotID, err)
	}
	res := &Result{SnapshotID: snap.SnapshotID, Schema: schema, Bound: bound, AfterStats: tasks, Candidates: tasks}
	if res.FilesTotal, err = countFiles(ctx, tbl, snap, scanOpts); err != nil {
		return nil, err
	}
	o.Memo, o.Keep = nil, nil // for Prune's callers' plans, not this one
	return res, res.prune(ctx, tbl, tasks, f, o)
}

// Prune is Plan's index step alone: it drops from tasks, a plan of tbl's
// snapshot o.SnapshotID made by the caller, the tasks of the data files the
// index proves cannot hold a row matching filter, as Plan does for the plan
// it makes. It lets a caller that keeps a plan in memory (a server planning
// many lookups of one table) consult the index without planning again; it
// is sound for any tasks, since the index only ever drops a file that no
// row of which can match. Result.FilesTotal is left 0: Prune reads no
// manifest. Errors are Plan's.
func Prune(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, filter iceberg.BooleanExpression, o Options) (*Result, error) {
	snap, schema, bound, f, err := prepare(tbl, filter, o)
	if err != nil {
		return nil, err
	}
	if o.Keep != nil && len(o.Keep) != len(tasks) {
		return nil, fmt.Errorf("lookup: Keep has %d entries for %d tasks", len(o.Keep), len(tasks))
	}
	res := &Result{Schema: schema, Bound: bound, AfterStats: tasks, Candidates: tasks}
	if o.Keep != nil {
		kept := 0
		for _, k := range o.Keep {
			if k {
				kept++
			}
		}
		res.AfterStats = make([]table.FileScanTask, 0, kept)
		for i, t := range tasks {
			if o.Keep[i] {
				res.AfterStats = append(res.AfterStats, t)
			}
		}
		res.Candidates = res.AfterStats
	}
	if snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	return res, res.prune(ctx, tbl, tasks, f, o)
}

// prepare returns the snapshot o selects, its schema, and filter bound to
// it and compiled for the index.
func prepare(tbl *table.Table, filter iceberg.BooleanExpression, o Options) (*table.Snapshot, *iceberg.Schema, iceberg.BooleanExpression, *predicate, error) {
	snap, schema, err := Snapshot(tbl, o.SnapshotID)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	bound, err := where.Bind(schema, filter, o.CaseSensitive)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("lookup: %w", err)
	}
	f, err := compile(schema, bound)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("lookup: %w", err)
	}
	return snap, schema, bound, f, nil
}

// prune sets res.Candidates to res.AfterStats without the tasks of the
// files the index proves cannot match f, with what reading the index cost.
// tasks are those the Memo is of: res.AfterStats, or all of o.Keep's.
func (res *Result) prune(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, f *predicate, o Options) error {
	if f.root.kind == keepNode || len(res.AfterStats) == 0 {
		return nil // nothing for the index to do
	}
	li, err := loadIndex(ctx, tbl, o.Cache)
	if err != nil {
		return err
	}
	var pf *planFiles
	files, r, err := res.runIndex(ctx, li, f, o, func(ix *index.TableIndex) (*planFiles, []*matchedFilters) {
		var matched []*matchedFilters
		pf, matched = o.Memo.planFiles(ix, tasks, f)
		return pf, matched
	}, func(files []fileCheck) {
		for i := range files {
			files[i].pruned = true
		}
		for ti, keep := range o.Keep {
			if keep {
				files[pf.fileOf[ti]].pruned = false
			}
		}
	})
	if err != nil {
		return err
	}
	defer r.scratch.release()
	res.Candidates = nil
	for ti, t := range tasks {
		fc := &files[pf.fileOf[ti]]
		if fc.pruned || o.Keep != nil && !o.Keep[ti] {
			continue
		}
		res.Candidates = append(res.Candidates, t)
		if !fc.listed && !r.indexed(f, fc) {
			res.Unindexed = append(res.Unindexed, t.File.FilePath())
		}
		fc.listed = true
	}
	return nil
}

// loadedIndex is a table's index as a lookup reads it: its file system,
// the index, the problems loading it met, and when loading began.
type loadedIndex struct {
	fsys  icebergio.IO
	ix    *index.TableIndex
	errs  []error
	start time.Time
}

// loadIndex loads tbl's index, from cache when it holds it.
func loadIndex(ctx context.Context, tbl *table.Table, cache *index.FooterCache) (*loadedIndex, error) {
	fsys, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("lookup: table file system: %w", err)
	}
	start := time.Now()
	ix, errs := index.Load(ctx, fsys, tbl.Metadata(), cache)
	return &loadedIndex{fsys: fsys, ix: ix, errs: errs, start: start}, nil
}

// runIndex prunes the files planFiles gives for the index li: it returns
// their checks, each marked pruned when the index rules it out, and the
// run, whose scratch the caller releases once done with them. When o.Keep
// is set, skip marks pruned the files it leaves out beforehand. res gets
// what reading the index cost.
func (res *Result) runIndex(ctx context.Context, li *loadedIndex, f *predicate, o Options,
	planFiles func(*index.TableIndex) (*planFiles, []*matchedFilters), skip func([]fileCheck)) ([]fileCheck, *run, error) {
	sc := scratchPool.Get().(*scratch)
	r := &run{ix: li.ix, fsys: li.fsys, blockStats: blockStats{errs: li.errs}, hashed: make([][]typedHashes, len(f.tests)), scratch: sc}
	pf, matched := planFiles(li.ix)
	files := r.files(f, pf, matched)
	if o.Keep != nil { // a file none of whose tasks is kept is not looked at
		skip(files)
	}
	var order []int32 // nil for a filter without tests (AlwaysFalse)
	if len(f.tests) > 0 {
		order = matched[f.tests[0].idx].order
	}
	if err := r.prune(ctx, f, files, order); err != nil {
		sc.release()
		return nil, nil, err
	}
	res.ScratchBytes = sc.heldBytes()
	res.IndexErrors, res.BlocksRead, res.BytesRead, res.Requests = r.errs, r.blocks, r.bytes, r.requests
	res.IndexTime = time.Since(li.start)
	return files, r, nil
}

// PruneFiles is Prune over data files a caller holds in a list (a
// server's plan kept in memory for many lookups, in tens of bytes a file
// rather than a task's kilobyte): it sets Result.Kept to the indexes in
// files of those that neither o.Keep (an entry per file) nor the index
// rules out, ascending, and leaves AfterStats and Candidates nil. A Memo
// kept with files serves every PruneFiles of them. Errors are Prune's.
func PruneFiles(ctx context.Context, tbl *table.Table, files *filelist.List, filter iceberg.BooleanExpression, o Options) (*Result, error) {
	snap, schema, bound, f, err := prepare(tbl, filter, o)
	if err != nil {
		return nil, err
	}
	if o.Keep != nil && len(o.Keep) != files.Len() {
		return nil, fmt.Errorf("lookup: %d files and %d entries of Keep", files.Len(), len(o.Keep))
	}
	res := &Result{Schema: schema, Bound: bound}
	if snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	// The files statistics kept, listed only where the general evaluation
	// or the answer needs them: the columnar prober lists those it keeps
	// (at 1,000,000 files the whole list took 4 MB a lookup, which 16
	// lookups at once held beside the work budget).
	listKept := func() {
		res.Kept = make([]int32, 0, files.Len())
		for i := range files.Len() {
			if o.Keep == nil || o.Keep[i] {
				res.Kept = append(res.Kept, int32(i))
			}
		}
	}
	if f.root.kind == keepNode || o.Keep != nil && !slices.Contains(o.Keep, true) || files.Len() == 0 {
		listKept()
		return res, nil // nothing for the index to do
	}
	li, err := loadIndex(ctx, tbl, o.Cache)
	if err != nil {
		return nil, err
	}
	if tests, ok := conjunction(f); ok {
		fields := make([]int, len(tests))
		for i, t := range tests {
			fields[i] = t.fieldID
		}
		cols := o.Memo.columns(li.ix, files, fields)
		if !readsV1(cols, fields) {
			work, batch := columnarWork(files.Len(), tests, o.MaxWorkBytes)
			release, err := o.reserve(work)
			if err != nil {
				return nil, err
			}
			alive, stats, err := pruneColumns(ctx, li.fsys, files.Len(), o.Keep, tests, cols, batch)
			release()
			if err != nil {
				return nil, err
			}
			kept := []int32{}
			for i, ok := range alive { // o.Keep's files alone were alive
				if !ok {
					continue
				}
				kept = append(kept, int32(i))
				for _, id := range fields {
					if !cols[id].indexed[i] {
						res.Unindexed = append(res.Unindexed, files.Path(int(i)))
						break
					}
				}
			}
			res.Kept = kept
			res.IndexErrors = append(li.errs, stats.errs...)
			res.BlocksRead, res.BytesRead, res.Requests = stats.blocks, stats.bytes, stats.requests
			res.ScratchBytes = 2 * int64(files.Len())
			res.IndexTime = time.Since(li.start)
			return res, nil
		}
	}
	listKept()
	counts := make([]int, len(f.tests))
	for i, t := range f.tests {
		counts[i] = len(t.values)
	}
	release, err := o.reserve(workBytes(files.Len(), counts))
	if err != nil {
		return nil, err
	}
	defer release()
	checks, r, err := res.runIndex(ctx, li, f, o, func(ix *index.TableIndex) (*planFiles, []*matchedFilters) {
		return o.Memo.planFilesOf(ix, files, f)
	}, func(checks []fileCheck) {
		for i := range checks {
			checks[i].pruned = !o.Keep[i]
		}
	})
	if err != nil {
		return nil, err
	}
	defer r.scratch.release()
	kept := res.Kept[:0]
	for _, i := range res.Kept {
		fc := &checks[i]
		if fc.pruned {
			continue
		}
		kept = append(kept, i)
		if !r.indexed(f, fc) {
			res.Unindexed = append(res.Unindexed, files.Path(int(i)))
		}
	}
	res.Kept = kept
	return res, nil
}

// reserve is o.Reserve, or nothing reserved without one.
func (o Options) reserve(n int64) (func(), error) {
	if o.Reserve == nil {
		return func() {}, nil
	}
	return o.Reserve(n)
}

// readsV1 reports whether the applicable filter of some file for one of
// fields is a version 1 entry, which the columnar prober does not read.
func readsV1(cols map[int]*columnIndex, fields []int) bool {
	for _, id := range fields {
		if cols[id].v1 {
			return true
		}
	}
	return false
}

// Snapshot returns the snapshot to plan (nil for a table without
// snapshots) and the schema to bind the filter to, as iceberg-go's scan
// chooses them: a selected snapshot's schema, else the table's current one.
func Snapshot(tbl *table.Table, id *int64) (*table.Snapshot, *iceberg.Schema, error) {
	if id == nil {
		return tbl.CurrentSnapshot(), tbl.Schema(), nil
	}
	snap := tbl.SnapshotByID(*id)
	if snap == nil {
		return nil, nil, fmt.Errorf("lookup: table has no snapshot %d", *id)
	}
	if snap.SchemaID != nil {
		if s, ok := tbl.Schemas()[*snap.SchemaID]; ok {
			return snap, s, nil
		}
	}
	return snap, tbl.Schema(), nil
}

// countFiles returns the number of live data files of a snapshot: the
// summary's count, or one planned without a filter when there is none.
func countFiles(ctx context.Context, tbl *table.Table, snap *table.Snapshot, scanOpts []table.ScanOption) (int, error) {
	if snap.Summary != nil {
		if n, err := strconv.Atoi(snap.Summary.Properties["total-data-files"]); err == nil {
			return n, nil
		}
	}
	tasks, err := tbl.Scan(scanOpts...).PlanFiles(ctx)
	if err != nil {
		return 0, fmt.Errorf("lookup: count data files of snapshot %d: %w", snap.SnapshotID, err)
	}
	files := make(map[string]bool)
	for _, t := range tasks {
		files[t.File.FilePath()] = true
	}
	return len(files), nil
}

// run is the index's part of one Plan call, with its I/O and problems.
type run struct {
	ix      *index.TableIndex
	planned *filelist.List // the data files of the checks
	fsys    icebergio.IO
	hashed  [][]typedHashes // by test.idx
	*scratch
	blockStats
}

// scratch is what one prune works in, kept for the next (scratchPool): a
// lookup of 100,000 files needs a check and a probe for each, and making
// them anew for each of a server's stream of lookups costs more in
// allocation and collection than the checks themselves.
type scratch struct {
	files   []fileCheck
	checks  []testCheck
	pending []*fileCheck
	wanted  []*probe
	arena   probeArena
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxRoundProbes bounds the probes a lookup holds at once: files are
// evaluated in chunks of at most maxRoundProbes / (values per file) files
// (at least one), so a lookup's working memory does not grow with files ×
// values. A lookup of one or two values evaluates up to 100,000 files and
// more in one chunk, as before.
const maxRoundProbes = 1 << 18

// filesPerChunk is the files of a chunk for tests of values values in all.
func filesPerChunk(values int) int { return max(1, maxRoundProbes/max(values, 1)) }

// WorkBytes is the memory a lookup of files data files works in for a
// filter whose tests are preds (col = v and col IN (…)): its checks, and
// the probes of one chunk of files (maxRoundProbes), borrowed from a pool
// for the lookup's time, with the half again that their slabs and lists may
// have grown beyond what the lookup needs. A server running many lookups at
// once bounds their sum with it.
func WorkBytes(files int, preds []iceberg.BoundPredicate) int64 {
	var counts []int
	for _, p := range preds {
		if vs, ok := testValues(p); ok {
			counts = append(counts, len(vs))
		}
	}
	return workBytes(files, counts)
}

// workBytes is WorkBytes for tests of counts values each.
func workBytes(files int, counts []int) int64 {
	per := unsafe.Sizeof(fileCheck{}) + 2*unsafe.Sizeof(&fileCheck{}) // a check, pending and next
	values := 0
	for _, n := range counts {
		per += unsafe.Sizeof(testCheck{})
		values += n
	}
	probes := min(files, filesPerChunk(values)) * values
	return (int64(files)*int64(per) + int64(probes)*int64(unsafe.Sizeof(probe{})+unsafe.Sizeof(&probe{}))) * 3 / 2
}

// heldBytes is the memory sc holds: the capacities of its lists and slabs.
func (sc *scratch) heldBytes() int64 {
	n := uintptr(cap(sc.files))*unsafe.Sizeof(fileCheck{}) + uintptr(cap(sc.checks))*unsafe.Sizeof(testCheck{}) +
		uintptr(cap(sc.pending))*unsafe.Sizeof(&fileCheck{}) + uintptr(cap(sc.wanted))*unsafe.Sizeof(&probe{}) +
		uintptr(cap(sc.arena.slabs))*unsafe.Sizeof([]probe{})
	for _, slab := range sc.arena.slabs {
		n += uintptr(cap(slab)) * unsafe.Sizeof(probe{})
	}
	return int64(n)
}

// release returns sc to the pool. Nothing of it may be used after.
func (sc *scratch) release() {
	sc.arena.reset()
	scratchPool.Put(sc)
}

// grown returns s with length n, reusing its array when large enough, and
// zeroed.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (r *run) report(err error) { r.errs = append(r.errs, err) }

// files returns one check per data file of pf, with each test's filter for
// it (matched, by test index).
func (r *run) files(f *predicate, pf *planFiles, matched []*matchedFilters) []fileCheck {
	r.planned = pf.files
	r.scratch.files = grown(r.scratch.files, pf.files.Len())
	r.checks = grown(r.checks, pf.files.Len()*len(f.tests))
	files, checks := r.scratch.files, r.checks
	for i := range files {
		files[i] = fileCheck{file: int32(i), checks: checks[i*len(f.tests) : (i+1)*len(f.tests) : (i+1)*len(f.tests)]}
	}
	for _, t := range f.tests {
		ff := matched[t.idx]
		for i := range files {
			if ff.found[i] {
				files[i].checks[t.idx].stored = &ff.filters[i]
			}
		}
	}
	return files
}

// prune evaluates the filter for files and marks those it proves cannot
// match, a chunk of files at a time (filesPerChunk), each chunk's probes
// handed back before the next: a decided file's probes are not read again.
// Files are evaluated in order (indexes into files), or as they come when
// order is nil.
func (r *run) prune(ctx context.Context, f *predicate, files []fileCheck, order []int32) error {
	all := r.pending[:0]
	for i := range files {
		if order != nil {
			i = int(order[i])
		}
		if !files[i].pruned { // dropped before the index (Options.Keep)
			all = append(all, &files[i])
		}
	}
	r.pending = all
	values := 0
	for _, t := range f.tests {
		values += len(t.values)
	}
	chunk := filesPerChunk(values)
	for start := 0; start < len(all); start += chunk {
		if err := r.pruneChunk(ctx, f, all[start:min(start+chunk, len(all))]); err != nil {
			return err
		}
		r.arena.reset()
	}
	return nil
}

// pruneChunk works in rounds: each file says which blocks it needs next,
// all of them are read together, and the files still undecided go on; an
// AND reads its other tests only for files its cheapest test could not
// prune.
func (r *run) pruneChunk(ctx context.Context, f *predicate, pending []*fileCheck) error {
	wanted := r.wanted[:0]
	defer func() { r.wanted = wanted }()
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lookup: %w", err)
		}
		next := pending[:0] // evaluated in order, so filtering in place is safe
		wanted = wanted[:0]
		for _, fc := range pending {
			switch fc.eval(f.root, r, &wanted) {
			case no:
				fc.pruned = true
			case undecided:
				next = append(next, fc)
			}
		}
		if len(wanted) > 0 {
			r.add(readBlocks(ctx, r.fsys, wanted))
		}
		pending = next
	}
	return nil
}

// planFiles are the data files of a plan's tasks and their applicable
// filters for the fields looked up so far. None of it depends on a
// filter's values, so a Memo keeps it for the next lookup of the same
// tasks.
type planFiles struct {
	ix     *index.TableIndex
	files  *filelist.List
	fileOf []int                   // by task: its file's index in files; nil for a list's own
	fields map[int]*matchedFilters // by field id
}

// matchedFilters are each file's applicable filter for one field; the
// first segment's wins.
type matchedFilters struct {
	filters   []index.StoredFilter
	found     []bool
	pathBytes int64 // of the filters' DataFile
	// order lists the files by where their filters lie in the index (the
	// files without one last): evaluated in this order, a lookup's probes
	// of one value come sorted by statistics file and offset, since the
	// members of a group share their block count and so a value's block,
	// and readBlocks need not sort them.
	order []int32
}

// sortOrder sets m.order.
func (m *matchedFilters) sortOrder() {
	m.order = make([]int32, len(m.filters))
	for i := range m.order {
		m.order[i] = int32(i)
	}
	first := make([]index.Place, len(m.filters)) // of block 0
	for i := range m.filters {
		if m.found[i] {
			first[i] = m.filters[i].Place(0)
		}
	}
	slices.SortStableFunc(m.order, func(a, b int32) int {
		switch {
		case m.found[a] != m.found[b]:
			if m.found[a] {
				return -1
			}
			return 1
		case !m.found[a]:
			return 0
		}
		if c := strings.Compare(m.filters[a].Path, m.filters[b].Path); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(first[a].Offset, first[b].Offset), cmp.Compare(first[a].Block, first[b].Block))
	})
}

func newPlanFiles(ix *index.TableIndex, tasks []table.FileScanTask) *planFiles {
	pf := &planFiles{ix: ix, files: &filelist.List{}, fileOf: make([]int, len(tasks)), fields: map[int]*matchedFilters{}}
	byPath := make(map[string]int, len(tasks))
	for ti, t := range tasks {
		path := t.File.FilePath()
		i, ok := byPath[path]
		if !ok {
			i = pf.files.Len()
			byPath[path] = i
			pf.files.Append(path, t.File.FileSizeBytes())
		}
		pf.fileOf[ti] = i
	}
	return pf
}

// newPlanFilesOf returns the plan files of files, each file its own
// (fileOf nil).
func newPlanFilesOf(ix *index.TableIndex, files *filelist.List) *planFiles {
	return &planFiles{ix: ix, files: files, fields: map[int]*matchedFilters{}}
}

// match finds each file's applicable filter for the fields of f's tests
// not matched yet, one pass over each segment's files
// (index.TableIndex.Match), and returns the filters of each test.
func (pf *planFiles) match(f *predicate) []*matchedFilters {
	var fields []int
	for _, t := range f.tests {
		if pf.fields[t.fieldID] == nil {
			pf.fields[t.fieldID] = &matchedFilters{filters: make([]index.StoredFilter, pf.files.Len()), found: make([]bool, pf.files.Len())}
			fields = append(fields, t.fieldID)
		}
	}
	if len(fields) > 0 {
		pf.ix.Match(filelist.NewIndex(pf.files, nil).Find, fields, func(i int, ref index.FilterRef) {
			if m := pf.fields[ref.FieldID()]; !m.found[i] { // the first segment's wins
				m.filters[i], m.found[i] = ref.Filter(), true
				m.pathBytes += int64(len(m.filters[i].DataFile))
			}
		})
		for _, id := range fields {
			pf.fields[id].sortOrder()
		}
	}
	matched := make([]*matchedFilters, len(f.tests))
	for _, t := range f.tests {
		matched[t.idx] = pf.fields[t.fieldID]
	}
	return matched
}

// Memo keeps, for the tasks of one plan (or the Files of one), what Prune
// derives from them that no filter value changes: their data files and
// each file's applicable filters (the index's directories matched to the
// files). A caller that keeps a plan in memory and prunes it for many
// values (a server) passes one Memo per plan in Options.Memo, so that each
// later Prune of the same tasks (the same slice) or PruneFiles of the same
// Files, and index, only checks the values' blocks. A Memo is safe for
// concurrent use.
type Memo struct {
	mu    sync.Mutex
	tasks []table.FileScanTask
	files *filelist.List
	pf    *planFiles
	// cols are the column indexes of colsFiles for colsIx, by field id:
	// the columnar prober's (columnar.go).
	cols      map[int]*columnIndex
	colsIx    *index.TableIndex
	colsFiles *filelist.List
	carry     *carried // what Carry named, until the first columns
	// fullMatches counts the times the memo matched every file to the
	// index, for tests.
	fullMatches int
}

// Bytes is the memory the memo holds: its matches, and the index it
// matched, whose directories (shared with the index's FooterCache) it
// keeps alive as long as it is kept: as stored, and decoded too where the
// general evaluation's StoredFilters hold them (the columnar prober's
// matches do not). A server keeping a memo with each plan it holds
// charges it this.
func (m *Memo) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	indexes := map[*index.TableIndex]bool{}
	for _, c := range m.cols {
		n += int64(cap(c.indexed))
		for _, g := range c.groups {
			n += int64(unsafe.Sizeof(g)) + 8*int64(cap(g.files))
		}
	}
	if m.colsIx != nil {
		indexes[m.colsIx] = true
	}
	if pf := m.pf; pf != nil {
		indexes[pf.ix] = true
		if pf.files != m.files { // made of tasks: its own list
			n += pf.files.Bytes() + 8*int64(cap(pf.fileOf))
		}
		for _, mf := range pf.fields {
			n += int64(cap(mf.filters))*int64(unsafe.Sizeof(index.StoredFilter{})) + mf.pathBytes + int64(cap(mf.found)) + 4*int64(cap(mf.order))
		}
		if len(pf.fields) > 0 { // its StoredFilters keep the directories decoded
			n += pf.ix.DecodedBytes()
		}
	}
	for ix := range indexes {
		n += ix.Bytes()
	}
	return n
}

// planFiles returns the plan files of tasks for ix and the filters matched
// for each of f's tests: the memo's when it holds them for the same tasks
// and index. What it returns is not changed afterwards.
func (m *Memo) planFiles(ix *index.TableIndex, tasks []table.FileScanTask, f *predicate) (*planFiles, []*matchedFilters) {
	if m == nil {
		pf := newPlanFiles(ix, tasks)
		return pf, pf.match(f)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	same := m.pf != nil && m.pf.ix == ix && m.files == nil && len(m.tasks) == len(tasks) && (len(tasks) == 0 || &m.tasks[0] == &tasks[0])
	if !same {
		m.tasks, m.files, m.pf = tasks, nil, newPlanFiles(ix, tasks)
	}
	return m.pf, m.pf.match(f)
}

// planFilesOf is planFiles for Files.
func (m *Memo) planFilesOf(ix *index.TableIndex, files *filelist.List, f *predicate) (*planFiles, []*matchedFilters) {
	if m == nil {
		pf := newPlanFilesOf(ix, files)
		return pf, pf.match(f)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pf == nil || m.pf.ix != ix || m.files != files {
		m.tasks, m.files, m.pf = nil, files, newPlanFilesOf(ix, files)
	}
	return m.pf, m.pf.match(f)
}

// indexed reports whether a data file has an applicable filter for every
// column of the filter's tests.
func (r *run) indexed(f *predicate, fc *fileCheck) bool {
	for _, t := range f.tests {
		if fc.checks[t.idx].stored == nil {
			return false
		}
	}
	return true
}

// probeArena hands out probes from large slices, kept from one lookup to
// the next (reset), so that a lookup of many files allocates no probe of its
// own; a probe never moves, so pointers to it stay valid. Slabs double up
// to a quarter of maxRoundProbes, so a chunk's slabs hold at most a quarter
// more probes than it takes.
type probeArena struct {
	slabs [][]probe
	cur   int // the slab being handed out
	used  int // of slabs[cur]
}

// take returns n zeroed probes.
func (a *probeArena) take(n int) []probe {
	for a.cur < len(a.slabs) && len(a.slabs[a.cur])-a.used < n {
		a.cur, a.used = a.cur+1, 0
	}
	if a.cur == len(a.slabs) {
		a.slabs = append(a.slabs, make([]probe, max(n, min(4096<<min(len(a.slabs), 8), maxRoundProbes/4))))
	}
	s := a.slabs[a.cur][a.used : a.used+n : a.used+n]
	a.used += n
	clear(s)
	return s
}

// reset hands the probes out again.
func (a *probeArena) reset() { a.cur, a.used = 0, 0 }
