// Package serve is an Iceberg REST catalog server that plans scans with the
// icebloom index (REST server-side scan planning), so every engine that lets
// its catalog plan opens only the data files the index leaves.
//
// It runs in two modes. As a proxy (Options.Upstream) in front of a REST
// catalog, it forwards every request unchanged except that GET /v1/config
// advertises the planning endpoints, a loaded table with an index is opted
// into server planning (config scan-planning-mode=server), and the planning
// endpoints are answered here, with the table loaded from the upstream with
// the caller's own headers, so the upstream's access control decides. Over
// a catalog (Options.Catalog) it serves the read endpoints and planning, and
// refuses writes.
//
// This package is the HTTP side: routes, the proxy, catalog mode, the plan
// store (plans answered at once or submitted and polled, bound to their
// caller), limits and /metrics. Planning itself is package planning; the
// JSON it answers with, package wire.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/singleflight"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/serve/wire"

	"github.com/icebloom/icebloom/index/serve/planning"
)

// Defaults of Options.
const (
	DefaultMemoryBudget     = 256 << 20
	DefaultMaxPlansInFlight = 16
	DefaultMaxRequestBytes  = 8 << 20
	DefaultPlanTimeout      = 2 * time.Minute
	DefaultSubmitAfter      = 10 * time.Second
)

// Options configure New. Exactly one of Upstream and Catalog is set.
type Options struct {
	// Upstream is the REST catalog proxied (its URI, as clients have it).
	Upstream *url.URL
	// Transport carries requests to the upstream; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// StorageProperties, in proxy mode, configure the file IO every table
	// is read with (s3.endpoint, s3.region, credentials: iceberg-go's io
	// keys), beneath what the upstream's load answer says of the table;
	// table properties never do. In catalog mode, where the catalog reads
	// with the properties it was opened with, they are what clients are
	// told of storage (ClientStorageConfig): the same properties.
	StorageProperties iceberg.Properties
	// PlanWithOwnCredentials, in proxy mode, plans a table whose load
	// answer vends the caller no storage credentials (no
	// storage-credentials for its location, no credentials in config) with
	// serve's own (StorageProperties, the environment): whoever the
	// upstream lets load a table then gets its file paths, partition
	// values and, with stats-fields, column bounds, read with serve's
	// access. Unset, such a plan is refused 403 ForbiddenException.
	// Catalog mode always plans with the catalog's storage configuration,
	// for whoever holds BearerToken.
	PlanWithOwnCredentials bool
	// VendCredentials, in catalog mode, puts the S3 credentials of
	// StorageProperties in every load-table answer's config, so that a
	// client configured with nothing of storage reads the files; every
	// caller allowed to load a table then holds them. Without it no
	// credential is ever answered.
	VendCredentials bool
	// StorageTimeout bounds each request to the tables' storage and each
	// table load (catalog mode: the catalog's query and the metadata
	// file's read): past it the request fails, answered 503 with
	// Retry-After. 0 means DefaultStorageTimeout.
	StorageTimeout time.Duration
	// Catalog is the catalog served in catalog mode.
	Catalog icecatalog.Catalog
	// BearerToken, in catalog mode, is the token every /v1 request must
	// carry ("Authorization: Bearer …"); "" requires none.
	BearerToken string
	// Hosts are the Host header values accepted; others are answered 421.
	// Empty accepts any (as behind a load balancer that names us variously).
	Hosts []string
	// MemoryBudget bounds the memory of planning: what is kept warm
	// (plans, the fast path's base plans, manifest files) and what the
	// plans being computed work in (planning.PlannerOptions.MemoryBudget); 0 means
	// DefaultMemoryBudget, negative caches nothing and bounds no plan.
	MemoryBudget int64
	// MaxPlansInFlight bounds the plans computed at once; a plan request
	// beyond it waits for a slot up to MaxSlotWait, then is answered 429
	// with Retry-After. 0 means the default.
	MaxPlansInFlight int
	// MaxSlotWait is how long a plan request (or a poll's or page's table
	// load) waits for a slot when all are taken; 0 means
	// DefaultMaxSlotWait, negative does not wait.
	MaxSlotWait time.Duration
	// MaxPlansPerCaller bounds the plans one caller (admission.go) has
	// being computed at once, and apart the table loads of its polls and
	// plan tasks (which MaxPlansInFlight bounds apart too); beyond it the
	// caller is answered 429 with Retry-After, while others are taken. 0
	// means a quarter of MaxPlansInFlight (at least 1).
	MaxPlansPerCaller int
	// MaxRequestBytes bounds request bodies (413 beyond); 0 means the
	// default.
	MaxRequestBytes int64
	// MaxConns bounds the connections Serve serves at once; 0 means
	// DefaultMaxConns.
	MaxConns int
	// PlanTimeout bounds the time of one plan; 0 means the default.
	PlanTimeout time.Duration
	// NoScanPlanningMode keeps load-table responses as they are, without
	// scan-planning-mode=server for indexed tables.
	NoScanPlanningMode bool
	// TasksPerPage is the data files per page of a plan (plan-tasks beyond
	// the first); 0 means planning.DefaultTasksPerPage.
	TasksPerPage int
	// MaxWorkWait is how long a plan waits for room in the memory plans
	// work in before it is answered 429; 0 means
	// planning.DefaultMaxWorkWait.
	MaxWorkWait time.Duration
	// PlanTTL is how long plans are held; 0 means DefaultPlanTTL.
	PlanTTL time.Duration
	// SubmitAfter is how long a plan request waits for its plan: a plan
	// not done by then is answered status submitted, and the client polls
	// GET .../plan/{id} (the spec's asynchronous planning), so a long cold
	// plan never runs into a client's or load balancer's HTTP timeout. 0
	// means DefaultSubmitAfter; negative waits for every plan.
	SubmitAfter time.Duration
	// Committed, in proxy mode, is told of each table a commit passing
	// through changed, once the upstream answered 2xx, with the REST
	// {prefix} of the commit's path (unescaped; "" without one), which a
	// sync of the table must use too. It must not block.
	Committed func(prefix string, ident table.Identifier)
	// SyncStats, when set, gives the commit syncer's counters for /metrics.
	SyncStats func() SyncStats
	// Logger takes one record per request (never a header's value); nil
	// discards.
	Logger *slog.Logger
	// Now is the clock of plan expiry; nil means time.Now.
	Now func() time.Time
	// ReplicaSecret, shared by the replicas behind one Service (at least
	// MinReplicaSecretBytes), makes plan ids and plan tasks tokens that
	// any of them answers (replicas.go); nil makes them tokens of a secret
	// the server makes at start, answered by it alone, and again when its
	// plan store let their plans go for room.
	ReplicaSecret []byte
}

