package briefd

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// TestSpliceIntoReuses: an agent's loop hands back the result of its
// previous turn; SpliceInto writes the next result into its array (no new
// array while it has room) and gives what Splice gives, also when the
// agent changed the given-up result in place; a dst that shares memory
// with the history is never written.
func TestSpliceIntoReuses(t *testing.T) {
	h := make([]Message, 0, 64)
	h = append(h,
		Message{ID: "s", Role: RoleSystem, Content: Text("You are an agent.")},
		Message{ID: "u", Role: RoleUser, Content: Text("Fix the parser.")})
	for i := range 10 {
		h = append(h, turnOf(i)...)
	}
	b := &Briefing{BoundaryID: h[8].ID, Text: "the earlier turns <b>&amp;</b>", Position: 8}
	v := NewValidator(Limits{})
	if err := v.Add(h...); err != nil {
		t.Fatal(err)
	}
	var prev []Message
	for i := 10; i < 20; i++ {
		want, err := Splice(h, b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.SpliceInto(prev, h, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("turn %d: SpliceInto differs from Splice", i)
		}
		if i > 10 && unsafe.SliceData(got) != unsafe.SliceData(prev) {
			t.Errorf("turn %d: a new array although the given-up result had room (cap %d, len %d)", i, cap(prev), len(got))
		}
		if i == 10 && cap(got) == len(got) {
			t.Error("a new array has no room for the turns to come")
		}
		if i%3 == 0 {
			// The agent changed what it was given; the next result must
			// not carry it.
			got[len(got)-1].Content = Text("redacted by the agent")
		}
		prev = got
		next := turnOf(i)
		h = append(h, next...)
		if err := v.Add(next...); err != nil {
			t.Fatal(err)
		}
	}

	// The history's own array is never written, even with room.
	before := slices.Clone(h)
	got, err := v.SpliceInto(h[:0], h, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, before) {
		t.Fatal("SpliceInto wrote into the history")
	}
	if want, _ := Splice(h, b); !reflect.DeepEqual(got, want) {
		t.Fatal("SpliceInto into the history's array differs from Splice")
	}
}

func turnOf(i int) []Message {
	id := string(rune('a'+i%26)) + string(rune('0'+i/26))
	return []Message{
		{ID: "a" + id, Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c" + id, Type: "function", Function: FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}}}},
		{ID: "t" + id, Role: RoleTool, ToolCallID: "c" + id, Content: Text("file.go")},
	}
}

// TestIdenticalCoversMessage guards identical, which compares Message
// field by field: a new field must be compared there too, or SpliceInto
// could keep a stale message.
func TestIdenticalCoversMessage(t *testing.T) {
	if n := reflect.TypeFor[Message]().NumField(); n != 8 {
		t.Errorf("Message has %d fields; identical compares 8: update it", n)
	}
	if n := reflect.TypeFor[Content]().NumField(); n != 2 {
		t.Errorf("Content has %d fields; identical compares 2: update it", n)
	}
	m := Message{ID: "x", Role: RoleUser, Content: Text("hi"), Metadata: map[string]string{"k": "v"}}
	if !identical(&m, &m) {
		t.Error("a message is not identical to itself")
	}
	for _, change := range []func(*Message){
		func(c *Message) { c.ID = "y" },
		func(c *Message) { c.Role = RoleSystem },
		func(c *Message) { c.Content = Text("ho") },
		func(c *Message) { c.Content.Parts = []ContentPart{{Type: "text", Text: "hi"}} },
		func(c *Message) { c.Name = "n" },
		func(c *Message) { c.ToolCalls = []ToolCall{{ID: "c"}} },
		func(c *Message) { c.ToolCallID = "c" },
		func(c *Message) { c.Pinned = true },
		func(c *Message) { c.Metadata = map[string]string{"k": "v"} },
	} {
		c := m
		change(&c)
		if identical(&m, &c) {
			t.Errorf("a changed message is identical: %+v", c)
		}
	}
}
