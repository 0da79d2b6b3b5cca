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
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	// DefaultSetupTimeout bounds the work New does on the network (opening
	// the key-value bucket).
	DefaultSetupTimeout = 10 * time.Second
)

var (
	// ErrBufferFull is returned by Publish when DefaultBuffer (or the
	// WithBuffer size) snapshots are still waiting for their acks: the
	// snapshot is dropped rather than making the agent's turn wait. The
	// next Publish of the conversation carries every message again, so
	// dropping one snapshot loses nothing but that compaction chance.
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
	Watch(ctx context.Context, tenant, conv string) (<-chan *briefd.Briefing, error)
}

// Option configures a Client in New.
type Option func(*options)

type options struct {
	tenant        string
	rdb           redis.UniversalClient
	prefix        string
	buffer        int
	ackTimeout    time.Duration
	logger        *slog.Logger
	onError       func(error)
	model         string
	contextWindow int
	watch         bool
	kvBucket      string
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
// at once; beyond it Publish returns ErrBufferFull. Default 1024.
func WithBuffer(n int) Option { return func(o *options) { o.buffer = n } }

// WithAckTimeout bounds the wait for one snapshot's acks; a snapshot not
// acked in time is reported as an error. Default 30s.
func WithAckTimeout(d time.Duration) Option { return func(o *options) { o.ackTimeout = d } }

// WithLogger sets the logger of the client and its publisher. Default
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithErrorHandler sets a function called with every error of an
// asynchronous publish (a failed or timed-out ack). It is called from the
// client's ack goroutine, one error at a time, and must not block long.
// Errors also reach [Client.Err] and [Client.Flush].
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithModel sets the model named in every snapshot; workers pick the token
// encoding from it.
func WithModel(model string) Option { return func(o *options) { o.model = model } }

// WithContextWindow sets the context window (tokens) named in every
// snapshot; workers size compaction by it.
func WithContextWindow(n int) Option { return func(o *options) { o.contextWindow = n } }

// WithWatch makes the client keep each conversation's latest briefing in
// memory, fed by a watch on the store started at the conversation's first
// Publish or Prepare, so that Prepare needs no round trip. Each watched
// conversation holds one subscription until Forget or Close.
func WithWatch() Option { return func(o *options) { o.watch = true } }

// Client publishes snapshots and reads briefings for one tenant. All its
// methods are safe for concurrent use; publishes of one conversation are
// serialized in call order.
type Client struct {
	tenant     string
	pub        *queue.Publisher
	store      store
	opts       []queue.PublishOption
	ackTimeout time.Duration
	log        *slog.Logger
	onError    func(error)
	watch      bool

	slots  chan struct{}  // one token per snapshot waiting for acks
	acks   chan *inflight // the ack goroutine's queue
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}  // closed when the ack goroutine exits
	wg     sync.WaitGroup // the watch goroutines, waited for by Close

	mu       sync.Mutex
	closed   bool
	inflight int
	idle     chan struct{} // closed when inflight drops to 0
	err      error         // first async error since the last Flush
	watches  map[string]*watched
}

type inflight struct {
	conv string
	pend *queue.Pending
}

type watched struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed after the store's first answer
	mu     sync.Mutex
	latest *briefd.Briefing
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
		tenant:     o.tenant,
		pub:        queue.NewPublisher(js, queue.Config{Prefix: o.prefix, Logger: o.logger}),
		ackTimeout: o.ackTimeout,
		log:        o.logger,
		onError:    o.onError,
		watch:      o.watch,
		slots:      make(chan struct{}, o.buffer),
		acks:       make(chan *inflight, o.buffer),
		done:       make(chan struct{}),
		watches:    map[string]*watched{},
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
	go c.ackLoop()
	return c, nil
}

// Tenant returns the client's tenant.
func (c *Client) Tenant() string { return c.tenant }

