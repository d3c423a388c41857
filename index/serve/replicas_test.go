package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

const replicaPath = "/v1/namespaces/db/tables/events"

var testSecret = []byte("a secret the replicas share, 32 bytes or more")

// replica is one server of a test over a shared catalog, answering
// through the REST spec's check.
type replica struct {
	srv *Server
	url string
}

func newReplica(t *testing.T, o Options) replica {
	t.Helper()
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(specChecked(t, srv))
	t.Cleanup(hs.Close)
	return replica{srv, hs.URL}
}

// planAnswer reads plan, poll and tasks answers.
type planAnswer struct {
	Status rest.PlanStatus     `json:"status"`
	PlanID *string             `json:"plan-id"`
	Error  *rest.PlanningError `json:"error"`
	rest.ScanTasks
}

// call sends a request as caller (its Authorization: Bearer caller),
// returning the status, the answer (of a 200) and the error type (of an
// error).
func call(t *testing.T, method, url, caller, body string) (int, planAnswer, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+caller)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out planAnswer
	var em struct {
		Error struct{ Type string } `json:"error"`
	}
	switch {
	case resp.StatusCode == 200:
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	case resp.StatusCode >= 400:
		json.Unmarshal(raw, &em)
	}
	return resp.StatusCode, out, em.Error.Type
}

func taskBody(task string) string { return fmt.Sprintf(`{"plan-task":%q}`, task) }

func filePaths(tasks []rest.RESTFileScanTask) []string {
	var out []string
	for _, task := range tasks {
		out = append(out, task.DataFile.FilePath)
	}
	return out
}

// fetchAll fetches plan tasks from a replica, failing the test on
// anything but 200, and returns the files of each.
func fetchAll(t *testing.T, from replica, caller string, tasks []string) [][]string {
	t.Helper()
	var pages [][]string
	for i, task := range tasks {
		status, page, typ := call(t, "POST", from.url+replicaPath+"/tasks", caller, taskBody(task))
		if status != 200 {
			t.Fatalf("plan task %d from %s: %d %s", i, from.url, status, typ)
		}
		pages = append(pages, filePaths(page.FileScanTasks))
	}
	return pages
}

// onceEach checks that pages hold want files, each once.
func onceEach(t *testing.T, what string, pages [][]string, want int) {
	t.Helper()
	all := slices.Concat(pages...)
	slices.Sort(all)
	if len(all) != want || len(slices.Compact(slices.Clone(all))) != want {
		t.Fatalf("%s: %d files (%d distinct), want each of %d once", what, len(all), len(slices.Compact(all)), want)
	}
}

