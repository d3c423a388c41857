package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/icebloom/icebloom/index/serve/planning"
)

// maxStoredPlans bounds the plans held at once, so that clients that plan
// and never come back cannot fill the memory: beyond it the oldest plan
// (and its tasks) is dropped, and polling it gets NoSuchPlanIdException.
const maxStoredPlans = 4096

// DefaultPlanTTL is how long a plan and its plan tasks are held after it
// was planned: long enough for an engine to fetch its tasks, short enough
// that forgotten plans do not pile up.
const DefaultPlanTTL = 10 * time.Minute

// storedPlan is a plan held for GET .../plan/{id} and its tasks: submitted
// (being planned), completed or failed. It is bound to the table it
// planned (its name and uuid) and to its owner, the credential of the
// request that made it: a request naming another table, or carrying
// another credential, does not find it, so a plan id is no capability, and
// the storage credentials vended with a plan reach only its owner.
type storedPlan struct {
	table, uuid, owner string
	bytes              int64 // charged to the store's budget
	status             rest.PlanStatus
	first              rest.ScanTasks
	creds              []rest.StorageCredential
	tasks              []string
	failure            *rest.PlanningError // of a failed plan
	cancel             context.CancelFunc  // of a submitted plan: stops its planning
	expires            time.Time
	// ids, with a replica secret, makes the plan's id and its plan tasks
	// tokens any replica answers (replicas.go); nil: random ids.
	ids *sharedIDs
}

// storedTask is one page of a plan, answered by POST .../tasks.
type storedTask struct {
	plan, table, uuid, owner string
	page                     rest.ScanTasks
	expires                  time.Time
}

// ownerOf names the credential a request carries (its Authorization
// header) by a hash, so the store holds no credential.
func ownerOf(r *http.Request) string {
	sum := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	return hex.EncodeToString(sum[:])
}

// planStore holds plans and their tasks until they expire or are
// cancelled. Ids are random (128 bits), so one caller cannot guess
// another's, or, with a replica secret, tokens that only serve makes
// (replicas.go), which the store holds like random ids.
type planStore struct {
	mu    sync.Mutex
	ttl   time.Duration
	now   func() time.Time
	plans map[string]*storedPlan
	tasks map[string]*storedTask
	// budget bounds the bytes of the completed plans held (0: no bound);
	// beyond it the plans that expire first go, as beyond maxStoredPlans.
	budget, bytes int64
}

func newPlanStore(ttl time.Duration, now func() time.Time, budget int64) *planStore {
	if ttl <= 0 {
		ttl = DefaultPlanTTL
	}
	return &planStore{ttl: ttl, now: now, plans: map[string]*storedPlan{}, tasks: map[string]*storedTask{}, budget: budget}
}

// held is the bytes of the plans held, for /metrics.
func (s *planStore) held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// add stores res as a completed plan of table for owner, returning its id
// and its first page with the plan tasks that name the others; ids (nil
// for random ones) makes the ids.
func (s *planStore) add(table, owner string, res *planning.PlanResult, ids *sharedIDs) (string, storedPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newPlan(&storedPlan{table: table, uuid: res.TableUUID, owner: owner, ids: ids})
	return id, s.completeLocked(id, res)
}

// submit stores a plan of table for owner that is still being planned;
// cancel stops its planning.
func (s *planStore) submit(table, uuid, owner string, cancel context.CancelFunc, ids *sharedIDs) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newPlan(&storedPlan{table: table, uuid: uuid, owner: owner, status: rest.PlanStatusSubmitted, cancel: cancel, ids: ids})
}

// newPlan stores p under a new id, or under the one ids holds (a plan
// another replica made, polled here: one held under it is replaced); the
// caller holds mu.
func (s *planStore) newPlan(p *storedPlan) string {
	now := s.now()
	s.sweep(now)
	p.expires = now.Add(s.ttl)
	id := ""
	if p.ids != nil {
		id = p.ids.planID(p.expires)
	}
	if id == "" {
		id = randomID()
	}
	if old, ok := s.plans[id]; ok {
		s.dropLocked(id, old)
	}
	if len(s.plans) >= maxStoredPlans {
		s.dropOldest()
	}
	s.plans[id] = p
	return id
}

