// Package lookup plans a scan of an Iceberg table with the help of its
// icebloom index: iceberg-go prunes by partitions and manifest statistics,
// then the index drops the data files that provably hold no row equal to
// the filter's values (docs/format.md §5, §8). The index is advisory: a file
// it cannot speak for is always kept.
package lookup

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
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
}

// Result is a planned lookup: what statistics left and what the index
// left of that, with what reading the index cost.
type Result struct {
	SnapshotID int64
	// FilesTotal is the number of live data files in the snapshot: its
	// summary's total-data-files when present, else counted.
	FilesTotal int
	// AfterStats is iceberg-go's own plan: pruned by partitions and
	// manifest statistics. A large file may be split into several tasks.
	AfterStats []table.FileScanTask
	// Candidates is AfterStats without the tasks of files the index proves
	// cannot match, in the same order.
	Candidates []table.FileScanTask
	// Unindexed lists, once each, the candidate data files that lack an
	// applicable entry for a column the filter could prune with.
	Unindexed []string
	// IndexErrors are the problems met reading the index; the files they
	// concern were kept.
	IndexErrors []error
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
	snap, f, err := prepare(tbl, filter, o)
	if err != nil {
		return nil, err
	}
	if snap == nil {
		return &Result{}, nil // a table without snapshots has no files
	}

	scanOpts := []table.ScanOption{table.WithCaseSensitive(o.CaseSensitive)}
	if o.SnapshotID != nil {
		scanOpts = append(scanOpts, table.WithSnapshotID(*o.SnapshotID))
	}
	tasks, err := tbl.Scan(append(scanOpts, table.WithRowFilter(filter))...).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("lookup: plan scan of snapshot %d: %w", snap.SnapshotID, err)
	}
	res := &Result{SnapshotID: snap.SnapshotID, AfterStats: tasks, Candidates: tasks}
	if res.FilesTotal, err = countFiles(ctx, tbl, snap, scanOpts); err != nil {
		return nil, err
	}
	return res, res.prune(ctx, tbl, f, o)
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
	snap, f, err := prepare(tbl, filter, o)
	if err != nil {
		return nil, err
	}
	res := &Result{AfterStats: tasks, Candidates: tasks}
	if snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	return res, res.prune(ctx, tbl, f, o)
}

// prepare returns the snapshot o selects and filter bound to its schema and
// compiled for the index.
func prepare(tbl *table.Table, filter iceberg.BooleanExpression, o Options) (*table.Snapshot, *predicate, error) {
	snap, schema, err := Snapshot(tbl, o.SnapshotID)
	if err != nil {
		return nil, nil, err
	}
	bound, err := where.Bind(schema, filter, o.CaseSensitive)
	if err != nil {
		return nil, nil, fmt.Errorf("lookup: %w", err)
	}
	f, err := compile(schema, bound)
	if err != nil {
		return nil, nil, fmt.Errorf("lookup: %w", err)
	}
	return snap, f, nil
}

// prune sets res.Candidates to res.AfterStats without the tasks of the
// files the index proves cannot match f, with what reading the index cost.
func (res *Result) prune(ctx context.Context, tbl *table.Table, f *predicate, o Options) error {
	tasks := res.AfterStats
	if f.root.kind == keepNode || len(tasks) == 0 {
		return nil // nothing for the index to do
	}
	fsys, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return fmt.Errorf("lookup: table file system: %w", err)
	}
	indexStart := time.Now()
	ix, errs := index.Load(ctx, fsys, tbl.Metadata(), o.Cache)
	r := &run{ix: ix, fsys: fsys, blockStats: blockStats{errs: errs}, hashed: make([][]typedHashes, len(f.tests))}
	files, byPath := r.files(f, tasks)
	r.match(f, files, byPath)
	if err := r.prune(ctx, f, files); err != nil {
		return err
	}
	res.Candidates = nil
	for _, t := range tasks {
		fc := &files[byPath[t.File.FilePath()]]
		if fc.pruned {
			continue
		}
		res.Candidates = append(res.Candidates, t)
		if !fc.listed && !r.indexed(f, fc) {
			res.Unindexed = append(res.Unindexed, fc.path)
		}
		fc.listed = true
	}
	res.IndexErrors, res.BlocksRead, res.BytesRead, res.Requests = r.errs, r.blocks, r.bytes, r.requests
	res.IndexTime = time.Since(indexStart)
	return nil
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
	ix     *index.TableIndex
	fsys   icebergio.IO
	hashed [][]typedHashes // by test.idx
	arena  probeArena
	blockStats
}

func (r *run) report(err error) { r.errs = append(r.errs, err) }

// files returns one check per data file of tasks (a large file may be split
// into several tasks) and the index of each file's check by path.
func (r *run) files(f *predicate, tasks []table.FileScanTask) ([]fileCheck, map[string]int) {
	byPath := make(map[string]int, len(tasks))
	files := make([]fileCheck, 0, len(tasks))
	for _, t := range tasks {
		path := t.File.FilePath()
		if _, ok := byPath[path]; !ok {
			byPath[path] = len(files)
			files = append(files, fileCheck{path: path, size: t.File.FileSizeBytes()})
		}
	}
	checks := make([]testCheck, len(files)*len(f.tests))
	for i := range files {
		files[i].checks = checks[i*len(f.tests) : (i+1)*len(f.tests) : (i+1)*len(f.tests)]
	}
	return files, byPath
}

// prune evaluates the filter for files and marks those it proves cannot
// match. It works in rounds: each file says which blocks it needs next, all
// of them are read together, and the files still undecided go on; an AND
// reads its other tests only for files its cheapest test could not prune.
func (r *run) prune(ctx context.Context, f *predicate, files []fileCheck) error {
	pending := make([]*fileCheck, len(files))
	for i := range files {
		pending[i] = &files[i]
	}
	var wanted []*probe
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

// match finds each file's applicable filter for each test's column, one
// pass over each segment's files (index.TableIndex.Match).
func (r *run) match(f *predicate, files []fileCheck, byPath map[string]int) {
	sizes := make([]int64, len(files))
	for i := range files {
		sizes[i] = files[i].size
	}
	testsOf := map[int][]int{} // test indexes by field id
	var fields []int
	for _, t := range f.tests {
		if testsOf[t.fieldID] == nil {
			fields = append(fields, t.fieldID)
		}
		testsOf[t.fieldID] = append(testsOf[t.fieldID], t.idx)
	}
	r.ix.Match(byPath, sizes, fields, func(i int, flt index.StoredFilter) {
		for _, ti := range testsOf[flt.FieldID] {
			if tc := &files[i].checks[ti]; !tc.indexed { // the first segment's wins
				tc.stored, tc.indexed = flt, true
			}
		}
	})
}

// indexed reports whether a data file has an applicable filter for every
// column of the filter's tests.
func (r *run) indexed(f *predicate, fc *fileCheck) bool {
	for _, t := range f.tests {
		if !fc.checks[t.idx].indexed {
			return false
		}
	}
	return true
}

// probeArena hands out probes from large slices, so that a lookup of many
// files allocates a few slices instead of a probe each; a probe never moves,
// so pointers to it stay valid.
type probeArena struct{ free []probe }

// take returns n zeroed probes.
func (a *probeArena) take(n int) []probe {
	if len(a.free) < n {
		a.free = make([]probe, max(n, 4096))
	}
	s := a.free[:n:n]
	a.free = a.free[n:]
	return s
}
