package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs icebloom serve with args until the test ends (its
// context cancelled, as SIGTERM cancels main's), returning the URL it
// serves on and a function that stops it and returns its exit code.
func startServe(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	url, stop, _ := runServe(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	return url, stop
}

// runServe is startServe with the whole command line (global flags
// first), also returning what the server logs.
func runServe(t *testing.T, argv []string) (string, func() int, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- runOn(ctx, argv, &out, &errOut, false, 80, time.Now)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		if line, ok := strings.CutPrefix(out.String(), "serving on "); ok {
			stop := func() int { cancel(); return <-code }
			t.Cleanup(func() { cancel() })
			return strings.TrimSpace(line), stop, &errOut
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited %d: %s", c, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestQuickstartThenServe: quickstart, then serve over its embedded
// catalog; iceberg-go's REST client with remote planning reads the
// quickstart's row, from the candidate files the index leaves; the server
// stops cleanly when its context ends (SIGTERM). Over TLS the same works;
// off loopback catalog mode refuses to start without a token file.
func TestQuickstartThenServe(t *testing.T) {
	t.Chdir(t.TempDir())
	stdout, stderr, code := icebloom(t, "--output", "json", "quickstart", "--files", "6", "--rows", "200")
	if code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	var qs QuickstartOutput
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatal(err)
	}
	var needle int64
	if _, err := fmt.Sscanf(qs.Present.Where, "user_id = %d", &needle); err != nil {
		t.Fatalf("quickstart's lookup %q: %v", qs.Present.Where, err)
	}

	base, stop := startServe(t)
	read(t, base, needle, qs.Present.Rows, qs.Present.Candidates)
	if c := stop(); c != 0 {
		t.Fatalf("serve exited %d after its context ended, want 0", c)
	}

	cert, key, pool := selfSigned(t)
	base, stop = startServe(t, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("serving on %s, want https", base)
	}
	read(t, base, needle, qs.Present.Rows, qs.Present.Candidates, rest.WithTLSConfig(&tls.Config{RootCAs: pool}))
	if c := stop(); c != 0 {
		t.Fatalf("TLS serve exited %d", c)
	}

	_, stderr, code = icebloom(t, "serve", "--listen", "0.0.0.0:0")
	if code == 0 || !strings.Contains(stderr, "--bearer-token-file") {
		t.Fatalf("catalog mode off loopback without a token: exit %d, %s", code, stderr)
	}
}

// read loads demo.events through the server and reads user_id = needle with
// remote planning.
func read(t *testing.T, base string, needle int64, rows, candidates int, opts ...rest.Option) {
	t.Helper()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "serve", base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", "events"})
	if err != nil {
		t.Fatal(err)
	}
	scanOpts := []table.ScanOption{table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("user_id"), needle)),
		table.WithScanPlanningMode(table.ScanPlanningRemote)}
	tasks, err := tbl.Scan(scanOpts...).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != candidates {
		t.Errorf("the server planned %d files, the index's candidates are %d", len(tasks), candidates)
	}
	at, err := tbl.Scan(scanOpts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if int(at.NumRows()) != rows {
		t.Fatalf("read %d rows through the server, want %d", at.NumRows(), rows)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, returning
// their paths and a pool trusting it.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "icebloom test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}

// TestServeProxy: serve --upstream in front of the REST test server; a
// client with the upstream's token reads an indexed table's row with
// remote planning through it, from the one file the index leaves; a wrong
// token gets the upstream's 401; --sync-on-commit without icebloom's own
// token, or without --upstream, does not start.
func TestServeProxy(t *testing.T) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	tbl := up.Catalog.NewTable(t, "events", catalogtest.IDSchema, nil)
	tbl = catalogtest.AppendIDs(t, tbl, 1, 2, 3)
	catalogtest.AppendIDs(t, tbl, 4, 5, 6)
	if _, stderr, code := icebloom(t, "--catalog", "rest", "--uri", up.URL, "--token", up.Token, "build", "db.events", "--columns", "id"); code != 0 {
		t.Fatalf("build exited %d: %s", code, stderr)
	}
	base, stop := startServe(t, "--upstream", up.URL, "--plan-with-own-credentials")
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "serve", base, rest.WithOAuthToken(up.Token))
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	scanOpts := []table.ScanOption{table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("id"), int64(5))),
		table.WithScanPlanningMode(table.ScanPlanningRemote)}
	tasks, err := lt.Scan(scanOpts...).PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("plan through the proxy: %d tasks, %v; want 1", len(tasks), err)
	}
	at, err := lt.Scan(scanOpts...).ToArrowTable(ctx)
	if err != nil || at.NumRows() != 1 {
		t.Fatalf("read through the proxy: %v rows, %v", at, err)
	}
	at.Release()
	if _, err := rest.NewCatalog(ctx, "serve", base, rest.WithOAuthToken("wrong")); err == nil || !strings.Contains(err.Error(), "wrong bearer token") {
		t.Fatalf("a wrong token through the proxy: %v, want the upstream's 401", err)
	}
	if c := stop(); c != 0 {
		t.Fatalf("serve exited %d", c)
	}

	// --sync-on-commit: an append through the proxy is indexed by a sync
	// with icebloom's own token (from the environment).
	t.Setenv("ICEBLOOM_SYNC_TOKEN", up.Token)
	base, stop = startServe(t, "--upstream", up.URL, "--plan-with-own-credentials", "--sync-on-commit", "--sync-quiet", "100ms")
	cat, err = rest.NewCatalog(ctx, "serve", base, rest.WithOAuthToken(up.Token))
	if err != nil {
		t.Fatal(err)
	}
	if lt, err = cat.LoadTable(ctx, table.Identifier{"db", "events"}); err != nil {
		t.Fatal(err)
	}
	catalogtest.AppendIDs(t, lt, 7, 8, 9)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		stdout, _, _ := icebloom(t, "--catalog", "rest", "--uri", up.URL, "--token", up.Token, "--output", "json", "inspect", "db.events")
		var in InspectOutput
		if json.Unmarshal([]byte(stdout), &in) == nil && in.LiveFiles == 3 && len(in.Columns) == 1 && in.Columns[0].Covered == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the appended file is not indexed after a minute: %s", stdout)
		}
	}
	if c := stop(); c != 0 {
		t.Fatalf("serve --sync-on-commit exited %d", c)
	}

	t.Setenv("ICEBLOOM_SYNC_TOKEN", "")
	for _, args := range [][]string{{"serve", "--upstream", up.URL, "--sync-on-commit"}, {"serve", "--sync-on-commit"}} {
		if _, stderr, code := icebloom(t, args...); code == 0 || !strings.Contains(stderr, "sync-on-commit") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	// Catalog mode always plans with the catalog's storage configuration:
	// the flag of proxy mode is refused there, not ignored.
	if _, stderr, code := icebloom(t, "serve", "--plan-with-own-credentials"); code == 0 || !strings.Contains(stderr, "--plan-with-own-credentials is for proxy mode") {
		t.Errorf("serve --plan-with-own-credentials in catalog mode: exit %d, %s", code, stderr)
	}
}

