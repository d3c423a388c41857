package planning

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/singleflight"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve/wire"
	"github.com/icebloom/icebloom/index/where"
)

// Loaded is a table as a catalog answered for it, with the storage
// credentials the catalog vended along (passed on in plans unchanged).
type Loaded struct {
	Table       *table.Table
	Credentials []rest.StorageCredential
	// Access names the storage access the table's file IO reads with: ""
	// for serve's own storage configuration, else a digest of what the
	// catalog vended this caller (never the credentials themselves).
	// Everything the planner keeps of what it read (plans, base plans,
	// manifests, index directories) is kept under it, so what was read
	// with one caller's credentials is never answered to a caller with
	// other credentials or none. A table object of an Access other than ""
	// holds the caller's credentials in its file IO and is never kept.
	Access string
}

// Loader loads a table for a planning request. In proxy mode it asks the
// upstream catalog with the caller's own headers (from the context), so the
// upstream decides who may plan; in catalog mode it asks the catalog.
type Loader func(ctx context.Context, ident table.Identifier) (*Loaded, error)

// DefaultTasksPerPage is the number of data files a plan answers inline and
// in each plan task; a plan of more files comes in pages behind plan-tasks.
const DefaultTasksPerPage = 1000

// Planner plans scans of tables with iceberg-go, then lets the table's
// icebloom index drop the data files it proves cannot match (lookup.Plan).
// Its results are cached per table metadata location and request, within a
// memory budget, so a repeated plan of an unchanged table is answered from
// memory; a table's new metadata location is a new key, so a commit
// invalidates what was planned before it. A lookup of a new value (a filter
// with = or IN conjuncts) is planned from iceberg-go's plan of the rest of
// the filter, kept in memory too, without decoding a manifest: see the fast
// path in fastpath.go. Planner is safe for concurrent
// use and needs no HTTP: Plan is what the server's plan endpoint calls.
type Planner struct {
	load       Loader
	footers    *index.FooterCache
	results    *lruCache[*PlanResult]
	bases      *lruCache[*base]
	tables     *lruCache[*table.Table]
	manifests  *lruCache[[]byte]
	lastBases  lastBases
	baseFlight singleflight.Group // bases being made, by key
	planFlight singleflight.Group // plans being made, by cacheKey
	// plansMade counts the plans made (not from the cache, nor shared).
	plansMade    atomic.Int64
	work         *workBudget
	warmMu       sync.Mutex
	warmMisses   map[string]int64
	tasksPerPage int
	// manifestOpens counts the manifest files the planner's tables opened
	// (and so decoded), from memory or storage.
	manifestOpens atomic.Int64
}

// PlannerOptions configure NewPlanner.
type PlannerOptions struct {
	// MemoryBudget bounds the memory of planning: a sixteenth for plans
	// (charged what their pages hold, resultbytes.go; the server holds the
	// plans it answered in another sixteenth), half for the fast path's
	// base plans (charged what they hold: about 130 bytes a data file with
	// two indexed columns), an eighth for the table's metadata files:
	// manifest files, which only planning other than the fast path's, and
	// making base plans, reads (three quarters of the eighth), and the
	// table objects kept per metadata location (a quarter of it, charged
	// tableBytes), and a quarter for the plans being computed (workBudget:
	// a plan waits for room there; a lookup takes an eighth of it at
	// most); 0 keeps nothing and bounds no plan.
	MemoryBudget int64
	// MaxWorkWait is how long a plan waits for room in its quarter before
	// it fails with *BusyError; 0 means DefaultMaxWorkWait.
	MaxWorkWait time.Duration
	// TasksPerPage is the number of data files per page; 0 means
	// DefaultTasksPerPage.
	TasksPerPage int
}

// NewPlanner returns a planner loading tables with load.
func NewPlanner(load Loader, o PlannerOptions) *Planner {
	if o.TasksPerPage <= 0 {
		o.TasksPerPage = DefaultTasksPerPage
	}
	b := o.MemoryBudget
	return &Planner{
		load:         load,
		footers:      index.NewFooterCache(4096),
		results:      newLRU[*PlanResult](b / 16),
		bases:        newLRU[*base](b / 2),
		manifests:    newLRU[[]byte](b/8 - b/32),
		tables:       newLRU[*table.Table](b / 32),                // a quarter of the metadata's eighth
		work:         newWorkBudget(b-b/8-b/2-b/8, o.MaxWorkWait), // a quarter
		tasksPerPage: o.TasksPerPage,
	}
}

