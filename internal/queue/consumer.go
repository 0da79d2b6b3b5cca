package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/briefd/briefd"
	"github.com/cenkalti/backoff/v4"
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
	OutcomeRequeued     Outcome = "requeued"      // shutdown: nak for immediate redelivery, not an attempt
)

// Ref identifies a delivered snapshot, also when its manifest is unreadable
// (Seq is then 0).
type Ref struct {
	Subject        string
	Tenant         string
	ConversationID string
	Seq, StreamSeq uint64
	// Now is set when the manifest asks for compaction now (control mode
	// "now"): such a snapshot is never superseded, or a user's /compact
	// would be lost to the agent's next turn.
	Now bool
	// NumDelivered counts the server's deliveries, this one included;
	// Requeues those that were not attempts (shutdowns, deferrals), so
	// Attempt = NumDelivered - Requeues is the attempt this delivery is.
	NumDelivered, Requeues, Attempt uint64
	// Started counts the handler runs recorded for the snapshot's earlier
	// redeliveries (the first delivery's run is not recorded): deliveries
	// that never reached a handler (lost with a worker or a connection) do
	// not count as attempts.
	Started uint64
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
	// OnDeadLetter is called after a dead-letter record is stored, once
	// per snapshot: a record the stream already had is not reported again.
	OnDeadLetter func(rec DeadLetter)
	// Ready is asked before each pull: while it returns an error the
	// consumer takes no snapshot (a worker that cannot store briefings
	// would only nak them). It must be cheap: the worker answers from
	// its last health check.
	Ready func() error
}

// OutcomeDeferred: the tenant was at its cap while another tenant had
// work; handed back with a delay, not counted as an attempt.
const OutcomeDeferred Outcome = "deferred"

