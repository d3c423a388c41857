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

// TestWorkShare: a caller holding reservations cannot reserve past its
// share (refused at once, not queued), while another caller can; a caller
// holding nothing may reserve beyond its share, as a large plan does.
func TestWorkShare(t *testing.T) {
	w := newWorkBudget(1000, time.Minute)
	a, b := WithShare(context.Background(), NewShare(100)), WithShare(context.Background(), NewShare(100))
	large, err := w.reserve(a, 400)
	if err != nil {
		t.Fatalf("a caller's one reservation beyond its share: %v", err)
	}
	var busy *BusyError
	if _, err := w.reserve(a, 10); !errors.As(err, &busy) || busy.Share != 100 || busy.Waited != 0 {
		t.Fatalf("a second reservation of a caller past its share: %v, want a BusyError naming the share, at once", err)
	}
	other, err := w.reserve(b, 100)
	if err != nil {
		t.Fatalf("another caller within its share: %v", err)
	}
	large()
	small, err := w.reserve(a, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.reserve(a, 60); !errors.As(err, &busy) {
		t.Fatalf("60 beside 60 of a share of 100: %v, want a BusyError", err)
	}
	small()
	other()
	if got := shareOf(a).Held() + shareOf(b).Held(); got != 0 || w.reserved.Load() != 0 {
		t.Fatalf("%d held by the shares, %d reserved after every release, want 0", got, w.reserved.Load())
	}
}

// TestHoldGivenBackWhileWaiting: a plan's reservation that must wait gives
// its request's hold back while it waits and takes both together, so a
// request never waits for room while holding some; the hold is the
// request's again once the plan has room, and is counted until released.
func TestHoldGivenBackWhileWaiting(t *testing.T) {
	w := newWorkBudget(100, time.Minute)
	ctx, hold, err := w.hold(context.Background(), 30)
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.reserve(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func())
	go func() {
		release, err := w.reserve(ctx, 20) // 30 + 60 + 20 > 100: waits
		if err != nil {
			t.Error(err)
		}
		got <- release
	}()
	deadline := time.Now().Add(10 * time.Second)
	for w.reserved.Load() != 60 { // the hold given back while the plan waits
		if time.Now().After(deadline) {
			t.Fatalf("%d reserved while the plan waits, want 60 (its request's hold given back)", w.reserved.Load())
		}
		time.Sleep(time.Millisecond)
	}
	other()
	release := <-got
	if w.reserved.Load() != 50 || hold.Bytes() != 30 {
		t.Fatalf("the plan with room: %d reserved, the hold has %d; want 50 and 30", w.reserved.Load(), hold.Bytes())
	}
	release()
	hold.Shrink(10)
	if w.reserved.Load() != 10 {
		t.Fatalf("the hold shrunk to 10: %d reserved", w.reserved.Load())
	}
	hold.Release()
	if w.reserved.Load() != 0 {
		t.Fatalf("%d reserved after every release, want 0", w.reserved.Load())
	}
}

// TestShareCountsARequestsReservationsAsOne: the reservations one request
// makes with its hold's context (a load answer read a step at a time)
// pass its caller's share as one reservation would, when the caller holds
// nothing else; another request of the caller meanwhile is refused.
// Without it, the second step of a long answer was refused as a second
// reservation past the share.
func TestShareCountsARequestsReservationsAsOne(t *testing.T) {
	w := newWorkBudget(1000, time.Minute)
	caller := WithShare(context.Background(), NewShare(100))
	ctx, hold, err := w.hold(caller, 0)
	if err != nil {
		t.Fatal(err)
	}
	var releases []func()
	for step := range 3 {
		release, err := w.reserve(ctx, 80)
		if err != nil {
			t.Fatalf("step %d of one request's answer (80 bytes each, share 100): %v", step, err)
		}
		releases = append(releases, release)
	}
	var busy *BusyError
	if _, err := w.reserve(caller, 10); !errors.As(err, &busy) || busy.Share != 100 {
		t.Fatalf("another request of the caller beside 240 bytes: %v, want a BusyError naming the share", err)
	}
	for _, release := range releases {
		release()
	}
	hold.Release()
	if w.reserved.Load() != 0 || shareOf(caller).Held() != 0 || hold.others.Load() != 0 {
		t.Fatalf("after every release: %d reserved, %d held by the share, %d by the request", w.reserved.Load(), shareOf(caller).Held(), hold.others.Load())
	}
}
