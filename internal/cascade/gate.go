package cascade

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/briefd/briefd/internal/compact"
)

// The gate's rules. Every reply that reaches the gate gets a verdict per
// rule it was checked against (compact.Attempt.Verdicts); the names are
// the labels of the rejection metrics and the keys of the audit event.
const (
	// RuleFormat: the reply is usable at all: not empty, not cut off, plain
	// text (or, for the structured prompt, valid JSON with every field).
	RuleFormat = "format"
	// RuleLabels: the hand-off names the task and where the work stands.
	RuleLabels = "labels"
	// RuleLeak: no wrapper or role tag, in any spelling, that could end the
	// briefing or forge a turn.
	RuleLeak = "leak"
	// RuleIdentifier: every identifier and cited message id occurs in the
	// source.
	RuleIdentifier = "identifier"
	// RuleQuote: every quotation occurs in the source.
	RuleQuote = "quote"
	// RuleUserInstruction: every instruction attributed to the user is in a
	// user message.
	RuleUserInstruction = "user_instruction"
	// RuleCompletion: every completion claim is shown by a message.
	RuleCompletion = "completion"
	// RuleLength: with the evidence ledger it fits the budget.
	RuleLength = "length"
)

// Rules lists the gate's rules in the order they are checked.
var Rules = []string{RuleFormat, RuleLabels, RuleLeak, RuleIdentifier, RuleQuote, RuleUserInstruction, RuleCompletion, RuleLength}

// maxFailures bounds what a verdict and the feedback carry per rule.
const maxFailures = 6

// judgement collects the verdicts of one reply.
type judgement struct {
	checked  map[string]bool
	failures map[string][]string
	order    []string // failure texts in the order found, for feedback
}

func newJudgement() *judgement {
	return &judgement{checked: map[string]bool{}, failures: map[string][]string{}}
}

func (j *judgement) check(rules ...string) {
	for _, r := range rules {
		j.checked[r] = true
	}
}

func (j *judgement) fail(rule, format string, args ...any) {
	j.checked[rule] = true
	msg := fmt.Sprintf(format, args...)
	for _, f := range j.failures[rule] {
		if f == msg {
			return
		}
	}
	if len(j.failures[rule]) >= maxFailures {
		return
	}
	j.failures[rule] = append(j.failures[rule], msg)
	j.order = append(j.order, rule+": "+msg)
}

func (j *judgement) ok() bool { return len(j.order) == 0 }

// verdicts returns one verdict per checked rule, in rule order.
func (j *judgement) verdicts() []compact.Verdict {
	var out []compact.Verdict
	for _, r := range Rules {
		if !j.checked[r] {
			continue
		}
		v := compact.Verdict{Rule: r, Passed: len(j.failures[r]) == 0}
		for _, f := range j.failures[r] {
			v.Failures = append(v.Failures, clip(f, 300))
		}
		out = append(out, v)
	}
	return out
}

// leakNames are the tags a briefing must never contain: the wrapper the
// agent reads it in, the serialization's own, and chat roles.
var leakNames = []string{"compacted-history", "previous-chat-history", "evidence-ledger", "kept-messages", "history",
	"message", "system", "user", "assistant", "tool", "tool_result", "tool_call", "function", "developer"}

// checkLeaks reports wrapper and role tags in text, however spelled:
// entities (&lt;/compacted-history&gt;), full-width brackets, spaces or
// line breaks inside the tag, any case; and chat special tokens (<|im_end|>).
func checkLeaks(text string, j *judgement) {
	j.check(RuleLeak)
	t := unescapeForLeaks(text)
	for i := 0; i < len(t); i++ {
		if t[i] != '<' {
			continue
		}
		end := strings.IndexByte(t[i:min(len(t), i+80)], '>')
		if end < 0 {
			continue
		}
		inner := strings.ToLower(strings.Join(strings.Fields(t[i+1:i+end]), ""))
		if strings.HasPrefix(inner, "|") {
			j.fail(RuleLeak, "the hand-off contains the special token %s; write no tags or tokens", t[i:i+end+1])
			continue
		}
		name := strings.TrimPrefix(inner, "/")
		for _, n := range leakNames {
			if rest, ok := strings.CutPrefix(name, n); ok && (rest == "" || rest == "/" || !isNameByte(rest[0])) {
				j.fail(RuleLeak, "the hand-off contains the tag <%s>; never write <compacted-history> or any other wrapper or role tag", inner)
				break
			}
		}
	}
}