// TestReplicasShareTasks: with a replica secret, the plan tasks of a plan
// made on one replica are answered by another, with the same files, page
// by page, though it cuts its own plans into other pages; a plan made on
// one is fetched by its id on the other, and that answer's tasks are
// answered by the first. A server without the secret, or with another,
// answers them 404, and without the secret ids are tokens of a secret of
// the server's own, and one server's tasks are another's
// NoSuchPlanTaskException, as before.
func TestReplicasShareTasks(t *testing.T) {
	const files = 12
	cat := servetest.AddFilesTable(t, files)
	a := newReplica(t, Options{Catalog: cat.Catalog, TasksPerPage: 2, ReplicaSecret: testSecret})
	b := newReplica(t, Options{Catalog: cat.Catalog, TasksPerPage: 5, ReplicaSecret: testSecret})

	for _, c := range []struct {
		body  string
		files int
	}{
		{`{}`, files},
		// A lookup the index prunes to 7 files (file i holds 2i+2): B
		// plans it on its fast path.
		{`{"filter":{"type":"in","term":"id","values":[2,4,6,8,10,12,14,15]}}`, 7},
	} {
		status, plan, typ := call(t, "POST", a.url+replicaPath+"/plan", "me", c.body)
		if status != 200 || plan.Status != rest.PlanStatusCompleted {
			t.Fatalf("plan %s on A: %d %s %s", c.body, status, plan.Status, typ)
		}
		if want := (c.files+1)/2 - 1; len(plan.PlanTasks) != want || !isToken(*plan.PlanID) || !isToken(plan.PlanTasks[0]) {
			t.Fatalf("plan %s on A: %d plan tasks, plan id %.8s…, want %d tasks and tokens", c.body, len(plan.PlanTasks), *plan.PlanID, want)
		}
		// The request is in the token, but not to be read there: plan
		// ids are in URL paths, which proxies log.
		if raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(*plan.PlanID, tokenPrefix)); err != nil || bytes.Contains(raw, []byte(`"term"`)) {
			t.Errorf("plan %s: its plan id %s holds the request in the clear (or is not base64: %v)", c.body, *plan.PlanID, err)
		}
		fromA := fetchAll(t, a, "me", plan.PlanTasks)
		fromB := fetchAll(t, b, "me", plan.PlanTasks)
		for i := range fromA {
			if !slices.Equal(fromA[i], fromB[i]) {
				t.Errorf("plan %s, task %d: %q from A, %q from B", c.body, i, fromA[i], fromB[i])
			}
		}
		onceEach(t, "plan "+c.body+": the inline page and B's tasks", append(fromB, filePaths(plan.FileScanTasks)), c.files)

		// The plan fetched by its id from B: B's pages, whose tasks A
		// answers.
		status, onB, typ := call(t, "GET", b.url+replicaPath+"/plan/"+*plan.PlanID, "me", "")
		if status != 200 || onB.Status != rest.PlanStatusCompleted {
			t.Fatalf("plan %s fetched by id from B: %d %s %s", c.body, status, onB.Status, typ)
		}
		onceEach(t, "plan "+c.body+" fetched from B, its tasks from A",
			append(fetchAll(t, a, "me", onB.PlanTasks), filePaths(onB.FileScanTasks)), c.files)
	}

	// Without the secret, or with another: not found.
	_, plan, _ := call(t, "POST", a.url+replicaPath+"/plan", "me", `{}`)
	other := slices.Clone(testSecret)
	other[0] ^= 1
	for name, o := range map[string]Options{
		"without a secret":    {Catalog: cat.Catalog},
		"with another secret": {Catalog: cat.Catalog, ReplicaSecret: other},
	} {
		c := newReplica(t, o)
		if status, _, typ := call(t, "POST", c.url+replicaPath+"/tasks", "me", taskBody(plan.PlanTasks[0])); status != 404 || typ != "NoSuchPlanTaskException" {
			t.Errorf("a plan task on a server %s: %d %s, want 404 NoSuchPlanTaskException", name, status, typ)
		}
		if status, _, typ := call(t, "GET", c.url+replicaPath+"/plan/"+*plan.PlanID, "me", ""); status != 404 || typ != "NoSuchPlanIdException" {
			t.Errorf("a plan id on a server %s: %d %s, want 404 NoSuchPlanIdException", name, status, typ)
		}
	}
	c := newReplica(t, Options{Catalog: cat.Catalog, TasksPerPage: 2})
	d := newReplica(t, Options{Catalog: cat.Catalog, TasksPerPage: 2})
	_, plan, _ = call(t, "POST", c.url+replicaPath+"/plan", "me", `{}`)
	if !isToken(*plan.PlanID) || !isToken(plan.PlanTasks[0]) {
		t.Fatalf("without a secret, plan id %q and task %q, want tokens of the server's own secret", *plan.PlanID, plan.PlanTasks[0])
	}
	if status, _, typ := call(t, "POST", d.url+replicaPath+"/tasks", "me", taskBody(plan.PlanTasks[0])); status != 404 || typ != "NoSuchPlanTaskException" {
		t.Errorf("without a secret, another server's plan task: %d %s, want 404 NoSuchPlanTaskException", status, typ)
	}
}

// TestEvictedPlanTasksAnswered: a server without a replica secret answers
// the plan tasks of a plan its store no longer holds (evicted for room by
// the plans after it) by planning again: at 1,000,000 files and a 256 MiB
// budget, 16 clients' plans of 4 pages passed the store's sixteenth, and
// their tasks were answered NoSuchPlanTaskException, failing their scans.
func TestEvictedPlanTasksAnswered(t *testing.T) {
	const files = 400
	cat := servetest.AddFilesTable(t, files)
	r := newReplica(t, Options{Catalog: cat.Catalog, TasksPerPage: 100, MemoryBudget: 1 << 20})
	var plans []planAnswer
	for _, body := range []string{`{}`, `{"filter":{"type":"not-null","term":"id"}}`, `{"filter":{"type":"gt","term":"id","value":-1}}`} {
		status, plan, typ := call(t, "POST", r.url+replicaPath+"/plan", "me", body)
		if status != 200 || len(plan.PlanTasks) == 0 {
			t.Fatalf("plan %s: %d %s, %d plan tasks", body, status, typ, len(plan.PlanTasks))
		}
		plans = append(plans, plan)
	}
	if n := len(r.srv.plans.plans); n == len(plans) {
		t.Fatalf("the store holds all %d plans (%d bytes): want some evicted", n, r.srv.plans.held())
	}
	for i, plan := range plans {
		onceEach(t, fmt.Sprintf("plan %d's tasks", i), append(fetchAll(t, r, "me", plan.PlanTasks), filePaths(plan.FileScanTasks)), files)
	}
}

