package cascade

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
)

// source is what the fidelity gate checks a briefing against: the raw
// span (not the clipped serialization), the earlier briefing and the
// deterministic draft.
type source struct {
	// corpus holds every text of the span, the earlier briefing, the draft
	// and every message and call id, whitespace-collapsed.
	corpus string
	// userCorpus holds what users wrote (and the earlier briefing and the
	// draft, which carry earlier users' words), whitespace-collapsed.
	userCorpus string
	ids        map[string]bool
	// evidence holds, per message id, the texts that can prove a step done:
	// the message itself, and for an assistant message the results of its calls.
	evidence map[string][]string
}

func newSource(in compact.SummaryInput, prevText string) *source {
	s := &source{ids: map[string]bool{}, evidence: map[string][]string{}}
	var all, user strings.Builder
	add := func(b *strings.Builder, text string) {
		if text != "" {
			b.WriteString(text)
			b.WriteByte('\n')
		}
	}
	add(&all, prevText)
	add(&user, prevText)
	if in.Draft != nil {
		add(&all, in.Draft.Text)
		add(&user, in.Draft.Text)
	}
	callOwner := map[string]string{}
	for i := range in.Span {
		m := &in.Span[i]
		s.ids[m.ID] = true
		add(&all, m.ID)
		if m.IsBriefing() {
			continue
		}
		text := m.Content.String()
		add(&all, text)
		if m.Role == briefd.RoleUser {
			add(&user, text)
		}
		s.evidence[m.ID] = append(s.evidence[m.ID], text)
		for _, tc := range m.ToolCalls {
			add(&all, tc.ID)
			add(&all, tc.Function.Name)
			add(&all, tc.Function.Arguments)
			callOwner[tc.ID] = m.ID
		}
		if m.Role == briefd.RoleTool {
			if owner, ok := callOwner[m.ToolCallID]; ok {
				s.evidence[owner] = append(s.evidence[owner], text)
			}
		}
	}
	s.corpus = collapse(all.String())
	s.userCorpus = collapse(user.String())
	return s
}

// collapse folds every run of white space into one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

var (
	quoteRe     = regexp.MustCompile(`"([^"\n]{3,1000})"|“([^”\n]{3,1000})”`)
	statusRe    = regexp.MustCompile(`\b(COMPLETED|IN-PROGRESS|FAILED)\b`)
	citeRe      = regexp.MustCompile(`\[([^\[\]\n]{1,400})\]`)
	zeroCountRe = regexp.MustCompile(`(?i)\b0 (failed|failures?|errors?)\b|\bfailures?=0\b|\berrors?=0\b`)
	successRe   = regexp.MustCompile(`(?i)\b(pass(ed|es)?|succe(ss|eded|ssful|ssfully)|ok|done|completed|created|saved|updated|merged|fixed|works|confirmed|resolved|exit(ed)?( with)?( code| status)?:? 0|returncode>0<|200 ok)\b|✓|✔`)
	failureRe   = regexp.MustCompile(`(?i)\b(fail(ed|ure|ures|s)?|errors?|exception|traceback|exit(ed)?( with)?( code| status)?:? [1-9]\d*|returncode>[1-9]|not found|denied|timed out|cannot|unable)\b|✗`)
)

// showsSuccess reports whether a message (or its calls' results) carries
// explicit evidence of success and no sign of failure. It is deliberately
// strict: a false "no" only asks the model to write IN-PROGRESS.
func (s *source) showsSuccess(id string) bool {
	for _, text := range s.evidence[id] {
		t := zeroCountRe.ReplaceAllString(text, "")
		if successRe.MatchString(t) && !failureRe.MatchString(t) {
			return true
		}
	}
	return false
}

// maxViolations bounds the feedback sent back to the model.
const maxViolations = 12

type violations []string

func (v *violations) add(format string, args ...any) {
	if len(*v) < maxViolations {
		*v = append(*v, fmt.Sprintf(format, args...))
	}
}

// checkLeaks reports wrapper tags in text.
func checkLeaks(text string, v *violations) {
	low := strings.ToLower(text)
	for _, tag := range leakTags {
		if strings.Contains(low, tag) {
			v.add("the briefing contains the tag %s; write no tags", tag)
		}
	}
}

// checkIdentifiers reports identifiers of text that the source lacks.
func (s *source) checkIdentifiers(text string, extract func(string) []string, v *violations) {
	seen := map[string]bool{}
	for _, id := range extract(text) {
		if seen[id] {
			continue
		}
		seen[id] = true
		if !strings.Contains(s.corpus, collapse(id)) {
			v.add("identifier %q does not occur in the messages; copy identifiers verbatim or leave them out", id)
		}
	}
}

// checkQuotes reports quoted passages of three words or more that the
// source lacks: a quote must be verbatim.
func (s *source) checkQuotes(text string, v *violations) {
	for _, m := range quoteRe.FindAllStringSubmatch(text, -1) {
		q := collapse(m[1] + m[2])
		if len(strings.Fields(q)) < 3 {
			continue
		}
		if !strings.Contains(s.corpus, q) {
			v.add("the quote %q does not occur verbatim in the messages; quote exactly or paraphrase without quotes", q)
		}
	}
}

// checkInstructionQuotes reports quotes in the user-instructions paragraph
// that no user wrote: an invented instruction is the worst failure a
// briefing can have, since the agent would then execute it.
func (s *source) checkInstructionQuotes(text string, v *violations) {
	for _, m := range quoteRe.FindAllStringSubmatch(text, -1) {
		q := collapse(m[1] + m[2])
		if q != "" && !strings.Contains(s.userCorpus, q) {
			v.add("the user instruction %q is not a verbatim quote of a user message; never add an instruction the user did not give", clip(q, 200))
		}
	}
}

// checkCompleted reports each COMPLETED that cites no message with success
// evidence. The text around a status word (up to the neighbouring status
// words on the same line) is where its citation is looked for.
func (s *source) checkCompleted(text string, v *violations) {
	for _, line := range strings.Split(text, "\n") {
		locs := statusRe.FindAllStringIndex(line, -1)
		for i, loc := range locs {
			if line[loc[0]:loc[1]] != "COMPLETED" {
				continue
			}
			from, to := 0, len(line)
			if i > 0 {
				from = locs[i-1][1]
			}
			if i+1 < len(locs) {
				to = locs[i+1][0]
			}
			window := line[from:to]
			cited := s.citedIDs(window)
			if len(cited) == 0 {
				v.add("COMPLETED without a cited message id in %q; cite the message that shows success, or write IN-PROGRESS", clip(strings.TrimSpace(window), 160))
				continue
			}
			if !s.anySuccess(cited) {
				v.add("COMPLETED cites %s, which show no explicit success; write IN-PROGRESS or FAILED", strings.Join(cited, ", "))
			}
		}
	}
}

func (s *source) anySuccess(ids []string) bool {
	for _, id := range ids {
		if s.showsSuccess(id) {
			return true
		}
	}
	return false
}

// citedIDs returns the span message ids cited in square brackets in text.
func (s *source) citedIDs(text string) []string {
	var out []string
	for _, m := range citeRe.FindAllStringSubmatch(text, -1) {
		for _, f := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
			if s.ids[f] {
				out = append(out, f)
			}
		}
	}
	return out
}