// complete records the result of submitted plan id (nothing if it was
// cancelled or dropped meanwhile).
func (s *planStore) complete(id string, res *planning.PlanResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.plans[id]; ok && p.status == rest.PlanStatusSubmitted {
		s.completeLocked(id, res)
	}
}

// completeLocked makes plan id completed with res, dropping the plans
// that expire first while the store is over its budget; the caller holds
// mu.
func (s *planStore) completeLocked(id string, res *planning.PlanResult) storedPlan {
	p := s.plans[id]
	p.expires = s.now().Add(s.ttl) // the client has the TTL from now to fetch its tasks
	pages, tids := res.Pages, []string(nil)
	if p.ids != nil {
		pages, tids = p.ids.tasks(res, p.expires)
	}
	p.bytes = res.Bytes()
	for _, tid := range tids {
		p.bytes += int64(len(tid))
	}
	s.bytes += p.bytes
	for s.budget > 0 && s.bytes > s.budget && len(s.plans) > 1 {
		s.dropOldestBut(id)
	}
	p.status, p.cancel, p.creds, p.first = rest.PlanStatusCompleted, nil, res.Credentials, pages[0]
	for i, page := range pages[1:] {
		tid := randomID()
		if tids != nil {
			tid = tids[i]
		}
		s.tasks[tid] = &storedTask{plan: id, table: p.table, uuid: p.uuid, owner: p.owner, page: page, expires: p.expires}
		p.tasks = append(p.tasks, tid)
	}
	p.first.PlanTasks = p.tasks
	return *p
}

// fail records the failure of submitted plan id.
func (s *planStore) fail(id string, failure *rest.PlanningError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.plans[id]; ok && p.status == rest.PlanStatusSubmitted {
		p.status, p.cancel, p.failure = rest.PlanStatusFailed, nil, failure
	}
}

// sweepNow drops what expired, without waiting for a new plan to come.
func (s *planStore) sweepNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(s.now())
}

// sweep drops what expired; the caller holds mu.
func (s *planStore) sweep(now time.Time) {
	for id, p := range s.plans {
		if now.After(p.expires) {
			s.dropLocked(id, p)
		}
	}
	for id, t := range s.tasks {
		if now.After(t.expires) {
			delete(s.tasks, id)
		}
	}
}

// dropLocked drops plan id, stopping its planning if it is still being
// planned, and its tasks; the caller holds mu.
func (s *planStore) dropLocked(id string, p *storedPlan) {
	s.bytes -= p.bytes
	if p.cancel != nil {
		p.cancel()
	}
	for _, t := range p.tasks {
		delete(s.tasks, t)
	}
	delete(s.plans, id)
}

// dropOldest drops the plan that expires first and its tasks; the caller
// holds mu.
func (s *planStore) dropOldest() { s.dropOldestBut("") }

// dropOldestBut drops the plan that expires first other than keep, and
// its tasks; the caller holds mu.
func (s *planStore) dropOldestBut(keep string) {
	var oldest string
	for id, p := range s.plans {
		if id != keep && (oldest == "" || p.expires.Before(s.plans[oldest].expires)) {
			oldest = id
		}
	}
	if oldest != "" {
		s.dropLocked(oldest, s.plans[oldest])
	}
}

// plan returns (a copy of) the live plan id of table made by owner.
func (s *planStore) plan(table, owner, id string) (storedPlan, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plans[id]
	if !ok || p.table != table || p.owner != owner || s.now().After(p.expires) {
		return storedPlan{}, false
	}
	return *p, true
}

// task returns the live plan task id of table made by owner.
func (s *planStore) task(table, owner, id string) (*storedTask, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.table != table || t.owner != owner || s.now().After(t.expires) {
		return nil, false
	}
	return t, true
}

// cancel drops plan id of table made by owner and its tasks, stopping its
// planning, reporting whether it was there.
func (s *planStore) cancel(table, owner, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plans[id]
	if !ok || p.table != table || p.owner != owner {
		return false
	}
	s.dropLocked(id, p)
	return true
}
