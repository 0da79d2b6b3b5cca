// Package brief writes briefd's deterministic briefing: the hand-off that
// replaces the compacted part of a conversation, written for an agent that
// will never see those messages again.
//
// # What a briefing carries
//
// In this order: what it covers; the task (the pinned first user message,
// kept above it) and any focus asked for; every user message verbatim; the
// state (what changed, or that nothing did; the last check after the last
// change and what it showed; what is still failing); the files changed,
// each with its net change (reverts cancel earlier edits, a no-op edit is
// called one, a small file written in the span is carried whole); the
// records read or changed, one line each with their fields; the steps with
// their results (a test run's counts and failures, an error's message and
// where it was raised, what a search found or that it found nothing, the
// lines of a file the agent then referred to, a short output whole, the
// agent's own reading of it); the errors and what resolved them; the
// agent's decisions; the next step (one nobody has done yet); an index of
// identifiers the text does not already carry; and what was left out for
// size, by message id. Every fact cites its message ([m0012]).
//
// # Budget
//
// The user's messages, the state and the next step are always carried
// (the budget grows for them if it must, and Draft.BudgetTokens says so).
// Everything else is an item with three texts (full, short, minimal) and a
// priority: changes, failures and records rank above views and listings,
// newer above older, and a focus raises what it names. Every item first
// gets its least detail, by priority, then richer detail while room
// remains; the identifier index takes at most about a tenth of the budget.
// The wrapped text is counted exactly and never exceeds the budget.
//
// # Chained compaction
//
// A span that begins with an earlier briefing folds it in (see fold.go):
// the structured record when the store has it, else the text parsed back.
package brief

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
)

// Input is what a briefing is written from.
type Input struct {
	// Head is the pinned messages before the boundary (the system prompt,
	// the task): context the briefing reads, for instance the record
	// fields a policy names, but never repeats.
	Head []briefd.Message
	// Span is the messages to replace, in order, pinned messages excluded.
	// It may begin with an earlier briefing message.
	Span []briefd.Message
	// Previous is the earlier briefing the span begins with, when the
	// store still has it: its structured record is folded in.
	Previous *briefd.Briefing
	// BudgetTokens is the most tokens the wrapped text may use
	// (briefd.WrapBriefing).
	BudgetTokens int
	// CountTokens counts tokens exactly.
	CountTokens func(string) int
	// Cache keeps per-step reading between calls; nil reads afresh.
	Cache *Cache
	// Warm, when set, keeps the model of the span between calls of one
	// conversation (see Warm): a span that extends the one read last is
	// read from where that one ended. The caller guarantees that the
	// span's first Warm.Len() messages are those read then (compact's
	// Memo drops the Warm when the history changes before its end); Write
	// checks the head, the previous briefing and the ids at the seam, and
	// reads the span afresh when they differ. Write leaves the span's
	// model in it, or empties it on an error.
	Warm *Warm
	// UserCapTokens bounds each user message carried verbatim when the
	// budget is short; over it the oldest are cut first, with a marker.
	// Zero means DefaultUserCapTokens.
	UserCapTokens int
	// CountSplits reports that CountTokens counts a text cut after a
	// newline followed by an ASCII letter as the sum of its parts, as
	// compact's TokenCounter does (tiktoken's pre-tokenizer never joins
	// such a newline to what follows): the fit then counts a briefing by
	// its sections, and re-counts only those that changed (see pieces.go).
	// A Warm keeps the counts between calls: its Writes must use the same
	// CountTokens.
	CountSplits bool
	// Focus is free text naming what matters most for this compaction
	// ("keep everything about the migration"): items that mention its
	// words rank higher.
	Focus string
}

// EvidenceFloorTokens is the least room the briefing keeps for what is not
// mandatory (records, files, steps, errors) when the user's messages, the
// state and the next step crowd its budget: the budget grows for it.
const EvidenceFloorTokens = 320

// DefaultUserCapTokens bounds one user message carried verbatim when the
// budget is short.
const DefaultUserCapTokens = 1200