// Consumer runs a Handler over the shared durable consumer with at most
// Config.Concurrency handlers at once. Start it once; Stop it once.
type Consumer struct {
	js       jetstream.JetStream
	cfg      Config
	handler  Handler
	hooks    Hooks
	resolver *Resolver
	log      *slog.Logger

	cons     jetstream.Consumer
	snaps    jetstream.Stream
	requeues jetstream.KeyValue
	started  bool

	sem        chan struct{}
	stopping   chan struct{}
	stopOnce   sync.Once
	fetchDone  chan struct{}
	work       sync.WaitGroup
	workCtx    context.Context
	cancelWork context.CancelFunc

	fair     fairness
	fetchErr atomic.Pointer[error] // the last pull's error; nil after a good one
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
		js: js, cfg: cfg, handler: h, hooks: hooks, resolver: NewResolver(js, cfg), log: cfg.Logger.With("component", "queue"),
		sem: make(chan struct{}, cfg.Concurrency), stopping: make(chan struct{}), fetchDone: make(chan struct{}),
		fair: fairness{cap: cfg.TenantConcurrency, slots: cfg.Concurrency, inflight: map[string]int{}, seen: map[string]time.Time{}},
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
	if c.requeues, err = c.js.KeyValue(ctx, names.Requeues); err != nil {
		return fmt.Errorf("queue: open bucket %s: %w", names.Requeues, err)
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

// summaryEvery is how often a problem that lasts is logged again, with the
// count of failures since it began.
const summaryEvery = 30 * time.Second

// fetch pulls only as many snapshots as there are free handler slots and
// hands each to a handler at once: no snapshot waits in this process
// without a handler sending InProgress for it, so none is redelivered to
// another worker while it waits here. (A Messages iterator would buffer
// ahead, and buffered snapshots would time out during long compactions.)
// While the worker is not ready, or pulls fail, it waits with exponential
// backoff (100ms to 5s) and logs the first failure, a summary every 30s
// and the recovery, not every attempt.
func (c *Consumer) fetch() {
	defer close(c.fetchDone)
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = 100*time.Millisecond, 5*time.Second, 0
	notReady := problem{log: c.log, what: "worker not ready: not fetching"}
	failing := problem{log: c.log, what: "fetch failing"}
	wait := func() bool {
		select {
		case <-c.stopping:
			return false
		case <-time.After(bo.NextBackOff()):
			return true
		}
	}
	for {
		select { // stopping wins over a free slot
		case <-c.stopping:
			return
		default:
		}
		if c.hooks.Ready != nil {
			if err := c.hooks.Ready(); err != nil {
				notReady.fail(err)
				if !wait() {
					return
				}
				continue
			}
			notReady.ok()
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
			c.fetchErr.Store(nil)
			failing.ok()
			bo.Reset()
		default:
			c.fetchErr.Store(&err)
			failing.fail(err)
			if !wait() {
				return
			}
		}
	}
}

// Err returns the error of the last pull, or nil if it succeeded: while
// every pull fails the worker is not ready, whatever its connections say.
func (c *Consumer) Err() error {
	if p := c.fetchErr.Load(); p != nil {
		return *p
	}
	return nil
}

// problem logs a condition that may last: its first failure, then a
// summary every summaryEvery, then its end.
type problem struct {
	log      *slog.Logger
	what     string
	since    time.Time
	lastLog  time.Time
	failures int
}

func (p *problem) fail(err error) {
	now := time.Now()
	p.failures++
	switch {
	case p.failures == 1:
		p.since, p.lastLog = now, now
		p.log.Warn("queue: "+p.what, "error", err)
	case now.Sub(p.lastLog) >= summaryEvery:
		p.lastLog = now
		p.log.Warn("queue: "+p.what+" (still)", "error", err, "failures", p.failures, "for", now.Sub(p.since).Round(time.Second))
	}
}

func (p *problem) ok() {
	if p.failures > 0 {
		p.log.Info("queue: "+p.what+": recovered", "failures", p.failures, "after", time.Since(p.since).Round(time.Millisecond))
		p.failures = 0
	}
}

// pull fetches up to n snapshots and starts a handler for each, each
// holding one of the n slots the caller took, except those deferred for
// fairness. It returns how many slots it used.
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
			c.work.Add(1)
			go func() {
				defer c.work.Done()
				c.requeue(msg, c.newRef(msg), fetchWait)
			}()
			continue
		default:
		}
		tenant, _, _ := c.resolver.parseSnapSubject(msg.Subject())
		run := c.fair.admit(tenant, time.Now())
		c.work.Add(1)
		if !run {
			go func() {
				defer c.work.Done()
				c.defer_(msg)
			}()
			continue
		}
		used++
		go func() {
			defer c.work.Done()
			defer func() { <-c.sem }()
			defer c.fair.done(tenant)
			c.process(msg)
		}()
	}
	return used, batch.Error()
}

// fairness caps the handlers one tenant holds in this process: at most
// cap while another tenant has shown work within fairWindow, and one less
// than every slot otherwise. The spare slot looks ahead in the queue:
// snapshots of a tenant at its cap are deferred, so another tenant's
// snapshot behind a flood is reached and run.
type fairness struct {
	cap, slots int
	mu         sync.Mutex
	inflight   map[string]int
	seen       map[string]time.Time
	pruned     time.Time
}

// fairWindow is how long a tenant seen on the consumer counts as having
// work.
const fairWindow = 2 * fetchWait

// admit reports whether a snapshot of tenant may run now, and if so
// counts it in flight.
func (f *fairness) admit(tenant string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[tenant] = now
	if now.Sub(f.pruned) > fairWindow {
		for t, at := range f.seen {
			if now.Sub(at) > fairWindow {
				delete(f.seen, t)
			}
		}
		f.pruned = now
	}
	limit := max(f.slots-1, 1)
	if len(f.seen) > 1 {
		limit = f.cap
	}
	if f.inflight[tenant] >= limit {
		return false
	}
	f.inflight[tenant]++
	return true
}

func (f *fairness) done(tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight[tenant]--; f.inflight[tenant] <= 0 {
		delete(f.inflight, tenant)
	}
}

