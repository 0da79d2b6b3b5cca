package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/queue"
)

// Store is what the worker needs of the briefing store; both
// cache.RedisStore and cache.KVStore provide it. Ping backs readiness;
// PutStatus records the verdict on each handled snapshot for the agent.
type Store interface {
	Put(ctx context.Context, b *briefd.Briefing) (latest bool, err error)
	Get(ctx context.Context, tenant, conv, boundaryID string) (*briefd.Briefing, error)
	PutStatus(ctx context.Context, st *briefd.Status) error
	Ping(ctx context.Context) error
}

// Auditor records events on the audit stream; *audit.Publisher provides it.
type Auditor interface {
	Publish(ctx context.Context, ev audit.Event) error
}

// DefaultLLMConcurrency is the number of compactions in flight per process
// when a Summarizer is configured and Queue.Concurrency is not set.
const DefaultLLMConcurrency = 256

// Config configures a Worker. Zero fields take the defaults of their
// packages.
type Config struct {
	Queue  queue.Config
	Engine compact.Config
	// Summarizer is the LLM cascade; nil keeps the engine deterministic.
	Summarizer compact.Summarizer
	Audit      audit.Config
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer receives the worker's metrics; nil uses a private registry.
	Registerer prometheus.Registerer
	// MaxEngines bounds the engines kept for distinct (model, context
	// window) pairs that snapshots ask for. Default 16.
	MaxEngines int
	// OpTimeout bounds each call to the store and the audit stream within
	// a compaction. Default DefaultOpTimeout.
	OpTimeout time.Duration
}

// DefaultOpTimeout is the default Config.OpTimeout: a request whose reply
// was lost with a NATS node (a restart under load) or a store that stopped
// answering would otherwise wait for the compaction's own deadline
// (MaxHandleTime, 10 minutes) while InProgress keeps the snapshot from
// every other worker; the nemesis run on a 3-node cluster found a newest
// snapshot held so for minutes.
const DefaultOpTimeout = 15 * time.Second

// Worker consumes snapshots and stores briefings. Start it once; Stop it
// once. Several Workers, in one process or many, share the queue's durable
// consumer: adding workers adds throughput.
type Worker struct {
	cfg     Config
	js      jetstream.JetStream
	store   Store
	auditor Auditor
	log     *slog.Logger
	metrics *Metrics

	engines *engineSet

	mu       sync.Mutex
	consumer *queue.Consumer
	ready    bool

	health atomic.Pointer[error] // the last dependency check's error; nil when healthy
	// told holds the stream sequences of snapshots handle rejected and
	// whose status it stored, so the dead-letter hook does not replace
	// that status with a vaguer one.
	told       sync.Map
	stopHealth context.CancelFunc
	healthDone chan struct{}
}

// New returns a Worker reading from js and writing briefings to store. It
// validates the configuration and builds the default engine (which loads
// the tokenizer) so that a misconfiguration fails at start-up.
func New(js jetstream.JetStream, store Store, cfg Config) (*Worker, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Queue.Logger == nil {
		cfg.Queue.Logger = cfg.Logger
	}
	if cfg.Queue.Concurrency == 0 {
		// Deterministic compaction is CPU-bound; LLM compaction waits on
		// the network, so many more can be in flight.
		cfg.Queue.Concurrency = max(queue.DefaultConcurrency, 2*runtime.GOMAXPROCS(0))
		if cfg.Summarizer != nil {
			cfg.Queue.Concurrency = DefaultLLMConcurrency
		}
	}
	// The engine's limits hold while bodies load, not only after.
	cfg.Queue.MaxMessages = cmp.Or(cfg.Queue.MaxMessages, cfg.Engine.Limits.MaxMessages)
	cfg.Queue.MaxSnapshotBytes = cmp.Or(cfg.Queue.MaxSnapshotBytes, cfg.Engine.Limits.MaxTotalBytes)
	cfg.Queue = cfg.Queue.WithDefaults()
	if err := cfg.Queue.Validate(); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	cfg.Engine = cfg.Engine.WithDefaults()
	if err := cfg.Engine.Validate(); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	// One prefix isolates a deployment: its audit subjects and stream too.
	cfg.Audit.Prefix = cmp.Or(cfg.Audit.Prefix, cfg.Queue.Prefix)
	cfg.Audit.Stream = cmp.Or(cfg.Audit.Stream, queue.StreamBase(cfg.Queue.Prefix)+"_AUDIT")
	cfg.Audit.Replicas = cmp.Or(cfg.Audit.Replicas, cfg.Queue.Replicas)
	cfg.Audit = cfg.Audit.WithDefaults()
	cfg.MaxEngines = cmp.Or(cfg.MaxEngines, 16)
	w := &Worker{
		cfg:   cfg,
		js:    js,
		store: boundedStore{store, cmp.Or(cfg.OpTimeout, DefaultOpTimeout)},
		log:   cfg.Logger.With("component", "worker"),
	}
	// The engines share one memo of the conversations they compact, sized
	// like the resolver's cache of their histories (about 1 KiB of JSON
	// per message on the shared histories).
	memo := compact.NewMemo(max(1, cfg.Queue.ResolvedCacheBytes/memoBytesPerMessage))
	w.engines = newEngineSet(cfg.Engine, cfg.Summarizer, w.log, cfg.MaxEngines, memo)
	if _, err := w.engines.get("", 0); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.auditor = boundedAuditor{audit.NewPublisher(js, cfg.Audit), cmp.Or(cfg.OpTimeout, DefaultOpTimeout)}
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	w.metrics = NewMetrics(reg, w.lag, w.Ready)
	return w, nil
}

