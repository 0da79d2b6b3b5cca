package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/envflag"
	"github.com/briefd/briefd/internal/natsembed"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/redact"
	"github.com/briefd/briefd/internal/worker"
)

// serviceFlags are the flags of `worker run`, each also read from BRIEFD_*.
type serviceFlags struct {
	natsURL, natsCreds, natsUser, natsPassword, natsToken string
	natsCA, natsCert, natsKey                             string
	redisURL, redisCA, redisUser, redisPassword           string
	redisCluster                                          bool
	store                                                 string
	embedded                                              bool
	dataDir, embeddedAddr                                 string
	httpAddr                                              string
	shutdownTimeout                                       time.Duration
	briefingTTL                                           time.Duration
	logLevel, logFormat                                   string
	auditReplicas, maxBoundaries, redisWaitReplicas       int
	historyCacheMiB                                       int
	redisWaitAOF                                          bool
	queue                                                 queue.Config
}

func (f *serviceFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.natsURL, "nats-url", nats.DefaultURL, "NATS server URLs, comma separated")
	fs.StringVar(&f.natsCreds, "nats-creds", "", "NATS credentials file (JWT + nkey)")
	fs.StringVar(&f.natsUser, "nats-user", "", "NATS user name")
	fs.StringVar(&f.natsPassword, "nats-password", "", "NATS password (prefer the environment variable)")
	fs.StringVar(&f.natsToken, "nats-token", "", "NATS token (prefer the environment variable)")
	fs.StringVar(&f.natsCA, "nats-tls-ca", "", "CA bundle to verify the NATS servers")
	fs.StringVar(&f.natsCert, "nats-tls-cert", "", "client certificate for NATS mutual TLS")
	fs.StringVar(&f.natsKey, "nats-tls-key", "", "client key for NATS mutual TLS")
	fs.StringVar(&f.redisURL, "redis-url", "", "Redis URL (redis:// or rediss:// for TLS); empty stores briefings in a JetStream key-value bucket")
	fs.StringVar(&f.redisCA, "redis-tls-ca", "", "CA bundle to verify Redis (with rediss://)")
	fs.StringVar(&f.redisUser, "redis-user", "", "Redis ACL user (deploy/redis/users.acl: worker); overrides the URL's")
	fs.StringVar(&f.redisPassword, "redis-password", "", "Redis password (prefer the environment variable); overrides the URL's")
	fs.BoolVar(&f.redisCluster, "redis-cluster", false, "Redis is a cluster: --redis-url names one or more of its nodes (redis://host1:6379?addr=host2:6379)")
	fs.StringVar(&f.store, "store", "auto", "briefing store: redis, kv, or auto (redis when --redis-url is set)")
	fs.DurationVar(&f.briefingTTL, "briefing-ttl", 0, "how long a conversation's briefings are kept after its last one (default 30 days; negative: never expire)")
	fs.BoolVar(&f.embedded, "embedded", false, "run an embedded single-node NATS server with JetStream (data in --data-dir) instead of connecting to --nats-url")
	fs.StringVar(&f.dataDir, "data-dir", ".briefd-data", "JetStream storage folder of the embedded server")
	fs.StringVar(&f.embeddedAddr, "embedded-addr", "127.0.0.1:4222", "client address of the embedded server (port 0: any free port)")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9090", "address of /healthz, /readyz and /metrics (loopback by default; :9090 for every interface, as in a container); empty disables")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long compactions in flight may finish before they are cancelled and handed back to the queue")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")

	q := &f.queue
	fs.StringVar(&q.Prefix, "prefix", queue.DefaultPrefix, "first subject token of every briefd subject")
	fs.IntVar(&q.Replicas, "replicas", 1, "replicas of the snapshot and body streams and the key-value bucket (3 in a 3-node cluster)")
	fs.IntVar(&q.DeadReplicas, "dead-replicas", 0, "replicas of the dead-letter stream and requeue bucket (default --replicas)")
	fs.IntVar(&f.auditReplicas, "audit-replicas", 0, "replicas of the audit stream (default --replicas)")
	fs.IntVar(&q.TenantConcurrency, "tenant-concurrency", 0, "compactions one tenant may hold in this process while another tenant has work (default concurrency/2)")
	fs.IntVar(&q.MaxRequeues, "max-requeues", 0, "redeliveries that are not attempts (shutdowns, deferrals) before a snapshot is dead-lettered anyway (default 50)")
	fs.IntVar(&f.maxBoundaries, "max-boundaries", 0, "boundaries kept per conversation (Redis or key-value store); older ones are deleted (default 16)")
	fs.BoolVar(&f.redisWaitAOF, "redis-wait-aof", false, "wait (WAITAOF, Redis 7.2+ with appendonly yes, checked at start) until each briefing is fsynced to Redis's append-only file before acknowledging its snapshot")
	fs.IntVar(&f.redisWaitReplicas, "redis-wait-replicas", 0, "wait until this many Redis replicas have each briefing before acknowledging its snapshot: in their append-only files with --redis-wait-aof (WAITAOF), else in memory (WAIT)")
	fs.DurationVar(&q.MaxAge, "max-age", 0, "how long snapshots and bodies are kept for replay (default 7 days)")
	fs.IntVar(&q.Concurrency, "concurrency", 0, "compactions in flight in this process (default 2 per CPU, at least 4; 256 with an LLM cascade)")
	fs.DurationVar(&q.AckWait, "ack-wait", 0, "redelivery timeout of an unacknowledged snapshot (default 30s)")
	fs.DurationVar(&q.MaxHandleTime, "max-handle-time", 0, "a compaction running longer is cancelled and retried; the LLM cascade is stopped a reserve before it and the deterministic briefing kept (default 10m)")
	fs.IntVar(&q.MaxDeliver, "max-deliver", 0, "attempts before a snapshot is dead-lettered (default 5)")
	fs.IntVar(&f.historyCacheMiB, "history-cache-mib", 0, "memory for the decoded histories of recent conversations, in MiB (the engines' memo of them takes about a quarter more): a conversation's next snapshot then fetches, decodes, validates and counts only its new messages (default 256)")
	fs.IntVar(&q.MaxAckPending, "max-ack-pending", 0, "unacknowledged snapshots across all workers (default 1000; raise it to workers × concurrency)")
	fs.StringVar(&q.Consumer, "consumer", "", "durable consumer shared by all workers (default briefd-workers)")
}

