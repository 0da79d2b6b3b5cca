package nemesis_test

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/nemesis"
)

var workerOnce struct {
	sync.Once
	path string
	err  error
	dir  string
}

// workerBinary builds cmd/worker once per test binary: the run starts it
// as real processes, which faults kill and pause.
func workerBinary(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "briefd-nemesis-bin-")
		if err != nil {
			workerOnce.err = err
			return
		}
		workerOnce.dir = dir
		path := filepath.Join(dir, "worker")
		out, err := exec.Command("go", "build", "-o", path, "github.com/briefd/briefd/cmd/worker").CombinedOutput()
		if err != nil {
			workerOnce.err = err
			workerOnce.path = string(out)
			return
		}
		workerOnce.path = path
	})
	if workerOnce.err != nil {
		t.Fatalf("build the worker: %v\n%s", workerOnce.err, workerOnce.path)
	}
	return workerOnce.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workerOnce.dir != "" {
		os.RemoveAll(workerOnce.dir)
	}
	os.Exit(code)
}

func redisServer(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"redis-server", "/usr/bin/redis-server"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatal("redis-server not found (CI is set, so this fails instead of skipping)")
	}
	t.Skip("redis-server not found")
	return ""
}

// run is a nemesis run sized for CI: a few dozen agents, two faults of
// every kind (both restarts and both crashes of the servers), a small
// poison flood, every guarantee checked.
func run(t *testing.T, cfg nemesis.Config) *nemesis.Report {
	t.Helper()
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Worker = workerBinary(t)
	cfg.Histories = hs
	// The run's folder (every process's log) outlives a failing test.
	dir, err := os.MkdirTemp("", "briefd-"+t.Name()+"-")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = dir
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	rep, err := nemesis.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Logf("run took %s\n%s", time.Since(start).Round(time.Second), out.String())
	if !rep.OK() {
		t.Errorf("the run found violations (logs in %s)", cfg.Dir)
	} else {
		os.RemoveAll(cfg.Dir)
	}
	byKind := rep.FaultsByKind()
	for k, n := range cfg.Faults {
		if byKind[k] != n {
			t.Errorf("%s: %d faults injected, %d planned", k, byKind[k], n)
		}
	}
	if rep.Conversations < cfg.Agents || rep.Newest.Compacted == 0 {
		t.Errorf("too little work to prove anything: %d conversations, %d compacted", rep.Conversations, rep.Newest.Compacted)
	}
	return rep
}

func TestNemesis(t *testing.T) {
	faults, err := nemesis.ParseSchedule("default=2,nats-kill=2,redis-kill=2")
	if err != nil {
		t.Fatal(err)
	}
	run(t, nemesis.Config{
		NATSServer: natstest.Binary(t), RedisServer: redisServer(t),
		Agents: 24, Tenants: 3, TurnsPerSecond: 2, Duration: 30 * time.Second, Drain: 90 * time.Second,
		AckWait: 3 * time.Second, Faults: faults, Poison: 40, Seed: 1,
	})
}

// TestNemesisCluster is the same on a 3-node cluster with R3 streams,
// with nodes killed and restarted in turn: the faults that found the
// manifest-before-body and retry-ordering bugs of issue 10's cluster run.
func TestNemesisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("nemesis run on a cluster")
	}
	faults, err := nemesis.ParseSchedule("default=2,nats-kill=2")
	if err != nil {
		t.Fatal(err)
	}
	run(t, nemesis.Config{
		NATSServer: natstest.Binary(t), RedisServer: redisServer(t), Nodes: 3,
		Agents: 24, Tenants: 3, TurnsPerSecond: 2, Duration: 30 * time.Second, Drain: 90 * time.Second,
		AckWait: 3 * time.Second, Faults: faults, Poison: 40, Seed: 2,
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
