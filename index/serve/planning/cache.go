package planning

import (
	"container/list"
	"sync"
)

// lruCache holds values within a byte budget, evicting the least recently
// used first. A value larger than the whole budget is not kept.
type lruCache[V any] struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // of *lruEntry[V], most recent first
	entries map[string]*list.Element
	evicted int64
	hits    int64
	misses  int64
	unkept  int64 // values too large for the whole budget, not kept
}

type lruEntry[V any] struct {
	key  string
	val  V
	size int64
}

func newLRU[V any](budget int64) *lruCache[V] {
	return &lruCache[V]{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *lruCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		c.hits++
		return el.Value.(*lruEntry[V]).val, true
	}
	c.misses++
	var zero V
	return zero, false
}

// add keeps val under key, and reports whether it could: a value larger
// than the whole budget is not kept.
func (c *lruCache[V]) add(key string, val V, size int64) bool {
	size += int64(len(key)) // a key can be a whole request (the plan cache's)
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.budget {
		c.unkept++
		return false
	}
	if el, ok := c.entries[key]; ok {
		c.used -= el.Value.(*lruEntry[V]).size
		c.order.Remove(el)
		delete(c.entries, key)
	}
	c.evict(size)
	c.entries[key] = c.order.PushFront(&lruEntry[V]{key: key, val: val, size: size})
	c.used += size
	return true
}

// grow charges delta more bytes to the entry of key if it holds val (what
// val decoded since it was added), evicting others to stay within the
// budget, or the entry itself when it no longer fits. A key not held, or
// holding another value, is left alone: a base made for more columns than
// the kept one and not kept itself (too large) is used under the same key,
// and its growth charged to the kept one brought the cache's bytes below
// zero.
func (c *lruCache[V]) grow(key string, val V, delta int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok || any(el.Value.(*lruEntry[V]).val) != any(val) {
		return
	}
	e := el.Value.(*lruEntry[V])
	c.order.Remove(el)
	delete(c.entries, key)
	c.used -= e.size
	e.size += delta
	if e.size > c.budget {
		c.evicted++
		return
	}
	c.evict(e.size)
	c.entries[key] = c.order.PushFront(e)
	c.used += e.size
}

// evict drops the least recently used entries until size more bytes fit.
func (c *lruCache[V]) evict(size int64) {
	for c.used+size > c.budget {
		last := c.order.Back()
		e := last.Value.(*lruEntry[V])
		c.order.Remove(last)
		delete(c.entries, e.key)
		c.used -= e.size
		c.evicted++
	}
}

// stats returns the bytes held, entries, hits, misses and evictions.
func (c *lruCache[V]) stats() (used int64, n int, hits, misses, evicted int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.entries), c.hits, c.misses, c.evicted
}

// CacheStats are one cache's figures, for /metrics.
type CacheStats struct {
	Bytes, Budget, Entries, Hits, Misses, Evictions int64
	// Unkept counts values too large for the cache's whole budget, which
	// it did not keep.
	Unkept int64
}

// figures returns c's CacheStats.
func (c *lruCache[V]) figures() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Bytes: c.used, Budget: c.budget, Entries: int64(len(c.entries)), Hits: c.hits, Misses: c.misses,
		Evictions: c.evicted, Unkept: c.unkept}
}
