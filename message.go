package briefd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Role is the author of a message, as in the OpenAI chat-completions API.
type Role string

// The four roles briefd understands. Any other role is rejected by [Validate].
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message in OpenAI chat-completions form plus the
// fields briefd needs: a stable ID given by the agent, and an optional Pinned
// mark that keeps the message out of any compaction.
type Message struct {
	// ID identifies the message within its conversation. It must be
	// non-empty, unique, and stable across snapshots: briefings name their
	// boundary by it.
	ID   string `json:"id"`
	Role Role   `json:"role"`
	// Content is a plain string or a list of parts (text, image_url).
	Content Content `json:"content"`
	// Name is the optional participant name of the OpenAI API.
	Name string `json:"name,omitempty"`
	// ToolCalls are the calls an assistant message makes. Each must be
	// answered by a tool message with the same ToolCallID.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Pinned keeps the message verbatim and out of compaction: it stays in
	// the pinned head that Splice puts before the briefing. Only system,
	// user and plain assistant messages (without tool calls) can be pinned.
	Pinned bool `json:"pinned,omitempty"`
	// Metadata carries agent-defined string values. briefd sets
	// [MetaKind] on the briefing message that Splice creates.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Metadata keys that briefd sets on the messages it creates.
const (
	// MetaKind marks a message made by briefd; its value is KindBriefing.
	MetaKind = "briefd.kind"
	// MetaBoundary holds the boundary id of the briefing a message carries.
	MetaBoundary = "briefd.boundary"
	// MetaPosition holds the Position of the briefing a message carries, so
	// that chained compaction counts covered messages right even when the
	// store no longer has that briefing.
	MetaPosition = "briefd.position"
	// KindBriefing is the MetaKind value of a spliced briefing message.
	KindBriefing = "briefing"
)

// IsBriefing reports whether m is a briefing message created by [Splice].
func (m *Message) IsBriefing() bool {
	return m.Metadata[MetaKind] == KindBriefing
}

// ToolCall is one function call requested by an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as a JSON
// string, exactly as the model produced them.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Content is a message's content: either a plain string (Parts == nil) or a
// list of parts. It marshals back to the form it was read from.
type Content struct {
	Text  string
	Parts []ContentPart
}

// Text returns a Content holding the plain string s.
func Text(s string) Content { return Content{Text: s} }

// ContentPart is one element of a multi-part content.
type ContentPart struct {
	Type     string    `json:"type"` // "text" or "image_url"; others are kept as opaque
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image reference of an image_url part.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// IsParts reports whether the content is a list of parts.
func (c Content) IsParts() bool { return c.Parts != nil }

// String returns the textual content: the string itself, or the text parts
// joined by newlines. Images are left out; use [Content.Images] for them.
func (c Content) String() string {
	if c.Parts == nil {
		return c.Text
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		if p.Type != "text" || p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// Images returns the number of non-text parts.
func (c Content) Images() int {
	n := 0
	for _, p := range c.Parts {
		if p.Type != "text" {
			n++
		}
	}
	return n
}

// MarshalJSON writes a string, or an array of parts.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts == nil {
		return json.Marshal(c.Text)
	}
	return json.Marshal(c.Parts)
}

// UnmarshalJSON reads a string, null (as ""), or an array of parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*c = Content{}
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{Text: s}
		return nil
	case b[0] == '[':
		var parts []ContentPart
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		if parts == nil {
			parts = []ContentPart{}
		}
		*c = Content{Parts: parts}
		return nil
	default:
		return errors.New("content must be a string, null or an array of parts")
	}
}

// Size returns the number of bytes of text the message carries: content,
// tool call names and arguments. It is the unit of size limits.
func (m *Message) Size() int {
	n := len(m.Content.Text)
	for _, p := range m.Content.Parts {
		n += len(p.Text)
		if p.ImageURL != nil {
			n += len(p.ImageURL.URL)
		}
	}
	for _, tc := range m.ToolCalls {
		n += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return n
}

func (m *Message) String() string {
	return fmt.Sprintf("%s(%s)", m.Role, m.ID)
}
