package catalogtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// RESTConfig configures NewRESTServer. The zero value serves the catalog's
// routes right under /v1/, to a client asking for any warehouse.
type RESTConfig struct {
	// Prefix is the path segment the catalog's routes are under:
	// /v1/{Prefix}/namespaces/...
	Prefix string
	// Warehouse is the one warehouse the server has. GET /v1/config for it
	// names Prefix as the prefix override, as servers with a prefix per
	// warehouse do; for another warehouse it fails with 404. With "" any
	// warehouse is accepted and the config never names the prefix, so
	// clients must be configured with it.
	Warehouse string
	// Defaults and Overrides are added to the /v1/config response.
	Defaults, Overrides iceberg.Properties
}

// RESTServer is an Iceberg REST catalog served over real HTTP on loopback,
// backed by a SQL catalog of NewCatalog. It implements what iceberg-go's REST
// client uses for icebloom's work: the config and OAuth2 token endpoints,
// and namespaces and tables (list, create, load, exists, drop, commit) with
// the spec's error responses. Commits check their requirements and apply
// their updates through the SQL catalog's CommitTable; one that fails a
// requirement, or loses a race with another commit, gets 409
// CommitFailedException.
//
// Every request but config and token must carry "Authorization: Bearer
// Token"; config checks a token only when one is sent.
type RESTServer struct {
	// URL is the catalog URI: clients add /v1/... to it.
	URL string
	// Catalog is the SQL catalog served, with namespace db.
	Catalog *Catalog
	// Credential is the OAuth2 client credential, client-id:client-secret,
	// that the token endpoint accepts.
	Credential string
	// Token is the bearer token the server issues and requires.
	Token string
	// BeforeCommit, when set, runs in each table commit once the request's
	// requirements hold on the table as loaded, before the commit is
	// applied. A commit that the table gets meanwhile (from the hook, say)
	// makes this one fail with 409: the server does not retry a lost race,
	// the client must. Set it before the requests it is to see.
	BeforeCommit func(ident table.Identifier)
	// Fault, when set, runs first in each request but those of the config
	// and token endpoints. A status it returns other than 0 is the answer,
	// with the REST error model, and the request is not served; -1 closes
	// the connection without an answer. It lets a test meet the transient
	// failures of a real server: 429, 503, a dropped connection. Set it
	// before the requests it is to see.
	Fault func(r *http.Request) int

	cfg      RESTConfig
	mu       sync.Mutex
	requests []RESTRequest
}

// RESTRequest is a request the server got and its response status (-1 for
// a connection a Fault closed).
type RESTRequest struct {
	Method string
	Path   string // unescaped
	Query  string // raw
	Header http.Header
	Form   url.Values // the form of a token request: grant_type, scope, ...
	Status int
}

// NewRESTServer starts a REST catalog server for the test, stopped at its
// end.
func NewRESTServer(t testing.TB, cfg RESTConfig) *RESTServer {
	t.Helper()
	s := &RESTServer{
		Catalog:    NewCatalog(t),
		Credential: "icebloom-test:s3cr3t",
		Token:      "icebloom-test-token",
		cfg:        cfg,
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests returns the requests served so far, in the order they arrived.
func (s *RESTServer) Requests() []RESTRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RESTRequest(nil), s.requests...)
}

// ServeHTTP serves the REST catalog API and records the request.
func (s *RESTServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	i := len(s.requests)
	s.requests = append(s.requests, RESTRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()})
	s.mu.Unlock()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	if s.fault(rec, r) {
		s.mu.Lock()
		s.requests[i].Status = rec.status
		s.mu.Unlock()
		return
	}
	s.route(rec, r)
	s.mu.Lock()
	s.requests[i].Status, s.requests[i].Form = rec.status, r.PostForm
	s.mu.Unlock()
}

