// Package redistest runs a throwaway redis-server process for tests, in the
// manner of net/http/httptest: each call to [Start] gets its own server on a
// free loopback port with persistence off and its data directory in
// t.TempDir(), and the server is killed when the test ends.
//
// The redis-server binary is looked up on PATH, then at /usr/bin/redis-server.
// When it is missing the test is skipped, unless the environment variable CI
// is set to a true value, in which case the test fails: CI must never pass by
// skipping the Redis tests.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartTimeout bounds how long Start and Restart wait for the server to
// answer PING.
const StartTimeout = 10 * time.Second

// Server is one redis-server process owned by a test. Its methods are safe
// for concurrent use.
type Server struct {
	bin  string
	dir  string
	port int
	// extra are more arguments (cluster mode).
	extra []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *bytes.Buffer
}

// Start runs redis-server on a free loopback port with `--save ”
// --appendonly no` and its directory in t.TempDir(), waits until it answers
// PING, and registers t.Cleanup to kill it. It skips the test when the binary
// is missing and CI is unset, and fails it when CI is set.
func Start(t testing.TB) *Server {
	t.Helper()
	return startServer(t, binary(t), nil)
}

// StartWith is Start with more arguments for redis-server after the
// defaults, which they override: "--appendonly", "yes"; "--replicaof",
// host, port; "--aclfile", path.
func StartWith(t testing.TB, args ...string) *Server {
	t.Helper()
	return startServer(t, binary(t), func(int) ([]string, error) { return args, nil })
}

// StartWithACL runs redis-server, as Start does, with the users of an ACL
// template rendered by a script, `sh script template out`, in the test's
// environment: docker-compose.yml renders deploy/redis/users.acl with
// deploy/redis/acl.sh so. Set the variables the template names with
// t.Setenv first.
func StartWithACL(t testing.TB, script, template string) *Server {
	t.Helper()
	out := filepath.Join(t.TempDir(), "users.acl")
	if msg, err := exec.Command("sh", script, template, out).CombinedOutput(); err != nil {
		t.Fatalf("redistest: sh %s %s: %v\n%s", script, template, err, msg)
	}
	return StartWith(t, "--aclfile", out)
}

// startServer starts a server with extra arguments on a free port.
func startServer(t testing.TB, bin string, extra func(port int) ([]string, error)) *Server {
	t.Helper()
	s := &Server{bin: bin, dir: t.TempDir()}
	t.Cleanup(s.Kill)

	// Another process may take the port between our probe and redis-server's
	// bind; a few fresh ports make that race harmless.
	var err error
	for range 3 {
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		if extra != nil {
			if s.extra, err = extra(s.port); err != nil {
				t.Fatalf("redistest: %v", err)
			}
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", err)
	return nil
}

// binary returns the redis-server binary, or skips (fails under CI) the
// test when there is none.
func binary(t testing.TB) string {
	t.Helper()
	bin := lookBinary()
	if bin == "" {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal("redistest: redis-server not found on PATH or at /usr/bin/redis-server (CI is set, so this fails instead of skipping; install it with apt-get install redis-server)")
		}
		t.Skip("redistest: redis-server not found on PATH or at /usr/bin/redis-server; install it (apt-get install redis-server) to run this test")
	}
	return bin
}

func lookBinary() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server"
	}
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start launches the process on s.port and waits for PING.
func (s *Server) start() error {
	log := &bytes.Buffer{}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--dbfilename", "dump.rdb",
		"--daemonize", "no",
		"--loglevel", "warning",
	)
	cmd.Args = append(cmd.Args, s.extra...)
	cmd.Stdout = &lockedWriter{buf: log}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, log
	s.mu.Unlock()

	if err := waitPing(s.Addr(), done); err != nil {
		s.Kill()
		return fmt.Errorf("redis-server on port %d: %w; output:\n%s", s.port, err, log.String())
	}
	return nil
}

// waitPing polls PING until it succeeds, the process exits, or StartTimeout
// passes.
func waitPing(addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := rdb.Ping(ctx).Err()
		// A refusal (NOAUTH, NOPERM: an ACL file without a default user)
		// is an answer too.
		var refused redis.Error
		if err == nil || errors.As(err, &refused) {
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before answering PING")
		case <-ctx.Done():
			return fmt.Errorf("no PING reply within %v: %w", StartTimeout, err)
		case <-tick.C:
		}
	}
}

// Addr returns the server's host:port on the loopback interface. It stays
// the same across Restart.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Client returns a new client for the server, closed when the test ends.
func (s *Server) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Kill stops the server with SIGKILL and waits for the process to exit. It is
// safe to call more than once; data is lost, as persistence is off.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Pause stops the process with SIGSTOP until Resume: it keeps its
// connections but answers nothing, as a stalled server or replica does.
func (s *Server) Pause(t testing.TB) { s.signal(t, syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume(t testing.TB) { s.signal(t, syscall.SIGCONT) }

func (s *Server) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		t.Fatalf("redistest: %v: the server is not running", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: %v: %v", sig, err)
	}
}

// Restart kills the server and starts a new, empty one on the same port, for
// fault tests: clients connected before see errors, then reconnect.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

// Start starts a server stopped with Kill again on the same port. It fails
// the test if the server is already running.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		t.Fatal("redistest: Start: server is already running")
	}
	if err := s.start(); err != nil {
		t.Fatalf("redistest: start: %v", err)
	}
}

// Dir returns the server's working directory.
func (s *Server) Dir() string { return s.dir }

// lockedWriter lets the process's stdout and stderr share one buffer.
type lockedWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
