package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/nats-io/nats.go/jetstream"
)

// longConversation is conversation(n) whose tool results are long enough
// to be compressed (the publisher zstd-compresses bodies of 512 bytes or
// more), each naming its step.
func longConversation(n int) []briefd.Message {
	h := conversation(n)
	for i := range h {
		if h[i].Role == briefd.RoleTool {
			h[i].Content = briefd.Text(fmt.Sprintf("output of step %s: ", h[i].ID) + strings.Repeat("all tests <pass> & more; ", 40))
		}
	}
	return h
}

func ids(msgs []briefd.Message) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].ID
	}
	return out
}

// publishTurns publishes h turn by turn (after each tool result) and waits
// for the acks.
func publishTurns(t *testing.T, c *client.Client, conv string, h []briefd.Message) {
	t.Helper()
	for k := 4; k <= len(h); k += 2 {
		if err := c.Publish(t.Context(), conv, h[:k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestExpandFullHistory(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithTenant("t1"))
	h := longConversation(10)
	publishTurns(t, c, "conv", h)

	ex, err := c.Expand(t.Context(), "conv", "a2", "t4")
	if err != nil {
		t.Fatal(err)
	}
	if want := h[6:12]; !reflect.DeepEqual(ex.Messages, want) {
		t.Fatalf("Expand(a2, t4) = %v, want %v", ids(ex.Messages), ids(want))
	}
	if ex.Truncated || ex.NextID != "" || ex.FromID != "a2" || ex.ToID != "t4" {
		t.Errorf("Expand(a2, t4): truncated %v next %q range %s..%s", ex.Truncated, ex.NextID, ex.FromID, ex.ToID)
	}
	// Reversed ids and a single id.
	if ex, err := c.Expand(t.Context(), "conv", "t4", "a2"); err != nil || len(ex.Messages) != 6 || ex.FromID != "a2" {
		t.Errorf("Expand(t4, a2) = %v, %v", ex, err)
	}
	if ex, err := c.Expand(t.Context(), "conv", "t3", ""); err != nil || len(ex.Messages) != 1 || ex.Messages[0].ID != "t3" {
		t.Errorf("Expand(t3) = %v, %v", ex, err)
	}
	if _, err := c.Expand(t.Context(), "conv", "nope", "t4"); !errors.Is(err, client.ErrUnknownMessage) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Expand(nope) = %v, want ErrUnknownMessage naming it", err)
	}
	if _, err := c.Expand(t.Context(), "other", "a1", ""); !errors.Is(err, client.ErrUnknownMessage) {
		t.Errorf("Expand of an unknown conversation = %v, want ErrUnknownMessage", err)
	}
	if _, err := c.Expand(t.Context(), "a.b", "a1", ""); !errors.Is(err, client.ErrInvalidID) {
		t.Errorf("Expand with a bad conversation id = %v", err)
	}
}

// TestExpandSplicedHistory: an agent that publishes its spliced history
// drops the compacted messages from later snapshots; Expand still reads
// them from the older ones, in conversation order, across two chained
// compactions, and an edited message comes back as last published.
func TestExpandSplicedHistory(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithTenant("t1"))
	h := longConversation(12)
	publishTurns(t, c, "conv", h[:12]) // sys, task, a0..t4
	first := &briefd.Briefing{ConversationID: "conv", BoundaryID: "a4", Position: 8, Text: "first"}
	spliced, err := briefd.Splice(h[:12], first)
	if err != nil {
		t.Fatal(err)
	}
	// The agent goes on from the spliced history; it edits t5 once.
	cur := spliced
	for k := 12; k < 20; k += 2 {
		cur = append(cur, h[k], h[k+1])
		if err := c.Publish(t.Context(), "conv", cur); err != nil {
			t.Fatal(err)
		}
	}
	edited := cur[len(cur)-5]
	if edited.ID != "t6" {
		t.Fatalf("edited %s", edited.ID)
	}
	cur[len(cur)-5].Content = briefd.Text("edited output of t6")
	if err := c.Publish(t.Context(), "conv", cur); err != nil {
		t.Fatal(err)
	}
	second := &briefd.Briefing{ConversationID: "conv", BoundaryID: "a8", Position: 16, Text: "second"}
	spliced2, err := briefd.Splice(cur, second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "conv", append(spliced2, h[20], h[21])); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	ex, err := c.Expand(t.Context(), "conv", "task", "t9")
	if err != nil {
		t.Fatal(err)
	}
	want := append([]briefd.Message(nil), h[1:22]...)
	want[14].Content = briefd.Text("edited output of t6") // h[15] is t6
	if want[14].ID != "t6" {
		t.Fatalf("want[14] is %s", want[14].ID)
	}
	if !reflect.DeepEqual(ex.Messages, want) {
		t.Fatalf("Expand(task, t9) = %v\nwant %v", ids(ex.Messages), ids(want))
	}
}

func TestExpandLimits(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithTenant("t1"), client.WithExpandLimits(client.ExpandLimits{MaxMessages: 3, MaxBytes: 2000}))
	h := longConversation(6)
	publishTurns(t, c, "conv", h)

	ex, err := c.Expand(t.Context(), "conv", "task", "t5")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ex.Messages); !reflect.DeepEqual(got, []string{"task", "a0", "t0"}) || !ex.Truncated || ex.NextID != "a1" {
		t.Fatalf("MaxMessages 3: %v truncated %v next %q", got, ex.Truncated, ex.NextID)
	}
	// Each tool result is ~1 KB: two fit 2000 bytes with the small ones.
	ex, err = c.Expand(t.Context(), "conv", "t0", "t5")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ex.Messages); !reflect.DeepEqual(got, []string{"t0", "a1"}) || ex.NextID != "t1" {
		t.Fatalf("MaxBytes 2000: %v next %q", got, ex.NextID)
	}
	// A first message over MaxBytes is clipped, not skipped.
	c2 := newClient(t, b.nc, client.WithTenant("t1"), client.WithExpandLimits(client.ExpandLimits{MaxBytes: 100}))
	ex, err = c2.Expand(t.Context(), "conv", "t0", "t5")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Messages) != 1 || !ex.Truncated || ex.NextID != "a1" {
		t.Fatalf("MaxBytes 100: %v truncated %v next %q", ids(ex.Messages), ex.Truncated, ex.NextID)
	}
	text := ex.Messages[0].Content.Text
	if !strings.HasPrefix(text, h[3].Content.Text[:100]) || !strings.Contains(text, "clipped by briefd") || len(text) > 160 {
		t.Errorf("clipped message: %q", text)
	}
}

