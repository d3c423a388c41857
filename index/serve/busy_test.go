package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// TestBusyPlanIs429: a plan that finds no room in the memory plans work in
// gets 429 with Retry-After, and plans again once there is room.
func TestBusyPlanIs429(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	srv, err := New(Options{Catalog: cat.Catalog, MemoryBudget: 4 << 20, MaxWorkWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	plan := func() *http.Response {
		t.Helper()
		resp, err := http.Post(hts.URL+"/v1/namespaces/db/tables/events/plan", "application/json", strings.NewReader(`{"filter":{"type":"eq","term":"id","value":3}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	release := holdWork(t, srv, srv.planner.Stats().WorkBudget) // all of it
	if resp := plan(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a plan while the work budget is taken: %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	release()
	if resp := plan(); resp.StatusCode != http.StatusOK {
		t.Errorf("a plan with room: %d, want 200", resp.StatusCode)
	}
}

// holdWork reserves n bytes of srv's work budget for the test, in parts
// (one request holds three quarters of it at most); release gives them
// back.
func holdWork(t *testing.T, srv *Server, n int64) (release func()) {
	t.Helper()
	work := srv.planner.Stats().WorkBudget
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for part := min(n, work-work/4); n > 0; part = min(n, work/4) {
		r, err := srv.planner.ReserveWork(context.Background(), part)
		if err != nil {
			release()
			t.Fatal(err)
		}
		releases = append(releases, r)
		n -= part
	}
	return release
}
