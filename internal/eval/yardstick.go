package eval

import (
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd"
)

// This file ports the helpers of ../shared/tools/eval_quality.py that both
// yardsticks share. Lengths are Python's len() of a str: code points, not
// bytes; slices cut at code points.

// pyLen is len(s) of a Python str.
func pyLen(s string) int { return utf8.RuneCountInString(s) }

// pyHead is s[:n] (n >= 0) of a Python str.
func pyHead(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// pySuffix is s[-n:] of a Python str for n >= 0. Note that s[-0:] is the
// whole string, as in Python: the yardstick's baselines inherit that.
func pySuffix(s string, n int) string {
	if n <= 0 {
		return s
	}
	i := len(s)
	for i > 0 && n > 0 {
		_, w := utf8.DecodeLastRuneInString(s[:i])
		i -= w
		n--
	}
	return s[i:]
}

// msgText mirrors msg_text(m):
//
//	parts = [m.get("content") or ""]
//	for c in m.get("tool_calls") or []:
//	    f = c.get("function", {})
//	    parts.append(f.get("name", "") + " " + f.get("arguments", ""))
//	return "\n".join(parts)
//
// A content given as a list of parts counts its text parts joined by
// newlines (the Python reads string contents only; the shared histories
// have no other kind).
func msgText(m *briefd.Message) string {
	content := m.Content.String()
	if len(m.ToolCalls) == 0 {
		return content
	}
	var b strings.Builder
	b.WriteString(content)
	for _, c := range m.ToolCalls {
		b.WriteByte('\n')
		b.WriteString(c.Function.Name)
		b.WriteByte(' ')
		b.WriteString(c.Function.Arguments)
	}
	return b.String()
}

// msgChars is len(msg_text(m)).
func msgChars(m *briefd.Message) int { return pyLen(msgText(m)) }

// sumChars is sum(len(msg_text(m)) for m in msgs).
func sumChars(msgs []briefd.Message) int {
	n := 0
	for i := range msgs {
		n += msgChars(&msgs[i])
	}
	return n
}

// joinText is "\n".join(msg_text(m) for m in msgs).
func joinText(msgs []briefd.Message) string {
	var b strings.Builder
	for i := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(msgText(&msgs[i]))
	}
	return b.String()
}

// serialize mirrors serialize(msgs): "\n".join(f"<{m['role']}> {msg_text(m)}").
func serialize(msgs []briefd.Message) string {
	var b strings.Builder
	for i := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteByte('<')
		b.WriteString(string(msgs[i].Role))
		b.WriteString("> ")
		b.WriteString(msgText(&msgs[i]))
	}
	return b.String()
}

// idsOf mirrors set().union(*[identifiers(msg_text(m)) for m in msgs]).
func idsOf(msgs []briefd.Message) idSet {
	out := idSet{}
	for i := range msgs {
		out.add(identifiers(msgText(&msgs[i])))
	}
	return out
}

// cutIndex mirrors cut_index(msgs, frac): the largest n <= frac*len such
// that msgs[:n] leaves no tool call unanswered and does not end on a user
// message.
//
//	n = max(4, int(len(msgs) * frac))
//	while n > 2:
//	    pending = set()
//	    for m in msgs[:n]:
//	        for c in m.get("tool_calls") or []:
//	            pending.add(c["id"])
//	        if m.get("role") == "tool":
//	            pending.discard(m.get("tool_call_id"))
//	    if not pending and msgs[n - 1].get("role") != "user":
//	        return n
//	    n -= 1
//	return n
//
// ok is false where the Python raises (a history of fewer than 4
// messages whose n runs past its end).
func cutIndex(msgs []briefd.Message, frac float64) (n int, ok bool) {
	n = max(4, int(float64(len(msgs))*frac))
	for n > 2 {
		pending := map[string]bool{}
		for i := range msgs[:min(n, len(msgs))] {
			m := &msgs[i]
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
			if m.Role == briefd.RoleTool {
				delete(pending, m.ToolCallID)
			}
		}
		if len(pending) == 0 {
			if n > len(msgs) {
				return n, false
			}
			if msgs[n-1].Role != briefd.RoleUser {
				return n, true
			}
		}
		n--
	}
	return n, true
}

// pairsOK mirrors pairs_ok(msgs): every tool result answers a pending
// call, no assistant message speaks while calls are pending, and none is
// left pending at the end.
func pairsOK(msgs []briefd.Message) bool {
	pending := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		if m.Role == briefd.RoleTool {
			if !pending[m.ToolCallID] {
				return false
			}
			delete(pending, m.ToolCallID)
			continue
		}
		if len(pending) > 0 && m.Role == briefd.RoleAssistant {
			return false
		}
		for _, c := range m.ToolCalls {
			pending[c.ID] = true
		}
	}
	return len(pending) == 0
}

// pinnedSplit mirrors the yardstick's reading of a boundary bi:
//
//	head = [m for m in prefix[:bi] if m["role"] == "system"][:1] + [m for m in prefix[:bi] if m["role"] == "user"][:1]
//	head_ids = {m["id"] for m in head}
//	span = [m for m in prefix[:bi] if m["id"] not in head_ids]
//	tail = prefix[bi:]
func pinnedSplit(prefix []briefd.Message, bi int) (head, span, tail []briefd.Message) {
	head = firstOfRoles(prefix[:bi])
	inHead := map[string]bool{}
	for _, m := range head {
		inHead[m.ID] = true
	}
	for _, m := range prefix[:bi] {
		if !inHead[m.ID] {
			span = append(span, m)
		}
	}
	return head, span, prefix[bi:]
}

// firstOfRoles is the yardsticks' pinned head: the first system message,
// then the first user message, of msgs.
func firstOfRoles(msgs []briefd.Message) []briefd.Message {
	var head []briefd.Message
	for _, role := range []briefd.Role{briefd.RoleSystem, briefd.RoleUser} {
		for _, m := range msgs {
			if m.Role == role {
				head = append(head, m)
				break
			}
		}
	}
	return head
}
