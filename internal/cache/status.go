package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/briefd/briefd"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// A conversation's status (briefd.Status) is the workers' verdict on its
// newest handled snapshot. PutStatus keeps the verdict of the highest
// agent seq: a verdict on an older snapshot, finished after a newer one's,
// never replaces it; an equal seq (a redelivery's new verdict) does. It
// lives beside the briefings, under the same expiry, so an agent reads it
// with the permissions it has for them.

func validStatus(st *briefd.Status) error {
	switch {
	case st == nil:
		return errors.New("nil status")
	case st.ConversationID == "":
		return errors.New("status has no conversation id")
	case st.Outcome == "":
		return errors.New("status has no outcome")
	}
	return nil
}

func decodeStatus(data []byte) (*briefd.Status, error) {
	st := new(briefd.Status)
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("decode status: %w", err)
	}
	return st, nil
}

// statusScript writes a status unless the stored one is of a higher seq.
// Seqs are compared as decimal strings (longer is larger), so any uint64
// compares right, not only those below 2^53.
//
//	KEYS[1] status hash; ARGV[1] seq, ARGV[2] status JSON, ARGV[3] TTL in
//	milliseconds (0: no expiry)
//
// It returns 1 when the status was written.
var statusScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'seq')
if cur and (#cur > #ARGV[1] or (#cur == #ARGV[1] and cur > ARGV[1])) then
  return 0
end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'status', ARGV[2])
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('PERSIST', KEYS[1])
end
return 1
`)

func (k redisKeys) status() string { return k.base + "status" }

// PutStatus stores st as its conversation's status unless a status of a
// higher seq is stored.
func (s *RedisStore) PutStatus(ctx context.Context, st *briefd.Status) error {
	if err := validStatus(st); err != nil {
		return fmt.Errorf("cache: put status: %w", err)
	}
	what := ref(st.Tenant, st.ConversationID, "")
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cache: put status %s: encode: %w", what, err)
	}
	k := s.keys(st.Tenant, st.ConversationID)
	if err := statusScript.Run(ctx, s.rdb, []string{k.status()}, strconv.FormatUint(st.Seq, 10), data, s.ttlMS).Err(); err != nil {
		return fmt.Errorf("cache: put status %s: %w", what, err)
	}
	return nil
}

// Status returns the conversation's status, or ErrNotFound.
func (s *RedisStore) Status(ctx context.Context, tenant, conv string) (*briefd.Status, error) {
	what := ref(tenant, conv, "")
	data, err := s.rdb.HGet(ctx, s.keys(tenant, conv).status(), "status").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cache: status %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: status %s: %w", what, err)
	}
	st, err := decodeStatus(data)
	if err != nil {
		return nil, fmt.Errorf("cache: status %s: %w", what, err)
	}
	return st, nil
}

func kvStatusKey(tenant, conv string) string {
	return kvToken(tenant) + "." + kvToken(conv) + ".status"
}

// PutStatus stores st as its conversation's status unless a status of a
// higher seq is stored, by compare-and-set on the key's revision.
func (s *KVStore) PutStatus(ctx context.Context, st *briefd.Status) error {
	if err := validStatus(st); err != nil {
		return fmt.Errorf("cache: put status: %w", err)
	}
	what := ref(st.Tenant, st.ConversationID, "")
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cache: put status %s: encode: %w", what, err)
	}
	key := kvStatusKey(st.Tenant, st.ConversationID)
	for {
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = s.kv.Create(ctx, key, data)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			if err != nil {
				return fmt.Errorf("cache: put status %s: %w", what, err)
			}
			return nil
		case err != nil:
			return fmt.Errorf("cache: put status %s: read: %w", what, err)
		}
		var cur struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(e.Value(), &cur); err == nil && cur.Seq > st.Seq {
			return nil
		}
		_, err = s.kv.Update(ctx, key, data, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cache: put status %s: %w", what, err)
		}
		return nil
	}
}

// Status returns the conversation's status, or ErrNotFound.
func (s *KVStore) Status(ctx context.Context, tenant, conv string) (*briefd.Status, error) {
	what := ref(tenant, conv, "")
	e, err := s.kv.Get(ctx, kvStatusKey(tenant, conv))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("cache: status %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: status %s: %w", what, err)
	}
	st, err := decodeStatus(e.Value())
	if err != nil {
		return nil, fmt.Errorf("cache: status %s: %w", what, err)
	}
	return st, nil
}
