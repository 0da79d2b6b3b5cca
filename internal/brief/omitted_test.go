package brief

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// TestOmittedKeptBetweenChoices checks the left-out line counted from the
// last choice's count (countLeftOut) against one counted afresh by the
// reference below (the line as written before the count was kept), for
// the layouts of the histories' briefings, chained and not, at a sequence
// of scales (a fit's corrections, far jumps, the mandatory part alone
// between) and with levels set at random.
func TestOmittedKeptBetweenChoices(t *testing.T) {
	count := counter(t)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 0
	for name, msgs := range histories(t) {
		head, span := headAndSpan(msgs)
		var prev *briefd.Briefing
		if k := len(span) / 3; k > 0 && n%2 == 1 {
			first := write(t, span[:k], 600)
			prev = &briefd.Briefing{BoundaryID: span[k].ID, Text: first.Text, Structured: first.Structured}
			span = append([]briefd.Message{briefd.BriefingMessage(prev)}, span[k:]...)
		}
		n++
		m := build(head, span, prev, nil)
		l := &layout{m: m, budget: 1200, count: count, indexShare: indexShare(m), memo: new(pieceMemo), countSplits: true}
		l.head = header(m, 0)
		l.build(DefaultUserCapTokens)
		_, l.indexNeed = m.namedIdents()
		check := func(what string) {
			t.Helper()
			if got, want := l.omittedText(), referenceOmitted(l); got != want {
				t.Fatalf("%s, %s: left-out line\n%q\nwant\n%q", name, what, got, want)
			}
		}
		for _, scale := range []float64{1, 0.87, 0.93, 0.9, 3, 0.2, 1} {
			l.choose(scale)
			check(fmt.Sprintf("scale %g", scale))
		}
		l.mandatoryTokens()
		check("mandatory")
		for round := range 20 {
			for _, it := range l.items {
				if rng.IntN(4) == 0 {
					it.level = rng.IntN(levels+1) - 1
				}
			}
			check(fmt.Sprintf("random levels %d", round))
		}
	}
}

// referenceOmitted is omittedText as written before the count was kept
// between choices: every item's steps counted again, then listed in
// order, their kinds counted by countKinds.
func referenceOmitted(l *layout) string {
	leftAt := make([]int32, len(l.m.steps))
	nLeft := 0
	var keys []string
	type cited struct {
		id    string
		order float64
	}
	other := map[section][]cited{}
	for _, it := range l.items {
		if it.header {
			continue
		}
		if it.level >= 0 {
			// A shown item leaves out the steps its text does not name (a
			// file's line, a view by its own id: its ranges are changes).
			for _, s := range it.steps {
				named := namedIDs(it.texts[it.level]).has(s.id())
				if it.sec == secFiles && !s.f.call.kind.changes() {
					named = namesID(it.texts[it.level], s.id())
				}
				if !named {
					leftAt[s.n]++
					nLeft++
				}
			}
			continue
		}
		for _, s := range it.steps {
			leftAt[s.n]++
		}
		nLeft += len(it.steps)
		switch {
		case len(it.steps) > 0:
		case it.key != "":
			keys = append(keys, keyedLeftOut(it))
		default:
			for _, id := range it.ids {
				other[it.sec] = append(other[it.sec], cited{id, it.order})
			}
		}
	}
	if nLeft == 0 && len(other) == 0 && len(keys) == 0 {
		if p := l.m.prior; p != nil && len(mentionedIDs(p.leftOut)) > 0 {
			return "an earlier briefing's lines from " + rangeOf(mentionedIDs(p.leftOut)) + "."
		}
		return ""
	}
	var left []*step
	for n, c := range leftAt {
		for range c {
			left = append(left, l.m.steps[n])
		}
	}
	var parts []string
	if len(left) > 0 {
		parts = append(parts, stepsLeftText(len(left), countKinds(left))+" at "+referenceRuns(left, l.m))
	}
	if len(keys) > 0 {
		parts = append(parts, "the lines of "+strings.Join(headLines(keys, 8), ", ")+moreCount(len(keys), 8))
	}
	for sec := secTask; sec < numSections; sec++ {
		if cs := other[sec]; len(cs) > 0 {
			// In the order the section prints them, each id once: a few
			// listed, more as the first and last.
			var distinct []cited
			for _, c := range cs {
				if !slices.ContainsFunc(distinct, func(d cited) bool { return d.id == c.id }) {
					distinct = append(distinct, c)
				}
			}
			var ids []string
			if len(distinct) <= 3 {
				slices.SortStableFunc(distinct, func(a, b cited) int { return cmp.Compare(a.order, b.order) })
				for _, d := range distinct {
					ids = append(ids, d.id)
				}
			} else {
				lo, hi := cs[0], cs[0]
				for _, c := range cs {
					if c.order < lo.order {
						lo = c
					}
					if c.order >= hi.order {
						hi = c
					}
				}
				ids = []string{lo.id, "", "", hi.id}
			}
			parts = append(parts, leftOutSection(sec)+rangeOf(ids))
		}
	}
	if p := l.m.prior; p != nil && len(mentionedIDs(p.leftOut)) > 0 {
		parts = append(parts, "an earlier briefing's lines from "+rangeOf(mentionedIDs(p.leftOut)))
	}
	if len(parts) == 0 {
		return "" // lines left out that cite no message name nothing
	}
	return strings.Join(parts, "; ") + "."
}

