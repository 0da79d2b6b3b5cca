package queue_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
)

// BenchmarkPublishTurn measures an agent's cost per turn (one assistant
// message with a tool call and its result, ~1 KB) on top of histories of
// about 1k, 100k and 1M tokens (tokens ~ bytes/4), for the async publish
// the client uses (timed until the call returns; its acks are awaited
// untimed, as a real agent's turns are seconds apart) and for a publish
// that waits for the acks.
func BenchmarkPublishTurn(b *testing.B) {
	for _, tokens := range []int{1_000, 100_000, 1_000_000} {
		for _, mode := range []string{"async", "sync"} {
			b.Run(fmt.Sprintf("tokens=%d/%s", tokens, mode), func(b *testing.B) {
				bb := setup(b)
				// ~2 KB per generated turn: turns = tokens*4/2KB.
				turns := max(1, tokens*4/2048)
				msgs := genHistory(turns, 1000)
				if _, err := bb.pub.Publish(b.Context(), "acme", "c1", msgs); err != nil {
					b.Fatal(err)
				}
				extra := genHistory(1, 500)[2:]
				var lat []time.Duration
				i := 0
				for b.Loop() {
					for _, m := range extra {
						m.ID = fmt.Sprintf("%s-x%d", m.ID, i)
						m.ToolCallID = ""
						if m.Role == briefd.RoleTool {
							m.ToolCallID = fmt.Sprintf("call_x%d", i)
						} else {
							m.ToolCalls = []briefd.ToolCall{{ID: fmt.Sprintf("call_x%d", i), Type: "function", Function: m.ToolCalls[0].Function}}
						}
						msgs = append(msgs, m)
					}
					i++
					start := time.Now()
					var err error
					if mode == "async" {
						var p *queue.Pending
						p, err = bb.pub.PublishAsync(b.Context(), "acme", "c1", msgs)
						lat = append(lat, time.Since(start))
						if err == nil {
							// Untimed: an agent's turns are seconds apart, so
							// the acks are in before its next publish.
							_, err = p.Wait(b.Context())
						}
					} else {
						_, err = bb.pub.Publish(b.Context(), "acme", "c1", msgs)
						lat = append(lat, time.Since(start))
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(len(msgs)), "messages")
			})
		}
	}
}

// TestStreamBytes publishes the longest shared conversation turn by turn and
// compares the bytes the streams store with the final history's bytes.
func TestStreamBytes(t *testing.T) {
	const name = "mini-swe-agent-30.json"
	msgs := loadShared(t, name)
	file, err := os.Stat(filepath.Join(sharedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	history, _ := json.Marshal(msgs)
	for _, compress := range []bool{true, false} {
		t.Run(fmt.Sprintf("zstd=%v", compress), func(t *testing.T) {
			b := setup(t)
			b.cfg.NoCompression = !compress
			pub := queue.NewPublisher(b.js, b.cfg)
			ends := turnEnds(msgs)
			for _, end := range ends {
				if _, err := pub.Publish(t.Context(), "acme", "mini-swe-agent-30", msgs[:end]); err != nil {
					t.Fatal(err)
				}
			}
			names := b.cfg.WithDefaults().Streams()
			var total uint64
			for _, s := range []string{names.Bodies, names.Snapshots} {
				st, err := b.js.Stream(t.Context(), s)
				if err != nil {
					t.Fatal(err)
				}
				info, err := st.Info(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d messages, %d bytes", s, info.State.Msgs, info.State.Bytes)
				total += info.State.Bytes
			}
			ratio := float64(total) / float64(len(history))
			t.Logf("%s: %d messages in %d turns; history JSON %d bytes (file %d); streams %d bytes = %.3fx the history JSON, %.3fx the file",
				name, len(msgs), len(ends), len(history), file.Size(), total, ratio, float64(total)/float64(file.Size()))
			if compress && ratio > 1.2 {
				t.Errorf("stream bytes %.3fx the history, goal <= 1.2x", ratio)
			}
		})
	}
}