// fault answers r as Fault says, reporting whether it did.
func (s *RESTServer) fault(w *statusRecorder, r *http.Request) bool {
	if s.Fault == nil || r.URL.Path == "/v1/config" || r.URL.Path == "/v1/oauth/tokens" {
		return false
	}
	switch status := s.Fault(r); {
	case status == 0:
		return false
	case status < 0:
		w.status = -1
		conn, _, err := http.NewResponseController(w.ResponseWriter).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
	case status == http.StatusServiceUnavailable:
		restError(w, status, "ServiceUnavailableException", "injected fault")
	case status >= 500:
		restError(w, status, "ServerErrorException", "injected fault")
	default:
		restError(w, status, "RESTException", "injected fault")
	}
	return true
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// restEndpoints are the endpoints /v1/config advertises: the ones served.
var restEndpoints = []string{
	"GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables", "POST /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}", "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}", "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
}

func (s *RESTServer) route(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	switch {
	case path == "/v1/config" && r.Method == http.MethodGet:
		s.config(w, r)
		return
	case path == "/v1/oauth/tokens" && r.Method == http.MethodPost:
		s.token(w, r)
		return
	case !s.authorized(r):
		restError(w, http.StatusUnauthorized, "NotAuthorizedException", "missing or wrong bearer token")
		return
	}
	base := "/v1/"
	if s.cfg.Prefix != "" {
		base += url.PathEscape(s.cfg.Prefix) + "/"
	}
	var segs []string
	if rest, ok := strings.CutPrefix(path, base); ok {
		for _, seg := range strings.Split(rest, "/") {
			seg, err := url.PathUnescape(seg)
			if err != nil {
				segs = nil
				break
			}
			segs = append(segs, seg)
		}
	}
	n := len(segs)
	switch {
	case n < 1 || n > 4 || segs[0] != "namespaces" || n >= 3 && segs[2] != "tables":
	case n == 1 && r.Method == http.MethodGet:
		s.listNamespaces(w, r)
		return
	case n == 1 && r.Method == http.MethodPost:
		s.createNamespace(w, r)
		return
	case n == 2:
		if s.namespace(w, r, strings.Split(segs[1], "\x1f")) {
			return
		}
	case n == 3 && r.Method == http.MethodGet:
		s.listTables(w, r, strings.Split(segs[1], "\x1f"))
		return
	case n == 3 && r.Method == http.MethodPost:
		s.createTable(w, r, strings.Split(segs[1], "\x1f"))
		return
	case n == 4:
		if s.table(w, r, append(strings.Split(segs[1], "\x1f"), segs[3])) {
			return
		}
	}
	restError(w, http.StatusBadRequest, "BadRequestException",
		fmt.Sprintf("no route for %s %s: the catalog is served under %s", r.Method, r.URL.Path, base))
}

func (s *RESTServer) authorized(r *http.Request) bool {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") && token == s.Token
}

func (s *RESTServer) config(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" && !s.authorized(r) {
		restError(w, http.StatusUnauthorized, "NotAuthorizedException", "wrong bearer token")
		return
	}
	overrides := iceberg.Properties{}
	maps.Copy(overrides, s.cfg.Overrides)
	if wh := r.URL.Query().Get("warehouse"); wh != "" && s.cfg.Warehouse != "" {
		if wh != s.cfg.Warehouse {
			restError(w, http.StatusNotFound, "NoSuchWarehouseException", fmt.Sprintf("warehouse %q does not exist", wh))
			return
		}
		if s.cfg.Prefix != "" {
			overrides["prefix"] = s.cfg.Prefix
		}
	}
	defaults := iceberg.Properties{}
	maps.Copy(defaults, s.cfg.Defaults)
	writeJSON(w, http.StatusOK, map[string]any{"defaults": defaults, "overrides": overrides, "endpoints": restEndpoints})
}