// referenceRuns is idRuns as it was: the steps' ids in runs of
// consecutive steps, each standing for its message's calls.
func referenceRuns(steps []*step, m *model) string {
	var runs []string
	start, prev := -1, -1
	flush := func() {
		if start < 0 {
			return
		}
		if start == prev {
			runs = append(runs, m.steps[start].id())
		} else {
			runs = append(runs, m.steps[start].id()+"–"+m.steps[prev].lastID())
		}
		start = -1
	}
	for _, s := range steps {
		p := m.lastCall(s)
		if start >= 0 && p == prev+1 {
			prev = p
			continue
		}
		flush()
		if len(runs) > 12 {
			break
		}
		start, prev = p, p
	}
	flush()
	if len(runs) > 12 {
		runs = append(runs[:12], "…")
	}
	return strings.Join(runs, ", ")
}

// TestStepsTextReadsPastTheRuns: the runs stop at twelve, but a kind met
// only after them is still named, in its place.
func TestStepsTextReadsPastTheRuns(t *testing.T) {
	b := &spanBuilder{}
	for i := range 30 {
		b.bash("", fmt.Sprintf("cat f%02d.py", i), rc(0, "x = 1"))
	}
	b.bash("", "grep -rn needle .", rc(0, "a.py:1: needle"))
	m := build(nil, b.msgs, nil, nil)
	lo := &leftOut{at: make([]int32, len(m.steps))}
	var left []*step
	for n, s := range m.steps {
		if n%2 == 0 || n == len(m.steps)-1 { // 16 runs, then the search
			lo.at[n]++
			lo.kinds[s.f.call.kind]++
			left = append(left, s)
		}
	}
	kinds, runs := lo.stepsText(m)
	if want := countKinds(left); kinds != want {
		t.Errorf("kinds %q, want %q", kinds, want)
	}
	if want := referenceRuns(left, m); runs != want {
		t.Errorf("runs %q, want %q", runs, want)
	}
}

// namesID and idRanges are a shortcut of namedIDs: together they name
// the same ids.
func TestNamesIDAgreesWithNamedIDs(t *testing.T) {
	texts := []string{
		"- [m0012] ls → ok", "[m0010–m0018] and m0020", "xm0012 m00123 m0012_a m0012b", "(m0012)", "m0012",
		"steps at m0003, m0007, m0011–m0014", "[m0003 … m0017, 8×]", "m12 m012 m0012", "mm0012 m0012m",
	}
	ids := []string{"m0012", "m0010", "m0014", "m0020", "m012", "m12", "m00123", "x0012", "m0013", "m0003", "m0017"}
	for _, tx := range texts {
		set := namedIDs(tx)
		for _, id := range ids {
			if namesID(tx, id) != set.ids[id] {
				t.Errorf("namesID(%q, %q) = %v, namedIDs says %v", tx, id, namesID(tx, id), set.ids[id])
			}
			if got := namesID(tx, id) || inRanges(idRanges(tx), id); got != set.has(id) {
				t.Errorf("%q names %q: %v by the shortcut, %v by namedIDs", tx, id, got, set.has(id))
			}
		}
	}
	if !namesID("(m0012)", "m0012") || namesID("xm0012", "m0012") || namesID("m00123", "m0012") {
		t.Error("namesID misreads a plain case")
	}
}

// The reference the shortcuts are checked against: every id and range a
// text names, as the left-out count read them before namesID and idRanges.

// idSet is the message ids a text names: each id, and the ranges it
// writes as "m0010–m0018" or "m0010 … m0018".
type idSet struct {
	ids    map[string]bool
	ranges [][2]string
}

func (s idSet) has(id string) bool {
	return s.ids[id] || inRanges(s.ranges, id)
}

// namedIDs reads the message ids of a text.
func namedIDs(t string) idSet {
	set := idSet{ids: map[string]bool{}}
	eachID(t, func(id, from string) {
		set.ids[id] = true
		if from != "" {
			set.ranges = append(set.ranges, [2]string{from, id})
		}
	})
	return set
}

// The left-out line names a section's messages in their order, each once,
// whatever order its lines were built in (remarks to the user after the
// agent's notes).
func TestIDRangeInMessageOrder(t *testing.T) {
	type add struct {
		ids   []string
		order float64
	}
	for _, tc := range []struct {
		adds []add
		want string
	}{
		{[]add{{[]string{"m0011"}, 8}, {[]string{"m0003"}, 0}, {[]string{"m0005"}, 2}, {[]string{"m0011"}, 8.001}}, "m0003, m0005, m0011"},
		{[]add{{[]string{"m0017"}, 14}, {[]string{"m0003"}, 0}, {[]string{"m0011", "m0011"}, 8}, {[]string{"m0009"}, 6}}, "m0003–m0017"},
		// Ids a client chose: the lines' order, not the ids' text.
		{[]add{{[]string{"msg_f4c380"}, 1}, {[]string{"msg_1c390b"}, 5}, {[]string{"msg_9a2"}, 3}, {[]string{"msg_044"}, 9}}, "msg_f4c380–msg_044"},
	} {
		var r idRange
		for _, a := range tc.adds {
			r.add(a.ids, a.order)
		}
		if got := rangeOf(r.ids()); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.adds, got, tc.want)
		}
	}
}

// A line about an object left out names its key and first message; one
// citing none (a directory only moved) its key alone, not "key []".
func TestKeyedLeftOut(t *testing.T) {
	if got := keyedLeftOut(&item{key: "related.py", ids: []string{"m0029", "m0033"}}); got != "related.py [m0029]" {
		t.Errorf("got %q", got)
	}
	if got := keyedLeftOut(&item{key: ".a"}); got != ".a" {
		t.Errorf("got %q", got)
	}
}