func runService(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.bind(fs)
	var engineCfg compact.Config
	bindEngineFlags(fs, &engineCfg)
	llm := bindLLMFlags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", summaryRun, "worker run [flags]")
	if err := envflag.Parse(fs, args, "BRIEFD_", nil); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	if f.historyCacheMiB < 0 {
		return usageErrorf("--history-cache-mib %d: must be positive", f.historyCacheMiB)
	}
	f.queue.ResolvedCacheBytes = f.historyCacheMiB << 20
	logger, summarizer, err := f.logging(stderr, llm)
	if err != nil {
		return err
	}

	// closed is closed once the connection is closed, so shutdown can wait
	// for Drain to finish before the deferred Close.
	closed := make(chan struct{})
	onClosed := nats.ClosedHandler(func(*nats.Conn) { close(closed) })
	nc, closeNATS, err := f.connect(ctx, logger, logger, onClosed)
	if err != nil {
		return err
	}
	defer closeNATS()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}

	var store briefingStore
	var closeStore func()
	err = worker.RetryTransient(ctx, logger, "opening the briefing store", func() error {
		store, closeStore, err = openStore(ctx, &f, js, true)
		return err
	})
	if err != nil {
		return err
	}
	defer closeStore()
	if err := checkWaitAOF(ctx, logger, store); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	w, err := worker.New(js, store, worker.Config{
		Queue: f.queue, Engine: engineCfg, Summarizer: summarizer,
		Audit:  audit.Config{Replicas: f.auditReplicas},
		Logger: logger, Registerer: reg,
	})
	if err != nil {
		return err
	}

	var httpSrv *http.Server
	if f.httpAddr != "" {
		ln, err := net.Listen("tcp", f.httpAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", f.httpAddr, err)
		}
		// The worker's own health check covers NATS and the store.
		httpSrv = &http.Server{Handler: worker.Handler(w, reg, nil), ReadHeaderTimeout: 5 * time.Second}
		go httpSrv.Serve(ln) // stopped by Shutdown below
		logger.Info("serving health and metrics", "addr", ln.Addr().String())
	}

	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	logger.Info("shutting down", "timeout", f.shutdownTimeout)
	// A fresh context: ctx is already cancelled. After the timeout the
	// worker cancels work and naks it; a second signal does so at once.
	stopCtx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	go func() {
		select {
		case <-again:
			logger.Warn("second signal: cancelling compactions in flight")
			cancel()
		case <-stopCtx.Done():
		}
	}()
	stopErr := w.Stop(stopCtx)
	if httpSrv != nil {
		httpSrv.Shutdown(stopCtx)
	}
	// Drain is asynchronous: wait for it (acks and naks in flight reach
	// the server) before the deferred Close.
	if err := nc.Drain(); err != nil {
		logger.Warn("drain NATS connection", "error", err)
	} else {
		select {
		case <-closed:
		case <-time.After(f.shutdownTimeout):
			logger.Warn("drain NATS connection: timed out")
		}
	}
	return stopErr
}

