package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
)

// fakeBrief is a small deterministic briefing that respects the budget,
// so the engine's tests do not depend on the real one.
func fakeBrief(_ context.Context, in brief.Input) (*brief.Draft, error) {
	lines := []string{"Briefing of the earlier conversation.\n"}
	total := in.CountTokens(lines[0])
	for _, m := range in.Span {
		line := fmt.Sprintf("- %s %s\n", m.ID, m.Role)
		if total += in.CountTokens(line); total > in.BudgetTokens {
			break
		}
		lines = append(lines, line)
	}
	for len(lines) > 1 && in.CountTokens(strings.Join(lines, "")) > in.BudgetTokens {
		lines = lines[:len(lines)-1]
	}
	return &brief.Draft{Text: strings.Join(lines, ""), Structured: json.RawMessage(`{"messages":` + fmt.Sprint(len(in.Span)) + `}`)}, nil
}

var testTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestEngine(t testing.TB, cfg Config, opts ...Option) *Engine {
	t.Helper()
	e, err := New(cfg, append([]Option{WithClock(func() time.Time { return testTime })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.brief = fakeBrief
	return e
}

// bigHistory is a coding-agent history of n tool steps of about 60 tokens each.
func bigHistory(n int) []briefd.Message {
	msgs := []briefd.Message{
		{ID: "sys", Role: briefd.RoleSystem, Content: briefd.Text("You are a coding agent.")},
		{ID: "task", Role: briefd.RoleUser, Content: briefd.Text("Fix the failing test in pkg/foo.")},
	}
	for i := range n {
		call := fmt.Sprintf("call%d", i)
		msgs = append(msgs,
			briefd.Message{ID: fmt.Sprintf("a%d", i), Role: briefd.RoleAssistant, Content: briefd.Text(fmt.Sprintf("Step %d: look at the next file.", i)),
				ToolCalls: []briefd.ToolCall{{ID: call, Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: fmt.Sprintf(`{"command":"cat pkg/foo/file%d.go"}`, i)}}}},
			briefd.Message{ID: fmt.Sprintf("t%d", i), Role: briefd.RoleTool, ToolCallID: call,
				Content: briefd.Text(strings.Repeat(fmt.Sprintf("line %d of the file\n", i), 5))},
		)
	}
	return msgs
}

func TestCompactTriggers(t *testing.T) {
	msgs := bigHistory(30) // about 4,000 tokens, 62 messages
	tests := []struct {
		name      string
		cfg       Config
		msgs      []briefd.Message
		force     bool
		compacted bool
		reason    string
	}{
		{name: "below trigger", cfg: Config{}, msgs: msgs, reason: "below trigger: "},
		{name: "token pressure", cfg: Config{ContextWindow: 2500}, msgs: msgs, compacted: true, reason: "token pressure: "},
		{name: "hard cap", cfg: Config{ContextWindow: 1_000_000, HardCapTokens: 2000, KeepCapTokens: 1000}, msgs: msgs, compacted: true, reason: "(hard cap 2000)"},
		{name: "too few messages", cfg: Config{ContextWindow: 2500, MinMessages: 100}, msgs: msgs, reason: "but only 62 messages (token pressure needs 100)"},
		{name: "forced", cfg: Config{ContextWindow: 2000, MinKeepMessages: 5}, msgs: msgs, force: true, compacted: true, reason: "forced at "},
		{name: "steps", cfg: Config{StepsTrigger: 25, ContextWindow: 2500, MinMessages: 100}, msgs: msgs, compacted: true, reason: "steps: 30 assistant steps since the last compaction (every 25)"},
		{name: "steps not reached", cfg: Config{StepsTrigger: 31, ContextWindow: 2500, MinMessages: 100}, msgs: msgs, reason: "below trigger"},
		{name: "chars", cfg: Config{CharThreshold: 1000, ContextWindow: 2500, MinMessages: 100}, msgs: msgs, compacted: true, reason: "size: "},
		{name: "forced keeps a bounded tail", cfg: Config{}, msgs: msgs[:12], force: true, compacted: true, reason: "forced: the kept tail is at most 0.25"},
		{name: "forced but nothing before the tail", cfg: Config{}, msgs: msgs[:3], force: true, reason: "nothing to compact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, tt.cfg)
			res, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: tt.msgs, Force: tt.force})
			if err != nil {
				t.Fatal(err)
			}
			if res.Compacted != tt.compacted || !strings.Contains(res.Reason, tt.reason) {
				t.Fatalf("compacted %v reason %q, want %v and %q", res.Compacted, res.Reason, tt.compacted, tt.reason)
			}
			if !tt.compacted {
				if res.Boundary != -1 || res.Briefing != nil || len(res.Messages) != len(tt.msgs) {
					t.Fatalf("not compacted, but boundary %d briefing %v messages %d", res.Boundary, res.Briefing, len(res.Messages))
				}
				return
			}
			checkResult(t, e, Request{Messages: tt.msgs, Force: tt.force}, res)
		})
	}
}

