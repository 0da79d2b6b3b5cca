package brief

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// turnEnds returns the ends of span's prefixes that split no call from
// its result: a span may end before any message but a tool result.
func turnEnds(span []briefd.Message) []int {
	var ends []int
	for k := 1; k <= len(span); k++ {
		if k == len(span) || span[k].Role != briefd.RoleTool {
			ends = append(ends, k)
		}
	}
	return ends
}

// sameDraft fails unless a warm draft is byte for byte the fresh one.
func sameDraft(t *testing.T, what string, warm, fresh *Draft) {
	t.Helper()
	if warm.Text != fresh.Text {
		t.Fatalf("%s: text differs from a fresh Write:\nwarm:\n%s\nfresh:\n%s", what, warm.Text, fresh.Text)
	}
	if string(warm.Structured) != string(fresh.Structured) {
		t.Fatalf("%s: record differs from a fresh Write:\nwarm:  %s\nfresh: %s", what, warm.Structured, fresh.Structured)
	}
	if warm.Depth != fresh.Depth || warm.BudgetTokens != fresh.BudgetTokens || !reflect.DeepEqual(warm.Coverage, fresh.Coverage) {
		t.Fatalf("%s: depth, budget or coverage differ: warm %d %d %+v, fresh %d %d %+v", what,
			warm.Depth, warm.BudgetTokens, warm.Coverage, fresh.Depth, fresh.BudgetTokens, fresh.Coverage)
	}
}

// TestWarmWriteIdentity grows the span of every history (the shipped ones
// and the shared ones) turn by turn, and in steps of a few turns, and
// checks that a Write continuing a Warm writes what a fresh Write (no
// Warm, no Cache) writes: the text, the record and the coverage. It does
// the same for a chained span (an earlier briefing, then the messages
// after it), with the earlier briefing's record and with its text alone,
// and for a Warm handed a span it does not extend (another start, an
// edited message, another head).
func TestWarmWriteIdentity(t *testing.T) {
	hs := histories(t)
	names := make([]string, 0, len(hs))
	for name := range hs {
		names = append(names, name)
	}
	if len(names) == 0 {
		t.Skip("no histories")
	}
	sort.Strings(names)
	count := counter(t)
	for h, name := range names {
		if testing.Short() && h%3 != 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			warmIdentity(t, hs[name], count, uint64(h), h%3 == 0)
		})
	}
}

// warmIdentity runs TestWarmWriteIdentity on one history; every turn's
// Write is compared when all is set, every third one otherwise.
func warmIdentity(t *testing.T, msgs []briefd.Message, count func(string) int, seed uint64, all bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(12, seed))
	head, _ := headAndSpan(msgs)
	span := msgs[len(head):]
	for len(span) > 0 && (span[0].Role == briefd.RoleTool || span[0].Pinned) {
		span = span[1:]
	}
	if len(span) < 4 {
		t.Skip("a short history")
	}
	// The fresh Writes have a Cache of their own: reading is cached apart
	// from the Warm's (a Cache changes no byte: TestWriteProperties).
	// The warm Writes count by sections (CountSplits), the fresh ones the
	// whole text.
	cache, freshCache := NewCache(0, 0), NewCache(0, 0)
	budget := 300 + rng.IntN(2500)
	write := func(w *Warm, head, span []briefd.Message, prev *briefd.Briefing, focus string) *Draft {
		t.Helper()
		in := Input{Head: head, Span: span, Previous: prev, BudgetTokens: budget, CountTokens: count, Focus: focus,
			Warm: w, Cache: cache, CountSplits: true}
		d, err := Write(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if w.Len() != len(span) {
			t.Fatalf("the Warm holds %d messages of %d", w.Len(), len(span))
		}
		return d
	}
	check := func(what string, w *Warm, head, span []briefd.Message, prev *briefd.Briefing, focus string) *Draft {
		t.Helper()
		warm := write(w, head, span, prev, focus)
		fresh, err := Write(ctx, Input{Head: head, Span: span, Previous: prev, BudgetTokens: budget, CountTokens: count, Focus: focus,
			Cache: freshCache})
		if err != nil {
			t.Fatal(err)
		}
		sameDraft(t, what, warm, fresh)
		return fresh
	}
	ends := turnEnds(span)
	// Turn by turn, then the same Warm again (the ledger's second Write
	// of one span).
	w := &Warm{}
	for i, k := range ends {
		if all || i%3 == 2 || i == len(ends)-1 {
			check("turn by turn at "+span[k-1].ID, w, head, span[:k], nil, "")
		} else {
			write(w, head, span[:k], nil, "")
		}
	}
	check("again", w, head, span, nil, "")
	// Several turns at a time, with a focus.
	w = &Warm{}
	for i := rng.IntN(3); i < len(ends); i += 1 + rng.IntN(6) {
		check("by steps at "+span[ends[i]-1].ID, w, head, span[:ends[i]], nil, "tests")
	}
	// A span that the Warm's does not extend: another start, another head
	// (the caller drops the Warm on an edit; Write's own checks catch the
	// start and the head).
	if len(ends) > 4 {
		k := ends[len(ends)/2]
		check("later start", w, head, span[ends[1]:k], nil, "")
		check("other head", w, head[:len(head)-1], span[:k], nil, "")
	}
	// Chained: an earlier briefing of the first third, then the rest grown
	// turn by turn; with the briefing's record, and with its text alone.
	k1 := ends[len(ends)/3]
	first := check("chained first", &Warm{}, head, span[:k1], nil, "")
	b := &briefd.Briefing{BoundaryID: span[k1].ID, Text: first.Text, Structured: first.Structured, Depth: first.Depth}
	chain := append([]briefd.Message{briefd.BriefingMessage(b)}, span[k1:]...)
	for _, prev := range []*briefd.Briefing{b, nil} {
		w = &Warm{}
		for i, k := range turnEnds(chain) {
			if i%2 == 0 || k == len(chain) {
				check("chained at "+chain[k-1].ID, w, head, chain[:k], prev, "")
			} else {
				write(w, head, chain[:k], prev, "")
			}
		}
	}
}

