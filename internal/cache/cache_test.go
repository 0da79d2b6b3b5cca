package cache_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/cache/cachetest"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

var (
	_ cachetest.Store = (*cache.RedisStore)(nil)
	_ cachetest.Store = (*cache.KVStore)(nil)
)

func TestRedisStore(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	var n atomic.Int64
	// One server for the suite; each subtest gets its own key prefix.
	cachetest.Run(t, func(t *testing.T) cachetest.Store {
		return cache.NewRedisStore(rdb, cache.RedisConfig{Prefix: fmt.Sprintf("t%d", n.Add(1))})
	})
}

func TestRedisStoreExpiry(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	cachetest.RunExpiry(t, func(t *testing.T, ttl time.Duration) cachetest.Store {
		return cache.NewRedisStore(rdb, cache.RedisConfig{TTL: ttl})
	})
}

func TestRedisStoreNoExpiry(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	s := cache.NewRedisStore(rdb, cache.RedisConfig{TTL: -1})
	if _, err := s.Put(ctx, briefing("t", "c", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"briefd:{t:c}:latest", "briefd:{t:c}:b:m1"} {
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl != -1 { // PTTL reports -1 for a key without expiry
			t.Errorf("PTTL(%s) = %v, want no expiry", key, ttl)
		}
	}

	// The default TTL is 30 days, refreshed by every Put.
	s = cache.NewRedisStore(rdb, cache.RedisConfig{})
	if _, err := s.Put(ctx, briefing("t", "c", "m0", 0)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"briefd:{t:c}:latest", "briefd:{t:c}:b:m0"} {
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= cache.DefaultTTL-time.Minute || ttl > cache.DefaultTTL {
			t.Errorf("PTTL(%s) = %v, want about %v", key, ttl, cache.DefaultTTL)
		}
	}
}

// TestRedisKeyLayout pins the documented layout: one hash slot per
// conversation, escaped ids.
func TestRedisKeyLayout(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	s := cache.NewRedisStore(rdb, cache.RedisConfig{})
	if _, err := s.Put(ctx, briefing("acme", "a:b{c}", "m:1", 1)); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"briefd:{acme:a%3Ab%7Bc%7D}:latest": true, "briefd:{acme:a%3Ab%7Bc%7D}:b:m%3A1": true,
		"briefd:{acme:a%3Ab%7Bc%7D}:boundaries": true}
	if len(keys) != len(want) {
		t.Fatalf("keys = %q, want %v", keys, want)
	}
	// Redis Cluster hashes only the part between the first '{' and the
	// next '}', so equal tags mean one slot.
	tag := ""
	for _, k := range keys {
		if !want[k] {
			t.Errorf("unexpected key %q", k)
		}
		open := strings.IndexByte(k, '{')
		end := strings.IndexByte(k[open:], '}')
		if open < 0 || end < 0 {
			t.Fatalf("key %q has no hash tag", k)
		}
		if got := k[open+1 : open+end]; tag != "" && got != tag {
			t.Errorf("key %q has hash tag %q, others %q", k, got, tag)
		} else {
			tag = got
		}
	}
}

// TestRedisRestart: while Redis is down the store errors (never
// ErrNotFound); once it is back, the client reconnects, the script is
// reloaded, and watchers resubscribe.
func TestRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	// No retries, so that the outage shows at once.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	s := cache.NewRedisStore(rdb, cache.RedisConfig{})
	ctx := t.Context()
	if _, err := s.Put(ctx, briefing("t", "c", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(wctx, "t", "c")
	if err != nil {
		t.Fatal(err)
	}
	if b := <-ch; b.Position != 1 {
		t.Fatalf("first watched position = %d, want 1", b.Position)
	}

	srv.Kill()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	if _, err := s.Put(dctx, briefing("t", "c", "m2", 2)); err == nil {
		t.Fatal("Put with Redis down succeeded")
	}
	if _, err := s.Latest(dctx, "t", "c"); err == nil || errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("Latest with Redis down = %v, want a connection error", err)
	}

	srv.Start(t) // empty: persistence is off
	if _, err := s.Latest(ctx, "t", "c"); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("Latest after restart = %v, want ErrNotFound", err)
	}
	if _, err := s.Put(ctx, briefing("t", "c", "m3", 3)); err != nil {
		t.Fatalf("Put after restart: %v", err)
	}
	select {
	case b := <-ch:
		if b.Position != 3 {
			t.Fatalf("watched position after restart = %d, want 3", b.Position)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watcher got nothing after the restart")
	}
}

