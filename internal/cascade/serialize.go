package cascade

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd"
)

// tagNeutralizer keeps message text from closing or forging the tags the
// serialization uses: a '<' that starts one of them becomes '‹'.
var tagNeutralizer = strings.NewReplacer(
	"<history", "‹history", "</history", "‹/history",
	"<message", "‹message", "</message", "‹/message",
	"<previous-chat-history", "‹previous-chat-history", "</previous-chat-history", "‹/previous-chat-history",
	"<evidence-ledger", "‹evidence-ledger", "</evidence-ledger", "‹/evidence-ledger",
	"<compacted-history", "‹compacted-history", "</compacted-history", "‹/compacted-history",
	"<kept-messages", "‹kept-messages", "</kept-messages", "‹/kept-messages",
)

const maxArgChars = 300

// serializeSpan renders the span for the model in the Stagewise style: one
// <message> element per message, tool calls as one-line markers, every
// text clipped to maxChars (head and tail kept). An earlier briefing is
// emitted as <previous-chat-history> in place of its message.
func serializeSpan(span []briefd.Message, prevText string, prevDepth int, maxChars int) string {
	var b strings.Builder
	b.WriteString("<history>\n")
	wrotePrev := false
	writePrev := func(id string) {
		fmt.Fprintf(&b, "<previous-chat-history id=%q depth=\"%d\">\n%s\n</previous-chat-history>\n",
			id, prevDepth, tagNeutralizer.Replace(prevText))
		wrotePrev = true
	}
	if prevText != "" && (len(span) == 0 || !span[0].IsBriefing()) {
		writePrev("previous")
	}
	callNames := map[string]string{}
	for i := range span {
		m := &span[i]
		if m.IsBriefing() {
			if !wrotePrev {
				text := prevText
				if text == "" {
					text, _ = briefd.UnwrapBriefing(m.Content.String())
				}
				prevText = text
				writePrev(m.ID)
			}
			continue
		}
		switch m.Role {
		case briefd.RoleTool:
			name := callNames[m.ToolCallID]
			fmt.Fprintf(&b, "<message id=%q role=\"tool\" call=%q>\n", m.ID, cmpStr(name, m.ToolCallID))
		default:
			fmt.Fprintf(&b, "<message id=%q role=%q>\n", m.ID, m.Role)
		}
		if text := strings.TrimSpace(m.Content.String()); text != "" {
			b.WriteString(tagNeutralizer.Replace(clip(text, maxChars)))
			b.WriteByte('\n')
		}
		if n := m.Content.Images(); n > 0 {
			fmt.Fprintf(&b, "[attached: %d image(s)]\n", n)
		}
		for _, tc := range m.ToolCalls {
			callNames[tc.ID] = tc.Function.Name
			args := strings.Join(strings.Fields(tc.Function.Arguments), " ")
			fmt.Fprintf(&b, "[call %s %s]\n", tc.Function.Name, tagNeutralizer.Replace(clip(args, min(maxChars, maxArgChars))))
		}
		b.WriteString("</message>\n")
	}
	b.WriteString("</history>")
	return b.String()
}

// maxPinnedChars clips each kept message: a system prompt states rules the
// agent keeps anyway, the model needs only their gist.
const maxPinnedChars = 4000

// serializePinned renders the messages that stay before the briefing
// (system prompts, the first user message), so the model knows the task;
// empty when there are none.
func serializePinned(pinned []briefd.Message, maxChars int) string {
	if len(pinned) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<kept-messages>\n")
	for i := range pinned {
		m := &pinned[i]
		fmt.Fprintf(&b, "<message id=%q role=%q>\n", m.ID, m.Role)
		if text := strings.TrimSpace(m.Content.String()); text != "" {
			b.WriteString(tagNeutralizer.Replace(clip(text, min(maxChars, maxPinnedChars))))
			b.WriteByte('\n')
		}
		b.WriteString("</message>\n")
	}
	b.WriteString("</kept-messages>")
	return b.String()
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// clip shortens s to about n bytes, keeping two thirds from the head and
// one third from the tail (errors and results are often at the end), cut
// on rune boundaries.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*2/3, n/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s\n[... %d chars clipped ...]\n%s", s[:head], start-head, s[start:])
}
