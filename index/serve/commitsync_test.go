package serve_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve"
)

// standinSyncer is a minimal stand-in for maintenance.CommitSyncer (being
// written elsewhere), with its API: Committed debounces by Quiet, a table
// syncs one at a time, and a commit during a sync makes one more.
type standinSyncer struct {
	sync    func(ctx context.Context, ident table.Identifier) error
	quiet   time.Duration
	mu      sync.Mutex
	timers  map[string]*time.Timer
	running map[string]bool
	again   map[string]bool
	started atomic.Int64
	wg      sync.WaitGroup
}

func newStandin(sync func(context.Context, table.Identifier) error, quiet time.Duration) *standinSyncer {
	return &standinSyncer{sync: sync, quiet: quiet, timers: map[string]*time.Timer{}, running: map[string]bool{}, again: map[string]bool{}}
}

func (s *standinSyncer) Committed(ident table.Identifier) {
	key := strings.Join(ident, ".")
	s.mu.Lock()
	defer s.mu.Unlock()
	if tm, ok := s.timers[key]; ok {
		tm.Reset(s.quiet)
		return
	}
	s.timers[key] = time.AfterFunc(s.quiet, func() { s.run(key, ident) })
}

func (s *standinSyncer) run(key string, ident table.Identifier) {
	s.mu.Lock()
	delete(s.timers, key)
	if s.running[key] {
		s.again[key] = true
		s.mu.Unlock()
		return
	}
	s.running[key] = true
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	s.started.Add(1)
	s.sync(context.Background(), ident)
	s.mu.Lock()
	s.running[key] = false
	again := s.again[key]
	delete(s.again, key)
	s.mu.Unlock()
	if again {
		s.Committed(ident)
	}
}

// covered waits until every data file of the table that may hold id is
// covered by the index (the commit syncer's sync ran), failing after a
// minute.
func covered(t *testing.T, cat *catalogtest.Catalog, id int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := lookup.Plan(context.Background(), tbl, iceberg.EqualTo(iceberg.Reference("id"), id), lookup.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unindexed) == 0 && len(res.Candidates) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute id %d has candidates %d, unindexed %v", id, len(res.Candidates), res.Unindexed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSyncOnCommit: an append through the proxy, then a compaction
// (RewriteDataFiles) through it, are indexed by the commit syncer with the
// service's catalog (its requests do not carry the caller's headers); a
// burst of 50 commits makes a few syncs, not 50.
func TestSyncOnCommit(t *testing.T) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	smallTable(t, up.Catalog)
	syncFn := serve.NewSyncFunc(func(ctx context.Context) (icecat.Catalog, error) {
		return rest.NewCatalog(ctx, "sync", up.URL, rest.WithOAuthToken(up.Token))
	}, indexer.Options{}, nil)
	var syncs atomic.Int64
	syncer := newStandin(func(ctx context.Context, ident table.Identifier) error {
		syncs.Add(1)
		return syncFn(ctx, ident)
	}, 100*time.Millisecond)
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, up.URL), Committed: syncer.Committed})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	cl, err := rest.NewCatalog(context.Background(), "client", base, rest.WithOAuthToken(up.Token),
		rest.WithHeaders(map[string]string{"X-Caller": "engine"}))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tbl = catalogtest.AppendIDs(t, tbl, 7, 8, 9)
	covered(t, up.Catalog, 8)

	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, task := range tasks {
		size += task.File.FileSizeBytes()
	}
	if _, err := tbl.RewriteDataFiles(context.Background(), []table.CompactionTaskGroup{{Tasks: tasks, TotalSizeBytes: size}}, table.RewriteDataFilesOptions{}); err != nil {
		t.Fatal(err)
	}
	covered(t, up.Catalog, 8) // the compacted file, one candidate, covered
	syncer.wg.Wait()

	serviceCommit := false
	for _, r := range up.Requests() {
		serviceCommit = serviceCommit || r.Method == "POST" && r.Header.Get("X-Caller") == "" && strings.HasSuffix(r.Path, "/tables/events")
	}
	if !serviceCommit {
		t.Fatal("no commit of the syncer without the caller's headers reached the upstream")
	}

	// A burst: 50 commits in a row, debounced by a quiet time longer than
	// a commit takes.
	syncer.quiet = 2 * time.Second
	before := syncs.Load()
	tbl, err = cl.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(50) {
		tbl = catalogtest.AppendIDs(t, tbl, 100+i)
	}
	covered(t, up.Catalog, 149)
	syncer.wg.Wait()
	if n := syncs.Load() - before; n < 1 || n > 5 {
		t.Fatalf("a burst of 50 commits made %d syncs, want a few", n)
	}
}
