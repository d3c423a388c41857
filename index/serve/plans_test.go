package serve

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// TestPlanStoreBoundsAndExpiry: plans expire after the TTL, with their
// tasks; beyond maxStoredPlans the oldest goes; ids are bound to their
// table and their owner.
func TestPlanStoreBoundsAndExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newPlanStore(time.Minute, func() time.Time { return now }, 0)
	res := &planning.PlanResult{Pages: []rest.ScanTasks{{}, {}}, TableUUID: "u"}
	first, p := s.add("db\x1fevents", "me", res, nil)
	if len(p.tasks) != 1 {
		t.Fatalf("%d plan tasks for two pages, want 1", len(p.tasks))
	}
	if _, ok := s.plan("db\x1fother", "me", first); ok {
		t.Fatal("a plan found under another table")
	}
	if _, ok := s.plan("db\x1fevents", "you", first); ok {
		t.Fatal("a plan found by another owner")
	}
	if _, ok := s.task("db\x1fevents", "you", p.tasks[0]); ok {
		t.Fatal("a plan task found by another owner")
	}
	if s.cancel("db\x1fevents", "you", first) {
		t.Fatal("a plan cancelled by another owner")
	}
	for i := 1; i < maxStoredPlans; i++ {
		now = now.Add(time.Millisecond)
		s.add("db\x1fevents", "me", res, nil)
	}
	if _, ok := s.plan("db\x1fevents", "me", first); !ok {
		t.Fatal("the first plan is gone before the store is full")
	}
	s.add("db\x1fevents", "me", res, nil)
	if _, ok := s.plan("db\x1fevents", "me", first); ok {
		t.Fatal("the oldest plan is kept beyond maxStoredPlans")
	}
	if _, ok := s.task("db\x1fevents", "me", p.tasks[0]); ok {
		t.Fatal("a task of the dropped plan is kept")
	}
	if len(s.plans) != maxStoredPlans {
		t.Fatalf("%d plans held, want %d", len(s.plans), maxStoredPlans)
	}
	now = now.Add(2 * time.Minute)
	s.sweepNow() // what Serve's sweeper does every minute, with no new plan
	if len(s.plans) != 0 || len(s.tasks) != 0 {
		t.Fatalf("after the TTL and a sweep, %d plans and %d tasks held, want none", len(s.plans), len(s.tasks))
	}
	id, _ := s.add("db\x1fevents", "me", res, nil)
	if len(s.plans) != 1 || len(s.tasks) != 1 {
		t.Fatalf("after the TTL %d plans and %d tasks held, want only the new one", len(s.plans), len(s.tasks))
	}
	if !s.cancel("db\x1fevents", "me", id) || len(s.tasks) != 0 {
		t.Fatal("cancel kept the plan or its tasks")
	}
}

// TestPlanStoreSubmitted: a submitted plan completes or fails in place;
// cancelling or dropping it stops its planning; a result that arrives for
// a cancelled plan is not stored.
func TestPlanStoreSubmitted(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newPlanStore(time.Minute, func() time.Time { return now }, 0)
	stopped := 0
	id := s.submit("t", "u", "me", func() { stopped++ }, nil)
	if p, ok := s.plan("t", "me", id); !ok || p.status != rest.PlanStatusSubmitted {
		t.Fatalf("a submitted plan: %v %v", p.status, ok)
	}
	s.complete(id, &planning.PlanResult{Pages: []rest.ScanTasks{{}, {}}})
	if p, _ := s.plan("t", "me", id); p.status != rest.PlanStatusCompleted || len(p.tasks) != 1 {
		t.Fatalf("completed: %v with %d tasks", p.status, len(p.tasks))
	}
	failed := s.submit("t", "u", "me", func() { stopped++ }, nil)
	s.fail(failed, &rest.PlanningError{Message: "no", Type: "ServerErrorException", Code: 500})
	if p, _ := s.plan("t", "me", failed); p.status != rest.PlanStatusFailed || p.failure == nil {
		t.Fatalf("failed: %v", p.status)
	}
	cancelled := s.submit("t", "u", "me", func() { stopped++ }, nil)
	if !s.cancel("t", "me", cancelled) || stopped != 1 {
		t.Fatalf("cancel: its planning stopped %d times, want 1", stopped)
	}
	s.complete(cancelled, &planning.PlanResult{Pages: []rest.ScanTasks{{}, {}}})
	if _, ok := s.plan("t", "me", cancelled); ok || len(s.tasks) != 1 {
		t.Fatalf("a cancelled plan's result stored: %d tasks", len(s.tasks))
	}
	s.submit("t", "u", "me", func() { stopped++ }, nil)
	now = now.Add(2 * time.Minute)
	s.submit("t", "u", "me", func() {}, nil)
	if stopped != 2 {
		t.Fatalf("an expired submitted plan's planning stopped %d times, want once", stopped-1)
	}
}

// TestPlanStoreWithinItsBudget: the plans held are charged what their
// pages hold, and beyond the store's part of the memory budget the plans
// that expire first go (300 plans of a 4,000-file table held 455 MB when
// only their count was bounded); the newest plan is always kept.
func TestPlanStoreWithinItsBudget(t *testing.T) {
	cat := servetest.AddFilesTable(t, 40)
	p := planning.NewPlanner(func(ctx context.Context, ident table.Identifier) (*planning.Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &planning.Loaded{Table: tbl}, err
	}, planning.PlannerOptions{})
	res, err := p.Plan(context.Background(), table.Identifier{"db", "events"}, rest.PlanTableScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes() <= 0 {
		t.Fatalf("a plan of 40 files is charged %d bytes", res.Bytes())
	}
	now := time.Unix(1000, 0)
	budget := 10 * res.Bytes()
	s := newPlanStore(time.Hour, func() time.Time { return now }, budget)
	var last string
	for range 30 {
		now = now.Add(time.Second)
		last, _ = s.add("db\x1fevents", "me", res, nil)
		if s.held() > budget {
			t.Fatalf("%d bytes of plans held, over the store's %d", s.held(), budget)
		}
	}
	if len(s.plans) != 10 {
		t.Fatalf("%d plans held in room for 10", len(s.plans))
	}
	if _, ok := s.plan("db\x1fevents", "me", last); !ok {
		t.Fatal("the newest plan was dropped")
	}
	for id := range s.plans {
		s.cancel("db\x1fevents", "me", id)
	}
	if s.held() != 0 {
		t.Fatalf("%d bytes held after every plan went", s.held())
	}
}
