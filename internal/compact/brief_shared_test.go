package compact

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/briefd/briefd"
)

const sharedHistories = "../../../shared/data/histories"

// sharedFiles returns the shared history files, or skips the test when the
// shared data is absent (a fresh clone).
func sharedFiles(tb testing.TB) []string {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedHistories, "*.json"))
	if len(files) == 0 {
		tb.Skip("shared histories absent: " + sharedHistories)
	}
	sort.Strings(files)
	return files
}

func loadHistory(tb testing.TB, path string) *briefd.History {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return h
}

var (
	testCounterOnce sync.Once
	testCounter     *TokenCounter
	testCounterErr  error
)

// exactCount counts with the real o200k_base encoder (offline).
func exactCount(tb testing.TB) func(string) int {
	tb.Helper()
	testCounterOnce.Do(func() { testCounter, testCounterErr = NewTokenCounter("gpt-4o", "", 0) })
	if testCounterErr != nil {
		tb.Fatal(testCounterErr)
	}
	return testCounter.Count
}

// spanAt returns the non-pinned messages before a cut at frac of the
// history, moved so that it never separates a tool call from its results.
func spanAt(msgs []briefd.Message, frac float64) []briefd.Message {
	cut := int(float64(len(msgs)) * frac)
	for cut > 0 && cut < len(msgs) && msgs[cut].Role == briefd.RoleTool {
		cut--
	}
	var span []briefd.Message
	for i := 0; i < cut; i++ {
		if !briefd.Pinned(msgs, i) {
			span = append(span, msgs[i])
		}
	}
	return span
}

func spanTokens(span []briefd.Message, count func(string) int) int {
	n := 0
	for i := range span {
		n += count(span[i].Content.String())
		for _, tc := range span[i].ToolCalls {
			n += count(tc.Function.Arguments)
		}
	}
	return n
}

func budgetFor(spanTok int) int { return min(max(spanTok/10, 512), 8192) }

func TestBriefPrint(t *testing.T) {
	name := os.Getenv("BRIEF_PRINT")
	if name == "" {
		t.Skip("set BRIEF_PRINT=file.json to print a briefing")
	}
	count := exactCount(t)
	h := loadHistory(t, filepath.Join(sharedHistories, name))
	span := spanAt(h.Messages, 0.7*0.8)
	st := spanTokens(span, count)
	d, err := Brief(BriefInput{Span: span, BudgetTokens: budgetFor(st), CountTokens: count})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("span %d tokens, budget %d, text %d tokens\n%s", st, budgetFor(st), count(d.Text), d.Text)
	if os.Getenv("BRIEF_JSON") != "" {
		t.Logf("%s", strings.ReplaceAll(string(d.Structured), "},", "},\n"))
	}
}
