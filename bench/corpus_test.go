package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/compact"
)

// sharedHistories is the shared data beside the repository (absent in a
// fresh clone: the embedded examples stand in).
const sharedHistories = "../../shared/data/histories"

var (
	corpusOnce  sync.Once
	corpusConvs [][]briefd.Message
	corpusFrom  string
	corpusErr   error
)

// corpus returns the conversations bench histories are made of: the 60
// shared histories when present, else the embedded examples, each with its
// message and tool-call ids prefixed by its rank ("c7-"), so that they
// can follow one another in one history. Each conversation appears once:
// a history built from them never repeats a text, so that no cache keyed
// by content (token counts, the briefing writer's reading of steps) can
// make a large history look cheaper than it is.
func corpus(tb testing.TB) ([][]briefd.Message, string) {
	tb.Helper()
	corpusOnce.Do(func() {
		corpusConvs, corpusFrom, corpusErr = loadCorpus()
	})
	if corpusErr != nil {
		tb.Fatal(corpusErr)
	}
	return corpusConvs, corpusFrom
}

func loadCorpus() ([][]briefd.Message, string, error) {
	var hs []*briefd.History
	from := sharedHistories
	files, _ := filepath.Glob(filepath.Join(sharedHistories, "*.json"))
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, "", err
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			return nil, "", err
		}
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		var err error
		if hs, err = examples.Histories(); err != nil {
			return nil, "", err
		}
		from = "examples/histories"
	}
	out := make([][]briefd.Message, len(hs))
	for k, h := range hs {
		out[k] = copyWithPrefix(h.Messages, "c"+strconv.Itoa(k)+"-")
	}
	return out, from, nil
}

// copyWithPrefix copies msgs with every message and tool call id prefixed.
func copyWithPrefix(msgs []briefd.Message, prefix string) []briefd.Message {
	out := make([]briefd.Message, len(msgs))
	for i, m := range msgs {
		m.ID = prefix + m.ID
		if m.ToolCallID != "" {
			m.ToolCallID = prefix + m.ToolCallID
		}
		if len(m.ToolCalls) > 0 {
			tcs := slices.Clone(m.ToolCalls)
			for j := range tcs {
				tcs[j].ID = prefix + tcs[j].ID
			}
			m.ToolCalls = tcs
		}
		out[i] = m
	}
	return out
}

// text reads the corpus conversations one after the other, once.
type text struct {
	convs [][]briefd.Message
	k, i  int
}

func newText(tb testing.TB) *text {
	convs, _ := corpus(tb)
	return &text{convs: convs}
}

// peek returns the next message without consuming it; false at the end.
func (t *text) peek() (*briefd.Message, bool) {
	for t.k < len(t.convs) && t.i >= len(t.convs[t.k]) {
		t.k, t.i = t.k+1, 0
	}
	if t.k >= len(t.convs) {
		return nil, false
	}
	return &t.convs[t.k][t.i], true
}

func (t *text) next() (briefd.Message, bool) {
	m, ok := t.peek()
	if !ok {
		return briefd.Message{}, false
	}
	t.i++
	return *m, true
}

// step returns the next agent step: the messages up to, not including,
// the assistant message after the next one (an assistant message, its
// tool results and what follows them until the model speaks again), so a
// history cut after a step has every call answered. It returns nil when
// the corpus is exhausted.
func (t *text) step() []briefd.Message {
	var out []briefd.Message
	for {
		m, ok := t.peek()
		if !ok || (m.Role == briefd.RoleAssistant && len(out) > 0 && hasAssistant(out)) {
			return out
		}
		msg, _ := t.next()
		out = append(out, msg)
	}
}

func hasAssistant(msgs []briefd.Message) bool {
	return slices.ContainsFunc(msgs, func(m briefd.Message) bool { return m.Role == briefd.RoleAssistant })
}

// take reads messages until full reports true, then up to the next
// assistant message, so every call is answered. It fails tb when the
// corpus runs out first: bench histories never repeat a text.
func (t *text) take(tb testing.TB, full func(m *briefd.Message, have int) bool) []briefd.Message {
	tb.Helper()
	var out []briefd.Message
	done := false
	for {
		m, ok := t.peek()
		if done && (!ok || m.Role == briefd.RoleAssistant) {
			return out
		}
		if !ok {
			_, from := corpus(tb)
			tb.Fatalf("the corpus (%s) holds %d messages, not enough for this history without repeating it", from, len(out))
		}
		msg, _ := t.next()
		out = append(out, msg)
		done = done || full(&out[len(out)-1], len(out))
	}
}

// tokenCounter counts like the workers' default model (o200k_base).
func tokenCounter(tb testing.TB) *compact.TokenCounter {
	tb.Helper()
	tc, err := compact.NewTokenCounter("gpt-4o", "", compact.DefaultPerMessageOverhead)
	if err != nil {
		tb.Fatal(err)
	}
	return tc
}

// history builds a valid history of about tokens tokens (o200k_base) from
// the corpus, never repeating a text, cut before an assistant message.
func history(tb testing.TB, tokens int) []briefd.Message {
	h, _ := growing(tb, tokens)
	return h
}

// growing is history plus the corpus text after it, for the turns that
// extend it.
func growing(tb testing.TB, tokens int) ([]briefd.Message, *text) {
	tb.Helper()
	tc := tokenCounter(tb)
	n := 0
	t := newText(tb)
	h := t.take(tb, func(m *briefd.Message, _ int) bool {
		n += tc.CountMessage(m)
		return n >= tokens
	})
	return h, t
}

// historyOf builds a valid history of about msgs messages the same way.
func historyOf(tb testing.TB, msgs int) []briefd.Message {
	return newText(tb).take(tb, func(_ *briefd.Message, have int) bool { return have >= msgs })
}

// TestCorpusHistories checks what the benchmarks rely on: the histories
// are valid, as large as asked, and never repeat a text.
func TestCorpusHistories(t *testing.T) {
	_, from := corpus(t)
	tc := tokenCounter(t)
	// The three examples of a fresh clone hold about 36k tokens, all of
	// them taken by the first history and its 128 steps; the shared
	// histories hold more than 1M.
	sizes := []int{1_000}
	if from == sharedHistories {
		sizes = append(sizes, 100_000, 1_000_000)
	}
	for _, size := range sizes {
		h, rest := growing(t, size)
		for range 128 {
			if s := rest.step(); len(s) > 0 {
				h = append(h, s...)
			}
		}
		if err := briefd.Validate(h, briefd.Limits{}); err != nil {
			t.Fatalf("%d tokens: %v", size, err)
		}
		// Real conversations of one agent share some texts (a system
		// prompt, a tool's usual output); what the generator must not do is
		// repeat a conversation, which would repeat nearly everything.
		tokens, bytes, repeated := 0, 0, 0
		seen := map[string]bool{}
		for i := range h {
			tokens += tc.CountMessage(&h[i])
			c := h[i].Content.String()
			bytes += len(c)
			if seen[c] {
				repeated += len(c)
			}
			seen[c] = true
		}
		if share := float64(repeated) / float64(bytes); share > 0.10 {
			t.Errorf("%d tokens: %.1f%% of the text repeats an earlier message", size, 100*share)
		}
		if tokens < size {
			t.Errorf("history of %d tokens, asked for %d", tokens, size)
		}
		t.Logf("%d tokens asked: %d messages, %d tokens with 128 steps (from %s); %.1f%% of the text repeats an earlier message",
			size, len(h), tokens, from, 100*float64(repeated)/float64(bytes))
	}
}