// Server is the HTTP handler of icebloom serve.
type Server struct {
	o        Options
	planner  *planning.Planner
	metrics  *metrics
	plans    *planStore
	proxy    *httputil.ReverseProxy
	client   *http.Client
	admitter *admission
	replicas *replicas // Options.ReplicaSecret's, or one of the server's own
	// versionLoads shares, in catalog mode, a load of one table version
	// (by metadata location) among the requests that want it at once.
	versionLoads singleflight.Group
	ready        atomic.Bool
	log          *slog.Logger

	// The upstream's last answer to the readiness probe (upstreamReady).
	readyMu sync.Mutex
	readyAt time.Time
	readyOK bool
	// The tables whose storage the readiness probe reads (storageReady).
	probes storageProbes
}

// New returns a server for o.
func New(o Options) (*Server, error) {
	if (o.Upstream == nil) == (o.Catalog == nil) {
		return nil, errors.New("serve: exactly one of an upstream catalog URL and a catalog is needed")
	}
	if o.Upstream != nil && (o.Upstream.Scheme != "http" && o.Upstream.Scheme != "https" || o.Upstream.Host == "") {
		return nil, fmt.Errorf("serve: upstream %q is not an http(s) URL", o.Upstream.Redacted())
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.MaxPlansInFlight <= 0 {
		o.MaxPlansInFlight = DefaultMaxPlansInFlight
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.PlanTimeout <= 0 {
		o.PlanTimeout = DefaultPlanTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.SubmitAfter == 0 {
		o.SubmitAfter = DefaultSubmitAfter
	}
	if o.StorageTimeout <= 0 {
		o.StorageTimeout = DefaultStorageTimeout
	}
	if o.VendCredentials && o.Catalog == nil {
		return nil, errors.New("serve: vending storage credentials is for catalog mode; in proxy mode the upstream catalog vends them")
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, plans: newPlanStore(o.PlanTTL, o.Now, max(o.MemoryBudget, 0)/16), log: o.Logger, metrics: newMetrics()}
	secret := o.ReplicaSecret
	if secret == nil {
		// A secret of its own: its plan ids and plan tasks are tokens too,
		// answered again when their plans were evicted from its memory.
		secret = make([]byte, MinReplicaSecretBytes)
		rand.Read(secret)
	}
	if len(secret) < MinReplicaSecretBytes {
		return nil, fmt.Errorf("serve: a replica secret of %d bytes; want %d or more", len(secret), MinReplicaSecretBytes)
	}
	s.replicas = newReplicas(secret, o.Now)
	load := s.loadFromCatalog
	if o.Upstream != nil {
		s.client = &http.Client{Transport: o.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		s.proxy = s.newProxy()
		load = s.loadFromUpstream
	}
	s.planner = planning.NewPlanner(load, planning.PlannerOptions{MemoryBudget: max(o.MemoryBudget, 0), TasksPerPage: o.TasksPerPage, MaxWorkWait: o.MaxWorkWait})
	s.admitter = newAdmission(o.MaxPlansInFlight, o.MaxPlansPerCaller, s.planner.Stats().WorkBudget, o.MaxSlotWait)
	s.ready.Store(true)
	return s, nil
}

// Planner is the server's planner, for planning without HTTP (benchmarks).
// In proxy mode its loader takes the caller's headers from WithHeader.
func (s *Server) Planner() *planning.Planner { return s.planner }

// SetReady sets what /readyz answers: a server shutting down is not ready.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// statusWriter records the status of a response, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	kind := s.serve(sw, r)
	s.metrics.request(string(kind))
	// The path is logged without its query and without a plan id (which
	// with the caller's credential fetches the plan); headers never are:
	// the Authorization value, cookies and vended credentials stay out of
	// logs.
	s.log.Info("request", "method", r.Method, "path", logPath(r.URL.Path, kind), "route", string(kind),
		"status", sw.status, "duration", time.Since(start))
}

// maxLoggedPath bounds the path in a log line: a client's 1 MiB path is
// not a 1 MiB log line.
const maxLoggedPath = 512

// logPath is the path of a request as the log shows it: a plan id
// replaced by {plan-id}, and cut to maxLoggedPath bytes.
func logPath(path string, kind routeKind) string {
	if kind == routePlanID {
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			path = path[:i+1] + "{plan-id}"
		}
	}
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "…"
	}
	return path
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) routeKind {
	if r.Method == http.MethodConnect {
		writeError(w, http.StatusMethodNotAllowed, "BadRequestException", "CONNECT is not served: this is not a forward proxy")
		return routeOther
	}
	if !strings.HasPrefix(r.RequestURI, "/") {
		writeError(w, http.StatusBadRequest, "BadRequestException", "only origin-form request targets (a path) are served: this is not a forward proxy")
		return routeOther
	}
	if len(s.o.Hosts) > 0 && !slices.Contains(s.o.Hosts, r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "BadRequestException", fmt.Sprintf("host %q is not served here", r.Host))
		return routeOther
	}
	switch r.URL.Path {
	case "/healthz":
		io.WriteString(w, "ok\n")
		return "healthz"
	case "/readyz":
		switch {
		case !s.ready.Load():
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		case s.proxy != nil && !s.upstreamReady(r.Context()):
			http.Error(w, "the upstream catalog does not answer", http.StatusServiceUnavailable)
		case !s.storageReady(r.Context()):
			http.Error(w, "the tables' storage does not answer", http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ready\n")
		}
		return "readyz"
	case "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.writeMetrics(w)
		return "metrics"
	}
	escaped := r.URL.EscapedPath()
	if err := unsafePath(escaped); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return routeOther
	}
	if r.ContentLength > s.o.MaxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestException",
			fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, s.o.MaxRequestBytes))
		return routeOther
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxRequestBytes)
	rt := parseRoute(escaped)
	if s.o.Catalog != nil && !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "NotAuthorizedException", "missing or wrong bearer token")
		return rt.kind
	}
	switch {
	case rt.kind == routePlan && r.Method == http.MethodPost:
		s.planScan(w, r, rt)
	case rt.kind == routePlanID && r.Method == http.MethodGet:
		s.fetchPlan(w, r, rt)
	case rt.kind == routePlanID && r.Method == http.MethodDelete:
		s.cancelPlan(w, r, rt)
	case rt.kind == routeTasks && r.Method == http.MethodPost:
		s.fetchTasks(w, r, rt)
	case s.proxy != nil:
		s.forward(w, r, rt)
	default:
		s.serveCatalog(w, r, rt)
	}
	return rt.kind
}

