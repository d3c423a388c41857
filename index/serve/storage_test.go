package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
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
		srv, err := serve.New(serve.Options{Upstream: mustURL(t, upstream.URL), StorageProperties: props, PlanWithOwnCredentials: true})
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
	return vendingCatalog(t, func(ctx context.Context) (*table.Table, error) {
		return cat.LoadTable(ctx, table.Identifier{"db", "events"})
	}, props, nil)
}

// vendingCatalog is loadOnlyCatalog answering with the table load gives,
// vending storage credentials per caller as a catalog does with
// X-Iceberg-Access-Delegation: with vend set, it answers only the bearer
// tokens vend names (others get 401), each load with a storage credential
// of vend's config for the table's location, or none for a token mapped
// to nil.
func vendingCatalog(t *testing.T, load func(context.Context) (*table.Table, error), props iceberg.Properties, vend map[string]iceberg.Properties) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		creds, known := vend[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		switch {
		case vend != nil && !known && r.URL.Path != "/v1/config":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"unknown token","type":"NotAuthorizedException","code":401}}`))
		case r.URL.Path == "/v1/config":
			w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		case r.Method == "GET" && r.URL.Path == tablePath:
			tbl, err := load(r.Context())
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
			answer := map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": meta, "config": map[string]string{}}
			if creds != nil {
				answer["storage-credentials"] = []rest.StorageCredential{{Prefix: tbl.Location(), Config: creds}}
			}
			json.NewEncoder(w).Encode(answer)
		default:
			http.NotFound(w, r)
		}
	})
}

// TestProxyPlansWithTheCallersStorageAccess: in proxy mode a plan is made
// with the storage access the upstream vended its caller, and nothing read
// with one caller's access is answered to another (issue 34 item 3).
// Caller A is vended the store's key: its plans are answered, then from
// the cache without a request. Caller B is vended another key: its plans of
// the same value (A's cached plan) and of a new value (from A's base plan
// and manifests, by the fast path) are made by reads signed with B's key,
// which the store refuses, so B gets no file path. Caller C is vended
// nothing: refused 403 ForbiddenException without a storage request,
// unless serve may plan with its own credentials, and then by reads of its
// own, not from A's cache. Before, B and C got A's cached plan (the file
// paths, with the same filter) and B's new value was planned from A's
// base plan.
func TestProxyPlansWithTheCallersStorageAccess(t *testing.T) {
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
		const keyB = "caller-b-key"
		vend := map[string]iceberg.Properties{
			"token-a": {"s3.access-key-id": s3.AccessKeyID, "s3.secret-access-key": s3.SecretAccessKey},
			"token-b": {"s3.access-key-id": keyB, "s3.secret-access-key": "caller-b-secret"},
			"token-c": nil,
		}
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			t.Fatal(err)
		}
		// The upstream answers with the table as built: its own reads of
		// the metadata are not among those the test counts.
		upstream := httptest.NewServer(vendingCatalog(t, func(context.Context) (*table.Table, error) { return tbl, nil }, nil, vend))
		t.Cleanup(upstream.Close)
		props, err := opts.PropertyMap()
		if err != nil {
			t.Fatal(err)
		}
		plan := func(base, token string, id int) (*http.Response, []byte, []catalogtest.S3Request) {
			t.Helper()
			s3.Reset()
			resp, body := do(t, "POST", base+tablePath+"/plan", token, fmt.Sprintf(`{"filter":{"type":"eq","term":"id","value":%d},"stats-fields":["id"]}`, id))
			return resp, body, s3.Requests()
		}
		signedBy := func(reqs []catalogtest.S3Request) map[string]int {
			by := map[string]int{}
			for _, r := range reqs {
				by[r.AccessKeyID]++
			}
			return by
		}

		for _, own := range []bool{false, true} {
			srv, err := serve.New(serve.Options{Upstream: mustURL(t, upstream.URL), StorageProperties: props, PlanWithOwnCredentials: own})
			if err != nil {
				t.Fatal(err)
			}
			base := newHTTPServer(t, srv).URL

			// A plans 11 and 12: the base plan of the filter without its
			// = conjunct, the manifests and the plans are warm for A.
			var pathA string
			for _, id := range []int{11, 12} {
				resp, body, reqs := plan(base, "token-a", id)
				var res rest.PlanTableScanResponse
				if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 1 {
					t.Fatalf("A's plan of id %d: %d %s, want the one file holding it", id, resp.StatusCode, body)
				}
				if len(reqs) == 0 || len(signedBy(reqs)) != 1 || signedBy(reqs)[s3.AccessKeyID] == 0 {
					t.Fatalf("A's plan of id %d read %v, want reads signed with A's key %s only", id, reqs, s3.AccessKeyID)
				}
				if id == 11 {
					pathA = res.FileScanTasks[0].DataFile.FilePath
				}
			}
			if resp, _, reqs := plan(base, "token-a", 11); resp.StatusCode != 200 || len(reqs) != 0 {
				t.Fatalf("A's plan of id 11 again: %d with storage requests %v, want 200 from the cache", resp.StatusCode, reqs)
			}

			// B: A's cached plan (11) and a new value (13, from the base
			// plan) are B's own reads, which the store refuses.
			for _, id := range []int{11, 13} {
				resp, body, reqs := plan(base, "token-b", id)
				if resp.StatusCode == 200 || strings.Contains(string(body), pathA) {
					t.Fatalf("B, vended a key the store refuses, planned id %d: %d %s, want no plan", id, resp.StatusCode, body)
				}
				if by := signedBy(reqs); len(reqs) == 0 || len(by) != 1 || by[keyB] == 0 {
					t.Fatalf("B's plan of id %d read %v, want reads signed with B's key %s only", id, reqs, keyB)
				}
			}

			// Only the tables serve will plan for the caller are opted into
			// server planning: C's client, vended nothing, plans locally
			// unless serve plans with its own credentials.
			for token, want := range map[string]bool{"token-a": true, "token-b": true, "token-c": own} {
				resp, body := do(t, "GET", base+tablePath, token, "")
				var load struct {
					Config map[string]string `json:"config"`
				}
				if resp.StatusCode != 200 || json.Unmarshal(body, &load) != nil {
					t.Fatalf("load table with %s: %d %s", token, resp.StatusCode, body)
				}
				if got := load.Config[serve.ScanPlanningModeKey] == "server"; got != want {
					t.Errorf("load table with %s (--plan-with-own-credentials %v): config %v, want scan-planning-mode=server %v", token, own, load.Config, want)
				}
			}

			// C, vended nothing.
			resp, body, reqs := plan(base, "token-c", 11)
			if !own {
				if resp.StatusCode != http.StatusForbidden || errorType(t, body) != "ForbiddenException" ||
					!strings.Contains(string(body), "--plan-with-own-credentials") || len(reqs) != 0 {
					t.Fatalf("C, vended nothing: %d %s with %d storage requests, want 403 ForbiddenException naming the flag and no request", resp.StatusCode, body, len(reqs))
				}
				if _, metrics := do(t, "GET", base+"/metrics", "", ""); !strings.Contains(string(metrics), `icebloom_serve_plans_total{outcome="forbidden"} 1`) {
					t.Errorf("the refusal is not counted as forbidden:\n%s", metrics)
				}
				continue
			}
			var res rest.PlanTableScanResponse
			if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 1 {
				t.Fatalf("C with --plan-with-own-credentials: %d %s, want the one file holding 11", resp.StatusCode, body)
			}
			if len(reqs) == 0 {
				t.Fatal("C's plan of 11 made no storage request: it was answered from A's plan")
			}
			if resp, _, reqs := plan(base, "token-c", 11); resp.StatusCode != 200 || len(reqs) != 0 {
				t.Fatalf("C's plan of 11 again: %d with %d storage requests, want 200 from C's cache", resp.StatusCode, len(reqs))
			}
		}
	})
}

// TestCatalogModeCachedPlanReadsNoStorage: in catalog mode over a SQL
// catalog, the table's metadata location comes from the catalog's row and
// the table kept for it is reused while it is current, so a cached plan
// makes no storage request; after a commit, the new metadata file is read
// and the new data planned (issue 34 item 7). Before, every plan read
// metadata.json from storage again (a cached plan cost a GET of it).
func TestCatalogModeCachedPlanReadsNoStorage(t *testing.T) {
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
		srv, err := serve.New(serve.Options{Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		base := newHTTPServer(t, srv).URL
		plan := func(id int, wantFiles int) []catalogtest.S3Request {
			t.Helper()
			s3.Reset()
			resp, body := do(t, "POST", base+tablePath+"/plan", "", fmt.Sprintf(`{"filter":{"type":"eq","term":"id","value":%d}}`, id))
			var res rest.PlanTableScanResponse
			if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != wantFiles {
				t.Fatalf("plan of id %d: %d %s, want %d file(s)", id, resp.StatusCode, body, wantFiles)
			}
			return s3.Requests()
		}
		if reqs := plan(11, 1); len(reqs) == 0 {
			t.Fatal("the first plan made no storage request")
		}
		if reqs := plan(11, 1); len(reqs) != 0 {
			t.Fatalf("a cached plan made storage requests: %v", reqs)
		}

		tbl, err = cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		tbl = catalogtest.AppendIDs(t, tbl, 30, 31, 32) // a new file, unindexed
		key, ok := s3.Key(tbl.MetadataLocation())
		if !ok {
			t.Fatalf("metadata at %s, not in the bucket", tbl.MetadataLocation())
		}
		reqs := plan(31, 1)
		if !slices.ContainsFunc(reqs, func(r catalogtest.S3Request) bool { return r.Method == "GET" && r.Key == key }) {
			t.Fatalf("after a commit the plan did not read the new metadata %s: %v", key, reqs)
		}
		if reqs := plan(31, 1); len(reqs) != 0 {
			t.Fatalf("the cached plan after the commit made storage requests: %v", reqs)
		}
	})
}
