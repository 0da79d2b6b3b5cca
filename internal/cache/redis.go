package cache

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/briefd/briefd"
	"github.com/redis/go-redis/v9"
)

// RedisConfig configures a [RedisStore]. The zero value is ready to use.
type RedisConfig struct {
	// Prefix starts every key and channel. Defaults to "briefd".
	Prefix string
	// TTL is how long a briefing and the latest pointer live after the
	// conversation's last Put. Defaults to 30 days; -1 disables expiry.
	// Sub-millisecond values are rounded up to 1ms.
	TTL time.Duration
}

// WithDefaults returns the configuration with zero fields set to their
// defaults.
func (c RedisConfig) WithDefaults() RedisConfig {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	return c
}

// RedisStore keeps briefings in Redis; see the package documentation for the
// key layout. It is safe for concurrent use and works on a single node or a
// Redis Cluster.
type RedisStore struct {
	rdb    redis.UniversalClient
	prefix string
	ttlMS  int64 // 0 means no expiry
}

// NewRedisStore returns a store using rdb, which the caller keeps owning and
// closes.
func NewRedisStore(rdb redis.UniversalClient, cfg RedisConfig) *RedisStore {
	cfg = cfg.WithDefaults()
	s := &RedisStore{rdb: rdb, prefix: escapeKey(cfg.Prefix)}
	if cfg.TTL > 0 {
		s.ttlMS = max(cfg.TTL.Milliseconds(), 1)
	}
	return s
}

// putScript stores a briefing by boundary and moves the latest pointer only
// forward, atomically. Position is compared as a number, never as a string.
//
//	KEYS[1] latest hash, KEYS[2] boundary key, KEYS[3] events channel
//	ARGV[1] position, ARGV[2] boundary id, ARGV[3] briefing JSON,
//	ARGV[4] TTL in milliseconds (0: no expiry)
//
// It returns 1 when the briefing is the latest after the call, 0 otherwise.
var putScript = redis.NewScript(`
local pos = tonumber(ARGV[1])
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ttl)
else
  redis.call('SET', KEYS[2], ARGV[3])
end
local cur = redis.call('HMGET', KEYS[1], 'position', 'boundary', 'briefing')
local move = false
local latest = 0
if not cur[1] then
  move = true
else
  local curpos = tonumber(cur[1])
  if pos > curpos then
    move = true
  elseif pos == curpos and cur[2] == ARGV[2] then
    latest = 1
    move = cur[3] ~= ARGV[3]
  end
end
if move then
  latest = 1
  redis.call('HSET', KEYS[1], 'position', ARGV[1], 'boundary', ARGV[2], 'briefing', ARGV[3])
  redis.call('PUBLISH', KEYS[3], ARGV[3])
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('PERSIST', KEYS[1])
end
return latest
`)

// redisKeys are the keys of one conversation.
type redisKeys struct {
	latest, events, base string
}

func (s *RedisStore) keys(tenant, conv string) redisKeys {
	base := s.prefix + ":{" + escapeKey(tenant) + ":" + escapeKey(conv) + "}:"
	return redisKeys{latest: base + "latest", events: base + "events", base: base}
}

func (k redisKeys) boundary(id string) string { return k.base + "b:" + escapeKey(id) }

// keyEscaper makes tenant, conversation and boundary ids safe inside a key:
// ':' separates fields and braces delimit the hash tag.
var keyEscaper = strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")

func escapeKey(s string) string { return keyEscaper.Replace(s) }

// Put stores b under its tenant, conversation and boundary id, and makes it
// the conversation's latest briefing if its Position is higher than the
// current latest's (see the package documentation for ties). It reports
// whether b is the latest after the call. It refreshes the expiry of both
// keys and publishes b to watchers when the latest moves.
func (s *RedisStore) Put(ctx context.Context, b *briefd.Briefing) (latest bool, err error) {
	if err := validate(b); err != nil {
		return false, fmt.Errorf("cache: put: %w", err)
	}
	data, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("cache: put %s: encode: %w", ref(b.Tenant, b.ConversationID, b.BoundaryID), err)
	}
	k := s.keys(b.Tenant, b.ConversationID)
	n, err := putScript.Run(ctx, s.rdb,
		[]string{k.latest, k.boundary(b.BoundaryID), k.events},
		strconv.FormatInt(b.Position, 10), b.BoundaryID, data, s.ttlMS,
	).Int()
	if err != nil {
		return false, fmt.Errorf("cache: put %s: %w", ref(b.Tenant, b.ConversationID, b.BoundaryID), err)
	}
	return n == 1, nil
}

// Latest returns the conversation's briefing with the highest Position, or
// ErrNotFound.
func (s *RedisStore) Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error) {
	data, err := s.rdb.HGet(ctx, s.keys(tenant, conv).latest, "briefing").Bytes()
	return s.result(data, err, "latest", ref(tenant, conv, ""))
}

// Get returns the conversation's briefing for the given boundary id, or
// ErrNotFound.
func (s *RedisStore) Get(ctx context.Context, tenant, conv, boundaryID string) (*briefd.Briefing, error) {
	data, err := s.rdb.Get(ctx, s.keys(tenant, conv).boundary(boundaryID)).Bytes()
	return s.result(data, err, "get", ref(tenant, conv, boundaryID))
}

func (s *RedisStore) result(data []byte, err error, op, what string) (*briefd.Briefing, error) {
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cache: %s %s: %w", op, what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %s %s: %w", op, what, err)
	}
	b, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("cache: %s %s: %w", op, what, err)
	}
	return b, nil
}

// Watch subscribes to the conversation's latest briefing. The channel first
// delivers the current latest, if any, then each newer one, with strictly
// increasing Positions; a slow reader gets the newest and skips the rest. It
// is closed when ctx ends. Watch returns once the subscription is active, so
// no Put that returns after Watch is missed. If the connection drops, the
// subscription is re-established and the latest is fetched again, so a
// briefing stored during the outage is still delivered.
func (s *RedisStore) Watch(ctx context.Context, tenant, conv string) (<-chan *briefd.Briefing, error) {
	k := s.keys(tenant, conv)
	ps := s.rdb.Subscribe(ctx, k.events)
	// The first reply confirms the subscription; reading it here makes the
	// subscription active before Watch returns.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("cache: watch %s: subscribe: %w", ref(tenant, conv, ""), err)
	}
	out := make(chan *briefd.Briefing)
	go func() {
		defer close(out)
		defer ps.Close()
		var c coalescer
		resync := func() {
			if b, err := s.Latest(ctx, tenant, conv); err == nil {
				c.offer(b)
			}
		}
		resync()
		// ChannelWithSubscriptions also reports the re-subscription after a
		// reconnect, which is when messages may have been lost.
		in := ps.ChannelWithSubscriptions()
		for {
			select {
			case <-ctx.Done():
				return
			case c.sendOn(out) <- c.pending:
				c.sent()
			case m, ok := <-in:
				if !ok {
					return
				}
				switch m := m.(type) {
				case *redis.Message:
					if b, err := decode([]byte(m.Payload)); err == nil {
						c.offer(b)
					}
				case *redis.Subscription:
					if m.Kind == "subscribe" {
						resync()
					}
				}
			}
		}
	}()
	return out, nil
}
