package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// gatedCatalog is a catalog whose table loads for the caller "Bearer held"
// wait until the test opens its gate (or ends); it counts the loads of
// each Authorization.
type gatedCatalog struct {
	icecatalog.Catalog
	entered chan struct{} // one value per held load begun
	gate    chan struct{}
	opened  sync.Once
	mu      sync.Mutex
	loads   map[string]int
}

func newGatedCatalog(cat icecatalog.Catalog) *gatedCatalog {
	g := &gatedCatalog{Catalog: cat, entered: make(chan struct{}, 16), gate: make(chan struct{}), loads: map[string]int{}}
	return g
}

// open lets every held load go on.
func (g *gatedCatalog) open() { g.opened.Do(func() { close(g.gate) }) }

func (g *gatedCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	auth := ""
	if c, _ := ctx.Value(callerKey{}).(*caller); c != nil {
		auth = c.header.Get("Authorization")
	}
	g.mu.Lock()
	g.loads[auth]++
	g.mu.Unlock()
	if auth == "Bearer held" {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.Catalog.LoadTable(ctx, ident)
}

func (g *gatedCatalog) loadsOf(auth string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.loads[auth]
}

const eventsPlan = "/v1/namespaces/db/tables/events/plan"

// post sends a plan request as auth (none when "") with a client that
// gives up after 20 s (a request admitted where it should not be waits on
// the gate), and returns the status, Retry-After and body.
func post(t *testing.T, url, auth, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return -1, "", []byte(err.Error())
	}
	return send(t, req, auth)
}

func send(t *testing.T, req *http.Request, auth string) (int, string, []byte) {
	t.Helper()
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if req.Method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return -1, "", []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// holdPlan starts a plan of the caller "Bearer held", which waits in its
// table load with its slot taken, and returns once it is there.
func holdPlan(t *testing.T, g *gatedCatalog, url, body string) {
	t.Helper()
	go post(t, url, "Bearer held", body)
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the held plan did not reach its table load")
	}
}

