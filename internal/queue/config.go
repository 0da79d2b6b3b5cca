package queue

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/briefd/briefd"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures the streams, the shared consumer, the publisher and the
// consumer loop. The zero value is usable: [Config.WithDefaults] fills every
// zero field with the default its comment names.
type Config struct {
	// Prefix is the first subject token(s) of every subject, e.g.
	// "briefd" gives briefd.body.>, briefd.snap.> and briefd.dead.>.
	// Default "briefd". Stream names derive from it (BRIEFD_BODIES, ...).
	Prefix string
	// Replicas of the snapshot and body streams in a cluster. Default 1;
	// 3 on a 3-node cluster, where a lost node then loses nothing.
	Replicas int
	// DeadReplicas of the dead-letter stream and the requeue bucket.
	// Default Replicas.
	DeadReplicas int
	// (How often the servers fsync is their own setting, jetstream
	// { sync_interval: always } in nats-server.conf, 2.10 or later; see
	// the README's durability section.)
	// Storage of the streams. Default jetstream.FileStorage (the zero
	// value of jetstream.StorageType).
	Storage jetstream.StorageType
	// MaxAge is how long bodies and snapshots are kept; it bounds replay.
	// Default 7 days. A publisher re-sends a conversation's bodies, with a
	// full manifest, once they are older than half the streams' MaxAge,
	// so live conversations never lose them; it reads the streams' MaxAge
	// from the server (see Publisher.RefreshLimits) and uses this value
	// only until the first successful read.
	MaxAge time.Duration
	// DeadMaxAge is how long dead-letter records are kept. Default 30 days.
	DeadMaxAge time.Duration
	// DuplicateWindow is JetStream's Nats-Msg-Id de-duplication window.
	// Default 2 minutes.
	DuplicateWindow time.Duration
	// MaxBodyBytes is the largest canonical message body; a larger one is
	// rejected with ErrBodyTooLarge before anything is published. Default
	// 16 MiB.
	MaxBodyBytes int
	// Compress bodies with zstd when it saves space. Default on; set
	// NoCompression to send plain JSON.
	NoCompression bool
	// FullEvery is the fewest delta snapshots a publisher writes before a
	// full manifest, which bounds the chain a reader resolves. Long
	// histories wait until the deltas add up to an eighth of a full list,
	// and never more than 8 x FullEvery snapshots. Default 64.
	FullEvery int
	// Conversations is how many conversations a Publisher remembers (LRU).
	// A forgotten conversation's next snapshot re-sends its bodies and a
	// full manifest. Default 4096.
	Conversations int
	// AckTimeout bounds the wait for the acks of one publish attempt of a
	// snapshot (its bodies and manifest); a missing ack then counts as a
	// failed publish. Default 30s. Give the JetStream context the same
	// bound (jetstream.WithPublishAsyncTimeout) so that nats.go forgets a
	// lost ack too; the client does.
	AckTimeout time.Duration
	// PublishRetries is how many times a publisher re-sends a body or a
	// manifest whose publish failed (an error ack, a lost ack, a
	// disconnect) before it reports the snapshot failed. Bodies still
	// missing after that are re-sent with the conversation's next
	// snapshot. Default 3; negative: no re-sends.
	PublishRetries int
	// PublishRetryFor is how long the conversation's newest snapshot
	// keeps being re-sent once its PublishRetries are spent: nothing newer
	// would carry its messages, so an outage of the servers (a restart, a
	// leader election) must not cost the agent its last state. It also
	// sends the bodies that earlier snapshots failed to store. Default 2
	// minutes (JetStream's duplicate window, within which a re-sent copy
	// that was stored after all is dropped); negative: off.
	PublishRetryFor time.Duration
	// PublishRetryWait is the wait before the first re-send; later waits
	// grow exponentially (with jitter) up to 8 times it. Default 250ms.
	PublishRetryWait time.Duration
	// LimitsRefresh is how often a publisher re-reads the streams' MaxAge
	// and the body stream's maximum message size (the server's
	// max_payload is read from the connection at every publish). Default
	// 1 minute.
	LimitsRefresh time.Duration

	// Consumer is the durable pull consumer shared by all workers.
	// Default "briefd-workers".
	Consumer string
	// AckWait is how long the server waits for an ack before redelivering.
	// Default 30s. InProgress is sent every AckWait/3 while a handler runs.
	AckWait time.Duration
	// MaxDeliver is how many times a snapshot is tried before it is
	// dead-lettered. Default 5.
	MaxDeliver int
	// MaxRequeues bounds the redeliveries that do not count as attempts:
	// a snapshot handed back at shutdown or deferred because its tenant
	// is at its cap. Past MaxDeliver attempts plus MaxRequeues deliveries
	// a snapshot is dead-lettered whatever happened. Default 50.
	MaxRequeues int
	// TenantConcurrency caps the handlers one tenant may hold in one
	// process while another tenant has work, so a flood from one tenant
	// cannot take every slot. Default Concurrency/2 (at least 1). A
	// tenant alone uses every slot but one, which looks ahead in the
	// queue for other tenants (deferring the alone tenant's snapshots it
	// meets, with a growing delay; deferrals are not attempts).
	TenantConcurrency int
	// Backoff are the NakWithDelay delays after a transient error, indexed
	// by delivery count (the last repeats). Default 1s, 5s, 15s, 30s. They
	// are client-side naks, not the consumer's BackOff, so AckWait keeps
	// its meaning.
	Backoff []time.Duration
	// MaxAckPending bounds unacked snapshots across all workers.
	// Default 1000.
	MaxAckPending int
	// MaxHandleTime bounds one handler run; past it the handler's context
	// is cancelled and the snapshot retried with backoff. Default 10
	// minutes; it must be positive.
	MaxHandleTime time.Duration
	// Concurrency is the number of handlers running at once in one
	// process. Default 4.
	Concurrency int
	// PullMaxMessages bounds the snapshots one pull request asks for (never more than the free handler slots).
	// Default Concurrency. Bounded pulls matter: unbounded pulls of large
	// messages collapse throughput (see docs/protocol.md).
	PullMaxMessages int
	// PullMaxBytes, when > 0, bounds the pull in bytes instead of
	// messages (the two are exclusive).
	PullMaxBytes int
	// ResolvedCacheBytes bounds the consumer's cache of resolved lists
	// (LRU by bytes): per conversation, the newest list it resolved with
	// its messages decoded, about 1.2 times the history's JSON. The next
	// snapshot of a conversation extends it, so the worker fetches and
	// decodes only the messages a turn adds; a conversation whose list was
	// evicted is resolved whole again. Size it to the histories of the
	// conversations active at once. Default 256 MiB: about 500
	// conversations of 100k tokens, or 50 of 1M.
	ResolvedCacheBytes int
	// BodyCacheBytes bounds the consumer's cache of bodies (LRU by bytes).
	// Default 64 MiB.
	BodyCacheBytes int
	// MaxChain is the longest base chain a reader follows. Default 1024.
	MaxChain int
	// MaxMessages bounds the messages a snapshot may name; checked
	// before any body is fetched. Default briefd.DefaultMaxMessages.
	MaxMessages int
	// MaxSnapshotBytes bounds the sum of a snapshot's canonical body
	// bytes; checked as bodies are fetched, from their declared sizes,
	// before any is decompressed. Default briefd.DefaultMaxTotalBytes.
	MaxSnapshotBytes int

	// Logger receives the queue's logs. Default slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultPrefix         = "briefd"
	DefaultMaxAge         = 7 * 24 * time.Hour
	DefaultDeadMaxAge     = 30 * 24 * time.Hour
	DefaultDuplicates     = 2 * time.Minute
	DefaultMaxBodyBytes   = 16 << 20
	DefaultFullEvery      = 64
	DefaultConversations  = 4096
	DefaultAckTimeout     = 30 * time.Second
	DefaultPublishRetries = 3
	DefaultRetryWait      = 250 * time.Millisecond
	DefaultRetryFor       = 2 * time.Minute
	DefaultLimitsRefresh  = time.Minute
	DefaultConsumer       = "briefd-workers"
	DefaultAckWait        = 30 * time.Second
	DefaultMaxDeliver     = 5
	DefaultMaxAckPending  = 1000
	DefaultConcurrency    = 4
	DefaultMaxHandleTime  = 10 * time.Minute
	DefaultResolvedCache  = 256 << 20
	DefaultBodyCacheBytes = 64 << 20
	DefaultMaxChain       = 1024
	DefaultMaxRequeues    = 50
)

