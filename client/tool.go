package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/briefd/briefd"
)

// ToolDefinition is a tool in the OpenAI chat-completions form
// ({"type":"function","function":{...}}); it marshals to exactly that JSON,
// so it can be sent as is or copied into an SDK's own type, e.g.
// go-openai's openai.Tool{Type: "function", Function:
// &openai.FunctionDefinition{Name: t.Function.Name, Description:
// t.Function.Description, Parameters: t.Function.Parameters}}.
type ToolDefinition struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function of a ToolDefinition; Parameters is its JSON
// Schema.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// expandToolDescription and expandToolParameters are the tool as every SDK
// defines it (sdk/typescript has the same text; a test compares them).
const expandToolDescription = "Read messages of this conversation that were compacted into the <compacted-history> briefing, verbatim. " +
	"Give from_id and to_id (the ids the briefing names, e.g. in its last line) to read a range, or query to search the compacted messages; " +
	"answers are bounded: when truncated, call again from next_id."

const expandToolParameters = `{"type":"object","properties":{` +
	`"from_id":{"type":"string","description":"Id of the first message to read."},` +
	`"to_id":{"type":"string","description":"Id of the last message to read (inclusive); default from_id."},` +
	`"query":{"type":"string","description":"Text to search for in the compacted messages (case-insensitive; … stands for any text, as where the briefing cut one), instead of a range."},` +
	`"regexp":{"type":"boolean","description":"Treat query as a regular expression."}` +
	`},"additionalProperties":false}`

// ExpandTool returns the definition of the expand tool (named
// briefd.ExpandToolName) to add to the agent's tools. The briefing's last
// line names the compacted ids (briefd.ExpandFooter); the model calls the
// tool with a range or a query, and HandleExpandTool answers it.
func ExpandTool() ToolDefinition {
	return ToolDefinition{Type: "function", Function: ToolFunction{
		Name:        briefd.ExpandToolName,
		Description: expandToolDescription,
		Parameters:  json.RawMessage(expandToolParameters),
	}}
}

// ExpandToolArgs are the arguments of the expand tool: a range (FromID,
// ToID) or a Query.
type ExpandToolArgs struct {
	FromID string `json:"from_id,omitempty"`
	ToID   string `json:"to_id,omitempty"`
	Query  string `json:"query,omitempty"`
	Regexp bool   `json:"regexp,omitempty"`
}

// expandAnswer is the tool's answer to a range.
type expandAnswer struct {
	ConversationID string          `json:"conversation_id"`
	FromID         string          `json:"from_id"`
	ToID           string          `json:"to_id"`
	Messages       []answerMessage `json:"messages"`
	Truncated      bool            `json:"truncated"`
	NextID         string          `json:"next_id,omitempty"`
	ExpiredIDs     []string        `json:"expired_ids,omitempty"`
	Note           string          `json:"note,omitempty"`
}

