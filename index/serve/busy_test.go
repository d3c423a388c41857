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
	release, err := srv.planner.ReserveWork(context.Background(), 4<<20) // all of it
	if err != nil {
		t.Fatal(err)
	}
	if resp := plan(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a plan while the work budget is taken: %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	release()
	if resp := plan(); resp.StatusCode != http.StatusOK {
		t.Errorf("a plan with room: %d, want 200", resp.StatusCode)
	}
}
