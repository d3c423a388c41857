package serve

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
)

// maxStoredPlans bounds the plans held at once, so that clients that plan
// and never come back cannot fill the memory: beyond it the oldest plan
// (and its tasks) is dropped, and polling it gets NoSuchPlanIdException.
const maxStoredPlans = 4096

// DefaultPlanTTL is how long a plan and its plan tasks are held after it
// was planned: long enough for an engine to fetch its tasks, short enough
// that forgotten plans do not pile up.
const DefaultPlanTTL = 10 * time.Minute

// storedPlan is a completed plan held for GET .../plan/{id} and its tasks.
// It is bound to the table it planned (its name and uuid): a request naming
// another table does not find it.
type storedPlan struct {
	table, uuid string
	first       rest.ScanTasks
	creds       []rest.StorageCredential
	tasks       []string
	expires     time.Time
}

// uuidOf is the uuid of the plan's table, "" for no plan.
func (p *storedPlan) uuidOf() string {
	if p == nil {
		return ""
	}
	return p.uuid
}

// storedTask is one page of a plan, answered by POST .../tasks.
type storedTask struct {
	plan, table, uuid string
	page              rest.ScanTasks
	expires           time.Time
}

// planStore holds plans and their tasks until they expire or are
// cancelled. Ids are random (128 bits), so one caller cannot guess
// another's.
type planStore struct {
	mu    sync.Mutex
	ttl   time.Duration
	now   func() time.Time
	plans map[string]*storedPlan
	tasks map[string]*storedTask
}

func newPlanStore(ttl time.Duration, now func() time.Time) *planStore {
	if ttl <= 0 {
		ttl = DefaultPlanTTL
	}
	return &planStore{ttl: ttl, now: now, plans: map[string]*storedPlan{}, tasks: map[string]*storedTask{}}
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// add stores res as a plan of table, returning its id and its first page
// with the plan tasks that name the others.
func (s *planStore) add(table string, res *PlanResult) (string, *storedPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	if len(s.plans) >= maxStoredPlans {
		s.dropOldest()
	}
	id := randomID()
	p := &storedPlan{table: table, uuid: res.TableUUID, first: res.Pages[0], creds: res.Credentials, expires: now.Add(s.ttl)}
	for _, page := range res.Pages[1:] {
		tid := randomID()
		s.tasks[tid] = &storedTask{plan: id, table: table, uuid: res.TableUUID, page: page, expires: p.expires}
		p.tasks = append(p.tasks, tid)
	}
	p.first.PlanTasks = p.tasks
	s.plans[id] = p
	return id, p
}

// sweep drops what expired; the caller holds mu.
func (s *planStore) sweep(now time.Time) {
	for id, p := range s.plans {
		if now.After(p.expires) {
			delete(s.plans, id)
		}
	}
	for id, t := range s.tasks {
		if now.After(t.expires) {
			delete(s.tasks, id)
		}
	}
}

// dropOldest drops the plan that expires first and its tasks; the caller
// holds mu.
func (s *planStore) dropOldest() {
	var oldest string
	for id, p := range s.plans {
		if oldest == "" || p.expires.Before(s.plans[oldest].expires) {
			oldest = id
		}
	}
	for _, t := range s.plans[oldest].tasks {
		delete(s.tasks, t)
	}
	delete(s.plans, oldest)
}

// plan returns the live plan id of table.
func (s *planStore) plan(table, id string) (*storedPlan, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plans[id]
	if !ok || p.table != table || s.now().After(p.expires) {
		return nil, false
	}
	return p, true
}

// task returns the live plan task id of table.
func (s *planStore) task(table, id string) (*storedTask, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.table != table || s.now().After(t.expires) {
		return nil, false
	}
	return t, true
}

// cancel drops plan id of table and its tasks, reporting whether it was
// there.
func (s *planStore) cancel(table, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plans[id]
	if !ok || p.table != table {
		return false
	}
	for _, t := range p.tasks {
		delete(s.tasks, t)
	}
	delete(s.plans, id)
	return true
}