func TestCompactBriefing(t *testing.T) {
	msgs := bigHistory(30)
	e := newTestEngine(t, Config{ContextWindow: 2500})
	res, err := e.Compact(t.Context(), Request{ConversationID: "c1", Tenant: "acme", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	b := res.Briefing
	if !res.Compacted || b == nil {
		t.Fatalf("not compacted: %s", res.Reason)
	}
	// Budget 500 tokens, floor 10: the tail begins at an assistant call.
	if got := msgs[res.Boundary].ID; got != b.BoundaryID || !strings.HasPrefix(got, "a") {
		t.Fatalf("boundary %s, briefing boundary %s", got, b.BoundaryID)
	}
	span := msgs[2:res.Boundary]
	if b.ConversationID != "c1" || b.Tenant != "acme" || b.Tier != briefd.TierDeterministic || b.EngineVersion != EngineVersion ||
		!b.CreatedAt.Equal(testTime) || b.Depth != 0 || b.Position != int64(len(span)) {
		t.Fatalf("briefing fields: %+v", b)
	}
	if b.InputHash != SpanHash(span) || len(b.InputHash) != 64 {
		t.Fatalf("input hash %s", b.InputHash)
	}
	if !slices.Equal(b.CompactedIDs, ids(span)) {
		t.Fatalf("compacted ids %v", b.CompactedIDs)
	}
	if string(b.Structured) != fmt.Sprintf(`{"messages":%d}`, len(span)) {
		t.Fatalf("structured %s", b.Structured)
	}
	if b.TokensBefore != res.TokensBefore || b.TokensAfter >= b.TokensBefore {
		t.Fatalf("tokens %d -> %d", b.TokensBefore, b.TokensAfter)
	}
	if limit := max(e.cfg.briefingBudget(b.SpanTokens, 0), res.BudgetTokens); e.CountTokens(b.Text) > limit {
		t.Fatalf("briefing %d tokens, budget %d", e.CountTokens(b.Text), limit)
	}
	checkResult(t, e, Request{Messages: msgs}, res)
}

func TestCompactChained(t *testing.T) {
	e := newTestEngine(t, Config{ContextWindow: 2500})
	msgs := bigHistory(30)
	first, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: msgs})
	if err != nil || !first.Compacted {
		t.Fatalf("first: %v %v", err, first)
	}
	// The agent keeps working on the spliced history.
	grown := append(slices.Clone(first.Messages), bigHistory(60)[62:]...)
	for _, prev := range []*briefd.Briefing{first.Briefing, nil} {
		second, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: grown, Previous: prev})
		if err != nil || !second.Compacted {
			t.Fatalf("second: %v %+v", err, second)
		}
		b := second.Briefing
		if b.CompactedIDs[0] != "briefing:"+first.Briefing.BoundaryID {
			t.Fatalf("the earlier briefing is not folded: %v", b.CompactedIDs[:3])
		}
		// Without the stored briefing, the spliced message's metadata
		// still carries its position.
		raw := int64(len(b.CompactedIDs) - 1)
		want := first.Briefing.Position + raw
		if b.Position != want || b.Depth != 1 {
			t.Fatalf("previous %v: position %d depth %d, want %d and 1", prev != nil, b.Position, b.Depth, want)
		}
		checkResult(t, e, Request{Messages: grown}, second)
	}
	// With neither the stored briefing nor the position in metadata, the
	// earlier briefing counts as one message.
	stripped := slices.Clone(grown)
	for i := range stripped {
		if stripped[i].IsBriefing() {
			md := maps.Clone(stripped[i].Metadata)
			delete(md, briefd.MetaPosition)
			stripped[i].Metadata = md
		}
	}
	res0, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: stripped})
	if err != nil || !res0.Compacted || res0.Briefing.Position != int64(len(res0.Briefing.CompactedIDs)) {
		t.Fatalf("without metadata: %v %+v", err, res0.Briefing)
	}
	// A previous briefing for another boundary is ignored.
	other := *first.Briefing
	other.BoundaryID = "elsewhere"
	other.Position = 1000
	res, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: grown, Previous: &other})
	if err != nil || res.Briefing.Position >= 1000 {
		t.Fatalf("stale previous used: %v %+v", err, res.Briefing)
	}
}

