package nemesis

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/queue"
)

// Config configures a run. Zero fields take the defaults their comments
// name; Worker and Histories are required.
type Config struct {
	// Dir holds the servers' data and every process's log. Default: a new
	// temporary folder, removed after a run that found nothing unless
	// Keep is set.
	Dir  string
	Keep bool

	// NATSServer is the nats-server binary. Default: nats-server on PATH,
	// then /usr/sbin/nats-server.
	NATSServer string
	// NATSJetStream holds extra lines of the servers' jetstream block,
	// e.g. "sync_interval: always" (nats-server 2.10+).
	NATSJetStream string
	// Nodes is 1 (one server, R1 streams) or 3 (a cluster, R3 streams).
	// Default 1.
	Nodes int
	// Store is "redis" (default) or "kv" (the JetStream key-value bucket).
	Store string
	// RedisServer is the redis-server binary. Default: redis-server on
	// PATH, then /usr/bin/redis-server.
	RedisServer string
	// Worker is the `worker` binary of this repository (go build
	// ./cmd/worker).
	Worker string
	// Workers is the number of worker processes. Default 2.
	Workers int
	// Concurrency is each worker's --concurrency. Default 4.
	Concurrency int
	// AckWait is the consumer's redelivery timeout (--ack-wait). Default
	// 5s, so that work a killed or paused worker held comes back soon.
	AckWait time.Duration
	// NoLLM runs the workers without the LLM cascade; by default they
	// call a fake endpoint that LLMOutage faults take down.
	NoLLM bool
	// WorkerArgs are more flags for every worker.
	WorkerArgs []string
	// Prefix is the subject and key prefix. Default "briefd".
	Prefix string

	// Agents play Histories concurrently, spread over Tenants tenants
	// (default 4), each at TurnsPerSecond (default 1), naming a context
	// window of ContextWindow tokens (default 10,000, so that the
	// histories compact). AckTimeout is the client's wait for acks before
	// it re-sends (default 5s).
	Agents         int
	Tenants        int
	Histories      []*briefd.History
	TurnsPerSecond float64
	ContextWindow  int
	AckTimeout     time.Duration

	// Duration is how long the agents publish; faults fall within it.
	// Default 1 minute.
	Duration time.Duration
	// Drain bounds the wait, after publishing, for every snapshot to be
	// acknowledged and handled. Default 3 minutes.
	Drain time.Duration
	// Faults is the schedule of faults.
	Faults Schedule
	// Poison is the number of invalid snapshots one more tenant
	// ("flood") publishes at once, PoisonAt of the way into the run
	// (default 0.25).
	Poison   int
	PoisonAt float64
	// Seed makes the schedule and the agents' timing repeatable; 0 picks
	// one at random (printed in the log).
	Seed uint64

	// Logger receives the run's progress (faults, phases). Default: none.
	Logger *slog.Logger
}

// PoisonTenant is the tenant of a poison flood.
const PoisonTenant = "flood"

// FloodWindow is how long after a flood's start (PoisonAt of the way into
// the run, with or without a flood) the report measures the other
// tenants' publish-to-briefing latency apart.
const FloodWindow = 30 * time.Second

func (c Config) withDefaults() Config {
	c.Nodes = cmp.Or(c.Nodes, 1)
	c.Store = cmp.Or(c.Store, "redis")
	c.Workers = cmp.Or(c.Workers, 2)
	c.Concurrency = cmp.Or(c.Concurrency, 4)
	c.AckWait = cmp.Or(c.AckWait, 5*time.Second)
	c.Prefix = cmp.Or(c.Prefix, queue.DefaultPrefix)
	c.Tenants = cmp.Or(c.Tenants, 4)
	c.TurnsPerSecond = cmp.Or(c.TurnsPerSecond, 1)
	c.ContextWindow = cmp.Or(c.ContextWindow, 10000)
	c.AckTimeout = cmp.Or(c.AckTimeout, 5*time.Second)
	c.Duration = cmp.Or(c.Duration, time.Minute)
	c.Drain = cmp.Or(c.Drain, 3*time.Minute)
	c.PoisonAt = cmp.Or(c.PoisonAt, 0.25)
	if c.Seed == 0 {
		c.Seed = mrand.Uint64()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Worker == "":
		return errors.New("nemesis: no worker binary (go build -o worker ./cmd/worker)")
	case len(c.Histories) == 0:
		return errors.New("nemesis: no histories")
	case c.Agents <= 0:
		return errors.New("nemesis: Agents must be > 0")
	case c.Nodes != 1 && c.Nodes != 3:
		return fmt.Errorf("nemesis: Nodes must be 1 or 3, not %d", c.Nodes)
	case c.Store != "redis" && c.Store != "kv":
		return fmt.Errorf("nemesis: Store must be redis or kv, not %q", c.Store)
	case c.Tenants <= 0 || c.TurnsPerSecond <= 0 || c.PoisonAt < 0 || c.PoisonAt >= 1:
		return errors.New("nemesis: Tenants and TurnsPerSecond must be > 0, PoisonAt in [0, 1)")
	}
	for k, n := range c.Faults {
		if n > 0 && (k == RestartRedis || k == KillRedis) && c.Store != "redis" {
			return fmt.Errorf("nemesis: %s faults need the redis store", k)
		}
		if n > 0 && k == LLMOutage && c.NoLLM {
			return errors.New("nemesis: llm-outage faults need the LLM cascade")
		}
	}
	return nil
}

