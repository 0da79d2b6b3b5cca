package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/briefd/briefd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler compacts one snapshot. It must store its result before returning
// nil (the snapshot is acked after it returns). Return an error matching
// ErrPermanent (see Permanent) or briefd.ErrInvalidHistory to dead-letter
// the snapshot; any other error is retried with backoff. ctx is cancelled
// when the consumer's soft stop runs out.
type Handler func(ctx context.Context, s *Snapshot) error

// Outcome is how a delivered snapshot was settled.
type Outcome string

// Outcomes reported to Hooks.OnSettled.
const (
	OutcomeAcked        Outcome = "acked"         // handled and acked
	OutcomeSuperseded   Outcome = "superseded"    // a newer snapshot of the conversation was stored: acked unhandled
	OutcomeRetried      Outcome = "retried"       // transient error: nak with backoff
	OutcomeTerminated   Outcome = "terminated"    // permanent error: term + dead letter
	OutcomeDeadLettered Outcome = "dead_lettered" // out of deliveries: term + dead letter
	OutcomeRequeued     Outcome = "requeued"      // shutdown: nak for immediate redelivery
)

// Ref identifies a delivered snapshot, also when its manifest is unreadable
// (Seq is then 0).
type Ref struct {
	Subject        string
	Tenant         string
	ConversationID string
	Seq, StreamSeq uint64
	NumDelivered   uint64
}

// DeadLetter is the record published on <prefix>.dead.<tenant>.<conv>
// (schema docs/schema/deadletter.v1.json).
type DeadLetter struct {
	V              int       `json:"v"`
	Tenant         string    `json:"tenant"`
	ConversationID string    `json:"conversation_id"`
	Seq            uint64    `json:"seq,omitempty"`
	StreamSeq      uint64    `json:"stream_seq"`
	Subject        string    `json:"subject"`
	Deliveries     uint64    `json:"deliveries"`
	Permanent      bool      `json:"permanent"`
	Reason         string    `json:"reason"`
	At             time.Time `json:"at"`
}

// Hooks let the worker record metrics and audit events. Nil fields are
// skipped. They are called from handler goroutines and must not block.
type Hooks struct {
	// OnSettled is called once per delivery with its outcome, the error
	// (nil when acked) and the time since it was received.
	OnSettled func(ref Ref, outcome Outcome, err error, took time.Duration)
	// OnDeadLetter is called after a dead-letter record is stored.
	OnDeadLetter func(rec DeadLetter)
}

// Consumer runs a Handler over the shared durable consumer with at most
// Config.Concurrency handlers at once. Start it once; Stop it once.
type Consumer struct {
	js       jetstream.JetStream
	cfg      Config
	handler  Handler
	hooks    Hooks
	resolver *Resolver
	log      interface {
		Warn(string, ...any)
		Error(string, ...any)
	}

	cons    jetstream.Consumer
	snaps   jetstream.Stream
	started bool

	sem        chan struct{}
	stopping   chan struct{}
	stopOnce   sync.Once
	fetchDone  chan struct{}
	work       sync.WaitGroup
	workCtx    context.Context
	cancelWork context.CancelFunc
}

// NewConsumer returns a consumer of the streams of cfg (see EnsureStreams).
func NewConsumer(js jetstream.JetStream, cfg Config, h Handler, hooks Hooks) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("queue: nil handler")
	}
	return &Consumer{
		js: js, cfg: cfg, handler: h, hooks: hooks, resolver: NewResolver(js, cfg), log: cfg.Logger.WithGroup("queue"),
		sem: make(chan struct{}, cfg.Concurrency), stopping: make(chan struct{}), fetchDone: make(chan struct{}),
	}, nil
}

// Start binds to the durable consumer and starts fetching with a bounded
// pull. Handlers run under a context derived from ctx without its
// cancellation: Stop decides when work is cancelled.
func (c *Consumer) Start(ctx context.Context) error {
	var err error
	names := c.cfg.Streams()
	if c.snaps, err = c.js.Stream(ctx, names.Snapshots); err != nil {
		return fmt.Errorf("queue: open stream %s: %w", names.Snapshots, err)
	}
	if c.cons, err = c.snaps.Consumer(ctx, c.cfg.Consumer); err != nil {
		return fmt.Errorf("queue: open consumer %s: %w", c.cfg.Consumer, err)
	}
	c.started = true
	c.workCtx, c.cancelWork = context.WithCancel(context.WithoutCancel(ctx))
	go c.fetch()
	return nil
}

// fetchWait bounds one pull request: how long an idle worker waits for a
// snapshot before it asks again, and how long Stop may wait for the fetch
// loop to notice. Each pull is a fresh request, so a server restart or a
// lost request costs at most this long.
const fetchWait = time.Second

