package compact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
)

// benchFile is the longest shared conversation (196 messages, 312 KB).
const benchFile = "mini-swe-agent-30.json"

func benchHistory(b *testing.B) ([]briefd.Message, int64) {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(historiesDir, benchFile))
	if err != nil {
		b.Skipf("shared history %s: %v", benchFile, err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for i := range h.Messages {
		size += int64(h.Messages[i].Size())
	}
	return h.Messages, size
}

// benchConfig compacts the benchmark conversation for real: 83,000 tokens
// against a 65,000-token trigger.
var benchConfig = Config{ContextWindow: 100_000}

// BenchmarkTokenCount measures the tokenizer on the whole text of the
// benchmark conversation: uncached (the tokenizer's own speed) and cached.
func BenchmarkTokenCount(b *testing.B) {
	msgs, _ := benchHistory(b)
	var sb strings.Builder
	for i := range msgs {
		sb.WriteString(msgs[i].Content.String())
		for _, tc := range msgs[i].ToolCalls {
			sb.WriteString(tc.Function.Arguments)
		}
	}
	text := sb.String()
	for _, enc := range []string{EncodingO200K, EncodingCL100K} {
		c := newCounter(b, enc)
		tokens := c.encode(text)
		b.Run(enc+"/uncached", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.encode(text)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tokens)/1e3, "us/token")
		})
		b.Run(enc+"/cached", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			c.Count(text)
			for b.Loop() {
				c.Count(text)
			}
		})
	}
}

// BenchmarkCompact measures the whole pipeline on the benchmark
// conversation. cold: a new engine (empty caches) per compaction. warm:
// one engine, the history growing by one tool step per compaction, as a
// worker sees a conversation's successive snapshots. tokenize-only is the
// tokenizer's share of cold, for comparison.
func BenchmarkCompact(b *testing.B) {
	msgs, size := benchHistory(b)
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			e, err := New(benchConfig)
			if err != nil {
				b.Fatal(err)
			}
			res, err := e.Compact(b.Context(), Request{ConversationID: "bench", Messages: msgs})
			if err != nil || !res.Compacted {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
	b.Run("tokenize-only", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			c, err := NewTokenCounter("", EncodingCL100K, DefaultPerMessageOverhead)
			if err != nil {
				b.Fatal(err)
			}
			for i := range msgs {
				c.CountMessage(&msgs[i])
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		e, err := New(benchConfig)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Compact(b.Context(), Request{ConversationID: "bench", Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			grown := append(msgs[:len(msgs):len(msgs)], benchStep(n)...)
			n++
			res, err := e.Compact(b.Context(), Request{ConversationID: "bench", Messages: grown})
			if err != nil || !res.Compacted {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}

// benchStep returns one new tool step (a call and its result) with new text.
func benchStep(n int) []briefd.Message {
	call := fmt.Sprintf("bench_call_%d", n)
	return []briefd.Message{
		{ID: fmt.Sprintf("bench_a%d", n), Role: briefd.RoleAssistant, Content: briefd.Text(fmt.Sprintf("Step %d: run the tests again.", n)),
			ToolCalls: []briefd.ToolCall{{ID: call, Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: fmt.Sprintf(`{"command":"pytest tests/test_%d.py -x"}`, n)}}}},
		{ID: fmt.Sprintf("bench_t%d", n), Role: briefd.RoleTool, ToolCallID: call,
			Content: briefd.Text(strings.Repeat(fmt.Sprintf("tests/test_%d.py::test_case PASSED\n", n), 20))},
	}
}

// BenchmarkCompactTurn measures the engine's own per-turn cost, the
// briefing writer aside (a stub writes a fixed briefing): a conversation
// of about 10k, 100k and 1M tokens (the shared histories one after the
// other, each once, with fresh ids) compacted turn after turn by one
// engine, each turn appending the next step of the text. What is left is
// validation, counting, the boundary, the span hash and the splice, which
// a remembered conversation costs only for its new messages (see
// WithMemo). The context window is the nominal size.
//
//	go test -run '^$' -bench CompactTurn -benchtime 64x ./internal/compact
func BenchmarkCompactTurn(b *testing.B) {
	hs := loadHistories(b, false)
	var text []briefd.Message
	for k, h := range hs {
		for _, m := range h.Messages {
			m.ID = fmt.Sprintf("c%d-%s", k, m.ID)
			if m.ToolCallID != "" {
				m.ToolCallID = fmt.Sprintf("c%d-%s", k, m.ToolCallID)
			}
			if len(m.ToolCalls) > 0 {
				tcs := append([]briefd.ToolCall(nil), m.ToolCalls...)
				for j := range tcs {
					tcs[j].ID = fmt.Sprintf("c%d-%s", k, tcs[j].ID)
				}
				m.ToolCalls = tcs
			}
			text = append(text, m)
		}
	}
	stub := func(_ context.Context, in brief.Input) (*brief.Draft, error) {
		return &brief.Draft{Text: "Briefing of the earlier conversation.", BudgetTokens: in.BudgetTokens}, nil
	}
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("tokens=%d", size), func(b *testing.B) {
			e, err := New(Config{Model: "gpt-4o", ContextWindow: size})
			if err != nil {
				b.Fatal(err)
			}
			e.brief = stub
			n, tokens := 0, 0
			for n < len(text) && (tokens < size || text[n].Role != briefd.RoleAssistant) {
				tokens += e.counter.CountMessage(&text[n])
				n++
			}
			h := append(make([]briefd.Message, 0, len(text)), text[:n]...)
			if _, err := e.Compact(b.Context(), Request{ConversationID: "c", Messages: h}); err != nil {
				b.Fatal(err)
			}
			var lats []time.Duration
			for b.Loop() {
				b.StopTimer()
				h = append(h, text[len(h)])
				for len(h) < len(text) && text[len(h)].Role != briefd.RoleAssistant {
					h = append(h, text[len(h)])
				}
				b.StartTimer()
				t0 := time.Now()
				res, err := e.Compact(b.Context(), Request{ConversationID: "c", Messages: h})
				lats = append(lats, time.Since(t0))
				if err != nil || !res.Compacted {
					b.Fatalf("%v %+v", err, res.Reason)
				}
			}
			slices.Sort(lats)
			b.ReportMetric(float64(lats[len(lats)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(len(h)), "messages")
		})
	}
}
