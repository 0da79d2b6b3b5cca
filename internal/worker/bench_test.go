package worker_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cascade"
	"github.com/briefd/briefd/internal/openaitest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/worker"
)

// runLLMBatch publishes convs conversations, runs `workers` workers with
// `concurrency` compactions each against a fake model that answers after
// latency, and returns the time until every briefing is stored, the peak
// number of model calls in flight, and the peak heap.
func runLLMBatch(b *testing.B, workers, concurrency, convs int, latency time.Duration) (elapsed time.Duration, peakInFlight int64, peakHeap uint64) {
	b.Helper()
	srv := openaitest.NewServer(b)
	srv.SetDefault(openaitest.Reply(narrative).WithLatency(latency))
	bd := setup(b, false)
	bd.qcfg.Concurrency = concurrency
	bd.qcfg.MaxAckPending = workers * concurrency * 2
	bd.qcfg.AckWait = 30 * time.Second
	if err := queue.EnsureStreams(b.Context(), bd.js, bd.qcfg); err != nil {
		b.Fatal(err)
	}
	h := loadExample(b, "tau-bench-2.json")
	for i := range convs {
		if _, err := bd.pub.Publish(b.Context(), "bench", fmt.Sprintf("c%d", i), h.Messages); err != nil {
			b.Fatal(err)
		}
	}

	var stored atomic.Int64
	counting := countingStore{Store: bd.store, n: &stored}
	var heap atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() { // sample the heap while the batch runs
		defer sampler.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > heap.Load() {
					heap.Store(ms.HeapInuse)
				}
			}
		}
	}()

	start := time.Now()
	var ws []*worker.Worker
	for range workers {
		c, err := cascade.New(cascade.Config{BaseURL: srv.URL, APIKey: "k",
			Models: []cascade.ModelConfig{{Name: "fake", Timeout: 30 * time.Second}}})
		if err != nil {
			b.Fatal(err)
		}
		eng := engineConfig
		eng.MinBriefingTokens = 1500 // room for the narrative beside the ledger
		w, err := worker.New(bd.js, counting, worker.Config{Queue: bd.qcfg, Engine: eng, Summarizer: c, Logger: testLogger(b)})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		ws = append(ws, w)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for stored.Load() < int64(convs) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d briefings after 5 minutes", stored.Load(), convs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed = time.Since(start)
	close(stop)
	sampler.Wait()
	for _, w := range ws {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		w.Stop(ctx)
		cancel()
	}
	return elapsed, srv.PeakInFlight(), heap.Load()
}

// BenchmarkLLMInFlight: with the model answering in 1 s, how many
// compactions one worker process keeps in flight (goal >= 500 on 2 cores)
// and at what memory.
//
//	go test ./internal/worker -run '^$' -bench LLMInFlight -benchtime 1x
func BenchmarkLLMInFlight(b *testing.B) {
	for b.Loop() {
		elapsed, peak, heap := runLLMBatch(b, 1, 600, 1200, time.Second)
		b.ReportMetric(float64(peak), "peak_in_flight")
		b.ReportMetric(float64(heap)/(1<<20), "peak_heap_MiB")
		b.ReportMetric(1200/elapsed.Seconds(), "compactions/s")
	}
}

// BenchmarkLLMScaleOut: throughput of 2 workers against 1, each with the
// same bounded concurrency, the model answering in 1 s (goal >= 1.8x).
// Everything (NATS, the fake model, both workers) shares this machine's
// cores, so at high concurrency the figure measures CPU saturation of the
// rig rather than the queue; both settings are reported.
//
//	go test ./internal/worker -run '^$' -bench LLMScaleOut -benchtime 1x
func BenchmarkLLMScaleOut(b *testing.B) {
	for _, concurrency := range []int{25, 50} {
		b.Run(fmt.Sprintf("concurrency=%d", concurrency), func(b *testing.B) {
			convs := concurrency * 16
			for b.Loop() {
				one, _, _ := runLLMBatch(b, 1, concurrency, convs, time.Second)
				two, _, _ := runLLMBatch(b, 2, concurrency, convs, time.Second)
				b.ReportMetric(float64(convs)/one.Seconds(), "1_worker_compactions/s")
				b.ReportMetric(float64(convs)/two.Seconds(), "2_workers_compactions/s")
				b.ReportMetric(one.Seconds()/two.Seconds(), "speedup")
			}
		})
	}
}

// countingStore counts stored LLM briefings, so the benchmark waits without
// polling the store, and a run that fell back to the deterministic tier
// does not pass for a fast one.
type countingStore struct {
	worker.Store
	n *atomic.Int64
}

func (s countingStore) Put(ctx context.Context, b *briefd.Briefing) (bool, error) {
	latest, err := s.Store.Put(ctx, b)
	if err == nil && b.Tier != briefd.TierDeterministic { // only briefings the model wrote count
		s.n.Add(1)
	}
	return latest, err
}
