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
	// BudgetTokens is the most tokens the briefing may use, counted on
	// what the agent reads: the text escaped and wrapped by
	// briefd.WrapBriefing. Every user message of the span is carried
	// whatever the budget: when the header, the user messages (shortened
	// over UserCapTokens) and the current state need more, the budget
	// grows to fit them, and Draft.BudgetTokens says so.
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
	// BudgetTokens is the budget the text was fitted to: the input's, or
	// more when the header, the user messages (at most UserCapTokens of
	// them) and the current state need more. briefd.WrapBriefing(Text)
	// counts at most BudgetTokens tokens.
	BudgetTokens int
}

// Brief builds the deterministic evidence briefing of a span: every user
// message verbatim, the evidence ledger (files, commands with exit status,
// errors and their resolution, identifiers, each with message ids), a
// timeline of one-line tool markers, and the current state and next step.
// The wrapped text (briefd.WrapBriefing) never exceeds Draft.BudgetTokens,
// which is in.BudgetTokens unless the user messages need more (see
// BriefInput.BudgetTokens); every identifier it quotes occurs in the span
// (or the earlier briefing). Same input, same bytes, with or without a
// warm cache.
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

	r := &renderer{cache: cache, count: in.CountTokens, cap: in.UserCapTokens}
	if r.cap <= 0 {
		r.cap = DefaultUserCapTokens
	}
	text, budget := r.render(l, header(in.Span), b.prevTxt, b.prevID, in.BudgetTokens)
	js, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("brief: marshal ledger: %w", err)
	}
	return &Draft{Text: text, Structured: js, Depth: depth, BudgetTokens: budget}, nil
}

// header is the first line: what the briefing covers.
func header(span []briefd.Message) string {
	if len(span) == 0 {
		return "Briefing on the earlier part of this conversation (nothing was compacted)."
	}
	return "Briefing replacing " + strconv.Itoa(len(span)) + " earlier messages (" + span[0].ID + "–" + span[len(span)-1].ID +
		"). Ids name the original messages; ✓ marks a step with evidence of success, nothing else is claimed done."
}

// taskLine states the goal from the span: the task itself is the pinned
// first user message, kept verbatim before the briefing; the span adds the
// approach the assistant first stated.
func taskLine(span []briefd.Message, cache *ExtractCache) string {
	s := "The first user message, kept before this briefing, states the task."
	for i := range span {
		m := &span[i]
		if m.Role == briefd.RoleAssistant && !m.IsBriefing() {
			if t := strings.TrimSpace(cache.get(m).text); t != "" {
				first := firstSentence(t, 220)
				if len(strings.Fields(first)) < 8 {
					return s // "I can help you with that." says nothing
				}
				return s + " Approach first stated (" + m.ID + "): \"" + first + "\""
			}
		}
	}
	return s
}

// render writes the briefing text of l within budget tokens (wrapped), or
// within what the mandatory parts need when that is more; it returns the
// text and the budget it fitted.
func (r *renderer) render(l *Ledger, head, prevText, prevID string, budget int) (string, int) {
	m := r.mandatoryParts(l, head)
	// A few tokens stay free for the chat message framing around the text.
	const margin = 6
	// Every user message is carried: when they crowd the budget, it grows
	// so that the evidence keeps min(half the budget, EvidenceFloorTokens).
	budget = max(budget, m.cost()+margin+min(budget/2, EvidenceFloorTokens))
	p := &pools{
		task:   l.Task,
		errs:   errorLines(l),
		files:  fileLines(l),
		tl:     timelineLines(l.Timeline),
		idents: rankIdents(l.Identifiers),
	}
	if prevText != "" {
		p.prev = strings.Split(prevText, "\n")
		p.prevH = "## Earlier briefing (" + prevID + "), folded in"
	}
	// Fill by estimates, count exactly, then correct: shrink by the excess
	// when over, grow into the slack once when well under (the estimates of
	// identifiers are conservative).
	room := budget - m.cost() - margin
	best, grew := "", false
	for range 8 {
		sel := r.fill(l, p, &m, room)
		text := r.compose(l, p, &m, sel)
		n := r.exact(text)
		switch {
		case n <= budget && (grew || budget-n < 24):
			return text, budget
		case n <= budget:
			best, grew = text, true
			room += budget - n - 4
		case best != "":
			return best, budget
		default:
			room -= n - budget + 4
		}
	}
	if best != "" {
		return best, budget
	}
	// Unreachable in practice: the mandatory parts only.
	text := r.compose(l, p, &m, selection{prevFrom: len(p.prev), tlFrom: len(p.tl)})
	if n := r.exact(text); n > budget {
		budget = n
	}
	return text, budget
}
