package planning

import (
	"strconv"
	"strings"
	"testing"
)

// TestCacheChargesKeys: an entry is charged its key too: the plan cache's
// key is the whole request, and 100 distinct filters of 2 MiB left 202 MB
// held while the cache counted 37,700 bytes of results. Within a budget of
// 8 MiB such entries are evicted, not piled up.
func TestCacheChargesKeys(t *testing.T) {
	const budget = 8 << 20
	c := newLRU[int](budget)
	for i := range 100 {
		key := strconv.Itoa(i) + strings.Repeat("x", 2<<20)
		c.add(key, i, 377)
		used, n, _, _, _ := c.stats()
		if used > budget {
			t.Fatalf("after %d entries of 2 MiB keys, %d bytes charged, over the %d budget", i+1, used, budget)
		}
		if used < int64(n)*(2<<20) {
			t.Fatalf("%d entries of 2 MiB keys charged %d bytes", n, used)
		}
	}
	if _, n, _, _, evicted := c.stats(); n > 4 || evicted < 96 {
		t.Fatalf("%d entries held, %d evicted, want at most 4 held", n, evicted)
	}
}

// TestCacheGrowsOnlyItsValue: growth is charged to a key's entry only
// while it holds the value that grew; a base made for more columns and not
// kept (too large) is used under the key of the one kept, and its memo's
// growth, charged to that one, brought the cache's bytes below zero.
func TestCacheGrowsOnlyItsValue(t *testing.T) {
	kept, other := new(int), new(int)
	c := newLRU[*int](1 << 20)
	c.add("k", kept, 1000)
	c.grow("k", other, -900)
	if used, _, _, _, _ := c.stats(); used != 1001 {
		t.Fatalf("after another value grew: %d bytes charged, want 1001", used)
	}
	c.grow("k", kept, 500)
	if used, _, _, _, _ := c.stats(); used != 1501 {
		t.Fatalf("after the value held grew: %d bytes charged, want 1501", used)
	}
}
