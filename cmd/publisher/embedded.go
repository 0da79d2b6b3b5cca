package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/natsembed"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/worker"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// system is briefd in one process: an embedded NATS server with JetStream,
// the key-value briefing store and in-process workers.
type system struct {
	srv       *server.Server
	nc        *nats.Conn
	js        jetstream.JetStream
	store     *cache.KVStore
	workers   []*worker.Worker
	queue     queue.Config
	dir       string
	ephemeral bool
}

// systemConfig configures startSystem.
type systemConfig struct {
	DataDir   string // JetStream store; ignored when Ephemeral
	Ephemeral bool   // store in a temporary folder removed by close
	Workers   int
	Engine    compact.Config
	Queue     queue.Config
	Logger    *slog.Logger
}

func startSystem(ctx context.Context, cfg systemConfig) (s *system, err error) {
	s = &system{queue: cfg.Queue.WithDefaults(), ephemeral: cfg.Ephemeral}
	defer func() {
		if err != nil {
			s.close(context.WithoutCancel(ctx))
		}
	}()
	if cfg.Ephemeral {
		if s.dir, err = os.MkdirTemp("", "briefd-"); err != nil {
			return s, fmt.Errorf("temporary data folder: %w", err)
		}
	} else {
		s.dir = cfg.DataDir
		if err = os.MkdirAll(s.dir, 0o755); err != nil {
			return s, fmt.Errorf("data folder: %w", err)
		}
	}
	// Port -1: a free port, so the demo never collides with a server
	// already on 4222.
	if s.srv, err = natsembed.Start(ctx, natsembed.Options{StoreDir: s.dir, Port: -1}); err != nil {
		return s, err
	}
	if s.nc, err = nats.Connect(s.srv.ClientURL(), nats.Name("briefd-embedded")); err != nil {
		return s, fmt.Errorf("connect to the embedded server: %w", err)
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return s, fmt.Errorf("jetstream: %w", err)
	}
	if s.store, err = cache.NewKVStore(ctx, s.js, cache.KVConfig{}); err != nil {
		return s, err
	}
	for i := range max(cfg.Workers, 1) {
		w, err := worker.New(s.js, s.store, worker.Config{
			Queue:  cfg.Queue,
			Engine: cfg.Engine,
			Logger: cfg.Logger.With("worker", i),
		})
		if err != nil {
			return s, err
		}
		if err := w.Start(ctx); err != nil {
			return s, err
		}
		s.workers = append(s.workers, w)
	}
	return s, nil
}

// idle reports whether the workers have settled every snapshot: none
// pending in the consumer and none in flight.
func (s *system) idle(ctx context.Context) (bool, error) {
	cons, err := s.js.Consumer(ctx, s.queue.Streams().Snapshots, s.queue.Consumer)
	if err != nil {
		return false, fmt.Errorf("consumer: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("consumer info: %w", err)
	}
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

// waitIdle polls idle until it holds or ctx ends.
func (s *system) waitIdle(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := s.idle(ctx)
		if err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// close stops the workers (gracefully, up to ctx), then the connection and
// the server, and removes an ephemeral store.
func (s *system) close(ctx context.Context) error {
	var errs []error
	for _, w := range s.workers {
		errs = append(errs, w.Stop(ctx))
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	}
	if s.ephemeral && s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}
