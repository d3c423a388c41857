package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/serve"
)

// ServeCmd is icebloom serve: an Iceberg REST catalog that plans scans with
// the index (index/serve), as a proxy in front of a REST catalog
// (--upstream) or over the catalog the global flags open.
type ServeCmd struct {
	Listen             string        `arg:"--listen" default:"127.0.0.1:8181" help:"address to listen on"`
	Upstream           string        `arg:"--upstream" placeholder:"URL" help:"REST catalog to proxy; without it the catalog the global flags open is served, read-only"`
	TLSCert            string        `arg:"--tls-cert" placeholder:"PATH" help:"TLS certificate (PEM); with --tls-key serves HTTPS"`
	TLSKey             string        `arg:"--tls-key" placeholder:"PATH" help:"TLS private key (PEM)"`
	BearerTokenFile    string        `arg:"--bearer-token-file" placeholder:"PATH" help:"catalog mode: file holding the bearer token every request must carry; required unless listening on loopback"`
	MemoryBudgetMiB    int64         `arg:"--memory-budget-mib" default:"256" help:"memory for planning, MiB: what is kept warm (plans, manifests) and what plans being computed work in (a plan waits for room, then gets 429); 0 keeps nothing"`
	MaxPlansInFlight   int           `arg:"--max-plans-in-flight" default:"16" help:"plans computed at once; more wait up to 1 s for a slot, then get 429 with Retry-After"`
	MaxRequestBytes    int64         `arg:"--max-request-bytes" default:"8388608" help:"largest request body; larger get 413"`
	TasksPerPage       int           `arg:"--tasks-per-page" default:"1000" help:"data files a plan answers inline and per plan task; a plan of more comes in pages behind plan-tasks"`
	PlanTimeout        time.Duration `arg:"--plan-timeout" default:"2m" help:"longest a plan may take; it then fails"`
	SubmitAfter        time.Duration `arg:"--submit-after" default:"10s" help:"a plan not done by then is answered status submitted and the client polls for it, so no HTTP timeout cuts a long plan; 0 waits for every plan"`
	NoScanPlanningMode bool          `arg:"--no-scan-planning-mode" help:"do not add scan-planning-mode=server to indexed tables' load-table config"`
	PlanWithOwnCreds   bool          `arg:"--plan-with-own-credentials" help:"proxy mode: plan tables the upstream vends a caller no storage credentials for with serve's own (--property s3.*, the environment), for anyone the upstream lets load them; without it such plans get 403"`
	StorageTimeout     time.Duration `arg:"--storage-timeout" default:"30s" help:"longest a request to the tables' storage, or a table load, may take; it then fails, answered 503 with Retry-After"`
	VendCredentials    bool          `arg:"--vend-storage-credentials" help:"catalog mode: put serve's own S3 keys (--property s3.access-key-id, s3.secret-access-key, s3.session-token) in every load-table answer, for clients with none; anyone who may load a table then holds them"`
	SyncOnCommit       bool          `arg:"--sync-on-commit" help:"proxy mode: sync a table's index after a commit through the proxy succeeds"`
	SyncTokenFile      string        `arg:"--sync-token-file" placeholder:"PATH" help:"file holding icebloom's own upstream token for --sync-on-commit [default: $ICEBLOOM_SYNC_TOKEN]"`
	SyncQuiet          time.Duration `arg:"--sync-quiet" default:"2s" help:"sync once a table had no commit for this long"`
	SyncMaxDelay       time.Duration `arg:"--sync-max-delay" default:"30s" help:"sync at the latest this long after a table's first unsynced commit"`
	SyncWorkers        int           `arg:"--sync-workers" default:"2" help:"syncs run at once"`
	ReplicaSecretFile  string        `arg:"--replica-secret-file" placeholder:"PATH" help:"file holding a secret of 32 bytes or more that the replicas behind one Service share: plan ids and plan tasks are then tokens any of them answers; without it only the replica that made a plan answers them"`
}

