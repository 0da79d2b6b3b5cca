package jsensure_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/jsensure"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
)

// updates counts the stream update requests the server is sent.
func updates(t *testing.T, srv *natstest.Server) *atomic.Int64 {
	t.Helper()
	nc, _ := srv.Connect(t)
	var n atomic.Int64
	if _, err := nc.Subscribe("$JS.API.STREAM.UPDATE.>", func(*nats.Msg) { n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// ensureAll is what a worker ensures at start-up.
func ensureAll(ctx context.Context, js jetstream.JetStream) error {
	if err := queue.EnsureStreams(ctx, js, queue.Config{}); err != nil {
		return err
	}
	if err := audit.EnsureStream(ctx, js, audit.Config{}); err != nil {
		return err
	}
	_, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	return err
}

// startTogether runs ensureAll for n workers at once, each on its own
// connection, and returns the first error.
func startTogether(ctx context.Context, n int, connect func() jetstream.JetStream) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		js := connect()
		wg.Go(func() { errs <- ensureAll(ctx, js) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Workers that start together on a fresh server all succeed, and a worker
// that starts once the streams exist sends no update request: nats-server
// 2.9.10 panics on an update of a stream another request is creating.
func TestEnsureReadsWhatExists(t *testing.T) {
	srv := natstest.Start(t)
	n := updates(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := startTogether(ctx, 6, func() jetstream.JetStream { _, js := srv.Connect(t); return js }); err != nil {
		t.Fatalf("concurrent start: %v", err)
	}
	first := n.Load()
	_, js := srv.Connect(t)
	if err := ensureAll(ctx, js); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the counting subscription's deliveries
	if got := n.Load() - first; got != 0 {
		t.Fatalf("a restart with the same configuration sent %d update requests", got)
	}
	// A changed configuration is applied, with one request.
	if err := queue.EnsureStreams(ctx, js, queue.Config{MaxAge: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, queue.Config{}.WithDefaults().Streams().Snapshots)
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.MaxAge != 48*time.Hour {
		t.Fatalf("max age %v after an update to 48h", s.CachedInfo().Config.MaxAge)
	}
	time.Sleep(100 * time.Millisecond)
	if got := n.Load() - first; got == 0 {
		t.Fatal("a changed configuration sent no update request")
	}
}

func TestMatchesIgnoresServerDefaults(t *testing.T) {
	want := jetstream.StreamConfig{Name: "S", Subjects: []string{"a.>"}, MaxAge: time.Hour, Replicas: 1}
	have := want
	have.Duplicates = 2 * time.Minute // the server's default
	have.MaxMsgs, have.MaxBytes = -1, -1
	if ok, err := jsensure.Matches(have, want); err != nil || !ok {
		t.Fatalf("Matches = %v, %v: server defaults counted as differences", ok, err)
	}
	have.MaxAge = 2 * time.Hour
	if ok, _ := jsensure.Matches(have, want); ok {
		t.Fatal("a different max age matched")
	}
}

// The same on the nats-server installed here (2.9 on Debian 12), which
// panicked when workers started together: ten rounds of six workers on a
// fresh server, and the server must still be up and its log free of panics.
func TestConcurrentStartOnInstalledServer(t *testing.T) {
	bin := natstest.Binary(t)
	for round := range 10 {
		p := natstest.StartProcess(t, bin, natstest.ProcessOptions{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := startTogether(ctx, 6, func() jetstream.JetStream { _, js := p.Connect(t); return js })
		cancel()
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, p.Log())
		}
		if strings.Contains(p.Log(), "panic:") {
			t.Fatalf("round %d: the server panicked:\n%s", round, p.Log())
		}
		p.Kill()
	}
}
