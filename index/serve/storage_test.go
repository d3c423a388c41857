package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	iceio "github.com/apache/iceberg-go/io"
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
		cat, opts := s3Table(t, s3)
		var decoyHits atomic.Int64 // a host a table property names
		decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			decoyHits.Add(1)
			http.Error(w, "not here", http.StatusForbidden)
		}))
		t.Cleanup(decoy.Close)
		upstream := httptest.NewServer(loadOnlyCatalog(t, cat, iceberg.Properties{"s3.endpoint": decoy.URL}))
		t.Cleanup(upstream.Close)
		_, base := ownCredentialsProxy(t, upstream.URL, opts)
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
		cat, opts := s3Table(t, s3)
		ident := table.Identifier{"db", "events"}
		const keyB = "caller-b-key"
		vend := map[string]iceberg.Properties{
			"token-a": {"s3.access-key-id": s3.AccessKeyID, "s3.secret-access-key": s3.SecretAccessKey},
			"token-b": {"s3.access-key-id": keyB, "s3.secret-access-key": "caller-b-secret"},
			"token-c": nil,
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
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
		cat, _ := s3Table(t, s3)
		ident := table.Identifier{"db", "events"}
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

		tbl, err := cat.LoadTable(ctx, ident)
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

// TestCatalogModeLoadsAVersionOnce: in catalog mode, plans that load one
// new table version at once (the first plans after a commit) share one
// read and parse of its metadata: with the metadata's GET held, four plans
// of other values read it once, and each plans the new data. Before, each
// read and parsed it, holding about twice its length each.
func TestCatalogModeLoadsAVersionOnce(t *testing.T) {
	catalogtest.ForEachS3(t, func(t *testing.T, s3 *catalogtest.S3) {
		ctx := context.Background()
		cat, _ := s3Table(t, s3)
		srv, err := serve.New(serve.Options{Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		base := newHTTPServer(t, srv).URL
		if resp, body := do(t, "POST", base+tablePath+"/plan", "", `{"filter":{"type":"eq","term":"id","value":11}}`); resp.StatusCode != 200 {
			t.Fatalf("first plan: %d %s", resp.StatusCode, body)
		}
		tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
		if err != nil {
			t.Fatal(err)
		}
		tbl = catalogtest.AppendIDs(t, tbl, 30, 31, 32, 33)
		key, ok := s3.Key(tbl.MetadataLocation())
		if !ok {
			t.Fatalf("metadata at %s, not in the bucket", tbl.MetadataLocation())
		}
		s3.Reset()
		s3.SetFault(catalogtest.FaultHang, func(k string) bool { return k == key })
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for id := 30; id < 34; id++ {
			wg.Go(func() {
				resp, body := do(t, "POST", base+tablePath+"/plan", "", fmt.Sprintf(`{"filter":{"type":"eq","term":"id","value":%d}}`, id))
				var res rest.PlanTableScanResponse
				if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 1 {
					errs <- fmt.Errorf("plan of id %d after the commit: %d %s, want the new file", id, resp.StatusCode, body)
				}
			})
		}
		time.Sleep(500 * time.Millisecond) // every plan is loading the new version
		s3.SetFault(catalogtest.NoFault, nil)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		gets := 0
		for _, r := range s3.Requests() {
			if r.Method == "GET" && r.Key == key {
				gets++
			}
		}
		if gets != 1 {
			t.Fatalf("four plans loading the new version read its metadata %d times, want once", gets)
		}
	})
}

// s3Table creates db.events in a SQL catalog over s3, three appended files
// of ids and an index on id, and returns the catalog's options (its
// --property flags included).
func s3Table(t *testing.T, s3 *catalogtest.S3) (icecatalog.Catalog, catalog.Options) {
	t.Helper()
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
	return cat, opts
}

// TestCatalogModeOffersStorage: catalog mode's load answer tells clients
// how to reach the table's storage (endpoint, region, path style: what
// serve's own --property flags say), so that iceberg-go's REST client,
// configured with nothing of S3 but its own keys, reads the rows of a
// table on S3 through the server's plan; with VendCredentials it needs no
// keys of its own either. Without vending no secret appears in the answer
// (before, the config held only scan-planning-mode and the client could
// not read a file).
func TestCatalogModeOffersStorage(t *testing.T) {
	catalogtest.ForEachS3(t, func(t *testing.T, s3 *catalogtest.S3) {
		// The environment names no region either (ForEachS3's servers
		// already clear its endpoint and refuse its keys).
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_DEFAULT_REGION", "")
		cat, opts := s3Table(t, s3)
		props, err := opts.PropertyMap()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name       string
			vend       bool
			clientKeys iceberg.Properties
		}{
			{"own keys", false, iceberg.Properties{iceio.S3AccessKeyID: s3.AccessKeyID, iceio.S3SecretAccessKey: s3.SecretAccessKey}},
			{"vended", true, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				srv, err := serve.New(serve.Options{Catalog: cat, StorageProperties: props, VendCredentials: c.vend})
				if err != nil {
					t.Fatal(err)
				}
				base := newHTTPServer(t, srv).URL
				resp, body := do(t, "GET", base+tablePath, "", "")
				var lt struct {
					Config map[string]string `json:"config"`
				}
				if resp.StatusCode != 200 || json.Unmarshal(body, &lt) != nil {
					t.Fatalf("load: %d %s", resp.StatusCode, body)
				}
				if got := lt.Config[iceio.S3EndpointURL]; got != s3.URL {
					t.Errorf("load answer's config %v: s3.endpoint %q, want %q", lt.Config, got, s3.URL)
				}
				if got := lt.Config[iceio.S3SecretAccessKey]; (got != "") != c.vend || strings.Contains(string(body), s3.SecretAccessKey) != c.vend {
					t.Errorf("vending %v: load answer's config %v, secret in the answer: %v", c.vend, lt.Config, strings.Contains(string(body), s3.SecretAccessKey))
				}
				cl, err := rest.NewCatalog(context.Background(), "serve", base, rest.WithAdditionalProps(c.clientKeys))
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := cl.LoadTable(context.Background(), table.Identifier{"db", "events"})
				if err != nil {
					t.Fatal(err)
				}
				ids, files := readIDs(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), int64(11)), table.ScanPlanningRemote, nil)
				if !slices.Equal(ids, []int64{11}) || files != 1 {
					t.Fatalf("read id 11 through catalog mode: ids %v from %d files, want [11] from 1", ids, files)
				}
			})
		}
	})
}

