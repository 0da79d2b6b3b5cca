package eval

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file ports the identifier rules of ../shared/tools/eval_quality.py
// (ID_PATTERNS and identifiers()), not those of internal/ident: the report
// must count what the project's yardstick counts, whatever the briefing
// writer's own rules become.
//
// Python's re differs from Go's regexp in two ways that matter here, and
// both are bridged without changing what matches:
//
//   - \b, \d, \w and \s are Unicode-aware in Python (str patterns) and
//     ASCII-only in Go. The classes below spell Python's sets out: \w is
//     [\p{L}\p{N}_] (str.isalnum() or '_'), \d is \p{Nd}, \s is the 29 code
//     points of str.isspace(). They agree with Python 3.12 (Unicode 15, the
//     tables of Go 1.26); Python 3.11 (Unicode 14) differs only on the code
//     points Unicode 15 added.
//   - Go has neither \b over a custom class nor lookahead. Every \b here
//     sits next to a character the pattern itself makes a word character,
//     so it means "the neighbour outside the match is not a word
//     character"; each pattern matches that neighbour (or the end of the
//     text, or the start) as an extra, uncaptured character, the match
//     proper is capture group 1, and the scan resumes at the end of group 1
//     as Python's findall resumes at the end of its match (so the neighbour
//     can still start or precede the next match). Go's leftmost-first
//     semantics pick the match a backtracking engine picks, so group 1 is
//     Python's match. The one lookahead pair (codes: at least one capital
//     and one digit) is checked on group 1, which is exactly the run the
//     lookaheads scan.

const (
	pyWord    = `\p{L}\p{N}_`
	pyNonWord = `[^` + pyWord + `]`
	pyDigit   = `\p{Nd}`
	// pySpace is Python's \s: the characters of str.isspace().
	pySpace = `\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	// lead and trail stand for a \b before a pattern that starts with a
	// word character, and after one that ends with one.
	lead  = `(?:^|` + pyNonWord + `)`
	trail = `(?:` + pyNonWord + `|$)`
)

// idPattern is one of ID_PATTERNS: re is the Go translation, check an
// extra condition on the match (the lookaheads), nil when none.
type idPattern struct {
	re    *regexp.Regexp
	check func(string) bool
}

// idPatterns mirrors ID_PATTERNS of eval_quality.py, in its order; the
// Python source of each is quoted beside it.
var idPatterns = []idPattern{
	// r"https?://[^\s\"'<>)\]]+"
	{re: regexp.MustCompile(`(https?://[^` + pySpace + `"'<>)\]]+)`)},
	// r"(?:[A-Za-z0-9_.\-]+/)+[A-Za-z0-9_\-]+\.[A-Za-z0-9]{1,6}\b"  (paths with an extension)
	{re: regexp.MustCompile(`((?:[A-Za-z0-9_.\-]+/)+[A-Za-z0-9_\-]+\.[A-Za-z0-9]{1,6})` + trail)},
	// r"\b[A-Z][A-Za-z]+(?:Error|Exception)\b"
	{re: regexp.MustCompile(lead + `([A-Z][A-Za-z]+(?:Error|Exception))` + trail)},
	// r"\b(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*[0-9])[A-Z0-9]{5,10}\b"  (codes like ZFA04Y, HAT123)
	{re: regexp.MustCompile(lead + `([A-Z0-9]{5,10})` + trail), check: hasCapitalAndDigit},
	// r"\b\d+\.\d+(?:\.\d+)*\b"  (versions, decimals)
	{re: regexp.MustCompile(lead + `(` + pyDigit + `+\.` + pyDigit + `+(?:\.` + pyDigit + `+)*)` + trail)},
	// r"\b\d{4,}\b"  (long numbers)
	{re: regexp.MustCompile(lead + `(` + pyDigit + `{4,})` + trail)},
	// r"\b[a-z]+\.[A-Z]\d{3}\b"  (check ids like auth.E003)
	{re: regexp.MustCompile(lead + `([a-z]+\.[A-Z]` + pyDigit + `{3})` + trail)},
}

// hasCapitalAndDigit is (?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*[0-9]) on a run of
// [A-Z0-9].
func hasCapitalAndDigit(s string) bool {
	return strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(s, "0123456789")
}

// findAll calls emit with every match of p in text, as Python's
// p.findall(text) lists them.
func (p idPattern) findAll(text string, emit func(string)) {
	for pos := 0; pos <= len(text); {
		loc := p.re.FindStringSubmatchIndex(text[pos:])
		if loc == nil {
			return
		}
		start, end := pos+loc[2], pos+loc[3]
		if p.check == nil || p.check(text[start:end]) {
			emit(text[start:end])
		}
		pos = end
	}
}

// idSet is a set of identifiers.
type idSet map[string]struct{}

// identifiers mirrors identifiers(text):
//
//	for p in ID_PATTERNS:
//	    for m in p.findall(text or ""):
//	        m = m.rstrip(".,;:")
//	        if len(m) >= 4:
//	            out.add(m)
func identifiers(text string) idSet {
	out := idSet{}
	for _, p := range idPatterns {
		p.findAll(text, func(m string) {
			m = strings.TrimRight(m, ".,;:")
			if utf8.RuneCountInString(m) >= 4 {
				out[m] = struct{}{}
			}
		})
	}
	return out
}

// add puts every identifier of o into s.
func (s idSet) add(o idSet) {
	for k := range o {
		s[k] = struct{}{}
	}
}

// isNumber mirrors re.fullmatch(r"[\d.]+", i): digits (Unicode decimal
// digits, as Python's \d) and dots only.
func isNumber(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if r != '.' && !unicode.Is(unicode.Nd, r) {
			return false
		}
	}
	return true
}

// isPySpace is str.isspace() for one code point (Python's \s).
func isPySpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x1f, r == ' ', r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// pyStrip is Python's str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }
