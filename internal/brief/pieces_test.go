package brief

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// TestWarmFitBySections grows a span whose briefing tempts the fit counted
// by its sections: a user's message said again (its line cites both
// messages, with the same text), one longer than the cap (cut in some
// choices, whole in the mandatory part), texts that need escaping at the
// ends of lines and sections ("</compacted-history>", "&lt;", a trailing
// '<' or '&'), and steps whose lines come and go with the budget. After
// every message a warm Write counted by sections (CountSplits, the pieces
// kept between Writes) must write what a fresh Write counting the whole
// text writes, at budgets that show every line, leave some out, shorten
// the user's messages, and leave no room for the index.
func TestWarmFitBySections(t *testing.T) {
	b := &spanBuilder{}
	b.user("fix the parser; keep </compacted-history> and &lt; as they are <")
	b.bash("Look at it.", "cat parse.py", rc(0, "def parse(s):\n    return s.split('<') &\n"))
	b.say("The parser splits on '<' and ends with a stray &")
	b.user("also check the docs &")
	long := strings.Repeat("the tokenizer must cut only where a piece ends; ", 120)
	b.user(long + "<compacted-history>")
	for i := range 6 {
		b.bash(fmt.Sprintf("Run check %d.", i), fmt.Sprintf("python -m pytest tests/test_%d.py", i),
			rc(i%2, fmt.Sprintf("FAILED tests/test_%d.py::test_lt - AssertionError: '&lt;' != '<'\n1 failed", i)))
		if i == 2 {
			b.user("fix the parser; keep </compacted-history> and &lt; as they are <") // said again
		}
	}
	b.step("", "str_replace_editor", `{"command": "str_replace", "path": "/w/parse.py", "old_str": "split('<')", "new_str": "split('&lt;')"}`,
		"The file /w/parse.py has been edited.")
	b.bash("Run them all.", "python -m pytest", rc(0, "6 passed in 0.2s"))
	b.say("All pass now <")
	count := counter(t)
	// At 40 tokens the mandatory part crowds out the index, and the
	// coverage reads the shown items' identifiers (textUses).
	for _, budget := range []int{6000, 900, 400, 40} {
		w := &Warm{} // one for both caps: the lines cut to one are not the other's
		for k := 1; k <= len(b.msgs); k++ {
			if k < len(b.msgs) && b.msgs[k].Role == briefd.RoleTool {
				continue
			}
			for _, userCap := range []int{0, 200} {
				in := Input{Span: b.msgs[:k], BudgetTokens: budget, CountTokens: count, UserCapTokens: userCap}
				fresh, err := Write(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				in.Warm, in.CountSplits = w, true
				warm, err := Write(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				sameDraft(t, fmt.Sprintf("budget %d, cap %d, at %s", budget, userCap, b.msgs[k-1].ID), warm, fresh)
			}
		}
	}
}

// TestMeasureBySections checks the count by sections against the count of
// the wrapped text, for the layouts of the histories' briefings at each
// choice of their fit and for the mandatory part alone.
func TestMeasureBySections(t *testing.T) {
	count := counter(t)
	for name, msgs := range histories(t) {
		head, span := headAndSpan(msgs)
		m := build(head, span, nil, nil)
		l := &layout{m: m, budget: 1500, count: count, indexShare: indexShare(m), memo: new(pieceMemo), countSplits: true}
		l.head = header(m, 0)
		if m.first != "" {
			l.foot = briefd.ExpandFooter(m.first, m.last)
		}
		l.build(DefaultUserCapTokens)
		_, l.indexNeed = m.namedIdents()
		check := func(what string, x *extras) {
			t.Helper()
			w := briefd.WrapBriefing(l.render(x))
			n, size := l.measure(x)
			if n != count(w) || size != len(w) {
				t.Fatalf("%s, %s: measured %d tokens, %d bytes; the wrapped text has %d, %d", name, what, n, size, count(w), len(w))
			}
		}
		l.mandatoryTokens()
		check("mandatory", nil)
		for _, scale := range []float64{0.5, 1, 2} {
			l.choose(scale)
			check(fmt.Sprintf("scale %g", scale), l.extras())
		}
	}
}

// TestTextUses checks the uses an item keeps for the coverage: an
// identifier the span does not use yet is looked up again once the span
// has more identifiers, bare numbers are left out, and new identifiers
// of the item's text are read again.
func TestTextUses(t *testing.T) {
	m := &model{ids: map[string]*identUse{}}
	use := func(id string) *identUse {
		u := &identUse{}
		m.ids[id] = u
		m.idOrder = append(m.idOrder, id)
		return u
	}
	parse := use("parse.py")
	use("12345")
	it := &item{level: levelFull, texts: [levels]string{"- [m0003] cat parse.py lexer.py 12345"}}
	if got := it.textUses(m); len(got) != 1 || got[0] != parse {
		t.Fatalf("uses %v, want parse.py's alone", got)
	}
	lexer := use("lexer.py")
	if got := it.textUses(m); len(got) != 2 || got[1] != lexer {
		t.Fatalf("uses %v, want parse.py's and lexer.py's once the span uses lexer.py", got)
	}
	it.identsAt[levelFull] = []string{"lexer.py"} // read again: the text changed
	if got := it.textUses(m); len(got) != 1 || got[0] != lexer {
		t.Fatalf("uses %v, want lexer.py's alone", got)
	}
}
