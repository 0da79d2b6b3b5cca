package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/briefd/briefd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// kvHub multiplexes every Watch of a KVStore onto one bucket watcher (one
// ordered consumer) per tenant, on the keys <tenant>.*.latest, instead of
// a consumer per conversation. It sees the latest briefings of the
// tenant's other conversations too and drops them: one consumer is worth
// more to the server than the bytes. Its zero value is ready to use.
type kvHub struct {
	mu      sync.Mutex
	tenants map[string]*kvTenant // by key token
}

type kvTenant struct {
	w     jetstream.KeyWatcher
	stop  context.CancelFunc
	convs map[string]map[*watcher]struct{} // by latest key
}

// Watch subscribes to the conversation's latest briefing. The channel first
// delivers the current latest, if any, then each newer one (see Newer); a
// slow reader gets the newest and skips the rest. It
// is closed when ctx ends. The watches of one tenant share one bucket
// watcher, which survives reconnects and resumes where it left off.
func (s *KVStore) Watch(ctx context.Context, tenant, conv string) (<-chan *briefd.Briefing, error) {
	h := &s.watch
	tok, key := kvToken(tenant), kvLatestKey(tenant, conv)
	w := newWatcher()

	h.mu.Lock()
	t := h.tenants[tok]
	if t == nil {
		// The first watch of a tenant creates its consumer (one round
		// trip, under the lock so that a tenant never gets two).
		wctx, cancel := context.WithCancel(context.Background())
		kw, err := s.kv.Watch(wctx, tok+".*.latest", jetstream.UpdatesOnly())
		if err != nil {
			cancel()
			h.mu.Unlock()
			return nil, fmt.Errorf("cache: watch %s: %w", ref(tenant, conv, ""), err)
		}
		t = &kvTenant{w: kw, stop: cancel, convs: map[string]map[*watcher]struct{}{}}
		if h.tenants == nil {
			h.tenants = map[string]*kvTenant{}
		}
		h.tenants[tok] = t
		go h.read(t)
	}
	if t.convs[key] == nil {
		t.convs[key] = map[*watcher]struct{}{}
	}
	t.convs[key][w] = struct{}{}
	h.mu.Unlock()

	// The consumer delivers only updates made after it started; the
	// current latest is read once, after this watcher joined it.
	b, err := s.Latest(ctx, tenant, conv)
	switch {
	case err == nil:
		w.offer(b)
	case !errors.Is(err, ErrNotFound):
		h.remove(tok, key, w)
		return nil, fmt.Errorf("cache: watch %s: %w", ref(tenant, conv, ""), err)
	}
	out := make(chan *briefd.Briefing)
	go w.run(ctx, out, func() { h.remove(tok, key, w) })
	return out, nil
}

// WatchErr returns an error while the NATS connection is down (the
// watches resume, and catch up, once it is back), or nil.
func (s *KVStore) WatchErr() error {
	if s.nc != nil && !s.nc.IsConnected() {
		return fmt.Errorf("cache: watch: %w", nats.ErrDisconnected)
	}
	return nil
}

// read hands each update of a tenant's latest keys to their watchers.
func (h *kvHub) read(t *kvTenant) {
	for e := range t.w.Updates() {
		if e == nil || e.Operation() != jetstream.KeyValuePut {
			continue
		}
		h.mu.Lock()
		ws := make([]*watcher, 0, len(t.convs[e.Key()]))
		for w := range t.convs[e.Key()] {
			ws = append(ws, w)
		}
		h.mu.Unlock()
		if len(ws) == 0 {
			continue
		}
		b, err := decode(e.Value())
		if err != nil {
			continue
		}
		for _, w := range ws {
			w.offer(b)
		}
	}
}

// remove drops w; the tenant's last watcher stops its consumer.
func (h *kvHub) remove(tok, key string, w *watcher) {
	h.mu.Lock()
	t := h.tenants[tok]
	if t == nil {
		h.mu.Unlock()
		return
	}
	delete(t.convs[key], w)
	if len(t.convs[key]) == 0 {
		delete(t.convs, key)
	}
	last := len(t.convs) == 0
	if last {
		delete(h.tenants, tok)
	}
	h.mu.Unlock()
	if last {
		_ = t.w.Stop()
		t.stop()
	}
}

// FollowPuts calls on with every briefing put under the keys filter (a KV
// key pattern; ">" for all) of bucket, from now until ctx ends. It is for
// tools that watch a whole deployment (the load generator, the nemesis
// checker); agents watch their own conversations with Watch.
func FollowPuts(ctx context.Context, js jetstream.JetStream, bucket, keys string, on func(*briefd.Briefing)) error {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("cache: open bucket %s: %w", bucket, err)
	}
	w, err := kv.Watch(ctx, keys, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("cache: watch bucket %s: %w", bucket, err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue
				}
				var b briefd.Briefing
				if json.Unmarshal(e.Value(), &b) == nil {
					on(&b)
				}
			}
		}
	}()
	return nil
}
