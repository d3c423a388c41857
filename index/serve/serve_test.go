package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/serve"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

const tablePath = "/v1/namespaces/db/tables/events"

func do(t *testing.T, method, url, token, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // as REST clients send it
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func errorType(t *testing.T, body []byte) string {
	t.Helper()
	var m struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not an ErrorModel: %s", body)
	}
	return m.Error.Type
}

// smallTable is a table of two indexed files and one unindexed file in the
// REST test server's catalog.
func smallTable(t *testing.T, cat *catalogtest.Catalog) {
	t.Helper()
	tbl := cat.NewTable(t, "events", catalogtest.IDSchema, nil)
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2, 3)
	catalogtest.AppendIDs(t, tbl, 4, 5, 6)
	if _, err := indexer.Build(context.Background(), cat, table.Identifier{"db", "events"}, indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
}

func proxy(t *testing.T, o serve.Options) (*catalogtest.RESTServer, string) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	smallTable(t, up.Catalog)
	o.Upstream = mustURL(t, up.URL)
	o.PlanWithOwnCredentials = true // the test server vends no storage credentials
	srv, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return up, newHTTPServer(t, srv).URL
}

// TestProxyConfigAndOptIn: the config gains the four planning endpoints (and
// keeps the upstream's), an indexed table's load answer says
// scan-planning-mode=server, and --no-scan-planning-mode leaves it as it was.
func TestProxyConfigAndOptIn(t *testing.T) {
	up, base := proxy(t, serve.Options{})
	resp, body := do(t, "GET", base+"/v1/config", up.Token, "")
	var cfg struct{ Endpoints []string }
	if resp.StatusCode != 200 || json.Unmarshal(body, &cfg) != nil {
		t.Fatalf("config: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{"GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
		"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks"} {
		if !contains(cfg.Endpoints, want) {
			t.Errorf("config endpoints %v lack %q", cfg.Endpoints, want)
		}
	}
	resp, body = do(t, "GET", base+tablePath, up.Token, "")
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"scan-planning-mode":"server"`)) {
		t.Fatalf("load table %d: config lacks scan-planning-mode=server: %.300s", resp.StatusCode, body)
	}

	_, base = proxy(t, serve.Options{NoScanPlanningMode: true})
	if _, body = do(t, "GET", base+tablePath, up.Token, ""); bytes.Contains(body, []byte("scan-planning-mode")) {
		t.Fatal("with NoScanPlanningMode the load answer still opts the table in")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestProxyAuth: without a token, or with a wrong one, the config, load
// table and plan requests get the upstream's own 401 (its body), and the
// plan is not computed.
func TestProxyAuth(t *testing.T) {
	up, base := proxy(t, serve.Options{})
	plan := `{"filter":{"type":"eq","term":"id","value":2}}`
	for _, token := range []string{"", "wrong"} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/config", ""}, {"GET", tablePath, ""}, {"POST", tablePath + "/plan", plan},
		} {
			if c.path == "/v1/config" && token == "" {
				continue // the test server answers config without a token
			}
			resp, body := do(t, c.method, base+c.path, token, c.body)
			if resp.StatusCode != http.StatusUnauthorized || errorType(t, body) != "NotAuthorizedException" {
				t.Errorf("%s %s with token %q: %d %s, want the upstream's 401", c.method, c.path, token, resp.StatusCode, body)
			}
		}
	}
	resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, plan)
	var res rest.PlanTableScanResponse
	if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 1 {
		t.Fatalf("plan with the right token: %d %s, want one file (the index prunes the other)", resp.StatusCode, body)
	}

	// OAuth2 client credentials through the proxy: the token endpoint is
	// the upstream's, and the token it issues plans.
	cl, err := rest.NewCatalog(context.Background(), "oauth", base, rest.WithCredential(up.Credential))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	ids, files := readIDs(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), int64(5)), table.ScanPlanningRemote, nil)
	if len(ids) != 1 || ids[0] != 5 || files != 1 {
		t.Fatalf("read id 5 through the proxy with OAuth2: ids %v from %d files", ids, files)
	}
	if _, err := rest.NewCatalog(context.Background(), "oauth", base, rest.WithCredential("icebloom-test:wrong")); err == nil {
		t.Fatal("a wrong client secret opened the catalog through the proxy")
	}
}

// TestCatalogModeAuth: catalog mode with a token refuses requests without
// it or with another, and serves them with it; writes are refused as
// read-only.
func TestCatalogModeAuth(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	smallTable(t, cat)
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog, BearerToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	for _, token := range []string{"", "wrong"} {
		for _, path := range []string{"/v1/config", tablePath} {
			if resp, body := do(t, "GET", base+path, token, ""); resp.StatusCode != 401 || errorType(t, body) != "NotAuthorizedException" {
				t.Errorf("GET %s with token %q: %d %s, want 401", path, token, resp.StatusCode, body)
			}
		}
	}
	if resp, body := do(t, "GET", base+tablePath, "s3cret", ""); resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"scan-planning-mode":"server"`)) {
		t.Fatalf("load table: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := do(t, "POST", base+tablePath, "s3cret", `{"updates":[]}`); resp.StatusCode != 403 || errorType(t, body) != "ForbiddenException" || !strings.Contains(string(body), "read-only") {
		t.Fatalf("a commit in catalog mode: %d %s, want 403 ForbiddenException, read-only", resp.StatusCode, body)
	}
	if _, err := serve.New(serve.Options{}); err == nil {
		t.Fatal("New without an upstream or a catalog succeeded")
	}
}

