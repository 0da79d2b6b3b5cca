// Package natsembed runs an embedded nats-server with JetStream inside the
// process, for the one-command demo and the worker's embedded mode. Tests use
// internal/natstest instead.
package natsembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configures [Start]. Zero values take the documented defaults.
type Options struct {
	// StoreDir holds the JetStream data. Required: the demo keeps its data
	// in a local folder so that a second run finds the first run's streams.
	StoreDir string
	// Host is the listen address. Default "127.0.0.1" (loopback only).
	Host string
	// Port is the client port. Default 4222; -1 picks a free port (read it
	// back with (*server.Server).ClientURL).
	Port int
	// ReadyTimeout bounds the wait for the server to accept connections.
	// Default 10s.
	ReadyTimeout time.Duration
	// Logger receives the server's log lines at Info and above. Nil turns
	// the server's logging off.
	Logger *slog.Logger
}

// Start starts the server and waits until it accepts connections or ctx is
// done. Signals are left to the host process (NoSigs). The caller owns the
// server: call Shutdown and WaitForShutdown to stop it.
func Start(ctx context.Context, o Options) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natsembed: StoreDir is required")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = 4222
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	opts := &server.Options{
		Host:      o.Host,
		Port:      o.Port,
		JetStream: true,
		StoreDir:  o.StoreDir,
		NoSigs:    true,
		NoLog:     o.Logger == nil,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: new server: %w", err)
	}
	if o.Logger != nil {
		s.SetLoggerV2(slogLogger{o.Logger.With("component", "nats-server")}, false, false, false)
	}
	s.Start()
	deadline := time.Now().Add(o.ReadyTimeout)
	for !s.ReadyForConnections(100 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			s.Shutdown()
			return nil, fmt.Errorf("natsembed: wait for server: %w", err)
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return nil, fmt.Errorf("natsembed: server on %s:%d not ready after %s", o.Host, o.Port, o.ReadyTimeout)
		}
	}
	return s, nil
}

// slogLogger adapts slog to the server's Logger interface. Debug and trace
// lines are dropped: the server only calls them when asked to.
type slogLogger struct{ l *slog.Logger }

func (l slogLogger) Noticef(format string, v ...any) { l.l.Info(fmt.Sprintf(format, v...)) }
func (l slogLogger) Warnf(format string, v ...any)   { l.l.Warn(fmt.Sprintf(format, v...)) }
func (l slogLogger) Fatalf(format string, v ...any)  { l.l.Error(fmt.Sprintf(format, v...)) }
func (l slogLogger) Errorf(format string, v ...any)  { l.l.Error(fmt.Sprintf(format, v...)) }
func (l slogLogger) Debugf(format string, v ...any)  {}
func (l slogLogger) Tracef(format string, v ...any)  {}