// TestWarmUndoesLookups checks that what the passes over a warm model
// change (a file looked up by another form of its path) is taken back, so
// that the next span is read into the model reading alone made.
func TestWarmUndoesLookups(t *testing.T) {
	b := &spanBuilder{}
	b.user("fix the parser")
	b.bash("Look at it.", "cat src/pkg/parse.py", rc(0, "def parse(): pass"))
	b.bash("Search for parse.", "grep -rn parse .", rc(0, "pkg/parse.py:1:def parse(): pass"))
	w := &Warm{}
	in := Input{Span: b.msgs, BudgetTokens: 800, CountTokens: counter(t), Warm: w}
	if _, err := Write(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	m := w.m
	keys := strings.Join(m.fileKeys, " ")
	var paths []string
	for _, k := range m.fileKeys {
		paths = append(paths, m.files[k].path)
	}
	fresh := build(nil, b.msgs, nil, nil)
	if len(fresh.files) != len(m.files) {
		t.Fatalf("the warm model has %d file keys after Write, reading alone %d", len(m.files), len(fresh.files))
	}
	if want := strings.Join(fresh.fileKeys, " "); keys != want {
		t.Fatalf("file keys %q, want %q", keys, want)
	}
	for i, k := range fresh.fileKeys {
		if fresh.files[k].path != paths[i] {
			t.Fatalf("path %q, want %q", paths[i], fresh.files[k].path)
		}
	}
}

// TestWarmTouchedAgain grows a span whose later steps change what earlier
// lines told: a file written, viewed, edited, its edit undone by the
// reverse edit, stashed and restored, run, deleted and written again; a
// file only read, twice, with the agent's reading of it after each; a
// file found missing then created; an error seen again, then resolved,
// then judged; a note added between. A Warm Write after every message must
// write what a fresh Write writes, at a budget that shows every line and at
// one that leaves lines out.
func TestWarmTouchedAgain(t *testing.T) {
	b := &spanBuilder{}
	b.user("fix the failing test in calc.py")
	b.bash("Run the tests.", "python -m pytest tests/test_calc.py", rc(1, "FAILED tests/test_calc.py::test_add - AssertionError: assert 3 == 4\n1 failed in 0.1s"))
	b.bash("Look at the helper.", "cat helper.py", rc(1, "cat: helper.py: No such file or directory"))
	b.step("", "str_replace_editor", `{"command": "create", "path": "/w/helper.py", "file_text": "def add(a, b):\n    return a + b\n"}`, "File created successfully at: /w/helper.py")
	b.step("", "str_replace_editor", `{"command": "view", "path": "/w/calc.py"}`, "Here's the result of running `cat -n` on /w/calc.py:\n     1\tdef add(a, b):\n     2\t    return a + b - 1\n")
	b.say("The bug is on line 2: it subtracts one. I should change it because the test expects the sum.")
	// A test file long enough that the agent's reading picks lines of it.
	var test []string
	for i := 1; i <= 11; i++ {
		test = append(test, fmt.Sprintf("def test_case_%d():", i), fmt.Sprintf("    assert add(%d, 1) == %d", i, i+1))
	}
	test = append(test, "def test_add():", "    assert add(1, 2) == threshold_limit_value")
	view := "Here's the result of running `cat -n` on /w/tests/test_calc.py:"
	for i, l := range test {
		view += fmt.Sprintf("\n%6d\t%s", i+1, l)
	}
	b.step("", "str_replace_editor", `{"command": "view", "path": "/w/tests/test_calc.py"}`, view)
	b.say("The test_add assertion compares with threshold_limit_value instead of 3, so the test itself is wrong.")
	b.step("", "str_replace_editor", `{"command": "view", "path": "/w/tests/test_calc.py", "view_range": [2, 3]}`, view)
	b.say("Its first case, test_case_1, asserts add(1, 1) == 2, which is right.")
	b.step("", "str_replace_editor", `{"command": "str_replace", "path": "/w/calc.py", "old_str": "a + b - 1", "new_str": "a + b"}`, "The file /w/calc.py has been edited.")
	b.bash("Run the tests again.", "python -m pytest tests/test_calc.py", rc(1, "FAILED tests/test_calc.py::test_add - AssertionError: assert 3 == 4\n1 failed in 0.1s"))
	b.bash("Undo it.", `sed -i 's/a + b/a + b - 1/' calc.py`, rc(0, ""))
	b.bash("Redo it.", `sed -i 's/a + b - 1/a + b/' calc.py`, rc(0, ""))
	b.bash("Stash everything.", "git stash", rc(0, "Saved working directory and index state WIP on main"))
	b.bash("Run them on the original.", "python -m pytest tests/test_calc.py", rc(1, "FAILED tests/test_calc.py::test_add - AssertionError: assert 3 == 4\n1 failed in 0.1s"))
	b.say("That failure was already failing before my change, so it is unrelated to my change.")
	b.bash("Restore.", "git stash pop", rc(0, "On branch main\nChanges not staged for commit:\n\tmodified:   calc.py"))
	b.bash("Run the helper.", "python helper.py", rc(0, "ok"))
	b.step("", "str_replace_editor", `{"command": "view", "path": "/w/helper.py"}`, "Here's the result of running `cat -n` on /w/helper.py:\n     1\tdef add(a, b):\n     2\t    return a + b\n")
	b.say("Line 1 of helper.py defines add, the same as calc.py.")
	b.bash("Remove the helper.", "rm helper.py", rc(0, ""))
	b.bash("Write it again.", "cat > helper.py <<'EOF'\nprint('again')\nEOF", rc(0, ""))
	b.step("", "str_replace_editor", `{"command": "str_replace", "path": "/w/calc.py", "old_str": "return a + b", "new_str": "return b + a"}`, "The file /w/calc.py has been edited.")
	b.bash("Run the tests.", "python -m pytest tests/test_calc.py", rc(0, "1 passed in 0.1s"))
	b.say("The tests pass now.")
	count := counter(t)
	for _, budget := range []int{4000, 420} {
		w := &Warm{}
		for k := 1; k <= len(b.msgs); k++ {
			if k < len(b.msgs) && b.msgs[k].Role == briefd.RoleTool {
				continue
			}
			in := Input{Span: b.msgs[:k], BudgetTokens: budget, CountTokens: count}
			fresh, err := Write(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			in.Warm, in.CountSplits = w, true // counted by sections
			warm, err := Write(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			sameDraft(t, fmt.Sprintf("budget %d at %s", budget, b.msgs[k-1].ID), warm, fresh)
		}
	}
}

// TestRecordMarshal checks that a record written with its entries' JSON
// kept between Writes is json.Marshal's: for the records of the histories'
// briefings, marshalled twice with one memo (the second from it), and for
// records at the edges of the encoding.
func TestRecordMarshal(t *testing.T) {
	recs := []*Record{
		{},
		{Format: RecordFormat, Covers: []string{"m0001", "m0002"}, Sections: []RecordSection{}, Index: []string{}},
		{Sections: []RecordSection{{Name: "steps"}, {Name: "notes", Entries: []Entry{}}}},
		{Sections: []RecordSection{{Name: "steps", Entries: []Entry{
			{Text: "<b> & \u2028 \"quoted\" \xff invalid"}, {Key: "k", Text: "t", IDs: []string{}},
			{Text: "t", IDs: []string{""}}, {Text: "t", IDs: []string{"a\x00", "b"}}, {Text: "t", IDs: []string{"a", "\x00b"}},
		}}}, Index: []string{"x<y"}, Coverage: Coverage{LeftOutIDs: []string{"m0003"}}},
	}
	count := counter(t)
	for name, msgs := range histories(t) {
		head, span := headAndSpan(msgs)
		d, err := Write(context.Background(), Input{Head: head, Span: span, BudgetTokens: 1500, CountTokens: count})
		if err != nil {
			t.Fatal(err)
		}
		var r Record
		if err := json.Unmarshal(d.Structured, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		recs = append(recs, &r)
	}
	m := &model{}
	for i, r := range recs {
		for round := range 2 {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.marshal(m.entryJSON)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("round %d, record %d:\ngot  %s\nwant %s", round, i, got, want)
			}
			m.turnEntries()
		}
	}
}

// TestCarriedWhole compares carriedWhole with a search of the whole text
// for each message, on random texts over a small alphabet (overlapping,
// repeated, out-of-order and empty messages).
func TestCarriedWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab"[rng.IntN(2)]
		}
		return string(b)
	}
	for range 20000 {
		text := word(rng.IntN(24))
		msgs := make([]userMsg, rng.IntN(5))
		for i := range msgs {
			msgs[i].text = word(rng.IntN(5))
		}
		// Some are said to be there when they are.
		knownAt := rng.IntN(len(msgs) + 1)
		known := func(k int) bool { return k == knownAt && strings.Contains(text, msgs[k].text) }
		want := 0
		for _, u := range msgs {
			if strings.Contains(text, u.text) {
				want++
			}
		}
		if got := carriedWhole(text, msgs, known); got != want {
			t.Fatalf("carriedWhole(%q, %v) = %d, want %d", text, msgs, got, want)
		}
	}
}
