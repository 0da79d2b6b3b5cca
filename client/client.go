// Package client is the agent side of briefd: an agent publishes a snapshot
// of its conversation after each turn with [Client.Publish], which never
// waits for the compaction workers, and before its next model call asks
// [Client.Prepare] for the history to send: the same history with the
// messages before the latest briefing's boundary replaced by one
// <compacted-history> message, when a briefing applies.
//
//	c, err := client.New(nc, client.WithTenant("acme"), client.WithWatch())
//	...
//	msgs, _, err := c.Prepare(ctx, conv, history) // before the model call
//	reply := callModel(msgs)
//	history = append(history, reply...)
//	err = c.Publish(ctx, conv, history)            // after the turn; returns at once
//
// Briefings are read from Redis ([WithRedis]) or, by default, from the
// JetStream key-value bucket of the embedded mode ([WithKV]).
//
// A briefing replaces messages; the streams keep them. [Client.Expand] and
// [Client.Search] read the originals back, behind any past boundary, and
// [ExpandTool] with [Client.HandleExpandTool] let the model do the same
// through a tool call (the briefing's last line names the compacted range).
package client

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/queue"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// Defaults of the options.
const (
	// DefaultTenant is the tenant of a client made without WithTenant.
	DefaultTenant = "default"
	// DefaultBuffer is how many snapshots may wait for their acks at once.
	DefaultBuffer = 1024
	// DefaultAckTimeout bounds the wait for one snapshot's acks.
	DefaultAckTimeout = 30 * time.Second
	// DefaultSetupTimeout bounds the work New does on the network (reading
	// the streams' limits, opening the key-value bucket).
	DefaultSetupTimeout = 10 * time.Second
)

var (
	// ErrBufferFull is returned by Publish when DefaultBuffer (or the
	// WithBuffer size) snapshots are still waiting for their acks and none
	// of them is superseded: when the buffer is full, Publish first drops
	// (stops waiting for) the oldest snapshot of the same conversation,
	// which the new one supersedes, else the oldest snapshot of a
	// conversation that has a newer one in the buffer, so the newest
	// snapshot of a conversation is never the one dropped. Only a buffer
	// holding the newest snapshots of as many conversations refuses: the
	// snapshot is not sent rather than making the agent's turn wait. The
	// next Publish of the conversation carries every message again.
	ErrBufferFull = errors.New("client: publish buffer full")
	// ErrNoBriefing is returned by Latest when the conversation has no
	// briefing yet.
	ErrNoBriefing = errors.New("client: no briefing")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("client: closed")
	// ErrInvalidID is returned for a tenant or conversation id that is not
	// 1-128 characters of [A-Za-z0-9_-] (ids are NATS subject tokens).
	ErrInvalidID = errors.New("client: id must be 1-128 characters of [A-Za-z0-9_-]")
)

// store is what the client calls on a briefing store; both cache stores
// satisfy it.
type store interface {
	Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error)
	// LatestJSON returns the latest briefing's JSON as stored.
	LatestJSON(ctx context.Context, tenant, conv string) ([]byte, error)
	Watch(ctx context.Context, tenant, conv string) (<-chan *briefd.Briefing, error)
	// WatchErr is the error of the store's shared watch subscription
	// while it is down, or nil.
	WatchErr() error
	Status(ctx context.Context, tenant, conv string) (*briefd.Status, error)
}

// Option configures a Client in New.
type Option func(*options)

type options struct {
	tenant        string
	rdb           redis.UniversalClient
	prefix        string
	buffer        int
	ackTimeout    time.Duration
	retryFor      time.Duration
	logger        *slog.Logger
	onError       func(error)
	model         string
	contextWindow int
	watch         bool
	kvBucket      string
	expand        ExpandLimits
	control       briefd.Control
	numbering     bool
}

// WithTenant sets the tenant every snapshot and lookup belongs to. Default
// "default". NATS permissions can confine a tenant's agents to its subjects.
func WithTenant(tenant string) Option { return func(o *options) { o.tenant = tenant } }

// WithRedis reads briefings from Redis (single node or cluster). The caller
// keeps owning rdb and closes it after Close.
func WithRedis(rdb redis.UniversalClient) Option { return func(o *options) { o.rdb = rdb } }

