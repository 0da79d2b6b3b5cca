package compact

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// genSpan builds a random span: user turns, assistant texts, and tool
// groups (an assistant message with 1-3 calls and their results) of random
// sizes, with identifiers, errors and exit codes in the text.
func genSpan(rng *rand.Rand) []briefd.Message {
	words := []string{"the", "test", "fails", "because", "value", "is", "wrong", "we", "edit", "again", "run", "it", "now",
		"src/app/models.py", "tests/test_models.py", "HAT174", "gift_card_1646646", "2024-05-19", "v1.4.2", "E501",
		"12288", "0.004s", "`build_instance`", "https://example.com/issue/42", "ok", "done", "&", "<tag>", "é", "\n"}
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	n := 1 + rng.IntN(60)
	var span []briefd.Message
	id := 0
	next := func() string { id++; return fmt.Sprintf("m%04d", id) }
	for len(span) < n {
		switch rng.IntN(4) {
		case 0:
			span = append(span, briefd.Message{ID: next(), Role: briefd.RoleUser, Content: briefd.Text(text(1 + rng.IntN(80)))})
		case 1:
			span = append(span, briefd.Message{ID: next(), Role: briefd.RoleAssistant, Content: briefd.Text(text(1 + rng.IntN(60)))})
		default:
			a := briefd.Message{ID: next(), Role: briefd.RoleAssistant, Content: briefd.Text(text(rng.IntN(30)))}
			calls := 1 + rng.IntN(3)
			for c := range calls {
				name, args := "bash", fmt.Sprintf(`{"command":"cat src/app/m%d.py && pytest -x"}`, rng.IntN(9))
				switch rng.IntN(3) {
				case 1:
					name, args = "str_replace_editor", `{"command":"str_replace","path":"/testbed/src/app/models.py","old_str":"a","new_str":"b"}`
				case 2:
					name, args = "get_user_details", `{"user_id":"yara_garcia_1905"}`
				}
				a.ToolCalls = append(a.ToolCalls, briefd.ToolCall{ID: fmt.Sprintf("call_%d_%d", id, c), Type: "function",
					Function: briefd.FunctionCall{Name: name, Arguments: args}})
			}
			span = append(span, a)
			for _, tc := range a.ToolCalls {
				out := text(rng.IntN(400))
				switch rng.IntN(3) {
				case 0:
					out = fmt.Sprintf("<returncode>%d</returncode>\n<output>\n%s\n</output>", rng.IntN(3), out)
				case 1:
					out = "Traceback (most recent call last):\n  File \"x.py\"\nValueError: " + out
				}
				span = append(span, briefd.Message{ID: next(), Role: briefd.RoleTool, ToolCallID: tc.ID, Content: briefd.Text(out)})
			}
		}
	}
	return span
}

// sourceText is everything a briefing may quote: ids, contents, calls.
func sourceText(span []briefd.Message) string {
	var b strings.Builder
	for i := range span {
		m := &span[i]
		b.WriteString(m.ID + "\n" + m.Content.String() + "\n")
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Name + " " + tc.Function.Arguments + "\n")
		}
	}
	return b.String()
}