func (c *ServeCmd) run(ctx context.Context, e *env) error {
	if c.MemoryBudgetMiB < 0 {
		return fmt.Errorf("--memory-budget-mib %d: want 0 (keep nothing warm) or more MiB", c.MemoryBudgetMiB)
	}
	budget := c.MemoryBudgetMiB << 20
	if budget <= 0 {
		budget = -1 // --memory-budget-mib 0 keeps nothing warm
	}
	o := serve.Options{
		MemoryBudget: budget, MaxPlansInFlight: c.MaxPlansInFlight, MaxRequestBytes: c.MaxRequestBytes,
		NoScanPlanningMode: c.NoScanPlanningMode, Logger: e.log,
		TasksPerPage: c.TasksPerPage, PlanTimeout: c.PlanTimeout, SubmitAfter: c.SubmitAfter,
		StorageTimeout: c.StorageTimeout, VendCredentials: c.VendCredentials,
	}
	if c.TasksPerPage < 1 {
		return fmt.Errorf("--tasks-per-page %d: want 1 or more data files a page", c.TasksPerPage)
	}
	if c.PlanTimeout <= 0 {
		return fmt.Errorf("--plan-timeout %s: want a positive duration", c.PlanTimeout)
	}
	if c.StorageTimeout <= 0 {
		return fmt.Errorf("--storage-timeout %s: want a positive duration", c.StorageTimeout)
	}
	// Storage is configured for serve as for every command: the global
	// --property flags. In proxy mode serve reads tables with them; in
	// catalog mode the catalog does, and the load answer offers clients
	// their endpoint, region and addressing (and keys, when vended).
	props, err := e.options.PropertyMap()
	if err != nil {
		return err
	}
	o.StorageProperties = props
	switch {
	case c.SubmitAfter < 0:
		return fmt.Errorf("--submit-after %s: want 0 (wait for every plan) or a positive duration", c.SubmitAfter)
	case c.SubmitAfter == 0:
		o.SubmitAfter = -1 // serve.Options' "wait for every plan"
	}
	loopback := serve.LoopbackHosts(c.Listen) != nil
	if c.Upstream != "" {
		u, err := url.Parse(c.Upstream)
		if err != nil {
			return fmt.Errorf("--upstream: %w", err)
		}
		o.Upstream = u
		o.PlanWithOwnCredentials = c.PlanWithOwnCreds
		if c.VendCredentials {
			return errors.New("--vend-storage-credentials is for catalog mode; in proxy mode the upstream catalog vends credentials")
		}
	} else {
		if c.SyncOnCommit {
			return errors.New("--sync-on-commit needs --upstream: only commits through the proxy are seen")
		}
		if c.PlanWithOwnCreds {
			return errors.New("--plan-with-own-credentials is for proxy mode (--upstream): catalog mode always plans with the catalog's storage configuration")
		}
		if c.BearerTokenFile == "" && !loopback {
			return fmt.Errorf("--listen %s is not loopback: catalog mode needs --bearer-token-file", c.Listen)
		}
		cat, err := e.catalog(ctx)
		if err != nil {
			return err
		}
		o.Catalog = cat
	}
	if c.BearerTokenFile != "" {
		if o.Upstream != nil {
			return errors.New("--bearer-token-file is for catalog mode; in proxy mode the upstream checks credentials")
		}
		tok, err := readSecret(c.BearerTokenFile)
		if err != nil {
			return fmt.Errorf("--bearer-token-file: %w", err)
		}
		o.BearerToken = tok
	}
	if c.ReplicaSecretFile != "" {
		secret, err := readSecret(c.ReplicaSecretFile)
		if err != nil {
			return fmt.Errorf("--replica-secret-file: %w", err)
		}
		if len(secret) < serve.MinReplicaSecretBytes {
			return fmt.Errorf("--replica-secret-file %s holds %d bytes; want %d or more (openssl rand -base64 32)", c.ReplicaSecretFile, len(secret), serve.MinReplicaSecretBytes)
		}
		o.ReplicaSecret = []byte(secret)
	}
	if c.SyncOnCommit {
		stop, err := c.startSyncer(e, &o)
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	o.Hosts = serve.LoopbackHosts(ln.Addr().String()) // with the port chosen for :0
	srv, err := serve.New(o)
	if err != nil {
		return err
	}
	scheme := "http"
	if c.TLSCert != "" || c.TLSKey != "" {
		scheme = "https"
	}
	fmt.Fprintf(e.stdout, "serving on %s://%s\n", scheme, ln.Addr())
	return srv.Serve(ctx, ln, c.TLSCert, c.TLSKey)
}

// startSyncer starts the commit syncer of --sync-on-commit: syncs with the
// service token over the upstream, never with a caller's credentials.
func (c *ServeCmd) startSyncer(e *env, o *serve.Options) (stop func(), err error) {
	token := os.Getenv("ICEBLOOM_SYNC_TOKEN")
	if c.SyncTokenFile != "" {
		if token, err = readSecret(c.SyncTokenFile); err != nil {
			return nil, fmt.Errorf("--sync-token-file: %w", err)
		}
	}
	if token == "" {
		return nil, errors.New("--sync-on-commit needs icebloom's own upstream token: --sync-token-file or ICEBLOOM_SYNC_TOKEN")
	}
	opts := e.options
	opts.Type, opts.URI, opts.Token, opts.Credential = "rest", c.Upstream, token, ""
	open := func(ctx context.Context, prefix string) (icecatalog.Catalog, error) {
		o := opts
		if prefix != "" { // the prefix the commit went to, whatever --rest-prefix says
			o.Prefix = prefix
		}
		return catalog.Open(ctx, o, catalog.WithLogger(e.log))
	}
	sync := serve.NewSyncFunc(open, indexer.Options{Logger: e.log}, e.log)
	return startCommitSyncer(sync, c, e, o), nil
}

// readSecret reads a token file, without its surrounding whitespace.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}
