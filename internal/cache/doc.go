// Package cache stores briefings where agents fetch them: by conversation and
// boundary message id, plus a "latest" pointer per conversation that only
// ever moves forward.
//
// Two implementations share one contract, checked by the conformance suite in
// [github.com/briefd/briefd/internal/cache/cachetest]:
//
//   - [RedisStore] on Redis (a single node, a Sentinel setup or a Redis
//     Cluster, through redis.UniversalClient);
//   - [KVStore] on a JetStream key-value bucket, for the embedded mode where
//     NATS is the only server.
//
// # Contract
//
// Put stores a briefing under (tenant, conversation, boundary id) and moves
// the conversation's latest pointer to it only if its Position is higher than
// the current latest's. The compare and the move are one atomic step, so two
// workers racing on one conversation can never leave an older boundary as the
// latest. The tie rule for an equal Position:
//
//   - same boundary id and the same bytes: an idempotent re-put; nothing
//     changes except the expiry, and Put reports latest = true;
//   - same boundary id, different bytes (a redelivered compaction whose
//     model answered differently): the new briefing replaces the old one,
//     and Put reports latest = true;
//   - different boundary id: the first writer stays the latest, and Put
//     reports latest = false (the briefing is still stored by its boundary).
//
// Latest and Get return [ErrNotFound] when there is nothing; errors of the
// underlying client (redis.Nil, jetstream.ErrKeyNotFound) never leak.
//
// Watch delivers the current latest briefing, if any, then each newer one,
// by the rule that decides the latest ([Newer]): each briefing it delivers is
// newer than the one before. A slow reader skips intermediate briefings
// rather than stalling anything: only the newest undelivered briefing is kept
// for it. All watches of a store share one subscription (one Redis Pub/Sub
// connection; one bucket watcher per tenant), opened by the first and closed
// with the last; WatchErr reports while it is down.
//
// Positions are compared as integers. On Redis they pass through Lua numbers
// (doubles), so they must stay below 2^53, which no conversation reaches.
//
// # Redis layout
//
// All keys of one conversation share the Redis Cluster hash tag
// {<tenant>:<conversation>}, so they live in one slot and the Lua script may
// touch all of them. With the default prefix "briefd":
//
//	briefd:{<tenant>:<conv>}:latest          hash: position, boundary, briefing (JSON)
//	briefd:{<tenant>:<conv>}:b:<boundary id> string: briefing JSON
//	briefd:{<tenant>:<conv>}:events          pub/sub channel: briefing JSON of each new latest
//
// Tenant, conversation and boundary ids are escaped so that the layout stays
// unambiguous: '%', ':', '{' and '}' become %25, %3A, %7B and %7D; every other
// byte is kept. An empty tenant gives "{:<conv>}". The latest hash holds a
// copy of the briefing so that Latest is one HGET; briefings are at most
// tens of kilobytes, so the copy is cheap.
//
// Put runs one Lua script (see putScript) that writes the boundary key,
// compares positions, updates the latest hash and publishes on the events
// channel, all atomically; every key and the channel travel in KEYS. Each Put
// refreshes the expiry of the boundary key and of the latest hash
// ([RedisConfig.TTL], 30 days by default).
//
// # JetStream key-value layout
//
// Bucket "briefd_briefings" by default, history 1, the bucket's TTL as the
// expiry. Key tokens are base64url without padding (RFC 4648 §5), so any id
// is a valid key; an empty tenant is "_", which no encoding produces:
//
//	<b64 tenant>.<b64 conv>.latest             briefing JSON of the latest
//	<b64 tenant>.<b64 conv>.b.<b64 boundary>   briefing JSON
//
// The latest key is moved with revision-based compare-and-set (Create, or
// Update at the revision read), retried on conflict. A key expires TTL after
// its own last write: the latest key is rewritten only when it moves.
package cache