// PlanResult is a planned scan in the REST wire form: Pages[0] is answered
// inline, each later page through a plan task.
type PlanResult struct {
	Pages       []rest.ScanTasks
	Credentials []rest.StorageCredential
	// TableUUID and MetadataLocation name the table version planned.
	TableUUID, MetadataLocation string
	SnapshotID                  int64
	// FilesTotal is the snapshot's live data files, FilesAfterStats what
	// partitions and statistics left, FilesPlanned what the index left.
	FilesTotal, FilesAfterStats, FilesPlanned int
	// Unindexed is the number of planned files the index could not speak
	// for; IndexErrors the index's problems (their files were kept).
	Unindexed   int
	IndexErrors []string
	// Cached says the result came from the cache.
	Cached bool
	// FastPath says the plan was made from a base plan of the filter
	// without its = and IN conjuncts (fastpath.go), read from memory when
	// warm, rather than by iceberg-go planning the whole filter.
	FastPath bool
	// WarmMiss is why the plan was not made from a kept base plan, as
	// icebloom_serve_warm_path_misses_total counts it (base_made,
	// not_a_lookup, …); empty when it was, or when it came from the cache.
	WarmMiss string
	size     int64
	// spans are the least and greatest path key of each page (pagekeys.go).
	spans []KeyRange
}

// Bytes is the memory the result holds (its pages' Go values, counted as
// resultbytes.go says, erring upward), as the plan cache and the plan
// store charge it.
func (r *PlanResult) Bytes() int64 { return r.size }

// RequestError is a planning request the server cannot plan: a bad filter,
// an unknown column or snapshot. It is answered 400 BadRequestException.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

func badRequest(format string, args ...any) error {
	return &RequestError{Err: fmt.Errorf(format, args...)}
}

// Load loads the table ident with the planner's Loader (in proxy mode,
// with the caller's credentials the context carries).
func (p *Planner) Load(ctx context.Context, ident table.Identifier) (*Loaded, error) {
	return p.load(ctx, ident)
}

// KeptTable is the table object kept for a metadata location (a metadata
// location names one immutable metadata file), so that a loader need not
// parse that metadata again.
func (p *Planner) KeptTable(metadataLocation string) (*table.Table, bool) {
	if metadataLocation == "" {
		return nil, false
	}
	return p.tables.get(metadataLocation)
}

// ReserveWork reserves bytes of the memory plans work in, as each plan
// does before it runs, waiting for room up to PlannerOptions.MaxWorkWait
// (then *BusyError); release gives them back. Work of the server's that
// grows with a request reserves here too, so one budget bounds them all.
func (p *Planner) ReserveWork(ctx context.Context, bytes int64) (release func(), err error) {
	return p.work.reserve(ctx, bytes)
}

// Stats are a planner's figures for the server's /metrics.
type Stats struct {
	// ResultBytes, Results, Hits, Misses and Evictions are the plan
	// cache's.
	ResultBytes, Results, Hits, Misses, Evictions int64
	// WorkReserved is the memory the plans being computed reserved, of
	// WorkBudget.
	WorkReserved, WorkBudget int64
	// TurnWaits counts the plans of more than a quarter of WorkBudget that
	// waited for their turn after another such plan.
	TurnWaits int64
	// Caches are each cache's figures, by name: plans, bases (the fast
	// path's base plans), manifests, tables (the table objects kept per
	// metadata location).
	Caches map[string]CacheStats
	// WarmMisses count the plans the fast path did not make from a kept
	// base plan, by reason (see warmMiss).
	WarmMisses map[string]int64
}

// Stats returns the planner's figures now.
func (p *Planner) Stats() Stats {
	used, n, hits, misses, evicted := p.results.stats()
	caches := map[string]CacheStats{"plans": p.results.figures(), "bases": p.bases.figures(), "manifests": p.manifests.figures(),
		"tables": p.tables.figures()}
	p.warmMu.Lock()
	warm := maps.Clone(p.warmMisses)
	p.warmMu.Unlock()
	return Stats{ResultBytes: used, Results: int64(n), Hits: hits, Misses: misses, Evictions: evicted,
		WorkReserved: p.work.reserved.Load(), WorkBudget: p.work.size, TurnWaits: p.work.turnWaits.Load(), Caches: caches, WarmMisses: warm}
}

