package serve

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"

	"github.com/icebloom/icebloom/index/serve/planning"
)

// catalogEndpoints are what catalog mode serves: the read endpoints and
// planning.
var catalogEndpoints = append([]string{
	"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
}, planningEndpoints...)

// loadFromCatalog loads a table from the catalog for planning. A catalog
// that can say where the table's metadata is now (catalog.MetadataLocator:
// icebloom's SQL catalogs, one query) gets no storage read when the
// planner keeps the table of that location: a metadata location names one
// immutable file, and a commit names another. Before, every request read
// metadata.json from storage again, a cached plan included.
func (s *Server) loadFromCatalog(ctx context.Context, ident table.Identifier) (*planning.Loaded, error) {
	return s.boundLoad(ctx, ident, func(ctx context.Context) (*planning.Loaded, error) {
		if loc, ok := s.o.Catalog.(catalog.MetadataLocator); ok {
			// Any failure here is LoadTable's to report.
			if where, err := loc.MetadataLocation(ctx, ident); err == nil {
				if kept, ok := s.planner.KeptTable(where); ok {
					return &planning.Loaded{Table: kept}, nil
				}
				// Requests that load one new table version at once (the
				// first plans after a commit) share one read and parse of
				// its metadata, which holds about twice its length, instead
				// of one each: detached from the first request, so that
				// its going away fails none of the others.
				v, err, _ := s.versionLoads.Do(where, func() (any, error) {
					ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.StorageTimeout)
					defer cancel()
					return catalog.LoadTable(ctx, s.o.Catalog, ident)
				})
				if err != nil {
					return nil, err
				}
				return &planning.Loaded{Table: v.(*table.Table)}, nil
			}
		}
		tbl, err := catalog.LoadTable(ctx, s.o.Catalog, ident)
		if err != nil {
			return nil, err
		}
		return &planning.Loaded{Table: tbl}, nil
	})
}

