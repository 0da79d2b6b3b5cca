package eval

import (
	"math"
	"testing"

	"github.com/briefd/briefd"
)

func call(id string) briefd.ToolCall {
	return briefd.ToolCall{ID: id, Type: "function", Function: briefd.FunctionCall{Name: "f", Arguments: "{}"}}
}

func TestCutIndex(t *testing.T) {
	sys := briefd.Message{ID: "s", Role: briefd.RoleSystem}
	user := briefd.Message{ID: "u", Role: briefd.RoleUser, Content: briefd.Text("go")}
	asst := func(id string, calls ...string) briefd.Message {
		m := briefd.Message{ID: id, Role: briefd.RoleAssistant}
		for _, c := range calls {
			m.ToolCalls = append(m.ToolCalls, call(c))
		}
		return m
	}
	tool := func(id, c string) briefd.Message {
		return briefd.Message{ID: id, Role: briefd.RoleTool, ToolCallID: c}
	}
	msgs := []briefd.Message{sys, user, asst("a1", "c1", "c2"), tool("t1", "c1"), tool("t2", "c2"),
		asst("a2"), {ID: "u2", Role: briefd.RoleUser}, asst("a3", "c3"), tool("t3", "c3"), asst("a4")}
	tests := []struct {
		frac float64
		want int
	}{
		// int(10*0.7) = 7 ends on the user u2: back to 6 (after a2).
		{0.7, 6},
		// 8 leaves c3 unanswered: back past u2 to 6.
		{0.8, 6},
		{0.9, 9},
		// 4 and 3 leave c2 or c1 pending: down to 2 (the floor of the loop).
		{0.4, 2},
		// max(4, ...) applies before the walk back.
		{0.1, 2},
		{0.99, 9},
	}
	for _, tt := range tests {
		got, ok := cutIndex(msgs, tt.frac)
		if got != tt.want || !ok {
			t.Errorf("cutIndex(%v) = %d, %v; want %d", tt.frac, got, ok, tt.want)
		}
	}
	// Python raises on msgs[n-1] past the end of a short history.
	if _, ok := cutIndex([]briefd.Message{sys, user, asst("a")}, 0.7); ok {
		t.Error("a 3-message history froze; the Python raises")
	}
}

func TestPairsOK(t *testing.T) {
	a := briefd.Message{ID: "a", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{call("c1")}}
	r := briefd.Message{ID: "r", Role: briefd.RoleTool, ToolCallID: "c1"}
	u := briefd.Message{ID: "u", Role: briefd.RoleUser}
	plain := briefd.Message{ID: "p", Role: briefd.RoleAssistant}
	for _, tt := range []struct {
		name string
		msgs []briefd.Message
		want bool
	}{
		{"paired", []briefd.Message{u, a, r, plain}, true},
		{"pending at the end", []briefd.Message{u, a}, false},
		{"orphan result", []briefd.Message{u, r}, false},
		{"assistant while pending", []briefd.Message{a, plain, r}, false},
		// The Python lets a user message through while a call is pending.
		{"user while pending", []briefd.Message{a, u, r}, true},
		{"empty", nil, true},
	} {
		if got := pairsOK(tt.msgs); got != tt.want {
			t.Errorf("%s: pairsOK = %v", tt.name, got)
		}
	}
}

func TestPySlices(t *testing.T) {
	s := "héllo wörld"
	for _, tt := range []struct{ got, want string }{
		{pyHead(s, 2), "hé"}, {pyHead(s, 0), ""}, {pyHead(s, 100), s},
		{pySuffix(s, 3), "rld"}, {pySuffix(s, 5), "wörld"}, {pySuffix(s, 100), s},
		// s[-0:] is the whole string in Python.
		{pySuffix(s, 0), s},
		{pyStrip("\u00a0\u2003 hi \x1c\n"), "hi"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if pyLen(s) != 11 {
		t.Errorf("pyLen = %d", pyLen(s))
	}
}

func TestMsgTextAndSerialize(t *testing.T) {
	msgs := []briefd.Message{
		{ID: "u", Role: briefd.RoleUser, Content: briefd.Text("fix it")},
		{ID: "a", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{
			{ID: "c1", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"cmd":"ls"}`}},
			{ID: "c2", Function: briefd.FunctionCall{Name: "read", Arguments: `{}`}}}},
	}
	if got, want := msgText(&msgs[1]), "\nbash {\"cmd\":\"ls\"}\nread {}"; got != want {
		t.Errorf("msgText = %q, want %q", got, want)
	}
	if got, want := serialize(msgs), "<user> fix it\n<assistant> \nbash {\"cmd\":\"ls\"}\nread {}"; got != want {
		t.Errorf("serialize = %q, want %q", got, want)
	}
	if got, want := joinText(msgs), "fix it\n\nbash {\"cmd\":\"ls\"}\nread {}"; got != want {
		t.Errorf("joinText = %q", got)
	}
}

func TestMeanIsExact(t *testing.T) {
	// A naive float sum gives 0.30000000000000004 / 3 ...; statistics.mean
	// sums exactly and rounds once.
	vals := []float64{0.1, 0.2, 0.3}
	if got := mean(vals); got != 0.2 {
		t.Errorf("mean = %v, want 0.2 (statistics.mean)", got)
	}
	if got := median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("median = %v", got)
	}
	if got := mean([]float64{1e308, 1e308, -1e308}); math.IsInf(got, 0) {
		t.Errorf("mean overflowed: %v", got)
	}
}

func TestMiddleTruncate(t *testing.T) {
	ser := ""
	for i := 0; i < 500; i++ {
		ser += "abcdefghij"
	}
	got := middleTruncate(ser, 300)
	if pyLen(got) > 300 || pyLen(got) < 299 {
		t.Errorf("length %d, want about 300", pyLen(got))
	}
	if got[:10] != ser[:10] || got[len(got)-10:] != ser[len(ser)-10:] {
		t.Error("the ends are not kept")
	}
	if middleTruncate("short", 300) != "short" {
		t.Error("a span shorter than the budget is cut")
	}
}
