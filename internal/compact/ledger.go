package compact

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/briefd/briefd"
)

// Ledger is the structured form of a deterministic briefing (Draft.Structured
// is its JSON): the evidence extracted from the span, every value verbatim
// from a message and each entry with the ids of the messages it came from.
// Chained compaction merges the ledger of the earlier briefing into the new
// one, so entries keep the ids of messages that no longer exist.
type Ledger struct {
	// Task is the goal as this part of the conversation states it; the task
	// itself is the pinned first user message, kept verbatim before the
	// briefing.
	Task string `json:"task"`
	// UserInstructions are the span's user messages, verbatim, oldest first
	// (identical texts once, with every id).
	UserInstructions []Instruction `json:"user_instructions"`
	// Timeline is one marker per step, oldest first.
	Timeline []TimelineEntry `json:"timeline"`
	// Files are the files read, created, edited, searched or run.
	Files []FileEntry `json:"files"`
	// Commands are the shell commands run, with their exit status.
	Commands []CommandEntry `json:"commands"`
	// URLs are the URLs seen, with the messages they occur in.
	URLs []IdentEntry `json:"urls"`
	// Errors are the errors reported, and whether a later step resolved them.
	Errors []ErrorEntry `json:"errors"`
	// Identifiers are the identifiers (ids, codes, versions, numbers,
	// paths) of the span, in order of first appearance.
	Identifiers []IdentEntry `json:"identifiers"`
	// CurrentState is the last step and its outcome.
	CurrentState string `json:"current_state"`
	// NextStep is what the last assistant message said it would do; it is
	// in progress unless the messages after the briefing confirm it.
	NextStep string `json:"next_step"`
	// Depth counts the earlier briefings folded in.
	Depth int `json:"depth"`
}

// Instruction is one user message, verbatim.
type Instruction struct {
	Text string   `json:"text"`
	IDs  []string `json:"ids"`
}

// TimelineEntry is one step as a one-line marker ("[read: path]").
type TimelineEntry struct {
	Marker string   `json:"marker"`
	Kind   string   `json:"kind"`
	IDs    []string `json:"ids"`
}

// FileEntry says what happened to one file.
type FileEntry struct {
	Path    string   `json:"path"`
	Actions []string `json:"actions"`
	IDs     []string `json:"ids"`
}

// CommandEntry is one shell command; Exit is nil when the tool did not
// report a status.
type CommandEntry struct {
	Command string   `json:"command"`
	Exit    *int     `json:"exit"`
	IDs     []string `json:"ids"`
}

// ErrorEntry is one reported error. Resolved is true only with evidence: a
// later attempt at the same thing succeeded (exit 0 or explicit success).
type ErrorEntry struct {
	Text       string   `json:"text"`
	IDs        []string `json:"ids"`
	Resolved   bool     `json:"resolved"`
	ResolvedBy []string `json:"resolved_by,omitempty"`
}

// IdentEntry is one identifier and the messages it occurs in.
type IdentEntry struct {
	Value string   `json:"value"`
	IDs   []string `json:"ids"`
	// score ranks identifiers for the text when the budget is tight.
	score float64
}

// identStats is what ranking needs to know about one identifier.
type identStats struct {
	msgs, spoken int  // distinct messages it occurs in; those written by the agent or user
	inTool       bool // it occurred in a tool output
	acted        bool // and the agent or user wrote it afterwards
	last         int  // the last message it occurs in (b.n)
}

// step is a tool call with its result, or an assistant text, or a user turn.
type step struct {
	kind    string // the call kind, "said" or "user"
	marker  string
	ids     []string
	call    *callFacts
	res     *resultFacts
	errText string
	ok      bool   // evidence of success
	key     string // what was attempted, to match a later retry
}