// rawRequest sends a request line and headers as written, for targets
// net/http's client would not send.
func rawRequest(t *testing.T, base, request string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestNotAnOpenProxy: absolute-form targets, CONNECT, dot segments plain and
// encoded, encoded slashes, ';' parameters (..;/ is .. to some servers),
// double encoding, paths outside /v1 and a foreign Host are refused, and
// none reaches the upstream.
func TestNotAnOpenProxy(t *testing.T) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, up.URL), PlanWithOwnCredentials: true, Hosts: []string{"icebloom.test"}})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	host := "Host: icebloom.test\r\n"
	for name, req := range map[string]string{
		"absolute-form": "GET http://example.com/v1/config HTTP/1.1\r\n" + host + "\r\n",
		"CONNECT":       "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"dot-dot":       "GET /v1/namespaces/../../admin HTTP/1.1\r\n" + host + "\r\n",
		"encoded dots":  "GET /v1/namespaces/%2e%2e/%2E%2E/admin HTTP/1.1\r\n" + host + "\r\n",
		"encoded slash": "GET /v1/namespaces/db%2F..%2Fx/tables HTTP/1.1\r\n" + host + "\r\n",
		"outside /v1":   "GET /admin HTTP/1.1\r\n" + host + "\r\n",
		"dot-dot param": "GET /v1/namespaces/..;/..;/admin HTTP/1.1\r\n" + host + "\r\n",
		"param":         "GET /v1/namespaces/db;x=1/tables HTTP/1.1\r\n" + host + "\r\n",
		"encoded param": "GET /v1/namespaces/%2e%2e%3b/admin HTTP/1.1\r\n" + host + "\r\n",
		"double dots":   "GET /v1/namespaces/%252e%252e/admin HTTP/1.1\r\n" + host + "\r\n",
		"double slash":  "GET /v1/namespaces/db%252f..%252fx/tables HTTP/1.1\r\n" + host + "\r\n",
		"foreign host":  "GET /v1/config HTTP/1.1\r\nHost: example.com\r\n\r\n",
	} {
		if status := rawRequest(t, base, req); status < 400 || status >= 500 {
			t.Errorf("%s: %d, want a refusal", name, status)
		}
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream: %+v", n, up.Requests())
	}
	if status := rawRequest(t, base, "GET /v1/config HTTP/1.1\r\n"+host+"\r\n"); status != 200 {
		t.Fatalf("a plain config request: %d", status)
	}
}

