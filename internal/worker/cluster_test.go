package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/worker"
)

// Workers started together on a fresh 3-node cluster all start: they race
// to create the same R3 streams and buckets, and the requests that time
// out meanwhile are retried. Before, two workers started at once on
// nats-server 2.9 (and one of two on 2.15) failed Start with "context
// deadline exceeded", which stops the process.
func TestWorkersStartTogetherOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.StartCluster(t, natstest.Binary(t), 3, natstest.ProcessOptions{})
	_, js := c.Connect(t)
	store, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		_, js := c.Connect(t)
		w, err := worker.New(js, store, worker.Config{Queue: queue.Config{Replicas: 3}, Engine: engineConfig, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Start(t.Context())
			if errs[i] == nil {
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					w.Stop(ctx)
				})
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
}
