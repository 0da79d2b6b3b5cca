package natstest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Binary returns the nats-server binary installed on the machine (PATH,
// then /usr/sbin and /usr/bin), the version users of a distribution run
// (2.9 on Debian 12). It skips the test when there is none, unless CI is
// set, in which case the test fails: CI must not pass by skipping.
func Binary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"nats-server", "/usr/sbin/nats-server", "/usr/bin/nats-server"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatal("natstest: nats-server not found (CI is set, so this fails instead of skipping; apt-get install nats-server)")
	}
	t.Skip("natstest: nats-server not found on PATH; apt-get install nats-server to run this test")
	return ""
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// BuildBinary builds the nats-server version go.mod pins (the one the
// embedded server runs) into the user's cache directory, once per machine
// and version, and returns its path. It needs no network: the module is
// already in the module cache.
func BuildBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2").Output()
		if err != nil {
			buildOnce.err = fmt.Errorf("go list nats-server: %w", err)
			return
		}
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		path := filepath.Join(dir, "briefd-natstest", "nats-server-"+strings.TrimSpace(string(out)))
		if _, err := os.Stat(path); err == nil {
			buildOnce.path = path
			return
		}
		tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build nats-server: %w\n%s", err, out)
			return
		}
		buildOnce.path, buildOnce.err = path, os.Rename(tmp, path)
	})
	if buildOnce.err != nil {
		t.Fatalf("natstest: %v", buildOnce.err)
	}
	return buildOnce.path
}

// ProcessOptions configure a nats-server process.
type ProcessOptions struct {
	// Name is the server name. Default "n1".
	Name string
	// JetStream holds extra lines of the jetstream block, e.g.
	// "sync_interval: always".
	JetStream string
	// Config holds extra top-level configuration, e.g. accounts.
	Config string
	// cluster settings, set by StartCluster.
	clusterName string
	clusterPort int
	routes      []int
}

// Process is one nats-server process owned by a test, with its JetStream
// store in t.TempDir(); it is killed when the test ends. Its methods are
// safe for concurrent use.
type Process struct {
	bin  string
	dir  string
	port int
	opts ProcessOptions

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// StartProcess runs bin on a free loopback port with JetStream on and
// waits until it accepts connections.
func StartProcess(t testing.TB, bin string, opts ProcessOptions) *Process {
	t.Helper()
	p := newProcess(t, bin, opts)
	if err := p.start(); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return p
}

func newProcess(t testing.TB, bin string, opts ProcessOptions) *Process {
	if opts.Name == "" {
		opts.Name = "n1"
	}
	p := &Process{bin: bin, dir: t.TempDir(), port: freePort(t), opts: opts}
	t.Cleanup(p.Kill)
	return p
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (p *Process) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %s\nlisten: 127.0.0.1:%d\n", p.opts.Name, p.port)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  %s\n}\n", filepath.Join(p.dir, "js"), p.opts.JetStream)
	if p.opts.clusterPort != 0 {
		var routes []string
		for _, r := range p.opts.routes {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", r))
		}
		fmt.Fprintf(&b, "cluster {\n  name: %s\n  listen: 127.0.0.1:%d\n  routes: [%s]\n}\n",
			p.opts.clusterName, p.opts.clusterPort, strings.Join(routes, ", "))
	}
	b.WriteString(p.opts.Config)
	b.WriteByte('\n')
	return b.String()
}

func (p *Process) start() error {
	conf := filepath.Join(p.dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(p.config()), 0o600); err != nil {
		return err
	}
	log := &bytes.Buffer{}
	cmd := exec.Command(p.bin, "-c", conf)
	w := &lockedWriter{buf: log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done, p.log = cmd, done, log
	p.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited at start:\n%s", p.bin, w.String())
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s not listening after 10s:\n%s", p.bin, w.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addr is the client host:port; URL the client URL. Both stay the same
// across Restart.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// URL returns nats://127.0.0.1:port.
func (p *Process) URL() string { return "nats://" + p.Addr() }

// Version runs the binary with --version.
func (p *Process) Version() string {
	out, _ := exec.Command(p.bin, "--version").Output()
	return strings.TrimSpace(string(out))
}

// Log returns what the server printed.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log == nil {
		return ""
	}
	return p.log.String()
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it
// to exit. It is safe to call more than once.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Start starts a killed server again on the same port and store.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	if err := p.start(); err != nil {
		t.Fatalf("natstest: restart: %v", err)
	}
}

// Connect opens a connection that reconnects forever (closed in
// t.Cleanup) and a JetStream context.
func (p *Process) Connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, p.URL(), opts...)
}

func connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond), nats.Name(t.Name())}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// Cluster is n nats-server processes routed to each other: a JetStream
// cluster on which R3 streams survive the loss of one node.
type Cluster struct {
	Nodes []*Process
}

// StartCluster runs n processes of bin as one cluster and waits until
// JetStream answers (a meta leader is elected).
func StartCluster(t testing.TB, bin string, n int, opts ProcessOptions) *Cluster {
	t.Helper()
	cports := make([]int, n)
	for i := range cports {
		cports[i] = freePort(t)
	}
	c := &Cluster{}
	for i := range n {
		o := opts
		o.Name = fmt.Sprintf("n%d", i+1)
		o.clusterName, o.clusterPort = "briefd-test", cports[i]
		for j, p := range cports {
			if j != i {
				o.routes = append(o.routes, p)
			}
		}
		c.Nodes = append(c.Nodes, newProcess(t, bin, o))
	}
	for _, p := range c.Nodes {
		if err := p.start(); err != nil {
			t.Fatalf("natstest: cluster: %v", err)
		}
	}
	_, js := c.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		_, err := js.AccountInfo(actx)
		acancel()
		if err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("natstest: cluster has no JetStream after 30s: %v\n%s", err, c.Nodes[0].Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// URLs returns the client URLs of every node, comma separated.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, p := range c.Nodes {
		urls[i] = p.URL()
	}
	return strings.Join(urls, ",")
}

// Connect connects to any node (reconnecting to the others).
func (c *Cluster) Connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, c.URLs(), opts...)
}

type lockedWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
