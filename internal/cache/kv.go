package cache

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/jsensure"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KVConfig configures a [KVStore]. The zero value is ready to use.
type KVConfig struct {
	// Bucket names the key-value bucket. Defaults to "briefd_briefings".
	Bucket string
	// TTL is the bucket's maximum age: a key expires TTL after its last
	// write. Defaults to 30 days; -1 disables expiry.
	TTL time.Duration
	// Replicas is the bucket's replica count in a cluster. Defaults to 1.
	Replicas int
	// Storage is file (the zero value, the default) or memory.
	Storage jetstream.StorageType
	// MaxBoundaries is how many boundaries of one conversation are kept;
	// Put deletes the oldest beyond it (never the latest's). Default
	// DefaultMaxBoundaries.
	MaxBoundaries int
}

// WithDefaults returns the configuration with zero fields set to their
// defaults.
func (c KVConfig) WithDefaults() KVConfig {
	c.Bucket = cmp.Or(c.Bucket, DefaultBucket)
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.MaxBoundaries = cmp.Or(c.MaxBoundaries, DefaultMaxBoundaries)
	return c
}

// KVStore keeps briefings in a JetStream key-value bucket, for the embedded
// mode; see the package documentation for the key layout. It is safe for
// concurrent use.
type KVStore struct {
	kv            jetstream.KeyValue
	nc            *nats.Conn
	watch         kvHub
	maxBoundaries int
}

// NewKVStore creates the bucket if it does not exist, or updates its
// configuration if it does, and returns a store on it.
func NewKVStore(ctx context.Context, js jetstream.JetStream, cfg KVConfig) (*KVStore, error) {
	cfg = cfg.WithDefaults()
	ttl := cfg.TTL
	if ttl < 0 {
		ttl = 0 // no maximum age
	}
	kv, err := jsensure.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "briefd briefings by conversation and boundary",
		History:     1,
		TTL:         ttl,
		Replicas:    cfg.Replicas,
		Storage:     cfg.Storage,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: create key-value bucket %s: %w", cfg.Bucket, err)
	}
	return &KVStore{kv: kv, nc: js.Conn(), maxBoundaries: max(cfg.MaxBoundaries, 1)}, nil
}

// OpenKVStore returns the store on an existing bucket, creating it with
// cfg only when it does not exist yet. Agents use it: unlike NewKVStore it
// never changes the TTL or replicas that the workers' configuration set.
func OpenKVStore(ctx context.Context, js jetstream.JetStream, cfg KVConfig) (*KVStore, error) {
	cfg = cfg.WithDefaults()
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case err == nil:
		return &KVStore{kv: kv, nc: js.Conn(), maxBoundaries: max(cfg.MaxBoundaries, 1)}, nil
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return NewKVStore(ctx, js, cfg)
	default:
		return nil, fmt.Errorf("cache: open key-value bucket %s: %w", cfg.Bucket, err)
	}
}

// kvToken encodes an id as one valid key token: base64url without padding,
// or "_" for the empty string, which no encoding of a non-empty id produces.
func kvToken(s string) string {
	if s == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func kvLatestKey(tenant, conv string) string {
	return kvToken(tenant) + "." + kvToken(conv) + ".latest"
}

func kvBoundaryKey(tenant, conv, boundary string) string {
	return kvToken(tenant) + "." + kvToken(conv) + ".b." + kvToken(boundary)
}

// kvIndexKey holds the conversation's boundaries kept, for retention.
func kvIndexKey(tenant, conv string) string {
	return kvToken(tenant) + "." + kvToken(conv) + ".boundaries"
}

// position is the part of a stored briefing that Put compares.
type position struct {
	Position     int64     `json:"position"`
	BoundaryID   string    `json:"boundary_id"`
	SnapshotTime time.Time `json:"snapshot_time"`
}

// Put stores b under its tenant, conversation and boundary id, and makes it
// the conversation's latest briefing if it is newer than the current
// latest (a later snapshot; see the package documentation for ties). It reports
// whether b is the latest after the call. The latest key moves by
// compare-and-set on its revision, retried on conflict, so racing writers
// cannot move it backwards.
func (s *KVStore) Put(ctx context.Context, b *briefd.Briefing) (latest bool, err error) {
	if err := validate(b); err != nil {
		return false, fmt.Errorf("cache: put: %w", err)
	}
	what := ref(b.Tenant, b.ConversationID, b.BoundaryID)
	data, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("cache: put %s: encode: %w", what, err)
	}
	// The index first: a writer trimming the conversation meanwhile then
	// counts this boundary, at its order, among those to keep.
	drop, err := s.index(ctx, b)
	if err != nil {
		return false, fmt.Errorf("cache: put %s: %w", what, err)
	}
	if _, err := s.kv.Put(ctx, kvBoundaryKey(b.Tenant, b.ConversationID, b.BoundaryID), data); err != nil {
		return false, fmt.Errorf("cache: put %s: %w", what, err)
	}
	defer s.purge(ctx, b.Tenant, b.ConversationID, drop)
	key := kvLatestKey(b.Tenant, b.ConversationID)
	for {
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			// Create also succeeds over a delete marker; ErrKeyExists means
			// another writer got there first: compare with its value.
			_, err = s.kv.Create(ctx, key, data)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("cache: put %s: create latest: %w", what, err)
			}
			return true, nil
		case err != nil:
			return false, fmt.Errorf("cache: put %s: read latest: %w", what, err)
		}
		var cur position
		if err := json.Unmarshal(e.Value(), &cur); err != nil {
			return false, fmt.Errorf("cache: put %s: decode latest: %w", what, err)
		}
		curB := &briefd.Briefing{Position: cur.Position, SnapshotTime: cur.SnapshotTime}
		switch {
		case newer(b, curB):
		case newer(curB, b), b.BoundaryID != cur.BoundaryID:
			return false, nil
		case bytes.Equal(e.Value(), data):
			return true, nil
		}
		_, err = s.kv.Update(ctx, key, data, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("cache: put %s: update latest: %w", what, err)
		}
		return true, nil
	}
}

