package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// TestSubmittedPlanIsPolled: a plan not done within SubmitAfter (here: it
// waits for room in the work budget, which the test holds) is answered
// status submitted with its plan id, polled as submitted, then completed
// once it could run, with every file; a submitted plan cancelled stops
// and is gone; its owner alone finds it.
func TestSubmittedPlanIsPolled(t *testing.T) {
	const files = 12
	cat := servetest.AddFilesTable(t, files)
	srv, err := New(Options{Catalog: cat.Catalog, SubmitAfter: 50 * time.Millisecond, MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	path := hs.URL + "/v1/namespaces/db/tables/events/plan"
	// planAnswer reads both the plan answer and the poll's (which has no
	// plan id, so iceberg-go's PlanTableScanResponse refuses it).
	type planAnswer struct {
		Status rest.PlanStatus     `json:"status"`
		PlanID *string             `json:"plan-id"`
		Error  *rest.PlanningError `json:"error"`
		rest.ScanTasks
	}
	call := func(method, url, body string) (int, planAnswer) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out planAnswer
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("%s %s: %v: %s", method, url, err, raw)
			}
		}
		return resp.StatusCode, out
	}

	// All the room plans have but what a small request holds.
	holdAll := func() func() {
		t.Helper()
		return holdWork(t, srv, srv.planner.Stats().WorkBudget-planning.RequestWorkBytes(64))
	}
	hold := holdAll()
	status, res := call("POST", path, `{}`)
	if status != 200 || res.Status != rest.PlanStatusSubmitted || res.PlanID == nil || len(res.FileScanTasks) != 0 {
		t.Fatalf("a plan waiting for room: %d %+v, want status submitted with a plan id and no tasks", status, res)
	}
	id := *res.PlanID
	if status, res := call("GET", path+"/"+id, ""); status != 200 || res.Status != rest.PlanStatusSubmitted {
		t.Fatalf("poll while it waits: %d %s", status, res.Status)
	}
	hold()
	deadline := time.Now().Add(30 * time.Second)
	for res.Status == rest.PlanStatusSubmitted {
		if time.Now().After(deadline) {
			t.Fatal("the plan was not completed 30 s after it could run")
		}
		time.Sleep(20 * time.Millisecond)
		if status, res = call("GET", path+"/"+id, ""); status != 200 {
			t.Fatalf("poll: %d", status)
		}
	}
	if res.Status != rest.PlanStatusCompleted || len(res.FileScanTasks) != files {
		t.Fatalf("the polled plan: %s (%+v) with %d tasks, want completed with %d", res.Status, res.Error, len(res.FileScanTasks), files)
	}

	hold = holdAll()
	status, cancelled := call("POST", path, `{"filter":{"type":"eq","term":"id","value":2}}`)
	if status != 200 || cancelled.Status != rest.PlanStatusSubmitted {
		t.Fatalf("a second plan: %d %s", status, cancelled.Status)
	}
	if status, _ := call("DELETE", path+"/"+*cancelled.PlanID, ""); status != 204 {
		t.Fatalf("cancel a submitted plan: %d", status)
	}
	if status, _ := call("GET", path+"/"+*cancelled.PlanID, ""); status != 404 {
		t.Fatalf("a cancelled plan polled: %d, want 404", status)
	}
	hold()
	for srv.planner.Stats().WorkReserved != 0 || srv.admitter.inFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled plan still holds %d bytes and %d slots", srv.planner.Stats().WorkReserved, srv.admitter.inFlight())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
