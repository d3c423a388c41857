package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"

	"github.com/icebloom/icebloom/index/serve/planning"
)

// planningEndpoints are the endpoints the server answers itself, added to
// the upstream's in GET /v1/config: all four, so that a client can poll,
// page and cancel as well as plan.
var planningEndpoints = []string{
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
}

// specDefaultEndpoints are the endpoints a client assumes of a server whose
// config lists none (the REST spec's defaults, as iceberg-go's client has
// them): a config that lists the planning endpoints must list these too,
// or the client would think them gone.
var specDefaultEndpoints = []string{
	"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces/{namespace}/properties",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/tables/rename",
	"POST /v1/{prefix}/namespaces/{namespace}/register", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	"POST /v1/{prefix}/transactions/commit",
}

// maxUpstreamJSON bounds the upstream responses the server reads whole
// (config, load table): table metadata of many snapshots can be large.
const maxUpstreamJSON = 256 << 20

type callerKey struct{}

// caller is what the proxy's loader needs of the request it plans for: the
// caller's headers, sent to the upstream as they came, and the path prefix.
type caller struct {
	header http.Header
	prefix string
}

// WithHeader returns ctx carrying the headers (Authorization included) and
// the REST path prefix with which the proxy's planner loads tables from the
// upstream; the server's handlers set them from each request.
func WithHeader(ctx context.Context, h http.Header, prefix string) context.Context {
	return context.WithValue(ctx, callerKey{}, &caller{header: h, prefix: prefix})
}

func (s *Server) callerContext(r *http.Request, rt route) context.Context {
	return WithHeader(r.Context(), r.Header, rt.prefix)
}