func TestExpandExpired(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithTenant("t1"))
	h := longConversation(6)
	publishTurns(t, c, "conv", h)
	// The bodies of t1 and t2 leave the stream, as MaxAge would drop them.
	bodies, err := b.js.Stream(t.Context(), queue.Config{}.Streams().Bodies)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []briefd.Message{h[5], h[7]} {
		data, _ := json.Marshal(m)
		subj := queue.Subjects{Prefix: "briefd"}.Body("t1", "conv", queue.BodyHash(data))
		if err := bodies.Purge(t.Context(), jetstream.WithPurgeSubject(subj)); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := c.Expand(t.Context(), "conv", "a1", "a3")
	var expired *client.ExpiredError
	if !errors.As(err, &expired) {
		t.Fatalf("Expand over expired bodies = %v, want *ExpiredError", err)
	}
	if !reflect.DeepEqual(expired.IDs, []string{"t1", "t2"}) || !strings.Contains(err.Error(), "2 messages from t1 to t2 expired") {
		t.Errorf("expired error: %v (ids %v)", err, expired.IDs)
	}
	if got := ids(ex.Messages); !reflect.DeepEqual(got, []string{"a1", "a2", "a3"}) {
		t.Errorf("readable messages = %v", got)
	}
	out, err := c.HandleExpandTool(t.Context(), "conv", `{"from_id":"a1","to_id":"a3"}`)
	if err != nil || !strings.Contains(out, `"expired_ids":["t1","t2"]`) || !strings.Contains(out, "2 messages from t1 to t2 expired and cannot be read") {
		t.Errorf("tool answer over expired bodies: %s, %v", out, err)
	}
}

