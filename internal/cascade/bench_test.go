package cascade

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/compact"
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

// BenchmarkGateLongSpan measures the acceptance gate alone (reading the
// source, then judging a reply with claims, instructions and identifiers)
// on the long shared histories: 80k and 248k tokens, one holding an
// 868k-character tool output. The gate runs once per model reply.
//
//	go test ./internal/cascade -run '^$' -bench GateLongSpan -benchtime 5x
func BenchmarkGateLongSpan(b *testing.B) {
	files, _ := filepath.Glob("../../../shared/data/long/*.json")
	if len(files) == 0 {
		b.Skip("../../../shared/data/long is absent")
	}
	reply := "TASK: fix the bug.\nUSER INSTRUCTIONS: \"do not modify tests\"\n" +
		"PROGRESS: Reproduction COMPLETED [m0008]. Fix applied: COMPLETED [m0020]; tests pass [m0030].\n" +
		"CURRENT STATE: you fixed the parser and verified it.\nNEXT: submit."
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			b.Fatal(err)
		}
		in := compact.SummaryInput{Span: h.Messages, Draft: &brief.Draft{Text: "Briefing.\n## Identifiers\nm0002: a.py"},
			BudgetTokens: 8000, CountTokens: func(s string) int { return len(s) / 4 }}
		b.Run(filepath.Base(f), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r := gateRun(b, in)
				r.accept(reply, "stop", Prompts()["normal"])
			}
		})
	}
}
