package brief_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/compact"
)

// longSpan joins the shared histories (or the shipped ones) into one
// conversation: the first one's head, then every history's messages
// after its head, ids renumbered and call ids kept apart.
func longSpan(b *testing.B) (head, span []briefd.Message) {
	var files []string
	for _, dir := range []string{"../../../shared/data/histories", "../../examples/histories"} {
		files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) > 0 {
			break
		}
	}
	if len(files) == 0 {
		b.Skip("no histories")
	}
	sort.Strings(files)
	n := 0
	for h, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		hist, err := briefd.ParseHistory(data)
		if err != nil {
			b.Fatal(err)
		}
		for i, m := range hist.Messages {
			if m.Role == briefd.RoleSystem || i < 2 && m.Role == briefd.RoleUser && h > 0 {
				if h == 0 {
					head = append(head, m)
				}
				continue
			}
			if h == 0 && len(span) == 0 && m.Role == briefd.RoleUser {
				head = append(head, m)
				continue
			}
			n++
			m.ID = fmt.Sprintf("m%05d", n)
			m.Pinned = false
			if m.ToolCallID != "" {
				m.ToolCallID = strconv.Itoa(h) + "_" + m.ToolCallID
			}
			if len(m.ToolCalls) > 0 {
				m.ToolCalls = append([]briefd.ToolCall(nil), m.ToolCalls...)
				for k := range m.ToolCalls {
					m.ToolCalls[k].ID = strconv.Itoa(h) + "_" + m.ToolCalls[k].ID
				}
			}
			span = append(span, m)
		}
	}
	for len(span) > 0 && span[0].Role == briefd.RoleTool {
		span = span[1:]
	}
	return head, span
}

// BenchmarkWarmWrite times a warm Write of a span grown by one turn, the
// briefing writer's part of a worker's snapshot, at a span of the first
// tenth of the joined histories and at all of them, with a budget of a
// twentieth of the span's tokens, counted by sections as the engine's
// Writes are.
//
//	go test -run '^$' -bench WarmWrite -benchtime 128x ./internal/brief
func BenchmarkWarmWrite(b *testing.B) {
	head, all := longSpan(b)
	tc, err := compact.NewTokenCounter("gpt-4o", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, frac := range []int{10, 1} {
		span := all[:len(all)/frac]
		var ends []int
		for k := 1; k <= len(span); k++ {
			if k == len(span) || span[k].Role == briefd.RoleAssistant {
				ends = append(ends, k)
			}
		}
		tokens := 0
		for i := range span {
			tokens += tc.CountMessage(&span[i])
		}
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			const turns = 128
			first := max(0, len(ends)-turns)
			cache := brief.NewCache(0, 0)
			w := &brief.Warm{}
			write := func(k int) {
				_, err := brief.Write(context.Background(), brief.Input{Head: head, Span: span[:ends[k]], BudgetTokens: max(500, tokens/20),
					CountTokens: tc.Count, CountSplits: true, Cache: cache, Warm: w})
				if err != nil {
					b.Fatal(err)
				}
			}
			k := first
			for b.Loop() {
				if k == first {
					b.StopTimer()
					w.Reset()
					write(k)
					k++
					b.StartTimer()
				}
				write(k)
				if k++; k == len(ends) {
					k = first
				}
			}
		})
	}
}