// Publish hands a snapshot of conversation conv (the whole history as the
// agent holds it, spliced briefings included) to the publisher and returns
// without waiting for the server: only messages not sent before for conv
// are marshalled and sent. Publish keeps no reference to history's slice:
// the agent may append to it, edit, drop or reorder messages as soon as
// Publish returns (a snapshot names its ordered list of message ids, so the
// next snapshot describes the change; an edited message is re-sent). The
// first Publish of a conversation in a process makes one round trip, bounded
// by ctx, to continue the conversation's snapshot numbering.
//
// Publish checks only what is cheap: conv is a valid id and history is not
// empty; the workers validate the conversation and reject a bad one to the
// audit stream. It returns ErrInvalidID, ErrBufferFull (nothing sent; the
// agent's turn is never blocked, see ErrBufferFull), ErrClosed, or an error
// from the publisher (a message over the body limit, a closed connection).
// Errors of the acks come later through the error handler, Err and Flush.
func (c *Client) Publish(ctx context.Context, conv string, history []briefd.Message) error {
	if !queue.ValidToken(conv) {
		return fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	if len(history) == 0 {
		return fmt.Errorf("client: publish %s: empty history", conv)
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return fmt.Errorf("client: publish %s: %w", conv, ErrBufferFull)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.slots
		return ErrClosed
	}
	if c.inflight == 0 {
		c.idle = make(chan struct{})
	}
	c.inflight++
	c.mu.Unlock()
	if c.watch {
		c.ensureWatch(conv)
	}

	pend, err := c.pub.PublishAsync(ctx, c.tenant, conv, history, c.opts...)
	if err != nil {
		c.settle()
		return fmt.Errorf("client: publish %s: %w", conv, err)
	}
	c.acks <- &inflight{conv: conv, pend: pend} // never blocks: a slot is held
	return nil
}

// ackLoop waits for the acks of each published snapshot in publish order
// and releases its buffer slot.
func (c *Client) ackLoop() {
	defer close(c.done)
	for {
		var in *inflight
		select {
		case in = <-c.acks:
		case <-c.ctx.Done():
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.ackTimeout)
		_, err := in.pend.Wait(ctx)
		cancel()
		if err != nil {
			c.report(fmt.Errorf("client: publish %s: %w", in.conv, err))
		}
		c.settle()
	}
}

// settle releases one in-flight snapshot.
func (c *Client) settle() {
	<-c.slots
	c.mu.Lock()
	c.inflight--
	if c.inflight == 0 {
		close(c.idle)
	}
	c.mu.Unlock()
}

func (c *Client) report(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.log.Warn("briefd client: async publish failed", "tenant", c.tenant, "err", err)
	if c.onError != nil {
		c.onError(err)
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

// Flush waits until every snapshot published so far is acked or failed,
// then returns the first asynchronous error since the last Flush (and
// clears it), or ctx's error if ctx ends first.
func (c *Client) Flush(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	busy := c.inflight > 0
	c.mu.Unlock()
	if busy {
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
// a round trip; Prepare uses the watched copy when there is one). Errors:
// ErrInvalidID, ErrNoBriefing, ErrClosed, or a wrapped store error.
func (c *Client) Latest(ctx context.Context, conv string) (*briefd.Briefing, error) {
	if !queue.ValidToken(conv) {
		return nil, fmt.Errorf("client: conversation %q: %w", conv, ErrInvalidID)
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	b, err := c.store.Latest(ctx, c.tenant, conv)
	if errors.Is(err, cache.ErrNotFound) {
		return nil, fmt.Errorf("client: latest %s: %w", conv, ErrNoBriefing)
	}
	if err != nil {
		return nil, fmt.Errorf("client: latest %s: %w", conv, err)
	}
	return b, nil
}

// Watch returns a channel that delivers the conversation's current latest
// briefing, if any, then each newer one (strictly increasing Position; a
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
// the store's first answer), so a turn costs no round trip. Without it,
// Prepare calls Latest. Errors: ErrInvalidID, ErrClosed, a store error, or
// a splice error (the history is invalid); history is returned with them.
func (c *Client) Prepare(ctx context.Context, conv string, history []briefd.Message) ([]briefd.Message, *briefd.Briefing, error) {
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
		b = w.latest
		w.mu.Unlock()
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
	out, err := briefd.Splice(history, b)
	switch {
	case errors.Is(err, briefd.ErrBoundaryMissing), errors.Is(err, briefd.ErrNothingToSplice):
		return history, nil, nil
	case err != nil:
		return history, nil, fmt.Errorf("client: prepare %s: %w", conv, err)
	}
	return out, b, nil
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
		// it fresh. Both only move forward.
		defer c.wg.Done()
		defer cancel()
		ch, err := c.store.Watch(ctx, c.tenant, conv)
		if err != nil {
			c.log.Warn("briefd client: watch failed; Prepare falls back to nothing", "conversation", conv, "err", err)
			close(w.ready)
			c.forget(conv, w)
			return
		}
		if b, err := c.store.Latest(ctx, c.tenant, conv); err == nil {
			w.offer(b)
		}
		close(w.ready)
		for b := range ch {
			w.offer(b)
		}
		c.forget(conv, w)
	}()
	return w, nil
}

func (w *watched) offer(b *briefd.Briefing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.latest == nil || b.Position > w.latest.Position {
		w.latest = b
	}
}

func (c *Client) forget(conv string, w *watched) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watches[conv] == w {
		delete(c.watches, conv)
	}
}

// Forget stops the background watch of conv (see WithWatch), if any, and
// drops its cached briefing. Call it when a conversation ends.
func (c *Client) Forget(conv string) {
	c.mu.Lock()
	w, ok := c.watches[conv]
	delete(c.watches, conv)
	c.mu.Unlock()
	if ok {
		w.cancel()
	}
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close flushes pending publishes (waiting up to ctx), stops the watches
// and the ack goroutine, and returns Flush's error. The NATS connection
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
	<-c.done
	c.wg.Wait() // watches end with c.ctx
	return err
}