// loadFromUpstream loads a table from the upstream with the caller's
// headers. An answer other than 200 is passed on to the caller as it came
// (statusError): the upstream's 401, 403 or 404 is the caller's.
func (s *Server) loadFromUpstream(ctx context.Context, ident table.Identifier) (*planning.Loaded, error) {
	c, _ := ctx.Value(callerKey{}).(*caller)
	if c == nil {
		c = &caller{header: http.Header{}}
	}
	rt := route{prefix: c.prefix, nsRaw: url.PathEscape(strings.Join(ident[:len(ident)-1], "\x1f")), table: ident[len(ident)-1]}
	u, err := url.Parse(strings.TrimSuffix(s.o.Upstream.String(), "/") + rt.tablePath())
	if err != nil {
		return nil, fmt.Errorf("table URL of %s: %w", ident, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header = c.header.Clone()
	for _, h := range []string{"Content-Length", "Content-Type", "Content-Encoding", "Accept-Encoding", "Idempotency-Key",
		"Expect", "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		req.Header.Del(h)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, &upstreamDownError{fmt.Errorf("load %s from the upstream catalog: %w", ident, err)}
	}
	body, release, err := s.readUpstream(ctx, resp)
	if err != nil {
		var busy *planning.BusyError
		if errors.As(err, &busy) {
			return nil, err
		}
		return nil, &upstreamDownError{fmt.Errorf("load %s from the upstream catalog: %w", ident, err)}
	}
	defer release()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{status: resp.StatusCode, header: resp.Header, body: body}
	}
	var lt struct {
		MetadataLoc        string                   `json:"metadata-location"`
		Metadata           json.RawMessage          `json:"metadata"`
		Config             iceberg.Properties       `json:"config"`
		StorageCredentials []rest.StorageCredential `json:"storage-credentials"`
	}
	if err := json.Unmarshal(body, &lt); err != nil {
		return nil, fmt.Errorf("load %s from the upstream catalog: %w", ident, err)
	}
	var location struct {
		Location string `json:"location"`
	}
	if err := json.Unmarshal(lt.Metadata, &location); err != nil {
		return nil, fmt.Errorf("load %s from the upstream catalog: metadata: %w", ident, err)
	}
	cred := longestPrefix(lt.StorageCredentials, location.Location)
	access, vended := storageAccess(lt.Config, cred)
	if !vended && !s.o.PlanWithOwnCredentials {
		return nil, &noVendedAccessError{ident: ident}
	}
	if kept, ok := s.planner.KeptTable(lt.MetadataLoc); ok && access == "" {
		// A metadata location names one immutable metadata file: the
		// table kept for it is this one, without parsing it again.
		return &planning.Loaded{Table: kept}, nil
	}
	meta, err := table.ParseMetadataBytes(lt.Metadata)
	if err != nil {
		return nil, fmt.Errorf("load %s from the upstream catalog: metadata: %w", ident, err)
	}
	// Storage is reached with serve's own configuration (--property), then
	// what the upstream says of this table (its config, then the
	// credentials it vended, as clients take them). Never with the table's
	// properties: whoever may commit s3.endpoint to a table would send
	// serve's signed requests, its key id in them, to a host of their
	// choosing.
	props := iceberg.Properties{}
	for k, v := range s.o.StorageProperties {
		props[k] = v
	}
	for k, v := range lt.Config {
		props[k] = v
	}
	if cred != nil {
		for k, v := range cred.Config {
			props[k] = v
		}
	}
	tbl := table.New(ident, meta, lt.MetadataLoc, iceio.LoadFSFunc(props, meta.Location()), nil)
	return &planning.Loaded{Table: tbl, Credentials: lt.StorageCredentials, Access: access}, nil
}

// credentialKeys are the storage properties (iceberg-go's io keys) that
// grant access, as a catalog vends them in a load answer's config (before
// the spec had storage-credentials) or in a storage credential's config;
// credentialPrefixes likewise, for keys named per account.
var (
	credentialKeys = []string{
		iceio.S3AccessKeyID, iceio.S3SecretAccessKey, iceio.S3SessionToken,
		iceio.GCSOAuthToken, iceio.GCSJSONKey, iceio.ADLSSharedKeyAccountKey,
	}
	credentialPrefixes = []string{iceio.ADLSSasTokenPrefix, iceio.ADLSConnectionStringPrefix}
)

// storageAccess names the storage access a load answer gives its caller
// for a table: the upstream's config and the storage credential that
// applies to the table's location, which the table is read with over
// serve's own configuration. access is a digest of them ("" when the
// upstream said nothing of storage: serve's own configuration alone), so
// that what is read with them is kept apart from what is read with any
// other; the credentials themselves are never kept or logged. vended
// reports whether they grant access at all: a storage credential, or a
// credential in config. Without one, every read would be signed with
// serve's own credentials.
func storageAccess(config iceberg.Properties, cred *rest.StorageCredential) (access string, vended bool) {
	if len(config) == 0 && cred == nil {
		return "", false
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(config)) {
		fmt.Fprintf(h, "config\x00%s\x00%s\x00", k, config[k])
	}
	if cred != nil {
		vended = true
		fmt.Fprintf(h, "prefix\x00%s\x00", cred.Prefix)
		for _, k := range slices.Sorted(maps.Keys(cred.Config)) {
			fmt.Fprintf(h, "credential\x00%s\x00%s\x00", k, cred.Config[k])
		}
	}
	for k := range config {
		if slices.Contains(credentialKeys, k) || slices.ContainsFunc(credentialPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			vended = true
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), vended
}

// noVendedAccessError is a plan of a table whose load answer vended the
// caller no storage access, by a server that plans only with vended
// credentials (Options.PlanWithOwnCredentials unset): answered 403
// ForbiddenException, the spec's refusal of a caller without the
// permission, rather than planned with serve's own credentials for
// whoever may load the table.
type noVendedAccessError struct{ ident table.Identifier }

func (e *noVendedAccessError) Error() string {
	return fmt.Sprintf("the catalog vended this caller no storage credentials for table %s (the load answer's "+
		"storage-credentials or config, which Java, PyIceberg and iceberg-go ask for by default with the header "+
		"X-Iceberg-Access-Delegation: vended-credentials), and this server plans only with credentials a caller was vended "+
		"(icebloom serve --plan-with-own-credentials plans with its own)", strings.Join(e.ident, "."))
}

// longestPrefix returns the vended credential for location, as clients
// choose it: the one with the longest prefix of it.
func longestPrefix(creds []rest.StorageCredential, location string) *rest.StorageCredential {
	var best *rest.StorageCredential
	for i := range creds {
		c := &creds[i]
		if strings.HasPrefix(location, c.Prefix) && (best == nil || len(c.Prefix) > len(best.Prefix)) {
			best = c
		}
	}
	return best
}

type proxyKey struct{}

// proxied is what the proxy's response hook needs of the request.
type proxied struct {
	rt      route
	method  string
	commits []table.Identifier // the tables a commit request changes
}

func (s *Server) newProxy() *httputil.ReverseProxy {
	up := s.o.Upstream
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up) // pinned: every request goes to the upstream, whatever it names
			if p, _ := pr.In.Context().Value(proxyKey{}).(*proxied); p != nil && rewrites(p) {
				pr.Out.Header.Del("Accept-Encoding") // a body to rewrite comes uncompressed
			}
		},
		Transport:      s.o.Transport,
		ModifyResponse: s.modifyResponse,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "BadRequestException", fmt.Sprintf("request body is over the limit of %d bytes", tooBig.Limit))
				return
			}
			var busy *planning.BusyError
			if errors.As(err, &busy) { // no room to read the answer (reserveUpstream): the spec's 503
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", busy.Error())
				return
			}
			s.log.Warn("upstream catalog request failed", "method", r.Method, "path", logPath(r.URL.Path, routeOther), "err", err)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", upstreamDownMessage)
		},
	}
}