// authorized checks the catalog mode's bearer token.
func (s *Server) authorized(r *http.Request) bool {
	if s.o.BearerToken == "" {
		return true
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(token), []byte(s.o.BearerToken)) == 1
}

func (s *Server) writeMetrics(w io.Writer) {
	ps := s.planner.Stats()
	var st *SyncStats
	if s.o.SyncStats != nil {
		v := s.o.SyncStats()
		st = &v
	}
	s.metrics.write(w, ps.ResultBytes, int(ps.Results), ps.Hits, ps.Misses, ps.Evictions, st)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_work_bytes Memory reserved by the plans being computed, of the memory budget's quarter for them.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_work_bytes gauge")
	fmt.Fprintf(w, "icebloom_serve_plan_work_bytes %d\n", ps.WorkReserved)
	fmt.Fprintln(w, "# HELP icebloom_serve_plan_work_budget_bytes The memory budget's part for the plans being computed.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plan_work_budget_bytes gauge")
	fmt.Fprintf(w, "icebloom_serve_plan_work_budget_bytes %d\n", ps.WorkBudget)
	names := slices.Sorted(maps.Keys(ps.Caches))
	for _, fam := range []struct {
		name, typ, help string
		value           func(planning.CacheStats) int64
	}{
		{"icebloom_serve_cache_bytes", "gauge", "Memory each cache of planning holds, by cache: plans, bases (the fast path's base plans), manifests, tables (the table objects kept per metadata location).",
			func(c planning.CacheStats) int64 { return c.Bytes }},
		{"icebloom_serve_cache_budget_bytes", "gauge", "Each cache's part of the memory budget.", func(c planning.CacheStats) int64 { return c.Budget }},
		{"icebloom_serve_cache_entries", "gauge", "Entries each cache holds.", func(c planning.CacheStats) int64 { return c.Entries }},
		{"icebloom_serve_cache_evictions_total", "counter", "Entries each cache evicted to stay within its part of the budget.", func(c planning.CacheStats) int64 { return c.Evictions }},
		{"icebloom_serve_cache_unkept_total", "counter", "Entries larger than each cache's whole part of the budget, not kept: for bases, every plan of that table makes its base again (raise --memory-budget-mib).",
			func(c planning.CacheStats) int64 { return c.Unkept }},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", fam.name, fam.help, fam.name, fam.typ)
		for _, name := range names {
			fmt.Fprintf(w, "%s{cache=%q} %d\n", fam.name, name, fam.value(ps.Caches[name]))
		}
	}
	fmt.Fprintln(w, "# HELP icebloom_serve_cache_lookups_total Lookups in each cache, by result.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_cache_lookups_total counter")
	for _, name := range names {
		fmt.Fprintf(w, "icebloom_serve_cache_lookups_total{cache=%q,result=\"hit\"} %d\n", name, ps.Caches[name].Hits)
		fmt.Fprintf(w, "icebloom_serve_cache_lookups_total{cache=%q,result=\"miss\"} %d\n", name, ps.Caches[name].Misses)
	}
	fmt.Fprintln(w, "# HELP icebloom_serve_warm_path_misses_total Plans not made from a kept base plan, by reason: not_a_lookup (no = or IN conjunct), stats_fields (column statistics asked for), base_made (the first plan of a table version, or after an eviction), base_new_column (the base made again for another column), base_not_kept (the base is larger than the budget's part for bases: every plan makes it), busy, error.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_warm_path_misses_total counter")
	for _, reason := range slices.Sorted(maps.Keys(ps.WarmMisses)) {
		fmt.Fprintf(w, "icebloom_serve_warm_path_misses_total{reason=%q} %d\n", reason, ps.WarmMisses[reason])
	}
	fmt.Fprintln(w, "# HELP icebloom_serve_stored_plan_bytes Memory held by the plans answered and kept for their plan tasks and polls, of its sixteenth of the memory budget.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_stored_plan_bytes gauge")
	fmt.Fprintf(w, "icebloom_serve_stored_plan_bytes %d\n", s.plans.held())
	fmt.Fprintln(w, "# HELP icebloom_serve_stored_plan_budget_bytes The memory budget's part for stored plans.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_stored_plan_budget_bytes gauge")
	fmt.Fprintf(w, "icebloom_serve_stored_plan_budget_bytes %d\n", s.plans.budget)
	fmt.Fprintln(w, "# HELP icebloom_serve_plans_in_flight Plans being computed.")
	fmt.Fprintln(w, "# TYPE icebloom_serve_plans_in_flight gauge")
	fmt.Fprintf(w, "icebloom_serve_plans_in_flight %d\n", s.admitter.inFlight())
}

