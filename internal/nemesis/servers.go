package nemesis

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/briefd/briefd/internal/openaitest"
)

// startTimeout bounds how long a server may take to answer after a start.
const startTimeout = 30 * time.Second

// natsNode is one nats-server process: alone, or one node of a cluster.
type natsNode struct {
	*proc
	port int
}

// natsServers is the run's NATS: one node, or a cluster whose nodes are
// routed to each other (R3 streams survive the loss of one).
type natsServers struct {
	nodes []*natsNode
}

// startNATS writes each node's configuration in dir and starts n nodes of
// bin, then waits until JetStream answers.
func startNATS(ctx context.Context, dir, bin string, n int, jsExtra string) (*natsServers, error) {
	ports, cports := make([]int, n), make([]int, n)
	for i := range n {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
		if cports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	s := &natsServers{}
	for i := range n {
		name := fmt.Sprintf("nats-%d", i+1)
		ndir := filepath.Join(dir, name)
		if err := os.MkdirAll(ndir, 0o755); err != nil {
			return nil, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "server_name: %s\nlisten: %s\n", name, loopback(ports[i]))
		fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  %s\n}\n", filepath.Join(ndir, "js"), jsExtra)
		if n > 1 {
			var routes []string
			for j, p := range cports {
				if j != i {
					routes = append(routes, "nats-route://"+loopback(p))
				}
			}
			fmt.Fprintf(&b, "cluster {\n  name: nemesis\n  listen: %s\n  routes: [%s]\n}\n", loopback(cports[i]), strings.Join(routes, ", "))
		}
		conf := filepath.Join(ndir, "nats.conf")
		if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		node := &natsNode{port: ports[i], proc: &proc{name: name, path: bin, args: []string{"-c", conf},
			logPath: filepath.Join(dir, name+".log")}}
		s.nodes = append(s.nodes, node)
	}
	for _, node := range s.nodes {
		if err := node.start(); err != nil {
			s.stop()
			return nil, err
		}
	}
	for _, node := range s.nodes {
		if err := node.waitListening(loopback(node.port), startTimeout); err != nil {
			s.stop()
			return nil, err
		}
	}
	if err := s.waitJetStream(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// urls are the client URLs of every node, comma separated.
func (s *natsServers) urls() string {
	u := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		u[i] = "nats://" + loopback(n.port)
	}
	return strings.Join(u, ",")
}

// waitJetStream waits until the servers answer JetStream requests (in a
// cluster: a meta leader is elected).
func (s *natsServers) waitJetStream(ctx context.Context) error {
	nc, err := nats.Connect(s.urls(), nats.Name("briefd-nemesis-setup"))
	if err != nil {
		return fmt.Errorf("connect to nats-server: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		_, err := js.AccountInfo(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats-server: no JetStream after %s: %w (logs: %s)", startTimeout, err, s.nodes[0].logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *natsServers) stop() {
	for _, n := range s.nodes {
		n.stop(syscall.SIGTERM, 10*time.Second)
	}
}

// redisServer is a redis-server process that keeps what it acknowledged
// across a crash: append-only file, fsync on every write.
type redisServer struct {
	*proc
	port int
}

func startRedis(ctx context.Context, dir, bin string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	rdir := filepath.Join(dir, "redis")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return nil, err
	}
	r := &redisServer{port: port, proc: &proc{name: "redis", path: bin, logPath: filepath.Join(dir, "redis.log"),
		args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", rdir,
			"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--loglevel", "warning"}}}
	if err := r.start(); err != nil {
		return nil, err
	}
	if err := r.waitReady(ctx); err != nil {
		r.kill()
		return nil, err
	}
	return r, nil
}

func (r *redisServer) addr() string { return loopback(r.port) }

// waitReady waits until the server answers PING (after a restart: once it
// has loaded its append-only file).
func (r *redisServer) waitReady(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server: no PING reply after %s: %w (log: %s)", startTimeout, err, r.logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// workerProc is one `worker run` process.
type workerProc struct {
	*proc
	httpAddr string
}

// workerStartTimeout bounds a worker's start: workers started together on
// a fresh cluster race to create the streams and retry for a while.
const workerStartTimeout = 2 * time.Minute

// waitReady waits until the worker's /readyz answers 200.
func (w *workerProc) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, workerStartTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.httpAddr+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if !w.running() {
			return fmt.Errorf("%s exited at start (log: %s)", w.name, w.logPath)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %s (log: %s)", w.name, workerStartTimeout, last, w.logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fakeLLM is an OpenAI-compatible endpoint (internal/openaitest) on a fixed
// loopback port that an outage takes down (connections refused, requests
// in flight cut) and brings back up on the same port.
type fakeLLM struct {
	addr    string
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
}

// llmReply passes the cascade's form checks (sections, no tags, nothing
// claimed done, no identifier); the fidelity gate may still send it back,
// after which the deterministic briefing is stored, which is a valid
// outcome here: the run tests delivery, not prose.
const llmReply = `TASK:
Continue the user's task as described in the pinned messages.
CURRENT STATE:
The agent inspected the environment and worked through several tool steps; the work is IN-PROGRESS.
NEXT:
Continue from the most recent messages kept after this briefing.`

func startLLM() (*fakeLLM, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	f := &fakeLLM{addr: loopback(port),
		handler: openaitest.NewHandler(openaitest.Reply(llmReply).WithLatency(150 * time.Millisecond))}
	return f, f.up()
}

// baseURL is what the workers' --llm-base-url names.
func (f *fakeLLM) baseURL() string { return "http://" + f.addr + "/v1" }

// up listens again on the endpoint's port.
func (f *fakeLLM) up() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		return nil
	}
	var ln net.Listener
	var err error
	for range 50 { // the port may linger a moment after down
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("fake LLM: listen %s: %w", f.addr, err)
	}
	f.srv = &http.Server{Handler: f.handler, ReadHeaderTimeout: 5 * time.Second}
	go f.srv.Serve(ln) // ends with Close in down
	return nil
}

// down closes the listener and every connection.
func (f *fakeLLM) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv == nil {
		return
	}
	_ = f.srv.Close() // the server is gone either way
	f.srv = nil
}

func (f *fakeLLM) isUp() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.srv != nil
}
