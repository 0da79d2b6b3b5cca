package bench

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
)

// poolConversations is how many corpus conversations, from the end, are
// kept for the turns of BenchmarkWorkerTurn; the histories are built from
// the others, so no turn repeats a text of the history it extends.
const poolConversations = 10

// turnPool returns n agent steps (an assistant message, its tool results
// and what follows until the model speaks again) from the last
// conversations of the corpus, without their heads (system prompt, task),
// and a text over the other conversations for the histories. Every size
// gets the same steps, so sizes compare on the same work per turn.
func turnPool(tb testing.TB, n int) ([][]briefd.Message, *text) {
	tb.Helper()
	convs, from := corpus(tb)
	k := max(1, len(convs)-poolConversations)
	if len(convs) < 2 {
		tb.Fatalf("the corpus (%s) has fewer than 2 conversations", from)
	}
	var pool [][]briefd.Message
	for _, c := range convs[k:] {
		first := slices.IndexFunc(c, func(m briefd.Message) bool { return m.Role == briefd.RoleAssistant })
		if first < 0 {
			continue
		}
		t := &text{convs: [][]briefd.Message{c[first:]}}
		for s := t.step(); len(s) > 0 && len(pool) < n; s = t.step() {
			pool = append(pool, s)
		}
	}
	if len(pool) == 0 {
		tb.Fatal("no agent steps in the corpus")
	}
	return pool, &text{convs: convs[:k]}
}

// BenchmarkWorkerTurn measures what one snapshot of a growing conversation
// costs a worker: resolving the newest snapshot (the delta manifest and
// its new bodies, from the streams) and compacting it with an engine that
// compacted the conversation's earlier snapshots (warm caches), as a
// worker does for each turn of an agent. Histories of about 1k, 10k,
// 100k and 1M tokens are built from the corpus without repeating a text;
// each turn appends the next step of the pool (the same steps at every
// size). A conversation takes turns until it has grown by half its
// nominal size (or the pool is used up), then a fresh one starts from new
// corpus text; publishing and each conversation's first (cold) resolve
// and compaction are not timed. The engine's context window is the
// nominal size, so token pressure triggers at 65% of it (capped at 200k
// tokens).
//
//	go test -run '^$' -bench WorkerTurn -benchtime 128x ./bench
func BenchmarkWorkerTurn(b *testing.B) {
	warm := pprof.Labels("turn", "warm")
	for _, size := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("tokens=%d", size), func(b *testing.B) {
			pool, txt := turnPool(b, 128)
			tc := tokenCounter(b)
			srv := natstest.Start(b)
			_, js := srv.Connect(b)
			ctx := b.Context()
			cfg := queue.Config{}
			if err := queue.EnsureStreams(ctx, js, cfg); err != nil {
				b.Fatal(err)
			}
			snaps, err := js.Stream(ctx, cfg.WithDefaults().Streams().Snapshots)
			if err != nil {
				b.Fatal(err)
			}
			pub := queue.NewPublisher(js, cfg)
			res := queue.NewResolver(js, cfg)
			eng, err := compact.New(compact.Config{Model: "gpt-4o", ContextWindow: size})
			if err != nil {
				b.Fatal(err)
			}
			// snapshot publishes h and resolves its newest snapshot; only
			// the resolve is timed, and only when timed is set.
			snapshot := func(conv string, h []briefd.Message) (*queue.Snapshot, time.Duration) {
				b.StopTimer()
				r, err := pub.Publish(ctx, "bench", conv, h)
				if err != nil {
					b.Fatal(err)
				}
				raw, err := snaps.GetMsg(ctx, r.StreamSeq)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				s, err := res.Resolve(ctx, raw.Subject, raw.Sequence, raw.Data)
				d := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Messages) != len(h) {
					b.Fatalf("resolved %d messages, published %d", len(s.Messages), len(h))
				}
				return s, d
			}
			var resolveLat, compactLat, turnLat []time.Duration
			var h []briefd.Message
			conv, grown, compacted, tokens := 0, 0, 0, 0
			for i := 0; b.Loop(); i++ {
				if h == nil || grown > size/2 || i%len(pool) == 0 && i > 0 {
					b.StopTimer()
					conv++
					n := 0
					h = txt.take(b, func(m *briefd.Message, _ int) bool {
						n += tc.CountMessage(m)
						return n >= size
					})
					grown = 0
					s, _ := snapshot("c"+strconv.Itoa(conv), h)
					if _, err := eng.Compact(ctx, compact.Request{ConversationID: s.ConversationID, Messages: s.Messages}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				step := pool[i%len(pool)]
				h = append(h, step...)
				for j := range step {
					grown += tc.CountMessage(&step[j])
				}
				s, rd := snapshot("c"+strconv.Itoa(conv), h)
				// The label lets a profile keep the timed compactions alone:
				// go tool pprof -tagfocus turn=warm.
				var out *compact.Result
				t0 := time.Now()
				pprof.Do(ctx, warm, func(ctx context.Context) {
					out, err = eng.Compact(ctx, compact.Request{ConversationID: s.ConversationID, Messages: s.Messages})
				})
				cd := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				if out.Compacted {
					compacted++
				}
				tokens += out.TokensBefore
				resolveLat = append(resolveLat, rd)
				compactLat = append(compactLat, cd)
				turnLat = append(turnLat, rd+cd)
			}
			b.StopTimer()
			n := len(turnLat)
			b.ReportMetric(float64(quantile(resolveLat, 0.5).Nanoseconds()), "resolve-p50-ns")
			b.ReportMetric(float64(quantile(compactLat, 0.5).Nanoseconds()), "compact-p50-ns")
			b.ReportMetric(float64(quantile(turnLat, 0.5).Nanoseconds()), "turn-p50-ns")
			b.ReportMetric(float64(quantile(turnLat, 0.99).Nanoseconds()), "turn-p99-ns")
			b.ReportMetric(float64(tokens)/float64(n), "tokens")
			b.ReportMetric(float64(compacted)/float64(n), "compacted")
			b.ReportMetric(float64(conv), "conversations")
		})
	}
}

// quantile is the nearest-rank quantile p of lats (which it sorts).
func quantile(lats []time.Duration, p float64) time.Duration {
	if len(lats) == 0 {
		return 0
	}
	slices.Sort(lats)
	return lats[min(len(lats)-1, max(0, int(float64(len(lats))*p+0.999999)-1))]
}