// DefaultBackoff are the default nak delays.
var DefaultBackoff = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.DeadReplicas = cmp.Or(c.DeadReplicas, c.Replicas)
	c.MaxAge = cmp.Or(c.MaxAge, DefaultMaxAge)
	c.DeadMaxAge = cmp.Or(c.DeadMaxAge, DefaultDeadMaxAge)
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, DefaultDuplicates)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.FullEvery = cmp.Or(c.FullEvery, DefaultFullEvery)
	c.Conversations = cmp.Or(c.Conversations, DefaultConversations)
	c.AckTimeout = cmp.Or(c.AckTimeout, DefaultAckTimeout)
	c.PublishRetries = cmp.Or(c.PublishRetries, DefaultPublishRetries)
	c.PublishRetryWait = cmp.Or(c.PublishRetryWait, DefaultRetryWait)
	c.PublishRetryFor = cmp.Or(c.PublishRetryFor, DefaultRetryFor)
	c.LimitsRefresh = cmp.Or(c.LimitsRefresh, DefaultLimitsRefresh)
	c.Consumer = cmp.Or(c.Consumer, DefaultConsumer)
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, DefaultMaxDeliver)
	c.MaxRequeues = cmp.Or(c.MaxRequeues, DefaultMaxRequeues)
	if len(c.Backoff) == 0 {
		c.Backoff = DefaultBackoff
	}
	c.MaxAckPending = cmp.Or(c.MaxAckPending, DefaultMaxAckPending)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.TenantConcurrency = cmp.Or(c.TenantConcurrency, max(1, c.Concurrency/2))
	c.MaxHandleTime = cmp.Or(c.MaxHandleTime, DefaultMaxHandleTime)
	if c.PullMaxBytes <= 0 {
		c.PullMaxMessages = cmp.Or(c.PullMaxMessages, c.Concurrency)
	}
	c.ResolvedCacheBytes = cmp.Or(c.ResolvedCacheBytes, DefaultResolvedCache)
	c.BodyCacheBytes = cmp.Or(c.BodyCacheBytes, DefaultBodyCacheBytes)
	c.MaxChain = cmp.Or(c.MaxChain, DefaultMaxChain)
	c.MaxMessages = cmp.Or(c.MaxMessages, briefd.DefaultMaxMessages)
	c.MaxSnapshotBytes = cmp.Or(c.MaxSnapshotBytes, briefd.DefaultMaxTotalBytes)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ConfigError names the field of a Config that is invalid.