// Plan plans the scan req asks for of the table ident.
func (p *Planner) Plan(ctx context.Context, ident table.Identifier, req rest.PlanTableScanRequest) (*PlanResult, error) {
	loaded, err := p.load(ctx, ident)
	if err != nil {
		return nil, err
	}
	return p.PlanTable(ctx, loaded, req)
}

// reuse returns the table object kept for the same metadata location, so
// that iceberg-go's manifest-list cache of earlier plans serves this one,
// or keeps loaded's table for the next (within the tables' part of the
// budget, charged tableBytes). Either way the table reads its manifests
// through the planner's manifest cache (manifestIO), under loaded's
// storage access.
func (p *Planner) reuse(loaded *Loaded) *table.Table {
	tbl := loaded.Table
	key := tbl.MetadataLocation()
	keep := key != "" && loaded.Access == ""
	if keep {
		if kept, ok := p.tables.get(key); ok {
			return kept
		}
	}
	access := loaded.Access
	cached := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (icebergio.IO, error) {
		fsys, err := catalog.TableIO(ctx, tbl)
		if err != nil {
			return nil, err
		}
		return &manifestIO{IO: fsys, cache: p.manifests, access: access, opens: &p.manifestOpens}, nil
	}, nil)
	if keep {
		if n, known := tableBytes(tbl.Metadata()); known {
			p.tables.add(key, cached, n)
		}
	}
	return cached
}

// tableBytesPerMetadataByte is what a kept table object holds per byte of
// its metadata's JSON: the parsed metadata (measured: 2.2 bytes a byte for
// metadata of 3,000 snapshots, 1.5 MB of JSON), and room for iceberg-go's
// cache of the manifest lists it read, which grows with its plans.
const tableBytesPerMetadataByte = 4

// tableBytes estimates the memory a kept table object holds from the
// length of its metadata as JSON: a table of many snapshots, schemas or
// statistics files holds megabytes, and 64 of them were counted as 64
// entries (issue 33). A table whose metadata cannot be written as JSON
// has no known size, and is not kept.
func tableBytes(meta table.Metadata) (n int64, known bool) {
	b, err := json.Marshal(meta)
	if err != nil {
		return 0, false
	}
	return 4096 + tableBytesPerMetadataByte*int64(len(b)), true
}

// PlanTable plans the scan req asks for of a loaded table.
func (p *Planner) PlanTable(ctx context.Context, loaded *Loaded, req rest.PlanTableScanRequest) (*PlanResult, error) {
	tbl := p.reuse(loaded)
	key, err := cacheKey(tbl, loaded.Access, req)
	if err != nil {
		return nil, err
	}
	if res, ok := p.results.get(key); ok {
		out := *res
		out.Cached, out.WarmMiss, out.Credentials = true, "", loaded.Credentials
		return &out, nil
	}
	// Requests for the same plan at once share its making: iceberg-go
	// fetches a plan's tasks at once, and when the server's store had let
	// the plan go, each task planned it again, within one caller's share
	// of the work budget (2 of 3,520 answers were 429 at 1,000,000 files,
	// 16 clients). The plan is made under the first request's context:
	// one that went away fails the others' plan, which they make again.
	var res *PlanResult
	for {
		v, err, shared := p.planFlight.Do(key, func() (any, error) {
			res, err := p.plan(ctx, tbl, loaded.Access, req)
			// A plan made while the index could not be read kept files the
			// index would have dropped: it is answered (the index is
			// advisory) but not kept, so the next request reads the index
			// again rather than getting the unpruned plan until the table
			// changes.
			if err == nil && len(res.IndexErrors) == 0 {
				p.results.add(key, res, res.size)
			}
			return res, err
		})
		if err != nil && shared && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res = v.(*PlanResult)
		break
	}
	out := *res
	out.Credentials = loaded.Credentials
	return &out, nil
}

