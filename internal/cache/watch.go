package cache

import (
	"context"
	"sync"

	"github.com/briefd/briefd"
)

// watcher is the state of one Watch call. The store's shared subscription
// offers it briefings without ever blocking; its own goroutine delivers
// them to the caller's channel, newest first, through a coalescer, so a
// slow reader never stalls the subscription or the other watchers.
type watcher struct {
	mu   sync.Mutex
	c    coalescer
	wake chan struct{} // one pending wake-up is enough
}

func newWatcher() *watcher { return &watcher{wake: make(chan struct{}, 1)} }

// offer considers b for delivery; it never blocks.
func (w *watcher) offer(b *briefd.Briefing) {
	w.mu.Lock()
	w.c.offer(b)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run delivers on out until ctx ends, then closes out and calls done.
func (w *watcher) run(ctx context.Context, out chan<- *briefd.Briefing, done func()) {
	defer close(out)
	defer done()
	for {
		w.mu.Lock()
		next := w.c.pending
		w.mu.Unlock()
		var send chan<- *briefd.Briefing
		if next != nil {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case send <- next:
			w.mu.Lock()
			w.c.markSent(next)
			w.mu.Unlock()
		}
	}
}