// defer_ hands back a snapshot whose tenant is at its cap, with a delay
// that grows with its deferrals (250ms doubling to 5s, jittered).
func (c *Consumer) defer_(msg jetstream.Msg) {
	ref := c.newRef(msg)
	d := 250 * time.Millisecond << min(ref.Requeues, 4)
	d = min(d, 5*time.Second)
	d += time.Duration(rand.Int64N(int64(d) / 4))
	c.requeue(msg, ref, d)
	c.log.Debug("queue: snapshot deferred: tenant at its cap", "tenant", ref.Tenant, "conversation", ref.ConversationID,
		"stream_seq", ref.StreamSeq, "delay", d)
	c.settled(ref, OutcomeDeferred, nil, time.Now())
}

// Stop stops fetching, waits for running handlers until ctx is done, then
// cancels them (their snapshots are handed back for immediate redelivery,
// which does not count as an attempt) and waits for them to return. It
// returns ctx's error if the soft stop ran out.
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

// newRef describes a delivery: its subject's tokens, the manifest's seq if
// readable, and its attempt number, which leaves out the requeues recorded
// for it (read only on a redelivery: a first delivery has none).
func (c *Consumer) newRef(msg jetstream.Msg) Ref {
	ref := Ref{Subject: msg.Subject()}
	ref.Tenant, ref.ConversationID, _ = c.resolver.parseSnapSubject(ref.Subject)
	var seq struct {
		Seq     uint64 `json:"seq"`
		Control *struct {
			Mode briefd.Mode `json:"mode"`
		} `json:"control"`
	}
	if json.Unmarshal(msg.Data(), &seq) == nil {
		ref.Seq = seq.Seq
		ref.Now = seq.Control != nil && seq.Control.Mode == briefd.ModeNow
	}
	md, err := msg.Metadata()
	if err != nil {
		return ref
	}
	ref.StreamSeq, ref.NumDelivered = md.Sequence.Stream, md.NumDelivered
	ref.Attempt = 1
	if ref.NumDelivered > 1 {
		ref.Requeues, _ = c.count(requeueKey(ref.StreamSeq))
		ref.Attempt = ref.NumDelivered - min(ref.Requeues, ref.NumDelivered-1)
		// Deliveries that never reached a handler (sent to a worker that
		// died or was paused, or over a connection that dropped) are not
		// attempts either: a redelivery counts the handler runs it had.
		// The first delivery is taken to have run (it is not recorded).
		if started, ok := c.count(startKey(ref.StreamSeq)); ok {
			ref.Started = started
			ref.Attempt = min(ref.Attempt, started+2)
		}
	}
	return ref
}

func requeueKey(streamSeq uint64) string { return strconv.FormatUint(streamSeq, 10) }

// startKey counts the handler runs of a redelivered snapshot.
func startKey(streamSeq uint64) string { return "started." + strconv.FormatUint(streamSeq, 10) }

// count reads a counter of the requeue bucket, 0 when there is none; ok is
// false when it cannot be read. An unreadable requeue count is taken as
// 0 and an unreadable start count ignored: the snapshot then risks an
// early dead letter, never an endless loop.
func (c *Consumer) count(key string) (n uint64, ok bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.workCtx), 5*time.Second)
	defer cancel()
	e, err := c.requeues.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, true
	}
	if err != nil {
		c.log.Warn("queue: read a delivery count", "key", key, "error", err)
		return 0, false
	}
	n, _ = strconv.ParseUint(string(e.Value()), 10, 64)
	return n, true
}

// recordStart records that a redelivered snapshot reaches its handler, before
// it runs: a snapshot that kills its worker is counted, and dead-lettered
// after MaxDeliver such runs.
func (c *Consumer) recordStart(ref Ref) {
	if ref.NumDelivered <= 1 {
		return // the first run is attempt 1 without a record
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.workCtx), 5*time.Second)
	defer cancel()
	if _, err := c.requeues.Put(ctx, startKey(ref.StreamSeq), []byte(strconv.FormatUint(ref.Started+1, 10))); err != nil {
		c.log.Warn("queue: record a handler run", "tenant", ref.Tenant, "conversation", ref.ConversationID,
			"stream_seq", ref.StreamSeq, "error", err)
	}
}

