package compact

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/briefd/briefd"
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
