package queue

import (
	"container/list"
	"sync"
)

// lru is a mutex-guarded least-recently-used map bounded by a total cost
// (entries count 1 each unless cost says otherwise).
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	used  int
	ll    *list.List
	items map[K]*list.Element
	cost  func(V) int
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int
}

func newLRU[K comparable, V any](max int, cost func(V) int) *lru[K, V] {
	if cost == nil {
		cost = func(V) int { return 1 }
	}
	return &lru[K, V]{max: max, ll: list.New(), items: make(map[K]*list.Element), cost: cost}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// getOrAdd returns the value under k, storing and returning mk() when there
// is none, in one step under the lock: two callers racing on a missing key
// get the same value. mk must be cheap.
func (c *lru[K, V]) getOrAdd(k K, mk func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val
	}
	v := mk()
	c.addLocked(k, v, c.cost(v))
	return v
}

// add stores v under k. A value costing more than the whole budget is not
// kept.
func (c *lru[K, V]) add(k K, v V) {
	cost := c.cost(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(k, v, cost)
}

func (c *lru[K, V]) addLocked(k K, v V, cost int) {
	if e, ok := c.items[k]; ok {
		c.used -= e.Value.(*lruEntry[K, V]).cost
		c.ll.Remove(e)
		delete(c.items, k)
	}
	if cost > c.max {
		return
	}
	c.items[k] = c.ll.PushFront(&lruEntry[K, V]{key: k, val: v, cost: cost})
	c.used += cost
	for c.used > c.max {
		e := c.ll.Back()
		ent := e.Value.(*lruEntry[K, V])
		c.ll.Remove(e)
		delete(c.items, ent.key)
		c.used -= ent.cost
	}
}

func (c *lru[K, V]) remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.used -= e.Value.(*lruEntry[K, V]).cost
		c.ll.Remove(e)
		delete(c.items, k)
	}
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