// TestServeStorageFlags: catalog mode's load answer offers the endpoint
// and region of the global --property flags, and serve's own keys only
// with --vend-storage-credentials; --storage-timeout must be positive,
// and vending is refused in proxy mode (the upstream vends).
func TestServeStorageFlags(t *testing.T) {
	s3 := catalogtest.NewS3(t)
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "catalog.db")
	cat, err := catalog.Open(ctx, catalog.Options{Type: "sql", URI: db, Warehouse: s3.Location("warehouse"), Properties: s3.Properties()})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, table.Identifier{"db", "events"}, catalogtest.IDSchema); err != nil {
		t.Fatal(err)
	}
	global := append([]string{"--catalog", "sql", "--uri", db}, s3.PropertyFlags()...)
	for _, vend := range []bool{false, true} {
		argv := append(slices.Clone(global), "serve", "--listen", "127.0.0.1:0", "--storage-timeout", "5s")
		if vend {
			argv = append(argv, "--vend-storage-credentials")
		}
		base, stop, _ := runServe(t, argv)
		resp, err := http.Get(base + "/v1/namespaces/db/tables/events")
		if err != nil {
			t.Fatal(err)
		}
		var lt struct {
			Config map[string]string `json:"config"`
		}
		err = json.NewDecoder(resp.Body).Decode(&lt)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("load: %d %v", resp.StatusCode, err)
		}
		if lt.Config["s3.endpoint"] != s3.URL || lt.Config["s3.region"] != s3.Region ||
			(lt.Config["s3.secret-access-key"] == s3.SecretAccessKey) != vend || (lt.Config["s3.access-key-id"] == s3.AccessKeyID) != vend {
			t.Errorf("--vend-storage-credentials %v: load config %v", vend, lt.Config)
		}
		if c := stop(); c != 0 {
			t.Fatalf("serve exited %d", c)
		}
	}
	for flag, args := range map[string][]string{
		"--storage-timeout":          append(slices.Clone(global), "serve", "--listen", "127.0.0.1:0", "--storage-timeout", "0s"),
		"--vend-storage-credentials": {"serve", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1", "--vend-storage-credentials"},
	} {
		_, stderr, code := icebloom(t, args...)
		if code == 0 || !strings.Contains(stderr, flag) {
			t.Errorf("icebloom %s: exit %d, %s, want a refusal naming %s", strings.Join(args, " "), code, stderr, flag)
		}
	}
}