// Draft is a written briefing.
type Draft struct {
	// Text is what the agent reads, before escaping and wrapping.
	Text string
	// Structured is the Record as JSON.
	Structured json.RawMessage
	// Depth is 0 for a span of raw messages, one more than a folded
	// briefing's depth otherwise.
	Depth int
	// BudgetTokens is the budget the text was fitted to: the input's, or
	// more when the user's messages, the state and the next step need
	// more. briefd.WrapBriefing(Text) counts at most BudgetTokens tokens.
	BudgetTokens int
	// Coverage says what the briefing carries of its span.
	Coverage Coverage
}

// Coverage is a briefing's report on itself, so that an operator sees the
// quality of each compaction and not only an offline evaluation.
type Coverage struct {
	// UserMessages counts the span's user messages; UserVerbatim those
	// carried whole.
	UserMessages int `json:"user_messages"`
	UserVerbatim int `json:"user_verbatim"`
	// SpanIdentifiers counts the identifiers of the span (bare numbers
	// left out); IdentifiersKept those the text carries.
	SpanIdentifiers int `json:"span_identifiers"`
	IdentifiersKept int `json:"identifiers_kept"`
	// Files and Records count the objects with a line of their own.
	Files   int `json:"files"`
	Records int `json:"records"`
	Errors  int `json:"errors"`
	// Steps counts the tool calls of the span; StepsShown those with a
	// line (alone or grouped), StepsLeftOut those left out for size.
	Steps        int `json:"steps"`
	StepsShown   int `json:"steps_shown"`
	StepsLeftOut int `json:"steps_left_out"`
	// LeftOutIDs names the messages of the steps left out (at most 64).
	LeftOutIDs []string `json:"left_out_ids,omitempty"`
}

// RecordFormat names the structured record's format.
const RecordFormat = "briefd.brief/2"

// Record is a briefing's structured form: its entries by section, each
// with the messages it cites. It holds what the text holds (a line that
// points at the state's last check holds that check's result, at most 160
// bytes more), so it is bounded by the same budget.
type Record struct {
	Format   string          `json:"format"`
	Covers   []string        `json:"covers"`
	Depth    int             `json:"depth"`
	Sections []RecordSection `json:"sections"`
	Index    []string        `json:"index,omitempty"`
	Coverage Coverage        `json:"coverage"`
}

// RecordSection is one section of a Record.
type RecordSection struct {
	Name    string  `json:"name"`
	Entries []Entry `json:"entries"`
}

// Entry is one line of a briefing.
type Entry struct {
	// Key is the object the entry is about (a path, a record id).
	Key  string   `json:"key,omitempty"`
	Text string   `json:"text"`
	IDs  []string `json:"ids,omitempty"`
}

var sectionKeys = [numSections]string{"header", "task", "user", "state", "files", "records", "steps", "errors", "notes",
	"next", "harness", "index", "left_out"}

var sectionByKey = func() map[string]section {
	m := map[string]section{}
	for s, k := range sectionKeys {
		m[k] = section(s)
	}
	return m
}()

