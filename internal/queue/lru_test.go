package queue

import (
	"sync"
	"testing"
)

// Racing first publishes of one conversation must share one state, or two
// snapshots would take the same number and the server would drop one.
func TestLRUGetOrAddRace(t *testing.T) {
	c := newLRU[string, *int](100, nil)
	const n = 16
	got := make([]*int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i] = c.getOrAdd("k", func() *int { return new(int) })
		}()
	}
	close(start)
	wg.Wait()
	for i := 1; i < n; i++ {
		if got[i] != got[0] {
			t.Fatalf("caller %d got a different value", i)
		}
	}
	if c.len() != 1 {
		t.Fatalf("len %d, want 1", c.len())
	}
}
