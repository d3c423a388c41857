package serve

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
)

// TestPlanStoreBoundsAndExpiry: plans expire after the TTL, with their
// tasks; beyond maxStoredPlans the oldest goes; ids are bound to their
// table.
func TestPlanStoreBoundsAndExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newPlanStore(time.Minute, func() time.Time { return now })
	res := &PlanResult{Pages: []rest.ScanTasks{{}, {}}, TableUUID: "u"}
	first, p := s.add("db\x1fevents", res)
	if len(p.tasks) != 1 {
		t.Fatalf("%d plan tasks for two pages, want 1", len(p.tasks))
	}
	if _, ok := s.plan("db\x1fother", first); ok {
		t.Fatal("a plan found under another table")
	}
	for i := 1; i < maxStoredPlans; i++ {
		now = now.Add(time.Millisecond)
		s.add("db\x1fevents", res)
	}
	if _, ok := s.plan("db\x1fevents", first); !ok {
		t.Fatal("the first plan is gone before the store is full")
	}
	s.add("db\x1fevents", res)
	if _, ok := s.plan("db\x1fevents", first); ok {
		t.Fatal("the oldest plan is kept beyond maxStoredPlans")
	}
	if _, ok := s.task("db\x1fevents", p.tasks[0]); ok {
		t.Fatal("a task of the dropped plan is kept")
	}
	if len(s.plans) != maxStoredPlans {
		t.Fatalf("%d plans held, want %d", len(s.plans), maxStoredPlans)
	}
	now = now.Add(2 * time.Minute)
	id, _ := s.add("db\x1fevents", res)
	if len(s.plans) != 1 || len(s.tasks) != 1 {
		t.Fatalf("after the TTL %d plans and %d tasks held, want only the new one", len(s.plans), len(s.tasks))
	}
	if !s.cancel("db\x1fevents", id) || len(s.tasks) != 0 {
		t.Fatal("cancel kept the plan or its tasks")
	}
}
