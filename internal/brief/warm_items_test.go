package brief

import (
	"context"
	"strings"
	"testing"
)

// TestNoteMemosKept checks that every note keeps what its line reads
// (noteLine), those a message's run ranks out included: the memo is by
// index, in order, and a gap left at the first note ranked out would
// have every later note weighed again, against every note of its run, at
// every Write. Writing the same span again does not grow the Warm.
func TestNoteMemosKept(t *testing.T) {
	var b spanBuilder
	long := "The root cause is that `template_changed` returns `True` for `cwd`. " +
		"So `template_changed` must be returning `True` for `views.py`. " +
		"Which means `file_path.suffix` is not `.py` in `StatReloader`. " +
		"I should change `get_template_directories` because `DIRS` holds ''. " +
		"The fix is to filter empty strings in `django/template/autoreload.py`."
	b.user("fix the reloader")
	b.bash("Look.", "cat django/template/autoreload.py", rc(0, "def template_changed(sender, file_path, **kwargs):\n    return True"))
	b.bash("The root cause must be in the reloader's handling of `DIRS`, which means its tests matter.", "cat tests/test_autoreload.py", rc(0, "def test_changed():\n    assert template_changed(None, 'x')"))
	b.say(long)
	b.bash("Run.", "python -m pytest tests/test_autoreload.py", rc(1, "FAILED tests/test_autoreload.py::test_changed\n1 failed in 0.1s"))
	b.say("The root cause is that `reset_loaders` never runs for `DIRS`. " +
		"So `watch_for_template_changes` must be registering `cwd` in `StatReloader`. " +
		"Which means `to_path` turns '' into `Path.cwd` in `get_template_directories`. " +
		"I should change `to_path` because '' is not a directory. " +
		"The fix is to skip empty entries in `django/utils/autoreload.py`.")
	w := &Warm{}
	in := Input{Span: b.msgs, BudgetTokens: 2000, CountTokens: counter(t), Warm: w, CountSplits: true}
	if _, err := Write(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	m := w.m
	if len(m.notes) < 8 {
		t.Fatalf("%d notes: the span should yield runs longer than three", len(m.notes))
	}
	if len(m.notesAt) != len(m.notes) {
		t.Fatalf("%d of %d notes keep their line's memo", len(m.notesAt), len(m.notes))
	}
	// The record's entries are kept for the Write after (turnEntries):
	// from the second Write on the Warm does not grow.
	if _, err := Write(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		bytes := w.Bytes()
		if _, err := Write(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if w.Bytes() > bytes {
			t.Fatalf("writing the same span again took the Warm from %d to %d bytes", bytes, w.Bytes())
		}
	}
}

// TestGroupLineRecordsPending checks that a step group's line, kept
// between Writes, is written again when a record it names is filed in
// RECORDS (its line then names the record instead of telling it); a line
// that names no record waits for none, so the records growing does not
// rewrite every line.
func TestGroupLineRecordsPending(t *testing.T) {
	var b spanBuilder
	b.user("change reservation ABC123")
	b.step("Look.", "get_reservation_details", `{"reservation_id":"ABC123"}`, `{"reservation_id": "ABC123", "status": "confirmed", "cabin": "economy"}`)
	b.bash("List.", "ls", rc(0, "a.txt"))
	w := &Warm{}
	in := Input{Span: b.msgs, BudgetTokens: 2000, CountTokens: counter(t), Warm: w, CountSplits: true}
	if _, err := Write(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	m := w.m
	rec := m.records["ABC123"]
	if rec == nil {
		t.Fatal("the lookup's record is not in RECORDS")
	}
	groups := m.stepGroups(m.steps)
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2", len(groups))
	}
	lookup, ls := groups[0], groups[1]
	// As if the record were not filed yet (a lookup that failed): the
	// line tells the record itself.
	delete(m.records, "ABC123")
	m.lines, lookup.line, ls.line = nil, nil, nil
	before := m.groupLine(lookup).texts[levelFull]
	lsLine := m.groupLine(ls)
	if strings.Contains(before, "in RECORDS") || len(m.groupLine(lookup).pending) != 1 {
		t.Fatalf("line without the record: %q, pending %v", before, m.groupLine(lookup).pending)
	}
	m.records["ABC123"] = rec
	if after := m.groupLine(lookup).texts[levelFull]; !strings.Contains(after, "record ABC123") || !strings.Contains(after, "in RECORDS") {
		t.Errorf("line after the record is filed: %q (before: %q)", after, before)
	}
	if lsLine.pending != nil {
		t.Errorf("a line that names no record waits for records %v", lsLine.pending)
	}
}
