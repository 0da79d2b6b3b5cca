package cascade

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/openaitest"
)

// BenchmarkConcurrentSummarize measures the cascade alone with n
// compactions in flight against a fake endpoint that answers in 1 s (the
// issue's goal: >= 500 in flight per worker process with bounded memory).
// It reports the endpoint's peak of concurrent requests, the peak heap
// while they are in flight, and compactions per second.
//
//	go test ./internal/cascade -run '^$' -bench ConcurrentSummarize -benchtime 3x
func BenchmarkConcurrentSummarize(b *testing.B) {
	for _, n := range []int{500, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			srv := openaitest.NewServer(b)
			srv.SetRecord(false)
			srv.SetDefault(openaitest.Reply(goodReply).WithLatency(time.Second))
			c, err := New(Config{
				BaseURL:     srv.URL,
				Models:      []ModelConfig{{Name: "model-a"}},
				Identifiers: testIdentifiers,
				Spend:       SpendConfig{PerConversation: -1, PerTenant: -1},
			})
			if err != nil {
				b.Fatal(err)
			}
			in := testInput()

			var peakHeap atomic.Uint64
			stop := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Go(func() {
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				var ms runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > peakHeap.Load() {
							peakHeap.Store(ms.HeapInuse)
						}
					}
				}
			})
			var failed atomic.Int64
			total := 0
			start := time.Now()
			for b.Loop() {
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						if _, err := c.Summarize(b.Context(), in); err != nil {
							failed.Add(1)
						}
					})
				}
				wg.Wait()
				total += n
			}
			elapsed := time.Since(start)
			close(stop)
			sampler.Wait()
			if f := failed.Load(); f > 0 {
				b.Errorf("%d of %d compactions failed", f, total)
			}
			b.ReportMetric(float64(srv.PeakInFlight()), "peak-in-flight")
			b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(total)/elapsed.Seconds(), "compactions/s")
		})
	}
}