// ledgerBuilder accumulates a ledger over a span in one pass.
type ledgerBuilder struct {
	l       Ledger
	idents  map[string]int // value -> index in l.Identifiers
	stats   []identStats   // parallel to l.Identifiers
	files   map[string]int
	instr   map[string]int
	steps   []step
	lastAsk string // last assistant text
	lastAID string
	prevTxt string // an earlier briefing's text, when its ledger is unknown
	prevID  string
	n       int // messages seen (for recency)
}

func newLedgerBuilder() *ledgerBuilder {
	return &ledgerBuilder{idents: map[string]int{}, files: map[string]int{}, instr: map[string]int{}}
}

// merge folds an earlier ledger in, before anything of the span.
func (b *ledgerBuilder) merge(prev *Ledger) {
	b.l.Task = prev.Task
	b.l.Depth = prev.Depth
	for _, in := range prev.UserInstructions {
		b.addInstruction(in.Text, in.IDs...)
	}
	for _, t := range prev.Timeline {
		b.steps = append(b.steps, step{kind: t.Kind, marker: t.Marker, ids: t.IDs})
	}
	for _, f := range prev.Files {
		for _, a := range f.Actions {
			b.addFile(f.Path, a, f.IDs...)
		}
	}
	b.l.Commands = append(b.l.Commands, prev.Commands...)
	b.l.URLs = append(b.l.URLs, prev.URLs...)
	b.l.Errors = append(b.l.Errors, prev.Errors...)
	for _, id := range prev.Identifiers {
		for _, mid := range id.IDs {
			b.addIdent(id.Value, mid, true)
		}
		if len(id.IDs) == 0 {
			b.addIdent(id.Value, "", true)
		}
	}
}

func (b *ledgerBuilder) addInstruction(text string, ids ...string) {
	if i, ok := b.instr[text]; ok {
		b.l.UserInstructions[i].IDs = appendUnique(b.l.UserInstructions[i].IDs, ids...)
		return
	}
	b.instr[text] = len(b.l.UserInstructions)
	b.l.UserInstructions = append(b.l.UserInstructions, Instruction{Text: text, IDs: append([]string(nil), ids...)})
}

func (b *ledgerBuilder) addFile(path, action string, ids ...string) {
	i, ok := b.files[path]
	if !ok {
		i = len(b.l.Files)
		b.files[path] = i
		b.l.Files = append(b.l.Files, FileEntry{Path: path})
	}
	f := &b.l.Files[i]
	f.Actions = appendUnique(f.Actions, action)
	f.IDs = appendUnique(f.IDs, ids...)
}

func (b *ledgerBuilder) addIdent(v, id string, spoken bool) {
	i, ok := b.idents[v]
	if !ok {
		i = len(b.l.Identifiers)
		b.idents[v] = i
		b.l.Identifiers = append(b.l.Identifiers, IdentEntry{Value: v})
		b.stats = append(b.stats, identStats{})
	}
	e, st := &b.l.Identifiers[i], &b.stats[i]
	if id != "" && (len(e.IDs) == 0 || e.IDs[len(e.IDs)-1] != id) {
		e.IDs = append(e.IDs, id)
	}
	if st.last != b.n || st.msgs == 0 {
		st.msgs++
		if spoken {
			st.spoken++
		}
	}
	if spoken {
		st.acted = st.acted || st.inTool && st.last != b.n
	} else {
		st.inTool = true
	}
	st.last = b.n
}

// scoreIdents ranks the identifiers for the text when the budget is tight.
// What predicts that an identifier matters later: it recurs across
// messages, the agent or the user wrote it, the agent acted on it after a
// tool showed it, it is recent, and it names something (a path, an id, a
// code, a date) rather than being a bare number.
func (b *ledgerBuilder) scoreIdents() {
	n := float64(max(b.n, 1))
	for i := range b.l.Identifiers {
		e, st := &b.l.Identifiers[i], &b.stats[i]
		s := float64(st.msgs) + 1.5*float64(st.spoken)
		if st.acted {
			s += 3
		}
		if st.msgs > 6 {
			s = 6 + (s-6)*0.3 // a value on every screen is not worth more for it
		}
		s *= 0.8 + 0.4*float64(st.last)/n
		s *= identWeight(e.Value)
		// Short values cost fewer tokens: rank by value per token.
		e.score = s / (1 + float64(len(e.Value))/48)
	}
}