// token is the OAuth2 client credentials grant (RFC 6749 §4.4), with the
// client authenticated by form parameters or HTTP Basic.
func (s *RESTServer) token(w http.ResponseWriter, r *http.Request) {
	oauthError := func(status int, code, desc string) {
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	if err := r.ParseForm(); err != nil {
		oauthError(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant type %q is not supported", gt))
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id+":"+secret != s.Credential {
		oauthError(http.StatusUnauthorized, "invalid_client", fmt.Sprintf("unknown client %q or wrong client secret", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": s.Token, "token_type": "bearer", "expires_in": 3600,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
	})
}

func (s *RESTServer) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = strings.Split(p, "\x1f")
	}
	nss, err := s.Catalog.ListNamespaces(r.Context(), parent)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": append([]table.Identifier{}, nss...)})
}

func (s *RESTServer) createNamespace(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace  table.Identifier   `json:"namespace"`
		Properties iceberg.Properties `json:"properties"`
	}
	if !decode(w, r, &req) {
		return
	}
	if err := s.Catalog.CreateNamespace(r.Context(), req.Namespace, req.Properties); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// namespace serves one namespace, reporting false for a method it does
// not serve.
func (s *RESTServer) namespace(w http.ResponseWriter, r *http.Request, ns table.Identifier) bool {
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		props, err := s.Catalog.LoadNamespaceProperties(ctx, ns)
		if err != nil {
			fail(w, err)
			break
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
	case http.MethodHead:
		switch ok, err := s.Catalog.CheckNamespaceExists(ctx, ns); {
		case err != nil:
			fail(w, err)
		case ok:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	case http.MethodDelete:
		if err := s.Catalog.DropNamespace(ctx, ns); err != nil {
			fail(w, err)
			break
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}

func (s *RESTServer) listTables(w http.ResponseWriter, r *http.Request, ns table.Identifier) {
	type ident struct {
		Namespace table.Identifier `json:"namespace"`
		Name      string           `json:"name"`
	}
	idents := []ident{}
	for id, err := range s.Catalog.ListTables(r.Context(), ns) {
		if err != nil {
			fail(w, err)
			return
		}
		idents = append(idents, ident{icecatalog.NamespaceFromIdent(id), icecatalog.TableNameFromIdent(id)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": idents})
}

func (s *RESTServer) createTable(w http.ResponseWriter, r *http.Request, ns table.Identifier) {
	// As iceberg-go's client advises servers: the spec and order are
	// unbound, their source ids those of the request's schema.
	var req struct {
		Name          string                        `json:"name"`
		Schema        *iceberg.Schema               `json:"schema"`
		Location      string                        `json:"location"`
		PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec"`
		WriteOrder    *table.UnboundSortOrder       `json:"write-order"`
		StageCreate   bool                          `json:"stage-create"`
		Properties    iceberg.Properties            `json:"properties"`
	}
	if !decode(w, r, &req) {
		return
	}
	switch {
	case req.Name == "" || req.Schema == nil:
		restError(w, http.StatusBadRequest, "BadRequestException", "create table: name and schema are required")
		return
	case req.StageCreate:
		restError(w, http.StatusNotImplemented, "UnsupportedOperationException", "staged table creation is not supported")
		return
	}
	opts := []icecatalog.CreateTableOpt{icecatalog.WithProperties(req.Properties)}
	if req.Location != "" {
		opts = append(opts, icecatalog.WithLocation(req.Location))
	}
	if req.PartitionSpec != nil {
		opts = append(opts, icecatalog.WithPartitionSpec(&req.PartitionSpec.PartitionSpec))
	}
	if req.WriteOrder != nil {
		opts = append(opts, icecatalog.WithSortOrder(req.WriteOrder.SortOrder))
	}
	tbl, err := s.Catalog.CreateTable(r.Context(), append(ns, req.Name), req.Schema, opts...)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, loadTableResult(tbl.Metadata(), tbl.MetadataLocation()))
}

func loadTableResult(meta table.Metadata, loc string) map[string]any {
	return map[string]any{"metadata-location": loc, "metadata": meta, "config": map[string]string{}}
}

// table serves one table, reporting false for a method it does not serve.
func (s *RESTServer) table(w http.ResponseWriter, r *http.Request, ident table.Identifier) bool {
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		tbl, err := s.Catalog.LoadTable(ctx, ident)
		if err != nil {
			fail(w, err)
			break
		}
		writeJSON(w, http.StatusOK, loadTableResult(tbl.Metadata(), tbl.MetadataLocation()))
	case http.MethodHead:
		switch ok, err := s.Catalog.CheckTableExists(ctx, ident); {
		case err != nil:
			fail(w, err)
		case ok:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	case http.MethodPost:
		s.commit(w, r, ident)
	case http.MethodDelete:
		drop := s.Catalog.DropTable
		if r.URL.Query().Get("purgeRequested") == "true" {
			drop = s.Catalog.PurgeTable
		}
		if err := drop(ctx, ident); err != nil {
			fail(w, err)
			break
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}

// commit commits a table update: the requirements are checked against the
// table as loaded, then the SQL catalog applies the updates to it, if it is
// still the table checked.
func (s *RESTServer) commit(w http.ResponseWriter, r *http.Request, ident table.Identifier) {
	var req struct {
		Requirements table.Requirements `json:"requirements"`
		Updates      table.Updates      `json:"updates"`
	}
	if !decode(w, r, &req) {
		return
	}
	ctx := r.Context()
	base, err := s.Catalog.LoadTable(ctx, ident)
	if err != nil {
		fail(w, err)
		return
	}
	for _, rq := range req.Requirements {
		if err := rq.Validate(base.Metadata()); err != nil {
			restError(w, http.StatusConflict, "CommitFailedException", err.Error())
			return
		}
	}
	if s.BeforeCommit != nil {
		s.BeforeCommit(ident)
	}
	reqs := append([]table.Requirement{unchangedSince{base.Metadata()}}, req.Requirements...)
	meta, loc, err := s.Catalog.CommitTable(ctx, ident, reqs, req.Updates)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"metadata-location": loc, "metadata": meta})
}

// unchangedSince requires the table's metadata to be base still: the
// optimistic check a server commits its updates under.
type unchangedSince struct{ base table.Metadata }

func (unchangedSince) GetType() string { return "assert-unchanged" }

func (u unchangedSince) Validate(meta table.Metadata) error {
	if meta == nil || !meta.Equals(u.base) {
		return fmt.Errorf("%w: the table changed during the commit", table.ErrCommitFailed)
	}
	return nil
}

// fail writes the error response for an error of the SQL catalog.
func fail(w http.ResponseWriter, err error) {
	status, typ := http.StatusInternalServerError, "ServerErrorException"
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		status, typ = http.StatusNotFound, "NoSuchTableException"
	case errors.Is(err, icecatalog.ErrNoSuchNamespace):
		status, typ = http.StatusNotFound, "NoSuchNamespaceException"
	case errors.Is(err, icecatalog.ErrTableAlreadyExists), errors.Is(err, icecatalog.ErrNamespaceAlreadyExists):
		status, typ = http.StatusConflict, "AlreadyExistsException"
	case errors.Is(err, icecatalog.ErrNamespaceNotEmpty):
		status, typ = http.StatusConflict, "NamespaceNotEmptyException"
	case errors.Is(err, table.ErrCommitFailed):
		status, typ = http.StatusConflict, "CommitFailedException"
	case errors.Is(err, iceberg.ErrInvalidArgument):
		status, typ = http.StatusBadRequest, "BadRequestException"
	}
	restError(w, status, typ, err.Error())
}

// restError writes the REST spec's ErrorModel.
func restError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": err.Error(), "type": "ServerErrorException", "code": status}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// decode decodes the request body into v, answering 400 if it cannot.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		restError(w, http.StatusBadRequest, "BadRequestException", "malformed request body: "+err.Error())
		return false
	}
	return true
}