// cacheKey names a plan: the storage access it was read with, the table's
// metadata location (a commit makes a new one) and the request's fields
// that shape the plan.
func cacheKey(tbl *table.Table, access string, req rest.PlanTableScanRequest) (string, error) {
	shape := struct {
		UUID string
		Req  rest.PlanTableScanRequest
	}{tbl.Metadata().TableUUID().String(), req}
	shape.Req.MinRowsRequested = nil // a hint that changes nothing planned
	b, err := json.Marshal(shape)
	if err != nil {
		return "", fmt.Errorf("plan cache key: %w", err)
	}
	// A catalog that names no metadata location still changes the
	// metadata's last-updated time with every commit.
	return fmt.Sprintf("%s\x00%s\x00%d\x00%s", access, tbl.MetadataLocation(), tbl.Metadata().LastUpdatedMillis(), b), nil
}

func (p *Planner) plan(ctx context.Context, tbl *table.Table, access string, req rest.PlanTableScanRequest) (*PlanResult, error) {
	p.plansMade.Add(1)
	caseSensitive := req.CaseSensitive == nil || *req.CaseSensitive // the spec's default
	schema := tbl.Schema()
	if req.SnapshotID != nil {
		snap := tbl.SnapshotByID(*req.SnapshotID)
		if snap == nil {
			return nil, badRequest("table has no snapshot %d", *req.SnapshotID)
		}
		if req.UseSnapshotSchema != nil && *req.UseSnapshotSchema && snap.SchemaID != nil {
			if s, ok := tbl.Schemas()[*snap.SchemaID]; ok {
				schema = s
			}
		}
	}
	filter, err := parseFilter(req.Filter, schema, caseSensitive)
	if err != nil {
		return nil, err
	}
	for _, name := range req.Select {
		if _, ok := findField(schema, name, caseSensitive); !ok {
			return nil, badRequest("select: no column %q", name)
		}
	}
	statsFields := map[int]bool{}
	for _, name := range req.StatsFields {
		f, ok := findField(schema, name, caseSensitive)
		if !ok {
			return nil, badRequest("stats-fields: no column %q", name)
		}
		statsFields[f.ID] = true
	}

	o := lookup.Options{SnapshotID: req.SnapshotID, CaseSensitive: caseSensitive, Cache: p.footers.Scoped(access)}
	planned, afterStats, miss, err := p.fastPlan(ctx, tbl, access, filter, o, statsFields)
	fast := planned != nil && err == nil
	switch {
	case isBusy(err):
		miss = warmBusy
	case err != nil:
		miss = warmError
	}
	if miss != "" {
		p.warmMu.Lock()
		if p.warmMisses == nil {
			p.warmMisses = map[string]int64{}
		}
		p.warmMisses[string(miss)]++
		p.warmMu.Unlock()
	}
	if !fast && !isBusy(err) { // not for the fast path, or it failed: the usual path reports why
		planned, err = p.coldPlan(ctx, tbl, filter, o)
		if err == nil {
			afterStats = distinctFiles(planned.AfterStats)
		}
	}
	if err != nil {
		var unknown *where.UnknownColumnError
		if errors.As(err, &unknown) || errors.Is(err, iceberg.ErrInvalidArgument) || errors.Is(err, iceberg.ErrType) {
			return nil, &RequestError{Err: err}
		}
		return nil, fmt.Errorf("plan scan of %s: %w", tbl.Identifier(), err)
	}
	// The answer is made within the work budget too: the candidates'
	// tasks and their pages, until the caches hold the result (charged
	// there). Unreserved, 16 clients' plans of 3,600 files each at
	// 1,000,000 files took the server's live heap to 274 MiB of a 256 MiB
	// budget.
	release, err := p.work.reserve(ctx, int64(len(planned.Candidates))*answerBytesPerFile)
	if err != nil {
		return nil, fmt.Errorf("plan scan of %s: %w", tbl.Identifier(), err)
	}
	defer release()
	res := &PlanResult{
		TableUUID:        tbl.Metadata().TableUUID().String(),
		MetadataLocation: tbl.MetadataLocation(),
		SnapshotID:       planned.SnapshotID,
		FilesTotal:       planned.FilesTotal,
		FilesAfterStats:  afterStats,
		Unindexed:        len(planned.Unindexed),
		FastPath:         fast,
		WarmMiss:         string(miss),
	}
	for _, e := range planned.IndexErrors {
		res.IndexErrors = append(res.IndexErrors, e.Error())
	}
	bound, err := where.Bind(schema, filter, caseSensitive)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	residual := newResiduals(tbl.Metadata(), schema, bound, caseSensitive)
	// The tasks get their residuals as copies: the fast path's are its base
	// plan's, shared with other requests, and must not be written. A task
	// whose residual is false (its partition rules the filter out, as when
	// lookup.PlanFiles had to leave a column's predicates out) is not sent.
	tasks := make([]table.FileScanTask, 0, len(planned.Candidates))
	for _, task := range planned.Candidates {
		if task.Residual, err = residual.of(task.File); err != nil {
			return nil, fmt.Errorf("plan scan of %s: %s: %w", tbl.Identifier(), task.File.FilePath(), err)
		}
		if _, none := task.Residual.(iceberg.AlwaysFalse); !none {
			tasks = append(tasks, task)
		}
	}
	for _, page := range pageTasks(tasks, p.tasksPerPage) {
		res.spans = append(res.spans, KeyRange{PathKey(page[0].File.FilePath()), PathKey(page[len(page)-1].File.FilePath())})
		env, err := wire.ScanTasks(tbl.Metadata(), page, statsFields)
		if err != nil {
			return nil, fmt.Errorf("encode plan of %s: %w", tbl.Identifier(), err)
		}
		res.FilesPlanned += len(env.FileScanTasks)
		res.Pages = append(res.Pages, env)
	}
	if len(res.Pages) == 0 {
		res.Pages = []rest.ScanTasks{{}}
	}
	res.size = res.heldBytes() // resultbytes.go: counted, not marshalled
	return res, nil
}