// rewrites reports whether the proxy changes the response of p.
func rewrites(p *proxied) bool {
	return p.method == http.MethodGet && (p.rt.kind == routeConfig || p.rt.kind == routeTable)
}

// forward passes a request to the upstream, noting the tables a commit
// changes.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, rt route) {
	p := &proxied{rt: rt, method: r.Method}
	switch {
	case rt.kind == routeTable && r.Method == http.MethodPost:
		p.commits = []table.Identifier{rt.ident()}
	case rt.kind == routeTransactions && r.Method == http.MethodPost:
		body, ok := s.readBody(w, r)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		var tx struct {
			TableChanges []struct {
				Identifier struct {
					Namespace []string `json:"namespace"`
					Name      string   `json:"name"`
				} `json:"identifier"`
			} `json:"table-changes"`
		}
		if json.Unmarshal(body, &tx) == nil {
			for _, c := range tx.TableChanges {
				if c.Identifier.Name != "" {
					p.commits = append(p.commits, append(slices.Clone(c.Identifier.Namespace), c.Identifier.Name))
				}
			}
		}
	}
	s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proxyKey{}, p)))
}

// modifyResponse tells of successful commits, and rewrites the config and
// load-table answers.
func (s *Server) modifyResponse(resp *http.Response) error {
	p, _ := resp.Request.Context().Value(proxyKey{}).(*proxied)
	if p == nil {
		return nil
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		for _, ident := range p.commits {
			s.metrics.commit()
			if s.o.Committed != nil {
				prefix, _ := url.PathUnescape(p.rt.prefix)
				s.o.Committed(prefix, ident)
			}
		}
	}
	if !rewrites(p) || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	body, release, err := s.readUpstream(resp.Request.Context(), resp)
	if err != nil {
		return err
	}
	// What is reserved is given back when the proxy closed the body it
	// sent on, whether rewritten or not.
	defer func() { resp.Body = releasingBody{resp.Body, release} }()
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return nil // not ours to fix: passed on as it came
	}
	changed := false
	switch p.rt.kind {
	case routeConfig:
		changed = addEndpoints(doc)
	case routeTable:
		if !s.o.NoScanPlanningMode {
			changed = optIn(doc, s.o.PlanWithOwnCredentials)
		}
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	resp.Header.Del("Etag") // the body is no longer the upstream's
	return nil
}

// addEndpoints adds the planning endpoints to a config response.
func addEndpoints(doc map[string]json.RawMessage) bool {
	var eps []string
	if raw, ok := doc["endpoints"]; ok {
		if json.Unmarshal(raw, &eps) != nil {
			return false
		}
	}
	if len(eps) == 0 {
		eps = slices.Clone(specDefaultEndpoints)
	}
	for _, e := range planningEndpoints {
		if !slices.Contains(eps, e) {
			eps = append(eps, e)
		}
	}
	raw, _ := json.Marshal(eps)
	doc["endpoints"] = raw
	return true
}

// optIn sets scan-planning-mode=server in a load-table response's config
// when the table has an icebloom index: that is how a REST catalog tells
// Java Iceberg (1.11) to plan the table's scans through it. A table whose
// answer vends the caller no storage credentials is opted in only when
// serve plans with its own (planWithOwn): otherwise serve would refuse
// the caller's plans (noVendedAccessError), and its client is better off
// planning locally, as before.
func optIn(doc map[string]json.RawMessage, planWithOwn bool) bool {
	meta, err := table.ParseMetadataBytes(doc["metadata"])
	if err != nil || !HasIndex(meta) {
		return false
	}
	config := map[string]string{}
	if raw, ok := doc["config"]; ok && json.Unmarshal(raw, &config) != nil {
		return false
	}
	if config == nil {
		config = map[string]string{}
	}
	if !planWithOwn {
		var creds []rest.StorageCredential
		if raw, ok := doc["storage-credentials"]; ok && json.Unmarshal(raw, &creds) != nil {
			return false
		}
		if _, vended := storageAccess(config, longestPrefix(creds, meta.Location())); !vended {
			return false
		}
	}
	config[ScanPlanningModeKey] = "server"
	raw, _ := json.Marshal(config)
	doc["config"] = raw
	return true
}

