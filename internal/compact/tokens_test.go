package compact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/briefd/briefd"
)

func newCounter(t testing.TB, encoding string) *TokenCounter {
	t.Helper()
	c, err := NewTokenCounter("", encoding, DefaultPerMessageOverhead)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEncodingForModel(t *testing.T) {
	tests := []struct{ model, want string }{
		{"gpt-4o", EncodingO200K},
		{"gpt-4o-mini-2024-07-18", EncodingO200K},
		{"openai/gpt-4.1-mini", EncodingO200K},
		{"gpt-4.5-preview", EncodingO200K},
		{"gpt-5", EncodingO200K},
		{"gpt-5.1-codex", EncodingO200K},
		{"GPT-5-mini", EncodingO200K},
		{"o1", EncodingO200K},
		{"o3-mini", EncodingO200K},
		{"o4-mini-high", EncodingO200K},
		{"gpt-oss-120b", EncodingO200K},
		{"gpt-4", EncodingCL100K},
		{"gpt-4-turbo", EncodingCL100K},
		{"gpt-3.5-turbo", EncodingCL100K},
		{"claude-haiku-4.5", EncodingCL100K},
		{"omni-model", EncodingCL100K},
		{"", EncodingCL100K},
	}
	for _, tt := range tests {
		if got := EncodingForModel(tt.model); got != tt.want {
			t.Errorf("EncodingForModel(%q) = %s, want %s", tt.model, got, tt.want)
		}
	}
}

func TestNewTokenCounterUnknownEncoding(t *testing.T) {
	if _, err := NewTokenCounter("", "p50k_base", 0); err == nil {
		t.Fatal("want an error for an unsupported encoding")
	}
}

func TestCountKnownValues(t *testing.T) {
	tests := []struct {
		enc, text string
		want      int
	}{
		{EncodingCL100K, "", 0},
		{EncodingCL100K, "hello world", 2},
		{EncodingO200K, "hello world", 2},
		{EncodingCL100K, "<|endoftext|>", 7}, // special tokens count as text
		{EncodingO200K, "tiktoken is great!", 6},
	}
	for _, tt := range tests {
		c := newCounter(t, tt.enc)
		if got := c.Count(tt.text); got != tt.want {
			t.Errorf("%s Count(%q) = %d, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
}

// TestCountChunkedIsExact checks that cutting long texts into cached chunks
// gives exactly the count of the whole text, on every shared history.
func TestCountChunkedIsExact(t *testing.T) {
	t.Parallel()
	texts := []string{
		strings.Repeat("line one.\nLine two!\n\n  indented\nfoo\tbar\r\nBaz\n", 200),
		strings.Repeat("{\"a\": [1,2,3]}\n", 300) + strings.Repeat("é\nà\nZ", 500),
		strings.Repeat("x", 5000) + "\nA" + strings.Repeat("!\nb", 1000),
	}
	for i, h := range loadHistories(t, true) {
		if i%3 != 0 {
			continue // a third of the files is enough; keep the test fast
		}
		texts = append(texts, historyText(h))
	}
	for _, enc := range []string{EncodingO200K, EncodingCL100K} {
		c := newCounter(t, enc)
		for i, text := range texts {
			if len(text) > 30000 {
				text = text[:30000]
			}
			want := c.encode(text)
			if got := c.Count(text); got != want {
				t.Errorf("%s text %d (%d bytes): chunked count %d, whole %d", enc, i, len(text), got, want)
			}
			if got := c.Count(text); got != want {
				t.Errorf("%s text %d: cached count %d, whole %d", enc, i, got, want)
			}
		}
	}
}

func TestChunkEnd(t *testing.T) {
	long := strings.Repeat("a", chunkTarget)
	tests := []struct {
		name, text string
		want       int
	}{
		{"short", "abc\ndef", 7},
		{"cut after newline before letter", long + "\nb", chunkTarget + 1},
		{"no cut before space", long + "\n b", chunkTarget + 3},
		{"no cut before newline", long + "\n\nb", chunkTarget + 2},
		{"cut at text end", long + "\n", chunkTarget + 1},
		{"cut before a list item", long + "\n- b", chunkTarget + 1},
		{"cut before a digit", long + "\n1.", chunkTarget + 1},
		{"no cut before slash", long + "\n/b", chunkTarget + 3},
		{"no cut before quote", long + "\n\"b", chunkTarget + 3},
	}
	for _, tt := range tests {
		if got := chunkEnd(tt.text); got != tt.want {
			t.Errorf("%s: chunkEnd = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestChunkSplitsAreExact checks the cut chunkEnd makes: for a text ending
// in a newline and one starting with a byte startsPiece accepts, the count
// of both is the sum of their counts, in both encodings. Every such cut in
// the histories is checked on the 48 bytes either side, and every pair of
// a set of endings and beginnings chosen to tempt the patterns that take
// newlines (punctuation's trailing newlines, o200k's trailing '/', runs of
// spaces, contractions, a letter's optional prefix).
func TestChunkSplitsAreExact(t *testing.T) {
	t.Parallel()
	type pair struct{ a, b string }
	var pairs []pair
	ends := []string{"\n", "x\n", ".\n", "]\n", "!!\n", "/\n", "'\n", "-\n", " \n", "  \n", "\t\n", "\r\n", "\n\n", "1\n", "é\n", ".\r\n", "a \n", ")\n\n"}
	begins := []string{"a", "A", "abc", "Ab's", "'s", "-", "--", "- ", "-a", "-A", "- [c0-m0043] x", "-/", "-\n", "-1", "1", "123456", "1/2", "9-", "z/", "s\n"}
	for _, a := range ends {
		for _, b := range begins {
			if startsPiece(b[0]) {
				pairs = append(pairs, pair{"word" + a, b + " more"}, pair{a, b})
			}
		}
	}
	for _, h := range loadHistories(t, true) {
		text := historyText(h)
		for p := 1; p < len(text); p++ {
			if text[p-1] != '\n' || !startsPiece(text[p]) {
				continue
			}
			i, j := max(0, p-48), min(len(text), p+48)
			for i > 0 && !utf8.RuneStart(text[i]) {
				i--
			}
			for j < len(text) && !utf8.RuneStart(text[j]) {
				j++
			}
			pairs = append(pairs, pair{text[i:p], text[p:j]})
		}
	}
	for _, enc := range []string{EncodingO200K, EncodingCL100K} {
		c := newCounter(t, enc)
		for _, p := range pairs {
			if whole, sum := c.encode(p.a+p.b), c.encode(p.a)+c.encode(p.b); whole != sum {
				t.Errorf("%s: %q + %q: %d tokens whole, %d cut", enc, p.a, p.b, whole, sum)
			}
		}
	}
}

func TestCountMessage(t *testing.T) {
	c := newCounter(t, EncodingO200K)
	text := briefd.Message{ID: "a", Role: briefd.RoleUser, Content: briefd.Text("hello world")}
	if got := c.CountMessage(&text); got != DefaultPerMessageOverhead+2 {
		t.Errorf("plain: %d", got)
	}
	named := text
	named.Name = "bob"
	if got := c.CountMessage(&named); got != DefaultPerMessageOverhead+2+c.Count("bob")+nameOverhead {
		t.Errorf("named: %d", got)
	}
	parts := briefd.Message{ID: "b", Role: briefd.RoleUser, Content: briefd.Content{Parts: []briefd.ContentPart{
		{Type: "text", Text: "hello world"}, {Type: "image_url", ImageURL: &briefd.ImageURL{URL: "data:" + strings.Repeat("A", 10000)}},
	}}}
	if got := c.CountMessage(&parts); got != DefaultPerMessageOverhead+2+ImageTokens {
		t.Errorf("parts: %d", got)
	}
	call := briefd.Message{ID: "c", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{
		{ID: "x", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}},
	}}
	want := DefaultPerMessageOverhead + toolCallOverhead + c.Count("bash") + c.Count(`{"command":"ls"}`)
	if got := c.CountMessage(&call); got != want {
		t.Errorf("tool call: %d, want %d", got, want)
	}
	// The cache is keyed by content: same content, other id, same count;
	// other content, other count.
	other := text
	other.ID = "zzz"
	if c.CountMessage(&other) != c.CountMessage(&text) {
		t.Error("count depends on the id")
	}
	other.Content = briefd.Text("hello world hello world")
	if c.CountMessage(&other) == c.CountMessage(&text) {
		t.Error("cache ignores the content")
	}
	// A text moved into a part must not hit the string's cache entry.
	asPart := briefd.Message{ID: "d", Role: briefd.RoleUser, Content: briefd.Content{Parts: []briefd.ContentPart{{Type: "image_url", Text: "hello world"}}}}
	if c.CountMessage(&asPart) != DefaultPerMessageOverhead+ImageTokens {
		t.Error("part cache entry collides with the plain text")
	}
	none, err := NewTokenCounter("", EncodingO200K, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := none.CountMessage(&text); got != 2 {
		t.Errorf("no overhead: %d", got)
	}
}

func TestCountConcurrent(t *testing.T) {
	c := newCounter(t, EncodingCL100K)
	msgs := make([]briefd.Message, 50)
	for i := range msgs {
		msgs[i] = briefd.Message{ID: fmt.Sprint(i), Role: briefd.RoleUser, Content: briefd.Text(strings.Repeat(fmt.Sprintf("word%d\nLine ", i), 100+i))}
	}
	want := make([]int, len(msgs))
	for i := range msgs {
		want[i] = c.encode(msgs[i].Content.Text) + DefaultPerMessageOverhead
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(msgs))
	for range 4 {
		wg.Go(func() {
			for i := range msgs {
				if got := c.CountMessage(&msgs[i]); got != want[i] {
					errs <- fmt.Sprintf("message %d: %d, want %d", i, got, want[i])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCountCacheBounded(t *testing.T) {
	cc := newCountCache(8)
	for k := range uint64(100) {
		cc.put(k, int(k))
	}
	if n := len(cc.cur) + len(cc.old); n > 8 {
		t.Fatalf("cache holds %d entries, bound 8", n)
	}
	if v, ok := cc.get(99); !ok || v != 99 {
		t.Fatalf("newest entry lost: %d %v", v, ok)
	}
	if _, ok := cc.get(0); ok {
		t.Fatal("oldest entry kept")
	}
}

// historiesDir is the shared data, beside the repository.
const historiesDir = "../../../shared/data/histories"

// loadHistories reads every shared history, skipping the test when the
// data is absent (a fresh clone) unless optional is set.
func loadHistories(t testing.TB, optional bool) []*briefd.History {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if len(files) == 0 {
		if optional {
			return nil
		}
		t.Skipf("no shared histories in %s", historiesDir)
	}
	var out []*briefd.History
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if h.ID == "" {
			h.ID = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		out = append(out, h)
	}
	return out
}

// endsAfter is a context that ends after its first n looks at Err, so a
// test can stop a computation in its middle without timing.
type endsAfter struct {
	context.Context
	n atomic.Int32
}

func (c *endsAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A compaction stops in the middle of counting one long message when its
// context ends: a worker's deadline is not held by a slow text.
func TestCompactStopsWhileCounting(t *testing.T) {
	t.Parallel()
	msgs := []briefd.Message{{ID: "u", Role: briefd.RoleUser, Content: briefd.Text(strings.Repeat("x", 1<<20))}}
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := &endsAfter{Context: context.Background()}
	ctx.n.Store(1) // the engine's own look before counting
	if _, err := e.Compact(ctx, Request{ConversationID: "c", Messages: msgs, Force: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := ctx.n.Load(); n > -1 {
		t.Fatal("the tokenizer never looked at the context")
	}
	// The same message, counted to the end, is cached only then.
	n, err := e.Counter().CountMessageContext(context.Background(), &msgs[0])
	if err != nil || n != e.Counter().encode(msgs[0].Content.Text)+DefaultPerMessageOverhead {
		t.Fatalf("count %d, %v", n, err)
	}
}

// historyText joins a history's contents and tool-call arguments, a line
// each: text of every shape the counter meets.
func historyText(h *briefd.History) string {
	var sb strings.Builder
	for _, m := range h.Messages {
		sb.WriteString(m.Content.String())
		sb.WriteString("\n")
		for _, tc := range m.ToolCalls {
			sb.WriteString(tc.Function.Arguments)
			sb.WriteString("\n")
		}
	}
	return sb.String()
}