// writeError writes the REST spec's ErrorModel.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, wire.NewError(status, typ, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(wire.NewError(status, "ServerErrorException", err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// planScan answers POST .../plan: a completed plan, its first page inline
// and the others behind plan-tasks, or, when the plan is not done within
// SubmitAfter, status submitted with its plan id; planning goes on, in its
// slot of MaxPlansInFlight, and the client polls for it (fetchPlan).
func (s *Server) planScan(w http.ResponseWriter, r *http.Request, rt route) {
	if !jsonRequest(w, r) {
		return
	}
	// The body's size is looked at before anything is taken: a body that
	// could not be held within the whole work budget is refused at once.
	// Then the slot is taken before the body is read, so that bodies are
	// read for at most MaxPlansInFlight plans at once, and at most
	// MaxPlansPerCaller of one caller (admission.go). The request holds
	// memory of the work budget from before its body is read to its plan's
	// end (planning.Hold): while it is read, what the part of its body read
	// may hold (its first planning.BodyStep bytes, then its whole size:
	// planning.GrowingReader); once decoded, what its filter holds while
	// the plan is made. The body is looked at as it arrives, and an IN far
	// past the limit or a filter nested too deep refused before the rest is
	// read.
	workBudget := s.planner.Stats().WorkBudget
	if workBudget > 0 && r.ContentLength > 0 && planning.RequestWorkBytes(r.ContentLength) > workBudget {
		s.metrics.count("bad_request")
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestException", fmt.Sprintf(
			"a plan request of %d bytes would hold %d MiB while planned, more than the %d MiB all plans work in", r.ContentLength,
			(planning.RequestWorkBytes(r.ContentLength)+1<<20-1)>>20, workBudget>>20))
		return
	}
	freeSlot, share, refused := s.admitter.admit(r.Context(), s.callerOf(r))
	if refused != nil {
		s.refuse(w, refused)
		return
	}
	size := r.ContentLength
	if size > s.o.MaxRequestBytes {
		size = s.o.MaxRequestBytes
	}
	// The plan outlives the request when it is submitted: its context is
	// the caller's headers (cloned: the request's are not the plan's to
	// keep) and its share of the work budget, under the plan timeout, not
	// the request's; each request it sends to storage is bounded by the
	// storage timeout.
	caller := WithHeader(planning.WithShare(context.WithoutCancel(r.Context()), share), r.Header.Clone(), rt.prefix)
	ctx, cancel := context.WithTimeout(catalog.WithRequestTimeout(caller, s.o.StorageTimeout), s.o.PlanTimeout)
	first := int64(planning.BodyStep)
	if size >= 0 {
		first = min(size, first)
	}
	ctx, hold, err := s.planner.HoldWork(ctx, planning.RequestWorkBytes(first))
	if err != nil {
		cancel()
		freeSlot()
		s.planError(w, err)
		return
	}
	release := func() { // the hold, then the slot: nothing of the caller's is held once its slot is free
		hold.Release()
		freeSlot()
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{planning.CheckFilterReader(planning.GrowingReader(ctx, hold, r.Body, size)), r.Body}
	body, ok := s.readBody(w, r)
	if !ok {
		cancel()
		release()
		return
	}
	var req planRequest
	err = json.Unmarshal(body, &req)
	if err != nil {
		cancel()
		release()
		writeError(w, http.StatusBadRequest, "BadRequestException", fmt.Sprintf("plan request: %v", err))
		return
	}
	hold.Shrink(planning.RequestWorkBytes(requestBytes(req.PlanTableScanRequest)))
	if req.StartSnapshotID != nil || req.EndSnapshotID != nil {
		cancel()
		release()
		writeError(w, http.StatusNotAcceptable, "UnsupportedOperationException", "incremental scan planning (start-snapshot-id, end-snapshot-id) is not supported")
		return
	}
	loaded, err := s.planner.Load(ctx, rt.ident())
	s.noteTable(rt.ident(), loaded, err)
	if err != nil {
		cancel()
		release()
		s.planError(w, err)
		return
	}
	ids := s.newIDs(r, rt, loaded, req.PlanTableScanRequest)
	s.planWithin(w, rt, ctx, cancel, release, loaded, req.PlanTableScanRequest, ownerOf(r), ids, func(id string, p *storedPlan) {
		if p == nil {
			writeJSON(w, http.StatusOK, rest.PlanTableScanResponse{Status: rest.PlanStatusSubmitted, PlanID: &id})
			return
		}
		writeJSON(w, http.StatusOK, rest.PlanTableScanResponse{
			Status: rest.PlanStatusCompleted, PlanID: &id, ScanTasks: p.first, StorageCredentials: p.creds,
		})
	})
}

