package briefd

import (
	"errors"
	"strings"
	"testing"
)

func TestControlValidate(t *testing.T) {
	ok := []Control{
		{},
		{Mode: ModeNow, Focus: "the migration"},
		{Mode: ModeNever},
		{Mode: ModeAuto, TriggerFraction: 0.5, KeepTokens: 4000, Pin: []string{"m1", "m7"}},
		{TriggerFraction: 1},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := map[string]Control{
		"mode":              {Mode: "later"},
		"trigger_fraction":  {TriggerFraction: 1.5},
		"trigger_fraction ": {TriggerFraction: -0.1},
		"keep_tokens":       {KeepTokens: -1},
		"pin[1] is empty":   {Pin: []string{"m1", ""}},
		"pinned ids":        {Pin: make([]string, MaxPins+1)},
		"focus is":          {Focus: strings.Repeat("x", MaxFocusBytes+1)},
		"UTF-8":             {Focus: "\xff"},
	}
	for want, c := range bad {
		err := c.Validate()
		if !errors.Is(err, ErrInvalidControl) || !strings.Contains(err.Error(), strings.TrimSpace(want)) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestControlMerge(t *testing.T) {
	base := Control{TriggerFraction: 0.5, Pin: []string{"a"}, Focus: "x"}
	got := base.Merge(Control{Mode: ModeNow, Pin: []string{"b", "a"}, KeepTokens: 100})
	want := Control{Mode: ModeNow, TriggerFraction: 0.5, KeepTokens: 100, Pin: []string{"a", "b"}, Focus: "x"}
	if !got.Equal(want) {
		t.Fatalf("merge: %+v, want %+v", got, want)
	}
	if len(base.Pin) != 1 {
		t.Fatalf("merge changed its receiver: %v", base.Pin)
	}
	if !(Control{Mode: ModeAuto}).IsZero() || (Control{Focus: "f"}).IsZero() {
		t.Fatal("IsZero")
	}
	if !(Control{}).Equal(Control{Mode: ModeAuto}) {
		t.Fatal("the empty mode is auto")
	}
}

// A message pinned by id through the briefing's PinnedIDs stays before the
// briefing, in order, as the pinned head does.
func TestSplicePinnedIDs(t *testing.T) {
	h := []Message{
		{ID: "s", Role: RoleSystem, Content: Text("sys")},
		{ID: "u1", Role: RoleUser, Content: Text("task")},
		{ID: "a1", Role: RoleAssistant, Content: Text("plan")},
		{ID: "u2", Role: RoleUser, Content: Text("the schema is v3, remember it")},
		{ID: "a2", Role: RoleAssistant, Content: Text("ok")},
		{ID: "u3", Role: RoleUser, Content: Text("go on")},
	}
	b := &Briefing{ConversationID: "c", BoundaryID: "u3", Text: "brief", PinnedIDs: []string{"u2"}}
	out, err := Splice(h, b)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range out {
		ids = append(ids, m.ID)
	}
	if got, want := strings.Join(ids, ","), "s,u1,u2,briefing:u3,u3"; got != want {
		t.Fatalf("spliced %s, want %s", got, want)
	}
}