func (c Config) kvBucket() string {
	if c.Prefix == queue.DefaultPrefix {
		return cache.DefaultBucket
	}
	return strings.NewReplacer(".", "_").Replace(c.Prefix) + "_briefings"
}

func (c Config) replicas() int {
	if c.Nodes == 3 {
		return 3
	}
	return 1
}

// Run starts the servers and the workers as processes of their own, lets
// the agents publish while the schedule injects faults, heals every
// fault, waits for the workers to settle every snapshot, and checks the
// guarantees. The error is about the run itself (a server that would not
// start); what the run found is in the Report.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if cfg.NATSServer == "" {
		if cfg.NATSServer, err = lookBinary("nats-server", "/usr/sbin/nats-server", "/usr/bin/nats-server"); err != nil {
			return nil, fmt.Errorf("nemesis: nats-server binary: %w", err)
		}
	}
	if cfg.Store == "redis" && cfg.RedisServer == "" {
		if cfg.RedisServer, err = lookBinary("redis-server", "/usr/bin/redis-server"); err != nil {
			return nil, fmt.Errorf("nemesis: redis-server binary: %w", err)
		}
	}
	made := false
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "briefd-nemesis-"); err != nil {
			return nil, err
		}
		made = true
	} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if made && !cfg.Keep && err == nil && rep.OK() {
			_ = os.RemoveAll(cfg.Dir)
			rep.Dir = ""
		}
	}()
	idb := make([]byte, 3)
	_, _ = rand.Read(idb)
	runID := "n" + hex.EncodeToString(idb)
	log.Info("nemesis: starting", "dir", cfg.Dir, "seed", cfg.Seed, "faults", cfg.Faults.String())

	sys := &system{ackWait: cfg.AckWait}
	if sys.nats, err = startNATS(ctx, cfg.Dir, cfg.NATSServer, cfg.Nodes, cfg.NATSJetStream); err != nil {
		return nil, err
	}
	defer sys.nats.stop()
	if cfg.Store == "redis" {
		if sys.redis, err = startRedis(ctx, cfg.Dir, cfg.RedisServer); err != nil {
			return nil, err
		}
		defer sys.redis.stop(syscall.SIGTERM, 10*time.Second)
	}
	if !cfg.NoLLM {
		if sys.llm, err = startLLM(); err != nil {
			return nil, err
		}
		defer sys.llm.down()
	}
	if err := startWorkers(ctx, &cfg, sys); err != nil {
		return nil, err
	}
	defer func() {
		for _, w := range sys.workers {
			_ = w.resume()
			w.stop(syscall.SIGTERM, 15*time.Second)
		}
	}()

	// The harness's own connections: the agents', and the checker's.
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.ReconnectBufSize(64 << 20)}
	anc, err := nats.Connect(sys.nats.urls(), append(opts, nats.Name("briefd-nemesis-agents"))...)
	if err != nil {
		return nil, fmt.Errorf("nemesis: connect: %w", err)
	}
	defer anc.Close()
	cnc, err := nats.Connect(sys.nats.urls(), append(opts, nats.Name("briefd-nemesis-checker"))...)
	if err != nil {
		return nil, fmt.Errorf("nemesis: connect: %w", err)
	}
	defer cnc.Close()
	cjs, err := jetstream.New(cnc)
	if err != nil {
		return nil, err
	}
	var rdb redis.UniversalClient
	var store latestReader
	obs := newObserver()
	octx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	if sys.redis != nil {
		rdb = redis.NewClient(&redis.Options{Addr: sys.redis.addr(), MaxRetries: 10})
		defer rdb.Close()
		store = cache.NewRedisStore(rdb, cache.RedisConfig{Prefix: cfg.Prefix})
		err = obs.watchRedis(octx, rdb, cfg.Prefix)
	} else {
		var kv *cache.KVStore
		if kv, err = cache.OpenKVStore(ctx, cjs, cache.KVConfig{Bucket: cfg.kvBucket()}); err == nil {
			store = kv
			err = obs.watchKV(octx, cjs, cfg.kvBucket())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nemesis: watch the store: %w", err)
	}

	ag, err := newAgents(&cfg, anc, rdb, runID, log)
	if err != nil {
		return nil, err
	}
	defer ag.close(context.WithoutCancel(ctx))

	rep = &Report{NATSVersion: cnc.ConnectedServerVersion(), Nodes: cfg.Nodes, Replicas: cfg.replicas(), Store: cfg.Store,
		Workers: cfg.Workers, LLM: !cfg.NoLLM, Agents: cfg.Agents, Tenants: cfg.Tenants, Duration: cfg.Duration,
		Schedule: cfg.Faults, Dir: cfg.Dir}
	if v := rep.NATSVersion; v != "" {
		rep.NATSVersion = "nats-server " + v
	}

	// Publishing, faults and the poison flood, for Duration.
	rng := mrand.New(mrand.NewPCG(cfg.Seed, 0))
	in := &injector{sys: sys, log: log, rng: mrand.New(mrand.NewPCG(cfg.Seed, 1)), held: map[*workerProc]bool{}}
	plan := cfg.Faults.plan(cfg.Duration, rng)
	pctx, stopPublishing := context.WithTimeout(ctx, cfg.Duration)
	defer stopPublishing()
	start := time.Now()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		in.run(pctx, start, plan)
	}()
	var poison []poisonSnapshot
	poisonDone := make(chan error, 1)
	if cfg.Poison > 0 {
		go func() {
			select {
			case <-time.After(time.Duration(cfg.PoisonAt * float64(cfg.Duration))):
			case <-pctx.Done():
				poisonDone <- nil
				return
			}
			pjs, err := jetstream.New(anc, jetstream.WithPublishAsyncMaxPending(256))
			if err == nil {
				log.Info("nemesis: poison flood", "snapshots", cfg.Poison)
				poison, err = flood(context.WithoutCancel(ctx), pjs, cfg.Prefix, PoisonTenant, runID, cfg.Poison)
			}
			poisonDone <- err
		}()
	} else {
		poisonDone <- nil
	}
	log.Info("nemesis: publishing", "agents", cfg.Agents, "duration", cfg.Duration)
	ag.run(pctx, cfg.Seed)
	<-faultsDone
	if err := <-poisonDone; err != nil {
		log.Warn("nemesis: poison flood incomplete", "error", err)
	}
	rep.Faults = in.injected()

	// Heal what is left, let the agents' snapshots reach the stream and
	// the workers settle them.
	if err := sys.healAll(ctx); err != nil {
		return rep, fmt.Errorf("nemesis: %w", err)
	}
	dctx, cancelDrain := context.WithTimeout(ctx, cfg.Drain)
	defer cancelDrain()
	log.Info("nemesis: draining", "within", cfg.Drain)
	if err := ag.flush(dctx); err != nil {
		log.Warn("nemesis: client flush", "error", err)
	}
	qcfg := queue.Config{Prefix: cfg.Prefix}.WithDefaults()
	var last *jetstream.ConsumerInfo
	rep.PendingAtEnd, rep.AckPendingAtEnd, last = waitSettled(dctx, cjs, qcfg)
	if last != nil && (rep.PendingAtEnd > 0 || rep.AckPendingAtEnd > 0) {
		rep.violation("after the drain the consumer has %d undelivered and %d unacknowledged snapshots: ack floor at stream seq %d, delivered up to %d, %d redelivered, %d waiting pulls",
			rep.PendingAtEnd, rep.AckPendingAtEnd, last.AckFloor.Stream, last.Delivered.Stream, last.NumRedelivered, last.NumWaiting)
	}
	quiet(dctx, obs.count)
	stopObserving()

	// Check.
	convs := ag.conversations()
	rep.Published, rep.Refused, rep.ClientErrors = ag.published.Load(), ag.refused.Load(), ag.errs.Load()
	if p := ag.firstErr.Load(); p != nil {
		rep.FirstClientError = (*p).Error()
	}
	for _, w := range sys.workers {
		rep.UnplannedExits = append(rep.UnplannedExits, w.exits()...)
	}
	for _, n := range sys.nats.nodes {
		rep.UnplannedExits = append(rep.UnplannedExits, n.exits()...)
	}
	if sys.redis != nil {
		rep.UnplannedExits = append(rep.UnplannedExits, sys.redis.exits()...)
	}
	chk := &checker{js: cjs, qcfg: qcfg, store: store,
		acfg: audit.Config{Prefix: cfg.Prefix, Stream: queue.StreamBase(cfg.Prefix) + "_AUDIT"}}
	cctx, cancelCheck := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancelCheck()
	if err := chk.check(cctx, convs, poison, PoisonTenant, last, rep); err != nil {
		return rep, fmt.Errorf("nemesis: check: %w", err)
	}
	obs.mu.Lock()
	for _, g := range obs.snapBack {
		rep.RegressedSeen++
		rep.violation("%s/%s: the briefing of stream seq %d replaced that of seq %d", g.key.tenant, g.key.conv, g.now.snapshotSeq, g.before.snapshotSeq)
	}
	for _, g := range obs.boundBack {
		rep.BoundaryBack++
		rep.violation("%s/%s: the briefing of stream seq %d cuts at %s (position %d), before that of seq %d (%s, position %d)",
			g.key.tenant, g.key.conv, g.now.snapshotSeq, g.now.boundary, g.now.position, g.before.snapshotSeq, g.before.boundary, g.before.position)
	}
	// The whole run, and the 30 s from the moment a flood starts (or
	// would, in a run without one, for comparison).
	var lats, window []time.Duration
	from := start.Add(time.Duration(cfg.PoisonAt * float64(cfg.Duration)))
	for t, xs := range obs.latencies {
		if t == PoisonTenant {
			continue
		}
		for _, l := range xs {
			lats = append(lats, l.took)
			if !l.stored.Before(from) && l.stored.Before(from.Add(FloodWindow)) {
				window = append(window, l.took)
			}
		}
	}
	obs.mu.Unlock()
	rep.Briefings, rep.WindowBriefings = len(lats), len(window)
	rep.LatencyP50, rep.LatencyP99, rep.LatencyMax = latencyFigures(lats)
	rep.WindowP50, rep.WindowP99, rep.WindowMax = latencyFigures(window)
	for _, s := range rep.UnplannedExits {
		rep.violation("%s", s)
	}
	return rep, nil
}