// planWithin plans req on loaded with ctx in the background, release
// called when it is done, and answers within SubmitAfter: with the plan
// completed and stored under a new id (answer gets it), or submitted
// (answer gets the id and a nil plan) and stored when it completes or
// fails; cancel ends ctx once the plan is done or answered.
func (s *Server) planWithin(w http.ResponseWriter, rt route, ctx context.Context, cancel context.CancelFunc, release func(),
	loaded *planning.Loaded, req rest.PlanTableScanRequest, owner string, ids *sharedIDs, answer func(id string, p *storedPlan)) {
	type outcome struct {
		res *planning.PlanResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer release()
		start := time.Now()
		res, err := s.planner.PlanTable(ctx, loaded, req)
		if err == nil {
			s.metrics.planned(res, res.Cached, time.Since(start))
			s.logPlan(rt, res, time.Since(start))
		}
		done <- outcome{res, err}
	}()
	var wait <-chan time.Time
	if s.o.SubmitAfter > 0 {
		timer := time.NewTimer(s.o.SubmitAfter)
		defer timer.Stop()
		wait = timer.C
	}
	select {
	case out := <-done:
		cancel()
		if out.err != nil {
			s.planError(w, out.err)
			return
		}
		id, p := s.plans.add(rt.key(), owner, out.res, ids)
		answer(id, &p)
	case <-wait:
		id := s.plans.submit(rt.key(), loaded.Table.Metadata().TableUUID().String(), owner, cancel, ids)
		s.metrics.count("submitted")
		go func() {
			defer cancel()
			out := <-done
			if out.err != nil {
				status, typ, msg := s.failure(out.err)
				s.plans.fail(id, &rest.PlanningError{Message: msg, Type: typ, Code: status})
				return
			}
			s.plans.complete(id, out.res)
		}()
		answer(id, nil)
	}
}