// serveCatalog answers the read endpoints over the catalog; every other
// request is refused: the server is read-only.
func (s *Server) serveCatalog(w http.ResponseWriter, r *http.Request, rt route) {
	ctx := r.Context()
	get, head := r.Method == http.MethodGet, r.Method == http.MethodHead
	switch {
	case rt.kind == routeConfig && get:
		writeJSON(w, http.StatusOK, map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{}, "endpoints": catalogEndpoints})
	case rt.kind == routeNamespaces && get:
		var parent table.Identifier
		if p := r.URL.Query().Get("parent"); p != "" {
			parent = strings.Split(p, "\x1f")
		}
		nss, err := s.o.Catalog.ListNamespaces(ctx, parent)
		if err != nil {
			catalogError(w, err)
			return
		}
		pg, err := readPage(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
			return
		}
		page, next := pg.of(nss)
		writeJSON(w, http.StatusOK, pageBody("namespaces", append([]table.Identifier{}, page...), pg, next))
	case rt.kind == routeNamespace && get:
		props, err := s.o.Catalog.LoadNamespaceProperties(ctx, rt.ns)
		if err != nil {
			catalogError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespace": rt.ns, "properties": props})
	case rt.kind == routeNamespace && head:
		exists(w, func() (bool, error) { return s.o.Catalog.CheckNamespaceExists(ctx, rt.ns) })
	case rt.kind == routeTables && get:
		pg, err := readPage(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
			return
		}
		var ids []table.Identifier
		for id, err := range s.o.Catalog.ListTables(ctx, rt.ns) {
			if err != nil {
				catalogError(w, err)
				return
			}
			ids = append(ids, id)
		}
		type ident struct {
			Namespace table.Identifier `json:"namespace"`
			Name      string           `json:"name"`
		}
		page, next := pg.of(ids)
		idents := make([]ident, len(page))
		for i, id := range page {
			idents[i] = ident{icecatalog.NamespaceFromIdent(id), icecatalog.TableNameFromIdent(id)}
		}
		writeJSON(w, http.StatusOK, pageBody("identifiers", idents, pg, next))
	case rt.kind == routeTable && get:
		loaded, err := s.loadFromCatalog(ctx, rt.ident())
		s.noteTable(rt.ident(), loaded, err)
		if kind, ok := classifyStorage(err); ok {
			s.writeStorageError(w, kind, err)
			return
		} else if err != nil {
			catalogError(w, err)
			return
		}
		tbl := loaded.Table
		writeJSON(w, http.StatusOK, map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": tbl.Metadata(), "config": s.loadTableConfig(tbl)})
	case rt.kind == routeTable && head:
		exists(w, func() (bool, error) { return s.o.Catalog.CheckTableExists(ctx, rt.ident()) })
	case get || head:
		writeError(w, http.StatusNotFound, "NoSuchEndpointException", fmt.Sprintf("%s %s is not served by icebloom serve", r.Method, r.URL.Path))
	default: // 403 is the refusal every write route of the spec lists
		writeError(w, http.StatusForbidden, "ForbiddenException",
			fmt.Sprintf("%s %s: icebloom serve over a catalog is read-only; write through the catalog itself", r.Method, r.URL.Path))
	}
}

// maxPageSize bounds a page of a list, whatever pageSize asks, so that a
// namespace of many tables is listed in bounded answers.
const maxPageSize = 1000

// listPage is a request's place in a list: the REST protocol's pageToken
// and pageSize query parameters.
type listPage struct {
	paged bool   // the client sent pageToken: it follows next-page-token
	after string // the last identifier of the page before, as identKey gives it
	size  int
}

// readPage reads a list request's paging parameters. As the spec says, a
// client that sends no pageToken gets the whole list in one answer (an
// empty pageToken asks for the first page), whatever its pageSize; pageSize
// bounds a page, and so does maxPageSize. The token is the last identifier
// of the page before, so a page stays where it was when tables are created
// or dropped between requests.
func readPage(r *http.Request) (listPage, error) {
	q := r.URL.Query()
	pg := listPage{size: maxPageSize}
	if tok, ok := q["pageToken"]; ok {
		pg.paged = true
		if tok[0] != "" {
			after, err := base64.RawURLEncoding.DecodeString(tok[0])
			if err != nil {
				return pg, fmt.Errorf("pageToken %q is not a token this server gave", tok[0])
			}
			pg.after = string(after)
		}
	}
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pg, fmt.Errorf("pageSize %q is not a positive whole number", v)
		}
		pg.size = min(n, maxPageSize)
	}
	return pg, nil
}

// identKey orders identifiers for paging: their parts joined by the unit
// separator, which the REST protocol also uses between namespace levels.
func identKey(id table.Identifier) string { return strings.Join(id, "\x1f") }

// of returns the page of ids (in identKey order) and the token of the next
// page, "" after the last one.
func (pg listPage) of(ids []table.Identifier) (page []table.Identifier, next string) {
	if !pg.paged {
		return ids, ""
	}
	slices.SortFunc(ids, func(a, b table.Identifier) int { return strings.Compare(identKey(a), identKey(b)) })
	start, _ := slices.BinarySearchFunc(ids, pg.after, func(id table.Identifier, after string) int {
		if identKey(id) <= after {
			return -1
		}
		return 1
	})
	page = ids[start:min(start+pg.size, len(ids))]
	if start+len(page) < len(ids) {
		next = base64.RawURLEncoding.EncodeToString([]byte(identKey(page[len(page)-1])))
	}
	return page, next
}

// pageBody is a list answer: the list under key and, when more follows,
// next-page-token.
func pageBody(key string, list any, pg listPage, next string) map[string]any {
	body := map[string]any{key: list}
	switch {
	case next != "":
		body["next-page-token"] = next
	case pg.paged: // the spec: null in the last page of a paged list
		body["next-page-token"] = nil
	}
	return body
}

func exists(w http.ResponseWriter, check func() (bool, error)) {
	switch ok, err := check(); {
	case err != nil:
		catalogError(w, err)
	case ok:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func catalogError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		writeError(w, http.StatusNotFound, "NoSuchTableException", err.Error())
	case errors.Is(err, icecatalog.ErrNoSuchNamespace):
		writeError(w, http.StatusNotFound, "NoSuchNamespaceException", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "ServerErrorException", err.Error())
	}
}