// TestStorageFailuresLabelled: on Versity's gateway behind a front that
// injects faults, each way a table's storage fails gets its own answer,
// with no endpoint, bucket or object key in it (the log has them): a store
// that hangs (bounded by StorageTimeout), throttles (503 SlowDown) or is
// not listening makes loads and plans 503 ServiceUnavailableException
// with Retry-After; one that refuses the key (403, a wrong secret) or is
// asked without a region, a 500. Each is logged with its kind, counted in
// icebloom_serve_storage_errors_total, and makes /readyz not ready from
// the start (it reads a table the catalog lists), and ready again once
// the store answers. Before: /readyz said ready, a hang held the load for
// as long as the store did, and the rest were 500s naming the object.
func TestStorageFailuresLabelled(t *testing.T) {
	s3 := catalogtest.NewS3Gateway(t)
	_, opts := s3Table(t, s3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	set := func(key, value string) []string {
		var props []string
		for _, kv := range s3.Properties() {
			if k, _, _ := strings.Cut(kv, "="); k != key {
				props = append(props, kv)
			}
		}
		if value != "" {
			props = append(props, key+"="+value)
		}
		return props
	}
	for _, c := range []struct {
		name    string
		fault   catalogtest.Fault
		props   []string
		timeout time.Duration
		status  int
		kind    string
	}{
		{"hang", catalogtest.FaultHang, s3.Properties(), time.Second, 503, "timeout"},
		{"slow down", catalogtest.FaultSlowDown, s3.Properties(), time.Minute, 503, "throttled"},
		{"closed port", catalogtest.NoFault, set(iceio.S3EndpointURL, closed), time.Minute, 503, "unavailable"},
		{"denied", catalogtest.FaultDenied, s3.Properties(), time.Minute, 500, "denied"},
		{"wrong key", catalogtest.NoFault, set(iceio.S3SecretAccessKey, "wrong"), time.Minute, 500, "denied"},
		{"no region", catalogtest.NoFault, set(iceio.S3Region, ""), time.Minute, 500, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", "")
			t.Setenv("AWS_DEFAULT_REGION", "")
			o := opts
			o.Properties = c.props
			cat, err := catalog.Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			props, err := o.PropertyMap()
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			var mu sync.Mutex
			srv, err := serve.New(serve.Options{Catalog: cat, StorageProperties: props, StorageTimeout: c.timeout,
				Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil))})
			if err != nil {
				t.Fatal(err)
			}
			base := newHTTPServer(t, srv).URL
			s3.SetFault(c.fault, nil)
			defer s3.SetFault(catalogtest.NoFault, nil)
			if resp, body := do(t, "GET", base+"/readyz", "", ""); resp.StatusCode != 503 {
				t.Errorf("readyz: %d %s, want 503", resp.StatusCode, body)
			}
			endpoint := strings.TrimPrefix(s3.URL, "http://")
			for _, r := range []struct{ method, path, body string }{
				{"GET", tablePath, ""}, {"POST", tablePath + "/plan", `{"filter":{"type":"eq","term":"id","value":11}}`},
			} {
				resp, body := do(t, r.method, base+r.path, "", r.body)
				wantType := map[int]string{503: "ServiceUnavailableException", 500: "ServerErrorException"}[c.status]
				if resp.StatusCode != c.status || errorType(t, body) != wantType || (resp.Header.Get("Retry-After") != "") != (c.status == 503) {
					t.Errorf("%s %s: %d %s (Retry-After %q), want %d %s", r.method, r.path, resp.StatusCode, body, resp.Header.Get("Retry-After"), c.status, wantType)
				}
				for _, internal := range []string{s3.Bucket, endpoint, strings.TrimPrefix(closed, "http://"), "metadata.json", "warehouse/", "s3://"} {
					if strings.Contains(string(body), internal) {
						t.Errorf("%s %s: %s names %q", r.method, r.path, body, internal)
					}
				}
			}
			_, metrics := do(t, "GET", base+"/metrics", "", "")
			// The probe's kind may differ: a store refusing connections
			// makes the storage client back off past the probe's bound.
			if !strings.Contains(string(metrics), fmt.Sprintf(`icebloom_serve_storage_errors_total{kind=%q,during="request"} 2`, c.kind)) ||
				!strings.Contains(string(metrics), `during="readyz"} 1`) {
				t.Errorf("metrics do not count two requests failing %s and the probe:\n%s", c.kind, metrics)
			}
			mu.Lock()
			logged := log.String()
			mu.Unlock()
			if strings.Count(logged, `msg="storage failed" kind=`+c.kind) != 2 || !strings.Contains(logged, `msg="readiness: the storage of a table failed" table=db.events`) {
				t.Errorf("no log line of kind %s:\n%s", c.kind, logged)
			}
			if c.fault != catalogtest.NoFault {
				s3.SetFault(catalogtest.NoFault, nil)
				srv.ForgetReadiness()
				if resp, body := do(t, "GET", base+"/readyz", "", ""); resp.StatusCode != 200 {
					t.Errorf("readyz once the store answers: %d %s", resp.StatusCode, body)
				}
				if resp, body := do(t, "GET", base+tablePath, "", ""); resp.StatusCode != 200 {
					t.Errorf("load once the store answers: %d %s", resp.StatusCode, body)
				}
			}
		})
	}
}

