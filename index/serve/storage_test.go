package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/serve"
)

// TestProxyStorageFromItsOwnProperties: in proxy mode serve reads a table
// on S3 with its own storage configuration (what --property gives every
// command), when the upstream's load answer says nothing of storage: the
// plan lists the table's files, and the index prunes (before, the planner
// read with the table's properties and the environment only, and every
// plan failed). A table property s3.endpoint naming another host receives
// no request: table properties never steer serve's storage client.
func TestProxyStorageFromItsOwnProperties(t *testing.T) {
	catalogtest.ForEachS3(t, func(t *testing.T, s3 *catalogtest.S3) {
		ctx := context.Background()
		opts := catalog.Options{Type: "sql", URI: t.TempDir() + "/catalog.db", Warehouse: s3.Location("warehouse"), Properties: s3.Properties()}
		cat, err := catalog.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		ident := table.Identifier{"db", "events"}
		if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.CreateTable(ctx, ident, catalogtest.IDSchema)
		if err != nil {
			t.Fatal(err)
		}
		for r := range int64(3) {
			tbl = catalogtest.AppendIDs(t, tbl, r, 10+r, 20+r)
		}
		if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}}); err != nil {
			t.Fatal(err)
		}
		var decoyHits atomic.Int64 // a host a table property names
		decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			decoyHits.Add(1)
			http.Error(w, "not here", http.StatusForbidden)
		}))
		t.Cleanup(decoy.Close)
		upstream := httptest.NewServer(loadOnlyCatalog(t, cat, iceberg.Properties{"s3.endpoint": decoy.URL}))
		t.Cleanup(upstream.Close)
		props, err := opts.PropertyMap()
		if err != nil {
			t.Fatal(err)
		}
		srv, err := serve.New(serve.Options{Upstream: mustURL(t, upstream.URL), StorageProperties: props})
		if err != nil {
			t.Fatal(err)
		}
		base := newHTTPServer(t, srv).URL
		resp, body := do(t, "POST", base+tablePath+"/plan", "", `{"filter":{"type":"eq","term":"id","value":11}}`)
		var res rest.PlanTableScanResponse
		if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 1 ||
			!strings.HasPrefix(res.FileScanTasks[0].DataFile.FilePath, "s3://") {
			t.Fatalf("a plan of id 11 on S3: %d %s, want the one file holding it", resp.StatusCode, body)
		}
		if n := decoyHits.Load(); n != 0 {
			t.Fatalf("the host a table property names got %d requests", n)
		}
	})
}

// loadOnlyCatalog is an upstream REST catalog that answers config and
// load-table from cat, with no storage config and no vended credentials,
// the table's metadata carrying props too (as if committed: iceberg-go's
// own writes would follow them).
func loadOnlyCatalog(t *testing.T, cat icecatalog.Catalog, props iceberg.Properties) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/config":
			w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		case r.Method == "GET" && r.URL.Path == tablePath:
			tbl, err := cat.LoadTable(r.Context(), table.Identifier{"db", "events"})
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			raw, err := json.Marshal(tbl.Metadata())
			if err != nil {
				t.Error(err)
				return
			}
			var meta map[string]any
			json.Unmarshal(raw, &meta)
			tableProps, _ := meta["properties"].(map[string]any)
			if tableProps == nil {
				tableProps = map[string]any{}
			}
			for k, v := range props {
				tableProps[k] = v
			}
			meta["properties"] = tableProps
			json.NewEncoder(w).Encode(map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": meta, "config": map[string]string{}})
		default:
			http.NotFound(w, r)
		}
	})
}