// identWeight weighs an identifier by its shape.
func identWeight(v string) float64 {
	n := countChars(v)
	letters, digits, under, dash, slash, dot, upper := n.letters, n.digits, n.under, n.dashes, n.slashes, n.dots, n.upper
	switch {
	case strings.Contains(v, "://") || strings.Contains(v, "@"):
		return 1.3
	case slash > 0 || looksLikePath(v):
		return 1.4
	case letters == 0 && dash > 0:
		return 1.2 // a date
	case letters == 0 && dot > 0:
		return 0.9 // a version or a decimal
	case letters == 0:
		return 0.6 // a bare number
	case digits > 0 && (under > 0 || upper > 0 || dash > 0):
		return 1.5 // an id or a code: gift_card_1646646, HAT174, django-11138
	case digits > 0:
		return 1.1
	}
	return 0.9 // a code name quoted in backticks, a dotted name
}

func appendUnique(dst []string, vals ...string) []string {
next:
	for _, v := range vals {
		for _, d := range dst {
			if d == v {
				continue next
			}
		}
		dst = append(dst, v)
	}
	return dst
}

// add reads one message of the span with its facts. pending maps a tool
// call id to the index of its step.
func (b *ledgerBuilder) add(m *briefd.Message, f *msgFacts, pending map[string]int) {
	b.n++
	if m.IsBriefing() {
		text, _ := briefd.UnwrapBriefing(m.Content.String())
		b.prevTxt, b.prevID = text, m.ID
		for _, id := range Identifiers(text) {
			b.addIdent(id, m.ID, true)
		}
		return
	}
	for i, id := range f.idents {
		b.addIdent(id, m.ID, f.spoken[i])
	}
	switch m.Role {
	case briefd.RoleUser, briefd.RoleSystem:
		b.addInstruction(f.text, m.ID)
		b.steps = append(b.steps, step{kind: "user", marker: "[user message]", ids: []string{m.ID}})
	case briefd.RoleAssistant:
		if t := strings.TrimSpace(f.text); t != "" {
			b.lastAsk, b.lastAID = t, m.ID
		}
		if len(m.ToolCalls) == 0 {
			if t := strings.TrimSpace(f.text); t != "" {
				b.steps = append(b.steps, step{kind: "said", marker: `[said: "` + firstSentence(t, 140) + `"]`, ids: []string{m.ID}})
			}
			return
		}
		for i, tc := range m.ToolCalls {
			c := &f.calls[i]
			pending[tc.ID] = len(b.steps)
			b.steps = append(b.steps, step{kind: c.kind, call: c, ids: []string{m.ID}, marker: markerOf(c, nil)})
		}
	case briefd.RoleTool:
		i, ok := pending[m.ToolCallID]
		if !ok {
			return
		}
		s := &b.steps[i]
		s.res = &f.res
		s.ids = append(s.ids, m.ID)
		b.complete(s)
	}
}

