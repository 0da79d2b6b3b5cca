package briefd_test

import (
	"fmt"

	"github.com/briefd/briefd"
)

// ExampleSplice replaces the messages before a briefing's boundary with the
// briefing; the system prompt and the task stay, and so does the tail.
func ExampleSplice() {
	history := []briefd.Message{
		{ID: "m1", Role: briefd.RoleSystem, Content: briefd.Text("You are a coding agent.")},
		{ID: "m2", Role: briefd.RoleUser, Content: briefd.Text("Fix the failing test.")},
		{ID: "m3", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{
			{ID: "c1", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"go test ./..."}`}}}},
		{ID: "m4", Role: briefd.RoleTool, ToolCallID: "c1", Content: briefd.Text("FAIL: TestParse")},
		{ID: "m5", Role: briefd.RoleAssistant, Content: briefd.Text("The parser rejects empty input; fixing it.")},
	}
	b := &briefd.Briefing{ConversationID: "c1", BoundaryID: "m5", Text: "Ran go test ./...: TestParse fails (m4)."}
	spliced, err := briefd.Splice(history, b)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range spliced {
		fmt.Println(m.ID, m.Role, m.IsBriefing())
	}
	text, _ := briefd.UnwrapBriefing(spliced[2].Content.Text)
	fmt.Println(text)
	// Output:
	// m1 system false
	// m2 user false
	// briefing:m5 user true
	// m5 assistant false
	// Ran go test ./...: TestParse fails (m4).
}

// ExampleParseHistory reads a history file, or a bare array of messages,
// and checks it.
func ExampleParseHistory() {
	data := []byte(`{"id": "conv-1", "messages": [
		{"id": "m1", "role": "user", "content": "List the files."},
		{"id": "m2", "role": "assistant", "content": null, "tool_calls": [
			{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
		{"id": "m3", "role": "tool", "tool_call_id": "c1", "content": "go.mod\nmain.go"}]}`)
	h, err := briefd.ParseHistory(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.ID, len(h.Messages), briefd.Validate(h.Messages, briefd.Limits{}))

	bad := append(h.Messages[:1:1], h.Messages[2])
	fmt.Println(briefd.Validate(bad, briefd.Limits{}))
	// Output:
	// conv-1 3 <nil>
	// invalid history: message "m3" (#1): tool result for call "c1", which no assistant message makes
}

// ExampleValidator checks a history turn by turn, at the cost of each
// turn, and splices it checking only what the splice adds.
func ExampleValidator() {
	v := briefd.NewValidator(briefd.Limits{})
	history := []briefd.Message{
		{ID: "m1", Role: briefd.RoleSystem, Content: briefd.Text("You are a coding agent.")},
		{ID: "m2", Role: briefd.RoleUser, Content: briefd.Text("Fix the failing test.")},
	}
	fmt.Println(v.Add(history...))
	turn := []briefd.Message{
		{ID: "m3", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{
			{ID: "c1", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"go test ./..."}`}}}},
		{ID: "m4", Role: briefd.RoleTool, ToolCallID: "c1", Content: briefd.Text("FAIL: TestParse")},
		{ID: "m5", Role: briefd.RoleAssistant, Content: briefd.Text("The parser rejects empty input; fixing it.")},
	}
	fmt.Println(v.Add(turn...)) // checks the turn against what came before
	history = append(history, turn...)

	b := &briefd.Briefing{ConversationID: "c1", BoundaryID: "m5", Text: "Ran go test ./...: TestParse fails (m4)."}
	spliced, err := v.Splice(history, b)
	fmt.Println(len(history), len(spliced), err)

	// A turn that breaks the rules is refused, with where and why.
	fmt.Println(v.Add(briefd.Message{ID: "m6", Role: briefd.RoleTool, ToolCallID: "c1"}))
	// Output:
	// <nil>
	// <nil>
	// 5 4 <nil>
	// invalid history: message "m6" (#5): tool result for call "c1", which is already answered or not from the assistant message just before
}
