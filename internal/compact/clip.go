package compact

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd"
)

// Clipping, as in Pilo's history clipping: the briefing never serializes
// old tool arguments, tool results or external content whole. Each becomes
// one line clipped to a few dozen characters, images become placeholders,
// and repeated feedback collapses into one line with a count.

// externalContent matches the body of an <EXTERNAL-CONTENT> block.
var externalContent = regexp.MustCompile(`(?s)(<EXTERNAL-CONTENT[^>]*>).*?(</EXTERNAL-CONTENT>)`)

// clipExternal replaces the body of every external-content block.
func clipExternal(s string) string {
	if !strings.Contains(s, "<EXTERNAL-CONTENT") {
		return s
	}
	return externalContent.ReplaceAllString(s, "$1[external content clipped]$2")
}

// messageText is the text of m the briefing reads: content (external
// content clipped, images as placeholders). Tool call arguments are read
// separately.
func messageText(m *briefd.Message) string {
	s := m.Content.String()
	if n := m.Content.Images(); n > 0 {
		s += " [" + strconv.Itoa(n) + " image(s) clipped]"
	}
	return clipExternal(s)
}

// oneLine folds whitespace runs into single spaces and clips s to at most
// max bytes (on a rune boundary), marking the cut with "…".
func oneLine(s string, max int) string {
	var b strings.Builder
	b.Grow(min(len(s), max+4))
	space := false
	for _, r := range s {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > max {
			b.WriteString("…")
			return b.String()
		}
		b.WriteRune(r)
	}
	return b.String()
}

// clipHead keeps the first max bytes of s (on a rune boundary).
func clipHead(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// firstSentence returns the first sentence or line of s, clipped to max.
func firstSentence(s string, max int) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "THOUGHT:")
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && (s[i+1] == ' ' || s[i+1] == '\n') && i > 20 {
			s = s[:i+1]
			break
		}
	}
	return oneLine(s, max)
}

// lastSentences returns the last sentences of s up to about max bytes: the
// part of an assistant message that says what it does next.
func lastSentences(s string, max int) string {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "THOUGHT:"))
	if len(s) <= max {
		return oneLine(s, max)
	}
	cut := len(s) - max
	// start at a sentence or line boundary after cut
	for i := cut; i < len(s)-1; i++ {
		if (s[i] == '.' || s[i] == '\n' || s[i] == ':') && (s[i+1] == ' ' || s[i+1] == '\n') {
			return "…" + oneLine(s[i+1:], max)
		}
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + oneLine(s[cut:], max)
}