// logPlan logs a plan made at info, with what the index did: the data
// files in the snapshot, after partitions and statistics, and after the
// index (a user trying serve sees it prune).
func (s *Server) logPlan(rt route, res *planning.PlanResult, d time.Duration) {
	how := "planned"
	switch {
	case res.Cached:
		how = "cached"
	case res.FastPath:
		how = "fast path"
	}
	s.log.Info("plan", "table", strings.Join(rt.ident(), "."), "snapshot", res.SnapshotID,
		"files_in_snapshot", res.FilesTotal, "files_after_statistics", res.FilesAfterStats,
		"files_after_index", res.FilesPlanned, "unindexed", res.Unindexed, "index_errors", len(res.IndexErrors),
		"how", how, "warm_miss", res.WarmMiss, "duration", d)
	if len(res.IndexErrors) > 0 {
		// The plan kept the files the index could not speak for; an
		// operator needs to know that the index is not being read.
		s.log.Warn("plan kept files the index could not be read for", "table", strings.Join(rt.ident(), "."),
			"errors", len(res.IndexErrors), "first", res.IndexErrors[0])
	}
}

// planRequest is a plan request as read: the fields of a point-in-time
// plan, and those of an incremental one, which is refused.
type planRequest struct {
	rest.PlanTableScanRequest
	StartSnapshotID json.RawMessage `json:"start-snapshot-id"`
	EndSnapshotID   json.RawMessage `json:"end-snapshot-id"`
}

// requestBytes is the bytes of a decoded plan request that its plan
// holds: its filter (parsed, bound and split while planning) and its
// column names.
func requestBytes(req rest.PlanTableScanRequest) int64 {
	n := int64(len(req.Filter))
	for _, names := range [][]string{req.Select, req.StatsFields} {
		for _, name := range names {
			n += int64(len(name)) + 16
		}
	}
	return n
}

