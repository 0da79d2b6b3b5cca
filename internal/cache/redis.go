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
	// MaxBoundaries is how many boundaries of one conversation are kept;
	// Put deletes the oldest beyond it (never the latest). Default
	// DefaultMaxBoundaries.
	MaxBoundaries int
	// WaitAOF makes Put wait, with WAITAOF (Redis 7.2 or later), until
	// the briefing is fsynced to the append-only file of the server and
	// of WaitReplicas replicas, so an acknowledged briefing survives a
	// crash. Off, durability is the server's appendfsync setting.
	WaitAOF bool
	// WaitReplicas is how many replicas must have the briefing before
	// Put returns: in their append-only files with WaitAOF, in their
	// memory (WAIT, any Redis version) without it. 0: none.
	WaitReplicas int
	// WaitTimeout bounds the wait; default 1s. Put fails if the wait
	// ends short of its count. Keep it below the client's read timeout
	// (3s by default), which also bounds the reply.
	WaitTimeout time.Duration
}

// WithDefaults returns the configuration with zero fields set to their
// defaults.
func (c RedisConfig) WithDefaults() RedisConfig {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.MaxBoundaries = cmp.Or(c.MaxBoundaries, DefaultMaxBoundaries)
	c.WaitTimeout = cmp.Or(c.WaitTimeout, time.Second)
	return c
}

// RedisStore keeps briefings in Redis; see the package documentation for the
// key layout. It is safe for concurrent use and works on a single node or a
// Redis Cluster.
type RedisStore struct {
	rdb           redis.UniversalClient
	prefix        string
	ttlMS         int64 // 0 means no expiry
	maxBoundaries int
	waitAOF       bool
	waitReplicas  int
	waitTimeout   time.Duration
	watch         redisHub
}

// NewRedisStore returns a store using rdb, which the caller keeps owning and
// closes.
func NewRedisStore(rdb redis.UniversalClient, cfg RedisConfig) *RedisStore {
	cfg = cfg.WithDefaults()
	s := &RedisStore{rdb: rdb, prefix: escapeKey(cfg.Prefix), maxBoundaries: max(cfg.MaxBoundaries, 1),
		waitAOF: cfg.WaitAOF, waitReplicas: cfg.WaitReplicas, waitTimeout: cfg.WaitTimeout}
	if cfg.TTL > 0 {
		s.ttlMS = max(cfg.TTL.Milliseconds(), 1)
	}
	return s
}

// putScript stores a briefing by boundary, moves the latest pointer only
// forward, and keeps at most MaxBoundaries boundaries of the conversation,
// atomically. Order keys and positions are compared as numbers.
//
//	KEYS[1] latest hash, KEYS[2] boundary key, KEYS[3] events channel,
//	KEYS[4] boundaries sorted set (score: order key, or position)
//	ARGV[1] position, ARGV[2] boundary id, ARGV[3] briefing JSON,
//	ARGV[4] TTL in milliseconds (0: no expiry), ARGV[5] order key
//	(snapshot time in microseconds, 0 when none), ARGV[6] max boundaries,
//	ARGV[7] prefix of boundary keys, ARGV[8] boundary id escaped for keys
//
// It returns 1 when the briefing is the latest after the call, 0 otherwise.
var putScript = redis.NewScript(`
local pos = tonumber(ARGV[1])
local ttl = tonumber(ARGV[4])
local ord = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
if ttl > 0 then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ttl)
else
  redis.call('SET', KEYS[2], ARGV[3])
end
local cur = redis.call('HMGET', KEYS[1], 'position', 'boundary', 'briefing', 'order')
local move = false
local latest = 0
if not cur[1] then
  move = true
else
  local curord = tonumber(cur[4]) or 0
  if ord > curord then
    move = true
  elseif ord == curord then
    if cur[2] == ARGV[2] then
      latest = 1
      move = cur[3] ~= ARGV[3]
    elseif ord == 0 and pos > tonumber(cur[1]) then
      move = true
    end
  end
end
if move then
  latest = 1
  redis.call('HSET', KEYS[1], 'key', ARGV[8])
  redis.call('HSET', KEYS[1], 'position', ARGV[1], 'boundary', ARGV[2], 'briefing', ARGV[3], 'order', ARGV[5])
  redis.call('PUBLISH', KEYS[3], ARGV[3])
end
local score = ord
if ord == 0 then score = pos end
redis.call('ZADD', KEYS[4], score, ARGV[8])
local latestKey = redis.call('HGET', KEYS[1], 'key')
local n = redis.call('ZCARD', KEYS[4])
if n > keep then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[4], 0, n - keep - 1)) do
    if old ~= latestKey and not (latestKey == false and old == ARGV[8]) then
      redis.call('DEL', ARGV[7] .. old)
      redis.call('ZREM', KEYS[4], old)
    end
  end
end
for _, k in ipairs({KEYS[1], KEYS[4]}) do
  if ttl > 0 then
    redis.call('PEXPIRE', k, ttl)
  else
    redis.call('PERSIST', k)
  end
end
return latest
`)