// connect connects to NATS as the flags say: to --nats-url, or, with
// --embedded, to an embedded server on --data-dir that it starts, logging
// to serverLog. closeFn closes the connection, then stops the embedded
// server.
func (f *serviceFlags) connect(ctx context.Context, logger, serverLog *slog.Logger, extra ...nats.Option) (nc *nats.Conn, closeFn func(), err error) {
	if !f.embedded {
		nc, err := connectNATS(f, logger, extra...)
		if err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	}
	host, port, err := splitHostPort(f.embeddedAddr)
	if err != nil {
		return nil, nil, usageErrorf("--embedded-addr: %v", err)
	}
	srv, err := natsembed.Start(ctx, natsembed.Options{StoreDir: f.dataDir, Host: host, Port: port, Logger: serverLog})
	if err != nil {
		return nil, nil, err
	}
	logger.Info("embedded NATS server", "url", srv.ClientURL(), "store", f.dataDir)
	stop := func() { srv.Shutdown(); srv.WaitForShutdown() }
	nc, err = nats.Connect(srv.ClientURL(), append([]nats.Option{nats.Name("briefd-worker")}, extra...)...)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect to embedded NATS: %w", err)
	}
	return nc, func() { nc.Close(); stop() }, nil
}

func connectNATS(f *serviceFlags, logger *slog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("briefd-worker"),
		// A worker started while NATS is down (a node restarting) waits
		// for it, not ready, rather than exiting.
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			logger.Warn("NATS disconnected", "error", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	opts = append(opts, extra...)
	if f.natsCreds != "" {
		opts = append(opts, nats.UserCredentials(f.natsCreds))
	}
	if f.natsUser != "" {
		opts = append(opts, nats.UserInfo(f.natsUser, f.natsPassword))
	}
	if f.natsToken != "" {
		opts = append(opts, nats.Token(f.natsToken))
	}
	if f.natsCA != "" {
		opts = append(opts, nats.RootCAs(f.natsCA))
	}
	if f.natsCert != "" || f.natsKey != "" {
		opts = append(opts, nats.ClientCert(f.natsCert, f.natsKey))
	}
	nc, err := nats.Connect(f.natsURL, opts...)
	if err != nil {
		// Not %w: a parse error quotes the URL, password included.
		return nil, fmt.Errorf("connect to NATS at %s: %s", redact.URLs(f.natsURL), redact.Error(err, f.natsURL))
	}
	if !nc.IsConnected() {
		logger.Warn("NATS not reachable yet; retrying", "url", redact.URLs(f.natsURL))
	}
	return nc, nil
}

// briefingStore is what the commands use of a briefing store: the
// worker's needs plus Latest for replay.
type briefingStore interface {
	worker.Store
	Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error)
}

// kvBucket is the key-value bucket of a prefix: briefd_briefings for the
// default prefix, <prefix>_briefings otherwise, so deployments told apart
// by --prefix never share briefings.
func kvBucket(prefix string) string {
	if prefix == "" || prefix == queue.DefaultPrefix {
		return cache.DefaultBucket
	}
	return strings.NewReplacer(".", "_").Replace(prefix) + "_briefings"
}

