// Package natstest runs an embedded nats-server v2 with JetStream for tests,
// in the manner of net/http/httptest: each test gets its own server on a free
// loopback port with its data in t.TempDir(), never a shared 4222.
package natstest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is a running embedded server. Its methods are safe to call from the
// test goroutine only.
type Server struct {
	opts *server.Options
	srv  *server.Server
}

// Option changes the server options before the server starts.
type Option func(*server.Options)

// WithMaxPayload sets the server's max_payload (default 1 MB).
func WithMaxPayload(n int32) Option {
	return func(o *server.Options) { o.MaxPayload = n }
}

// Start runs a server on 127.0.0.1 with a random port, JetStream on and its
// store in a fresh t.TempDir(), and waits until it accepts connections. The
// server is shut down in t.Cleanup.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoSigs:    true,
		NoLog:     true,
	}
	for _, opt := range opts {
		opt(o)
	}
	s := &Server{opts: o}
	s.start(t)
	// After the first start the port is known; a restart reuses it so that
	// clients reconnect to the same URL.
	if a, ok := s.srv.Addr().(*net.TCPAddr); ok {
		s.opts.Port = a.Port
	}
	t.Cleanup(s.Shutdown)
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	srv, err := server.NewServer(s.opts)
	if err != nil {
		t.Fatalf("natstest: new server: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatalf("natstest: server not ready after 10s")
	}
	s.srv = srv
}

// URL is the client URL, e.g. nats://127.0.0.1:41234.
func (s *Server) URL() string { return s.srv.ClientURL() }

// NATS returns the underlying server.
func (s *Server) NATS() *server.Server { return s.srv }

// Connect opens a connection and a JetStream context; both are closed in
// t.Cleanup. The connection reconnects forever so that it survives
// [Server.Restart].
func (s *Server) Connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts = append([]nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond),
		nats.Name(t.Name()),
	}, opts...)
	nc, err := nats.Connect(s.URL(), opts...)
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// Restart shuts the server down and starts it again on the same port and
// store directory, as a crash-and-recover fault would.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Shutdown()
	s.start(t)
}

// Shutdown stops the server and waits for it to finish. It may be called
// more than once.
func (s *Server) Shutdown() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}