// Metrics returns the worker's collectors.
func (w *Worker) Metrics() *Metrics { return w.metrics }

// Start creates the streams, the consumer and the audit stream if needed,
// then starts consuming in the background. It returns once consuming has
// begun.
func (w *Worker) Start(ctx context.Context) error {
	if err := w.ensureStreams(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	c, err := queue.NewConsumer(w.js, w.cfg.Queue, w.handle, w.hooks())
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	// Readiness first: the consumer pulls only while the store and NATS
	// answer, so a worker that could only nak takes nothing.
	w.check(ctx)
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stopHealth, w.healthDone = cancel, make(chan struct{})
	go w.watchHealth(hctx)
	if err := c.Start(ctx); err != nil {
		cancel()
		<-w.healthDone
		return fmt.Errorf("worker: %w", err)
	}
	w.mu.Lock()
	w.consumer, w.ready = c, true
	w.mu.Unlock()
	w.log.Info("worker started", "consumer", w.cfg.Queue.Consumer, "concurrency", w.cfg.Queue.Concurrency,
		"context_window", w.cfg.Engine.ContextWindow, "llm", w.cfg.Summarizer != nil)
	return nil
}

// EnsureTimeout bounds how long Start retries creating the streams, the
// consumer and the buckets (and RetryTransient any call).
const EnsureTimeout = 2 * time.Minute

// ensureStreams creates (or updates) the streams, buckets and the
// consumer, retrying while JetStream does not answer: workers started
// together on a cluster race to create the same R3 assets, and a cluster
// just formed may not answer in time (two workers at once on a fresh
// 3-node cluster time out, on nats-server 2.9 and 2.15); a worker started
// while NATS is down waits for it. The calls are idempotent.
func (w *Worker) ensureStreams(ctx context.Context) error {
	return RetryTransient(ctx, w.log, "creating the streams", func() error {
		if err := queue.EnsureStreams(ctx, w.js, w.cfg.Queue); err != nil {
			return err
		}
		return audit.EnsureStream(ctx, w.js, w.cfg.Audit)
	})
}

// RetryTransient calls fn until it succeeds, fails with an error that is
// not transient (see Transient), ctx ends, or EnsureTimeout has passed,
// waiting 250ms doubling to 5s in between, and logs each retry.
func RetryTransient(ctx context.Context, log *slog.Logger, what string, fn func() error) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = 250*time.Millisecond, 5*time.Second, EnsureTimeout
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !Transient(err) || ctx.Err() != nil {
			return err
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		log.Warn(what+" failed; retrying", "attempt", attempt, "in", wait.Round(time.Millisecond), "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// errNoSuitablePeers is JetStream's "no suitable peers for placement": a
// cluster just formed does not know its peers yet (a nemesis run's workers
// met it creating R3 buckets). With more replicas than servers it lasts,
// and the retries give up after EnsureTimeout with the server's words.
const errNoSuitablePeers jetstream.ErrorCode = 10005

// Transient reports whether a NATS or JetStream error may pass by itself:
// a request that timed out or found no responder, a connection not (yet)
// up, or a cluster without a leader, or without its peers, for the moment.
func Transient(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrNoServers):
		return true
	case errors.As(err, &apiErr):
		return apiErr.Code == 503 || apiErr.Code == 408 || apiErr.ErrorCode == errNoSuitablePeers
	}
	return false
}

// Stop stops fetching, lets compactions in flight finish until ctx is done,
// then cancels what is left; the queue naks it for prompt redelivery to
// another worker. It returns when every goroutine has exited.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	c := w.consumer
	w.ready = false
	w.mu.Unlock()
	if c == nil {
		return nil
	}
	err := c.Stop(ctx)
	w.stopHealth()
	<-w.healthDone
	w.log.Info("worker stopped", "error", err)
	return err
}

