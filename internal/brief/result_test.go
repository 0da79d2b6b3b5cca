package brief

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// A script's conclusion near the end of its output is found; pytest's
// error lines and a lone status word are not conclusions.
func TestVerdictLine(t *testing.T) {
	for _, tc := range []struct {
		out, want string
	}{
		{"Migrations for 'x':\n  - Create model A\n\nISSUE NOT REPRODUCED: Found 'x.Outer.Inner'\n", "ISSUE NOT REPRODUCED: Found 'x.Outer.Inner'"},
		{"Original: <U3\nSUCCESS: coords preserved as unicode\n", "SUCCESS: coords preserved as unicode"},
		{"Assigned 257\n/testbed/check.py:7: DeprecationWarning: NumPy will stop allowing conversion\n  xa[xa > 255] = 257\n", "/testbed/check.py:7: DeprecationWarning: NumPy will stop allowing conversion"},
		{"E   AssertionError: assert 1 == 2\nFAILED test_x.py::test_a\n", ""}, // pytest's summary: read as a test run
		{"Testing the fix\nDone.\nPASSED\n", "PASSED"},
		// Log lines, SQL and constants are not conclusions.
		{"Testing the fix\nDEBUG: cache size = 3\nDone.\n", ""},
		{"INFO:     Application startup complete.\n", ""},
		{" * Running on http://127.0.0.1:5000\nWARNING: This is a development server.\n", ""},
		{"CREATE TABLE foo (id integer);\n", ""},
		{"MAX_RETRIES = 3\nTODO: later\n", ""},
		{"ISSUE REPRODUCED\na\nb\nc\nd\n", ""}, // too far from the end
	} {
		if got := verdictLine(splitLines(tc.out)); got != tc.want {
			t.Errorf("verdictLine(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}

// A result cut for room keeps its last line, where a script concludes.
func TestClipResult(t *testing.T) {
	res := "… template_changed result for /testbed/some_app/views.py: None | template_changed result for /testbed/some_app/info.txt: True … ISSUE REPRODUCED: BASE_DIR is in template directories (6 lines)"
	got := clipResult(res, 160)
	if len(got) > 160+len("…") { // as clip: max bytes and the ellipsis
		t.Fatalf("clipResult: %d bytes > 163: %q", len(got), got)
	}
	if want := " … ISSUE REPRODUCED: BASE_DIR is in template directories (6 lines)"; got[len(got)-len(want):] != want {
		t.Errorf("clipResult = %q: the conclusion is cut", got)
	}
	if short := "ok, no output"; clipResult(short, 160) != short {
		t.Errorf("a short result is changed")
	}
}

// A file view's outline gives the values the file sets (a module's
// constants, an object's settings) before its definitions; a function's
// locals are left out.
func TestOutlineConstants(t *testing.T) {
	lines := []string{
		"5:FLAG = b'HTB{--REDACTED--}'",
		"8:class TimeCapsule():",
		"10:    def __init__(self, msg):",
		"11:        self.msg = msg",
		"12:        self.bit_size = 1024",
		"13:        self.e = 5",
		"15:    def _get_new_pubkey(self):",
		"16:        found = False",
		"17:        self.maxDiff = None",
	}
	want := "sets FLAG = b'HTB{--REDACTED--}', self.bit_size = 1024, self.e = 5; defines class TimeCapsule (l.8), def __init__ (l.10), def _get_new_pubkey (l.15)"
	if got := outline(lines); got != want {
		t.Errorf("outline:\n got %q\nwant %q", got, want)
	}
}

// A short output told at the least detail keeps the conclusion it ends
// with after the cut (mini-swe-agent-3's "FAILURE: Query returned False"
// was cut away behind three lines of debug prints).
func TestShortOutputKeepsVerdict(t *testing.T) {
	lines := []string{
		"Stored value in DB: 2017-07-06 23:50:00",
		"DEBUG: dt=2017-07-06 23:50:00, tzname=Europe/Paris",
		"DEBUG: typecasted dt=2017-07-06 23:50:00+00:00, naive=False",
		"Exists: False",
		"FAILURE: Query returned False",
	}
	s := &step{f: &stepFacts{out: output{body: strings.Join(lines, "\n"), short: lines, lines: lines}}}
	got := outputText(s, levelMin)
	if !strings.HasPrefix(got, "Stored value in DB") || !strings.HasSuffix(got, "… FAILURE: Query returned False") || len(got) > 120+len("…") {
		t.Errorf("least detail: %q", got)
	}
	if full := outputText(s, levelFull); full != strings.Join(lines, " | ") {
		t.Errorf("full detail: %q, want the output whole", full)
	}
	// A verdict other lines follow is not moved past them.
	after := append(slices.Clone(lines[:len(lines)-1]), "FAILURE: Query returned False", "Exists: False", "done")
	s = &step{f: &stepFacts{out: output{body: strings.Join(after, "\n"), short: after, lines: after}}}
	if got := outputText(s, levelMin); got != clip(strings.Join(after, " | "), 120) {
		t.Errorf("a verdict followed by other lines: %q", got)
	}
}

// The review's cases: a cut output is not "no match" and its counts are
// lower bounds; a line number is not a drive letter; a find of
// directories lists paths; a refusal's quoted "line 2" gives no line.
func TestSearchEdges(t *testing.T) {
	text := func(label string, lines ...string) (string, bool) {
		s := &step{f: &stepFacts{call: call{kind: kindSearch, label: label}, out: output{lines: lines}}}
		return searchText(s, levelShort), readNoMatch(s)
	}
	if got, none := text(`grep -r "tokenizer_class" .`, "Binary file a.pyc matches", "[… 84000 characters elided …]", "Binary file b.pyc matches"); none || !strings.Contains(got, "it was cut") {
		t.Errorf("a cut output with no hit shown: %q, no match %v", got, none)
	}
	if got, _ := text(`grep -r "x" src`, "src/a.py:x = 1", "[… 9000 characters elided …]", "src/b.py:x = 2"); !strings.HasPrefix(got, "2+ hits") {
		t.Errorf("a few hits of a cut output: %q", got)
	}
	if got, _ := text("find tests -type d", "tests", "tests/unit", "tests/e2e", "tests/data", "tests/tmp"); !strings.HasPrefix(got, "5 paths: tests, tests/unit") {
		t.Errorf("find of directories: %q", got)
	}
	for h, want := range map[string]string{"1://go:build linux": "", "7:/build": "", "C:/src/a.py:12: x": "C:/src/a.py", "src/a.py:3: y": "src/a.py"} {
		if got := hitPath(h); got != want {
			t.Errorf("hitPath(%q) = %q, want %q", h, got, want)
		}
	}
	for line, want := range map[string]bool{
		"No replacement was performed. Multiple occurrences of old_str `x` in lines [3, 9]. Please ensure it is unique.": true,
		"No replacement was performed, old_str `print('line 2')` did not appear verbatim in /w/a.py.":                    false,
		"No replacement was performed, old_str `a` did not appear verbatim in /w/sklearn/pipeline.py.":                   false,
	} {
		if got := saysLineRe.MatchString(attemptShape(line)); got != want {
			t.Errorf("refusal %q gives a line: %v, want %v", line, got, want)
		}
	}
}

// A grep of one file whose every hit is what an earlier change of it put
// there checks that the edit landed (the file's line tells the change);
// one that finds other lines too, or runs before the change, is a search.
func TestChecksChange(t *testing.T) {
	var b spanBuilder
	b.bash("Look first.", `grep "if shape else 1" sympy/dense.py`, rc(1, "")).
		bash("Fix it.", "sed -i 's/if shape else 0/if shape else 1/g' sympy/dense.py", rc(0, "")).
		bash("Check.", `grep "if shape else 1" sympy/dense.py`, rc(0, "    loop = reduce(mul, shape) if shape else 1\n    self._loop_size = reduce(mul, shape) if shape else 1")).
		bash("Where else?", `grep -n "shape else" sympy/dense.py`, rc(0, "12:    loop = reduce(mul, shape) if shape else 1\n40:    n = len(shape) if shape else None"))
	m := build(nil, b.msgs, nil, nil)
	if len(m.steps) != 4 {
		t.Fatalf("%d steps, want 4", len(m.steps))
	}
	for i, want := range []bool{false, false, true, false} {
		if got := m.checksChange(m.steps[i]); got != want {
			t.Errorf("step %d (%s): checksChange = %v, want %v", i, m.steps[i].f.call.label, got, want)
		}
	}
	// The file's line names the check and how many lines it found, and
	// the check has no step line of its own.
	d := write(t, b.msgs, 2000)
	mustContain(t, d.Text, "- sympy/dense.py: every `if shape else 0` → `if shape else 1` [m0005]; grep [m0007] finds the new text on 2 lines\n")
	mustNotContain(t, d.Text, "- [m0007] grep")
	// A pattern the old text held too finds lines the change never made;
	// and after a later change of the file, the check's hits may be text
	// since replaced: a step again.
	b.bash("Drop numpy's alias.", "sed -i 's/np.float(/float(/g' sympy/dense.py", rc(0, "")).
		bash("Where is float( now?", `grep -n "float(" sympy/dense.py`, rc(0, "3:    x = float(a)\n9:    y = float(b)"))
	m = build(nil, b.msgs, nil, nil)
	for i, want := range []bool{false, false, false, false, false, false} {
		if got := m.checksChange(m.steps[i]); got != want {
			t.Errorf("step %d (%s): checksChange = %v, want %v", i, m.steps[i].f.call.label, got, want)
		}
	}
	d = write(t, b.msgs, 2000)
	mustContain(t, d.Text, "- [m0007] grep \"if shape else 1\" sympy/dense.py →")
	// A change of one line, and a numbered grep whose hits include another
	// line: not a check of it.
	var c spanBuilder
	c.bash("Fix line 917.", "sed -i '917s/_default_manager/_base_manager/' related.py", rc(0, "")).
		bash("Check.", `grep -n "_base_manager" related.py`, rc(0, "412:        qs = self._base_manager.all()\n917:        qs = self.remote_field.model._base_manager.using(using)"))
	if m := build(nil, c.msgs, nil, nil); m.checksChange(m.steps[1]) {
		t.Error("a hit on line 412 checks the change of line 917")
	}
	c.bash("Check again.", `grep -n "_base_manager" related.py | grep 917`, rc(0, "917:        qs = self.remote_field.model._base_manager.using(using)"))
	d = write(t, c.msgs, 2000)
	mustContain(t, d.Text, "line 917: `_default_manager` → `_base_manager` [m0003]; grep [m0007] finds the new text at line 917\n")
	// Once the change is undone, the grep checked nothing that stands: it
	// is a step again, told the same by a Write that read it before the
	// undo (the memo) and by one that reads it after.
	var w Warm
	in := Input{Span: b.msgs, BudgetTokens: 2000, CountTokens: counter(t), Warm: &w}
	if _, err := Write(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	b.bash("Undo.", "git checkout sympy/dense.py", rc(0, ""))
	in.Span = b.msgs
	warm, err := Write(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	fresh := write(t, b.msgs, 2000)
	if warm.Text != fresh.Text {
		t.Errorf("warm and fresh differ:\n%s\n---\n%s", warm.Text, fresh.Text)
	}
	mustContain(t, fresh.Text, "- [m0007] grep \"if shape else 1\" sympy/dense.py →")
	mustNotContain(t, fresh.Text, "finds the new text")
	m = build(nil, b.msgs, nil, nil)
	if m.checksChange(m.steps[2]) {
		t.Error("a grep of a change since undone checks it")
	}
}

// A script that checks several cases says each one's verdict on its own
// line: the result counts them, where the first line is only the first
// case.
func TestVerdictTally(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want string
	}{
		{"Testing A...\n  len = 1\n  A passed.\nTesting B...\n  len = 3\n  B passed.", "2 lines say passed"},
		{"PASS: a was ignored\nchecking b\nFAIL: b was not ignored\nchecking c\nchecking d", "1 says passed, 1 says failed"},
		{"✗ empty input\n✗ one item\nran 2 cases\ndone", "2 lines say failed"},
		// What it does not read it does not deny: Mocha's "1) name" is a
		// failure the count leaves out, so no "none failed".
		{"  Array\n    ✓ adds\n    ✓ removes\n    1) sorts\n  2 passing\n  1 failing", "2 lines say passed"},
		// A run that broke, a summary of both, a cut output: no tally.
		{"PASS: a\nPASS: b\nchecking\nIndentationError: expected an indented block\nmore\nmore", ""},
		{"test a ... ok\ntest b ... FAILED\ntest result: FAILED. 2 passed; 2 failed\nA failed\nB failed\nx\ny\nz", "3 lines say failed"},
		{"A passed.\nB passed.\n[…]\nx\ny\nz", ""},
		// One verdict is the verdict line's to tell; a listing of code
		// whose every line says pass is no tally.
		{"Testing A...\nA passed.\ndone", ""},
		{"if x:\n    pass\nelse:\n    pass", ""},
		{"A passed\nB passed\nC passed", ""}, // every line: the output is short and told whole
	} {
		if got := verdictTally(strings.Split(tc.out, "\n")); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.out, got, tc.want)
		}
	}
}

// The agent's newest refusal is a decision: at its least detail its line
// keeps the sentences that refuse, not the courtesy it ends on; a
// courtesy's "let me know" is no intention of the agent's.
func TestToldRefusal(t *testing.T) {
	refusal := "As a silver member, the membership status does not override the cancellation policy. The policy allows a full refund only within 24 hours of booking. " +
		"Since your booking was made on May 12th, a full refund is not possible under the current circumstances. If you have any further questions, let me know."
	if got, want := strings.Join(refusalSentences(refusal), " "), "As a silver member, the membership status does not override the cancellation policy. Since your booking was made on May 12th, a full refund is not possible under the current circumstances."; got != want {
		t.Errorf("refusalSentences = %q, want %q", got, want)
	}
	for _, s := range []string{"Would you like to proceed?", "I can help you with that.", "Can you not do that?", "I cannot find any direct flights from JFK to SEA on May 20."} {
		if got := refusalSentences(s); len(got) > 0 {
			t.Errorf("refusalSentences(%q) = %q", s, got)
		}
	}
	if isIntention("If you have any further questions, let me know.") || !isIntention("Let me check the reservation.") {
		t.Error("isIntention: 'let me know' asks the user; 'let me check' is the agent's")
	}
	var b spanBuilder
	b.user("Cancel my reservation M20IZO, I'm a silver member.").
		step("", "get_reservation_details", `{"reservation_id":"M20IZO"}`, `{"reservation_id": "M20IZO", "cabin": "economy", "insurance": "no"}`).
		say(refusal).
		user("Can you check again?").
		say("I checked again. Is there anything else I can help you with today?").
		user("Then book me a flight from JFK to SFO.")
	m := build(nil, b.msgs, nil, nil)
	l := &layout{m: m, budget: 600, count: counter(t), indexShare: indexShare(m), memo: new(pieceMemo)}
	l.build(DefaultUserCapTokens)
	var told []*item
	for _, it := range l.items {
		if it.sec == secNotes && strings.Contains(it.texts[levelFull], "to the user:") {
			told = append(told, it)
		}
	}
	if len(told) != 2 {
		t.Fatalf("%d lines of what the agent told the user, want 2", len(told))
	}
	if got, want := told[0].texts[levelMin], "- [m0006] to the user: As a silver member, the membership status does not override the cancellation policy. Since your booking was made on May 12th, a full refund is not possible under the current circumstances."; got != want {
		t.Errorf("the refusal's least text:\n got %q\nwant %q", got, want)
	}
	// A refusal that ends on an offer keeps the offer the user answers.
	offer := "Reservation NO6JO3 is not eligible for a full refund. However, I can issue a $100 travel certificate, or move the trip to another date. Which would you prefer?"
	if got, want := m.refusalLine(note{id: "m0099"}, offer), "Reservation NO6JO3 is not eligible for a full refund. … However, I can issue a $100 travel certificate, or move the trip to another date. Which would you prefer?"; got != want {
		t.Errorf("refusalLine with an offer:\n got %q\nwant %q", got, want)
	}
	if told[0].prio <= told[1].prio {
		t.Errorf("the refusal (%.2f) is not raised above the remark after it (%.2f), made as late in the steps", told[0].prio, told[1].prio)
	}
}

// What the agent made of a record it read ("59XX6W can be canceled
// because it has travel insurance") ranks above its other conclusions
// of the same age.
func TestNoteOnRecord(t *testing.T) {
	var b spanBuilder
	b.user("Cancel my reservations, my user ID is daiki_muller_1116.").
		step("", "get_reservation_details", `{"reservation_id":"59XX6W"}`, `{"reservation_id": "59XX6W", "cabin": "economy", "insurance": "yes"}`).
		step("Reservation 59XX6W can be canceled because it has travel insurance. The refund goes to credit_card_2408938 because it paid.", "think", `{"thought": "ok"}`, "")
	m := build(nil, b.msgs, nil, nil)
	l := &layout{m: m, budget: 600, count: counter(t), indexShare: indexShare(m), memo: new(pieceMemo)}
	l.build(DefaultUserCapTokens)
	prio := map[string]float64{}
	for _, it := range l.items {
		if it.sec == secNotes {
			prio[it.texts[levelFull]] = it.prio
		}
	}
	on, off := prio["- [m0006] Reservation 59XX6W can be canceled because it has travel insurance."], prio["- [m0006] The refund goes to credit_card_2408938 because it paid."]
	if on == 0 || off == 0 {
		t.Fatalf("notes: %v", prio)
	}
	if on <= off {
		t.Errorf("the note on a record read (%.2f) does not rank above the other (%.2f)", on, off)
	}
}

// How to reach a person ranks last in a record's line, unless a tool of
// the conversation takes it (a retail agent changes an order's address).
func TestContactFieldWeight(t *testing.T) {
	var b spanBuilder
	b.step("", "get_user_details", `{"user_id":"yara_1"}`, `{"user_id": "yara_1", "email": "y@example.com", "address": {"city": "Denver"}}`)
	m := build(nil, b.msgs, nil, nil)
	if w := m.fieldWeight("address"); w >= 0 {
		t.Errorf("address weighs %d with no tool taking it", w)
	}
	b.step("", "modify_pending_order_address", `{"order_id":"#W1"}`, `{"order_id": "#W1", "status": "pending"}`)
	m = build(nil, b.msgs, nil, nil)
	if w := m.fieldWeight("address"); w != 0 {
		t.Errorf("address weighs %d where modify_pending_order_address takes it", w)
	}
	if w := m.fieldWeight("email"); w >= 0 {
		t.Errorf("email weighs %d", w)
	}
}

// A script of statements is told by the statements that do its work, not
// its imports, prints or project setup.
func TestScriptGist(t *testing.T) {
	script := "import numpy as np\nfrom sklearn.preprocessing import KBinsDiscretizer\nimport django\ndjango.setup()\n\n" +
		"X = np.array([0, 0.5, 2, 3, 9, 10]).reshape(-1, 1)\n\n# with 5 bins\n" +
		"est = KBinsDiscretizer(n_bins=5, strategy='kmeans', encode='ordinal')\nsettings.configure(\n    DEBUG=True,\n)\n" +
		"try:\n    Xt = est.fit_transform(X)\n    print(Xt)\nexcept Exception as e:\n    print(e)\n"
	want := "runs `X = np.array([0, 0.5, 2, 3, 9, 10]).reshape(-1, 1)`, `est = KBinsDiscretizer(n_bins=5, strategy='kmeans', encode='ordinal')`, `settings.configure(…)`"
	if got := scriptGist(strings.Split(script, "\n")); got != want {
		t.Errorf("scriptGist:\n got %q\nwant %q", got, want)
	}
	if got := scriptGist([]string{"import os", "print(os.getcwd())"}); got != "" {
		t.Errorf("a script of imports and prints has a gist: %q", got)
	}
}