func TestCompactInvalid(t *testing.T) {
	e := newTestEngine(t, Config{})
	msgs := bigHistory(3)
	msgs[3].ToolCallID = "nope"
	_, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: msgs, Force: true})
	var ve *briefd.ValidationError
	if !errors.Is(err, briefd.ErrInvalidHistory) || !errors.As(err, &ve) || ve.MessageID != "t0" {
		t.Fatalf("err = %v", err)
	}
	lim := newTestEngine(t, Config{Limits: briefd.Limits{MaxMessages: 5}})
	if _, err := lim.Compact(t.Context(), Request{Messages: bigHistory(3)}); !errors.Is(err, briefd.ErrInvalidHistory) {
		t.Fatalf("limits: err = %v", err)
	}
}

func TestCompactCancelled(t *testing.T) {
	e := newTestEngine(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Compact(ctx, Request{Messages: bigHistory(3), Force: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestCompactNoShrink(t *testing.T) {
	e := newTestEngine(t, Config{ContextWindow: 2000, MinKeepMessages: 5})
	e.brief = func(_ context.Context, in brief.Input) (*brief.Draft, error) {
		return &brief.Draft{Text: strings.Repeat("padding words ", 5000)}, nil
	}
	msgs := bigHistory(10)
	res, err := e.Compact(t.Context(), Request{Messages: msgs, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted || !strings.Contains(res.Reason, "would not shrink the history") || &res.Messages[0] != &msgs[0] {
		t.Fatalf("compacted %v: %s", res.Compacted, res.Reason)
	}
}

func TestCompactBriefError(t *testing.T) {
	e := newTestEngine(t, Config{ContextWindow: 2000, MinKeepMessages: 5})
	boom := errors.New("boom")
	e.brief = func(context.Context, brief.Input) (*brief.Draft, error) { return nil, boom }
	if _, err := e.Compact(t.Context(), Request{Messages: bigHistory(10), Force: true}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestCompactSummarizer(t *testing.T) {
	attempts := []Attempt{{Model: "m1", Prompt: "normal", Outcome: "error", Error: "timeout"}}
	tests := []struct {
		name         string
		sum          SummarizerFunc
		wantTier     briefd.Tier
		wantAttempts int
		wantReason   string
	}{
		{
			name: "accepted",
			sum: func(ctx context.Context, in SummaryInput) (*Summary, error) {
				if in.Draft == nil || len(in.Span) == 0 || in.BudgetTokens <= 0 || in.CountTokens == nil || in.ConversationID != "c1" {
					return nil, fmt.Errorf("bad input %+v", in)
				}
				return &Summary{Text: "model briefing", Tier: "llm:normal", Model: "m2", PromptVersion: "p1",
					Attempts: append(slices.Clone(attempts), Attempt{Model: "m2", Outcome: "accepted"})}, nil
			},
			wantTier: "llm:normal", wantAttempts: 2,
		},
		{
			name: "failed with attempts",
			sum: func(context.Context, SummaryInput) (*Summary, error) {
				return nil, &AttemptsError{Attempts: attempts, Err: errors.New("all models failed")}
			},
			wantTier: briefd.TierDeterministic, wantAttempts: 1, wantReason: "deterministic briefing kept: summarizer: all models failed",
		},
		{
			name:     "empty",
			sum:      func(context.Context, SummaryInput) (*Summary, error) { return &Summary{Text: " "}, nil },
			wantTier: briefd.TierDeterministic, wantReason: "empty briefing",
		},
		{
			name:     "panic",
			sum:      func(context.Context, SummaryInput) (*Summary, error) { panic("bad summarizer") },
			wantTier: briefd.TierDeterministic, wantReason: "summarizer panicked",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, Config{ContextWindow: 2000, MinKeepMessages: 5}, WithSummarizer(tt.sum))
			res, err := e.Compact(t.Context(), Request{ConversationID: "c1", Messages: bigHistory(10), Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Compacted || res.Briefing.Tier != tt.wantTier || len(res.Attempts) != tt.wantAttempts || !strings.Contains(res.Reason, tt.wantReason) {
				t.Fatalf("compacted %v tier %s attempts %d reason %q", res.Compacted, res.Briefing.Tier, len(res.Attempts), res.Reason)
			}
			if tt.wantTier != briefd.TierDeterministic && (res.Briefing.Text != "model briefing" || res.Briefing.Model != "m2" || res.Briefing.PromptVersion != "p1") {
				t.Fatalf("summary not used: %+v", res.Briefing)
			}
			checkResult(t, e, Request{Messages: bigHistory(10)}, res)
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		e := newTestEngine(t, Config{ContextWindow: 2000, MinKeepMessages: 5}, WithSummarizer(SummarizerFunc(func(ctx context.Context, _ SummaryInput) (*Summary, error) {
			cancel()
			return nil, ctx.Err()
		})))
		if _, err := e.Compact(ctx, Request{Messages: bigHistory(10), Force: true}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNewConfig(t *testing.T) {
	if _, err := New(Config{ContextWindow: -5}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	c, err := NewTokenCounter("", EncodingCL100K, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Model: "gpt-4o"}, WithTokenCounter(c)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("mismatched counter: err = %v", err)
	}
	e, err := New(Config{Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Config(); got.Encoding != EncodingO200K || got.ContextWindow != DefaultContextWindow {
		t.Fatalf("config %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
		msg   string
	}{
		{name: "defaults"},
		{name: "kept budget not below trigger", cfg: Config{KeepFraction: 0.7, KeepCapTokens: 100_000}, field: "KeepFraction",
			msg: "kept budget 89600 tokens is not below the trigger 83200 tokens: nothing would ever compact"},
		{name: "kept cap over hard cap", cfg: Config{ContextWindow: 1_000_000, HardCapTokens: 30_000}, field: "KeepFraction", msg: "kept budget 40000"},
		{name: "trigger fraction", cfg: Config{TriggerFraction: 1.5}, field: "TriggerFraction"},
		{name: "keep fraction one", cfg: Config{KeepFraction: 1}, field: "KeepFraction"},
		{name: "negative window", cfg: Config{ContextWindow: -1}, field: "ContextWindow"},
		{name: "encoding", cfg: Config{Encoding: "gpt2"}, field: "Encoding"},
		{name: "briefing clamp", cfg: Config{MinBriefingTokens: 9000}, field: "MinBriefingTokens"},
		{name: "steps", cfg: Config{StepsTrigger: -2}, field: "StepsTrigger"},
		{name: "off values", cfg: Config{StepsTrigger: -1, CharThreshold: -1, MinMessages: -1, PerMessageOverhead: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want field %s with %q", err, tt.field, tt.msg)
			}
		})
	}
}

// TestCompactProperties compacts random histories under random configs
// and checks the invariants of every result.
func TestCompactProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	counter, err := NewTokenCounter("", EncodingCL100K, 0)
	if err != nil {
		t.Fatal(err)
	}
	compacted := 0
	const runs = 300
	for run := range runs {
		cfg := Config{
			ContextWindow:   200 + r.IntN(3000),
			MinKeepMessages: r.IntN(14),
			MinMessages:     -1,
		}
		e := newTestEngine(t, cfg, WithTokenCounter(counter))
		msgs := genHistory(r, r.IntN(60))
		orig := cloneMessages(msgs)
		req := Request{ConversationID: fmt.Sprint("run", run), Messages: msgs, Force: r.IntN(4) > 0}
		res, err := e.Compact(t.Context(), req)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if !reflect.DeepEqual(msgs, orig) {
			t.Fatalf("run %d: Compact modified its input", run)
		}
		if !res.Compacted {
			if res.Reason == "" || res.Boundary != -1 {
				t.Fatalf("run %d: not compacted without a reason", run)
			}
			continue
		}
		compacted++
		checkResult(t, e, req, res)
	}
	if compacted < runs/4 {
		t.Fatalf("only %d of %d runs compacted: the generator is too tame", compacted, runs)
	}
}

// checkResult checks the invariants of a compacted result of req.
func checkResult(t testing.TB, e *Engine, req Request, res *Result) {
	t.Helper()
	msgs, b, cut := req.Messages, res.Briefing, res.Boundary
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s (boundary %d of %d, reason %q)", fmt.Sprintf(format, args...), cut, len(msgs), res.Reason)
	}
	if !res.Compacted || b == nil || cut <= 0 || cut >= len(msgs) || msgs[cut].ID != b.BoundaryID {
		fail("bad result: compacted %v briefing %v", res.Compacted, b)
	}
	if msgs[cut].Role == briefd.RoleTool {
		fail("the kept tail starts with a tool result")
	}
	pinned := defaultPinned(msgs)
	var span, head []string
	for i := range cut {
		if pinned[i] {
			head = append(head, msgs[i].ID)
		} else {
			span = append(span, msgs[i].ID)
		}
	}
	if !slices.Equal(b.CompactedIDs, span) {
		fail("compacted ids %v, want the non-pinned messages before the boundary %v", b.CompactedIDs, span)
	}
	// The spliced history: pinned head, the briefing, the tail verbatim.
	want := append(head, "briefing:"+b.BoundaryID)
	for i := cut; i < len(msgs); i++ {
		want = append(want, msgs[i].ID)
	}
	if got := ids(res.Messages); !slices.Equal(got, want) {
		fail("spliced ids %v, want %v", got, want)
	}
	if !reflect.DeepEqual(res.Messages[len(head)+1:], msgs[cut:]) {
		fail("the tail is not verbatim")
	}
	if err := briefd.Validate(res.Messages, briefd.Limits{}); err != nil {
		fail("spliced history invalid: %v", err)
	}
	after := 0
	for i := range res.Messages {
		after += e.counter.CountMessage(&res.Messages[i])
	}
	if after != b.TokensAfter || b.TokensAfter >= b.TokensBefore {
		fail("tokens after %d (recounted %d), before %d", b.TokensAfter, after, b.TokensBefore)
	}
	bm := briefd.BriefingMessage(b)
	if got := e.counter.CountMessage(&bm); got != b.BriefingTokens {
		fail("briefing tokens %d, recounted %d", b.BriefingTokens, got)
	}
	// The budget grows past the configured one only to carry user messages.
	budget := e.cfg.briefingBudget(b.SpanTokens, 0)
	if res.BudgetTokens > budget && !slices.ContainsFunc(msgs[:cut], func(m briefd.Message) bool { return m.Role == briefd.RoleUser }) {
		fail("budget raised to %d (configured %d) with no user message to carry", res.BudgetTokens, budget)
	}
	if limit := max(budget, res.BudgetTokens); b.Tier == briefd.TierDeterministic && e.CountTokens(b.Text) > limit {
		fail("briefing of %d tokens over its budget %d", e.CountTokens(b.Text), limit)
	}
	// The newest user message is kept, unless pinned or noted.
	if u := newestUserMessage(msgs); u >= 0 && u < cut && !pinned[u] && !strings.Contains(res.Reason, "newest user message "+msgs[u].ID) {
		fail("newest user message %s compacted without a note", msgs[u].ID)
	}
	// The tail is no longer than the rules need.
	counts := make([]int, len(msgs))
	for i := range msgs {
		counts[i] = e.counter.CountMessage(&msgs[i])
	}
	cfg := e.cfg
	tailTokens := 0
	for _, n := range counts[cut:] {
		tailTokens += n
	}
	kept := len(msgs) - cut
	budget, floor, _ := cfg.keepLimits(counts, defaultPinned(msgs), req.Force)
	// Fewer than the floor only from a message over the budget by itself.
	if kept < floor && !slices.ContainsFunc(counts[cut:], func(c int) bool { return c > budget }) {
		fail("tail of %d messages, floor %d, none over the budget alone", kept, floor)
	}
	if tailTokens-counts[cut] > budget && kept > floor {
		justified := msgs[cut].Role == briefd.RoleUser || (cut+1 < len(msgs) && msgs[cut+1].Role == briefd.RoleTool)
		if !justified {
			fail("tail of %d tokens over the budget %d with no rule requiring it", tailTokens, budget)
		}
	}
}

func cloneMessages(msgs []briefd.Message) []briefd.Message {
	data, _ := json.Marshal(msgs)
	var out []briefd.Message
	_ = json.Unmarshal(data, &out)
	if len(out) == 0 {
		return msgs[:0:0]
	}
	return out
}

// parseSpec builds a valid history and its token counts from a compact
// spec: space-separated items "kind[:tokens]" where kind is
//
//	s  system            u  user          U  pinned user
//	a  assistant         A  pinned assistant
//	cN assistant with N tool calls, answered by the next N "t" items
//	t  tool result       b  spliced briefing message
//
// Message ids are m00, m01, ...; tokens default to 10.
func parseSpec(t testing.TB, spec string) ([]briefd.Message, []int) {
	t.Helper()
	var msgs []briefd.Message
	var counts []int
	var pending []string
	calls := 0
	for i, item := range strings.Fields(spec) {
		kind, tok, _ := strings.Cut(item, ":")
		n := 10
		if tok != "" {
			var err error
			if n, err = strconv.Atoi(tok); err != nil {
				t.Fatalf("spec item %q: %v", item, err)
			}
		}
		m := briefd.Message{ID: fmt.Sprintf("m%02d", i), Content: briefd.Text(item)}
		switch kind[0] {
		case 's':
			m.Role = briefd.RoleSystem
		case 'u', 'U':
			m.Role, m.Pinned = briefd.RoleUser, kind == "U"
		case 'a', 'A':
			m.Role, m.Pinned = briefd.RoleAssistant, kind == "A"
		case 'c':
			m.Role = briefd.RoleAssistant
			k, err := strconv.Atoi(kind[1:])
			if err != nil {
				t.Fatalf("spec item %q: %v", item, err)
			}
			for range k {
				calls++
				id := fmt.Sprintf("call%d", calls)
				m.ToolCalls = append(m.ToolCalls, briefd.ToolCall{ID: id, Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}})
				pending = append(pending, id)
			}
		case 't':
			m.Role, m.ToolCallID = briefd.RoleTool, pending[0]
			pending = pending[1:]
		case 'b':
			m = briefd.BriefingMessage(&briefd.Briefing{BoundaryID: fmt.Sprintf("m%02d", i+1), Text: "earlier briefing"})
		default:
			t.Fatalf("spec item %q: unknown kind", item)
		}
		msgs = append(msgs, m)
		counts = append(counts, n)
	}
	if err := briefd.Validate(msgs, briefd.Limits{}); err != nil {
		t.Fatalf("spec %q: %v", spec, err)
	}
	return msgs, counts
}

var words = []string{"the", "file", "src/main.go", "error:", "exit", "1", "Traceback", "def", "func", "return", "42", "v1.2.3",
	"https://example.com/x", "TODO", "passed", "failed", "\n", "\n\n", "  ", "{", "}", "é", "日本", "<tag>", "&amp;"}

func genText(r *rand.Rand, maxWords int) string {
	n := r.IntN(maxWords + 1)
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[r.IntN(len(words))])
	}
	return sb.String()
}

// genHistory returns a random valid history of about steps steps: an
// optional system message and task, maybe an earlier briefing, then user
// turns, plain or pinned assistant messages and tool-call groups, maybe
// ending in an unanswered call.
func genHistory(r *rand.Rand, steps int) []briefd.Message {
	var msgs []briefd.Message
	id := 0
	add := func(m briefd.Message) {
		m.ID = fmt.Sprintf("g%03d", id)
		id++
		msgs = append(msgs, m)
	}
	calls := 0
	toolGroup := func(answered bool) {
		k := 1 + r.IntN(3)
		m := briefd.Message{Role: briefd.RoleAssistant, Content: briefd.Text(genText(r, 20))}
		for range k {
			calls++
			m.ToolCalls = append(m.ToolCalls, briefd.ToolCall{ID: fmt.Sprintf("c%d", calls), Type: "function",
				Function: briefd.FunctionCall{Name: "bash", Arguments: fmt.Sprintf(`{"command":%q}`, genText(r, 10))}})
		}
		add(m)
		if !answered {
			return
		}
		for _, tc := range m.ToolCalls {
			add(briefd.Message{Role: briefd.RoleTool, ToolCallID: tc.ID, Content: briefd.Text(genText(r, 40))})
		}
	}
	if r.IntN(10) < 8 {
		add(briefd.Message{Role: briefd.RoleSystem, Content: briefd.Text(genText(r, 40))})
	}
	if r.IntN(10) < 9 {
		add(briefd.Message{Role: briefd.RoleUser, Content: briefd.Text(genText(r, 60))})
	}
	if r.IntN(5) == 0 {
		b := briefd.BriefingMessage(&briefd.Briefing{BoundaryID: fmt.Sprintf("g%03d", id+1), Text: genText(r, 80)})
		b.ID = fmt.Sprintf("briefing:g%03d", id+1)
		msgs = append(msgs, b)
	}
	for range steps {
		switch x := r.IntN(100); {
		case x < 15:
			add(briefd.Message{Role: briefd.RoleUser, Content: briefd.Text(genText(r, 40)), Pinned: r.IntN(10) == 0})
		case x < 40:
			add(briefd.Message{Role: briefd.RoleAssistant, Content: briefd.Text(genText(r, 60)), Pinned: r.IntN(10) == 0})
		case x < 43:
			add(briefd.Message{Role: briefd.RoleSystem, Content: briefd.Text(genText(r, 10))})
		default:
			toolGroup(true)
		}
	}
	if r.IntN(5) == 0 {
		toolGroup(false)
	}
	return msgs
}
