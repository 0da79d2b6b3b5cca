package nemesis

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// proc is one child process the run owns (a server or a worker), which a
// fault may kill, pause or restart. Its output is appended to a log file
// in the run's folder, across restarts. Its methods are safe for
// concurrent use.
type proc struct {
	name    string
	path    string
	args    []string
	env     []string
	logPath string

	mu        sync.Mutex
	cmd       *exec.Cmd
	done      chan struct{} // closed when cmd has exited
	paused    bool
	expected  bool // the exit in progress was asked for
	unplanned []string
}

// start launches the process. It fails if it is running.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	fmt.Fprintf(logf, "--- nemesis: start %s at %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: start %s: %w", p.name, p.path, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.paused, p.expected = cmd, done, false, false
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		if !p.expected {
			p.unplanned = append(p.unplanned, fmt.Sprintf("%s exited by itself at %s: %v", p.name, time.Now().Format(time.TimeOnly), err))
		}
		if p.cmd == cmd {
			p.cmd, p.paused = nil, false
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// running reports whether the process is started and has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// stop sends sig (SIGKILL for a crash, SIGTERM for a restart) and waits
// up to grace for the exit, then kills it. A paused process is resumed
// first for SIGTERM, so it can act on it.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done, paused := p.cmd, p.done, p.paused
	if cmd == nil {
		p.mu.Unlock()
		return
	}
	p.expected = true
	p.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	if paused && sig != syscall.SIGKILL {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kill is stop with SIGKILL: a crash.
func (p *proc) kill() { p.stop(syscall.SIGKILL, time.Minute) }

// pause stops the process with SIGSTOP; resume continues it.
func (p *proc) pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.paused {
		return fmt.Errorf("%s: not running or already paused", p.name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("%s: SIGSTOP: %w", p.name, err)
	}
	p.paused = true
	return nil
}

func (p *proc) resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !p.paused {
		return nil
	}
	p.paused = false
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("%s: SIGCONT: %w", p.name, err)
	}
	return nil
}

// isPaused reports whether the process is stopped by pause.
func (p *proc) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// exits returns the exits nobody asked for, so far.
func (p *proc) exits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.unplanned...)
}

// waitListening waits until addr accepts TCP connections, the process
// exits, or timeout passes.
func (p *proc) waitListening(addr string, timeout time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited at start (log: %s)", p.name, p.logPath)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %s (log: %s)", p.name, addr, timeout, p.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// errNotFound is returned by lookBinary.
var errNotFound = errors.New("not found")

// lookBinary returns the first of names found on PATH or as a path.
func lookBinary(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%v: %w", names, errNotFound)
}