// TestServeRefusesBadLimits: a limit out of its range is refused with
// its flag named, before anything is served (a negative budget was taken
// for 0, which keeps nothing warm).
func TestServeRefusesBadLimits(t *testing.T) {
	for flag, value := range map[string]string{"--memory-budget-mib": "-5", "--tasks-per-page": "0", "--plan-timeout": "0s"} {
		args := []string{"serve", "--listen", "127.0.0.1:0", flag, value}
		_, stderr, code := icebloom(t, args...)
		if code == 0 || !strings.Contains(stderr, flag+" "+value) {
			t.Errorf("icebloom %s: exit %d, %s, want a refusal naming %s %s", strings.Join(args, " "), code, stderr, flag, value)
		}
	}
}

// TestServeReplicaSecret: two serves over one catalog with the same
// --replica-secret-file answer each other's plan tasks; without it the
// other answers NoSuchPlanTaskException; a missing or short secret file
// does not start.
func TestServeReplicaSecret(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "4", "--rows", "100"); code != 0 {
		t.Fatalf("quickstart exited %d: %s", code, stderr)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	post := func(base, path, body string) (int, rest.ScanTasks) {
		t.Helper()
		resp, err := http.Post(base+"/v1/namespaces/demo/tables/events"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out rest.ScanTasks // of a plan or a plan task
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, out
	}
	for _, shared := range []bool{true, false} {
		args := []string{"--tasks-per-page", "1"}
		if shared {
			args = append(args, "--replica-secret-file", secret)
		}
		a, stopA := startServe(t, args...)
		b, stopB := startServe(t, args...)
		status, plan := post(a, "/plan", `{}`)
		if status != 200 || len(plan.PlanTasks) == 0 {
			t.Fatalf("plan on A: %d with %d plan tasks", status, len(plan.PlanTasks))
		}
		status, page := post(b, "/tasks", fmt.Sprintf(`{"plan-task":%q}`, plan.PlanTasks[0]))
		if shared && (status != 200 || len(page.FileScanTasks) != 1) {
			t.Errorf("with --replica-secret-file, A's plan task on B: %d with %d files, want 200 with 1", status, len(page.FileScanTasks))
		}
		if !shared && status != 404 {
			t.Errorf("without --replica-secret-file, A's plan task on B: %d, want 404", status)
		}
		stopA()
		stopB()
	}
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{short, filepath.Join(t.TempDir(), "missing")} {
		if _, stderr, code := icebloom(t, "serve", "--listen", "127.0.0.1:0", "--replica-secret-file", path); code == 0 || !strings.Contains(stderr, "--replica-secret-file") {
			t.Errorf("--replica-secret-file %s: exit %d, %s", path, code, stderr)
		}
	}
}