func TestSearch(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithTenant("t1"), client.WithExpandLimits(client.ExpandLimits{MaxMatches: 2}))
	h := longConversation(6)
	h[4].Content = briefd.Text("Found the bug in parser.go: an off-by-one.")
	h[2].Content = briefd.Text("key 0123abcd00112233445566778899AABB89abcdef")
	h[6].Content = briefd.Text("def f():\n\treturn  compute(x,\n        y) # at 3:04:05\u202fPM")
	publishTurns(t, c, "conv", h)

	if _, err := c.Search(t.Context(), "conv", "parser"); !errors.Is(err, client.ErrNoBriefing) {
		t.Fatalf("Search before any briefing = %v, want ErrNoBriefing", err)
	}
	if _, err := store.Put(t.Context(), &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a4", Position: 9, Text: "brief"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Search(t.Context(), "conv", "PARSER.GO")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].ID != "a1" || res.Matches[0].Snippet != "Found the bug in parser.go: an off-by-one.\nbash({\"command\":\"ls\"})" || res.Searched != 10 {
		t.Fatalf("Search(PARSER.GO) = %+v", res)
	}
	// Every tool result before a4 matches; two are shown.
	res, err = c.Search(t.Context(), "conv", `output of step t\d`, client.SearchRegexp())
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{res.Matches[0].ID, res.Matches[1].ID}; len(res.Matches) != 2 || !reflect.DeepEqual(got, []string{"t0", "t1"}) || !res.Truncated {
		t.Fatalf("regexp search = %+v", res)
	}
	if s := res.Matches[0].Snippet; !strings.HasPrefix(s, "output of step t0: all tests <pass>") || !strings.HasSuffix(s, "…") {
		t.Errorf("snippet %q", s)
	}
	// Tool calls are searched as name(arguments); t5 is after the boundary.
	res, err = c.Search(t.Context(), "conv", `bash({"command":"ls"})`)
	if err != nil || len(res.Matches) != 2 || res.Matches[0].ID != "a0" {
		t.Fatalf("tool call search = %+v, %v", res, err)
	}
	// "…" stands for what a briefing cut: a long value told by its ends,
	// its length dropped, or a clipped quote.
	for q, want := range map[string]int{"Found the…off-by-one": 1, "found THE bug … parser.go:  …": 1,
		"0123ABCD…89ABCDEF (24 hex digits)": 1, "Found…t0": 0, "0123ABCD…ffff": 0,
		// The briefing collapses whitespace and marks line breaks and tabs;
		// a query without its marks is a plain substring.
		"return compute(x, y)…": 1, "def f(): ⏎ ⇥ return compute(x, ⏎ y)": 1, "return compute(x, y)": 0,
		// A space other than ASCII's is text, in both SDKs.
		"at 3:04:05\u202fPM…": 1, "at 3:04:05 PM…": 0} {
		res, err = c.Search(t.Context(), "conv", q)
		if err != nil || len(res.Matches) != want {
			t.Errorf("Search(%q) = %+v, %v; want %d matches", q, res, err, want)
		}
	}
	if _, err := c.Search(t.Context(), "conv", " … …"); !errors.Is(err, client.ErrInvalidQuery) {
		t.Errorf("Search of the cut mark alone = %v, want ErrInvalidQuery", err)
	}
	res, err = c.Search(t.Context(), "conv", "output of step t5")
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("search past the boundary = %+v, %v", res, err)
	}
	res, err = c.Search(t.Context(), "conv", "output of step t5", client.SearchAll())
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "t5" {
		t.Fatalf("SearchAll = %+v, %v", res, err)
	}
	for _, q := range []string{"", "(", strings.Repeat("x", client.MaxQueryLength+1)} {
		if _, err := c.Search(t.Context(), "conv", q, client.SearchRegexp()); !errors.Is(err, client.ErrInvalidQuery) {
			t.Errorf("Search(%.10q) = %v, want ErrInvalidQuery", q, err)
		}
	}
}

func TestExpandTool(t *testing.T) {
	def, err := json.Marshal(client.ExpandTool())
	if err != nil {
		t.Fatal(err)
	}
	var tool struct {
		Type     string `json:"type"`
		Function struct {
			Name       string `json:"name"`
			Parameters struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(def, &tool); err != nil {
		t.Fatal(err)
	}
	if tool.Type != "function" || tool.Function.Name != briefd.ExpandToolName || tool.Function.Parameters.Type != "object" || len(tool.Function.Parameters.Properties) != 4 {
		t.Fatalf("tool definition %s", def)
	}

	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithTenant("t1"), client.WithExpandLimits(client.ExpandLimits{MaxMessages: 2}))
	h := longConversation(4)
	publishTurns(t, c, "conv", h)
	if _, err := store.Put(t.Context(), &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a3", Position: 7, Text: "brief"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		want       []string
	}{
		{"range", `{"from_id":"a0","to_id":"a1"}`, []string{`"conversation_id":"conv","from_id":"a0","to_id":"a1","messages":[{"id":"a0",`, `"truncated":true,"next_id":"a1"`, "call again with from_id a1"}},
		{"to only", `{"to_id":"t0"}`, []string{`"messages":[{"id":"t0","role":"tool","content":"output of step t0: all tests <pass> & more;`, `"truncated":false`}},
		{"query", `{"query":"STEP T1"}`, []string{`"matches":[{"id":"t1","role":"tool","snippet":"output of step t1: all tests <pass>`, `"searched":8,"truncated":false`}},
		{"regexp", `{"query":"step t[12]","regexp":true}`, []string{`"matches":[{"id":"t1"`, `{"id":"t2"`}},
		{"both", `{"from_id":"a0","query":"x"}`, []string{`{"error":"give either from_id/to_id or query, not both"}`}},
		{"neither", `{}`, []string{`"error":"give from_id`}},
		{"unknown field", `{"from":"a0"}`, []string{`"error":"arguments are not the expand_history tool's`}},
		{"not json", `a0`, []string{`"error":"arguments are not`}},
		{"unknown id", `{"from_id":"zz"}`, []string{`{"error":"message \"zz\" is not in this conversation's stored snapshots (kept 168h0m0s): it expired, or was never published"}`}},
		{"bad regexp", `{"query":"(","regexp":true}`, []string{`{"error":"invalid search query: error parsing regexp`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.HandleExpandTool(t.Context(), "conv", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("answer is not JSON: %s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("answer lacks %s:\n%s", w, out)
				}
			}
		})
	}
	c.Close(t.Context())
	if out, err := c.HandleExpandTool(t.Context(), "conv", `{"from_id":"a0"}`); !errors.Is(err, client.ErrClosed) || !strings.Contains(out, `"error"`) {
		t.Errorf("closed client: %s, %v", out, err)
	}
}

// BenchmarkExpand reads 10 messages of a 200-turn conversation published
// turn by turn (200 snapshots): "first" is a client's first call (it scans
// every snapshot), "again" a later call of the same client (it reads only
// the snapshots stored since).
func BenchmarkExpand(b *testing.B) {
	srv := natstest.Start(b)
	nc, js := srv.Connect(b)
	if err := queue.EnsureStreams(context.Background(), js, queue.Config{}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pub, err := client.New(nc, client.WithLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	h := longConversation(200)
	for k := 4; k <= len(h); k += 2 {
		if err := pub.Publish(ctx, "conv", h[:k]); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	expand := func(c *client.Client) {
		ex, err := c.Expand(ctx, "conv", "a100", "t104")
		if err != nil || len(ex.Messages) != 10 {
			b.Fatalf("Expand = %v, %v", ex, err)
		}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			c, err := client.New(nc, client.WithLogger(quiet))
			if err != nil {
				b.Fatal(err)
			}
			expand(c)
			_ = c.Close(ctx)
		}
	})
	b.Run("again", func(b *testing.B) {
		c, err := client.New(nc, client.WithLogger(quiet))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(ctx)
		expand(c)
		for b.Loop() {
			expand(c)
		}
	})
}
