package compact

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/briefd/briefd"
)

// BriefInput is the input of the deterministic evidence briefing.
type BriefInput struct {
	// Span is the messages to compact, in order, pinned messages excluded.
	// It may begin with an earlier briefing message (see briefd.Message.IsBriefing).
	Span []briefd.Message
	// Previous is the earlier briefing the span's first message carries,
	// when the store still has it (its Structured ledger is merged).
	Previous *briefd.Briefing
	// BudgetTokens is the most tokens the rendered text may use.
	BudgetTokens int
	// CountTokens counts the tokens of a text.
	CountTokens func(string) int
	// Cache keeps per-message extraction and piece counts between calls,
	// so that a history that grew by one turn re-briefs fast. Nil means a
	// fresh cache for this call. A cache must be used with one CountTokens.
	Cache *ExtractCache
	// UserCapTokens bounds the user messages carried verbatim; over it the
	// oldest are shortened first, with a visible marker. Zero means
	// DefaultUserCapTokens.
	UserCapTokens int
}

// Draft is a deterministic briefing: the rendered text and its structure.
type Draft struct {
	// Text is the briefing the agent reads (plain text, light markdown),
	// at most BudgetTokens tokens.
	Text string
	// Structured is the JSON of the Ledger.
	Structured json.RawMessage
	// Depth is 0 for a span of raw messages, one more than the earlier
	// briefing's depth when the span begins with one.
	Depth int
}

// Brief builds the deterministic evidence briefing of a span: every user
// message verbatim, the evidence ledger (files, commands with exit status,
// errors and their resolution, identifiers, each with message ids), a
// timeline of one-line tool markers, and the current state and next step.
// The text never exceeds BudgetTokens; every identifier it quotes occurs
// in the span (or the earlier briefing). Same input, same bytes.
func Brief(in BriefInput) (*Draft, error) {
	if in.CountTokens == nil {
		return nil, errors.New("brief: no token counter")
	}
	if in.BudgetTokens <= 0 {
		return nil, fmt.Errorf("brief: budget %d tokens", in.BudgetTokens)
	}
	cache := in.Cache
	if cache == nil {
		cache = NewExtractCache(len(in.Span) + 1)
	}
	b := newLedgerBuilder()
	depth := 0
	if in.Previous != nil {
		depth = in.Previous.Depth + 1
		if prev, ok := decodeLedger(in.Previous.Structured); ok {
			b.merge(prev)
		}
	}
	pending := map[string]int{}
	for i := range in.Span {
		m := &in.Span[i]
		if m.IsBriefing() {
			if depth == 0 {
				depth = 1
			}
			if len(b.l.UserInstructions) > 0 || len(b.steps) > 0 {
				// Its ledger is merged already; only count its identifiers.
				text, _ := briefd.UnwrapBriefing(m.Content.String())
				for _, id := range Identifiers(text) {
					b.addIdent(id, m.ID, true)
				}
				continue
			}
			b.add(m, nil, pending)
			continue
		}
		b.add(m, cache.get(m), pending)
	}
	l := b.finish()
	l.Depth = depth
	if l.Task == "" {
		l.Task = taskLine(in.Span, cache)
	}

	// The agent reads the text escaped and wrapped (briefd.WrapBriefing):
	// keep room for the wrapper so the message it sees fits the budget too.
	budget, soft := in.BudgetTokens, in.BudgetTokens
	if wrap := cache.count(briefd.WrapBriefing(""), in.CountTokens) + 8 + soft/25; soft > 4*wrap {
		soft -= wrap
	}
	r := &renderer{cache: cache, count: in.CountTokens, budget: budget, soft: soft, cap: in.UserCapTokens}
	if r.cap <= 0 {
		r.cap = DefaultUserCapTokens
	}
	out := r.render(l, header(in.Span), b.prevTxt, b.prevID)
	text := out.text
	if out.estimate > budget {
		text = r.hardFit(text)
	}
	js, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("brief: marshal ledger: %w", err)
	}
	return &Draft{Text: text, Structured: js, Depth: depth}, nil
}

// header is the first line: what the briefing covers.
func header(span []briefd.Message) string {
	if len(span) == 0 {
		return "Briefing on the earlier part of this conversation (nothing was compacted)."
	}
	return "Briefing on the earlier part of this conversation: " + strconv.Itoa(len(span)) + " messages, " +
		span[0].ID + " to " + span[len(span)-1].ID + ", replaced by this text. Ids in brackets or before a line name the original messages. " +
		"✓ marks a step with evidence of success (exit 0 or explicit success); nothing else is claimed done."
}

// taskLine states the goal from the span: the task itself is the pinned
// first user message, kept verbatim before the briefing; the span adds the
// approach the assistant first stated.
func taskLine(span []briefd.Message, cache *ExtractCache) string {
	s := "The task is the first user message, kept verbatim before this briefing."
	for i := range span {
		m := &span[i]
		if m.Role == briefd.RoleAssistant && !m.IsBriefing() {
			if t := strings.TrimSpace(cache.get(m).text); t != "" {
				return s + " Approach first stated (" + m.ID + "): \"" + firstSentence(t, 220) + "\""
			}
		}
	}
	return s
}

// hardFit keeps the longest prefix of whole lines that fits the budget,
// with a marker: the last resort when even the mandatory parts and the
// shortened user messages are over the budget.
func (r *renderer) hardFit(text string) string {
	const marker = "[briefing cut here to fit its size budget]"
	lines := strings.Split(text, "\n")
	used := r.cost(marker)
	var keep []string
	for _, ln := range lines {
		c := r.cost(ln)
		if used+c > r.budget {
			break
		}
		used += c
		keep = append(keep, ln)
	}
	if used > r.budget {
		return ""
	}
	return strings.Join(append(keep, marker), "\n")
}
