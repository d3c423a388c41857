package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// faultyREST serves a REST catalog with db.events of one snapshot, opens a
// client of it, and then makes the server's requests fail as fault says
// (catalogtest.RESTServer.Fault).
func faultyREST(t *testing.T, fault func(r *http.Request) int) (*catalogtest.RESTServer, icecatalog.Catalog, int64) {
	t.Helper()
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	cat := openREST(t, catalog.Options{URI: srv.URL, Credential: srv.Credential})
	tbl, _ := restAppend(t, restTable(t, cat), 0)
	srv.Fault = fault
	return srv, cat, tbl.CurrentSnapshot().SnapshotID
}

// isTableRequest reports whether r is a load (GET) or a commit (POST) of
// db.events.
func isTableRequest(r *http.Request, method string) bool {
	return r.Method == method && strings.HasSuffix(r.URL.Path, "/namespaces/db/tables/events")
}

// TestIsTransientREST classifies the errors iceberg-go's REST client
// returns for a real server's answers: 429 and 5xx but 501 are transient,
// on loads and on commits (where a 5xx leaves the outcome unknown), and so
// is a connection closed without an answer; 4xx are not, and a 409 of a
// commit is a conflict.
func TestIsTransientREST(t *testing.T) {
	var status atomic.Int64
	_, cat, _ := faultyREST(t, func(*http.Request) int { return int(status.Load()) })
	ctx := t.Context()
	for _, tc := range []struct {
		status              int
		commit              bool
		transient, conflict bool
	}{
		{429, false, true, false},
		{500, false, true, false},
		{502, false, true, false},
		{503, false, true, false},
		{504, false, true, false},
		{-1, false, true, false}, // the connection closed
		{501, false, false, false},
		{400, false, false, false},
		{404, false, false, false},
		{429, true, true, false},
		{500, true, true, false},
		{503, true, true, false},
		{-1, true, true, false},
		{409, true, false, true},
		{400, true, false, false},
	} {
		status.Store(int64(tc.status))
		var err error
		if tc.commit {
			_, _, err = cat.CommitTable(ctx, restEvents, nil,
				[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})})
		} else {
			_, err = cat.LoadTable(ctx, restEvents)
		}
		status.Store(0)
		if err == nil {
			t.Fatalf("status %d (commit %v): no error", tc.status, tc.commit)
		}
		if got := catalog.IsTransient(err); got != tc.transient {
			t.Errorf("status %d (commit %v): IsTransient(%v) = %v, want %v", tc.status, tc.commit, err, got, tc.transient)
		}
		if got := catalog.IsConflict(err); got != tc.conflict {
			t.Errorf("status %d (commit %v): IsConflict(%v) = %v, want %v", tc.status, tc.commit, err, got, tc.conflict)
		}
	}
}

// TestRESTCommitStatisticsTransient: the server answers the first commit
// with 503 and the reload after it with 429. CommitStatistics retries both,
// logging each, and commits; the first attempt's file is kept, since a 503
// to a commit leaves unknown whether the server applied it.
func TestRESTCommitStatisticsTransient(t *testing.T) {
	var commits, loads atomic.Int64
	srv, cat, snapshot := faultyREST(t, func(r *http.Request) int {
		switch {
		case isTableRequest(r, http.MethodPost) && commits.Add(1) == 1:
			return http.StatusServiceUnavailable
		case isTableRequest(r, http.MethodGet) && commits.Load() == 1 && loads.Add(1) == 1:
			return http.StatusTooManyRequests
		}
		return 0
	})
	from := len(srv.Requests())
	w := &restWriter{dir: t.TempDir(), snapshot: snapshot}
	var logged bytes.Buffer
	var waits int
	_, err := catalog.CommitStatistics(t.Context(), cat, restEvents, w.prepare,
		catalog.WithSleep(func(context.Context, time.Duration) error { waits++; return nil }),
		catalog.WithLogger(slog.New(slog.NewJSONHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if got := commitStatuses(srv, from); !slices.Equal(got, []int{503, 200}) {
		t.Errorf("commit statuses %v, want 503 then 200", got)
	}
	if len(w.tables) != 2 || w.discards != 0 || waits != 2 {
		t.Errorf("prepared %d times, discarded %d, waited %d times; want 2, 0, 2", len(w.tables), w.discards, waits)
	}
	if _, err := os.Stat(w.paths[0]); err != nil {
		t.Errorf("the first attempt's file: %v, want it kept", err)
	}
	backing, err := srv.Catalog.LoadTable(t.Context(), restEvents)
	if err != nil {
		t.Fatal(err)
	}
	if got := statisticsPaths(backing); !slices.Equal(got, []string{w.paths[1]}) {
		t.Errorf("statistics files %v, want the second attempt's", got)
	}
	if n := strings.Count(logged.String(), `"level":"WARN"`); n != 2 {
		t.Errorf("%d warnings logged, want one per retry: %s", n, logged.String())
	}
}

// TestRESTCommitStatisticsUnknownThenRefused: a commit answered 503 (its
// outcome unknown) and then refused until the attempts run out fails with
// an error that is not table.ErrCommitFailed, so that the caller does not
// delete files the 503'd attempt may have committed.
func TestRESTCommitStatisticsUnknownThenRefused(t *testing.T) {
	var commits atomic.Int64
	srv, cat, snapshot := faultyREST(t, func(r *http.Request) int {
		if isTableRequest(r, http.MethodPost) && commits.Add(1) == 1 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	srv.BeforeCommit = func(ident table.Identifier) {
		// Another writer commits first, every time.
		other, err := srv.Catalog.LoadTable(context.Background(), ident)
		if err == nil {
			txn := other.NewTransaction()
			if err = txn.SetProperties(iceberg.Properties{"other": time.Now().String()}); err == nil {
				_, err = txn.Commit(context.Background())
			}
		}
		if err != nil {
			t.Error(err)
		}
	}
	w := &restWriter{dir: t.TempDir(), snapshot: snapshot}
	_, err := catalog.CommitStatistics(t.Context(), cat, restEvents, w.prepare, catalog.WithAttempts(3),
		catalog.WithSleep(func(context.Context, time.Duration) error { return nil }))
	if err == nil || errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("error %v, want the refusal after 3 attempts, not as table.ErrCommitFailed", err)
	}
	if _, err := os.Stat(w.paths[0]); err != nil || w.discards != 2 {
		t.Errorf("the 503'd attempt's file: %v; %d discards; want it kept, the 2 refused ones discarded", err, w.discards)
	}
}