// TestAdmissionPerCaller: a caller with as many plans being computed as
// one caller may have (a quarter of the slots) gets 429 with Retry-After
// at once, while another caller's plan is taken and answered, though
// slots are free; once its plan ends, the first caller plans again.
// Before, the held caller's second plan was taken (and waited with it).
func TestAdmissionPerCaller(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	g := newGatedCatalog(cat.Catalog)
	srv, err := New(Options{Catalog: g, MaxPlansInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	defer g.open() // before the server closes: it waits for the held plan
	url := hts.URL + eventsPlan
	holdPlan(t, g, url, `{"filter":{"type":"eq","term":"id","value":2}}`)
	status, retry, body := post(t, url, "Bearer held", `{"filter":{"type":"eq","term":"id","value":4}}`)
	if status != http.StatusTooManyRequests || retry == "" || !strings.Contains(string(body), "this caller") {
		t.Errorf("the held caller's second plan beside its first: %d (Retry-After %q) %s, want 429 with Retry-After naming the caller", status, retry, body)
	}
	if status, _, body := post(t, url, "Bearer other", `{"filter":{"type":"eq","term":"id","value":4}}`); status != http.StatusOK {
		t.Errorf("another caller's plan: %d %s, want 200", status, body)
	}
	if n := srv.admitter.inFlight(); n != 1 {
		t.Errorf("%d plans in flight beside the held one's, want 1", n)
	}
	g.open()
	deadline := time.Now().Add(20 * time.Second)
	for srv.admitter.inFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if status, _, body := post(t, url, "Bearer held", `{"filter":{"type":"eq","term":"id","value":4}}`); status != http.StatusOK {
		t.Errorf("the caller's plan once its first ended: %d %s, want 200", status, body)
	}
}

// TestCallerIdentity: a caller is its credential where callers have
// credentials of their own, and its address without one or where the
// server's one bearer token is every caller's.
func TestCallerIdentity(t *testing.T) {
	req := httptest.NewRequest("POST", eventsPlan, nil)
	req.RemoteAddr = "192.0.2.7:40001"
	other := httptest.NewRequest("POST", eventsPlan, nil)
	other.RemoteAddr = "192.0.2.7:40002"
	open := &Server{}
	if open.callerOf(req) != open.callerOf(other) {
		t.Errorf("two connections of one address without credentials: %q and %q, want one caller", open.callerOf(req), open.callerOf(other))
	}
	req.Header.Set("Authorization", "Bearer a")
	other.Header.Set("Authorization", "Bearer b")
	if open.callerOf(req) == open.callerOf(other) || strings.Contains(open.callerOf(req), "Bearer") {
		t.Errorf("two credentials from one address: %q and %q, want two callers, neither naming its credential", open.callerOf(req), open.callerOf(other))
	}
	token := &Server{o: Options{BearerToken: "a"}}
	other.Header.Set("Authorization", "Bearer a")
	if token.callerOf(req) != token.callerOf(other) || !strings.Contains(token.callerOf(req), "192.0.2.7") {
		t.Errorf("catalog mode's one token from one address: %q and %q, want the address", token.callerOf(req), token.callerOf(other))
	}
}

// TestOversizedBodyRefusedBeforeASlot: a plan request whose body would
// hold more than the whole work budget while planned is answered 413 by
// its Content-Length, before a slot is taken: with the only slot held, it
// is 413, not 429. Before, it took a slot (or got 429 without one) and
// reserved the whole budget while its body was read.
func TestOversizedBodyRefusedBeforeASlot(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	g := newGatedCatalog(cat.Catalog)
	srv, err := New(Options{Catalog: g, MaxPlansInFlight: 1, MemoryBudget: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	defer g.open() // before the server closes: it waits for the held plan
	work := srv.planner.Stats().WorkBudget
	var values strings.Builder
	values.WriteString("1")
	for i := 1; planning.RequestWorkBytes(int64(values.Len())) <= work; i++ {
		values.WriteString("," + strconv.Itoa(2*i+1))
	}
	big := `{"filter":{"type":"in","term":"id","values":[` + values.String() + `]}}`
	holdPlan(t, g, hts.URL+eventsPlan, `{}`)
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer other", big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes (%d of work budget) with the only slot held: %d %.200s, want 413", len(big), work, status, body)
	}
	if status, retry, _ := post(t, hts.URL+eventsPlan, "Bearer other", `{}`); status != http.StatusTooManyRequests || retry == "" {
		t.Errorf("a small plan with the only slot held: %d, want 429 with Retry-After", status)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestINPastTheLimitRefusedEarly: a body whose IN passes MaxFilterValues
// is refused 400 naming the limit as soon as its values pass it, not after
// the whole body is read: of a 48 MiB body (an IN of 100,001 values, then
// blanks), serve reads less than an eighth. Before, it read all of it,
// decoded it, and refused it when parsing the filter.
func TestINPastTheLimitRefusedEarly(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	const size = 48 << 20
	srv, err := New(Options{Catalog: cat.Catalog, MaxRequestBytes: size + 1<<10, MemoryBudget: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64 // of the body, by serve
	hts := httptest.NewServer(specChecked(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &countingReader{r: r.Body}
		r.Body = struct {
			io.Reader
			io.Closer
		}{body, r.Body}
		srv.ServeHTTP(w, r)
		read.Store(body.n.Load())
	})))
	defer hts.Close()
	var head bytes.Buffer
	head.WriteString(`{"filter":{"type":"in","term":"id","values":[1`)
	for range planning.MaxFilterValues {
		head.WriteString(",1")
	}
	tail := `]}}`
	body := io.MultiReader(&head, io.LimitReader(blanks{}, int64(size-head.Len()-len(tail))), strings.NewReader(tail))
	req, err := http.NewRequest("POST", hts.URL+eventsPlan, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	status, _, answer := send(t, req, "")
	if status != http.StatusBadRequest || !strings.Contains(string(answer), "more than 100000 values") {
		t.Errorf("an IN of %d values in %d bytes: %d %.300s, want 400 naming the limit", planning.MaxFilterValues+1, size, status, answer)
	}
	if n := read.Load(); n > size/8 {
		t.Errorf("serve read %d of the body's %d bytes, want the body refused once its values passed the limit", n, size)
	}
}

// blanks reads as endless spaces.
type blanks struct{}

func (blanks) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestFilterHeldForThePlan: while a plan is made (here: waiting in its
// table load), the work budget holds what its decoded filter holds
// (planning.RequestWorkBytes), not only while its body is read; it is all
// given back when the plan ends. Before, the body's reservation was given
// back once decoded, and the filter was held outside the budget.
func TestFilterHeldForThePlan(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	g := newGatedCatalog(cat.Catalog)
	srv, err := New(Options{Catalog: g, MemoryBudget: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	defer g.open() // before the server closes: it waits for the held plan
	var values []string
	for i := range 20_000 {
		values = append(values, strconv.Itoa(2*i+1))
	}
	filter := `{"type":"in","term":"id","values":[` + strings.Join(values, ",") + `]}`
	load, err := http.NewRequest("GET", hts.URL+"/v1/namespaces/db/tables/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, _, body := send(t, load, "Bearer other"); status != http.StatusOK {
		t.Fatalf("load the table: %d %.200s", status, body)
	}
	done := make(chan int)
	go func() {
		status, _, _ := post(t, hts.URL+eventsPlan, "Bearer held", `{"filter":`+filter+`}`)
		done <- status
	}()
	<-g.entered
	want := planning.RequestWorkBytes(int64(len(filter)))
	if got := srv.planner.Stats().WorkReserved; got < want {
		t.Errorf("while the plan loads its table: %d bytes of the work budget held, want at least %d (its filter of %d bytes)", got, want, len(filter))
	}
	g.open()
	if status := <-done; status != http.StatusOK {
		t.Fatalf("the plan: %d", status)
	}
	deadline := time.Now().Add(20 * time.Second) // the plan gives back after it answered
	for srv.planner.Stats().WorkReserved != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.planner.Stats().WorkReserved; got != 0 {
		t.Errorf("%d bytes of the work budget held 20 s after the plan, want 0", got)
	}
}

// TestFetchLoadsAdmitted: the table load of a poll (GET plan) or a page
// (POST tasks) takes a slot of the loads' own (as many as the plans'): with
// the only plan slot held a poll is still answered, and with the only load
// slot held (another caller's poll waiting in its load) a poll and a fetch
// of tasks get 429 with Retry-After and load nothing; with the slot free
// they are answered. Before, they loaded the table outside any slot.
func TestFetchLoadsAdmitted(t *testing.T) {
	cat := servetest.AddFilesTable(t, 12)
	g := newGatedCatalog(cat.Catalog)
	srv, err := New(Options{Catalog: g, MaxPlansInFlight: 1, TasksPerPage: 5})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	defer g.open() // before the server closes: it waits for the held requests
	status, _, body := post(t, hts.URL+eventsPlan, "Bearer a", `{}`)
	var plan struct {
		PlanID    string   `json:"plan-id"`
		PlanTasks []string `json:"plan-tasks"`
	}
	if err := json.Unmarshal(body, &plan); status != http.StatusOK || err != nil || plan.PlanID == "" || len(plan.PlanTasks) == 0 {
		t.Fatalf("a plan of 12 files in pages of 5: %d %v %.300s", status, err, body)
	}
	tasks, _ := json.Marshal(map[string]string{"plan-task": plan.PlanTasks[0]})
	fetches := func() []*http.Request {
		poll, _ := http.NewRequest("GET", hts.URL+eventsPlan+"/"+plan.PlanID, nil)
		page, _ := http.NewRequest("POST", hts.URL+"/v1/namespaces/db/tables/events/tasks", bytes.NewReader(tasks))
		return []*http.Request{poll, page}
	}
	holdPlan(t, g, hts.URL+eventsPlan, `{}`) // the only plan slot
	if status, _, body := send(t, fetches()[0], "Bearer a"); status != http.StatusOK {
		t.Errorf("a poll with the only plan slot held: %d %.200s, want 200", status, body)
	}
	go func() { // the only load slot: a poll waiting in its table load
		req, _ := http.NewRequest("GET", hts.URL+eventsPlan+"/0123", nil)
		send(t, req, "Bearer held")
	}()
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the held poll did not reach its table load")
	}
	loads := g.loadsOf("Bearer a")
	for _, req := range fetches() {
		if status, retry, body := send(t, req, "Bearer a"); status != http.StatusTooManyRequests || retry == "" {
			t.Errorf("%s %s with the only load slot held: %d (Retry-After %q) %.200s, want 429 with Retry-After", req.Method, req.URL.Path, status, retry, body)
		}
	}
	if n := g.loadsOf("Bearer a") - loads; n != 0 {
		t.Errorf("%d table loads for the refused fetches, want none", n)
	}
	g.open()
	deadline := time.Now().Add(20 * time.Second)
	for (srv.admitter.inFlight() != 0 || len(srv.admitter.loads) != 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, req := range fetches() {
		if status, _, body := send(t, req, "Bearer a"); status != http.StatusOK {
			t.Errorf("%s %s with the slots free: %d %.200s, want 200", req.Method, req.URL.Path, status, body)
		}
	}
}

// inOfAtLeast is a plan request whose IN of odd ids is long enough that
// the request holds more than bytes of the work budget while planned.
func inOfAtLeast(bytes int64) string {
	var values strings.Builder
	values.WriteString("1")
	for i := 1; planning.RequestWorkBytes(int64(values.Len())) <= bytes; i++ {
		values.WriteString("," + strconv.Itoa(2*i+1))
	}
	return `{"filter":{"type":"in","term":"id","values":[` + values.String() + `]}}`
}

// stalledPlan is a plan request whose body is sent in part, the rest when
// the test says.
type stalledPlan struct {
	pw   *io.PipeWriter
	rest string
	done chan int // its status, once answered
	at   chan time.Time
}

// stall sends the first half of body as auth's plan request and returns;
// finish sends the rest.
func stall(t *testing.T, url, auth, body string) *stalledPlan {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", url, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	p := &stalledPlan{pw: pw, rest: body[len(body)/2:], done: make(chan int, 1), at: make(chan time.Time, 1)}
	go func() {
		status, _, answer := send(t, req, auth)
		if status != http.StatusOK {
			t.Errorf("the stalled plan of %s: %d %.300s", auth, status, answer)
		}
		p.at <- time.Now()
		p.done <- status
	}()
	t.Cleanup(func() { pw.Close() })
	if _, err := pw.Write([]byte(body[:len(body)/2])); err != nil {
		t.Fatal(err)
	}
	return p
}

// finish sends the rest of the body and waits for the answer.
func (p *stalledPlan) finish(t *testing.T) (int, time.Time) {
	t.Helper()
	if _, err := p.pw.Write([]byte(p.rest)); err != nil {
		t.Fatal(err)
	}
	p.pw.Close()
	return <-p.done, <-p.at
}

// waitReserved waits until at least n bytes of srv's work budget are held.
func waitReserved(t *testing.T, srv *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for srv.planner.Stats().WorkReserved < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of the work budget held, want at least %d", srv.planner.Stats().WorkReserved, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLargePlansOneAtATime: while one request holds more than a quarter of
// the work budget (here a plan whose body, 30% of it, is still arriving),
// another caller's plan that would is answered 429 with Retry-After at
// once, though both would fit, and a small plan of a third caller is
// planned; the first is planned when its body ends. Before, the second
// was taken beside the first: with many such plans waiting, first come
// first served kept the small plans queued behind each of them (bench
// --serve-abuse with 128 hostile callers: 1.4% of ordinary plans planned).
func TestLargePlansOneAtATime(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	srv, err := New(Options{Catalog: cat.Catalog, MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(srv) // not specChecked: it reads each body whole first
	defer hts.Close()
	large := inOfAtLeast(srv.planner.Stats().WorkBudget * 3 / 10)
	first := stall(t, hts.URL+eventsPlan, "Bearer a", large)
	waitReserved(t, srv, planning.RequestWorkBytes(int64(len(large))))
	start := time.Now()
	status, retry, body := post(t, hts.URL+eventsPlan, "Bearer b", large)
	if status != http.StatusTooManyRequests || retry == "" || !strings.Contains(string(body), "more than a quarter") {
		t.Errorf("a second large plan (%d bytes) beside the first: %d (Retry-After %q) %.300s, want 429 with Retry-After", len(large), status, retry, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the second large plan was answered after %s, want at once", d)
	}
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer c", `{"filter":{"type":"eq","term":"id","value":2}}`); status != http.StatusOK {
		t.Errorf("a small plan beside the large one: %d %.300s, want 200", status, body)
	}
	first.finish(t)
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer b", large); status != http.StatusOK {
		t.Errorf("the second large plan once the first ended: %d %.300s, want 200", status, body)
	}
}

// TestLargePlansTakeTurns: after a large plan (more than a quarter of the
// work budget) that held its room for 1 s, the next large plan waits
// about as long while smaller requests hold room, and small plans are
// planned meanwhile; with nothing else held it starts at once. Before,
// large plans one after another kept the budget to themselves (bench
// --serve-abuse, 128 hostile callers: plans of every file, each taking the
// whole budget, one at a time and back to back, left ordinary plans 370
// plans in 10 s against 3,216 with turns).
func TestLargePlansTakeTurns(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	srv, err := New(Options{Catalog: cat.Catalog, MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(srv) // not specChecked: it reads each body whole first
	defer hts.Close()
	large := inOfAtLeast(srv.planner.Stats().WorkBudget * 3 / 10)
	const held = time.Second
	small := `{"filter":{"type":"eq","term":"id","value":2}}`

	first := stall(t, hts.URL+eventsPlan, "Bearer a", large)
	waitReserved(t, srv, planning.RequestWorkBytes(int64(len(large))))
	time.Sleep(held)
	waiting := stall(t, hts.URL+eventsPlan, "Bearer c", small) // a small request holding room
	waitReserved(t, srv, planning.RequestWorkBytes(int64(len(large)))+planning.RequestWorkBytes(int64(len(small))))
	_, ended := first.finish(t)
	turnWaits := srv.planner.Stats().TurnWaits
	second := make(chan time.Time, 1)
	go func() {
		if status, _, body := post(t, hts.URL+eventsPlan, "Bearer b", large); status != http.StatusOK {
			t.Errorf("the next large plan: %d %.300s, want 200", status, body)
		}
		second <- time.Now()
	}()
	time.Sleep(held / 4)
	start := time.Now()
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer d", small); status != http.StatusOK {
		t.Errorf("a small plan while the large one waits its turn: %d %.300s, want 200", status, body)
	}
	smallDone := time.Now()
	at := <-second
	if d := at.Sub(ended); d < held/2 || srv.planner.Stats().TurnWaits != turnWaits+1 {
		t.Errorf("the next large plan was answered %s after the first (which held its room %s) while a small request held room, %d plans waited their turn: want it to wait its turn",
			d.Round(time.Millisecond), held, srv.planner.Stats().TurnWaits-turnWaits)
	}
	if !smallDone.Before(at) {
		t.Errorf("a small plan took %s, answered %s after the waiting large one, want it planned meanwhile", smallDone.Sub(start).Round(time.Millisecond), smallDone.Sub(at).Round(time.Millisecond))
	}
	waiting.finish(t)

	third := stall(t, hts.URL+eventsPlan, "Bearer a", large)
	waitReserved(t, srv, planning.RequestWorkBytes(int64(len(large))))
	time.Sleep(held)
	_, ended = third.finish(t)
	waitFree := time.Now().Add(20 * time.Second)
	for srv.planner.Stats().WorkReserved != 0 && time.Now().Before(waitFree) {
		time.Sleep(5 * time.Millisecond)
	}
	// Whatever the time it takes to plan (a busy machine's), it does not
	// wait for a turn: nothing else holds room.
	turnWaits = srv.planner.Stats().TurnWaits
	start = time.Now()
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer b", large); status != http.StatusOK {
		t.Errorf("a large plan with nothing else held: %d %.300s, want 200", status, body)
	}
	if waits := srv.planner.Stats().TurnWaits - turnWaits; waits != 0 {
		t.Errorf("a large plan with nothing else held, %s after another, waited its turn (answered in %s), want it not to", start.Sub(ended).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
}

// TestDeepFilterRefusedBeforeItsRoom: a body is read under a hold of what
// its first planning.BodyStep bytes may hold, not what its whole length
// may: with less room in the work budget than a 10,000-deep filter's
// 650 KB would hold, the filter is refused 400 for its nesting, at once;
// a body that does need more room than there is gets 429 with
// Retry-After once its first step is read. Before, the deep filter waited
// for room for its whole length, holding its slot, and got 429 after
// MaxWorkWait (bench --serve-abuse: such filters held 16 of 155 slot-seconds
// waiting, and the plans queued behind them waited too).
func TestDeepFilterRefusedBeforeItsRoom(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	srv, err := New(Options{Catalog: cat.Catalog, MemoryBudget: 64 << 20, MaxWorkWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	work := srv.planner.Stats().WorkBudget
	for _, n := range []int64{work - work/4, work/4 - 1<<20} { // 1 MiB left: one request holds three quarters at most
		release, err := srv.planner.ReserveWork(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	var deep strings.Builder
	deep.WriteString(`{"filter":`)
	for range 10_000 {
		deep.WriteString(`{"type":"and","left":{"type":"eq","term":"id","value":1},"right":`)
	}
	deep.WriteString(`{"type":"eq","term":"id","value":1}` + strings.Repeat("}", 10_001))
	if planning.RequestWorkBytes(int64(deep.Len())) <= 1<<20 {
		t.Fatalf("a deep filter of %d bytes holds %d, want more than the 1 MiB left", deep.Len(), planning.RequestWorkBytes(int64(deep.Len())))
	}
	status, _, body := post(t, hts.URL+eventsPlan, "Bearer a", deep.String())
	if status != http.StatusBadRequest || !strings.Contains(string(body), "nested deeper") {
		t.Errorf("a 10,000-deep filter of %d bytes with 1 MiB of room: %d %.300s, want 400 naming the nesting", deep.Len(), status, body)
	}
	big := inOfAtLeast(2 << 20)
	if status, retry, body := post(t, hts.URL+eventsPlan, "Bearer a", big); status != http.StatusTooManyRequests || retry == "" {
		t.Errorf("a plan of %d bytes (2 MiB of work) with 1 MiB of room: %d (Retry-After %q) %.300s, want 429 with Retry-After", len(big), status, retry, body)
	}
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer a", `{"filter":{"type":"eq","term":"id","value":2}}`); status != http.StatusOK {
		t.Errorf("a small plan with 1 MiB of room: %d %.300s, want 200", status, body)
	}
	deadline := time.Now().Add(20 * time.Second) // a plan gives back after it answered
	for srv.planner.Stats().WorkReserved != work-1<<20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := srv.planner.Stats().WorkReserved; got != work-1<<20 {
		t.Errorf("%d bytes of the work budget held after the plans, want only the test's %d", got, work-1<<20)
	}
}

// TestSmallPlansBesideAPlanOfTheWholeBudget: a request that would hold
// nearly the whole work budget (here a body whose filter holds it, still
// arriving) holds three quarters of it, and another caller's small plan is
// planned beside it. Before, it took all of it and the small plan waited
// for room until MaxWorkWait and got 429 (bench --serve-abuse: plans of
// every file of 4,000, each reserving the whole budget, kept every other
// request waiting for the hold of its body while they ran).
func TestSmallPlansBesideAPlanOfTheWholeBudget(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	srv, err := New(Options{Catalog: cat.Catalog, MemoryBudget: 16 << 20, MaxWorkWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(srv) // not specChecked: it reads each body whole first
	defer hts.Close()
	work := srv.planner.Stats().WorkBudget
	whole := inOfAtLeast(work - 2<<10)
	if planning.RequestWorkBytes(int64(len(whole))) > work {
		t.Fatalf("a body of %d bytes holds %d, more than the work budget %d", len(whole), planning.RequestWorkBytes(int64(len(whole))), work)
	}
	first := stall(t, hts.URL+eventsPlan, "Bearer a", whole)
	waitReserved(t, srv, work*3/4)
	if status, _, body := post(t, hts.URL+eventsPlan, "Bearer b", `{"filter":{"type":"eq","term":"id","value":2}}`); status != http.StatusOK {
		t.Errorf("a small plan beside a request of the whole budget: %d %.300s, want 200", status, body)
	}
	// The small plan gives its hold back after it answered (its plan's
	// goroutine releases it): what is held then is the large request's.
	deadline := time.Now().Add(10 * time.Second)
	for srv.planner.Stats().WorkReserved > work-work/4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := srv.planner.Stats().WorkReserved; got > work-work/4 {
		t.Errorf("%d bytes of the work budget held by the request of the whole budget, want at most three quarters, %d", got, work-work/4)
	}
	if status, _ := first.finish(t); status != http.StatusOK {
		t.Errorf("the request of the whole budget: %d", status)
	}
}

// TestSlotWaitedFor: a plan request that finds every slot taken waits for
// one (here: the only slot, freed 300 ms later) and is planned, rather
// than answered 429 at once, which an engine's client meets with a whole
// second's wait; one that waits longer than MaxSlotWait gets 429 with
// Retry-After then. Before, it got 429 at once.
func TestSlotWaitedFor(t *testing.T) {
	cat := servetest.AddFilesTable(t, 3)
	g := newGatedCatalog(cat.Catalog)
	srv, err := New(Options{Catalog: g, MaxPlansInFlight: 1, MaxSlotWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hts := httptest.NewServer(specChecked(t, srv))
	defer hts.Close()
	defer g.open() // before the server closes: it waits for the held plan
	url := hts.URL + eventsPlan
	small := `{"filter":{"type":"eq","term":"id","value":2}}`
	holdPlan(t, g, url, small)
	start := time.Now()
	if status, retry, _ := post(t, url, "Bearer other", small); status != http.StatusTooManyRequests || retry == "" || time.Since(start) < 2*time.Second {
		t.Errorf("a plan while the only slot stays taken: %d (Retry-After %q) after %s, want 429 with Retry-After after 2 s", status, retry, time.Since(start).Round(time.Millisecond))
	}
	time.AfterFunc(300*time.Millisecond, g.open)
	start = time.Now()
	if status, _, body := post(t, url, "Bearer other", small); status != http.StatusOK {
		t.Errorf("a plan while the only slot is freed 300 ms later: %d %.300s after %s, want 200", status, body, time.Since(start).Round(time.Millisecond))
	}
}
