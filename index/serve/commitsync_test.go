package serve_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve"
	"github.com/icebloom/icebloom/maintenance"
)

// idle waits until the syncer has nothing pending.
func idle(t *testing.T, s *maintenance.CommitSyncer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for st := s.Stats(); st.Pending > 0; st = s.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("the syncer is not idle after a minute: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
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
// (RewriteDataFiles) through it, are indexed by maintenance.CommitSyncer
// with the service's catalog (its requests do not carry the caller's headers); a
// burst of 50 commits makes a few syncs, not 50.
func TestSyncOnCommit(t *testing.T) {
	// The catalog's routes are under a prefix that clients are configured
	// with (its config names none): the sync must use the one the commit
	// went to.
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "lake"})
	smallTable(t, up.Catalog)
	syncFn := serve.NewSyncFunc(func(ctx context.Context, prefix string) (icecatalog.Catalog, error) {
		return rest.NewCatalog(ctx, "sync", up.URL, rest.WithOAuthToken(up.Token), rest.WithPrefix(prefix))
	}, indexer.Options{}, nil)
	newSyncer := func(quiet time.Duration) *maintenance.CommitSyncer {
		return maintenance.NewCommitSyncer(func(ctx context.Context, key table.Identifier) error {
			prefix, ident := serve.SplitSyncKey(key)
			return syncFn(ctx, prefix, ident)
		}, maintenance.CommitSyncOptions{Quiet: quiet, MaxDelay: time.Minute, Workers: 1})
	}
	syncer := newSyncer(100 * time.Millisecond)
	t.Cleanup(func() { syncer.Close(context.Background()) })
	committed := func(prefix string, ident table.Identifier) { syncer.Committed(serve.SyncKey(prefix, ident)) }
	srv, err := serve.New(serve.Options{Upstream: mustURL(t, up.URL), PlanWithOwnCredentials: true, Committed: committed})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv).URL
	cl, err := rest.NewCatalog(context.Background(), "client", base, rest.WithOAuthToken(up.Token), rest.WithPrefix("lake"),
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
	idle(t, syncer)

	serviceCommit := false
	for _, r := range up.Requests() {
		serviceCommit = serviceCommit || r.Method == "POST" && r.Header.Get("X-Caller") == "" && strings.HasSuffix(r.Path, "/tables/events")
	}
	if !serviceCommit {
		t.Fatal("no commit of the syncer without the caller's headers reached the upstream")
	}

	// A burst: 50 commits in a row, debounced by a quiet time longer than
	// a commit takes.
	syncer.Close(context.Background())
	syncer = newSyncer(2 * time.Second)
	tbl, err = cl.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	// The syncer's own commits may land between two appends of a slow
	// run (the race detector's): an append that finds the table changed
	// reloads it and tries again, as a writer does.
	for i := range int64(50) {
		rec := catalogtest.IDRecord(t, tbl, 100+i)
		for attempt := 1; ; attempt++ {
			next, err := catalogtest.TryAppend(context.Background(), tbl, rec)
			if err == nil {
				tbl = next
				break
			}
			if !errors.Is(err, table.ErrCommitFailed) || attempt == 10 {
				t.Fatalf("append %d (attempt %d): %v", 100+i, attempt, err)
			}
			if tbl, err = cl.LoadTable(context.Background(), table.Identifier{"db", "events"}); err != nil {
				t.Fatal(err)
			}
		}
		rec.Release()
	}
	covered(t, up.Catalog, 149)
	idle(t, syncer)
	if st := syncer.Stats(); st.Started < 1 || st.Started > 5 || st.Failed != 0 {
		t.Fatalf("a burst of 50 commits made %d syncs (%d failed), want a few", st.Started, st.Failed)
	}
}