// TestReplicaTokensRefused: a token tampered with, presented by another
// caller, for another table, as the other kind, or expired is answered
// 404 by the replica that did not make it, as by the one that did once
// it expired; a plan cancelled on a replica is refused there, and
// cancelling it again is a 404.
func TestReplicaTokensRefused(t *testing.T) {
	cat := servetest.AddFilesTable(t, 6)
	cat.NewTable(t, "other", catalogtest.IDSchema, nil)
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	o := Options{Catalog: cat.Catalog, TasksPerPage: 2, ReplicaSecret: testSecret, Now: clock}
	a, b := newReplica(t, o), newReplica(t, o)
	status, plan, _ := call(t, "POST", a.url+replicaPath+"/plan", "me", `{}`)
	if status != 200 || len(plan.PlanTasks) != 2 {
		t.Fatalf("plan: %d with %d plan tasks, want 2", status, len(plan.PlanTasks))
	}
	id, task := *plan.PlanID, plan.PlanTasks[0]
	if !isToken(id) || !isToken(task) {
		t.Fatalf("plan id %.8s… and task %.8s…, want tokens", id, task)
	}
	tamper := func(tok string, at int) string {
		b := []byte(tok)
		if b[at] == 'A' {
			b[at] = 'B'
		} else {
			b[at] = 'A'
		}
		return string(b)
	}
	otherTable := "/v1/namespaces/db/tables/other"
	for _, c := range []struct {
		what, caller, method, path, body, typ string
	}{
		{"a task tampered with (its payload)", "me", "POST", replicaPath + "/tasks", taskBody(tamper(task, len(task)-20)), "NoSuchPlanTaskException"},
		{"a task tampered with (its MAC)", "me", "POST", replicaPath + "/tasks", taskBody(tamper(task, len(tokenPrefix)+10)), "NoSuchPlanTaskException"},
		{"a plan id tampered with", "me", "GET", replicaPath + "/plan/" + tamper(id, len(id)-3), "", "NoSuchPlanIdException"},
		{"a task of another caller", "you", "POST", replicaPath + "/tasks", taskBody(task), "NoSuchPlanTaskException"},
		{"a plan of another caller", "you", "GET", replicaPath + "/plan/" + id, "", "NoSuchPlanIdException"},
		{"a plan cancelled by another caller", "you", "DELETE", replicaPath + "/plan/" + id, "", "NoSuchPlanIdException"},
		{"a task for another table", "me", "POST", otherTable + "/tasks", taskBody(task), "NoSuchPlanTaskException"},
		{"a plan id for another table", "me", "GET", otherTable + "/plan/" + id, "", "NoSuchPlanIdException"},
		{"a plan id as a task", "me", "POST", replicaPath + "/tasks", taskBody(id), "NoSuchPlanTaskException"},
		{"a task as a plan id", "me", "GET", replicaPath + "/plan/" + task, "", "NoSuchPlanIdException"},
	} {
		if status, _, typ := call(t, c.method, b.url+c.path, c.caller, c.body); status != 404 || typ != c.typ {
			t.Errorf("%s, on B: %d %s, want 404 %s", c.what, status, typ, c.typ)
		}
	}
	if status, _, _ := call(t, "POST", b.url+replicaPath+"/tasks", "me", taskBody(task)); status != 200 {
		t.Fatalf("the task itself on B: %d", status)
	}

	// Cancelled on B: B refuses the plan and its tasks, A, which made it,
	// still answers them (cancelling is advisory), until A is told too.
	if status, _, typ := call(t, "DELETE", b.url+replicaPath+"/plan/"+id, "me", ""); status != 204 {
		t.Fatalf("cancel on B: %d %s", status, typ)
	}
	for _, c := range []struct{ method, path, body, typ string }{
		{"POST", replicaPath + "/tasks", taskBody(task), "NoSuchPlanTaskException"},
		{"GET", replicaPath + "/plan/" + id, "", "NoSuchPlanIdException"},
		{"DELETE", replicaPath + "/plan/" + id, "", "NoSuchPlanIdException"},
	} {
		if status, _, typ := call(t, c.method, b.url+c.path, "me", c.body); status != 404 || typ != c.typ {
			t.Errorf("%s %s of a plan cancelled on B, on B: %d %s, want 404 %s", c.method, c.path, status, typ, c.typ)
		}
	}
	if status, _, _ := call(t, "POST", a.url+replicaPath+"/tasks", "me", taskBody(task)); status != 200 {
		t.Errorf("a task of a plan cancelled on B, on A: %d, want 200", status)
	}
	if status, _, _ := call(t, "DELETE", a.url+replicaPath+"/plan/"+id, "me", ""); status != 204 {
		t.Errorf("cancel on A: %d", status)
	}
	if status, _, typ := call(t, "POST", a.url+replicaPath+"/tasks", "me", taskBody(task)); status != 404 || typ != "NoSuchPlanTaskException" {
		t.Errorf("a task of a plan cancelled on A, on A: %d %s", status, typ)
	}

	// Expired: past the plan TTL neither answers.
	_, plan, _ = call(t, "POST", a.url+replicaPath+"/plan", "me", `{}`)
	mu.Lock()
	now = now.Add(DefaultPlanTTL + time.Second)
	mu.Unlock()
	for name, r := range map[string]replica{"A": a, "B": b} {
		if status, _, typ := call(t, "POST", r.url+replicaPath+"/tasks", "me", taskBody(plan.PlanTasks[0])); status != 404 || typ != "NoSuchPlanTaskException" {
			t.Errorf("an expired task on %s: %d %s, want 404 NoSuchPlanTaskException", name, status, typ)
		}
		if status, _, typ := call(t, "GET", r.url+replicaPath+"/plan/"+*plan.PlanID, "me", ""); status != 404 || typ != "NoSuchPlanIdException" {
			t.Errorf("an expired plan on %s: %d %s, want 404 NoSuchPlanIdException", name, status, typ)
		}
	}
}

