package brief

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// What the left-out line counts, kept between the choices of one fit.
// A fit chooses several times (a scale, then corrections), and each
// choice leaves out nearly the items the one before did: the steps left
// out are counted by position, and a choice adds or takes away the steps
// of the items whose place changed, instead of counting the thousand left
// out of a long span again. The layout's items do not change after build,
// so an item is known by its index.

// leftOut is the count of what the last choice left out.
type leftOut struct {
	// at counts the steps left out by position; steps is their sum.
	at    []int32
	steps int
	// kinds counts the steps of at by their call's kind.
	kinds [256]int32
	// was holds, by item, the level whose unsaid steps are in at (-1 all
	// of them: the item is left out).
	was []int8
	// keyed are the first keyedShown items left out that tell no step
	// and name an object (a path, a record), of keys in all.
	keyed []*item
	keys  int
	// cited holds, by section, the ids of the items left out that tell
	// no step and name no object; other says whether there were any such
	// items, with ids or not.
	cited [numSections]idRange
	other bool
}

// keyedShown is how many objects the left-out line names.
const keyedShown = 8

// countLeftOut brings l.left up to the items' chosen levels.
func (l *layout) countLeftOut() *leftOut {
	lo := &l.left
	if len(lo.was) != len(l.items) || len(lo.at) != len(l.m.steps) {
		*lo = leftOut{at: make([]int32, len(l.m.steps)), was: make([]int8, len(l.items))}
		for i, it := range l.items {
			// Counted first as left out: of a long span's thousand
			// items most are, and what a shown item's text does not
			// name is read only for the hundred shown.
			lo.was[i] = -1
			lo.add(it.steps, 1)
		}
	}
	lo.keyed, lo.keys, lo.cited, lo.other = lo.keyed[:0], 0, [numSections]idRange{}, false
	for i, it := range l.items {
		left := it.level < 0 && !it.header
		now := int8(it.level)
		if it.header {
			now = int8(levelFull) // a header tells no step
		}
		if now != lo.was[i] {
			// The steps an item does not name at its level are left out
			// too ("read lines 130-180 [m0019]" names one view of three).
			lo.add(it.unsaidAt(int(lo.was[i])), -1)
			lo.add(it.unsaidAt(int(now)), 1)
			lo.was[i] = now
		}
		switch {
		case !left || len(it.steps) > 0:
		case it.key != "":
			if lo.keys < keyedShown {
				lo.keyed = append(lo.keyed, it)
			}
			lo.keys++
		default:
			lo.cited[it.sec].add(it.ids, it.order)
			lo.other = true
		}
	}
	return lo
}

// add counts steps as left out (d = 1) or no longer (d = -1).
func (lo *leftOut) add(steps []*step, d int32) {
	for _, s := range steps {
		lo.at[s.n] += d
		lo.kinds[s.f.call.kind] += d
	}
	lo.steps += int(d) * len(steps)
}

// unsaidAt are the steps the item tells that its text at level does not
// name by message id (all of them at -1, when it is left out).
func (it *item) unsaidAt(level int) []*step {
	if level < 0 {
		return it.steps
	}
	if !it.unsaidDone[level] {
		it.unsaidDone[level] = true
		if len(it.steps) > 0 {
			// Most texts name each of their steps' ids as written; an id
			// not written may be inside a range the text writes, read only
			// then.
			t := it.texts[level]
			var ranges [][2]string
			read := false
			for _, s := range it.steps {
				if id := s.id(); !namesID(t, id) {
					if !read {
						ranges, read = idRanges(t), true
					}
					// A file's line writes ranges of its changes ("4 changes
					// [m0059–m0069] undone"): a view between them is not one.
					if !inRanges(ranges, id) || it.sec == secFiles && !s.f.call.kind.changes() {
						it.unsaid[level] = append(it.unsaid[level], s)
					}
				}
			}
		}
	}
	return it.unsaid[level]
}

func inRanges(ranges [][2]string, id string) bool {
	for _, r := range ranges {
		if len(id) == len(r[0]) && len(id) == len(r[1]) && id >= r[0] && id <= r[1] {
			return true
		}
	}
	return false
}

// namesID reports whether t holds id where eachID would read it: an "m"
// and three or more digits, not inside a longer word. False says nothing
// of the ranges t writes.
func namesID(t, id string) bool {
	if len(id) < 4 || id[0] != 'm' || strings.TrimLeft(id[1:], "0123456789") != "" {
		return false
	}
	return containsWord(t, id)
}

// idRanges reads the ranges of message ids a text writes.
func idRanges(t string) [][2]string {
	var out [][2]string
	eachID(t, func(id, from string) {
		if from != "" {
			out = append(out, [2]string{from, id})
		}
	})
	return out
}