// answerBytesPerFile is what making the answer allocates per planned
// file: the candidate's task, its copy with a residual, its page's REST
// task (a warm lookup of 1,000,000 files allocated 9 MB more for 3,600
// files planned than for 65).
const answerBytesPerFile = 2560

// coldPlan is lookup.Plan within the work budget.
func (p *Planner) coldPlan(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, o lookup.Options) (*lookup.Result, error) {
	snap, _, err := lookup.Snapshot(tbl, o.SnapshotID)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	if snap != nil {
		release, err := p.work.reserve(ctx, coldWorkBytes(tbl, snap))
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return lookup.Plan(ctx, tbl, filter, o)
}

func isBusy(err error) bool {
	var busy *BusyError
	return errors.As(err, &busy)
}

func findField(schema *iceberg.Schema, name string, caseSensitive bool) (iceberg.NestedField, bool) {
	if caseSensitive {
		return schema.FindFieldByName(name)
	}
	return schema.FindFieldByNameCaseInsensitive(name)
}

func distinctFiles(tasks []table.FileScanTask) int {
	seen := make(map[string]struct{}, len(tasks))
	for _, t := range tasks {
		seen[t.File.FilePath()] = struct{}{}
	}
	return len(seen)
}

// pageTasks groups tasks by data file (keeping the splits of one file
// together, in their first file's order), orders the files by PathKey (then
// path) and cuts them into pages of at most per files, never between two
// files of one key (pagekeys.go): each page is a range of keys.
func pageTasks(tasks []table.FileScanTask, per int) [][]table.FileScanTask {
	type file struct {
		key  uint64
		path string
	}
	order := []file{}
	byFile := map[string][]table.FileScanTask{}
	for _, t := range tasks {
		path := t.File.FilePath()
		if _, ok := byFile[path]; !ok {
			order = append(order, file{PathKey(path), path})
		}
		byFile[path] = append(byFile[path], t)
	}
	slices.SortFunc(order, func(a, b file) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	var pages [][]table.FileScanTask
	var page []table.FileScanTask
	files := 0
	for i, f := range order {
		if files >= per && f.key != order[i-1].key {
			pages, page, files = append(pages, page), nil, 0
		}
		page = append(page, byFile[f.path]...)
		files++
	}
	if files > 0 {
		pages = append(pages, page)
	}
	return pages
}

// HoldWork reserves bytes of the memory plans work in for what a request
// holds while its plan is made (its body, then the request and filter
// decoded from it: Hold.Shrink), within ctx's share (WithShare), waiting
// for room as ReserveWork does. Planning with the returned context takes
// the plan's own reservations together with the hold when they must wait,
// so what the request holds is counted for the plan's whole duration and
// no plan waits while holding room; Hold.Release gives it back. All the
// reservations made with the returned context count as the request's
// one, which its share lets pass when the caller holds nothing else; a
// hold of 0 bytes reserves nothing and only marks them so.
func (p *Planner) HoldWork(ctx context.Context, bytes int64) (context.Context, *Hold, error) {
	return p.work.hold(ctx, bytes)
}
