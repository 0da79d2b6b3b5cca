package compact

import (
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

func TestErrorLinesCollapse(t *testing.T) {
	l := &Ledger{Errors: []ErrorEntry{
		{Text: "Error: flight HAT030 not available", IDs: []string{"m0025", "m0026"}},
		{Text: "ModuleNotFoundError: No module named 'yaml'", IDs: []string{"m0027"}, Resolved: true, ResolvedBy: []string{"m0031"}},
		{Text: "Error: flight HAT030 not available", IDs: []string{"m0029", "m0030"}},
		{Text: "Error: flight HAT030 not available", IDs: []string{"m0037"}},
	}}
	got := errorLines(l)
	want := []string{
		"- (m0025, m0029, m0037; 3×) Error: flight HAT030 not available → no evidence of resolution",
		"- (m0027) ModuleNotFoundError: No module named 'yaml' → resolved: the same step later succeeded (m0031)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAddCovered(t *testing.T) {
	set := map[string]bool{}
	addCovered(set, "django/db/models.py")
	addCovered(set, "2024-05-19")
	for _, v := range []string{"django/db/models.py", "models.py", "db/models.py", "django/db", "django", "2024", "05-19"} {
		if !set[v] {
			t.Errorf("%q not covered", v)
		}
	}
	if set["models"+"x"] || set["db/mod"] {
		t.Error("covers a part that does not end at a separator")
	}
}

func TestIdentLinesGrouped(t *testing.T) {
	l := &Ledger{Identifiers: []IdentEntry{
		{Value: "HAT174", IDs: []string{"m0006", "m0012"}},
		{Value: "gift_card_4643416", IDs: []string{"m0006"}},
		{Value: "2024-05-13", IDs: []string{"m0012"}},
		{Value: "left_out_1", IDs: []string{"m0013"}},
	}}
	got := identLines(l, []int{2, 1, 0})
	want := []string{"", "## Identifiers (verbatim, after the id of the message they first appear in)",
		"m0006: gift_card_4643416, HAT174", "m0012: 2024-05-13", "[1 other identifiers are quoted above or were left out for size]"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s", strings.Join(got, "\n"))
	}
}

// A span whose last step is on the timeline names it in the state instead
// of repeating its marker; repeated user texts are carried once with ids.
func TestRenderStateAndRepeatedUsers(t *testing.T) {
	count := exactCount(t)
	span := []briefd.Message{
		{ID: "u1", Role: briefd.RoleUser, Content: briefd.Text("Please format your action in triple backticks.")},
		{ID: "a1", Role: briefd.RoleAssistant, Content: briefd.Text("THOUGHT: read the module first to see where values are converted."),
			ToolCalls: []briefd.ToolCall{{ID: "c1", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"cat src/app/models.py"}`}}}},
		{ID: "t1", Role: briefd.RoleTool, ToolCallID: "c1", Content: briefd.Text("<returncode>0</returncode>\n<output>\nclass Model: pass\n</output>")},
		{ID: "u2", Role: briefd.RoleUser, Content: briefd.Text("Please format your action in triple backticks.")},
		{ID: "a2", Role: briefd.RoleAssistant, Content: briefd.Text("THOUGHT: now run the tests."),
			ToolCalls: []briefd.ToolCall{{ID: "c2", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"pytest tests/test_models.py -x"}`}}}},
		{ID: "t2", Role: briefd.RoleTool, ToolCallID: "c2", Content: briefd.Text("<returncode>1</returncode>\n<output>\nE   AssertionError: 3 != 4\nFAILED tests/test_models.py::test_x\n</output>")},
	}
	d, err := Brief(BriefInput{Span: span, BudgetTokens: 2000, CountTokens: count})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"[u1, u2] (sent 2×) Please format your action in triple backticks.",
		"a1 [read: src/app/models.py → ✓]",
		"a2 [shell: pytest tests/test_models.py -x → exit 1 ✗",
		"- src/app/models.py: read (a1)",
		"Last step: a2, the last line of What was done.",
		"1 error(s) without evidence of resolution (see Errors).",
	} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("briefing lacks %q:\n%s", want, d.Text)
		}
	}
	if strings.Count(d.Text, "Please format your action") != 1 {
		t.Errorf("repeated user text not carried once:\n%s", d.Text)
	}
}

func TestCondensedSummaryNamesTools(t *testing.T) {
	steps := []TimelineEntry{
		{Marker: "[get_reservation_details: reservation_id=Q0ZF0J → …]", Kind: "tool", IDs: []string{"m0005"}},
		{Marker: "[get_reservation_details: reservation_id=OBUT9V → …]", Kind: "tool", IDs: []string{"m0007"}},
		{Marker: "[said: \"Here are the flights\"]", Kind: "said", IDs: []string{"m0009"}},
		{Marker: "[shell: ls → ✓]", Kind: "shell", IDs: []string{"m0011"}},
	}
	got := condensedSummary(steps)
	want := "[4 earlier steps condensed: 2 get_reservation_details, 1 said, 1 shell; m0005–m0011]"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if markerTool("[not a tool name: x]") != "" || markerTool("plain") != "" {
		t.Fatal("markerTool accepted a marker without a tool name")
	}
}