// eachID calls f with each message id t writes ("m0012": an "m" and
// three or more digits, not inside a word) and, when the id ends a range
// ("m0010–m0018", "m0010 … m0018"), the id the range starts from.
func eachID(t string, f func(id, from string)) {
	prev, prevEnd := "", -1
	for i := 0; i < len(t); i++ {
		if t[i] != 'm' || i > 0 && isWordByte(t[i-1]) {
			continue
		}
		j := i + 1
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		if j-i < 4 || j < len(t) && isWordByte(t[j]) {
			continue
		}
		id, from := t[i:j], ""
		if prev != "" {
			if sep := t[prevEnd:i]; sep == "–" || sep == " … " || sep == "-" {
				from = prev
			}
		}
		f(id, from)
		prev, prevEnd = id, j
		i = j - 1
	}
}

// stepsText says what the steps left out were, in their order (each as
// many times as items left out tell it): how many of each kind (counted
// as items change places, countLeftOut), the kinds in the order they
// first occur, and their runs of ids (stepRuns). The positions are read
// until the runs stop (at twelve) and every kind has been met: on a long
// span, the first few hundred of thousands.
func (lo *leftOut) stepsText(m *model) (kinds, runs string) {
	kindsLeft := 0
	for _, c := range lo.kinds {
		if c > 0 {
			kindsLeft++
		}
	}
	var seen [256]bool
	var order []kind
	r := stepRuns{m: m, start: -1, prev: -1}
	for n, c := range lo.at {
		if c == 0 {
			continue
		}
		s := m.steps[n]
		if k := s.f.call.kind; !seen[k] {
			seen[k] = true
			order = append(order, k)
			kindsLeft--
		}
		for range c {
			r.add(s)
		}
		if r.done && kindsLeft == 0 {
			break
		}
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, strconv.Itoa(int(lo.kinds[k]))+" "+k.String())
	}
	return strings.Join(parts, ", "), r.String()
}

// stepRuns compresses steps' ids, added in order, into runs of consecutive
// steps: "m0041–m0049, m0055". A step stands for its message's calls: the
// run goes on from the last of them. The runs past 12 are not named.
type stepRuns struct {
	m           *model
	runs        []string
	start, prev int
	done        bool
}

func (r *stepRuns) flush() {
	if r.start < 0 {
		return
	}
	if r.start == r.prev {
		r.runs = append(r.runs, r.m.steps[r.start].id())
	} else {
		r.runs = append(r.runs, r.m.steps[r.start].id()+"–"+r.m.steps[r.prev].lastID())
	}
	r.start = -1
}

func (r *stepRuns) add(s *step) {
	if r.done {
		return
	}
	p := r.m.lastCall(s)
	if r.start >= 0 && p == r.prev+1 {
		r.prev = p
		return
	}
	r.flush()
	if len(r.runs) > 12 {
		r.done = true
		return
	}
	r.start, r.prev = p, p
}

func (r *stepRuns) String() string {
	r.flush()
	if len(r.runs) > 12 {
		r.runs = append(r.runs[:12], "…")
	}
	return strings.Join(r.runs, ", ")
}

// idRange is what rangeOf reads of a list of ids added in parts, by the
// lines of a section, which come in the order they were built, not the
// order they print in: its first three distinct ids, its first and last
// in print order (the lines' order), and how many (an id repeated,
// counted once while few).
type idRange struct {
	n      int
	head   [3]string
	at     [3]float64
	lo, hi string
	lowAt  float64
	highAt float64
}

func (r *idRange) add(ids []string, order float64) {
	for _, id := range ids {
		if r.n > 0 && r.n <= len(r.head) && slices.Contains(r.head[:r.n], id) {
			continue // two lines of one message name it once
		}
		if r.n < len(r.head) {
			r.head[r.n], r.at[r.n] = id, order
		}
		if r.n == 0 || order < r.lowAt {
			r.lo, r.lowAt = id, order
		}
		if r.n == 0 || order >= r.highAt {
			r.hi, r.highAt = id, order
		}
		r.n++
	}
}

// ids returns a list rangeOf writes as it writes the whole list in print
// order: the few ids in their lines' order, or the first and last as ends.
func (r *idRange) ids() []string {
	if r.n <= len(r.head) {
		k := make([]int, r.n)
		for i := range k {
			k[i] = i
		}
		slices.SortStableFunc(k, func(a, b int) int { return cmp.Compare(r.at[a], r.at[b]) })
		few := make([]string, r.n)
		for i, j := range k {
			few[i] = r.head[j]
		}
		return few
	}
	return []string{r.lo, "", "", r.hi}
}