// WithKV reads briefings from the JetStream key-value bucket of the
// embedded mode (the default when WithRedis is not given; of WithRedis and
// WithKV, the last given wins). New creates the
// bucket with its default configuration if it does not exist yet.
func WithKV() Option { return func(o *options) { o.rdb = nil } }

// WithKVBucket names the key-value bucket (default "briefd_briefings").
func WithKVBucket(bucket string) Option { return func(o *options) { o.kvBucket = bucket } }

// WithPrefix sets the subject prefix and Redis key prefix; it must match
// the workers'. Default "briefd".
func WithPrefix(prefix string) Option { return func(o *options) { o.prefix = prefix } }

// WithBuffer bounds how many published snapshots may wait for their acks
// at once; beyond it Publish drops superseded snapshots, or returns
// ErrBufferFull. Default 1024.
func WithBuffer(n int) Option { return func(o *options) { o.buffer = n } }

// WithAckTimeout bounds the wait for the acks of one publish attempt of a
// snapshot; a body or manifest not acked in time is re-sent (up to 3
// times), then reported as an error. Default 30s.
func WithAckTimeout(d time.Duration) Option { return func(o *options) { o.ackTimeout = d } }

// WithRetryFor sets how long the newest snapshot of a conversation keeps
// being re-sent while its publish fails (a NATS restart, a leader
// election): nothing newer would carry its messages. Older snapshots are
// re-sent three times; the newer one sends what they could not. Default
// 2 minutes; negative: no more than three re-sends either.
func WithRetryFor(d time.Duration) Option { return func(o *options) { o.retryFor = d } }

// WithLogger sets the logger of the client and its publisher. Default
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithErrorHandler sets a function called with every error of an
// asynchronous publish (a snapshot not stored after its re-sends). It is
// called from the goroutine that owns the snapshot's acks, one error at a
// time, and must not block long. Errors also reach [Client.Err] and
// [Client.Flush].
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithModel sets the model named in every snapshot; workers pick the token
// encoding from it.
func WithModel(model string) Option { return func(o *options) { o.model = model } }

// WithContextWindow sets the context window (tokens) named in every
// snapshot; workers size compaction by it.
func WithContextWindow(n int) Option { return func(o *options) { o.contextWindow = n } }

// WithWatch makes the client keep each conversation's latest briefing in
// memory, fed by a watch on the store started at the conversation's first
// Publish or Prepare, so that Prepare needs no round trip while the
// watch is live. All watched conversations of a client share one
// subscription (one Redis connection, or one bucket consumer); a
// conversation is watched until Forget or Close.
func WithWatch() Option { return func(o *options) { o.watch = true } }

// Client publishes snapshots and reads briefings for one tenant. All its
// methods are safe for concurrent use; publishes of one conversation are
// serialized in call order.
type Client struct {
	tenant  string
	prefix  string
	js      jetstream.JetStream
	pub     *queue.Publisher
	store   store
	opts    []queue.PublishOption
	log     *slog.Logger
	onError func(error)
	watch   bool
	buffer  int

	expandLimits ExpandLimits
	resolverOnce sync.Once
	res          *queue.Resolver // reads the originals (Expand, Search)
	scansMu      sync.Mutex
	scans        map[string]*scan // kept scans of the originals, by conversation
	scanOrder    []string         // their conversations, oldest first

	ctx    context.Context // the watches'
	cancel context.CancelFunc
	wg     sync.WaitGroup // the watch goroutines, waited for by Close

	reportMu sync.Mutex // one error handler call at a time

	// convs is what the client keeps of each conversation between turns
	// (LRU); seed hashes briefings' JSON.
	convMu  sync.Mutex
	convs   map[string]*conversation
	convLRU *list.List
	seed    maphash.Seed

	mu       sync.Mutex
	closed   bool
	inflight int                    // buffer slots in use
	byConv   map[string][]*inflight // in-flight snapshots, oldest first
	idle     chan struct{}          // closed when inflight drops to 0
	err      error                  // first async error since the last Flush
	stats    Stats
	watches  map[string]*watched
	control  briefd.Control            // WithControl
	controls map[string]briefd.Control // SetControl, by conversation

	numberMu sync.Mutex
	numberer *briefd.Numberer // WithNumbering; nil without
}

