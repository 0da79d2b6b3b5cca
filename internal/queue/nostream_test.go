package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
)

// A publish before any worker created the streams fails with an error that
// says so, not a bare "no responders".
func TestPublishWithoutStreams(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	pub := queue.NewPublisher(js, queue.Config{AckTimeout: time.Second, PublishRetries: 1})
	if err := pub.RefreshLimits(t.Context()); !errors.Is(err, queue.ErrNoStream) {
		t.Fatalf("limits without streams: %v", err)
	}
	_, err := pub.Publish(t.Context(), "acme", "c1", genHistory(1, 10))
	if !errors.Is(err, queue.ErrNoStream) {
		t.Fatalf("publish without streams: %v", err)
	}
}
