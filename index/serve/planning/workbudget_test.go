package planning

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWorkBudget: a reservation waits while the reserved sum would pass
// the budget and fails as busy after the budget's wait; one larger than
// the budget takes all of it; a caller's cancelled context is its own
// error, not busy.
func TestWorkBudget(t *testing.T) {
	ctx := context.Background()
	w := newWorkBudget(100, 20*time.Millisecond)
	first, err := w.reserve(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	var busy *BusyError
	if _, err := w.reserve(ctx, 60); !errors.As(err, &busy) || busy.Wanted != 60 || busy.Budget != 100 {
		t.Fatalf("60 of 100 beside 60 reserved: %v, want a BusyError", err)
	}
	small, err := w.reserve(ctx, 40)
	if err != nil {
		t.Fatalf("40 beside 60 of 100: %v", err)
	}
	first()
	first() // releasing twice gives back once
	small()
	if got := w.reserved.Load(); got != 0 {
		t.Fatalf("%d bytes reserved after every release, want 0", got)
	}
	all, err := w.reserve(ctx, 1<<40)
	if err != nil || w.reserved.Load() != 100 {
		t.Fatalf("a reservation beyond the budget: %v, %d reserved; want all 100", err, w.reserved.Load())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.reserve(cancelled, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled caller: %v, want context.Canceled", err)
	}
	all()
	if release, err := newWorkBudget(0, 0).reserve(ctx, 1<<40); err != nil {
		t.Fatalf("no budget: %v", err)
	} else {
		release()
	}
}