// checkDraft asserts the briefing contract on one span: the wrapped text
// within the budget (re-counted in full), the budget grown only for the
// mandatory parts, every user message carried, nothing fabricated, and the
// same bytes from a fresh cache.
func checkDraft(t *testing.T, span []briefd.Message, budget int, count func(string) int, cache *ExtractCache) *Draft {
	t.Helper()
	d, err := Brief(BriefInput{Span: span, BudgetTokens: budget, CountTokens: count, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(briefd.WrapBriefing(d.Text)); n > d.BudgetTokens {
		t.Fatalf("wrapped briefing %d tokens > budget %d (asked %d)", n, d.BudgetTokens, budget)
	}
	if d.BudgetTokens < budget {
		t.Fatalf("budget shrank: %d < %d", d.BudgetTokens, budget)
	}
	if d.BudgetTokens > budget {
		// Grown: only to carry the header, the user messages and the state,
		// plus min(budget/2, EvidenceFloorTokens) of evidence. (The slack
		// covers estimates and a state line shortened after the fact.)
		parts := strings.Split(d.Text, "\n\n## ")
		keep := []string{parts[0]}
		for _, p := range parts[1:] {
			if strings.HasPrefix(p, "User messages") || strings.HasPrefix(p, "Current state") {
				keep = append(keep, p)
			}
		}
		need := count(briefd.WrapBriefing(strings.Join(keep, "\n\n## ")))
		if limit := need + min(budget/2, EvidenceFloorTokens) + 80; d.BudgetTokens > limit {
			t.Fatalf("budget grown from %d to %d, more than the mandatory parts' %d tokens and the evidence floor", budget, d.BudgetTokens, need)
		}
	}
	for i := range span {
		m := &span[i]
		if m.Role != briefd.RoleUser || m.IsBriefing() {
			continue
		}
		if !strings.Contains(d.Text, m.Content.String()) && !strings.Contains(d.Text, "shortened for size") && !strings.Contains(d.Text, "omitted for size") {
			t.Fatalf("user message %s is not carried", m.ID)
		}
	}
	src := sourceText(span)
	for _, id := range Identifiers(d.Text) {
		if !strings.Contains(src, id) {
			t.Fatalf("briefing quotes %q, which is not in the span", id)
		}
	}
	again, err := Brief(BriefInput{Span: span, BudgetTokens: budget, CountTokens: count})
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != d.Text || string(again.Structured) != string(d.Structured) {
		t.Fatal("not deterministic: a fresh cache gives different bytes")
	}
	return d
}

func TestBriefBudgetProperty(t *testing.T) {
	count := exactCount(t)
	rng := rand.New(rand.NewPCG(1, 2))
	cache := NewExtractCache(0)
	grown := 0
	for i := range 120 {
		span := genSpan(rng)
		budget := 1 + rng.IntN(3000)
		if i%4 == 0 {
			budget = 400 + rng.IntN(200)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if d := checkDraft(t, span, budget, count, cache); d.BudgetTokens > budget {
				grown++
			}
		})
	}
	t.Logf("budget grown for the mandatory parts in %d of 120 spans", grown)
}

func TestBriefUserCap(t *testing.T) {
	count := exactCount(t)
	long := strings.Repeat("please keep the file src/app/models.py as it is ", 90)
	span := []briefd.Message{
		{ID: "u1", Role: briefd.RoleUser, Content: briefd.Text("first: " + long)},
		{ID: "a1", Role: briefd.RoleAssistant, Content: briefd.Text("ok")},
		{ID: "u2", Role: briefd.RoleUser, Content: briefd.Text("second: " + long)},
	}
	d, err := Brief(BriefInput{Span: span, BudgetTokens: 512, CountTokens: count, UserCapTokens: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Text, "second: "+long) {
		t.Error("the newest user message is not verbatim")
	}
	if strings.Contains(d.Text, "first: "+long) || !strings.Contains(d.Text, "[u1] first: ") || !strings.Contains(d.Text, "shortened for size") {
		t.Error("the oldest user message is not shortened with a marker")
	}
	if n := count(briefd.WrapBriefing(d.Text)); n > d.BudgetTokens || d.BudgetTokens <= 512 {
		t.Errorf("%d tokens, budget %d", n, d.BudgetTokens)
	}
}

func TestBriefErrors(t *testing.T) {
	if _, err := Brief(BriefInput{BudgetTokens: 10}); err == nil {
		t.Error("no counter: want an error")
	}
	if _, err := Brief(BriefInput{CountTokens: func(string) int { return 0 }}); err == nil {
		t.Error("no budget: want an error")
	}
}

// Every shared history, cut at 56% (70% frozen, 80% of it compacted): the
// briefing contract holds, and a warm cache gives the same bytes.
func TestBriefSharedHistories(t *testing.T) {
	count := exactCount(t)
	cache := NewExtractCache(0)
	for _, f := range sharedFiles(t) {
		h := loadHistory(t, f)
		span := spanAt(h.Messages, 0.56)
		if len(span) == 0 {
			continue
		}
		t.Run(h.ID, func(t *testing.T) {
			budget := budgetFor(spanTokens(span, count))
			checkDraft(t, span, budget, count, cache)
		})
	}
}

func TestBriefChained(t *testing.T) {
	count := exactCount(t)
	rng := rand.New(rand.NewPCG(3, 4))
	span := genSpan(rng)
	first, err := Brief(BriefInput{Span: span, BudgetTokens: 800, CountTokens: count})
	if err != nil {
		t.Fatal(err)
	}
	prev := &briefd.Briefing{BoundaryID: "m9000", Text: first.Text, Structured: first.Structured}
	bm := briefd.BriefingMessage(prev)
	next := append([]briefd.Message{bm}, briefd.Message{ID: "m9000", Role: briefd.RoleUser, Content: briefd.Text("now also update the docs")})
	d, err := Brief(BriefInput{Span: next, Previous: prev, BudgetTokens: 800, CountTokens: count})
	if err != nil {
		t.Fatal(err)
	}
	if d.Depth != 1 {
		t.Errorf("depth %d, want 1", d.Depth)
	}
	for i := range span {
		if m := &span[i]; m.Role == briefd.RoleUser && !strings.Contains(d.Text, m.Content.String()) && !strings.Contains(d.Text, "["+m.ID+"]") {
			t.Errorf("earlier user message %s dropped by the chained briefing", m.ID)
		}
	}
	if !strings.Contains(d.Text, "now also update the docs") {
		t.Error("new user message missing")
	}
}

// The extraction cache is bounded by bytes as well as entries: large tool
// outputs cannot grow a worker's memory without limit.
func TestExtractCacheBoundedByBytes(t *testing.T) {
	c := NewExtractCache(1000)
	c.maxBytes = 1 << 20
	big := strings.Repeat("x", 200<<10)
	for i := range 50 {
		m := briefd.Message{ID: fmt.Sprint(i), Role: briefd.RoleTool, ToolCallID: "c", Content: briefd.Text(fmt.Sprint(i) + big)}
		c.get(&m)
	}
	if c.used > c.maxBytes || c.ll.Len() >= 50 {
		t.Fatalf("cache holds %d bytes in %d entries, budget %d", c.used, c.ll.Len(), c.maxBytes)
	}
	// Different messages never share a key, even when their fields
	// concatenate to the same bytes.
	a := briefd.Message{Role: briefd.RoleUser, Content: briefd.Content{Text: "ab"}}
	b := briefd.Message{Role: briefd.RoleUser, Content: briefd.Content{Parts: []briefd.ContentPart{{Type: "", Text: "ab"}}}}
	if c.messageKey(&a) == c.messageKey(&b) {
		t.Fatal("a string content and a part with the same text share a key")
	}
}