// kvIndexed is one boundary in a conversation's index: its id and the
// key that orders it (the snapshot's time in microseconds, or the
// position for a briefing of no snapshot), as the Redis store scores it.
type kvIndexed struct {
	Boundary string `json:"b"`
	Order    int64  `json:"o"`
}

// index records b's boundary in its conversation's index and removes the
// oldest beyond MaxBoundaries from it, by compare-and-set; it returns the
// boundaries removed, whose records the caller deletes.
func (s *KVStore) index(ctx context.Context, b *briefd.Briefing) ([]string, error) {
	key := kvIndexKey(b.Tenant, b.ConversationID)
	score := order(b)
	if score == 0 {
		score = b.Position
	}
	for {
		var idx []kvIndexed
		var rev uint64
		e, err := s.kv.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &idx); err != nil {
				idx = nil // rebuilt from here on; older records expire with the bucket's TTL
			}
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return nil, fmt.Errorf("read boundary index: %w", err)
		}
		found, changed := false, false
		for i := range idx {
			if idx[i].Boundary == b.BoundaryID {
				found = true
				if score > idx[i].Order {
					idx[i].Order, changed = score, true
				}
			}
		}
		if !found {
			idx = append(idx, kvIndexed{Boundary: b.BoundaryID, Order: score})
		}
		if found && !changed {
			return nil, nil // a redelivery: nothing new to record
		}
		// The oldest go. The latest briefing's boundary has the highest
		// order of all (the latest moves only to a higher one), so it is
		// never among them.
		var drop []string
		if len(idx) > s.maxBoundaries {
			slices.SortStableFunc(idx, func(x, y kvIndexed) int { return cmp.Compare(x.Order, y.Order) })
			n := len(idx) - s.maxBoundaries
			for _, x := range idx[:n] {
				drop = append(drop, x.Boundary)
			}
			idx = slices.Clone(idx[n:])
		}
		data, _ := json.Marshal(idx)
		if rev == 0 {
			_, err = s.kv.Create(ctx, key, data)
		} else {
			_, err = s.kv.Update(ctx, key, data, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // another writer: read its index and do it again
		}
		if err != nil {
			return nil, fmt.Errorf("write boundary index: %w", err)
		}
		return drop, nil
	}
}

// purge deletes the records of boundaries the index let go. A failure
// leaves a record the bucket's TTL removes later.
func (s *KVStore) purge(ctx context.Context, tenant, conv string, boundaries []string) {
	for _, id := range boundaries {
		_ = s.kv.Purge(ctx, kvBoundaryKey(tenant, conv, id))
	}
}

// Ping checks that the bucket answers; the worker's readiness asks it.
func (s *KVStore) Ping(ctx context.Context) error {
	if _, err := s.kv.Status(ctx); err != nil {
		return fmt.Errorf("cache: key-value bucket: %w", err)
	}
	return nil
}

// Latest returns the conversation's newest briefing, or ErrNotFound.
func (s *KVStore) Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error) {
	return s.get(ctx, kvLatestKey(tenant, conv), "latest", ref(tenant, conv, ""))
}

// LatestJSON returns the JSON of the conversation's newest briefing as
// stored (see Decode), or ErrNotFound.
func (s *KVStore) LatestJSON(ctx context.Context, tenant, conv string) ([]byte, error) {
	return s.getJSON(ctx, kvLatestKey(tenant, conv), "latest", ref(tenant, conv, ""))
}

// Get returns the conversation's briefing for the given boundary id, or
// ErrNotFound.
func (s *KVStore) Get(ctx context.Context, tenant, conv, boundaryID string) (*briefd.Briefing, error) {
	return s.get(ctx, kvBoundaryKey(tenant, conv, boundaryID), "get", ref(tenant, conv, boundaryID))
}

func (s *KVStore) get(ctx context.Context, key, op, what string) (*briefd.Briefing, error) {
	data, err := s.getJSON(ctx, key, op, what)
	if err != nil {
		return nil, err
	}
	b, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("cache: %s %s: %w", op, what, err)
	}
	return b, nil
}

func (s *KVStore) getJSON(ctx context.Context, key, op, what string) ([]byte, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("cache: %s %s: %w", op, what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %s %s: %w", op, what, err)
	}
	return e.Value(), nil
}