// TestLimits: a plan beyond MaxPlansInFlight gets 429 with Retry-After; a
// body over MaxRequestBytes gets 413, proxied or planned.
func TestLimits(t *testing.T) {
	block := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	smallTable(t, up.Catalog)
	up.Fault = func(r *http.Request) int {
		if r.Method == "GET" && r.URL.Path == tablePath && r.Header.Get("X-Hold") != "" {
			once.Do(func() { close(entered) })
			<-block
		}
		return 0
	}
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, up.URL), PlanWithOwnCredentials: true, MaxPlansInFlight: 1, MaxRequestBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest("POST", base+tablePath+"/plan", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+up.Token)
		req.Header.Set("X-Hold", "1")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-entered // the first plan holds the only slot
	resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, `{}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a second plan: %d (Retry-After %q) %s, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	close(block)
	if status := <-done; status != 200 {
		t.Fatalf("the held plan: %d", status)
	}
	big := `{"filter":{"type":"in","term":"id","values":[` + strings.Repeat("1,", 600) + `1]}}`
	for _, path := range []string{tablePath + "/plan", tablePath} {
		if resp, _ := do(t, "POST", base+path, up.Token, big); resp.StatusCode != 413 {
			t.Errorf("POST %s of %d bytes: %d, want 413", path, len(big), resp.StatusCode)
		}
	}
}

// TestPlanIDs: a plan split into pages is fetched whole by id and by its
// plan tasks; unknown or cancelled ids get the spec's 404 error types; an id
// of another table does not find the plan.
func TestPlanIDs(t *testing.T) {
	up, base := proxy(t, serve.Options{TasksPerPage: 1})
	resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, `{}`)
	var res rest.PlanTableScanResponse
	if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil {
		t.Fatalf("plan: %d %s", resp.StatusCode, body)
	}
	if len(res.FileScanTasks) != 1 || len(res.PlanTasks) != 1 {
		t.Fatalf("plan of 2 files a page: %d tasks inline, %d plan tasks", len(res.FileScanTasks), len(res.PlanTasks))
	}
	if resp, body = do(t, "GET", base+tablePath+"/plan/"+*res.PlanID, up.Token, ""); resp.StatusCode != 200 {
		t.Fatalf("fetch plan: %d %s", resp.StatusCode, body)
	}
	task := fmt.Sprintf(`{"plan-task":%q}`, res.PlanTasks[0])
	if resp, body = do(t, "POST", base+tablePath+"/tasks", up.Token, task); resp.StatusCode != 200 || !bytes.Contains(body, []byte("file-scan-tasks")) {
		t.Fatalf("fetch tasks: %d %s", resp.StatusCode, body)
	}
	if resp, body = do(t, "POST", base+tablePath+"/tasks", "wrong", task); resp.StatusCode != 401 {
		t.Fatalf("fetch tasks with a wrong token: %d %s, want the upstream's 401", resp.StatusCode, body)
	}
	// A caller the upstream lets in with another credential (the scheme
	// in lower case: the upstream reads it either way) is another owner:
	// it finds neither the plan nor its tasks, and cannot cancel it.
	otherCaller := []string{"Authorization", "bearer " + up.Token}
	for _, c := range []struct{ method, path, body, typ string }{
		{"GET", tablePath + "/plan/" + *res.PlanID, "", "NoSuchPlanIdException"},
		{"DELETE", tablePath + "/plan/" + *res.PlanID, "", "NoSuchPlanIdException"},
		{"POST", tablePath + "/tasks", task, "NoSuchPlanTaskException"},
	} {
		if resp, body := do(t, c.method, base+c.path, "", c.body, otherCaller...); resp.StatusCode != 404 || errorType(t, body) != c.typ {
			t.Errorf("%s %s by another caller: %d %s, want 404 %s", c.method, c.path, resp.StatusCode, body, c.typ)
		}
	}
	if resp, body = do(t, "GET", base+tablePath+"/plan/"+*res.PlanID, up.Token, ""); resp.StatusCode != 200 {
		t.Fatalf("fetch plan after another caller tried: %d %s", resp.StatusCode, body)
	}
	other := "/v1/namespaces/db/tables/other"
	for _, c := range []struct{ method, path, body, typ string }{
		{"GET", tablePath + "/plan/nope", "", "NoSuchPlanIdException"},
		{"GET", other + "/plan/" + *res.PlanID, "", "NoSuchTableException"}, // loaded first, with the caller's credentials
		{"POST", tablePath + "/tasks", `{"plan-task":"nope"}`, "NoSuchPlanTaskException"},
	} {
		if resp, body := do(t, c.method, base+c.path, up.Token, c.body); resp.StatusCode != 404 || errorType(t, body) != c.typ {
			t.Errorf("%s %s: %d %s, want 404 %s", c.method, c.path, resp.StatusCode, body, c.typ)
		}
	}
	if resp, _ = do(t, "DELETE", base+tablePath+"/plan/"+*res.PlanID, up.Token, ""); resp.StatusCode != 204 {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	if resp, body = do(t, "POST", base+tablePath+"/tasks", up.Token, task); resp.StatusCode != 404 || errorType(t, body) != "NoSuchPlanTaskException" {
		t.Fatalf("a task of a cancelled plan: %d %s", resp.StatusCode, body)
	}
	if resp, body = do(t, "POST", base+tablePath+"/plan", up.Token, `{"start-snapshot-id":1,"end-snapshot-id":2}`); resp.StatusCode != 406 || errorType(t, body) != "UnsupportedOperationException" {
		t.Fatalf("an incremental plan: %d %s, want 406 UnsupportedOperationException", resp.StatusCode, body)
	}
	if resp, body = do(t, "POST", base+tablePath+"/plan", up.Token, `{"filter":{"type":"eq","term":"nope","value":1}}`); resp.StatusCode != 400 {
		t.Fatalf("a filter on an unknown column: %d %s, want 400", resp.StatusCode, body)
	}
	if resp, body = do(t, "POST", base+tablePath+"/plan", up.Token, `{"select":["nope"]}`); resp.StatusCode != 400 {
		t.Fatalf("select of an unknown column: %d %s, want 400", resp.StatusCode, body)
	}
}

// TestPlanRequestFields: case-sensitive=false matches a column in another
// case (and prunes with the index); stats-fields brings the statistics of
// the fields named and no others.
func TestPlanRequestFields(t *testing.T) {
	up, base := proxy(t, serve.Options{})
	plan := func(body string) rest.PlanTableScanResponse {
		t.Helper()
		resp, b := do(t, "POST", base+tablePath+"/plan", up.Token, body)
		var res rest.PlanTableScanResponse
		if resp.StatusCode != 200 || json.Unmarshal(b, &res) != nil {
			t.Fatalf("plan %s: %d %s", body, resp.StatusCode, b)
		}
		return res
	}
	if res := plan(`{"filter":{"type":"eq","term":"ID","value":2},"case-sensitive":false}`); len(res.FileScanTasks) != 1 {
		t.Fatalf("a case-insensitive filter planned %d files, want 1", len(res.FileScanTasks))
	}
	if resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, `{"filter":{"type":"eq","term":"ID","value":2}}`); resp.StatusCode != 400 {
		t.Fatalf("ID in a case-sensitive plan: %d %s, want 400", resp.StatusCode, body)
	}
	df := plan(`{"stats-fields":["id"]}`).FileScanTasks[0].DataFile
	if df.LowerBounds == nil || len(df.LowerBounds.Keys) != 1 || df.LowerBounds.Keys[0] != 1 || df.ValueCounts == nil {
		t.Fatalf("stats-fields id: bounds %+v, value counts %+v", df.LowerBounds, df.ValueCounts)
	}
	if df := plan(`{}`).FileScanTasks[0].DataFile; df.LowerBounds != nil || df.ValueCounts != nil {
		t.Fatalf("without stats-fields the data file has statistics: %+v", df)
	}
}

// TestNoCredentialsLogged: with debug logging, no Authorization value
// appears in the log, for proxied and planned requests alike, failed or not;
// each plan is logged with its data files in the snapshot, after statistics
// and after the index.
func TestNoCredentialsLogged(t *testing.T) {
	var log bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	up, base := proxy(t, serve.Options{Logger: logger})
	do(t, "GET", base+"/v1/config", up.Token, "")
	do(t, "GET", base+tablePath, up.Token, "")
	do(t, "POST", base+tablePath+"/plan", up.Token, `{}`)
	do(t, "POST", base+tablePath+"/plan", "wrong-secret-token", `{}`)
	mu.Lock()
	defer mu.Unlock()
	if log.Len() == 0 {
		t.Fatal("nothing logged")
	}
	for _, secret := range []string{up.Token, "wrong-secret-token", "Bearer"} {
		if strings.Contains(log.String(), secret) {
			t.Fatalf("the log holds %q:\n%s", secret, log.String())
		}
	}
	// Each plan is logged at info with what the index did.
	for _, field := range []string{"msg=plan", "table=db.events", "files_in_snapshot=2", "files_after_statistics=2", "files_after_index=2"} {
		if !strings.Contains(log.String(), field) {
			t.Errorf("the log has no %s:\n%s", field, log.String())
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestMetricsAndCache: a repeated plan is answered from the cache, a commit
// changes the metadata location and so the answer, and /metrics counts
// plans, files before and after the index, and cache hits.
func TestMetricsAndCache(t *testing.T) {
	up, base := proxy(t, serve.Options{})
	plan := `{"filter":{"type":"eq","term":"id","value":2}}`
	for range 2 {
		if resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, plan); resp.StatusCode != 200 {
			t.Fatalf("plan: %d %s", resp.StatusCode, body)
		}
	}
	tbl, err := up.Catalog.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.AppendIDs(t, tbl, 2) // an unindexed file that may hold 2
	_, body := do(t, "POST", base+tablePath+"/plan", up.Token, plan)
	var res rest.PlanTableScanResponse
	if json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 2 {
		t.Fatalf("after an append the plan has %d files, want 2 (the new unindexed file too): %s", len(res.FileScanTasks), body)
	}
	_, metrics := do(t, "GET", base+"/metrics", "", "")
	for _, want := range []string{`icebloom_serve_plans_total{outcome="planned"} 2`, `icebloom_serve_plans_total{outcome="cached"} 1`,
		`icebloom_serve_plan_files_total{stage="snapshot"} 7`, `icebloom_serve_plan_files_total{stage="index"} 4`,
		`icebloom_serve_plan_cache_lookups_total{result="hit"} 1`, `icebloom_serve_plan_seconds_count{cached="false"} 2`,
		`icebloom_serve_cache_budget_bytes{cache="bases"} 134217728`, `icebloom_serve_cache_budget_bytes{cache="manifests"} 25165824`,
		`icebloom_serve_cache_budget_bytes{cache="tables"} 8388608`,
		`icebloom_serve_cache_budget_bytes{cache="plans"} 16777216`, `icebloom_serve_stored_plan_budget_bytes 16777216`,
		`icebloom_serve_plan_work_budget_bytes 67108864`, `icebloom_serve_cache_entries{cache="bases"} 2`,
		`icebloom_serve_warm_path_misses_total{reason="base_made"} 2`, `icebloom_serve_cache_evictions_total{cache="bases"} 0`,
		`icebloom_serve_cache_lookups_total{cache="bases",result="hit"} `} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, _ := do(t, "GET", base+path, "", ""); resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

// TestConcurrentPlans: plans of several values at once (run it with -race)
// each get the one file that holds their value.
func TestConcurrentPlans(t *testing.T) {
	up, base := proxy(t, serve.Options{MaxPlansInFlight: 64})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				id := 1 + (g+i)%6
				resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, fmt.Sprintf(`{"filter":{"type":"eq","term":"id","value":%d}}`, id))
				var res rest.PlanTableScanResponse
				if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || len(res.FileScanTasks) != 1 {
					errs <- fmt.Sprintf("id %d: %d %s", id, resp.StatusCode, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestGracefulShutdown: when Serve's context ends (SIGTERM in the command),
// a request in flight is finished and answered, new connections are
// refused, and Serve returns without error.
func TestGracefulShutdown(t *testing.T) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	smallTable(t, up.Catalog)
	entered, release := make(chan struct{}), make(chan struct{})
	up.Fault = func(r *http.Request) int {
		if r.Header.Get("X-Hold") != "" {
			close(entered)
			<-release
		}
		return 0
	}
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, up.URL), PlanWithOwnCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, "", "") }()
	base := "http://" + ln.Addr().String()
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+tablePath+"/plan", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+up.Token)
		req.Header.Set("X-Hold", "1")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- -1
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-entered
	cancel()
	for { // wait until the listener is closed
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		conn.Close()
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if s := <-status; s != 200 {
		t.Fatalf("the request in flight got %d, want 200", s)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestCatalogModeListsInPages: catalog mode answers the list endpoints in
// pages when the client asks for them (pageToken, with pageSize) and
// follows its own next-page-token to the end, as iceberg-go's client does;
// the last page says next-page-token null; a client sending no pageToken
// gets the whole list, whatever its pageSize (the spec's rule), and a
// token the server did not give is a 400 naming it.
func TestCatalogModeListsInPages(t *testing.T) {
	ctx := context.Background()
	cat := catalogtest.NewCatalog(t)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("t%d", i)
		cat.NewTable(t, name, catalogtest.IDSchema, nil)
		want = append(want, "db."+name)
	}
	for _, ns := range []string{"a", "b", "c"} {
		if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	cl := client(t, base, "")
	pagedCtx := cl.SetPageSize(ctx, 2)
	var got []string
	for id, err := range cl.ListTables(pagedCtx, table.Identifier{"db"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join(id, "."))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tables in pages of 2: %v, want %v", got, want)
	}
	nss, err := cl.ListNamespaces(pagedCtx, nil)
	if err != nil || len(nss) != 4 {
		t.Fatalf("namespaces in pages of 2: %v, %v; want a, b, c, db", nss, err)
	}

	resp, body := do(t, "GET", base+"/v1/namespaces/db/tables?pageToken=&pageSize=3", "", "")
	var page struct {
		Identifiers []struct{ Name string } `json:"identifiers"`
		Next        string                  `json:"next-page-token"`
	}
	if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != 200 || len(page.Identifiers) != 3 || page.Next == "" {
		t.Fatalf("first page of 3: %d %s", resp.StatusCode, body)
	}
	if _, body := do(t, "GET", base+"/v1/namespaces/db/tables?pageToken="+page.Next+"&pageSize=4", "", ""); !bytes.Contains(body, []byte(`"next-page-token":null`)) || bytes.Count(body, []byte(`"name"`)) != 4 {
		t.Fatalf("the last page of 4: %s, want 4 tables and next-page-token null", body)
	}
	for _, query := range []string{"", "?pageSize=3"} {
		if _, body := do(t, "GET", base+"/v1/namespaces/db/tables"+query, "", ""); bytes.Contains(body, []byte("next-page-token")) || bytes.Count(body, []byte(`"name"`)) != 7 {
			t.Fatalf("a list without a pageToken (%q): %s, want all 7 tables in one answer", query, body)
		}
	}
	if resp, body := do(t, "GET", base+"/v1/namespaces/db/tables?pageToken=%25%25", "", ""); resp.StatusCode != 400 || !strings.Contains(string(body), "pageToken") {
		t.Fatalf("a foreign page token: %d %s, want 400 naming it", resp.StatusCode, body)
	}
	if resp, _ := do(t, "GET", base+"/v1/namespaces?pageSize=0", "", ""); resp.StatusCode != 400 {
		t.Fatalf("pageSize=0: %d, want 400", resp.StatusCode)
	}
}

// TestUpstreamFailures: an upstream catalog that does not answer makes
// plans and forwarded requests 503 ServiceUnavailableException with
// Retry-After, and /readyz not ready; one that fails (5xx) loading a table
// makes a plan 502 (503 stays 503); no answer names the upstream's address
// or passes on its failure's text.
func TestUpstreamFailures(t *testing.T) {
	up, base := proxy(t, serve.Options{})
	if resp, _ := do(t, "GET", base+"/readyz", "", ""); resp.StatusCode != 200 {
		t.Fatalf("readyz with the upstream up: %d", resp.StatusCode)
	}
	upstreamHost := strings.TrimPrefix(up.URL, "http://")
	var fault atomic.Int32 // the status the upstream answers loads with, 0: none
	up.Fault = func(r *http.Request) int {
		if strings.HasSuffix(r.URL.Path, "/tables/events") {
			return int(fault.Load())
		}
		return 0
	}
	for status, want := range map[int32]int{500: 502, 503: 503} {
		fault.Store(status)
		resp, body := do(t, "POST", base+tablePath+"/plan", up.Token, `{}`)
		if resp.StatusCode != want || strings.Contains(string(body), "injected") || strings.Contains(string(body), upstreamHost) {
			t.Errorf("a plan while the upstream answers %d: %d %s, want %d without its text", status, resp.StatusCode, body, want)
		}
	}
	fault.Store(0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, gone)})
	if err != nil {
		t.Fatal(err)
	}
	down := newHTTPServer(t, srv).URL
	for _, c := range []struct{ method, path string }{{"POST", tablePath + "/plan"}, {"GET", "/v1/namespaces"}} {
		resp, body := do(t, c.method, down+c.path, up.Token, `{}`)
		if resp.StatusCode != 503 || errorType(t, body) != "ServiceUnavailableException" || resp.Header.Get("Retry-After") == "" ||
			strings.Contains(string(body), ln.Addr().String()) {
			t.Errorf("%s %s with the upstream down: %d %s (Retry-After %q), want 503 ServiceUnavailableException naming no address",
				c.method, c.path, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	if resp, _ := do(t, "GET", down+"/readyz", "", ""); resp.StatusCode != 503 {
		t.Fatalf("readyz with the upstream down: %d, want 503", resp.StatusCode)
	}
}

// TestBrowserCannotPlan: a plan or tasks request whose body is not JSON (a
// cross-site "simple" POST a web page can send to a loopback server
// without asking first) is refused (400) before any planning.
func TestBrowserCannotPlan(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	smallTable(t, cat)
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	for _, path := range []string{tablePath + "/plan", tablePath + "/tasks"} {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
			resp, body := do(t, "POST", base+path, "", `{}`, "Content-Type", ct, "Origin", "https://evil.example")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "application/json") {
				t.Errorf("POST %s as %q: %d %s, want 400 naming application/json", path, ct, resp.StatusCode, body)
			}
		}
	}
	if resp, body := do(t, "POST", base+tablePath+"/plan", "", `{}`); resp.StatusCode != 200 {
		t.Fatalf("a JSON plan request: %d %s", resp.StatusCode, body)
	}
}

// TestServeBoundsHeaders: a request whose header passes MaxHeaderBytes is
// refused (431) as soon as that much has come, not read for the whole
// header timeout; the server then answers an ordinary request.
func TestServeBoundsHeaders(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, "", "") }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + ln.Addr().String()
	huge := "GET /v1/config HTTP/1.1\r\nHost: x\r\nX-Flood: " + strings.Repeat("a", 2*serve.MaxHeaderBytes) + "\r\n\r\n"
	if status := rawRequest(t, base, huge); status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a header of %d bytes: %d, want 431", 2*serve.MaxHeaderBytes, status)
	}
	if status := rawRequest(t, base, "GET /v1/config HTTP/1.1\r\nHost: x\r\n\r\n"); status != 200 {
		t.Fatalf("an ordinary request after: %d", status)
	}
}

// TestUpstreamAnswersReserved: in proxy mode a load-table answer, which the
// server reads whole to opt the table in, is read only with room in the
// memory plans work in: with none, the load gets 503 with Retry-After, and
// once there is room it is answered as before.
func TestUpstreamAnswersReserved(t *testing.T) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	smallTable(t, up.Catalog)
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, up.URL), PlanWithOwnCredentials: true, MemoryBudget: 4 << 20, MaxWorkWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	// One reservation holds three quarters of the budget at most: hold
	// the rest with another.
	budget := srv.Planner().Stats().WorkBudget
	var holds []func()
	for _, n := range []int64{budget, budget / 4} {
		hold, err := srv.Planner().ReserveWork(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, hold)
	}
	if st := srv.Planner().Stats(); st.WorkReserved != budget {
		t.Fatalf("held %d of the budget's %d", st.WorkReserved, budget)
	}
	resp, body := do(t, "GET", base+tablePath, up.Token, "")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a load with no room to read it: %d %s, want 503 with Retry-After", resp.StatusCode, body)
	}
	for _, hold := range holds {
		hold()
	}
	if resp, body := do(t, "GET", base+tablePath, up.Token, ""); resp.StatusCode != 200 || !strings.Contains(string(body), "scan-planning-mode") {
		t.Fatalf("a load with room: %d %s", resp.StatusCode, body)
	}
	if st := srv.Planner().Stats(); st.WorkReserved != 0 {
		t.Fatalf("%d bytes still reserved after the answers were sent", st.WorkReserved)
	}
}

// TestIndexUnreadableLoggedAndCounted: a plan that could not read the index
// keeps every file, and says so: a warning in the log naming the table and
// the first error, and icebloom_serve_plans_index_unreadable_total.
func TestIndexUnreadableLoggedAndCounted(t *testing.T) {
	cat := servetest.AddFilesTable(t, 4)
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	for sf := range tbl.Metadata().Statistics() {
		if err := os.Remove(strings.TrimPrefix(sf.StatisticsPath, "file://")); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	var mu sync.Mutex
	srv, err := serve.New(serve.Options{Catalog: cat.Catalog, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	resp, body := do(t, "POST", base+tablePath+"/plan", "", `{"filter":{"type":"eq","term":"id","value":4}}`)
	if resp.StatusCode != 200 || strings.Count(string(body), `"file-path"`) != 4 {
		t.Fatalf("a plan without its index: %d %s, want every file", resp.StatusCode, body)
	}
	_, metrics := do(t, "GET", base+"/metrics", "", "")
	if !strings.Contains(string(metrics), "icebloom_serve_plans_index_unreadable_total 1") {
		t.Errorf("metrics do not count the plan:\n%s", metrics)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "table=db.events") {
		t.Errorf("no warning naming the table:\n%s", log.String())
	}
}
