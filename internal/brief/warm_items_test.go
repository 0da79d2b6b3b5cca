package brief

import (
	"context"
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