// requeue hands a delivery back without counting it as an attempt: the
// count of requeues is raised first, then the snapshot is nak'ed with
// delay d.
func (c *Consumer) requeue(msg jetstream.Msg, ref Ref, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.workCtx), 5*time.Second)
	defer cancel()
	if _, err := c.requeues.Put(ctx, requeueKey(ref.StreamSeq), []byte(strconv.FormatUint(ref.Requeues+1, 10))); err != nil {
		c.log.Warn("queue: record requeue; the redelivery will count as an attempt", "tenant", ref.Tenant,
			"conversation", ref.ConversationID, "stream_seq", ref.StreamSeq, "error", err)
	}
	if d > 0 {
		c.report(msg.NakWithDelay(d), ref)
	} else {
		c.report(msg.Nak(), ref)
	}
}

// forget drops a settled snapshot's requeue count.
func (c *Consumer) forget(ref Ref) {
	if ref.NumDelivered <= 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.workCtx), 5*time.Second)
	defer cancel()
	// The bucket's MaxAge removes them otherwise.
	if ref.Requeues > 0 {
		_ = c.requeues.Purge(ctx, requeueKey(ref.StreamSeq))
	}
	_ = c.requeues.Purge(ctx, startKey(ref.StreamSeq))
}

// process handles one delivery end to end and settles it exactly once.
func (c *Consumer) process(msg jetstream.Msg) {
	start := time.Now()
	md, err := msg.Metadata()
	if err != nil {
		// Not a JetStream delivery: nothing to settle.
		c.log.Error("queue: message without metadata", "subject", msg.Subject(), "error", err)
		return
	}
	ref := c.newRef(msg)
	if ref.Attempt > uint64(c.cfg.MaxDeliver) || ref.NumDelivered > uint64(c.cfg.MaxDeliver+c.cfg.MaxRequeues) {
		// The last attempt never settled (a worker died or timed out).
		c.settle(msg, ref, start, fmt.Errorf("queue: delivered %d times (%d requeued, %d handler runs) without settling",
			ref.NumDelivered-1, ref.Requeues, ref.Attempt-1), true)
		return
	}
	// Coalescing: a newer snapshot of the conversation makes this one moot,
	// unless it asks for compaction now: its briefing then applies to the
	// newer history too (the boundary is still in it).
	if last, err := c.snaps.GetLastMsgForSubject(c.workCtx, ref.Subject); err == nil && last.Sequence > ref.StreamSeq && !ref.Now {
		c.report(msg.Ack(), ref)
		c.forget(ref)
		c.settled(ref, OutcomeSuperseded, nil, start)
		return
	}

	c.recordStart(ref)
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
			c.log.Error("queue: handler panic", "tenant", ref.Tenant, "conversation", ref.ConversationID, "stream_seq", ref.StreamSeq, "panic", r, "stack", string(stack))
			err = Permanent(fmt.Errorf("queue: handler panic: %v\n%s", r, stack))
		}
	}()
	snap, err := c.resolver.Resolve(c.workCtx, ref.Subject, ref.StreamSeq, msg.Data())
	if err != nil {
		return err
	}
	snap.Delivery = Delivery{NumDelivered: md.NumDelivered, Attempt: ref.Attempt, NumPending: md.NumPending, Timestamp: md.Timestamp}
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
		c.forget(ref)
		c.settled(ref, OutcomeAcked, nil, start)
	case c.workCtx.Err() != nil && errors.Is(err, context.Canceled):
		// Shutdown: not the snapshot's fault, so not an attempt.
		c.requeue(msg, ref, 0)
		c.log.Info("queue: snapshot handed back at shutdown", "tenant", ref.Tenant, "conversation", ref.ConversationID,
			"snapshot_seq", ref.Seq, "stream_seq", ref.StreamSeq, "attempt", ref.Attempt)
		c.settled(ref, OutcomeRequeued, err, start)
	case isMissingBody(err) && ref.Attempt < 2:
		// Give a body published async a moment to land in its stream:
		// bodies and manifests are stored by two streams, so a manifest
		// can be delivered first. Expected, so not a warning.
		c.retry(msg, ref, start, err, slog.LevelInfo)
	case errors.Is(err, ErrPermanent) || errors.Is(err, briefd.ErrInvalidHistory) || errors.Is(err, ErrMalformed):
		c.deadLetter(msg, ref, start, err, true)
	case exhausted || ref.Attempt >= uint64(c.cfg.MaxDeliver):
		c.deadLetter(msg, ref, start, err, false)
	default:
		c.retry(msg, ref, start, err, slog.LevelWarn)
	}
}

