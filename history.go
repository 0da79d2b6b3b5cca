package briefd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// History is a conversation in the shared file format: an id, provenance
// fields, and the ordered messages. A bare JSON array of messages is also
// accepted by [ParseHistory].
type History struct {
	ID           string          `json:"id"`
	Source       string          `json:"source,omitempty"`
	SourceCommit string          `json:"source_commit,omitempty"`
	SourceItem   string          `json:"source_item,omitempty"`
	License      string          `json:"license,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
	Messages     []Message       `json:"messages"`
}

// ParseHistory reads a history file (an object with "messages") or a bare
// array of messages. It checks the JSON shape only; call [Validate] for the
// conversation rules.
func ParseHistory(data []byte) (*History, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("briefd: empty history")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("briefd: history is not valid UTF-8")
	}
	var h History
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &h.Messages); err != nil {
			return nil, fmt.Errorf("briefd: parse message array: %w", err)
		}
	case '{':
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, fmt.Errorf("briefd: parse history: %w", err)
		}
		if h.Messages == nil {
			return nil, errors.New(`briefd: history object has no "messages" array`)
		}
	default:
		return nil, errors.New("briefd: history must be a JSON object or array")
	}
	return &h, nil
}

// Limits bound what [Validate] accepts. A zero field takes its default.
type Limits struct {
	// MaxMessages is the most messages a history may hold. Default 100,000.
	MaxMessages int
	// MaxMessageBytes is the largest message (see [Message.Size]). Default 16 MiB.
	MaxMessageBytes int
	// MaxTotalBytes is the largest history. Default 256 MiB.
	MaxTotalBytes int
	// MaxIDLength is the longest message id. Default 256.
	MaxIDLength int
}

// Default limits.
const (
	DefaultMaxMessages     = 100_000
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxTotalBytes   = 256 << 20
	DefaultMaxIDLength     = 256
)

func (l Limits) withDefaults() Limits {
	if l.MaxMessages <= 0 {
		l.MaxMessages = DefaultMaxMessages
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if l.MaxIDLength <= 0 {
		l.MaxIDLength = DefaultMaxIDLength
	}
	return l
}

// ErrInvalidHistory is matched (with errors.Is) by every error Validate returns.
var ErrInvalidHistory = errors.New("invalid history")

// ValidationError says which message breaks which rule.
type ValidationError struct {
	MessageID string // empty when the error concerns the whole history
	Index     int    // position of the message, -1 for the whole history
	Reason    string
}

func (e *ValidationError) Error() string {
	if e.Index < 0 {
		return "invalid history: " + e.Reason
	}
	return fmt.Sprintf("invalid history: message %q (#%d): %s", e.MessageID, e.Index, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidHistory) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidHistory }

// Validate checks the conversation rules briefd relies on: known roles,
// unique non-empty ids, valid UTF-8, sizes within lim, every tool result
// answering a call of the assistant message before it, and every call
// answered (a call may be unanswered only in the last assistant turn, which
// is still running). It returns the first violation as a *ValidationError.
func Validate(msgs []Message, lim Limits) error {
	lim = lim.withDefaults()
	if len(msgs) > lim.MaxMessages {
		return &ValidationError{Index: -1, Reason: fmt.Sprintf("%d messages, more than the limit of %d", len(msgs), lim.MaxMessages)}
	}
	bad := func(i int, format string, args ...any) error {
		return &ValidationError{MessageID: msgs[i].ID, Index: i, Reason: fmt.Sprintf(format, args...)}
	}
	seen := make(map[string]int, len(msgs))
	callSeen := make(map[string]bool)
	// pending holds the calls of the latest assistant message not yet answered.
	pending := map[string]bool{}
	pendingFrom := -1
	total := 0
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.ID == "":
			return bad(i, "empty id")
		case len(m.ID) > lim.MaxIDLength:
			return bad(i, "id is %d bytes, more than the limit of %d", len(m.ID), lim.MaxIDLength)
		case !utf8.ValidString(m.ID):
			return bad(i, "id is not valid UTF-8")
		}
		if j, dup := seen[m.ID]; dup {
			return bad(i, "duplicate id (first at #%d)", j)
		}
		seen[m.ID] = i
		if err := validUTF8(m); err != "" {
			return bad(i, "%s is not valid UTF-8", err)
		}
		size := m.Size()
		if size > lim.MaxMessageBytes {
			return bad(i, "%d bytes, more than the limit of %d", size, lim.MaxMessageBytes)
		}
		total += size
		if total > lim.MaxTotalBytes {
			return bad(i, "history reaches %d bytes, more than the limit of %d", total, lim.MaxTotalBytes)
		}
		if m.Role != RoleTool && len(pending) > 0 {
			return bad(pendingFrom, "tool call %s is never answered", firstKey(pending))
		}
		switch m.Role {
		case RoleSystem, RoleUser:
			if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
				return bad(i, "a %s message cannot carry tool calls or a tool_call_id", m.Role)
			}
		case RoleAssistant:
			if m.ToolCallID != "" {
				return bad(i, "an assistant message cannot carry a tool_call_id")
			}
			if m.Pinned && len(m.ToolCalls) > 0 {
				return bad(i, "an assistant message with tool calls cannot be pinned")
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" {
					return bad(i, "tool call with empty id")
				}
				if callSeen[tc.ID] {
					return bad(i, "tool call id %q used twice", tc.ID)
				}
				if !utf8.ValidString(tc.Function.Name) || !utf8.ValidString(tc.Function.Arguments) {
					return bad(i, "tool call %q is not valid UTF-8", tc.ID)
				}
				callSeen[tc.ID] = true
				pending[tc.ID] = true
			}
			if len(m.ToolCalls) > 0 {
				pendingFrom = i
			}
		case RoleTool:
			if m.Pinned {
				return bad(i, "a tool message cannot be pinned")
			}
			if m.ToolCallID == "" {
				return bad(i, "tool message without tool_call_id")
			}
			if !pending[m.ToolCallID] {
				if callSeen[m.ToolCallID] {
					return bad(i, "tool result for call %q, which is already answered or not from the assistant message just before", m.ToolCallID)
				}
				return bad(i, "tool result for call %q, which no assistant message makes", m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			return bad(i, "unknown role %q", m.Role)
		}
	}
	return nil
}

func validUTF8(m *Message) string {
	if !utf8.ValidString(m.Content.Text) {
		return "content"
	}
	for _, p := range m.Content.Parts {
		if !utf8.ValidString(p.Text) {
			return "content part"
		}
	}
	if !utf8.ValidString(m.Name) {
		return "name"
	}
	return ""
}

func firstKey(m map[string]bool) string {
	first := ""
	for k := range m {
		if first == "" || k < first {
			first = k
		}
	}
	return fmt.Sprintf("%q", first)
}

// Pinned reports whether msgs[i] belongs to the pinned head: system
// messages, the first user message (the task), and messages marked Pinned.
// A spliced briefing message is never pinned: chained compaction folds it.
func Pinned(msgs []Message, i int) bool {
	m := &msgs[i]
	if m.IsBriefing() {
		return false
	}
	if m.Role == RoleSystem || m.Pinned {
		return true
	}
	if m.Role != RoleUser {
		return false
	}
	for j := 0; j < i; j++ {
		if msgs[j].Role == RoleUser && !msgs[j].IsBriefing() {
			return false
		}
	}
	return true
}