// Write writes the briefing of in.Span. The wrapped text never exceeds
// Draft.BudgetTokens; every identifier it quotes occurs in the span or the
// earlier briefing; the same input gives the same bytes, with or without a
// warm cache. It returns an error for a missing counter or budget, or when
// ctx ends.
func Write(ctx context.Context, in Input) (*Draft, error) {
	if in.CountTokens == nil {
		return nil, errors.New("brief: no token counter")
	}
	if in.BudgetTokens <= 0 {
		return nil, fmt.Errorf("brief: budget %d tokens", in.BudgetTokens)
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	userCap := in.UserCapTokens
	if userCap <= 0 {
		userCap = DefaultUserCapTokens
	}
	var m *model
	var err error
	if in.Warm != nil {
		m, err = in.Warm.readSpan(ctx, in.Head, in.Span, in.Previous, in.Cache)
		if err == nil {
			m.seal()
			defer m.unseal()
		}
	} else {
		m, err = buildModel(ctx, in.Head, in.Span, in.Previous, in.Cache)
	}
	if err != nil {
		return nil, err
	}
	depth := 0
	if m.prior != nil {
		depth = m.prior.depth + 1
	}
	l := &layout{m: m, budget: in.BudgetTokens, count: in.CountTokens, indexShare: indexShare(m), focus: strings.Fields(in.Focus),
		memo: in.Warm.pieceMemo(), countSplits: in.CountSplits}
	l.head = header(m, depth)
	if m.first != "" {
		l.foot = briefd.ExpandFooter(m.first, m.last)
	}
	l.build(userCap)
	for _, it := range l.items {
		it.cache = in.Cache
	}
	_, l.indexNeed = m.namedIdents()
	if m.prior != nil {
		// What the earlier briefing carried may need the index once its
		// lines give way.
		l.indexNeed = math.Max(l.indexNeed, l.indexShare*float64(l.budget))
	}
	// The mandatory items decide the least budget: they are carried whole,
	// and the rest keeps at least EvidenceFloorTokens.
	floor := l.mandatoryTokens() + margin + min(in.BudgetTokens/2, EvidenceFloorTokens)
	if floor > l.budget {
		l.budget = floor
	}
	text, n := l.fit()
	if n > l.budget {
		l.budget = n
	}
	if body, ok := strings.CutPrefix(text, l.head); ok && (strings.Contains(body, "⏎") || strings.Contains(body, "⇥")) {
		// Said only in room the fit left: it chooses no line. The legend
		// starts and ends where the tokenizer splits (a space, a newline),
		// so its count adds to the text's.
		if k := l.count(glyphLegend); n+k+1 <= l.budget {
			text = l.head + glyphLegend + text[len(l.head):]
			n += k
		}
	}
	d := &Draft{Text: text, Depth: depth, BudgetTokens: l.budget}
	d.Coverage = l.coverage(text)
	rec := l.record(depth, d.Coverage)
	m.turnEntries()
	js, err := rec.marshal(m.entryJSON)
	if err != nil {
		return nil, fmt.Errorf("brief: marshal record: %w", err)
	}
	d.Structured = js
	return d, nil
}

// buildModel reads the span, checking ctx between messages: one huge
// tool output can take a while to read.
func buildModel(ctx context.Context, head, span []briefd.Message, prev *briefd.Briefing, cache *Cache) (*model, error) {
	if len(span) > 256 {
		if err := prewarm(ctx, head, span, 0, cache); err != nil {
			return nil, err
		}
	}
	m := build(head, span, prev, cache)
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	return m, nil
}

// prewarm reads the calls of span[from:] into the cache, checking ctx:
// reading the span then hits it.
func prewarm(ctx context.Context, head, span []briefd.Message, from int, cache *Cache) error {
	keepWarnings := taskMentionsWarnings(head)
	for i := from; i < len(span); i++ {
		if i%32 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if span[i].Role == briefd.RoleAssistant && cache != nil {
			for k := range span[i].ToolCalls {
				cache.step(&span[i].ToolCalls[k], resultOf(span, i, span[i].ToolCalls[k].ID), keepWarnings)
			}
		}
	}
	return nil
}

func resultOf(span []briefd.Message, from int, callID string) *briefd.Message {
	for j := from + 1; j < len(span) && j <= from+64; j++ {
		if span[j].Role == briefd.RoleTool && span[j].ToolCallID == callID {
			return &span[j]
		}
	}
	return nil
}

// glyphLegend follows the header when lines quote code with line breaks
// or tabs, which the briefing writes as ⏎ and ⇥, and the budget has room.
const glyphLegend = " In quoted code, ⏎ is a line break and ⇥ a tab."

// header is the first line: what the briefing covers.
func header(m *model, depth int) string {
	if m.first == "" {
		return "Briefing: nothing was compacted."
	}
	h := "Covers " + m.first + "–" + m.last + " ("
	if depth > 0 {
		h += "an earlier briefing folded in, then "
	}
	h += plural(m.messages, "message") + ", " + plural(len(m.steps), "tool call")
	return h + "); [mNNNN] = source message."
}

// mandatoryTokens counts the text of the mandatory items alone.
func (l *layout) mandatoryTokens() int {
	for _, it := range l.items {
		it.level = -1
		if it.must {
			it.level = it.mandatoryLevel()
		}
	}
	n, _ := l.measure(nil)
	return n
}

// coverage reports what the text carries.
func (l *layout) coverage(text string) Coverage {
	m := l.m
	c := Coverage{UserMessages: len(m.users), Steps: len(m.steps)}
	c.UserVerbatim = carriedWhole(text, m.users, func(k int) bool { return k < len(l.users) && l.users[k].level == levelFull })
	named, _ := m.namedIdents()
	c.SpanIdentifiers = len(named)
	// The identifiers kept are those of the shown items (the index of the
	// last choice read them) and the index's, each counted once if the
	// span has it.
	// A shown item's identifiers are taken as their uses, kept with the
	// item (textUses: the same filter, looked up once).
	m.coverings++
	keptUse := func(u *identUse) {
		if u.counted != m.coverings {
			u.counted = m.coverings
			c.IdentifiersKept++
		}
	}
	kept := func(id string) {
		if u := m.ids[id]; u != nil && !ident.IsNumeric(id) {
			keptUse(u)
		}
	}
	if l.carried != nil {
		for _, id := range l.carried {
			kept(id)
		}
	} else {
		for _, it := range l.items {
			if it.level >= 0 {
				for _, u := range it.textUses(m) {
					keptUse(u)
				}
			}
		}
	}
	for _, id := range l.lastIndexNames {
		kept(id)
	}
	for _, it := range l.items {
		if it.level < 0 {
			for _, s := range it.steps {
				c.StepsLeftOut++
				if len(c.LeftOutIDs) < 64 {
					c.LeftOutIDs = append(c.LeftOutIDs, s.id())
				}
			}
			continue
		}
		c.StepsShown += len(it.steps)
		switch it.sec {
		case secFiles:
			if it.key != "" {
				c.Files++
			}
		case secRecords:
			if it.key != "" {
				c.Records++
			}
		case secErrors:
			c.Errors++
		}
	}
	return c
}

// carriedWhole counts the messages whose text occurs in text; known
// reports those known to (a line that quotes them whole is shown). The
// others are looked for in order: each after the last one found, then, if
// not there, before it.
func carriedWhole(text string, msgs []userMsg, known func(int) bool) int {
	n, from := 0, 0
	for k, u := range msgs {
		if known(k) {
			n++
		} else if i := strings.Index(text[from:], u.text); i >= 0 {
			n++
			from += i + len(u.text)
		} else if strings.Contains(text[:min(len(text), from+len(u.text)-1)], u.text) {
			n++
		}
	}
	return n
}

// record is the structured form of the chosen items.
func (l *layout) record(depth int, cov Coverage) *Record {
	r := &Record{Format: RecordFormat, Covers: []string{l.m.first, l.m.last}, Depth: depth, Coverage: cov}
	// The items in print order are by section: each section's shown items
	// are one run.
	var last section
	for _, it := range l.printOrder() {
		if it.sec < secTask || it.level < 0 {
			continue
		}
		if len(r.Sections) == 0 || it.sec != last {
			r.Sections = append(r.Sections, RecordSection{Name: sectionKeys[it.sec]})
			last = it.sec
		}
		rs := &r.Sections[len(r.Sections)-1]
		text := it.text()
		if (it.sec == secSteps || it.sec == secFiles || it.sec == secErrors) && pointsToState(text) {
			// The record stands alone: a consumer of it, or an engine
			// that folds it without knowing the pointer, gets the result.
			text = pointedTo(text, l.m.checkShown())
		}
		rs.Entries = append(rs.Entries, Entry{Key: it.key, Text: text, IDs: it.ids})
	}
	if len(l.lastIndexNames) > 0 {
		r.Index = slices.Clone(l.lastIndexNames)
	}
	if l.lastOmitted != "" {
		r.Sections = append(r.Sections, RecordSection{Name: sectionKeys[secOmitted], Entries: []Entry{{Text: l.lastOmitted}}})
	}
	return r
}

// indexShare is the most of the budget the identifier index may take:
// about a tenth, and more once earlier briefings are folded in, where the
// index is what keeps the names of old findings whose lines gave way.
func indexShare(m *model) float64 {
	if m.prior == nil {
		return 0.10
	}
	return 0.15
}
