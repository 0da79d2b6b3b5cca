package cascade

import (
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
)

// source is what the gate checks a reply against: the raw span (not the
// clipped serialization), the kept messages, the earlier briefing and the
// deterministic draft.
type source struct {
	// corpus holds every text (decoded tool arguments included), every
	// message and call id, whitespace-collapsed: identifiers and quotes
	// must occur in it.
	corpus string
	// quotes is corpus in the form quotes are compared in (normQuote).
	quotes string
	// users holds what users wrote: the user messages of the span and of
	// the kept messages, and the user sections of the earlier briefing.
	// Tool output, assistant text and the deterministic draft are not in
	// it, so nothing they say can pass as a user's instruction.
	users []string
	// usersNorm is users in the form quotes are compared in.
	usersNorm []string
	// usersStems is users as stem sequences, for paraphrase checks.
	usersStems [][]string
	ids        map[string]bool
	// msgs holds the span's messages by id, in order.
	msgs  map[string]*srcMsg
	order []*srcMsg
	// df counts, per stem, the span messages that contain it: a word most
	// messages share ("reservation", "django") names no particular step.
	df map[string]int
	// stepDF counts, per stem, the steps (a call and its result are one)
	// that contain it: a word of one step only names that step.
	stepDF map[string]int
}

// srcMsg is one span message as evidence.
type srcMsg struct {
	id   string
	role briefd.Role
	// text is the message's own content.
	text string
	// calls are the tool calls it made (assistant) or answered (tool).
	calls []srcCall
	// results are the tool results of its calls (assistant) or itself (tool).
	results []string
	stems   map[string]bool
	// partner is, for a tool result, the assistant message that made the
	// call; for that message, its last result.
	partner *srcMsg
	ev      *msgEvidence // what it shows, once read
}

// srcCall is a tool call: its name and arguments, and the command or code
// it runs when the arguments carry one.
type srcCall struct {
	name, args, command string
}

// bundle is everything a message offers as evidence: for a user message
// its text, otherwise its calls and their results (an assistant's own
// prose proves nothing).
func (m *srcMsg) bundle() string {
	if m.role == briefd.RoleUser {
		return m.text
	}
	var b strings.Builder
	for _, c := range m.calls {
		b.WriteString(c.name)
		b.WriteByte(' ')
		b.WriteString(c.args)
		b.WriteByte('\n')
	}
	for _, r := range m.results {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	return b.String()
}

func newSource(in compact.SummaryInput, prevText string) *source {
	s := &source{ids: map[string]bool{}, msgs: map[string]*srcMsg{}, df: map[string]int{}, stepDF: map[string]int{}}
	var all strings.Builder
	add := func(text string) {
		if text != "" {
			all.WriteString(text)
			all.WriteByte('\n')
		}
	}
	addUser := func(text string) {
		if strings.TrimSpace(text) != "" {
			s.users = append(s.users, text)
		}
	}
	add(prevText)
	for _, sec := range userSections(prevText) {
		addUser(sec)
	}
	if in.Draft != nil {
		add(in.Draft.Text)
	}
	for i := range in.Pinned {
		m := &in.Pinned[i]
		s.ids[m.ID] = true
		add(m.ID)
		add(m.Content.String())
		if m.Role == briefd.RoleUser {
			addUser(m.Content.String())
		}
	}
	owner := map[string]*srcMsg{}
	for i := range in.Span {
		m := &in.Span[i]
		s.ids[m.ID] = true
		add(m.ID)
		if m.IsBriefing() {
			continue
		}
		text := m.Content.String()
		add(text)
		sm := &srcMsg{id: m.ID, role: m.Role, text: text}
		if m.Role == briefd.RoleUser {
			addUser(text)
		}
		for _, tc := range m.ToolCalls {
			c := srcCall{name: tc.Function.Name, args: tc.Function.Arguments, command: commandOf(tc.Function.Arguments)}
			add(tc.ID)
			add(tc.Function.Name)
			add(tc.Function.Arguments)
			add(decodedArgs(tc.Function.Arguments))
			sm.calls = append(sm.calls, c)
			owner[tc.ID] = sm
		}
		if m.Role == briefd.RoleTool {
			// A huge output is read as the model saw it: head and tail.
			res := clip(text, maxEvidenceChars)
			sm.results = []string{res}
			if o, ok := owner[m.ToolCallID]; ok {
				sm.partner, o.partner = o, sm
				o.results = append(o.results, res)
				for _, c := range o.calls {
					if c.name != "" {
						sm.calls = append(sm.calls, c)
					}
				}
				if len(o.calls) > 1 { // keep only the call this result answers
					sm.calls = callByID(m.ToolCallID, in.Span, o.calls)
				}
			}
		}
		s.msgs[m.ID] = sm
		s.order = append(s.order, sm)
	}
	for _, m := range s.order {
		m.stems = stemSet(m.text + "\n" + m.bundle())
		for st := range m.stems {
			s.df[st]++
		}
	}
	// What ties a claim to a step is the step's call, its result and
	// what the assistant said it was doing: the end of its message, not a
	// long deliberation before it. A result and its call are one step.
	for _, m := range s.order {
		switch {
		case m.role == briefd.RoleAssistant && len(m.calls) > 0:
			m.stems = stemSet(intent(m.text) + "\n" + m.bundle())
		case m.role == briefd.RoleTool && m.partner != nil:
			maps.Copy(m.stems, stemSet(intent(m.partner.text)))
		}
	}
	for _, m := range s.order {
		if m.role == briefd.RoleTool && m.partner != nil {
			continue // counted with its call
		}
		step := maps.Clone(m.stems)
		if m.partner != nil {
			maps.Copy(step, m.partner.stems)
		}
		for st := range step {
			s.stepDF[st]++
		}
	}

	s.corpus = collapse(all.String())
	s.quotes = normQuote(all.String())
	for _, u := range s.users {
		s.usersNorm = append(s.usersNorm, normQuote(u))
		s.usersStems = append(s.usersStems, seqStems(u))
	}
	return s
}

// maxEvidenceChars bounds the output of one tool result the gate reads
// for evidence (head and tail kept), as the serialization bounds what the
// model reads; identifiers and quotes are still checked against all of it.
const maxEvidenceChars = 32_000

// intentChars is how much of an assistant message's end states what its
// call does.
const intentChars = 400

// intent returns the end of an assistant message: where agents say what
// the call they make is for ("I will revert the file...").
func intent(text string) string {
	if len(text) <= intentChars {
		return text
	}
	cut := len(text) - intentChars
	for cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut++
	}
	return text[cut:]
}

