package cache_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/cache/cachetest"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The Redis store passes the conformance suite on a Redis Cluster of
// three masters, through go-redis's ClusterClient (issue 10, item 7): the
// keys of a conversation share one hash slot, so the put script and the
// trimming of old boundaries run on the node that owns it.
func TestRedisClusterStore(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	var n atomic.Int64
	prefix := func() string { return fmt.Sprintf("c%d", n.Add(1)) }
	t.Run("Conformance", func(t *testing.T) {
		cachetest.Run(t, func(t *testing.T) cachetest.Store {
			return cache.NewRedisStore(rdb, cache.RedisConfig{Prefix: prefix()})
		})
	})
	t.Run("Expiry", func(t *testing.T) {
		cachetest.RunExpiry(t, func(t *testing.T, ttl time.Duration) cachetest.Store {
			return cache.NewRedisStore(rdb, cache.RedisConfig{Prefix: prefix(), TTL: ttl})
		})
	})
	t.Run("Retention", func(t *testing.T) {
		cachetest.RunRetention(t, func(t *testing.T, maxBoundaries int) cachetest.Store {
			return cache.NewRedisStore(rdb, cache.RedisConfig{Prefix: prefix(), MaxBoundaries: maxBoundaries})
		})
	})
}

// Every key of one conversation hashes to one slot, ids with the
// characters the key layout escapes included; conversations spread over
// the cluster's nodes.
func TestRedisClusterKeysShareASlot(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	ctx := t.Context()
	s := cache.NewRedisStore(rdb, cache.RedisConfig{MaxBoundaries: 2})
	masters := map[string]bool{}
	for i := range 30 {
		tenant, conv := "acme", fmt.Sprintf("c%d", i)
		if i%3 == 0 {
			tenant, conv = "a:c{m}e%", fmt.Sprintf("c}{%d:", i) // escaped in keys
		}
		for j := range 3 { // the third put trims the first boundary
			b := &briefd.Briefing{Tenant: tenant, ConversationID: conv, BoundaryID: fmt.Sprintf("m{%d}:", j), Position: int64(j + 1),
				SnapshotSeq: uint64(j + 1), SnapshotTime: time.Date(2026, 1, 1, 0, 0, j, 0, time.UTC)}
			if _, err := s.Put(ctx, b); err != nil {
				t.Fatalf("put %s/%s: %v", tenant, conv, err)
			}
		}
		var mu sync.Mutex
		var keys []string
		err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			ks, err := node.Keys(ctx, "briefd:{"+escape(tenant)+":"+escape(conv)+"}:*").Result()
			mu.Lock()
			keys = append(keys, ks...)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 4 { // latest, boundaries, two boundary records
			t.Fatalf("%s/%s: keys %q, want latest, boundaries and two boundaries", tenant, conv, keys)
		}
		slot := int64(-1)
		for _, k := range keys {
			ks, err := rdb.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slot >= 0 && ks != slot {
				t.Fatalf("%s/%s: key %s is in slot %d, the others in %d", tenant, conv, k, ks, slot)
			}
			slot = ks
		}
		node, err := rdb.MasterForKey(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("30 conversations on %d node(s): the test does not spread over the cluster", len(masters))
	}
}

func escape(s string) string {
	out := ""
	for _, r := range s {
		switch r {
		case '%':
			out += "%25"
		case ':':
			out += "%3A"
		case '{':
			out += "%7B"
		case '}':
			out += "%7D"
		default:
			out += string(r)
		}
	}
	return out
}