// fetch pulls only as many snapshots as there are free handler slots and
// hands each to a handler at once: no snapshot waits in this process
// without a handler sending InProgress for it, so none is redelivered to
// another worker while it waits here. (A Messages iterator would buffer
// ahead, and buffered snapshots would time out during long compactions.)
func (c *Consumer) fetch() {
	defer close(c.fetchDone)
	for {
		select { // stopping wins over a free slot
		case <-c.stopping:
			return
		default:
		}
		select {
		case c.sem <- struct{}{}:
		case <-c.stopping:
			return
		}
		slots, limit := 1, c.cfg.PullMaxMessages
		if limit <= 0 {
			limit = c.cfg.Concurrency
		}
	more:
		for slots < limit {
			select {
			case c.sem <- struct{}{}:
				slots++
			default:
				break more
			}
		}
		got, err := c.pull(slots)
		for ; got < slots; got++ {
			<-c.sem
		}
		switch {
		case err == nil, errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		default:
			c.log.Warn("queue: fetch", "err", err)
			select { // errors come from reconnects and server restarts: retry soon
			case <-c.stopping:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// pull fetches up to n snapshots and starts a handler for each, each
// holding one of the n slots the caller took. It returns how many it used.
func (c *Consumer) pull(n int) (int, error) {
	opts := []jetstream.FetchOpt{jetstream.FetchMaxWait(fetchWait)}
	if c.cfg.PullMaxBytes > 0 {
		opts = append(opts, jetstream.FetchMaxBytes(c.cfg.PullMaxBytes))
	}
	batch, err := c.cons.Fetch(n, opts...)
	if err != nil {
		return 0, err
	}
	used := 0
	for msg := range batch.Messages() {
		select {
		case <-c.stopping:
			// Delayed past this pull's expiry, so the snapshot goes to a
			// worker that is not stopping rather than back to this pull.
			_ = msg.NakWithDelay(fetchWait)
			continue
		default:
		}
		used++
		c.work.Add(1)
		go func() {
			defer c.work.Done()
			defer func() { <-c.sem }()
			c.process(msg)
		}()
	}
	return used, batch.Error()
}

// Stop stops fetching, waits for running handlers until ctx is done, then
// cancels them (their snapshots are nak'ed for immediate redelivery) and
// waits for them to return. It returns ctx's error if the soft stop ran
// out.
func (c *Consumer) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { close(c.stopping) })
	if !c.started {
		return nil
	}
	done := make(chan struct{})
	go func() {
		<-c.fetchDone
		c.work.Wait()
		close(done)
	}()
	select {
	case <-done:
		c.cancelWork()
		return nil
	case <-ctx.Done():
		c.cancelWork()
		<-done
		return fmt.Errorf("queue: soft stop: %w", ctx.Err())
	}
}

// Info returns the shared consumer's state; NumPending is the lag.
func (c *Consumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	if c.cons == nil {
		return nil, errors.New("queue: consumer not started")
	}
	info, err := c.cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: consumer info: %w", err)
	}
	return info, nil
}

// Lag returns how many snapshots wait for a worker (delivered but unacked
// ones are not counted).
func (c *Consumer) Lag(ctx context.Context) (uint64, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.NumPending, nil
}

// process handles one delivery end to end and settles it exactly once.
func (c *Consumer) process(msg jetstream.Msg) {
	start := time.Now()
	ref := Ref{Subject: msg.Subject()}
	ref.Tenant, ref.ConversationID, _ = c.resolver.parseSnapSubject(ref.Subject)
	md, err := msg.Metadata()
	if err != nil {
		// Not a JetStream delivery: nothing to settle.
		c.log.Error("queue: message without metadata", "subject", ref.Subject, "err", err)
		return
	}
	ref.StreamSeq, ref.NumDelivered = md.Sequence.Stream, md.NumDelivered
	var seq struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal(msg.Data(), &seq) == nil {
		ref.Seq = seq.Seq
	}

	if ref.NumDelivered > uint64(c.cfg.MaxDeliver) {
		// The last attempt never settled (a worker died or timed out).
		c.settle(msg, ref, start, fmt.Errorf("queue: delivered %d times without settling", ref.NumDelivered-1), true)
		return
	}
	// Coalescing: a newer snapshot of the conversation makes this one moot.
	if last, err := c.snaps.GetLastMsgForSubject(c.workCtx, ref.Subject); err == nil && last.Sequence > ref.StreamSeq {
		c.report(msg.Ack(), ref)
		c.settled(ref, OutcomeSuperseded, nil, start)
		return
	}

	// Keep the delivery alive while we resolve and handle it.
	stopTicker := make(chan struct{})
	tickerDone := make(chan struct{})
	go func() {
		defer close(tickerDone)
		t := time.NewTicker(c.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = msg.InProgress()
			case <-stopTicker:
				return
			}
		}
	}()
	err = c.run(ref, md, msg)
	close(stopTicker)
	<-tickerDone
	c.settle(msg, ref, start, err, false)
}

