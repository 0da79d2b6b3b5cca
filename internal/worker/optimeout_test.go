package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/worker"
)

// hangingStore never answers its first Put, as a store whose reply was
// lost with a NATS node does: only the caller's deadline ends the call.
type hangingStore struct {
	store
	puts atomic.Int64
}

func (s *hangingStore) Put(ctx context.Context, b *briefd.Briefing) (bool, error) {
	if s.puts.Add(1) == 1 {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return s.store.Put(ctx, b)
}

// A call to the store that never returns is cut off after OpTimeout and
// the snapshot retried, not held (with InProgress) until MaxHandleTime.
func TestStoreCallThatHangsIsRetried(t *testing.T) {
	b := setup(t, false)
	hs := &hangingStore{store: b.store}
	b.store = hs
	b.qcfg.MaxHandleTime = 10 * time.Minute
	b.startWorker(t, func(c *worker.Config) { c.OpTimeout = 300 * time.Millisecond })
	h := loadExample(t, "tau-bench-2.json")
	if _, err := b.pub.Publish(t.Context(), "acme", "hang", h.Messages); err != nil {
		t.Fatal(err)
	}
	// The retry comes after the first backoff: well within 30 s, where
	// without the bound the first Put would hold the snapshot 10 minutes.
	waitFor(t, 30*time.Second, "the briefing stored on a retry", func() bool {
		_, err := hs.Latest(t.Context(), "acme", "hang")
		return err == nil && hs.puts.Load() >= 2
	})
}