// inflight is a snapshot holding a buffer slot.
type inflight struct {
	conv    string
	dropped bool // superseded: its slot was given to a newer snapshot
}

// Stats counts what became of the snapshots handed to Publish.
type Stats struct {
	// Pending snapshots are waiting for their acks.
	Pending int
	// Stored snapshots were acked, with every body they name.
	Stored uint64
	// Failed snapshots were not stored after re-sends; each was reported
	// to the error handler, Err and Flush.
	Failed uint64
	// Superseded snapshots were dropped from a full buffer for a newer
	// snapshot of their conversation (their acks are no longer awaited),
	// or were not stored and not re-sent because a newer one had been
	// published: the newer snapshot carries every message.
	Superseded uint64
	// Refused snapshots got ErrBufferFull.
	Refused uint64
}

type watched struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed after the store's first answer
	mu     sync.Mutex
	latest *briefd.Briefing
	err    error // why the watch could not start (set before ready closes)
}

// New returns a client publishing on nc, which the caller keeps owning and
// closes after Close. The streams must exist (workers create them at
// start-up); with the key-value store New opens or creates the bucket.
// Errors: ErrInvalidID for a bad tenant, or a wrapped JetStream error.
func New(nc *nats.Conn, opts ...Option) (*Client, error) {
	o := options{tenant: DefaultTenant, buffer: DefaultBuffer, ackTimeout: DefaultAckTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if !queue.ValidToken(o.tenant) {
		return nil, fmt.Errorf("client: tenant %q: %w", o.tenant, ErrInvalidID)
	}
	if err := o.control.Validate(); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if nc == nil {
		return nil, errors.New("client: nil NATS connection")
	}
	if o.buffer <= 0 {
		o.buffer = DefaultBuffer
	}
	if o.ackTimeout <= 0 {
		o.ackTimeout = DefaultAckTimeout
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	// Each snapshot is a manifest plus its new bodies: leave the async
	// window room for a full buffer of them, and let a lost ack fail.
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(max(4000, 16*o.buffer)),
		jetstream.WithPublishAsyncTimeout(o.ackTimeout))
	if err != nil {
		return nil, fmt.Errorf("client: jetstream: %w", err)
	}
	c := &Client{
		tenant:   o.tenant,
		prefix:   o.prefix,
		js:       js,
		pub:      queue.NewPublisher(js, queue.Config{Prefix: o.prefix, Logger: o.logger, AckTimeout: o.ackTimeout, PublishRetryFor: o.retryFor}),
		log:      o.logger,
		onError:  o.onError,
		watch:    o.watch,
		buffer:   o.buffer,
		byConv:   map[string][]*inflight{},
		watches:  map[string]*watched{},
		control:  o.control,
		controls: map[string]briefd.Control{},
		convs:    map[string]*conversation{},
		convLRU:  list.New(),
		seed:     maphash.MakeSeed(),

		expandLimits: o.expand.withDefaults(),
	}
	if o.numbering {
		c.numberer = new(briefd.Numberer)
	}
	// Read the streams' MaxAge and message size now, so that even the
	// first snapshots follow the workers' configuration; the publisher
	// re-reads them every minute. The streams may not exist yet (workers
	// create them): the publisher keeps trying.
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSetupTimeout)
	err = c.pub.RefreshLimits(ctx)
	cancel()
	switch {
	case errors.Is(err, queue.ErrNoStream):
		o.logger.Warn("briefd client: the briefd streams do not exist yet; workers create them when they start (worker run), and snapshots published before fail with queue.ErrNoStream", "err", err)
	case err != nil:
		o.logger.Warn("briefd client: cannot read the stream limits yet; retrying in the background", "err", err)
	}
	if o.model != "" {
		c.opts = append(c.opts, queue.WithModel(o.model))
	}
	if o.contextWindow > 0 {
		c.opts = append(c.opts, queue.WithContextWindow(o.contextWindow))
	}
	if o.rdb != nil {
		c.store = cache.NewRedisStore(o.rdb, cache.RedisConfig{Prefix: o.prefix})
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultSetupTimeout)
		kv, err := cache.OpenKVStore(ctx, js, cache.KVConfig{Bucket: o.kvBucket})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		c.store = kv
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Tenant returns the client's tenant.
func (c *Client) Tenant() string { return c.tenant }

// Publish hands a snapshot of conversation conv (the whole history as the
// agent holds it, spliced briefings included) to the publisher and returns
// without waiting for the server: only messages not sent before for conv
// are marshalled and sent. Publish reads history only while it runs: the
// agent may append to it, edit, drop or reorder messages as soon as
// Publish returns (a snapshot names its ordered list of message ids, so the
// next snapshot describes the change; an edited message is re-sent).
//
// A history that is the slice published last grown by append costs only
// its new messages: Publish does not read its earlier messages again. So
// edit or reorder published messages in a copy (slices.Clone(history)),
// or publish the edited slice before appending to it; an edit made in
// place and followed by an append is found only later (see
// queue.Publisher).
//
// The snapshot carries the client's control ([WithControl]), the
// conversation's ([Client.SetControl]) and opts, laid over one another
// (for example [CompactNow]).
//
// Publish checks only what is cheap: conv is a valid id, history is not
// empty and the control is valid; the workers validate the conversation
// and reject a bad one to the audit stream. When the buffer is full it
// drops a superseded snapshot (see ErrBufferFull). It returns
// ErrInvalidID, ErrBufferFull (nothing sent; the agent's turn is never
// blocked), ErrClosed, an error wrapping briefd.ErrInvalidControl, or an
// error from the publisher (a message over the body limit, a closed
// connection). Errors of the acks come later, after re-sends, through the
// error handler, Err and Flush.
func (c *Client) Publish(ctx context.Context, conv string, history []briefd.Message, opts ...PublishOption) error {
	if err := checkConv(conv); err != nil {
		return err
	}
	if len(history) == 0 {
		return fmt.Errorf("client: publish %s: empty history", conv)
	}
	history, err := c.number(history)
	if err != nil {
		return fmt.Errorf("client: publish %s: %w", conv, err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	ctl := c.controlLocked(conv, opts)
	if err := ctl.Validate(); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("client: publish %s: %w", conv, err)
	}
	if c.inflight >= c.buffer && !c.dropSupersededLocked(conv) {
		c.stats.Refused++
		c.mu.Unlock()
		return fmt.Errorf("client: publish %s: %w", conv, ErrBufferFull)
	}
	if c.inflight == 0 {
		c.idle = make(chan struct{})
	}
	c.inflight++
	in := &inflight{conv: conv}
	c.byConv[conv] = append(c.byConv[conv], in)
	c.mu.Unlock()
	if c.watch {
		c.ensureWatch(conv)
	}

	popts := c.opts
	if !ctl.IsZero() {
		popts = append(slices.Clip(popts), queue.WithControl(ctl))
	}
	pend, err := c.pub.PublishAsync(ctx, c.tenant, conv, history, popts...)
	if err != nil {
		c.release(in, nil)
		return fmt.Errorf("client: publish %s: %w", conv, err)
	}
	// The goroutine that owns the snapshot's acks calls back once it is
	// settled (re-sends included).
	pend.OnDone(func(_ queue.PublishResult, err error) {
		if err != nil {
			err = fmt.Errorf("client: publish %s: %w", conv, err)
		}
		c.release(in, err)
	})
	return nil
}

// dropSupersededLocked frees a buffer slot for a snapshot of conv: the
// oldest in-flight snapshot of conv, which the new one supersedes, else
// the oldest of a conversation with a newer one in flight. It reports
// false when every snapshot in the buffer is its conversation's newest.
// The caller holds c.mu.
func (c *Client) dropSupersededLocked(conv string) bool {
	victim := ""
	if len(c.byConv[conv]) > 0 {
		victim = conv
	} else {
		for k, ins := range c.byConv {
			if len(ins) > 1 {
				victim = k
				break
			}
		}
	}
	if victim == "" {
		return false
	}
	in := c.byConv[victim][0]
	c.removeLocked(in)
	in.dropped = true
	c.inflight--
	c.stats.Superseded++
	return true
}

func (c *Client) removeLocked(in *inflight) {
	ins := c.byConv[in.conv]
	for i, x := range ins {
		if x == in {
			ins = append(ins[:i:i], ins[i+1:]...)
			break
		}
	}
	if len(ins) == 0 {
		delete(c.byConv, in.conv)
	} else {
		c.byConv[in.conv] = ins
	}
}

// release settles one snapshot: it frees its slot unless a newer
// snapshot took it, and reports err.
func (c *Client) release(in *inflight, err error) {
	c.mu.Lock()
	if in.dropped {
		c.mu.Unlock()
		if err != nil {
			// The newer snapshot carries every message; its own outcome is
			// what the agent hears about.
			c.log.Debug("briefd client: superseded snapshot failed", "tenant", c.tenant, "err", err)
		}
		return
	}
	c.removeLocked(in)
	c.inflight--
	// Flush waiters are released after the error handler ran, so that a
	// Flush that returns an error has reported it.
	var idle chan struct{}
	if c.inflight == 0 {
		idle = c.idle
	}
	defer func() {
		if idle != nil {
			close(idle)
		}
	}()
	if errors.Is(err, queue.ErrSuperseded) {
		// Not stored, but a newer snapshot of the conversation, which
		// names every message, was published after it.
		c.stats.Superseded++
		c.mu.Unlock()
		return
	}
	if err != nil {
		c.stats.Failed++
		if c.err == nil {
			c.err = err
		}
	} else {
		c.stats.Stored++
	}
	c.mu.Unlock()
	if err != nil {
		c.log.Warn("briefd client: async publish failed", "tenant", c.tenant, "err", err)
		if c.onError != nil {
			c.reportMu.Lock()
			c.onError(err)
			c.reportMu.Unlock()
		}
	}
}

// Err returns the first error of an asynchronous publish since the client
// was made or since the last Flush, or nil. It does not clear it.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Pending returns how many published snapshots are waiting for their acks.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// Stats returns what became of the snapshots handed to Publish so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Pending = c.inflight
	return st
}

// Flush waits until every snapshot published so far is acked or failed,
// then returns the first asynchronous error since the last Flush (and
// clears it), or ctx's error if ctx ends first.
func (c *Client) Flush(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle // closed once the last snapshot settled and was reported
	c.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("client: flush: %w", ctx.Err())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

// Latest returns the conversation's newest briefing from the store (always
// a round trip; Prepare uses the watched copy when there is one). The
// briefing read last for the conversation is not decoded again while the
// store holds the same bytes: a turn costs the round trip. Errors:
// ErrInvalidID, ErrNoBriefing, ErrClosed, or a wrapped store error.
func (c *Client) Latest(ctx context.Context, conv string) (*briefd.Briefing, error) {
	if !queue.ValidToken(conv) {
		return nil, fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	data, err := c.store.LatestJSON(ctx, c.tenant, conv)
	if errors.Is(err, cache.ErrNotFound) {
		return nil, fmt.Errorf("client: latest %s: %w", conv, ErrNoBriefing)
	}
	if err != nil {
		return nil, fmt.Errorf("client: latest %s: %w", conv, err)
	}
	b, err := c.conversation(conv).decode(c.seed, data)
	if err != nil {
		return nil, fmt.Errorf("client: latest %s: %w", conv, err)
	}
	return b, nil
}

// decode returns the briefing data holds: the one decoded last, copied,
// when data is the same (a briefing changes once in many turns).
func (e *conversation) decode(seed maphash.Seed, data []byte) (*briefd.Briefing, error) {
	sum := maphash.Bytes(seed, data)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.latest == nil || e.latestSum != sum || e.latestLen != len(data) {
		b, err := cache.Decode(data)
		if err != nil {
			return nil, err
		}
		e.latest, e.latestSum, e.latestLen = b, sum, len(data)
	}
	b := *e.latest
	b.CompactedIDs = slices.Clone(b.CompactedIDs)
	b.Structured = slices.Clone(b.Structured)
	return &b, nil
}

// Watch returns a channel that delivers the conversation's current latest
// briefing, if any, then each newer one (the briefing of a newer snapshot; a
// slow reader skips to the newest). It is closed when ctx ends. Errors:
// ErrInvalidID, ErrClosed, or a wrapped store error.
func (c *Client) Watch(ctx context.Context, conv string) (<-chan *briefd.Briefing, error) {
	if !queue.ValidToken(conv) {
		return nil, fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	ch, err := c.store.Watch(ctx, c.tenant, conv)
	if err != nil {
		return nil, fmt.Errorf("client: watch %s: %w", conv, err)
	}
	return ch, nil
}

// Prepare returns the history to send to the model this turn: history
// spliced with the conversation's latest briefing when one applies, with
// that briefing; otherwise history itself and a nil briefing. A briefing
// does not apply when history no longer holds its boundary or nothing
// precedes it but pinned messages; neither is an error. A history that
// already carries the briefing comes back equal (splicing is idempotent).
//
// With WithWatch, Prepare reads the briefing kept in memory by the
// conversation's watch (started on first use; that first call waits for
// the store's first answer), so a turn costs no round trip. While the
// watch's subscription is down (Redis or NATS unreachable), and without
// WithWatch, Prepare calls Latest: an unreachable store is an error either
// way, never a silent "no briefing". Errors: ErrInvalidID, ErrClosed, a
// store error, or a splice error (the history is invalid); history is
// returned with them.
//
// Prepare validates a conversation's history as it grows: on the slice it
// saw last, grown by append, it checks the new messages only, and the
// splice checks only what it adds (see briefd.Validator), so a turn costs
// the turn, not the history. Another slice is validated whole; edit
// messages it already saw in a copy, as for Publish.
func (c *Client) Prepare(ctx context.Context, conv string, history []briefd.Message) ([]briefd.Message, *briefd.Briefing, error) {
	return c.prepare(ctx, nil, false, conv, history)
}

// PrepareInto is [Client.Prepare] writing a spliced result into dst's
// array, as append(dst[:0], ...) would, instead of a new one. It is for an
// agent that is done with a turn's prepared history before it prepares the
// next (it sent it to the model): it hands that result back as dst, gives
// it up (dst must not be read or kept after the call, since the new result
// overwrites it) and owns the new one. A turn then costs its new
// messages: those dst already holds at their place in the result are not
// copied again, and nothing is allocated while dst has room (a new array
// has room for some turns). Prepare instead returns a new slice every
// time, which costs a copy of every kept message (see
// briefd.Validator.SpliceInto).
//
// When no briefing applies, PrepareInto returns history itself, as Prepare
// does, and leaves dst alone; a dst that shares memory with history is not
// written (a new array is used). Everything else is as for Prepare.
func (c *Client) PrepareInto(ctx context.Context, dst []briefd.Message, conv string, history []briefd.Message) ([]briefd.Message, *briefd.Briefing, error) {
	return c.prepare(ctx, dst, true, conv, history)
}

// prepare is Prepare, or PrepareInto dst when into is set.
func (c *Client) prepare(ctx context.Context, dst []briefd.Message, into bool, conv string, history []briefd.Message) ([]briefd.Message, *briefd.Briefing, error) {
	history, err := c.number(history)
	if err != nil {
		return history, nil, fmt.Errorf("client: prepare %s: %w", conv, err)
	}
	var b *briefd.Briefing
	if c.watch {
		if !queue.ValidToken(conv) {
			return history, nil, fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
		}
		w, err := c.ensureWatch(conv)
		if err != nil {
			return history, nil, err
		}
		select {
		case <-w.ready:
		case <-ctx.Done():
			return history, nil, fmt.Errorf("client: prepare %s: %w", conv, ctx.Err())
		}
		w.mu.Lock()
		b, err = w.latest, w.err
		w.mu.Unlock()
		if err != nil {
			return history, nil, fmt.Errorf("client: prepare %s: %w", conv, err)
		}
		if err := c.store.WatchErr(); err != nil {
			// Briefings stored while the subscription is down are not
			// seen: ask the store, as without a watch.
			lb, err := c.Latest(ctx, conv)
			switch {
			case errors.Is(err, ErrNoBriefing):
			case err != nil:
				return history, nil, err
			default:
				b = w.offer(lb)
			}
		}
	} else {
		var err error
		b, err = c.Latest(ctx, conv)
		if errors.Is(err, ErrNoBriefing) {
			return history, nil, nil
		}
		if err != nil {
			return history, nil, err
		}
	}
	if b == nil {
		return history, nil, nil
	}
	out, err := c.splice(conv, dst, into, history, b)
	switch {
	case errors.Is(err, briefd.ErrBoundaryMissing), errors.Is(err, briefd.ErrNothingToSplice):
		return history, nil, nil
	case err != nil:
		return history, nil, fmt.Errorf("client: prepare %s: %w", conv, err)
	}
	return out, b, nil
}

// splice splices b into history, validating only what changed since the
// conversation's last Prepare: history is checked as it grows (see
// briefd.Validator) and the splice checks only what it adds. With into,
// dst is given up for the result (see briefd.Validator.SpliceInto).
func (c *Client) splice(conv string, dst []briefd.Message, into bool, history []briefd.Message, b *briefd.Briefing) ([]briefd.Message, error) {
	e := c.conversation(conv)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.grown(history) {
		e.v = briefd.NewValidator(briefd.Limits{})
	}
	if err := e.v.Add(history[e.v.Len():]...); err != nil {
		// What the splice replaces may be what is wrong: splice and
		// validate the result, as briefd.Splice does. Validated whole
		// next time.
		e.v = nil
		return briefd.Splice(history, b)
	}
	e.seen(history)
	if into {
		return e.v.SpliceInto(dst, history, b)
	}
	return e.v.Splice(history, b)
}

// conversation returns what the client keeps of conv between turns.
func (c *Client) conversation(conv string) *conversation {
	c.convMu.Lock()
	defer c.convMu.Unlock()
	if e, ok := c.convs[conv]; ok {
		c.convLRU.MoveToFront(e.elem)
		return e
	}
	e := &conversation{conv: conv}
	e.elem = c.convLRU.PushFront(e)
	c.convs[conv] = e
	for c.convLRU.Len() > maxConversations {
		old := c.convLRU.Remove(c.convLRU.Back()).(*conversation)
		delete(c.convs, old.conv)
	}
	return e
}

// maxConversations bounds the conversations whose state between turns a
// client keeps (LRU); a forgotten one's next Prepare validates its
// history whole and decodes its briefing.
const maxConversations = 4096

// conversation is what the client keeps of a conversation between turns:
// what Prepare validated of its history (a Validator that saw it, the
// address of the agent's slice, its last messages, held so that their
// strings stay what they were), and the latest briefing read (decoded,
// with a hash of its JSON).
type conversation struct {
	conv  string
	elem  *list.Element
	mu    sync.Mutex
	v     *briefd.Validator
	array uintptr
	last  []briefd.Message

	latest    *briefd.Briefing
	latestSum uint64
	latestLen int
}

// grown reports whether history is the slice validated last grown by
// append: the same array, longer, its last validated messages in place (a
// truncation followed by appends rewrites them). Messages validated
// before are not read again: like the publisher, Prepare takes an agent's
// history as append-only unless it is another slice (see Client.Publish).
func (e *conversation) grown(history []briefd.Message) bool {
	if e.v == nil || len(history) <= e.v.Len() || e.array != uintptr(unsafe.Pointer(unsafe.SliceData(history))) {
		return false
	}
	n := e.v.Len()
	for i, m := range e.last {
		if !sameMessage(&m, &history[n-len(e.last)+i]) {
			return false
		}
	}
	return true
}

// seen records history as validated.
func (e *conversation) seen(history []briefd.Message) {
	e.array = uintptr(unsafe.Pointer(unsafe.SliceData(history)))
	e.last = append(e.last[:0], history[max(0, len(history)-4):]...)
}

// sameMessage reports whether a and b hold the very same strings and
// slices (it reads no string bytes).
func sameMessage(a, b *briefd.Message) bool {
	same := func(x, y string) bool {
		return len(x) == len(y) && unsafe.StringData(x) == unsafe.StringData(y)
	}
	return same(a.ID, b.ID) && a.Role == b.Role && same(a.Content.Text, b.Content.Text) && same(a.ToolCallID, b.ToolCallID) &&
		a.Pinned == b.Pinned && len(a.Metadata) == len(b.Metadata) &&
		len(a.Content.Parts) == len(b.Content.Parts) && unsafe.SliceData(a.Content.Parts) == unsafe.SliceData(b.Content.Parts) &&
		len(a.ToolCalls) == len(b.ToolCalls) && unsafe.SliceData(a.ToolCalls) == unsafe.SliceData(b.ToolCalls)
}

// Splice is [briefd.Splice]: history with every non-pinned message before
// b's boundary replaced by one <compacted-history> user message. It never
// modifies history; see briefd.Splice for its errors.
func Splice(history []briefd.Message, b *briefd.Briefing) ([]briefd.Message, error) {
	return briefd.Splice(history, b)
}

// ensureWatch starts the conversation's background watch once.
func (c *Client) ensureWatch(conv string) (*watched, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if w, ok := c.watches[conv]; ok {
		c.mu.Unlock()
		return w, nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	w := &watched{cancel: cancel, ready: make(chan struct{})}
	c.watches[conv] = w
	c.wg.Add(1) // under c.mu: Close sets closed under it before it waits
	c.mu.Unlock()

	go func() {
		// The first Latest fills the copy at once; the watch then keeps
		// it fresh. Both only move forward. A store that cannot be reached
		// fails the Prepare calls waiting for this first answer, and the
		// next call tries again.
		defer c.wg.Done()
		defer cancel()
		ch, err := c.store.Watch(ctx, c.tenant, conv)
		if err == nil {
			var b *briefd.Briefing
			if b, err = c.store.Latest(ctx, c.tenant, conv); err == nil {
				w.offer(b)
			} else if errors.Is(err, cache.ErrNotFound) {
				err = nil
			}
		}
		if err != nil {
			c.log.Warn("briefd client: watch failed", "tenant", c.tenant, "conversation", conv, "err", err)
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			close(w.ready)
			c.forget(conv, w)
			return
		}
		close(w.ready)
		for b := range ch {
			w.offer(b)
		}
		c.forget(conv, w)
	}()
	return w, nil
}

// offer keeps b if it is newer than the kept briefing, and returns the
// kept one.
func (w *watched) offer(b *briefd.Briefing) *briefd.Briefing {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.latest == nil || cache.Newer(b, w.latest) {
		w.latest = b
	}
	return w.latest
}

func (c *Client) forget(conv string, w *watched) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watches[conv] == w {
		delete(c.watches, conv)
	}
}

// Forget stops the background watch of conv (see WithWatch), if any,
// drops its cached briefing, its control (SetControl) and what the
// publisher keeps of it (a later Publish sends a full snapshot). Call it
// when a conversation ends.
func (c *Client) Forget(conv string) {
	c.pub.Forget(c.tenant, conv)
	c.mu.Lock()
	w, ok := c.watches[conv]
	delete(c.watches, conv)
	delete(c.controls, conv)
	c.mu.Unlock()
	c.convMu.Lock()
	if e, ok := c.convs[conv]; ok {
		c.convLRU.Remove(e.elem)
		delete(c.convs, conv)
	}
	c.convMu.Unlock()
	if ok {
		w.cancel()
	}
}

// number gives messages without ids their position ids, with
// WithNumbering; without it, it returns history as is.
func (c *Client) number(history []briefd.Message) ([]briefd.Message, error) {
	if c.numberer == nil {
		return history, nil
	}
	c.numberMu.Lock()
	defer c.numberMu.Unlock()
	out, _, err := c.numberer.Number(history)
	return out, err
}

// checkConv returns an error wrapping ErrInvalidID when conv is not a
// valid conversation id.
func checkConv(conv string) error {
	if !queue.ValidToken(conv) {
		return fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close flushes pending publishes (waiting up to ctx), stops the watches,
// and returns Flush's error. The NATS connection
// and Redis client stay open: the caller owns them. Calls after the first
// return nil.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.Flush(ctx)
	c.cancel()
	c.wg.Wait() // watches end with c.ctx
	return err
}
