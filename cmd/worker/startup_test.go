package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/redistest"
)

// A worker started while NATS is down (a node restarting, found by the
// nemesis run: a killed worker restarted during a NATS restart exited
// with "no servers available for connection") waits, not ready, and
// becomes ready once NATS is back.
func TestRunStartsWhileNATSIsDown(t *testing.T) {
	p := natstest.StartProcess(t, natstest.Binary(t), natstest.ProcessOptions{})
	p.Kill()
	rs := redistest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	var errb lockedBuffer
	go func() {
		done <- Main(ctx, []string{"run", "--nats-url", p.URL(), "--redis-url", "redis://" + rs.Addr() + "/0",
			"--http-addr", addr, "--shutdown-timeout", "5s"}, strings.NewReader(""), &bytes.Buffer{}, &errb)
	}()
	ready := func() bool {
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	time.Sleep(2 * time.Second)
	select {
	case code := <-done:
		t.Fatalf("worker exited %d while NATS was down:\n%s", code, errb.String())
	default:
	}
	if ready() {
		t.Fatal("ready while NATS is down")
	}
	p.Start(t)
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("not ready 30s after NATS came back:\n%s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
}

// lockedBuffer is a bytes.Buffer safe for the worker's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --redis-wait-aof on a Redis without WAITAOF (before 7.2; the installed
// 7.0 here) stops the worker at start with the reason, instead of running
// never ready or failing every briefing.
func TestRunWaitAOFNeedsRedis72(t *testing.T) {
	srv := natstest.Start(t)
	rs := redistest.Start(t)
	info, err := rs.Client(t).Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "redis_version:7.0.") && !strings.Contains(info, "redis_version:6.") {
		t.Skipf("the installed Redis has WAITAOF:\n%s", info)
	}
	var errb lockedBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	code := Main(ctx, []string{"run", "--nats-url", srv.URL(), "--redis-url", "redis://" + rs.Addr() + "/0",
		"--redis-wait-aof", "--http-addr", ""}, strings.NewReader(""), &bytes.Buffer{}, &errb)
	if code != 1 || !strings.Contains(errb.String(), "--redis-wait-aof") || !strings.Contains(errb.String(), "needs 7.2 or later") {
		t.Fatalf("exit %d, want 1 with the reason:\n%s", code, errb.String())
	}
}