// jsonRequest refuses a POST whose body is not JSON (400, the status the
// spec lists for a bad request): the REST protocol's bodies are, and a
// browser can send another content type (a "simple" text/plain POST)
// across sites without asking the server first, so that a web page cannot
// make a developer's loopback server plan.
func jsonRequest(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusBadRequest, "BadRequestException",
			fmt.Sprintf("a %s body is JSON: Content-Type application/json, not %q", r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], r.Header.Get("Content-Type")))
		return false
	}
	return true
}

// planError answers a failed plan: the upstream's own answer passed on, or
// the error the failure is.
func (s *Server) planError(w http.ResponseWriter, err error) {
	var st *statusError
	if errors.As(err, &st) && st.status < 500 { // the upstream's refusal, the caller's to read
		s.metrics.count("upstream_error")
		copyHeader(w.Header(), st.header)
		w.WriteHeader(st.status)
		w.Write(st.body)
		return
	}
	status, typ, msg := s.failure(err)
	if _, ok := classifyStorage(err); ok && status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", storageRetryAfter)
	} else if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, status, typ, msg)
}

// failure is the status, the REST error type and the message of a failed
// plan, counted in the metrics.
func (s *Server) failure(err error) (status int, typ, msg string) {
	var st *statusError
	var bad *planning.RequestError
	var busy *planning.BusyError
	var down *upstreamDownError
	var noAccess *noVendedAccessError
	switch {
	case errors.As(err, &noAccess):
		s.metrics.count("forbidden")
		return http.StatusForbidden, "ForbiddenException", noAccess.Error()
	case errors.As(err, &down):
		s.metrics.count("upstream_error")
		s.log.Warn("upstream catalog request failed", "err", err)
		return http.StatusServiceUnavailable, "ServiceUnavailableException", upstreamDownMessage
	case errors.As(err, &st) && st.status >= 500:
		s.metrics.count("upstream_error")
		s.log.Warn("upstream catalog failed loading a table", "status", st.status)
		if st.status == http.StatusServiceUnavailable {
			return st.status, "ServiceUnavailableException", upstreamDownMessage
		}
		return http.StatusBadGateway, "ServerErrorException", fmt.Sprintf("the catalog behind this server failed loading the table (it answered %d)", st.status)
	case errors.As(err, &st):
		s.metrics.count("upstream_error")
		var em wire.ErrorModel
		if json.Unmarshal(st.body, &em) == nil && em.Error.Type != "" {
			return st.status, em.Error.Type, em.Error.Message
		}
		return st.status, "RESTException", fmt.Sprintf("the catalog answered %d loading the table", st.status)
	case errors.As(err, &busy):
		s.metrics.count("busy")
		return http.StatusTooManyRequests, "SlowDownException", busy.Error()
	case errors.As(err, &bad):
		s.metrics.count("bad_request")
		return http.StatusBadRequest, "BadRequestException", bad.Error()
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		return http.StatusNotFound, "NoSuchTableException", err.Error()
	case errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return http.StatusNotFound, "NoSuchNamespaceException", err.Error()
	}
	if kind, ok := classifyStorage(err); ok {
		s.metrics.count("storage_error")
		return s.storageFailed(kind, err)
	}
	s.metrics.count("error")
	s.log.Error("plan failed", "err", err)
	return http.StatusInternalServerError, "ServerErrorException", err.Error()
}

// found finishes the lookup of a stored plan or task (ok: it was in the
// store, for the table and the caller's credential). The table is loaded
// with the caller's credentials first, so a caller the catalog refuses
// gets the catalog's answer (its 401 or 403) whether or not the id is
// known; then the plan is answered only if it was found and the table is
// still the one planned (same uuid); otherwise the spec's 404 of type typ.
//
// The load takes a slot of its own (admission.go), given back once
// loaded: loading reads and parses the table's metadata, and polls and
// page fetches come as often as plans.
func (s *Server) found(w http.ResponseWriter, r *http.Request, rt route, ok bool, uuid, typ, what string) bool {
	free, share, refused := s.admitter.admitLoad(r.Context(), s.callerOf(r))
	if refused != nil {
		s.refuse(w, refused)
		return false
	}
	ctx, hold, err := s.planner.HoldWork(planning.WithShare(s.callerContext(r, rt), share), 0)
	if err != nil {
		free()
		s.planError(w, err)
		return false
	}
	loaded, err := s.planner.Load(ctx, rt.ident())
	hold.Release()
	free()
	s.noteTable(rt.ident(), loaded, err)
	if err != nil {
		s.planError(w, err)
		return false
	}
	if !ok || loaded.Table.Metadata().TableUUID().String() != uuid {
		writeError(w, http.StatusNotFound, typ, fmt.Sprintf("no %s of table %s for this caller (it may have expired)", what, rt.ident()))
		return false
	}
	return true
}