// redisKeys are the keys of one conversation.
type redisKeys struct {
	latest, events, boundaries, base string
}

func (s *RedisStore) keys(tenant, conv string) redisKeys {
	base := s.prefix + ":{" + escapeKey(tenant) + ":" + escapeKey(conv) + "}:"
	return redisKeys{latest: base + "latest", events: base + "events", boundaries: base + "boundaries", base: base}
}

func (k redisKeys) boundary(id string) string { return k.base + "b:" + escapeKey(id) }

// keyEscaper makes tenant, conversation and boundary ids safe inside a key:
// ':' separates fields and braces delimit the hash tag.
var keyEscaper = strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")

func escapeKey(s string) string { return keyEscaper.Replace(s) }

// Put stores b under its tenant, conversation and boundary id, and makes it
// the conversation's latest briefing if it is newer than the current
// latest (a later snapshot; see the package documentation for ties). It reports
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
	n, err := s.runPut(ctx, []string{k.latest, k.boundary(b.BoundaryID), k.events, k.boundaries},
		strconv.FormatInt(b.Position, 10), b.BoundaryID, data, s.ttlMS,
		strconv.FormatInt(order(b), 10), s.maxBoundaries, k.base+"b:", escapeKey(b.BoundaryID),
	)
	if err != nil {
		return false, fmt.Errorf("cache: put %s: %w", ref(b.Tenant, b.ConversationID, b.BoundaryID), err)
	}
	return n == 1, nil
}

// WaitsForAOF reports whether Put waits for WAITAOF (RedisConfig.WaitAOF).
func (s *RedisStore) WaitsForAOF() bool { return s.waitAOF }

// Ping checks that the server answers and, with WaitAOF, that it can
// WAITAOF (see CheckWaitAOF); the worker's readiness asks it.
func (s *RedisStore) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("cache: ping redis: %w", err)
	}
	if s.waitAOF {
		return s.CheckWaitAOF(ctx)
	}
	return nil
}

// Latest returns the conversation's newest briefing, or ErrNotFound.
func (s *RedisStore) Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error) {
	data, err := s.rdb.HGet(ctx, s.keys(tenant, conv).latest, "briefing").Bytes()
	return s.result(data, err, "latest", ref(tenant, conv, ""))
}

// LatestJSON returns the JSON of the conversation's newest briefing as
// stored (see Decode), or ErrNotFound.
func (s *RedisStore) LatestJSON(ctx context.Context, tenant, conv string) ([]byte, error) {
	data, err := s.rdb.HGet(ctx, s.keys(tenant, conv).latest, "briefing").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cache: latest %s: %w", ref(tenant, conv, ""), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: latest %s: %w", ref(tenant, conv, ""), err)
	}
	return data, nil
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
