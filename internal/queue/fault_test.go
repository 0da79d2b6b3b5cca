package queue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/queue"
)

// TestWorkerKilledMidCompaction closes a worker's connection while its
// handler runs: the snapshot comes back after AckWait to the other worker,
// or is dead-lettered once it is out of deliveries.
func TestWorkerKilledMidCompaction(t *testing.T) {
	tests := []struct {
		name       string
		maxDeliver int
		want       queue.Outcome
	}{
		{"redelivered", 3, queue.OutcomeAcked},
		{"out of deliveries", 1, queue.OutcomeDeadLettered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.cfg.AckWait = 300 * time.Millisecond
			b.cfg.MaxDeliver = tt.maxDeliver
			if err := queue.EnsureStreams(t.Context(), b.js, b.cfg); err != nil {
				t.Fatal(err)
			}
			// Worker 1 on its own connection, stuck in its handler.
			nc1, js1 := b.srv.Connect(t)
			started := make(chan struct{})
			release := make(chan struct{})
			defer close(release)
			w1, err := queue.NewConsumer(js1, b.cfg, func(ctx context.Context, _ *queue.Snapshot) error {
				close(started)
				<-release
				return nil
			}, queue.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w1.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := b.pub.Publish(t.Context(), "acme", "c1", genHistory(1, 10)); err != nil {
				t.Fatal(err)
			}
			<-started
			nc1.Close() // the worker dies: no ack, no InProgress any more

			rec := newRecorder()
			startConsumer(t, b, func(context.Context, *queue.Snapshot) error { return nil }, rec)
			rec.waitFor(t, string(tt.want), func() bool { return rec.count(tt.want) == 1 })
			if tt.want == queue.OutcomeDeadLettered {
				rec.mu.Lock()
				d := rec.dead[0]
				rec.mu.Unlock()
				if d.Permanent || d.Deliveries != 2 {
					t.Fatalf("dead letter %+v: want a non-permanent record after 2 deliveries", d)
				}
			}
		})
	}
}

func TestLag(t *testing.T) {
	b := setup(t)
	for _, c := range []string{"a", "b", "c"} {
		if _, err := b.pub.Publish(t.Context(), "acme", c, genHistory(1, 10)); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder()
	block := make(chan struct{})
	c := startConsumer(t, b, func(ctx context.Context, _ *queue.Snapshot) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return ctx.Err()
	}, rec)
	lag, err := c.Lag(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if lag > 3 {
		t.Fatalf("lag = %d, want <= 3", lag)
	}
	close(block)
	rec.waitFor(t, "all acked", func() bool { return rec.count(queue.OutcomeAcked) == 3 })
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumPending != 0 {
		t.Fatalf("NumPending = %d after all acked", info.NumPending)
	}
}

// FuzzManifest checks that any manifest the resolver accepts re-encodes to
// one it accepts with the same meaning.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"v":1,"tenant":"acme","conversation_id":"c1","seq":2,"base":1,"base_stream_seq":5,"keep":1,"append":[{"id":"m2","h":"AAAAAAAAAAAAAAAAAAAAAA"}],"created_at":"2026-11-22T10:00:00Z"}`))
	f.Add([]byte(`{"v":1,"tenant":"acme","conversation_id":"c1","seq":1,"base":0,"keep":0,"append":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m1, err := queue.DecodeManifest(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(m1)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := queue.DecodeManifest(again)
		if err != nil {
			t.Fatalf("re-encoded manifest rejected: %v\n%s", err, again)
		}
		a, _ := json.Marshal(m2)
		if string(a) != string(again) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s", again, a)
		}
	})
}