// TestReplicaPollsSubmittedPlan: a plan answered submitted by one replica
// (it waits for room in that replica's work budget, which the test holds)
// is polled on another, which plans it itself: at once when it can, else
// submitted there too and completed when it could run.
func TestReplicaPollsSubmittedPlan(t *testing.T) {
	const files = 12
	cat := servetest.AddFilesTable(t, files)
	o := Options{Catalog: cat.Catalog, SubmitAfter: 50 * time.Millisecond, MemoryBudget: 64 << 20, ReplicaSecret: testSecret}
	a, b := newReplica(t, o), newReplica(t, o)
	// The work budget held but for a request's hold, in quarters: one
	// reservation may hold three quarters at most.
	holdAll := func(srv *Server) func() {
		t.Helper()
		budget := srv.planner.Stats().WorkBudget
		var releases []func()
		for left := budget - planning.RequestWorkBytes(64); left > 0; {
			n := min(left, budget/4)
			release, err := srv.planner.ReserveWork(context.Background(), n)
			if err != nil {
				t.Fatal(err)
			}
			releases, left = append(releases, release), left-n
		}
		return func() {
			for _, release := range releases {
				release()
			}
		}
	}
	poll := func(r replica, id string) planAnswer {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			status, res, typ := call(t, "GET", r.url+replicaPath+"/plan/"+id, "me", "")
			if status != 200 {
				t.Fatalf("poll %s: %d %s", r.url, status, typ)
			}
			if res.Status != rest.PlanStatusSubmitted || time.Now().After(deadline) {
				return res
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	releaseA := holdAll(a.srv)
	status, res, _ := call(t, "POST", a.url+replicaPath+"/plan", "me", `{"filter":{"type":"in","term":"id","values":[2,4,6,7]}}`)
	if status != 200 || res.Status != rest.PlanStatusSubmitted || res.PlanID == nil || !isToken(*res.PlanID) {
		t.Fatalf("a plan waiting for room on A: %d %s, want submitted with a token", status, res.Status)
	}
	id := *res.PlanID
	onB := poll(b, id)
	if onB.Status != rest.PlanStatusCompleted || len(onB.FileScanTasks) != 3 {
		t.Fatalf("the plan polled on B: %s (%+v), %d files, want completed with 3", onB.Status, onB.Error, len(onB.FileScanTasks))
	}
	if status, onA, _ := call(t, "GET", a.url+replicaPath+"/plan/"+id, "me", ""); status != 200 || onA.Status != rest.PlanStatusSubmitted {
		t.Fatalf("the plan polled on A while it waits there: %d %s", status, onA.Status)
	}
	releaseA()
	if onA := poll(a, id); onA.Status != rest.PlanStatusCompleted || !slices.Equal(filePaths(onA.FileScanTasks), filePaths(onB.FileScanTasks)) {
		t.Fatalf("the plan on A once it could run: %s with %q, want completed with B's %q", onA.Status, filePaths(onA.FileScanTasks), filePaths(onB.FileScanTasks))
	}

	// Submitted on B too, then completed there.
	releaseA = holdAll(a.srv)
	defer releaseA()
	status, res, _ = call(t, "POST", a.url+replicaPath+"/plan", "me", `{}`)
	if status != 200 || res.Status != rest.PlanStatusSubmitted {
		t.Fatalf("a second plan on A: %d %s", status, res.Status)
	}
	releaseB := holdAll(b.srv)
	if status, onB, _ := call(t, "GET", b.url+replicaPath+"/plan/"+*res.PlanID, "me", ""); status != 200 || onB.Status != rest.PlanStatusSubmitted {
		t.Fatalf("the plan polled on B while B has no room: %d %s, want submitted", status, onB.Status)
	}
	releaseB()
	if onB := poll(b, *res.PlanID); onB.Status != rest.PlanStatusCompleted || len(onB.FileScanTasks) != files {
		t.Fatalf("the plan polled on B once it could run: %s (%+v) with %d files, want completed with %d", onB.Status, onB.Error, len(onB.FileScanTasks), files)
	}
}

// TestReplicaTasksAfterCommit: a commit between a plan and the fetch of
// its tasks on another replica does not change what they hold: the other
// replica plans the snapshot planned, not the table's new one.
func TestReplicaTasksAfterCommit(t *testing.T) {
	const files = 6
	cat := servetest.AddFilesTable(t, files)
	o := Options{Catalog: cat.Catalog, TasksPerPage: 2, ReplicaSecret: testSecret}
	a, b := newReplica(t, o), newReplica(t, o)
	_, plan, _ := call(t, "POST", a.url+replicaPath+"/plan", "me", `{}`)
	if len(plan.PlanTasks) != 2 {
		t.Fatalf("plan: %d plan tasks, want 2", len(plan.PlanTasks))
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.AppendIDs(t, tbl, 1, 3, 5)
	pages := fetchAll(t, b, "me", plan.PlanTasks)
	onceEach(t, "the plan's tasks on B after a commit", append(pages, filePaths(plan.FileScanTasks)), files)
	status, onB, _ := call(t, "GET", b.url+replicaPath+"/plan/"+*plan.PlanID, "me", "")
	if status != 200 {
		t.Fatalf("the plan fetched by id from B after a commit: %d", status)
	}
	onceEach(t, "the plan fetched by id from B after a commit, its tasks from B", append(fetchAll(t, b, "me", onB.PlanTasks), filePaths(onB.FileScanTasks)), files)
	if _, now, _ := call(t, "POST", b.url+replicaPath+"/plan", "me", `{}`); len(now.FileScanTasks)+2*len(now.PlanTasks) < files+1 {
		t.Fatalf("a new plan on B: %d files inline and %d tasks, want the appended file too", len(now.FileScanTasks), len(now.PlanTasks))
	}
}

// TestReplicasShareTasksProxy: as TestReplicasShareTasks, in proxy mode,
// as docs/kubernetes/serve.yaml runs: two proxies in front of one REST
// catalog answer each other's plan tasks and plan ids, each loading the
// table from the upstream with the caller's own token, which binds them:
// a token the upstream refuses gets the upstream's 401 there.
func TestReplicasShareTasksProxy(t *testing.T) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	tbl := up.Catalog.NewTable(t, "events", catalogtest.IDSchema, nil)
	for i := range 5 {
		tbl = catalogtest.AppendIDs(t, tbl, int64(i))
	}
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Upstream: u, PlanWithOwnCredentials: true, TasksPerPage: 2, ReplicaSecret: testSecret}
	a, b := newReplica(t, o), newReplica(t, o)
	status, plan, typ := call(t, "POST", a.url+replicaPath+"/plan", up.Token, `{}`)
	if status != 200 || len(plan.PlanTasks) != 2 {
		t.Fatalf("plan on A: %d %s with %d plan tasks, want 2", status, typ, len(plan.PlanTasks))
	}
	onceEach(t, "the inline page and B's tasks", append(fetchAll(t, b, up.Token, plan.PlanTasks), filePaths(plan.FileScanTasks)), 5)
	status, onB, typ := call(t, "GET", b.url+replicaPath+"/plan/"+*plan.PlanID, up.Token, "")
	if status != 200 || onB.Status != rest.PlanStatusCompleted {
		t.Fatalf("the plan fetched by id from B: %d %s %s", status, onB.Status, typ)
	}
	onceEach(t, "the plan fetched from B, its tasks from A", append(fetchAll(t, a, up.Token, onB.PlanTasks), filePaths(onB.FileScanTasks)), 5)
	if status, _, _ := call(t, "POST", b.url+replicaPath+"/tasks", "wrong", taskBody(plan.PlanTasks[0])); status != 401 {
		t.Errorf("a plan task on B with a token the upstream refuses: %d, want its 401", status)
	}
}