func newKV(t testing.TB) jetstream.JetStream {
	_, js := natstest.Start(t).Connect(t)
	return js
}

func TestKVStore(t *testing.T) {
	js := newKV(t)
	var n atomic.Int64
	cachetest.Run(t, func(t *testing.T) cachetest.Store {
		s, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{
			Bucket:  fmt.Sprintf("b%d", n.Add(1)),
			Storage: jetstream.MemoryStorage,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestKVStoreExpiry(t *testing.T) {
	js := newKV(t)
	cachetest.RunExpiry(t, func(t *testing.T, ttl time.Duration) cachetest.Store {
		s, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestKVStoreIdempotentCreate: NewKVStore on an existing bucket works, and
// sees what the first store wrote.
func TestKVStoreIdempotentCreate(t *testing.T) {
	js := newKV(t)
	ctx := t.Context()
	s1, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Put(ctx, briefing("t", "c", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	s2, err := cache.NewKVStore(ctx, js, cache.KVConfig{TTL: -1})
	if err != nil {
		t.Fatalf("second NewKVStore: %v", err)
	}
	if b, err := s2.Latest(ctx, "t", "c"); err != nil || b.BoundaryID != "m1" {
		t.Fatalf("Latest via second store = %v, %v", b, err)
	}
	kv, err := js.KeyValue(ctx, cache.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != 0 {
		t.Errorf("bucket TTL after TTL -1 = %v, want 0 (no expiry)", st.TTL())
	}
}

// TestKVStoreRestart: the file-backed bucket survives a NATS restart and the
// store works again once the client has reconnected.
func TestKVStoreRestart(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	ctx := t.Context()
	s, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, briefing("t", "c", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Put(ctx, briefing("t", "c", "m2", 2))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Put after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the reconnect
	}
	if _, err := s.Get(ctx, "t", "c", "m1"); err != nil {
		t.Fatalf("Get of a briefing stored before the restart: %v", err)
	}
	if b, err := s.Latest(ctx, "t", "c"); err != nil || b.Position != 2 {
		t.Fatalf("Latest after restart = %v, %v", b, err)
	}
}

// TestOpenKVStoreKeepsSettings: an agent opening the bucket never resets
// the TTL the workers configured, and creates the bucket when it is missing.
func TestOpenKVStoreKeepsSettings(t *testing.T) {
	js := newKV(t)
	ctx := t.Context()
	if _, err := cache.NewKVStore(ctx, js, cache.KVConfig{Bucket: "set", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.OpenKVStore(ctx, js, cache.KVConfig{Bucket: "set"}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "set")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != time.Hour {
		t.Fatalf("TTL after OpenKVStore = %v, want 1h", st.TTL())
	}
	if _, err := cache.OpenKVStore(ctx, js, cache.KVConfig{Bucket: "fresh"}); err != nil {
		t.Fatalf("OpenKVStore on a missing bucket: %v", err)
	}
}

// Old boundaries are bounded per conversation: Put keeps MaxBoundaries of
// them (never deleting the latest) instead of every boundary for 30 days.
func TestRedisRetention(t *testing.T) {
	srv := redistest.Start(t)
	cachetest.RunRetention(t, func(t *testing.T, maxBoundaries int) cachetest.Store {
		return cache.NewRedisStore(srv.Client(t), cache.RedisConfig{Prefix: "retention", MaxBoundaries: maxBoundaries})
	})
	// The index holds what is kept, no more.
	rdb := srv.Client(t)
	s := cache.NewRedisStore(rdb, cache.RedisConfig{MaxBoundaries: 3})
	for i := range 10 {
		b := &briefd.Briefing{ConversationID: "c1", Tenant: "acme", BoundaryID: fmt.Sprintf("m%d", i), Position: int64(10 + i),
			SnapshotSeq: uint64(i + 1), SnapshotTime: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}
		if _, err := s.Put(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := rdb.ZCard(t.Context(), "briefd:{acme:c1}:boundaries").Result(); n != 3 {
		t.Fatalf("%d boundaries indexed, want 3", n)
	}
}

// TestKVStoreRetention: the key-value store keeps MaxBoundaries boundaries
// per conversation too (issue 10, item 10), in an index key per
// conversation moved by compare-and-set.
func TestKVStoreRetention(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	n := 0
	cachetest.RunRetention(t, func(t *testing.T, maxBoundaries int) cachetest.Store {
		n++
		s, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{Bucket: fmt.Sprintf("retention%d", n), MaxBoundaries: maxBoundaries})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRedisWatchSharesOneConnection (issue 10, D4): a store's watches
// share one Pub/Sub connection, which is closed when the last ends.
func TestRedisWatchSharesOneConnection(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s := cache.NewRedisStore(rdb, cache.RedisConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	const n = 200
	chans := make([]<-chan *briefd.Briefing, n)
	for i := range n {
		ch, err := s.Watch(ctx, "t", fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	if subs, channels := pubsubClients(t, rdb); subs != 1 || channels != n {
		t.Fatalf("%d connections subscribed to %d channels for %d watches, want 1 to %d", subs, channels, n, n)
	}
	cancel()
	for _, ch := range chans {
		for range ch { // closed once ctx ends
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		subs, _ := pubsubClients(t, rdb)
		if subs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribed connections left after every watch ended", subs)
		}
		time.Sleep(10 * time.Millisecond) // polling external state
	}
}

// pubsubClients counts the connections subscribed to a channel, and
// their channels, from CLIENT LIST.
func pubsubClients(t *testing.T, rdb redis.UniversalClient) (subs, channels int) {
	t.Helper()
	list, err := rdb.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "sub="); ok && v != "0" {
				k, _ := strconv.Atoi(v)
				subs, channels = subs+1, channels+k
			}
		}
	}
	return subs, channels
}

// TestRedisWatchErr: WatchErr reports the shared connection's outage
// while Redis is down and clears once the watches are re-subscribed; a
// briefing stored meanwhile is delivered; a Watch with Redis down fails.
func TestRedisWatchErr(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	s := cache.NewRedisStore(rdb, cache.RedisConfig{})
	ctx := t.Context()
	ch, err := s.Watch(ctx, "t", "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WatchErr(); err != nil {
		t.Fatalf("WatchErr while live = %v", err)
	}
	srv.Kill()
	waitFor(t, "WatchErr to report the outage", func() bool { return s.WatchErr() != nil })
	if _, err := s.Watch(ctx, "t", "other"); err == nil {
		t.Fatal("Watch with Redis down succeeded")
	}
	srv.Start(t)
	if _, err := s.Put(ctx, briefing("t", "c", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "WatchErr to clear", func() bool { return s.WatchErr() == nil })
	select {
	case b := <-ch:
		if b.Position != 1 {
			t.Fatalf("watched position %d, want 1", b.Position)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no briefing after Redis came back")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling external state
	}
}

// TestKVWatchSharesOneConsumer (issue 10, D4): a store's watches of one
// tenant share one bucket consumer, stopped when the last ends.
func TestKVWatchSharesOneConsumer(t *testing.T) {
	js := newKV(t)
	s, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	consumers := func() int {
		st, err := js.Stream(t.Context(), "KV_"+cache.DefaultBucket)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().State.Consumers
	}
	ctx, cancel := context.WithCancel(t.Context())
	const n = 200
	chans := make([]<-chan *briefd.Briefing, n)
	for i := range n {
		ch, err := s.Watch(ctx, "t", fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	if got := consumers(); got != 1 {
		t.Fatalf("%d consumers for %d watches of one tenant, want 1", got, n)
	}
	if _, err := s.Put(t.Context(), briefing("t", "c77", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-chans[77]:
		if b.ConversationID != "c77" {
			t.Fatalf("watch of c77 delivered %s", b.ConversationID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no briefing on the watch of c77")
	}
	cancel()
	for _, ch := range chans {
		for range ch {
		}
	}
	waitFor(t, "the consumer to go", func() bool { return consumers() == 0 })
}
