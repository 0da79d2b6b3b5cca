package compact

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// briefBenchFile is the longest shared conversation.
const briefBenchFile = "mini-swe-agent-30.json"

// briefBenchSpan returns the span the engine compacts in the benchmark
// conversation at 80% of its messages, and its size in bytes.
func briefBenchSpan(b *testing.B) ([]briefd.Message, int) {
	b.Helper()
	sharedFiles(b)
	h := loadHistory(b, filepath.Join(sharedHistories, briefBenchFile))
	span := spanAt(h.Messages, 0.8)
	size := 0
	for i := range span {
		size += span[i].Size()
	}
	return span, size
}

// growStep is one new tool step: an assistant call and its result.
func growStep(n int) []briefd.Message {
	call := fmt.Sprintf("grow_call_%d", n)
	return []briefd.Message{
		{ID: fmt.Sprintf("g%05da", n), Role: briefd.RoleAssistant, Content: briefd.Text(fmt.Sprintf("THOUGHT: check step %d again.", n)),
			ToolCalls: []briefd.ToolCall{{ID: call, Type: "function", Function: briefd.FunctionCall{Name: "bash",
				Arguments: fmt.Sprintf(`{"command":"python -m pytest tests/test_grow_%d.py -q"}`, n)}}}},
		{ID: fmt.Sprintf("g%05dt", n), Role: briefd.RoleTool, ToolCallID: call,
			Content: briefd.Text(fmt.Sprintf("<returncode>0</returncode>\n<output>\n%s1 passed in 0.%03ds\n</output>", strings.Repeat(".", n%50), n%1000))},
	}
}

func reportMBs(b *testing.B, size int) {
	if ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N); ns > 0 {
		b.ReportMetric(float64(size)/ns*1e3, "MB/s")
	}
}

// BenchmarkBrief measures the deterministic briefing of the longest shared
// conversation's span (budget 10% of it):
//   - tokenize-span: a fresh token counter counting the span's messages,
//     the tokenizer's own time, which the engine spends anyway;
//   - cold: a fresh extraction cache and token counter, so every message is
//     read and every briefing line tokenized;
//   - warm: one cache and counter while the span grows by one tool step
//     per briefing, as a worker sees successive snapshots.
func BenchmarkBrief(b *testing.B) {
	span, size := briefBenchSpan(b)
	newCount := func(b *testing.B) func(string) int {
		c, err := NewTokenCounter("gpt-4o", "", DefaultPerMessageOverhead)
		if err != nil {
			b.Fatal(err)
		}
		return c.Count
	}
	c0, _ := NewTokenCounter("gpt-4o", "", DefaultPerMessageOverhead)
	spanTok := 0
	for i := range span {
		spanTok += c0.CountMessage(&span[i])
	}
	budget := min(max(spanTok/10, 512), 8192)

	b.Run("tokenize-span", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := NewTokenCounter("gpt-4o", "", DefaultPerMessageOverhead)
			if err != nil {
				b.Fatal(err)
			}
			for i := range span {
				c.CountMessage(&span[i])
			}
		}
		reportMBs(b, size)
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Brief(BriefInput{Span: span, BudgetTokens: budget, CountTokens: newCount(b), Cache: NewExtractCache(0)}); err != nil {
				b.Fatal(err)
			}
		}
		reportMBs(b, size)
	})
	b.Run("warm", func(b *testing.B) {
		count, cache := newCount(b), NewExtractCache(0)
		if _, err := Brief(BriefInput{Span: span, BudgetTokens: budget, CountTokens: count, Cache: cache}); err != nil {
			b.Fatal(err)
		}
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			grown := append(span[:len(span):len(span)], growStep(n)...)
			n++
			if _, err := Brief(BriefInput{Span: grown, BudgetTokens: budget, CountTokens: count, Cache: cache}); err != nil {
				b.Fatal(err)
			}
		}
		reportMBs(b, size)
	})
}