// openStore returns the briefing store the flags select and a close
// function. A service (configure true) creates or updates the key-value
// bucket with its flags; a diagnostic opens it as it is and writes nothing.
func openStore(ctx context.Context, f *serviceFlags, js jetstream.JetStream, configure bool) (briefingStore, func(), error) {
	kind := f.store
	if kind == "auto" {
		kind = "kv"
		if f.redisURL != "" {
			kind = "redis"
		}
	}
	switch kind {
	case "redis":
		if f.redisURL == "" {
			return nil, nil, usageErrorf("--store redis needs --redis-url")
		}
		rdb, err := f.redisClient()
		if err != nil {
			return nil, nil, err
		}
		return cache.NewRedisStore(rdb, cache.RedisConfig{Prefix: f.queue.Prefix, TTL: f.briefingTTL,
			MaxBoundaries: f.maxBoundaries, WaitAOF: f.redisWaitAOF, WaitReplicas: f.redisWaitReplicas}), func() { rdb.Close() }, nil
	case "kv":
		cfg := cache.KVConfig{Bucket: kvBucket(f.queue.Prefix), Replicas: f.queue.Replicas, TTL: f.briefingTTL, MaxBoundaries: f.maxBoundaries}
		open := cache.OpenKVStore
		if configure {
			open = cache.NewKVStore
		}
		kv, err := open(ctx, js, cfg)
		if err != nil {
			return nil, nil, err
		}
		return kv, func() {}, nil
	default:
		return nil, nil, usageErrorf("--store must be redis, kv or auto, not %q", f.store)
	}
}

// checkWaitAOF refuses to start a worker that must wait for WAITAOF on a
// server that cannot (Redis before 7.2, or no append-only file): every
// briefing would fail. A server that does not answer yet is left to the
// readiness check, which asks the same.
func checkWaitAOF(ctx context.Context, logger *slog.Logger, store briefingStore) error {
	rs, ok := store.(*cache.RedisStore)
	if !ok || !rs.WaitsForAOF() {
		return nil
	}
	err := rs.CheckWaitAOF(ctx)
	if errors.Is(err, cache.ErrNoWaitAOF) {
		return fmt.Errorf("--redis-wait-aof: %w (or run Redis with appendfsync always, without this flag)", err)
	}
	if err != nil {
		logger.Warn("cannot check now that Redis can WAITAOF; the readiness check will", "error", err)
	}
	return nil
}

// redisClient returns the client --redis-url names: one server, or with
// --redis-cluster a Redis Cluster reached through the nodes the URL lists
// (redis://host1:6379?addr=host2:6379&addr=host3:6379; one is enough, the
// client learns the others), following the cluster's slots. A
// conversation's keys share one hash tag, so each put runs on one node.
func (f *serviceFlags) redisClient() (redis.UniversalClient, error) {
	tlsCA := func(cur *tls.Config) (*tls.Config, error) {
		if f.redisCA == "" {
			return cur, nil
		}
		pem, err := os.ReadFile(f.redisCA)
		if err != nil {
			return nil, fmt.Errorf("read --redis-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--redis-tls-ca %s holds no PEM certificate", f.redisCA)
		}
		if cur == nil {
			cur = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		cur.RootCAs = pool
		return cur, nil
	}
	if f.redisCluster {
		opt, err := redis.ParseClusterURL(f.redisURL)
		if err != nil {
			return nil, usageErrorf("--redis-url: %s", redact.Error(err, f.redisURL))
		}
		if opt.TLSConfig, err = tlsCA(opt.TLSConfig); err != nil {
			return nil, err
		}
		opt.Username, opt.Password = cmp.Or(f.redisUser, opt.Username), cmp.Or(f.redisPassword, opt.Password)
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(f.redisURL)
	if err != nil {
		return nil, usageErrorf("--redis-url: %s", redact.Error(err, f.redisURL))
	}
	if opt.TLSConfig, err = tlsCA(opt.TLSConfig); err != nil {
		return nil, err
	}
	opt.Username, opt.Password = cmp.Or(f.redisUser, opt.Username), cmp.Or(f.redisPassword, opt.Password)
	return redis.NewClient(opt), nil
}

// slogRedis sends go-redis's own log lines through slog, so that
// --log-format json holds for them too.
type slogRedis struct{ log *slog.Logger }

func (l slogRedis) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "go-redis")
}

// logging builds the logger the flags ask for and, with it, the LLM
// cascade (nil when no model is configured).
func (f *serviceFlags) logging(stderr io.Writer, llm func(*slog.Logger) (compact.Summarizer, error)) (*slog.Logger, compact.Summarizer, error) {
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	redis.SetLogger(slogRedis{logger})
	summarizer, err := llm(logger)
	if err != nil {
		return nil, nil, fmt.Errorf("llm cascade: %w", err)
	}
	return logger, summarizer, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
	}
}

// splitHostPort parses host:port for the embedded server; port 0 becomes
// -1, the server's "any free port".
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if port == 0 {
		port = -1
	}
	return host, port, nil
}