// ScanPlanningModeKey is the load-table config key that opts a table into
// server-side planning.
const ScanPlanningModeKey = "scan-planning-mode"

// HasIndex reports whether table metadata references an icebloom index.
func HasIndex(meta table.Metadata) bool {
	for sf := range meta.Statistics() {
		if index.HoldsEntries(sf) || index.LinksSegments(sf) {
			return true
		}
	}
	return false
}

// An upstream answer that does not say its length is read (and reserved
// for) a step at a time, the first of firstUpstreamStep, each next one
// twice the last, up to upstreamStep: a load answer of a few KB, sent
// chunked, reserved 3 MiB for its first step of 1 MiB, and one caller's
// sixth plan at once passed its share of the default budget (16 MiB) and
// was answered 429 (TestConcurrentPlans, on a busy machine).
const (
	firstUpstreamStep = 64 << 10
	upstreamStep      = 1 << 20
)

// readUpstream reads an upstream answer whole (at most maxUpstreamJSON),
// leaving a reader of it in resp.Body, with room reserved in the memory
// plans work in for reading and parsing it: three times its length (the
// bytes, the JSON tree, the metadata parsed), all at once when the answer
// says its length, else a step at a time as it comes. release gives the
// room back. 64 load-table answers of 16 MB at once took 2.4 GB before;
// now they wait for room, then fail with *planning.BusyError (a plan gets
// 429, a load passed on 503).
func (s *Server) readUpstream(ctx context.Context, resp *http.Response) (body []byte, release func(), err error) {
	defer resp.Body.Close()
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	step, known := int64(firstUpstreamStep), false
	if n := resp.ContentLength; n >= 0 {
		step, known = min(n, maxUpstreamJSON)+1, true // +1: an answer longer than it says is seen
	}
	var buf bytes.Buffer
	for ; ; step = nextUpstreamStep(step, known) {
		r, rerr := s.planner.ReserveWork(ctx, 3*step)
		if rerr != nil {
			release()
			return nil, nil, rerr
		}
		releases = append(releases, r)
		_, err = io.CopyN(&buf, resp.Body, step)
		switch {
		case err == io.EOF:
			resp.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
			return buf.Bytes(), release, nil
		case err != nil:
			release()
			return nil, nil, err
		case int64(buf.Len()) > maxUpstreamJSON:
			release()
			return nil, nil, fmt.Errorf("upstream response over %d bytes", int64(maxUpstreamJSON))
		}
	}
}

// nextUpstreamStep is the step read after one of step: twice it up to
// upstreamStep for an answer of unknown length, else the same.
func nextUpstreamStep(step int64, known bool) int64 {
	if known {
		return step
	}
	return min(2*step, upstreamStep)
}

// releasingBody is a response body that gives back a reservation when
// closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b releasingBody) Close() error {
	b.release()
	return b.ReadCloser.Close()
}

// upstreamDownError is the upstream catalog not answering (refused,
// reset, timed out): the caller gets 503 ServiceUnavailableException with
// Retry-After, and a message that names no internal address (the log has
// the error).
type upstreamDownError struct{ err error }

func (e *upstreamDownError) Error() string { return e.err.Error() }
func (e *upstreamDownError) Unwrap() error { return e.err }

const upstreamDownMessage = "the catalog behind this server did not answer; retry later"

// readinessTTL is how long an answer of the upstream to the readiness
// probe is trusted, so that /readyz polled often asks the upstream at most
// once in that time.
const readinessTTL = 2 * time.Second

// upstreamReady reports whether the upstream catalog answers: any HTTP
// answer below 500 to GET /v1/config (a 401 to a probe without
// credentials is an answer) within a few seconds. The last answer is kept
// readinessTTL.
func (s *Server) upstreamReady(ctx context.Context) bool {
	s.readyMu.Lock()
	defer s.readyMu.Unlock()
	if time.Since(s.readyAt) < readinessTTL {
		return s.readyOK
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ok := false
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.o.Upstream.String(), "/")+"/v1/config", nil)
	if err == nil {
		resp, err := s.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			ok = resp.StatusCode < 500
		} else {
			s.log.Warn("readiness: the upstream catalog did not answer", "err", err)
		}
	}
	s.readyAt, s.readyOK = time.Now(), ok
	return ok
}

// statusError is a response of the upstream catalog to pass on unchanged:
// the caller's credentials were refused, the table does not exist, …
type statusError struct {
	status int
	header http.Header
	body   []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("upstream catalog answered %d: %s", e.status, strings.TrimSpace(string(e.body)))
}