// TestPlanStorageRequestsBounded: a store that hangs on the manifests only
// (the table loads) fails a plan with 503 and Retry-After once one request
// has waited StorageTimeout, not when the plan's timeout ends; before, a
// plan waited for the whole plan timeout, and a load for as long as the
// store held it.
func TestPlanStorageRequestsBounded(t *testing.T) {
	s3 := catalogtest.NewS3Gateway(t)
	_, resp, body := planWhileHanging(t, s3, ".avro", nil)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || errorType(t, body) != "ServiceUnavailableException" ||
		strings.Contains(string(body), s3.Bucket) {
		t.Fatalf("a plan while the manifests hang: %d %s, want 503 ServiceUnavailableException with Retry-After naming no bucket", resp.StatusCode, body)
	}
}

// TestProxyStorageFailuresLabelled: in proxy mode, where the upstream
// answers loads and serve reads the table's storage with its own
// configuration (it vends nothing: --plan-with-own-credentials), a store
// that throttles makes plans 503 with Retry-After and names nothing
// internal, and /readyz, which reads the metadata file
// of the tables served last, turns not ready, and ready again once the
// store answers (the table is probed once a plan loaded it).
func TestProxyStorageFailuresLabelled(t *testing.T) {
	s3 := catalogtest.NewS3Gateway(t)
	_, opts := s3Table(t, s3)
	// The upstream reads the gateway directly, not through the front
	// whose faults serve meets.
	direct := opts
	direct.Properties = append(slices.Clone(s3.Properties()), iceio.S3EndpointURL+"="+os.Getenv(catalogtest.S3EndpointEnv))
	cat, err := catalog.Open(context.Background(), direct)
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(loadOnlyCatalog(t, cat, nil))
	t.Cleanup(upstream.Close)
	srv, base := ownCredentialsProxy(t, upstream.URL, opts)
	s3.SetFault(catalogtest.FaultSlowDown, nil)
	defer s3.SetFault(catalogtest.NoFault, nil)
	resp, body := do(t, "POST", base+tablePath+"/plan", "", `{"filter":{"type":"eq","term":"id","value":11}}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || errorType(t, body) != "ServiceUnavailableException" ||
		strings.Contains(string(body), s3.Bucket) || strings.Contains(string(body), strings.TrimPrefix(s3.URL, "http://")) {
		t.Errorf("a plan while the store throttles: %d %s, want 503 ServiceUnavailableException with Retry-After naming nothing internal", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", base+"/readyz", "", ""); resp.StatusCode != 503 {
		t.Errorf("readyz while the store throttles: %d %s, want 503", resp.StatusCode, body)
	}
	s3.SetFault(catalogtest.NoFault, nil)
	srv.ForgetReadiness()
	if resp, body := do(t, "GET", base+"/readyz", "", ""); resp.StatusCode != 200 {
		t.Errorf("readyz once the store answers: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "POST", base+tablePath+"/plan", "", `{"filter":{"type":"eq","term":"id","value":11}}`); resp.StatusCode != 200 {
		t.Errorf("a plan once the store answers: %d %s", resp.StatusCode, body)
	}
}

// TestIndexHangKeepsFiles: a store that hangs on the index's Puffin files
// only costs the plan the index: each read gives up after StorageTimeout,
// the plan is answered with every file the index would have spoken for
// (the statistics keep all three), and the plan is logged at warn and
// counted as one that could not read the index. Before, the plan waited
// on the index for the whole plan timeout.
func TestIndexHangKeepsFiles(t *testing.T) {
	s3 := catalogtest.NewS3Gateway(t)
	var log bytes.Buffer
	var mu sync.Mutex
	base, resp, body := planWhileHanging(t, s3, ".puffin", slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil)))
	if resp.StatusCode != 200 || strings.Count(string(body), `"file-path"`) != 3 {
		t.Fatalf("a plan while the index hangs: %d %s, want the three files the statistics keep", resp.StatusCode, body)
	}
	_, metrics := do(t, "GET", base+"/metrics", "", "")
	if !strings.Contains(string(metrics), "icebloom_serve_plans_index_unreadable_total 1") {
		t.Errorf("metrics do not count the plan without its index:\n%s", metrics)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), `level=WARN msg="plan kept files the index could not be read for" table=db.events`) {
		t.Errorf("no warning naming the table:\n%s", log.String())
	}
}

// planWhileHanging serves s3Table's table in catalog mode with a storage
// timeout of 1 s (logging to logger, if not nil), makes the store hang on
// the objects whose keys end in suffix, and plans id = 11, within a minute:
// it returns the server's URL and the answer.
func planWhileHanging(t *testing.T, s3 *catalogtest.S3, suffix string, logger *slog.Logger) (string, *http.Response, []byte) {
	t.Helper()
	cat, opts := s3Table(t, s3)
	props, err := opts.PropertyMap()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Catalog: cat, StorageProperties: props, StorageTimeout: time.Second, PlanTimeout: time.Hour,
		SubmitAfter: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	s3.SetFault(catalogtest.FaultHang, func(key string) bool { return strings.HasSuffix(key, suffix) })
	t.Cleanup(func() { s3.SetFault(catalogtest.NoFault, nil) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", base+tablePath+"/plan", strings.NewReader(`{"filter":{"type":"eq","term":"id","value":11}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a plan while the store hangs on *%s: %v (no answer within the test's minute)", suffix, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("a plan while the store hangs on *%s: %v", suffix, err)
	}
	return base, resp, body
}

// ownCredentialsProxy serves, in proxy mode in front of upstream, a server
// that reads storage with opts' --property flags and plans with them for
// callers vended nothing (--plan-with-own-credentials); it returns the
// server and its URL.
func ownCredentialsProxy(t *testing.T, upstream string, opts catalog.Options) (*serve.Server, string) {
	t.Helper()
	props, err := opts.PropertyMap()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, upstream), StorageProperties: props, PlanWithOwnCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	return srv, newHTTPServer(t, srv).URL
}