// answerMessage is a message in a tool answer: briefd.Message's JSON, its
// content encoded without HTML escaping like the rest of the answer.
type answerMessage struct {
	ID         string            `json:"id"`
	Role       briefd.Role       `json:"role"`
	Content    any               `json:"content"` // string or []briefd.ContentPart
	Name       string            `json:"name,omitempty"`
	ToolCalls  []briefd.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	Pinned     bool              `json:"pinned,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

func newAnswerMessage(m briefd.Message) answerMessage {
	a := answerMessage{ID: m.ID, Role: m.Role, Content: m.Content.Text, Name: m.Name, ToolCalls: m.ToolCalls,
		ToolCallID: m.ToolCallID, Pinned: m.Pinned, Metadata: m.Metadata}
	if m.Content.IsParts() {
		a.Content = m.Content.Parts
	}
	return a
}

// searchAnswer is the tool's answer to a query.
type searchAnswer struct {
	ConversationID string        `json:"conversation_id"`
	Query          string        `json:"query"`
	Regexp         bool          `json:"regexp"`
	Matches        []SearchMatch `json:"matches"`
	Searched       int           `json:"searched"`
	Truncated      bool          `json:"truncated"`
	ExpiredIDs     []string      `json:"expired_ids,omitempty"`
	Note           string        `json:"note,omitempty"`
}

// HandleExpandTool answers a call of the expand tool in conversation conv:
// arguments is the call's JSON arguments as the model produced them. It
// returns the content of the tool message to add to the history: always a
// JSON object, bounded by the client's ExpandLimits, that the model can
// read, with "error" set when the call could not be answered (bad
// arguments, an unknown id, nothing compacted yet). The error is non-nil
// only when the caller may want to act on it (NATS or the store
// unreachable, the client closed); the content then says so too.
func (c *Client) HandleExpandTool(ctx context.Context, conv, arguments string) (string, error) {
	var args ExpandToolArgs
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return toolError(fmt.Sprintf("arguments are not the %s tool's: %v", briefd.ExpandToolName, err)), nil
	}
	switch {
	case args.Query != "" && (args.FromID != "" || args.ToID != ""):
		return toolError("give either from_id/to_id or query, not both"), nil
	case args.Query == "" && args.FromID == "" && args.ToID == "":
		return toolError("give from_id (and to_id) to read a range, or query to search"), nil
	case args.Query != "":
		var opts []SearchOption
		if args.Regexp {
			opts = append(opts, SearchRegexp())
		}
		res, err := c.Search(ctx, conv, args.Query, opts...)
		if err != nil {
			return toolAnswerError(err)
		}
		ans := searchAnswer{ConversationID: conv, Query: res.Query, Regexp: res.Regexp, Matches: res.Matches,
			Searched: res.Searched, Truncated: res.Truncated, ExpiredIDs: res.Expired}
		if ans.Matches == nil {
			ans.Matches = []SearchMatch{}
		}
		var notes []string
		if res.Truncated {
			notes = append(notes, fmt.Sprintf("more messages match than the %d shown; narrow the query", len(res.Matches)))
		}
		if len(res.Expired) > 0 {
			notes = append(notes, describeIDs(res.Expired)+" expired and could not be searched")
		}
		if len(res.Matches) > 0 {
			notes = append(notes, "read a match in full with from_id")
		}
		ans.Note = strings.Join(notes, "; ")
		return marshalAnswer(ans), nil
	default:
		from, to := args.FromID, args.ToID
		if from == "" {
			from = to
		}
		ex, err := c.Expand(ctx, conv, from, to)
		var expired *ExpiredError
		if err != nil && !errors.As(err, &expired) {
			return toolAnswerError(err)
		}
		ans := expandAnswer{ConversationID: conv, FromID: ex.FromID, ToID: ex.ToID, Messages: []answerMessage{},
			Truncated: ex.Truncated, NextID: ex.NextID, ExpiredIDs: ex.Expired}
		for _, m := range ex.Messages {
			ans.Messages = append(ans.Messages, newAnswerMessage(m))
		}
		var notes []string
		if ex.NextID != "" {
			notes = append(notes, fmt.Sprintf("answer cut at %d messages; call again with from_id %s to read on", len(ex.Messages), ex.NextID))
		} else if ex.Truncated {
			notes = append(notes, "a message was clipped to fit the answer")
		}
		if expired != nil {
			notes = append(notes, describeIDs(ex.Expired)+" expired and cannot be read; the briefing is what remains of them")
		}
		ans.Note = strings.Join(notes, "; ")
		return marshalAnswer(ans), nil
	}
}

// toolAnswerError turns an error of Expand or Search into the tool's
// answer: the model reads what went wrong; errors the agent may act on
// are returned too.
func toolAnswerError(err error) (string, error) {
	switch {
	case errors.Is(err, ErrNoBriefing):
		return toolError("nothing in this conversation has been compacted yet"), nil
	}
	var unknown *unknownMessageError
	if errors.As(err, &unknown) {
		return toolError(unknown.toolText()), nil
	}
	var query *invalidQueryError
	if errors.As(err, &query) {
		return toolError(query.Error()), nil
	}
	if errors.Is(err, ErrInvalidID) {
		return toolError("the conversation id is not 1-128 characters of [A-Za-z0-9_-]"), nil
	}
	return toolError("the history could not be read: " + err.Error()), err
}

func toolError(msg string) string {
	return marshalAnswer(struct {
		Error string `json:"error"`
	}{msg})
}

// marshalAnswer encodes a tool answer as compact JSON without HTML
// escaping (the model reads '<' better than \u003c).
func marshalAnswer(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return `{"error":"cannot encode the answer"}`
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
