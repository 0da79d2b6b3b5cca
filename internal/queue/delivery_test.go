package queue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// servers are the nats-server versions users run: the embedded one go.mod
// pins and the installed binary (2.9 on Debian 12).
func servers(t *testing.T) map[string]func(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	return map[string]func(t *testing.T) (*nats.Conn, jetstream.JetStream){
		"embedded": func(t *testing.T) (*nats.Conn, jetstream.JetStream) { return natstest.Start(t).Connect(t) },
		"binary": func(t *testing.T) (*nats.Conn, jetstream.JetStream) {
			return natstest.StartProcess(t, natstest.Binary(t), natstest.ProcessOptions{}).Connect(t)
		},
	}
}

func setupOn(t *testing.T, js jetstream.JetStream, mutate func(*queue.Config)) *bundle {
	t.Helper()
	cfg := queue.Config{
		AckWait:    time.Second,
		Backoff:    []time.Duration{20 * time.Millisecond},
		MaxDeliver: 3,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if err := queue.EnsureStreams(t.Context(), js, cfg); err != nil {
		t.Fatal(err)
	}
	return &bundle{js: js, cfg: cfg, pub: queue.NewPublisher(js, cfg)}
}

// Poison is terminated on its first delivery on every supported server,
// with one dead letter each: nothing stays pending, nothing is redelivered
// after AckWait (nats-server 2.9 ignores a +TERM with a reason).
func TestPoisonTerminatedOnce(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			nc, js := start(t)
			b := setupOn(t, js, nil)
			rec := newRecorder()
			var handled atomic.Int32
			c := startConsumer(t, b, func(context.Context, *queue.Snapshot) error { handled.Add(1); return nil }, rec)
			const poison = 20
			for i := range poison {
				if err := nc.Publish(fmt.Sprintf("briefd.snap.evil.p%d", i), []byte(`{"v":1,`)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.pub.Publish(t.Context(), "acme", "good", genHistory(1, 10)); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "all settled", func() bool {
				return rec.count(queue.OutcomeTerminated) >= poison && rec.count(queue.OutcomeAcked) == 1
			})
			// Past two AckWaits a poison message that was not really
			// terminated would be back.
			time.Sleep(2*b.cfg.AckWait + 500*time.Millisecond)
			info, err := c.Info(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			dead := len(rec.dead)
			rec.mu.Unlock()
			if got := rec.count(queue.OutcomeTerminated); got != poison || dead != poison {
				t.Errorf("terminated %d times with %d dead letters, want %d of each", got, dead, poison)
			}
			if info.NumAckPending != 0 || info.NumRedelivered != 0 {
				t.Errorf("server %s: %d snapshots still pending, %d redelivered; want none", nc.ConnectedServerVersion(), info.NumAckPending, info.NumRedelivered)
			}
			st, err := js.Stream(t.Context(), b.cfg.WithDefaults().Streams().Dead)
			if err != nil {
				t.Fatal(err)
			}
			si, err := st.Info(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if si.State.Msgs != poison {
				t.Errorf("dead-letter stream holds %d records, want %d", si.State.Msgs, poison)
			}
		})
	}
}

// Rolling restarts during a long compaction hand the snapshot back each
// time; those hand-backs are not attempts, so a healthy snapshot is
// compacted in the end, never dead-lettered.
func TestShutdownsAreNotAttempts(t *testing.T) {
	_, js := natstest.Start(t).Connect(t)
	b := setupOn(t, js, func(c *queue.Config) { c.MaxDeliver = 2 })
	if _, err := b.pub.Publish(t.Context(), "acme", "long", genHistory(1, 10)); err != nil {
		t.Fatal(err)
	}
	for restart := range 5 {
		rec := newRecorder()
		started := make(chan struct{})
		var once sync.Once
		c, err := queue.NewConsumer(js, b.cfg, func(ctx context.Context, _ *queue.Snapshot) error {
			once.Do(func() { close(started) })
			<-ctx.Done() // a long compaction, cut by the shutdown
			return ctx.Err()
		}, rec.hooks())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("restart %d: snapshot not delivered; outcomes %v", restart, rec.outcomes)
		}
		expired, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_ = c.Stop(expired)
		cancel()
		if rec.count(queue.OutcomeRequeued) != 1 {
			t.Fatalf("restart %d: outcomes %v, want requeued", restart, rec.outcomes)
		}
	}
	rec := newRecorder()
	startConsumer(t, b, func(_ context.Context, s *queue.Snapshot) error {
		if s.Delivery.Attempt != 1 || s.Delivery.NumDelivered < 6 {
			return queue.Permanent(fmt.Errorf("attempt %d of %d deliveries, want attempt 1 of at least 6", s.Delivery.Attempt, s.Delivery.NumDelivered))
		}
		return nil
	}, rec)
	rec.waitFor(t, "acked after five restarts", func() bool {
		return rec.count(queue.OutcomeAcked)+rec.count(queue.OutcomeDeadLettered)+rec.count(queue.OutcomeTerminated) > 0
	})
	if rec.count(queue.OutcomeAcked) != 1 {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		t.Fatalf("outcomes %v, dead letters %+v", rec.outcomes, rec.dead)
	}
}

// A tenant flooding the queue with slow snapshots never holds every slot of
// a worker: the spare one looks ahead past the flood, and another tenant's
// snapshot is handled while the flood is still running.
func TestTenantCap(t *testing.T) {
	_, js := natstest.Start(t).Connect(t)
	b := setupOn(t, js, func(c *queue.Config) { c.Concurrency, c.TenantConcurrency, c.MaxDeliver = 4, 2, 1 })
	for i := range 40 {
		if _, err := b.pub.PublishAsync(t.Context(), "flood", fmt.Sprintf("c%d", i), genHistory(1, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.pub.Publish(t.Context(), "quiet", "q", genHistory(1, 10)); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	var mu sync.Mutex
	inflight, peak := map[string]int{}, map[string]int{}
	quietDone := make(chan struct{})
	release := make(chan struct{})
	startConsumer(t, b, func(ctx context.Context, s *queue.Snapshot) error {
		mu.Lock()
		inflight[s.Tenant]++
		peak[s.Tenant] = max(peak[s.Tenant], inflight[s.Tenant])
		mu.Unlock()
		defer func() {
			mu.Lock()
			inflight[s.Tenant]--
			mu.Unlock()
		}()
		if s.Tenant == "quiet" {
			close(quietDone)
			return nil
		}
		select { // the flood is slow until the quiet tenant got through
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	}, rec)
	select {
	case <-quietDone:
	case <-time.After(20 * time.Second):
		t.Fatalf("the quiet tenant's snapshot waited behind the flood; outcomes %v", rec.outcomes)
	}
	close(release)
	rec.waitFor(t, "the flood drained", func() bool { return rec.count(queue.OutcomeAcked) == 41 })
	mu.Lock()
	defer mu.Unlock()
	if peak["flood"] > 3 {
		t.Fatalf("the flooding tenant held %d of 4 slots: none was left to look ahead", peak["flood"])
	}
	if rec.count(queue.OutcomeDeadLettered)+rec.count(queue.OutcomeTerminated) != 0 {
		t.Fatalf("deferrals cost attempts: outcomes %v", rec.outcomes)
	}
}