// callByID returns the call of calls whose id is id, found through the
// span's assistant message.
func callByID(id string, span []briefd.Message, calls []srcCall) []srcCall {
	for i := range span {
		for k, tc := range span[i].ToolCalls {
			if tc.ID == id && k < len(calls) {
				return []srcCall{calls[k]}
			}
		}
	}
	return calls
}

// commandOf returns the shell command or code in a call's JSON arguments
// ("command", "cmd", "code", "script"), or "" when there is none.
func commandOf(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd", "code", "script", "input"} {
		if v, ok := m[k].(string); ok {
			return v
		}
	}
	return ""
}

// decodedArgs returns the string values of a call's JSON arguments, so
// that a quoted command is found as the model reads it (without JSON
// escapes).
func decodedArgs(args string) string {
	var v any
	if json.Unmarshal([]byte(args), &v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

var userHeadingRe = regexp.MustCompile(`(?i)^\s*(?:#{1,6}\s*|[*_]{2})?\s*(user\b[^:\n]*)`)

// userSections returns the parts of an earlier briefing that record what
// users wrote: the sections whose heading or label names the user ("## User
// messages", "USER INSTRUCTIONS:", "USER [m0004], verbatim: ..."). The rest
// of an earlier briefing is a summary, not a user's words.
func userSections(prev string) []string {
	if prev == "" {
		return nil
	}
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(prev, "\n") {
		heading := strings.HasPrefix(strings.TrimSpace(line), "#") || isLabelLine(line)
		if heading {
			if in && len(cur) > 0 {
				out = append(out, strings.Join(cur, "\n"))
			}
			cur, in = nil, userHeadingRe.MatchString(line)
		}
		if in {
			cur = append(cur, line)
		}
	}
	if in && len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}

var capsLabelRe = regexp.MustCompile(`^\s*[*_]{0,2}[A-Z][A-Z '/-]{1,40}[*_]{0,2}(?:\s*\[[^\]]*\])?[^a-z\n]{0,12}:`)

// isLabelLine reports a line that starts with a capitalised label
// ("USER INSTRUCTIONS:", "STATE:") or a known section label.
func isLabelLine(line string) bool {
	if capsLabelRe.MatchString(line) {
		return true
	}
	_, _, ok := labelOf(line)
	return ok
}