// complete fills a step's marker, files, command, and error once its
// result is known.
func (b *ledgerBuilder) complete(s *step) {
	c, r := s.call, s.res
	if c.kind != "tool" || r.file != "" {
		// A SWE-agent "edit 12:14" names its file only in the result.
		if len(c.paths) == 0 && r.file != "" && c.kind != "shell" && c.kind != "searched" {
			c = &callFacts{name: c.name, kind: c.kind, paths: []string{r.file}, label: c.label}
			s.call = c
		}
	}
	s.marker = markerOf(c, r)
	s.errText = r.errText
	failed := r.timeout || r.hasExit && r.exit != 0 && !(c.kind == "searched" && r.exit == 1 && r.errText == "") || !r.hasExit && r.errText != ""
	if c.kind == "tool" && strings.HasPrefix(strings.TrimSpace(r.gist), "Error") {
		failed = true
		if s.errText == "" {
			s.errText = r.gist
		}
	}
	s.ok = !failed && (r.hasExit && r.exit == 0 || r.success)
	s.key = c.kind + " " + c.label
	if len(c.paths) > 0 && (c.kind == "edited" || c.kind == "created") {
		s.key = "write " + c.paths[0]
	}
	for _, p := range c.paths {
		b.addFile(p, c.kind, s.ids[0])
	}
	if c.kind == "shell" || c.kind == "read" || c.kind == "searched" || c.kind == "created" || c.kind == "edited" || c.kind == "submit" {
		if c.name == "bash" || c.name == "execute_bash" || c.name == "shell" {
			ce := CommandEntry{Command: c.label, IDs: s.ids}
			if r.hasExit {
				e := r.exit
				ce.Exit = &e
			}
			b.l.Commands = append(b.l.Commands, ce)
		}
	}
	if failed {
		text := s.errText
		if text == "" {
			switch {
			case r.timeout:
				text = "timed out: " + c.label
			default:
				text = "exit " + strconv.Itoa(r.exit) + ": " + c.label
			}
		}
		b.l.Errors = append(b.l.Errors, ErrorEntry{Text: text, IDs: []string{s.ids[0], s.ids[len(s.ids)-1]}})
		s.errText = text
	}
}

// finish resolves errors, sorts what needs sorting, and writes the state.
func (b *ledgerBuilder) finish() *Ledger {
	l := &b.l
	b.scoreIdents()
	// Resolution: a later step with the same key that succeeded.
	okAt := map[string][]string{}
	for i := len(b.steps) - 1; i >= 0; i-- {
		s := &b.steps[i]
		if s.ok && s.key != "" {
			okAt[s.key] = s.ids
		}
	}
	stepOf := map[string]*step{}
	for i := range b.steps {
		s := &b.steps[i]
		if len(s.ids) > 0 {
			stepOf[s.ids[0]] = s
		}
	}
	for i := range l.Errors {
		e := &l.Errors[i]
		if e.Resolved || len(e.IDs) == 0 {
			continue
		}
		s := stepOf[e.IDs[0]]
		if s == nil {
			continue
		}
		// the latest success with that key must come after the error
		for j := len(b.steps) - 1; j >= 0; j-- {
			t := &b.steps[j]
			if t == s {
				break
			}
			if t.ok && t.key == s.key {
				e.Resolved, e.ResolvedBy = true, t.ids
			}
		}
	}
	l.Timeline = l.Timeline[:0]
	for _, s := range b.steps {
		l.Timeline = append(l.Timeline, TimelineEntry{Marker: s.marker, Kind: s.kind, IDs: s.ids})
	}
	for _, id := range l.Identifiers {
		if strings.HasPrefix(id.Value, "http://") || strings.HasPrefix(id.Value, "https://") {
			l.URLs = append(l.URLs, IdentEntry{Value: id.Value, IDs: id.IDs})
		}
	}
	// state: the last step that is not a user turn
	for i := len(b.steps) - 1; i >= 0; i-- {
		s := b.steps[i]
		if s.kind == "user" {
			continue
		}
		l.CurrentState = "Last step (" + s.ids[0] + "): " + s.marker
		break
	}
	if b.lastAsk != "" {
		l.NextStep = "(" + b.lastAID + ") " + lastSentences(b.lastAsk, 260)
	}
	return l
}

// decodeLedger reads an earlier briefing's structured form; ok is false
// when it is not a ledger (for example a model tier's own schema).
func decodeLedger(raw json.RawMessage) (*Ledger, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	var l Ledger
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, false
	}
	if len(l.UserInstructions) == 0 && len(l.Timeline) == 0 && len(l.Identifiers) == 0 && len(l.Files) == 0 {
		return nil, false
	}
	return &l, true
}