type ConfigError struct {
	Field string
	Value any
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("queue: config %s=%v: %v", e.Field, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Validate checks c after WithDefaults.
func (c Config) Validate() error {
	for _, tok := range strings.Split(c.Prefix, ".") {
		if !ValidToken(tok) {
			return &ConfigError{"Prefix", c.Prefix, errors.New("each dot-separated token must be 1-128 characters of [A-Za-z0-9_-]")}
		}
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"Replicas", int64(c.Replicas)}, {"DeadReplicas", int64(c.DeadReplicas)}, {"MaxAge", int64(c.MaxAge)}, {"DeadMaxAge", int64(c.DeadMaxAge)},
		{"DuplicateWindow", int64(c.DuplicateWindow)}, {"MaxBodyBytes", int64(c.MaxBodyBytes)},
		{"FullEvery", int64(c.FullEvery)}, {"Conversations", int64(c.Conversations)},
		{"AckTimeout", int64(c.AckTimeout)}, {"PublishRetryWait", int64(c.PublishRetryWait)},
		{"LimitsRefresh", int64(c.LimitsRefresh)},
		{"AckWait", int64(c.AckWait)}, {"MaxDeliver", int64(c.MaxDeliver)}, {"MaxAckPending", int64(c.MaxAckPending)},
		{"Concurrency", int64(c.Concurrency)}, {"ResolvedCacheBytes", int64(c.ResolvedCacheBytes)},
		{"BodyCacheBytes", int64(c.BodyCacheBytes)}, {"MaxChain", int64(c.MaxChain)},
		{"MaxHandleTime", int64(c.MaxHandleTime)}, {"MaxRequeues", int64(c.MaxRequeues)},
		{"TenantConcurrency", int64(c.TenantConcurrency)}, {"MaxMessages", int64(c.MaxMessages)},
		{"MaxSnapshotBytes", int64(c.MaxSnapshotBytes)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return &ConfigError{p.name, p.v, errors.New("must be > 0")}
		}
	}
	if c.DuplicateWindow > c.MaxAge {
		return &ConfigError{"DuplicateWindow", c.DuplicateWindow, errors.New("must not exceed MaxAge")}
	}
	if c.PullMaxMessages > 0 && c.PullMaxBytes > 0 {
		return &ConfigError{"PullMaxBytes", c.PullMaxBytes, errors.New("PullMaxMessages and PullMaxBytes are exclusive")}
	}
	for _, d := range c.Backoff {
		if d < 0 {
			return &ConfigError{"Backoff", c.Backoff, errors.New("delays must be >= 0")}
		}
	}
	return nil
}

// StreamNames are the names of the streams and the bucket of a prefix.
type StreamNames struct {
	Bodies, Snapshots, Dead string
	// Requeues is the key-value bucket counting each snapshot's
	// redeliveries that are not attempts (see Config.MaxRequeues).
	Requeues string
}

// Streams returns the names derived from c.Prefix, e.g. BRIEFD_BODIES.
func (c Config) Streams() StreamNames {
	base := StreamBase(c.Prefix)
	return StreamNames{Bodies: base + "_BODIES", Snapshots: base + "_SNAPSHOTS", Dead: base + "_DEAD", Requeues: base + "_REQUEUES"}
}

// StreamBase is the upper-cased prefix every stream and bucket name of a
// deployment starts with: "briefd" gives BRIEFD, "prod.briefd"
// PROD_BRIEFD. Prefixes that differ only in case or in '.', '-' and '_'
// map to the same names: give deployments on one account prefixes that
// differ otherwise.
func StreamBase(prefix string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(cmp.Or(prefix, DefaultPrefix)))
}

func (c Config) subjects() Subjects { return Subjects{Prefix: c.Prefix} }

func (c Config) backoff(delivered uint64) time.Duration {
	i := int(delivered) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(c.Backoff) {
		i = len(c.Backoff) - 1
	}
	return c.Backoff[i]
}