// fetchPlan answers GET .../plan/{id}: a plan still submitted, completed
// (its first page and plan tasks) or failed (its error).
func (s *Server) fetchPlan(w http.ResponseWriter, r *http.Request, rt route) {
	p, ok := s.plans.plan(rt.key(), ownerOf(r), rt.planID)
	if !ok && isToken(rt.planID) {
		s.fetchSharedPlan(w, r, rt)
		return
	}
	if !s.found(w, r, rt, ok, p.uuid, "NoSuchPlanIdException", "such plan") {
		return
	}
	switch p.status {
	case rest.PlanStatusSubmitted:
		writeJSON(w, http.StatusOK, map[string]any{"status": rest.PlanStatusSubmitted})
	case rest.PlanStatusFailed:
		writeJSON(w, http.StatusOK, rest.PlanTableScanResponse{Status: rest.PlanStatusFailed, Error: p.failure})
	default:
		writeJSON(w, http.StatusOK, rest.CompletedPlanningResult{Status: rest.PlanStatusCompleted, ScanTasks: p.first, StorageCredentials: p.creds})
	}
}

// cancelPlan answers DELETE .../plan/{id}: the plan and its tasks are
// dropped, and its planning stops if it was still submitted.
func (s *Server) cancelPlan(w http.ResponseWriter, r *http.Request, rt route) {
	if isToken(rt.planID) {
		s.cancelShared(w, r, rt)
		return
	}
	owner := ownerOf(r)
	p, ok := s.plans.plan(rt.key(), owner, rt.planID)
	if !s.found(w, r, rt, ok, p.uuid, "NoSuchPlanIdException", "such plan") {
		return
	}
	if !s.plans.cancel(rt.key(), owner, rt.planID) { // cancelled meanwhile
		writeError(w, http.StatusNotFound, "NoSuchPlanIdException", fmt.Sprintf("no such plan of table %s", rt.ident()))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) fetchTasks(w http.ResponseWriter, r *http.Request, rt route) {
	if !jsonRequest(w, r) {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req rest.FetchScanTasksRequest
	if err := json.Unmarshal(body, &req); err != nil || req.PlanTask == "" {
		writeError(w, http.StatusBadRequest, "BadRequestException", "tasks request: a plan-task is required")
		return
	}
	t, ok := s.plans.task(rt.key(), ownerOf(r), req.PlanTask)
	if !ok && isToken(req.PlanTask) {
		s.fetchSharedTasks(w, r, rt, req.PlanTask)
		return
	}
	uuid := ""
	if ok {
		uuid = t.uuid
	}
	if !s.found(w, r, rt, ok, uuid, "NoSuchPlanTaskException", "such plan task") {
		return
	}
	writeJSON(w, http.StatusOK, rest.FetchScanTasksResponse{ScanTasks: t.page})
}

// readBody reads a request body within the size limit, answering 413
// beyond it, and 429 when there was no room to hold it
// (planning.GrowingReader).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	var bad *planning.RequestError
	var busy *planning.BusyError
	switch {
	case errors.As(err, &busy):
		s.planError(w, err)
		return nil, false
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestException", fmt.Sprintf("request body is over the limit of %d bytes", tooBig.Limit))
		return nil, false
	case errors.As(err, &bad): // planning.CheckFilterReader's
		writeError(w, http.StatusBadRequest, "BadRequestException", bad.Error())
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "BadRequestException", fmt.Sprintf("read request body: %v", err))
		return nil, false
	}
	return body, true
}

// copyHeader copies the end-to-end headers of an upstream response.
func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		switch http.CanonicalHeaderKey(k) {
		case "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length", "Proxy-Connection", "Te", "Trailer", "Upgrade":
			continue
		}
		dst[k] = slices.Clone(vs)
	}
}
