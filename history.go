package briefd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	if err := checkCount(len(msgs), lim.withDefaults()); err != nil {
		return err
	}
	return NewValidator(lim).Add(msgs...)
}

func checkCount(n int, lim Limits) error {
	if n > lim.MaxMessages {
		return &ValidationError{Index: -1, Reason: fmt.Sprintf("%d messages, more than the limit of %d", n, lim.MaxMessages)}
	}
	return nil
}

// Validator applies [Validate]'s rules to a history as it grows: Add
// checks new messages against those added before, in time proportional
// to the new messages, so an agent that validates its history each turn
// pays for the turn, not the history. A Validator is not safe for
// concurrent use.
type Validator struct {
	lim  Limits
	n    int
	seen map[string]int // message index by id
	// callSeen holds every tool call id made; pending those of the latest
	// assistant message not answered yet, made by message pendingFrom.
	callSeen    map[string]bool
	pending     map[string]bool
	pendingFrom int
	pendingID   string
	total       int
	err         error
	// pinned are the indexes of the pinned messages (see Pinned); user
	// tells whether a user message (a briefing aside) was added.
	pinned []int
	user   bool
	// wrapped is WrapBriefing(wrapFor), for Splice; wrappedValid tells
	// whether it is valid UTF-8.
	wrapFor, wrapped string
	wrappedValid     bool
}

// NewValidator returns a Validator of an empty history.
func NewValidator(lim Limits) *Validator {
	return &Validator{lim: lim.withDefaults(), seen: map[string]int{}, callSeen: map[string]bool{}, pending: map[string]bool{}, pendingFrom: -1}
}

// Len returns how many messages were added.
func (v *Validator) Len() int { return v.n }

// Bytes returns the size of the messages added (see [Message.Size]).
func (v *Validator) Bytes() int { return v.total }

// Index returns the position of the message with id, or -1.
func (v *Validator) Index(id string) int {
	if i, ok := v.seen[id]; ok {
		return i
	}
	return -1
}

// Add checks msgs as the next messages of the history and adds them. It
// returns the first violation as a *ValidationError whose Index counts
// from the start of the history; after one, every Add returns it.
func (v *Validator) Add(msgs ...Message) error {
	if v.err != nil {
		return v.err
	}
	if err := checkCount(v.n+len(msgs), v.lim); err != nil {
		v.err = err
		return err
	}
	for i := range msgs {
		if err := v.add(&msgs[i]); err != nil {
			v.err = err
			return err
		}
	}
	return nil
}

func (v *Validator) add(m *Message) error {
	i, lim := v.n, v.lim
	bad := func(format string, args ...any) error {
		return &ValidationError{MessageID: m.ID, Index: i, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case m.ID == "":
		return bad("empty id")
	case len(m.ID) > lim.MaxIDLength:
		return bad("id is %d bytes, more than the limit of %d", len(m.ID), lim.MaxIDLength)
	case !utf8.ValidString(m.ID):
		return bad("id is not valid UTF-8")
	}
	if j, dup := v.seen[m.ID]; dup {
		return bad("duplicate id (first at #%d)", j)
	}
	if err := validUTF8(m); err != "" {
		return bad("%s is not valid UTF-8", err)
	}
	size := m.Size()
	if size > lim.MaxMessageBytes {
		return bad("%d bytes, more than the limit of %d", size, lim.MaxMessageBytes)
	}
	if v.total+size > lim.MaxTotalBytes {
		return bad("history reaches %d bytes, more than the limit of %d", v.total+size, lim.MaxTotalBytes)
	}
	if m.Role != RoleTool && len(v.pending) > 0 {
		return &ValidationError{MessageID: v.pendingID, Index: v.pendingFrom,
			Reason: fmt.Sprintf("tool call %s is never answered", firstKey(v.pending))}
	}
	switch m.Role {
	case RoleSystem, RoleUser:
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
			return bad("a %s message cannot carry tool calls or a tool_call_id", m.Role)
		}
	case RoleAssistant:
		if m.ToolCallID != "" {
			return bad("an assistant message cannot carry a tool_call_id")
		}
		if m.Pinned && len(m.ToolCalls) > 0 {
			return bad("an assistant message with tool calls cannot be pinned")
		}
		for k, tc := range m.ToolCalls {
			if tc.ID == "" {
				return bad("tool call with empty id")
			}
			if v.callSeen[tc.ID] || slices.ContainsFunc(m.ToolCalls[:k], func(o ToolCall) bool { return o.ID == tc.ID }) {
				return bad("tool call id %q used twice", tc.ID)
			}
			if !utf8.ValidString(tc.Function.Name) || !utf8.ValidString(tc.Function.Arguments) {
				return bad("tool call %q is not valid UTF-8", tc.ID)
			}
		}
		// Only a valid message changes the state.
		for _, tc := range m.ToolCalls {
			v.callSeen[tc.ID] = true
			v.pending[tc.ID] = true
		}
		if len(m.ToolCalls) > 0 {
			v.pendingFrom, v.pendingID = i, m.ID
		}
	case RoleTool:
		if m.Pinned {
			return bad("a tool message cannot be pinned")
		}
		if m.ToolCallID == "" {
			return bad("tool message without tool_call_id")
		}
		if !v.pending[m.ToolCallID] {
			if v.callSeen[m.ToolCallID] {
				return bad("tool result for call %q, which is already answered or not from the assistant message just before", m.ToolCallID)
			}
			return bad("tool result for call %q, which no assistant message makes", m.ToolCallID)
		}
		delete(v.pending, m.ToolCallID)
	default:
		return bad("unknown role %q", m.Role)
	}
	v.seen[m.ID] = i
	v.total += size
	v.n++
	if pinnedAt(m, !v.user) {
		v.pinned = append(v.pinned, i)
	}
	v.user = v.user || m.Role == RoleUser && !m.IsBriefing()
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
