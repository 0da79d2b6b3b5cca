package cache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/briefd/briefd"
	"github.com/redis/go-redis/v9"
)

// redisHealthInterval is how long the shared subscription may be silent
// before it is pinged.
const redisHealthInterval = 5 * time.Second

// errNoPong is the watch error when the server stops answering pings.
var errNoPong = errors.New("redis: no reply to PING on the pub/sub connection")

// redisHub multiplexes every Watch of a RedisStore onto one Pub/Sub
// connection: 200 watched conversations cost one connection and one
// reader goroutine, plus a small delivery goroutine per Watch. The
// connection is opened by the first Watch and closed when the last one
// ends. Its zero value is ready to use.
type redisHub struct {
	subMu sync.Mutex // serializes SUBSCRIBE and UNSUBSCRIBE writes

	mu    sync.Mutex
	ps    *redis.PubSub         // nil while nothing is watched
	stop  context.CancelFunc    // stops ps's reader
	chans map[string]*redisChan // by channel name
	err   error                 // the connection's last error; nil while live
}

// redisChan is one conversation's events channel and its watchers.
type redisChan struct {
	tenant, conv string
	watchers     map[*watcher]struct{}
	active       chan struct{} // closed at the server's first confirmation
	failed       chan struct{} // closed if the connection fails before it
	confirmed    bool
	err          error // why failed was closed
}

// Watch subscribes to the conversation's latest briefing. The channel first
// delivers the current latest, if any, then each newer one (see Newer); a
// slow reader gets the newest and skips the rest. It
// is closed when ctx ends. Watch returns once the subscription is active, so
// no Put that returns after Watch is missed; with Redis unreachable it
// returns the error. All watches of a store share one Pub/Sub connection;
// if it drops, it is re-established and every watched conversation's latest
// is fetched again, so a briefing stored during the outage is still
// delivered. WatchErr reports whether the connection is live.
func (s *RedisStore) Watch(ctx context.Context, tenant, conv string) (<-chan *briefd.Briefing, error) {
	h := &s.watch
	name := s.keys(tenant, conv).events
	w := newWatcher()

	h.subMu.Lock()
	h.mu.Lock()
	if h.ps == nil {
		h.ps = s.rdb.Subscribe(context.WithoutCancel(ctx))
		h.chans = map[string]*redisChan{}
		h.err = nil
		rctx, cancel := context.WithCancel(context.Background())
		h.stop = cancel
		go h.read(rctx, s, h.ps)
	}
	ps := h.ps
	ch := h.chans[name]
	subscribe := ch == nil
	if subscribe {
		ch = &redisChan{tenant: tenant, conv: conv, watchers: map[*watcher]struct{}{}, active: make(chan struct{}), failed: make(chan struct{})}
		h.chans[name] = ch
	}
	ch.watchers[w] = struct{}{}
	h.mu.Unlock()
	var err error
	if subscribe {
		err = ps.Subscribe(ctx, name)
	}
	h.subMu.Unlock()

	if err == nil {
		// The confirmation reaches the shared reader; once it is in, the
		// subscription is active.
		select {
		case <-ch.active:
		case <-ch.failed:
			err = ch.err
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		var b *briefd.Briefing
		if b, err = s.Latest(ctx, tenant, conv); errors.Is(err, ErrNotFound) {
			err = nil
		} else if err == nil {
			w.offer(b)
		}
	}
	if err != nil {
		h.remove(name, w)
		return nil, fmt.Errorf("cache: watch %s: %w", ref(tenant, conv, ""), err)
	}
	out := make(chan *briefd.Briefing)
	go w.run(ctx, out, func() { h.remove(name, w) })
	return out, nil
}

// WatchErr returns the error of the connection shared by the store's
// watches while it is down (briefings stored meanwhile reach the watches
// once it is back), or nil.
func (s *RedisStore) WatchErr() error {
	h := &s.watch
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// remove drops w; the last watcher of a channel unsubscribes, and the last
// channel closes the connection.
func (h *redisHub) remove(name string, w *watcher) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.mu.Lock()
	ch := h.chans[name]
	if ch == nil {
		h.mu.Unlock()
		return
	}
	delete(ch.watchers, w)
	if len(ch.watchers) > 0 {
		h.mu.Unlock()
		return
	}
	delete(h.chans, name)
	ps := h.ps
	if len(h.chans) > 0 {
		h.mu.Unlock()
		// A failure here leaves a channel whose messages nobody reads; a
		// reconnect drops it (go-redis forgets it at once).
		ctx, cancel := context.WithTimeout(context.Background(), redisHealthInterval)
		_ = ps.Unsubscribe(ctx, name)
		cancel()
		return
	}
	h.ps, h.chans, h.err = nil, nil, nil
	h.stop()
	h.mu.Unlock()
	_ = ps.Close()
}

// read is the shared connection's only reader. It confirms subscriptions,
// hands each message to the conversation's watchers, pings a silent
// connection, records failures (go-redis reconnects and re-subscribes on
// the next read) and, when a channel is confirmed again after a reconnect,
// fetches the conversation's latest, since messages published while the
// connection was down are lost.
func (h *redisHub) read(ctx context.Context, s *RedisStore, ps *redis.PubSub) {
	pinged := false
	wait := 50 * time.Millisecond
	for {
		msg, err := ps.ReceiveTimeout(ctx, redisHealthInterval)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if pinged {
					h.fail(errNoPong)
				}
				if perr := ps.Ping(ctx); perr != nil {
					h.fail(perr)
				}
				pinged = true
				continue
			}
			h.fail(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
			continue
		}
		pinged, wait = false, 50*time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirm(ctx, s, m.Channel)
			}
		case *redis.Message:
			h.dispatch(m.Channel, m.Payload)
		case *redis.Pong:
			h.live()
		}
	}
}

// fail records err; watches waiting for their first confirmation get it.
func (h *redisHub) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
	for _, ch := range h.chans {
		if !ch.confirmed && ch.err == nil {
			ch.err = err
			close(ch.failed)
		}
	}
}

func (h *redisHub) live() {
	h.mu.Lock()
	h.err = nil
	h.mu.Unlock()
}

// confirm marks a channel active; a channel confirmed before was
// re-subscribed after a reconnect, so its latest is fetched again.
func (h *redisHub) confirm(ctx context.Context, s *RedisStore, name string) {
	h.mu.Lock()
	h.err = nil
	ch := h.chans[name]
	if ch == nil || ch.err != nil {
		h.mu.Unlock()
		return
	}
	again := ch.confirmed
	if !again {
		ch.confirmed = true
		close(ch.active)
	}
	ws := watchersOf(ch)
	h.mu.Unlock()
	if !again {
		return
	}
	gctx, cancel := context.WithTimeout(ctx, redisHealthInterval)
	defer cancel()
	if b, err := s.Latest(gctx, ch.tenant, ch.conv); err == nil {
		for _, w := range ws {
			w.offer(b)
		}
	}
}

// dispatch hands a published briefing to the channel's watchers.
func (h *redisHub) dispatch(name, payload string) {
	h.mu.Lock()
	ch := h.chans[name]
	var ws []*watcher
	if ch != nil {
		ws = watchersOf(ch)
	}
	h.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	b, err := decode([]byte(payload))
	if err != nil {
		return
	}
	for _, w := range ws {
		w.offer(b)
	}
}

func watchersOf(ch *redisChan) []*watcher {
	ws := make([]*watcher, 0, len(ch.watchers))
	for w := range ch.watchers {
		ws = append(ws, w)
	}
	return ws
}
