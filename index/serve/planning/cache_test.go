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
