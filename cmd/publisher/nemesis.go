package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/briefd/briefd/internal/nemesis"
)

// nemesisCmd runs the whole system as processes of its own and injects
// faults while agents publish, then checks the delivery guarantees.
type nemesisCmd struct {
	cfg         nemesis.Config
	dir         string
	faults      string
	workerFlags string
	jsonOut     bool
	verbose     bool
}

func (c *nemesisCmd) Summary() string {
	return "Start nats-server, redis-server and workers as processes, kill, pause and restart them while agents publish, and check that no snapshot was lost, regressed or poisoned."
}

func (c *nemesisCmd) Synopsis() string {
	return "[--agents N] [--duration D] [--faults SCHEDULE] [--nodes 1|3] [flags]"
}

func (c *nemesisCmd) Flags(fs *flag.FlagSet) {
	cfg := &c.cfg
	fs.IntVar(&cfg.Agents, "agents", 200, "concurrent agents, each playing one history after another")
	fs.IntVar(&cfg.Tenants, "tenants", 4, "tenants the agents are spread over")
	fs.StringVar(&c.dir, "dir", "", "folder of history files (default ../shared/data/histories if present, else the embedded examples)")
	fs.Float64Var(&cfg.TurnsPerSecond, "turns-per-second", 1, "turns per second of each agent")
	fs.IntVar(&cfg.ContextWindow, "context-window", 10000, "context window named in the snapshots (tokens), small enough for the histories to compact")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Minute, "how long the agents publish; faults fall within it")
	fs.DurationVar(&cfg.Drain, "drain", 3*time.Minute, "after publishing, how long the workers may take to settle every snapshot")
	fs.StringVar(&c.faults, "faults", "10", "fault schedule: N (N of each of "+kindNames(nemesis.DefaultKinds)+"), kind=N,... (kinds: "+kindNames(nemesis.Kinds)+"; default=N for the default kinds), or none")
	fs.IntVar(&cfg.Nodes, "nodes", 1, "nats-server processes: 1, or 3 for a cluster with R3 streams")
	fs.StringVar(&cfg.Store, "store", "redis", "briefing store: redis (a redis-server process, append-only, fsync always) or kv (JetStream key-value)")
	fs.IntVar(&cfg.Workers, "workers", 2, "worker processes")
	fs.IntVar(&cfg.Concurrency, "concurrency", 4, "compactions in flight per worker")
	fs.DurationVar(&cfg.AckWait, "ack-wait", 5*time.Second, "the workers' --ack-wait: how soon a killed or paused worker's snapshots go to another")
	fs.BoolVar(&cfg.NoLLM, "no-llm", false, "run the workers without the LLM cascade (no fake endpoint, no llm-outage faults)")
	fs.StringVar(&c.workerFlags, "worker-flags", "", "more flags for every worker, space separated (e.g. \"--tenant-concurrency 2\")")
	fs.StringVar(&cfg.NATSServer, "nats-server", "", "nats-server binary (default: on PATH, then /usr/sbin/nats-server); for the version go.mod pins: go build -o /tmp/nats-server github.com/nats-io/nats-server/v2")
	fs.StringVar(&cfg.NATSJetStream, "nats-jetstream", "", "extra lines of the servers' jetstream block, e.g. \"sync_interval: always\" (nats-server 2.10+)")
	fs.StringVar(&cfg.RedisServer, "redis-server", "", "redis-server binary (default: on PATH)")
	fs.StringVar(&cfg.Worker, "worker-bin", "", "worker binary (default: briefd-worker on PATH, worker beside this program, or built with go build ./cmd/worker)")
	fs.IntVar(&cfg.Poison, "poison", 0, "invalid snapshots a separate tenant (\"flood\") publishes at once")
	fs.Float64Var(&cfg.PoisonAt, "poison-at", 0.25, "when the flood comes, as a fraction of --duration")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the schedule and the agents' timing (0: random, printed)")
	fs.StringVar(&cfg.Dir, "work-dir", "", "folder for the servers' data and the processes' logs (default: a temporary folder, removed after a run that found nothing)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the temporary folder after a run that found nothing")
	fs.BoolVar(&c.jsonOut, "json", false, "print the report as JSON")
	fs.BoolVar(&c.verbose, "verbose", false, "log the clients' warnings too, not only the run's phases and faults")
}

func kindNames(ks []nemesis.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func (c *nemesisCmd) Run(ctx context.Context, args []string, e *env) error {
	if len(args) != 0 {
		return usageErrorf("nemesis takes no arguments")
	}
	var err error
	if c.cfg.Faults, err = nemesis.ParseSchedule(c.faults); err != nil {
		return usageErrorf("--faults: %v", err)
	}
	c.cfg.WorkerArgs = strings.Fields(c.workerFlags)
	hs, src, err := (&loadCmd{dir: c.dir}).histories()
	if err != nil {
		return err
	}
	c.cfg.Histories = hs
	// The run's phases and faults always; the clients' warnings (a
	// publish re-sent during an outage) only with --verbose.
	c.cfg.Logger = slog.New(&phaseFilter{h: slog.NewTextHandler(e.stderr, nil), all: c.verbose})
	if c.cfg.Worker == "" {
		if c.cfg.Worker, err = findWorker(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "nemesis: %d agents over %d histories from %s for %s, faults %s\n",
		c.cfg.Agents, len(hs), src, c.cfg.Duration, c.cfg.Faults)
	rep, err := nemesis.Run(ctx, c.cfg)
	if rep != nil {
		if c.jsonOut {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(rep)
		} else {
			rep.Print(e.stdout)
		}
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errors.New("the run found violations of the guarantees")
	}
	return nil
}

// phaseFilter passes the run's own lines ("nemesis: ...") and, with all,
// every other line.
type phaseFilter struct {
	h   slog.Handler
	all bool
}

func (f *phaseFilter) Enabled(ctx context.Context, l slog.Level) bool { return f.h.Enabled(ctx, l) }

func (f *phaseFilter) Handle(ctx context.Context, r slog.Record) error {
	if f.all || strings.HasPrefix(r.Message, "nemesis: ") || r.Level >= slog.LevelError {
		return f.h.Handle(ctx, r)
	}
	return nil
}

func (f *phaseFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return &phaseFilter{h: f.h.WithAttrs(as), all: f.all}
}

func (f *phaseFilter) WithGroup(name string) slog.Handler {
	return &phaseFilter{h: f.h.WithGroup(name), all: f.all}
}

// findWorker finds the worker binary: briefd-worker on PATH (the image's
// name), worker beside this program, or else builds ./cmd/worker of the
// module in the current directory with the go tool.
func findWorker(ctx context.Context, e *env) (string, error) {
	if p, err := exec.LookPath("briefd-worker"); err == nil {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "worker")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	dir, err := os.MkdirTemp("", "briefd-nemesis-worker-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "worker")
	fmt.Fprintf(e.stderr, "nemesis: building the worker into %s\n", p)
	out, err := exec.CommandContext(ctx, "go", "build", "-o", p, "github.com/briefd/briefd/cmd/worker").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("no worker binary: pass --worker-bin, or run from the repository (go build ./cmd/worker: %v)\n%s", err, out)
	}
	return p, nil
}
