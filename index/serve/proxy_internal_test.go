package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
)

// TestReadUpstreamReservesAsItReads: an upstream answer that does not say
// its length reserves room as it comes, from a small first step, so that
// a small load answer sent chunked holds little of its caller's share of
// the work budget (it held 3 MiB, and one caller's sixth plan at once was
// answered 429), and a large one is still read whole.
func TestReadUpstreamReservesAsItReads(t *testing.T) {
	s, err := New(Options{Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		size, known int64
		most        int64 // the most it may reserve
	}{
		{size: 4 << 10, known: -1, most: 256 << 10},
		{size: 4 << 10, known: 4 << 10, most: 3 * (4<<10 + 1)},
		{size: 5 << 20, known: -1, most: 3 * (5<<20 + upstreamStep)},
	} {
		answer := bytes.Repeat([]byte("x"), int(c.size))
		resp := &http.Response{Body: io.NopCloser(bytes.NewReader(answer)), ContentLength: c.known}
		body, release, err := s.readUpstream(context.Background(), resp)
		if err != nil {
			t.Fatalf("%d bytes (length %d): %v", c.size, c.known, err)
		}
		reserved := s.planner.Stats().WorkReserved
		again, _ := io.ReadAll(resp.Body)
		release()
		if !bytes.Equal(body, answer) || !bytes.Equal(again, answer) {
			t.Errorf("%d bytes (length %d): read %d bytes, then %d", c.size, c.known, len(body), len(again))
		}
		if reserved < c.size || reserved > c.most {
			t.Errorf("%d bytes (length %d): reserved %d, want %d to %d", c.size, c.known, reserved, c.size, c.most)
		}
		if left := s.planner.Stats().WorkReserved; left != 0 {
			t.Errorf("%d bytes (length %d): %d reserved after release", c.size, c.known, left)
		}
	}
}
