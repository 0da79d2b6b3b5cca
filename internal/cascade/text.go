package cascade

import (
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The gate compares a reply with its source in three ways: identifiers and
// quotes verbatim (whitespace-collapsed), and claims by their words. Words
// are lowercased alphanumeric runs, plural "s" dropped and cut to five
// letters, so that "cancellation" meets "cancel" and "flights" meets
// "flight": loose on purpose, since it only ties a claim to its subject.

// collapse folds every run of white space into one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// normQuote is the form quotes are compared in: typographic quotes and
// apostrophes made plain, escapes and markdown emphasis dropped, white space
// collapsed, lowercased, trailing punctuation trimmed.
func normQuote(s string) string {
	s = quoteFolder.Replace(s)
	s = strings.ToLower(collapse(s))
	return strings.TrimRight(strings.TrimLeft(s, " "), " .,;:!?")
}

var quoteFolder = strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201c", `"`, "\u201d", `"`, `\"`, `"`, `\n`, " ", `\t`, " ", "**", "", "`", "")

// stopWords carry no subject: they never tie a claim to its evidence and
// never make an instruction look supported.
var stopWords = toSet(`a an the and or but nor of to in on at by for with from into onto as is are was were be been
being it its it's this that these those there here then than so such not no yes all any each every both some more most
other only also just very can could may might must shall should will would do does did done has have had having you your
yours we our they them their he him his she her i me my mine what which who whom whose when where why how about after
before again once now still yet up down out over under off per via same own too via let lets`)

// metaWords describe a briefing rather than the work: "the user said",
// "see the ledger". They never count as content.
var metaWords = toSet(`user users customer said says say asked asks ask wants want wanted requested requests request
required requires instructed instructs insisted insists prefer prefers preferred told tell stated states specified
demanded demands wrote writes write mentioned message messages instruction instructions ledger verbatim quoted quote
listed above below agent assistant tool task please`)

func toSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// stem reduces a lowercased word to the form words are compared in.
func stem(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		w = w[:len(w)-1]
	}
	if len(w) > 5 {
		w = w[:5]
	}
	return w
}

// words returns the lowercased alphanumeric runs of s (letters and digits
// apart: "917s" gives "917" and "s"), each at least minLen long.
func words(s string, minLen int) []string {
	var out []string
	start, class := -1, 0
	flush := func(end int) {
		if start >= 0 && end-start >= minLen {
			out = append(out, strings.ToLower(s[start:end]))
		}
		start = -1
	}
	for i, r := range s {
		c := 0
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'), r >= utf8.RuneSelf && unicode.IsLetter(r):
			c = 1
		case r >= '0' && r <= '9':
			c = 2
		}
		if c != class {
			flush(i)
			if c != 0 {
				start = i
			}
			class = c
		}
	}
	flush(len(s))
	return out
}

// contentStems returns the stems of the words of s that are neither stop
// nor meta words, in order, each once.
func contentStems(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range words(s, 3) {
		if stopWords[w] || metaWords[w] {
			continue
		}
		st := stem(w)
		if !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	return out
}

// stemSet returns the stems of every word of s.
func stemSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words(s, 2) {
		m[stem(w)] = true
	}
	return m
}

// quoteSpan is a quotation of a reply: its text and byte offsets
// (quotation marks included).
type quoteSpan struct {
	text       string
	start, end int
}

// findQuotes returns the double-quoted passages of s, pairing quotation
// marks on one line: an opening mark follows a non-word character and
// precedes a non-space one, its closing mark is the next one followed by a
// non-word character. Backtick code spans are skipped, so code with quotes
// in it (re.sub("”", "'", s)) is never read as a misquotation.
func findQuotes(s string) []quoteSpan {
	var out []quoteSpan
	inCode := false
	lineStart := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			inCode, lineStart = false, i+1
			continue
		case c == '`':
			inCode = !inCode
			continue
		case inCode:
			continue
		}
		open, closer := "", ""
		switch {
		case c == '"':
			open, closer = `"`, `"`
		case strings.HasPrefix(s[i:], "\u201c"):
			open, closer = "\u201c", "\u201d"
		default:
			continue
		}
		if i > lineStart && isWordByte(s[i-1]) {
			continue
		}
		body := i + len(open)
		if body >= len(s) || s[body] == ' ' || s[body] == '\n' {
			continue
		}
		end := -1
		for j := body; j < len(s) && s[j] != '\n'; j++ {
			if strings.HasPrefix(s[j:], closer) && (j+len(closer) >= len(s) || !isWordByte(s[j+len(closer)])) {
				end = j
				break
			}
		}
		if end < 0 {
			continue
		}
		out = append(out, quoteSpan{text: s[body:end], start: i, end: end + len(closer)})
		i = end + len(closer) - 1
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// maskQuotes replaces quoted passages with spaces, and backticks (not the
// code they mark) too, keeping every offset: words a reply quotes are not
// its own claims.
func maskQuotes(s string) string {
	b := []byte(s)
	for _, q := range findQuotes(s) {
		for k := q.start; k < q.end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	for i := range b {
		if b[i] == '`' {
			b[i] = ' '
		}
	}
	return string(b)
}

// containsToken reports whether id occurs in text and does not continue
// there: HAT15 is not found in HAT157, nor 917 in 9170, but a date is found
// in the timestamp 2024-05-12T09:36:29 and a name in name_2.
func containsToken(text, id string) bool {
	if id == "" {
		return false
	}
	for off := 0; ; {
		i := strings.Index(text[off:], id)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(id)
		if (i == 0 || !sameClass(text[i-1], id[0])) && (j == len(text) || !sameClass(text[j], id[len(id)-1])) {
			return true
		}
		off = i + 1
	}
}

// sameClass reports whether two bytes are both letters or both digits (an
// identifier that would run on).
func sameClass(a, b byte) bool {
	return isDigit(a) && isDigit(b) || isLetter(a) && isLetter(b) || a == '_' && isWordByte(b) || b == '_' && isWordByte(a)
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

var citeRe = regexp.MustCompile(`\[([^\[\]\n]{1,400})\]`)

// msgIDRe matches one message id or a range of them (m0010-m0018).
var msgIDRe = regexp.MustCompile(`\bm\d{2,}\b`)

// unescapeForLeaks undoes the encodings a reply could hide a tag behind:
// HTML entities (&lt;), full-width and small angle brackets.
func unescapeForLeaks(s string) string {
	s = leakFolder.Replace(s)
	for range 2 { // &amp;lt; decodes in two steps
		s = html.UnescapeString(s)
	}
	return s
}

var leakFolder = strings.NewReplacer("\uff1c", "<", "\uff1e", ">", "\ufe64", "<", "\ufe65", ">", "\u2039", "<", "\u203a", ">", "\u3008", "<", "\u3009", ">")