// HealthInterval is how often the worker checks NATS and its store.
const HealthInterval = time.Second

func (w *Worker) watchHealth(ctx context.Context) {
	defer close(w.healthDone)
	t := time.NewTicker(HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check(ctx)
		}
	}
}

// check asks NATS and the store whether they answer, and records the
// answer for Ready and the consumer's gate.
func (w *Worker) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, HealthInterval)
	defer cancel()
	var err error
	if nc := w.js.Conn(); nc != nil && !nc.IsConnected() {
		err = fmt.Errorf("nats: %s", nc.Status())
	} else if perr := w.store.Ping(ctx); perr != nil {
		err = fmt.Errorf("store: %w", perr)
	}
	if err != nil {
		w.health.Store(&err)
	} else {
		w.health.Store(nil)
	}
}

// healthErr is the last check's error.
func (w *Worker) healthErr() error {
	if p := w.health.Load(); p != nil {
		return *p
	}
	return nil
}

// Readiness returns nil when the worker consumes, NATS and the store
// answered its last check (at most HealthInterval ago) and its last pull
// succeeded; otherwise the reason it is not ready.
func (w *Worker) Readiness() error {
	w.mu.Lock()
	c, ready := w.consumer, w.ready
	w.mu.Unlock()
	if !ready {
		return errors.New("not consuming")
	}
	if err := w.healthErr(); err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	return nil
}

// Ready reports whether Readiness is nil.
func (w *Worker) Ready() bool { return w.Readiness() == nil }