// retry naks a delivery with the backoff of its attempt, and says so at
// level.
func (c *Consumer) retry(msg jetstream.Msg, ref Ref, start time.Time, err error, level slog.Level) {
	d := c.cfg.backoff(ref.Attempt)
	c.log.Log(c.workCtx, level, "queue: snapshot will be retried", "tenant", ref.Tenant, "conversation", ref.ConversationID,
		"snapshot_seq", ref.Seq, "stream_seq", ref.StreamSeq, "attempt", ref.Attempt, "max_attempts", c.cfg.MaxDeliver,
		"delay", d, "reason", err)
	c.report(msg.NakWithDelay(d), ref)
	c.settled(ref, OutcomeRetried, err, start)
}

// deadLetter stores the record first and terminates the delivery after: if
// the record cannot be stored, the snapshot is retried instead of lost. The
// record's Nats-Msg-Id is the stream sequence, so a snapshot dead-lettered
// twice (its termination lost) has one record, reported once.
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
	ack, err := c.js.PublishMsg(ctx, dm)
	if err != nil {
		c.log.Error("queue: store dead letter; retrying the snapshot", "tenant", ref.Tenant, "conversation", ref.ConversationID,
			"stream_seq", ref.StreamSeq, "error", err)
		c.report(msg.NakWithDelay(c.cfg.backoff(ref.Attempt)), ref)
		c.settled(ref, OutcomeRetried, cause, start)
		return
	}
	c.report(c.term(msg, cause.Error()), ref)
	c.forget(ref)
	c.log.Warn("queue: snapshot dead-lettered", "tenant", ref.Tenant, "conversation", ref.ConversationID,
		"snapshot_seq", ref.Seq, "stream_seq", ref.StreamSeq, "attempt", ref.Attempt, "deliveries", ref.NumDelivered,
		"permanent", permanent, "reason", cause, "again", ack.Duplicate)
	if c.hooks.OnDeadLetter != nil && !ack.Duplicate {
		c.hooks.OnDeadLetter(rec)
	}
	outcome := OutcomeDeadLettered
	if permanent {
		outcome = OutcomeTerminated
	}
	c.settled(ref, outcome, cause, start)
}

// term terminates a delivery. nats-server before 2.10 ignores a +TERM
// that carries a reason (it then redelivers the snapshot after AckWait,
// until MaxDeliver), so the reason is sent only to servers that read it;
// the dead-letter record holds it in any case.
func (c *Consumer) term(msg jetstream.Msg, reason string) error {
	if nc := c.js.Conn(); nc == nil || !versionAtLeast(nc.ConnectedServerVersion(), 2, 10, 0) {
		return msg.Term()
	}
	if len(reason) > 512 {
		reason = reason[:512]
	}
	return msg.TermWithReason(reason)
}

func (c *Consumer) settled(ref Ref, o Outcome, err error, start time.Time) {
	if c.hooks.OnSettled != nil {
		c.hooks.OnSettled(ref, o, err, time.Since(start))
	}
}

func (c *Consumer) report(err error, ref Ref) {
	if err != nil {
		c.log.Warn("queue: settle", "tenant", ref.Tenant, "conversation", ref.ConversationID, "stream_seq", ref.StreamSeq, "error", err)
	}
}