// run resolves the snapshot and calls the handler, turning a panic into a
// permanent error.
func (c *Consumer) run(ref Ref, md *jetstream.MsgMetadata, msg jetstream.Msg) (err error) {
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			c.log.Error("queue: handler panic", "subject", ref.Subject, "stream_seq", ref.StreamSeq, "panic", r, "stack", string(stack))
			err = Permanent(fmt.Errorf("queue: handler panic: %v\n%s", r, stack))
		}
	}()
	snap, err := c.resolver.Resolve(c.workCtx, ref.Subject, ref.StreamSeq, msg.Data())
	if err != nil {
		return err
	}
	snap.Delivery = Delivery{NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp}
	// InProgress keeps the snapshot ours while the handler runs, so a
	// handler that never returns must be cut off: it is then retried.
	ctx, cancel := context.WithTimeout(c.workCtx, c.cfg.MaxHandleTime)
	defer cancel()
	if err := c.handler(ctx, snap); err != nil {
		if ctx.Err() == context.DeadlineExceeded && c.workCtx.Err() == nil {
			return fmt.Errorf("queue: handler ran over MaxHandleTime (%v): %w", c.cfg.MaxHandleTime, err)
		}
		return err
	}
	return nil
}

// settle is the one place that acks, naks or terminates a delivery.
func (c *Consumer) settle(msg jetstream.Msg, ref Ref, start time.Time, err error, exhausted bool) {
	switch {
	case err == nil:
		c.report(msg.Ack(), ref)
		c.settled(ref, OutcomeAcked, nil, start)
	case c.workCtx.Err() != nil && errors.Is(err, context.Canceled):
		c.report(msg.Nak(), ref)
		c.settled(ref, OutcomeRequeued, err, start)
	case isMissingBody(err) && ref.NumDelivered < 2:
		// Give a body published async a moment to land in its stream.
		c.report(msg.NakWithDelay(c.cfg.backoff(ref.NumDelivered)), ref)
		c.settled(ref, OutcomeRetried, err, start)
	case errors.Is(err, ErrPermanent) || errors.Is(err, briefd.ErrInvalidHistory) || errors.Is(err, ErrMalformed):
		c.deadLetter(msg, ref, start, err, true)
	case exhausted || ref.NumDelivered >= uint64(c.cfg.MaxDeliver):
		c.deadLetter(msg, ref, start, err, false)
	default:
		c.report(msg.NakWithDelay(c.cfg.backoff(ref.NumDelivered)), ref)
		c.settled(ref, OutcomeRetried, err, start)
	}
}

// deadLetter stores the record first and terminates the delivery after: if
// the record cannot be stored, the snapshot is retried instead of lost.
func (c *Consumer) deadLetter(msg jetstream.Msg, ref Ref, start time.Time, cause error, permanent bool) {
	rec := DeadLetter{V: Version, Tenant: ref.Tenant, ConversationID: ref.ConversationID, Seq: ref.Seq,
		StreamSeq: ref.StreamSeq, Subject: ref.Subject, Deliveries: ref.NumDelivered, Permanent: permanent,
		Reason: cause.Error(), At: time.Now().UTC()}
	data, _ := json.Marshal(rec)
	tenant, conv := ref.Tenant, ref.ConversationID
	if tenant == "" || conv == "" {
		tenant, conv = "_", "_" // the subject was not ours to parse
	}
	dm := nats.NewMsg(c.resolver.subj.Dead(tenant, conv))
	dm.Header.Set(HeaderVersion, "1")
	dm.Header.Set(HeaderContentType, ContentTypeJSON)
	dm.Header.Set(HeaderMsgID, "dead."+strconv.FormatUint(ref.StreamSeq, 10))
	dm.Data = data
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.workCtx), 10*time.Second)
	defer cancel()
	if _, err := c.js.PublishMsg(ctx, dm); err != nil {
		c.log.Error("queue: store dead letter; retrying the snapshot", "subject", ref.Subject, "stream_seq", ref.StreamSeq, "err", err)
		c.report(msg.NakWithDelay(c.cfg.backoff(ref.NumDelivered)), ref)
		c.settled(ref, OutcomeRetried, cause, start)
		return
	}
	reason := cause.Error()
	if len(reason) > 512 {
		reason = reason[:512]
	}
	c.report(msg.TermWithReason(reason), ref)
	if c.hooks.OnDeadLetter != nil {
		c.hooks.OnDeadLetter(rec)
	}
	outcome := OutcomeDeadLettered
	if permanent {
		outcome = OutcomeTerminated
	}
	c.settled(ref, outcome, cause, start)
}

func (c *Consumer) settled(ref Ref, o Outcome, err error, start time.Time) {
	if c.hooks.OnSettled != nil {
		c.hooks.OnSettled(ref, o, err, time.Since(start))
	}
}

func (c *Consumer) report(err error, ref Ref) {
	if err != nil {
		c.log.Warn("queue: settle", "subject", ref.Subject, "stream_seq", ref.StreamSeq, "err", err)
	}
}