// startWorkers starts cfg.Workers `worker run` processes and waits until
// each is ready.
func startWorkers(ctx context.Context, cfg *Config, sys *system) error {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BRIEFD_") && !strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			env = append(env, kv)
		}
	}
	for i := range cfg.Workers {
		port, err := freePort()
		if err != nil {
			return err
		}
		name := "worker-" + strconv.Itoa(i+1)
		args := []string{"run", "--nats-url", sys.nats.urls(), "--prefix", cfg.Prefix,
			"--http-addr", loopback(port), "--concurrency", strconv.Itoa(cfg.Concurrency),
			"--ack-wait", cfg.AckWait.String(), "--replicas", strconv.Itoa(cfg.replicas()),
			"--shutdown-timeout", "5s", "--log-format", "json"}
		if sys.redis != nil {
			args = append(args, "--store", "redis", "--redis-url", "redis://"+sys.redis.addr()+"/0")
		} else {
			args = append(args, "--store", "kv")
		}
		if sys.llm != nil {
			args = append(args, "--llm-base-url", sys.llm.baseURL(), "--llm-models", "nemesis-small",
				"--llm-api-key", "nemesis", "--llm-timeouts", "3s")
		}
		args = append(args, cfg.WorkerArgs...)
		w := &workerProc{httpAddr: loopback(port), proc: &proc{name: name, path: cfg.Worker, args: args, env: env,
			logPath: filepath.Join(cfg.Dir, name+".log")}}
		if err := w.start(); err != nil {
			return err
		}
		sys.workers = append(sys.workers, w)
	}
	for _, w := range sys.workers {
		if err := w.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitSettled waits until the shared consumer has delivered every
// snapshot and every delivery is acknowledged (or terminated), steadily
// for two seconds, or ctx ends; it returns what was left.
func waitSettled(ctx context.Context, js jetstream.JetStream, qcfg queue.Config) (pending, ackPending uint64, last *jetstream.ConsumerInfo) {
	steady := 0
	for {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := js.Consumer(ictx, qcfg.Streams().Snapshots, qcfg.Consumer)
		var info *jetstream.ConsumerInfo
		if err == nil {
			info, err = c.Info(ictx)
		}
		cancel()
		if err == nil {
			last = info
			pending, ackPending = info.NumPending, uint64(info.NumAckPending)
			if pending == 0 && ackPending == 0 {
				if steady++; steady >= 4 {
					return 0, 0, info
				}
			} else {
				steady = 0
			}
		}
		select {
		case <-ctx.Done():
			return pending, ackPending, last
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// quiet waits until count has not changed for a second, or ctx ends.
func quiet(ctx context.Context, count func() int) {
	last, same := count(), 0
	for same < 5 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		if n := count(); n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
}
