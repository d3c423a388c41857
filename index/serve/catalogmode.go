package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
)

// catalogEndpoints are what catalog mode serves: the read endpoints and
// planning.
var catalogEndpoints = append([]string{
	"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
}, planningEndpoints...)

func (s *Server) loadFromCatalog(ctx context.Context, ident table.Identifier) (*Loaded, error) {
	tbl, err := catalog.LoadTable(ctx, s.o.Catalog, ident)
	if err != nil {
		return nil, err
	}
	return &Loaded{Table: tbl}, nil
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
		writeJSON(w, http.StatusOK, map[string]any{"namespaces": append([]table.Identifier{}, nss...)})
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
		type ident struct {
			Namespace table.Identifier `json:"namespace"`
			Name      string           `json:"name"`
		}
		idents := []ident{}
		for id, err := range s.o.Catalog.ListTables(ctx, rt.ns) {
			if err != nil {
				catalogError(w, err)
				return
			}
			idents = append(idents, ident{icecatalog.NamespaceFromIdent(id), icecatalog.TableNameFromIdent(id)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"identifiers": idents})
	case rt.kind == routeTable && get:
		tbl, err := catalog.LoadTable(ctx, s.o.Catalog, rt.ident())
		if err != nil {
			catalogError(w, err)
			return
		}
		config := map[string]string{}
		if !s.o.NoScanPlanningMode && HasIndex(tbl.Metadata()) {
			config[ScanPlanningModeKey] = "server"
		}
		writeJSON(w, http.StatusOK, map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": tbl.Metadata(), "config": config})
	case rt.kind == routeTable && head:
		exists(w, func() (bool, error) { return s.o.Catalog.CheckTableExists(ctx, rt.ident()) })
	case get || head:
		writeError(w, http.StatusNotFound, "NoSuchEndpointException", fmt.Sprintf("%s %s is not served by icebloom serve", r.Method, r.URL.Path))
	default:
		writeError(w, http.StatusMethodNotAllowed, "NotAllowedException",
			fmt.Sprintf("%s %s: icebloom serve over a catalog is read-only; write through the catalog itself", r.Method, r.URL.Path))
	}
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
