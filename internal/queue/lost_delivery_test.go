package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/queue"
)

// Deliveries that never reached a handler are not attempts (found by the
// nemesis run on a 3-node cluster: a snapshot delivered to pull requests of
// workers that were killed or paused, and over connections a node restart
// dropped, was dead-lettered "delivered 6 times without settling" although
// no handler had run it). Here the server delivers a snapshot more times
// than MaxDeliver to a reader that drops it; a worker then handles it.
func TestLostDeliveriesAreNotAttempts(t *testing.T) {
	b := setup(t)
	b.cfg.AckWait = 300 * time.Millisecond
	if err := queue.EnsureStreams(t.Context(), b.js, b.cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pub.Publish(t.Context(), "acme", "c1", genHistory(2, 20)); err != nil {
		t.Fatal(err)
	}
	cons, err := b.js.Consumer(t.Context(), b.cfg.WithDefaults().Streams().Snapshots, b.cfg.WithDefaults().Consumer)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for lost <= b.cfg.MaxDeliver { // MaxDeliver is 3 here
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for range batch.Messages() {
			lost++ // taken, never handled, never acked: as if its worker died
		}
	}
	rec := newRecorder()
	handled := make(chan struct{}, 1)
	startConsumer(t, b, func(context.Context, *queue.Snapshot) error {
		select {
		case handled <- struct{}{}:
		default:
		}
		return nil
	}, rec)
	rec.waitFor(t, "acked", func() bool { return rec.count(queue.OutcomeAcked) == 1 || rec.count(queue.OutcomeDeadLettered) > 0 })
	if n := rec.count(queue.OutcomeDeadLettered); n > 0 {
		t.Fatalf("dead-lettered after %d lost deliveries, no handler run", lost)
	}
	select {
	case <-handled:
	default:
		t.Fatal("acked without a handler run")
	}
}
