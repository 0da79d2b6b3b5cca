package brief

import (
	"strings"
	"testing"
)

// At the least detail the undone changes are counted, each undo with how
// it undid them: a revert says the file went back to what was committed,
// a pattern what the changes were.
func TestUndoneCount(t *testing.T) {
	f := &fileState{path: "a.py", changes: []change{{id: "m0077", what: "`x` → `y`"}}}
	debug := undo{id: "m0063", what: "deleted each line matching `DEBUG`", changes: []change{{id: "m0045", what: "inserted a"}, {id: "m0049", what: "inserted b"}}}
	sys := undo{id: "m0063", what: "deleted each line matching `import sys`", changes: []change{{id: "m0051", what: "inserted c"}}}
	checkout := undo{id: "m0075", what: "reverted with git checkout", changes: []change{{id: "m0069", what: "rewritten"}}}
	reverse := undo{id: "m0071", what: "the reverse edit", changes: []change{{id: "m0070", what: "`a` → `b`"}}}
	for _, tc := range []struct {
		undos []undo
		want  string
	}{
		{[]undo{debug, sys, checkout}, "`x` → `y` [m0077]; earlier, 3 insertions matching `DEBUG` or `import sys` deleted again [m0063], 1 change undone by git checkout [m0075]"},
		{[]undo{checkout}, "`x` → `y` [m0077]; 1 earlier change undone by git checkout [m0075]"},
		{[]undo{reverse}, "`x` → `y` [m0077]; 1 earlier change undone [m0071]"},
		{[]undo{reverse, checkout}, "`x` → `y` [m0077]; earlier, 1 change undone [m0071], 1 change undone by git checkout [m0075]"},
		{[]undo{debug, reverse, reverse, checkout}, "`x` → `y` [m0077]; 5 earlier changes undone [m0063–m0075], the last time by git checkout"},
	} {
		f.undone = tc.undos
		if got := fileText(f, levelMin, false); got != tc.want {
			t.Errorf("fileText:\n got %q\nwant %q", got, tc.want)
		}
	}
	// At the full level each undo says how.
	f.undone = []undo{debug}
	if got := fileText(f, levelFull, false); !strings.Contains(got, "undone by deleting the lines matching `DEBUG` [m0063]") {
		t.Errorf("full level: %q", got)
	}
	// When listing the undos would run past the line's room, they are
	// counted as at the least detail, not cut off (the git checkout last).
	long := strings.Repeat("x", 100)
	f.changes = []change{{id: "m0077", what: "`" + long + "` → `y`"}}
	many := undo{id: "m0063", what: "deleted each line matching `DEBUG`", changes: []change{{id: "m0045", what: "inserted " + long}, {id: "m0049", what: "inserted " + long}}}
	f.undone = []undo{many, sys, checkout}
	if got := fileText(f, levelShort, false); !strings.Contains(got, "1 change undone by git checkout [m0075]") || strings.HasSuffix(got, "…") {
		t.Errorf("short level: %q", got)
	}
}

// A hedged sentence ("Or maybe the issue is …") is a guess: it does not
// weigh as the finding the same words make without the hedge.
func TestNoteWeightHedged(t *testing.T) {
	found := "The issue is that `template_changed` returns True for the project root."
	guess := "Or maybe the issue is that `template_changed` returns True for the project root."
	if noteWeight(guess) >= noteWeight(found)-1 {
		t.Errorf("noteWeight(guess) = %v, noteWeight(finding) = %v: the hedge should cost the decision's weight", noteWeight(guess), noteWeight(found))
	}
}

// An insertion keeps room for its code at every level: the anchor alone
// takes half of the least detail's room.
func TestInsertionKeepsItsCode(t *testing.T) {
	c := change{id: "m0039", what: "inserted before line 351: `if isinstance(data, bytes): ⏎ data = decode_ascii(data)`"}
	for level := range levels {
		if got := changeList([]change{c}, level); !strings.Contains(got, "data = decode_ascii(data)`") {
			t.Errorf("level %d: %q", level, got)
		}
	}
}
