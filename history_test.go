package briefd_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

func TestParseHistory(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantID  string
		wantN   int
		wantErr string
	}{
		{name: "object", in: `{"id":"c1","messages":[{"id":"m1","role":"user","content":"hi"}]}`, wantID: "c1", wantN: 1},
		{name: "array", in: ` [{"id":"m1","role":"user","content":null}] `, wantN: 1},
		{name: "parts", in: `[{"id":"m1","role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}]`, wantN: 1},
		{name: "empty", in: "  ", wantErr: "empty history"},
		{name: "no messages", in: `{"id":"c1"}`, wantErr: `no "messages"`},
		{name: "scalar", in: `42`, wantErr: "must be a JSON object or array"},
		{name: "bad content", in: `[{"id":"m1","role":"user","content":5}]`, wantErr: "content must be"},
		{name: "bad utf8", in: "[{\"id\":\"m1\",\"role\":\"user\",\"content\":\"\xff\"}]", wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := briefd.ParseHistory([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.ID != tt.wantID || len(h.Messages) != tt.wantN {
				t.Fatalf("got id %q, %d messages", h.ID, len(h.Messages))
			}
		})
	}
}

func TestContentRoundTrip(t *testing.T) {
	for _, in := range []string{`"plain"`, `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u","detail":"low"}}]`, `[]`} {
		var c briefd.Content
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(c)
		if err != nil || string(out) != in {
			t.Fatalf("%s -> %s (%v)", in, out, err)
		}
	}
	c := briefd.Content{Parts: []briefd.ContentPart{{Type: "text", Text: "a"}, {Type: "image_url"}, {Type: "text", Text: "b"}}}
	if c.String() != "a\nb" || c.Images() != 1 || !c.IsParts() {
		t.Fatalf("String %q Images %d", c.String(), c.Images())
	}
}

func call(id string) briefd.ToolCall {
	return briefd.ToolCall{ID: id, Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: "{}"}}
}

func TestValidate(t *testing.T) {
	sys := briefd.Message{ID: "s", Role: briefd.RoleSystem, Content: briefd.Text("sys")}
	user := briefd.Message{ID: "u", Role: briefd.RoleUser, Content: briefd.Text("task")}
	asst := briefd.Message{ID: "a", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{call("c1"), call("c2")}}
	res1 := briefd.Message{ID: "t1", Role: briefd.RoleTool, ToolCallID: "c1"}
	res2 := briefd.Message{ID: "t2", Role: briefd.RoleTool, ToolCallID: "c2"}
	after := briefd.Message{ID: "z", Role: briefd.RoleAssistant, Content: briefd.Text("done")}
	with := func(m briefd.Message, f func(*briefd.Message)) briefd.Message { f(&m); return m }
	tests := []struct {
		name   string
		msgs   []briefd.Message
		id     string // offending message, "" for valid
		reason string
	}{
		{name: "valid", msgs: []briefd.Message{sys, user, asst, res1, res2, after}},
		{name: "unanswered at the end", msgs: []briefd.Message{sys, user, asst, res1}},
		{name: "unanswered before more", msgs: []briefd.Message{sys, user, asst, res1, after}, id: "a", reason: `tool call "c2" is never answered`},
		{name: "orphan result", msgs: []briefd.Message{sys, user, res1}, id: "t1", reason: "which no assistant message makes"},
		{name: "answered twice", msgs: []briefd.Message{user, asst, res1, res2, with(res1, func(m *briefd.Message) { m.ID = "t3" })}, id: "t3", reason: "already answered"},
		{name: "duplicate id", msgs: []briefd.Message{sys, with(user, func(m *briefd.Message) { m.ID = "s" })}, id: "s", reason: "duplicate id"},
		{name: "empty id", msgs: []briefd.Message{with(user, func(m *briefd.Message) { m.ID = "" })}, reason: "empty id"},
		{name: "unknown role", msgs: []briefd.Message{with(user, func(m *briefd.Message) { m.Role = "robot" })}, id: "u", reason: `unknown role "robot"`},
		{name: "bad utf8", msgs: []briefd.Message{with(user, func(m *briefd.Message) { m.Content = briefd.Text("\xff") })}, id: "u", reason: "content is not valid UTF-8"},
		{name: "pinned tool call", msgs: []briefd.Message{user, with(asst, func(m *briefd.Message) { m.Pinned = true }), res1, res2}, id: "a", reason: "cannot be pinned"},
		{name: "user with call", msgs: []briefd.Message{with(user, func(m *briefd.Message) { m.ToolCalls = []briefd.ToolCall{call("x")} })}, id: "u", reason: "cannot carry tool calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := briefd.Validate(tt.msgs, briefd.Limits{})
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *briefd.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, briefd.ErrInvalidHistory) || ve.MessageID != tt.id || !strings.Contains(ve.Reason, tt.reason) {
				t.Fatalf("err = %v, want message %q: %q", err, tt.id, tt.reason)
			}
		})
	}
}

func TestValidateLimits(t *testing.T) {
	msgs := []briefd.Message{{ID: "a", Role: briefd.RoleUser, Content: briefd.Text("0123456789")}, {ID: "b", Role: briefd.RoleUser, Content: briefd.Text("0123456789")}}
	for _, tt := range []struct {
		lim    briefd.Limits
		reason string
	}{
		{briefd.Limits{MaxMessages: 1}, "more than the limit of 1"},
		{briefd.Limits{MaxMessageBytes: 5}, "10 bytes, more than the limit of 5"},
		{briefd.Limits{MaxTotalBytes: 15}, "history reaches 20 bytes"},
		{briefd.Limits{MaxIDLength: 0}, ""},
	} {
		err := briefd.Validate(msgs, tt.lim)
		if (tt.reason == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.reason)) {
			t.Errorf("limits %+v: err = %v, want %q", tt.lim, err, tt.reason)
		}
	}
}

func TestPinned(t *testing.T) {
	b := briefd.BriefingMessage(&briefd.Briefing{BoundaryID: "x", Text: "t"})
	msgs := []briefd.Message{
		{ID: "s", Role: briefd.RoleSystem},
		b,
		{ID: "u1", Role: briefd.RoleUser},
		{ID: "a", Role: briefd.RoleAssistant},
		{ID: "u2", Role: briefd.RoleUser},
		{ID: "p", Role: briefd.RoleAssistant, Pinned: true},
	}
	want := []bool{true, false, true, false, false, true}
	for i := range msgs {
		if got := briefd.Pinned(msgs, i); got != want[i] {
			t.Errorf("Pinned(%s) = %v", msgs[i].ID, got)
		}
	}
}