func isNameByte(c byte) bool { return isWordByte(c) || c == '-' }

// checkIdentifiers reports identifiers of text that the source lacks.
// Message ids and ranges of them must name messages of the history; short
// bare numbers (5.5, 116) are values a model may compute; a path made of a
// listing's directory and a file name in it is not invented.
func (s *source) checkIdentifiers(text string, extract func(string) []string, j *judgement) {
	j.check(RuleIdentifier)
	for _, id := range s.gateIdentifiers(text, extract) {
		switch {
		case isShortNumber(id):
		case msgIDRe.MatchString(id) && s.idsOnly(id):
			for _, m := range msgIDRe.FindAllString(id, -1) {
				if !s.ids[m] {
					j.fail(RuleIdentifier, "message id %s is not a message of the history; cite only the ids of the history", m)
				}
			}
		case s.inCorpus(id):
		default:
			j.fail(RuleIdentifier, "identifier %q does not occur in the messages; copy identifiers verbatim or leave them out", id)
		}
	}
}

// codeRe finds record codes such as 4XGCCM or HAT247: capitals and digits,
// both, five to ten of them (the pattern of ../shared/tools/eval_quality.py,
// which the identifier extractor misses when a code starts with a digit).
var codeRe = regexp.MustCompile(`\b[A-Z0-9]{5,10}\b`)

// gateIdentifiers returns the identifiers of text the gate checks: those of
// extract, and record codes.
func (s *source) gateIdentifiers(text string, extract func(string) []string) []string {
	ids := extract(text)
	for _, c := range codeRe.FindAllString(text, -1) {
		if strings.ContainsAny(c, "0123456789") && strings.ContainsAny(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	return ids
}

// idsOnly reports a token made of message ids and range punctuation.
func (s *source) idsOnly(id string) bool {
	return strings.Trim(msgIDRe.ReplaceAllString(id, ""), "-–—., /") == ""
}

// inCorpus reports whether id occurs in the source as a token, or, for a
// path, whether its file name does and each of its directories does.
func (s *source) inCorpus(id string) bool {
	c := collapse(id)
	if containsToken(s.corpus, c) {
		return true
	}
	if !strings.Contains(c, "/") {
		return false
	}
	parts := strings.Split(strings.Trim(c, "/"), "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			continue
		}
		if !containsToken(s.corpus, p) {
			return false
		}
	}
	return containsToken(s.corpus, path.Base(c))
}

// checkQuotes reports quotations of two words or more that occur nowhere
// in the source. User instructions are checked against user messages
// instead (checkInstructions).
func (s *source) checkQuotes(text string, j *judgement) {
	j.check(RuleQuote)
	for _, q := range findQuotes(text) {
		if len(strings.Fields(q.text)) < 2 {
			continue
		}
		ok := false
		for _, piece := range strings.FieldsFunc(q.text, func(r rune) bool { return r == '…' }) {
			ok = true
			for _, p := range strings.Split(piece, "...") {
				if n := normQuote(p); n != "" && !strings.Contains(s.quotes, n) {
					ok = false
				}
			}
			if !ok {
				break
			}
		}
		if !ok {
			j.fail(RuleQuote, "the quote %q does not occur in the messages; quote exactly or paraphrase without quotation marks", clip(q.text, 200))
		}
	}
}