// lag returns the consumer's count of snapshots not yet delivered.
func (w *Worker) lag(ctx context.Context) (uint64, error) {
	c, err := w.js.Consumer(ctx, w.cfg.Queue.Streams().Snapshots, w.cfg.Queue.Consumer)
	if err != nil {
		return 0, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.NumPending, nil
}

// handle compacts one snapshot. Its error decides the queue's settlement:
// nil acks, queue.Permanent (or an invalid history) terminates the message
// with a dead letter, anything else is retried with backoff.
func (w *Worker) handle(ctx context.Context, snap *queue.Snapshot) error {
	start := time.Now()
	log := w.log.With("tenant", snap.Tenant, "conversation", snap.ConversationID,
		"snapshot_seq", snap.Seq, "attempt", snap.Delivery.NumDelivered)
	w.metrics.InFlight.Inc()
	defer w.metrics.InFlight.Dec()
	if snap.Delivery.NumDelivered > 1 {
		w.metrics.Redeliveries.Inc()
	}

	eng, err := w.engines.get(snap.Model, snap.ContextWindow)
	if err != nil {
		return w.reject(ctx, log, snap, err)
	}
	prev, err := w.previous(ctx, snap)
	if err != nil {
		w.metrics.Compactions.WithLabelValues("none", "error").Inc()
		return fmt.Errorf("load earlier briefing: %w", err)
	}
	res, err := eng.Compact(ctx, compact.Request{
		ConversationID: snap.ConversationID,
		Tenant:         snap.Tenant,
		Messages:       snap.Messages,
		Previous:       prev,
		Control:        snap.Control,
	})
	switch {
	case errors.Is(err, briefd.ErrInvalidHistory), errors.Is(err, briefd.ErrInvalidControl):
		return w.reject(ctx, log, snap, err)
	case err != nil:
		w.metrics.Compactions.WithLabelValues("none", "error").Inc()
		return fmt.Errorf("compact: %w", err)
	}
	for _, a := range res.Attempts {
		w.metrics.LLMAttempts.WithLabelValues(a.Model, a.Outcome).Inc()
		for _, v := range a.Verdicts {
			if !v.Passed {
				w.metrics.LLMRejections.WithLabelValues(a.Model, v.Rule).Inc()
			}
		}
		if a.Outcome != "accepted" {
			log.Info("summarizer attempt", "model", a.Model, "prompt", a.Prompt, "outcome", a.Outcome,
				"error", a.Error, "duration", a.Elapsed)
		}
	}
	if !res.Compacted {
		st := w.status(snap, briefd.OutcomeSkipped, string(res.Skip), res.Reason)
		st.Tokens, st.TriggerTokens = res.TokensBefore, res.TriggerTokens
		if err := w.store.PutStatus(ctx, st); err != nil {
			return fmt.Errorf("store status: %w", err)
		}
		ev := w.event(audit.TypeSkipped, snap)
		ev.Reason, ev.Error, ev.TokensBefore, ev.MessagesBefore = string(res.Skip), res.Reason, res.TokensBefore, len(snap.Messages)
		ev.TriggerTokens = res.TriggerTokens
		if err := w.auditor.Publish(ctx, ev); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		w.metrics.Compactions.WithLabelValues("none", "skipped").Inc()
		w.metrics.Skipped.WithLabelValues(string(res.Skip)).Inc()
		// Debug: a skip is the normal outcome of most turns; the audit
		// stream and the conversation's status carry it.
		log.Debug("not compacted", "skip", res.Skip, "reason", res.Reason, "tokens", res.TokensBefore, "trigger_tokens", res.TriggerTokens)
		return nil
	}

	b := res.Briefing
	b.Tenant = snap.Tenant
	// The stream's order of snapshots decides which briefing is the latest.
	b.SnapshotSeq, b.SnapshotTime = snap.StreamSeq, snap.Delivery.Timestamp
	latest, err := w.store.Put(ctx, b)
	if err != nil {
		w.metrics.Compactions.WithLabelValues(string(b.Tier), "error").Inc()
		return fmt.Errorf("store briefing: %w", err)
	}
	st := w.status(snap, briefd.OutcomeCompacted, "", res.Reason)
	st.Tokens, st.TriggerTokens, st.BoundaryID, st.TokensAfter = b.TokensBefore, res.TriggerTokens, b.BoundaryID, b.TokensAfter
	if err := w.store.PutStatus(ctx, st); err != nil {
		w.metrics.Compactions.WithLabelValues(string(b.Tier), "error").Inc()
		return fmt.Errorf("store status: %w", err)
	}
	elapsed := time.Since(start)
	ev := audit.Compacted(b)
	ev.SnapshotSeq, ev.Seq = snap.StreamSeq, snap.Seq
	ev.MessagesBefore, ev.MessagesAfter = len(snap.Messages), len(res.Messages)
	ev.DurationMS = float64(elapsed.Microseconds()) / 1000
	ev.Attempt = int(snap.Delivery.Attempt)
	ev.SummarizerAttempts = len(res.Attempts)
	if w.cfg.Summarizer != nil {
		ev.LLM = llmReport(res)
	}
	ev.Coverage = coverage(res.Coverage)
	if err := w.auditor.Publish(ctx, ev); err != nil {
		// The briefing is stored; the retry stores it again idempotently.
		// If this publish did reach the stream (a lost ack), the retry's
		// event, whose id names the new attempt, records it a second time.
		w.metrics.Compactions.WithLabelValues(string(b.Tier), "error").Inc()
		return fmt.Errorf("audit: %w", err)
	}
	w.metrics.Compactions.WithLabelValues(string(b.Tier), "compacted").Inc()
	if ev.LLM != nil && ev.LLM.Outcome == "fallback" {
		w.metrics.LLMFallbacks.Inc()
	}
	w.metrics.Duration.WithLabelValues(string(b.Tier)).Observe(elapsed.Seconds())
	w.metrics.TokensSaved.Add(float64(max(b.TokensBefore-b.TokensAfter, 0)))
	w.metrics.TokensIn.Add(float64(b.SpanTokens))
	if !snap.Delivery.Timestamp.IsZero() {
		w.metrics.PublishToStore.Observe(time.Since(snap.Delivery.Timestamp).Seconds())
	}
	log.Info("compacted", "boundary", b.BoundaryID, "tier", b.Tier, "tokens_before", b.TokensBefore,
		"tokens_after", b.TokensAfter, "latest", latest, "duration", elapsed)
	return nil
}

// previous returns the briefing that the snapshot's history already carries
// (the agent spliced it in), so chained compaction can merge its ledger.
// A briefing the store no longer has (expired) is not an error: the engine
// then folds the spliced text alone.
func (w *Worker) previous(ctx context.Context, snap *queue.Snapshot) (*briefd.Briefing, error) {
	var boundary string
	for i := range snap.Messages {
		if snap.Messages[i].IsBriefing() {
			boundary = snap.Messages[i].Metadata[briefd.MetaBoundary]
		}
	}
	if boundary == "" {
		return nil, nil
	}
	b, err := w.store.Get(ctx, snap.Tenant, snap.ConversationID, boundary)
	if errors.Is(err, cache.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// reject records an invalid snapshot on the audit stream and returns a
// permanent error, so the queue terminates it and writes a dead letter:
// the worker goes on with the next snapshot.
func (w *Worker) reject(ctx context.Context, log *slog.Logger, snap *queue.Snapshot, cause error) error {
	w.metrics.Rejected.Inc()
	w.metrics.Compactions.WithLabelValues("none", "rejected").Inc()
	log.Warn("snapshot rejected", "reason", cause)
	ev := w.event(audit.TypeRejected, snap)
	ev.Reason, ev.Error = audit.ReasonInvalidHistory, cause.Error()
	if errors.Is(cause, briefd.ErrInvalidControl) {
		ev.Reason = audit.ReasonInvalidControl
	}
	var ve *briefd.ValidationError
	if errors.As(cause, &ve) {
		ev.MessageID = ve.MessageID
	}
	if err := w.auditor.Publish(ctx, ev); err != nil {
		log.Error("audit of a rejected snapshot failed", "error", err)
	}
	// The agent hears of it too; the queue dead-letters it either way.
	if err := w.store.PutStatus(ctx, w.status(snap, briefd.OutcomeRejected, ev.Reason, cause.Error())); err != nil {
		log.Error("status of a rejected snapshot failed", "error", err)
	} else {
		w.told.Store(snap.StreamSeq, true)
	}
	return queue.Permanent(cause)
}

// status starts the verdict on snap.
func (w *Worker) status(snap *queue.Snapshot, outcome briefd.Outcome, reason, detail string) *briefd.Status {
	return &briefd.Status{Tenant: snap.Tenant, ConversationID: snap.ConversationID, Seq: snap.Seq, SnapshotSeq: snap.StreamSeq,
		Outcome: outcome, Reason: reason, Detail: detail, Messages: len(snap.Messages), At: time.Now().UTC()}
}

// coverage converts the briefing writer's report into the audit event's
// (a documented wire format, kept apart from the writer's own type).
func coverage(c *brief.Coverage) *audit.Coverage {
	if c == nil {
		return nil
	}
	return &audit.Coverage{
		UserMessages: c.UserMessages, UserVerbatim: c.UserVerbatim,
		SpanIdentifiers: c.SpanIdentifiers, IdentifiersKept: c.IdentifiersKept,
		Files: c.Files, Records: c.Records, Errors: c.Errors,
		Steps: c.Steps, StepsShown: c.StepsShown, StepsLeftOut: c.StepsLeftOut, LeftOutIDs: c.LeftOutIDs,
	}
}

// event starts an audit event about snap.
func (w *Worker) event(typ audit.Type, snap *queue.Snapshot) audit.Event {
	return audit.Event{Type: typ, Time: time.Now(), Tenant: snap.Tenant, ConversationID: snap.ConversationID,
		SnapshotSeq: snap.StreamSeq, Seq: snap.Seq, Attempt: int(snap.Delivery.Attempt)}
}

// hooks turns queue outcomes into metrics and audit events. Dead letters
// come from the queue (malformed manifests never reach handle), so their
// audit event is written here.
func (w *Worker) hooks() queue.Hooks {
	return queue.Hooks{
		Ready: w.healthErr,
		OnSettled: func(ref queue.Ref, outcome queue.Outcome, err error, took time.Duration) {
			switch outcome {
			case queue.OutcomeSuperseded:
				w.metrics.Superseded.Inc()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				ev := audit.Event{Type: audit.TypeSkipped, Tenant: ref.Tenant, ConversationID: ref.ConversationID,
					SnapshotSeq: ref.StreamSeq, Seq: ref.Seq, Attempt: int(ref.Attempt), Reason: audit.SkipSuperseded,
					Error: "a newer snapshot of the conversation is in the stream"}
				if err := w.auditor.Publish(ctx, ev); err != nil {
					w.log.Warn("audit of a superseded snapshot failed", "tenant", ref.Tenant, "conversation", ref.ConversationID, "error", err)
				}
			case queue.OutcomeRetried:
				w.metrics.Retries.Inc()
			case queue.OutcomeDeferred:
				w.metrics.Deferred.Inc()
			}
		},
		OnDeadLetter: func(rec queue.DeadLetter) {
			w.metrics.DeadLetters.Inc()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			reason := audit.ReasonMaxDeliveries
			if rec.Permanent {
				reason = audit.ReasonMalformed
			}
			ev := audit.Event{Type: audit.TypeDeadLettered, Time: rec.At, Tenant: rec.Tenant,
				ConversationID: rec.ConversationID, SnapshotSeq: rec.StreamSeq, Seq: rec.Seq, Reason: reason,
				Error: rec.Reason, Deliveries: int(rec.Deliveries)}
			if ev.ConversationID == "" {
				// A subject the queue could not parse: still on the record,
				// under a placeholder, with the subject in the detail.
				ev.ConversationID = "_"
				ev.Error = fmt.Sprintf("subject %q: %s", rec.Subject, rec.Reason)
			}
			if err := w.auditor.Publish(ctx, ev); err != nil {
				w.log.Error("audit of a dead letter failed", "conversation", rec.ConversationID, "error", err)
			}
			if _, told := w.told.LoadAndDelete(rec.StreamSeq); told || !queue.ValidToken(rec.Tenant) || !queue.ValidToken(rec.ConversationID) {
				// handle told the agent already (with the precise
				// reason), or there is no conversation to tell.
				return
			}
			outcome := briefd.OutcomeFailed
			if rec.Permanent {
				outcome = briefd.OutcomeRejected
			}
			st := &briefd.Status{Tenant: rec.Tenant, ConversationID: rec.ConversationID, Seq: rec.Seq, SnapshotSeq: rec.StreamSeq,
				Outcome: outcome, Reason: reason, Detail: rec.Reason, At: rec.At}
			if err := w.store.PutStatus(ctx, st); err != nil {
				w.log.Error("status of a dead letter failed", "conversation", rec.ConversationID, "error", err)
			}
		},
	}
}

// llmReport turns a compaction's summarizer attempts into the audit
// event's record of them, bounded.
func llmReport(res *compact.Result) *audit.LLMReport {
	r := &audit.LLMReport{Outcome: "accepted"}
	if res.Briefing == nil || res.Briefing.Tier == briefd.TierDeterministic {
		r.Outcome = "fallback"
		r.Fallback = clipText(res.SummarizerError, 500)
	}
	for i, a := range res.Attempts {
		if i == audit.MaxLLMAttempts {
			break
		}
		la := audit.LLMAttempt{Model: a.Model, Prompt: a.Prompt, Outcome: a.Outcome, Error: clipText(a.Error, 500),
			DurationMS: float64(a.Elapsed.Microseconds()) / 1000, Feedback: a.Feedback}
		for _, v := range a.Verdicts {
			la.Verdicts = append(la.Verdicts, audit.Verdict{Rule: v.Rule, Passed: v.Passed, Failures: v.Failures})
		}
		r.Attempts = append(r.Attempts, la)
	}
	return r
}

// clipText cuts s to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// boundedStore gives each call to the store its own deadline within the
// caller's (Config.OpTimeout).
type boundedStore struct {
	Store
	timeout time.Duration
}

func (s boundedStore) Put(ctx context.Context, b *briefd.Briefing) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.Store.Put(ctx, b)
}

func (s boundedStore) Get(ctx context.Context, tenant, conv, boundaryID string) (*briefd.Briefing, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.Store.Get(ctx, tenant, conv, boundaryID)
}

func (s boundedStore) PutStatus(ctx context.Context, st *briefd.Status) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.Store.PutStatus(ctx, st)
}

// boundedAuditor gives each audit event its own deadline (Config.OpTimeout).
type boundedAuditor struct {
	Auditor
	timeout time.Duration
}

func (a boundedAuditor) Publish(ctx context.Context, ev audit.Event) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return a.Auditor.Publish(ctx, ev)
}
