package cascade

import (
	"fmt"
	"slices"
	"strings"

	"github.com/briefd/briefd"
)

// The model's narrative and the deterministic ledger share the budget. A
// faithful narrative a few percent over its share is not rejected: ledger
// lines are left out instead, first those whose identifiers the narrative
// already carries, then the last ones (the draft puts what is least needed
// last), never a heading or a line carrying a user's words, and never more
// than maxLedgerTrim of the ledger. What was left out is said, with the
// message ids, so nothing vanishes silently.

// maxLedgerTrim is the largest share of the ledger's tokens left out to
// fit. The narrative is told about half of it, so that a reply over its
// length by a tenth or two still fits.
const maxLedgerTrim = 0.5

// ledgerText renders lines (the ledger, or a trimmed copy) under
// LedgerHeading, without the dropped ones, then note.
func ledgerText(lines []string, drop []bool, note string) string {
	var b strings.Builder
	b.WriteString(LedgerHeading)
	for i, l := range lines {
		if drop != nil && drop[i] {
			continue
		}
		b.WriteByte('\n')
		b.WriteString(l)
	}
	if note != "" {
		b.WriteByte('\n')
		b.WriteString(note)
	}
	return b.String()
}

// fitLedger returns the narrative followed by the ledger, fitted to the
// budget when it can be, with its token count (as the agent reads it,
// wrapped) and the number of ledger lines left out or shortened.
func (r *run) fitLedger(narrative string) (string, int, int) {
	lines := slices.Clone(r.ledgerLines)
	drop := make([]bool, len(lines))
	compose := func(note string) string { return narrative + "\n\n" + ledgerText(lines, drop, note) }
	final := compose("")
	n := r.count(briefd.WrapBriefing(final))
	if n <= r.in.BudgetTokens {
		return final, n, 0
	}
	costs := r.lineCosts()
	limit := r.trimmable()
	var order []int
	for i := len(lines) - 1; i >= 0; i-- {
		if !r.protected[i] && r.covered(lines[i], narrative) {
			order = append(order, i)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if !r.protected[i] && !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	// removed estimates the tokens saved from the lines' own counts; the
	// budget check is always on the exact count of the wrapped text.
	nInit, removed, touched := n, 0, 0
	measure := func() {
		final = compose(r.trimNote(drop, lines, touched))
		n = r.count(briefd.WrapBriefing(final))
		removed = nInit - n
	}
	over := n - r.in.BudgetTokens + 16 // room for the note
	for _, i := range order {
		if removed+costs[i] > limit && touched > 0 {
			measure() // the estimates run high: re-measure before shortening
		}
		if removed >= limit {
			break
		}
		if removed+costs[i] <= limit {
			drop[i] = true
			removed += costs[i]
		} else {
			// Shorten the line instead: keep its head, which names the
			// step and its message.
			keep := costs[i] - (limit - removed)
			if keep < 6 {
				continue
			}
			lines[i] = shorten(lines[i], keep, r.count)
			removed += costs[i] - r.count(lines[i]) - 1
		}
		touched++
		if removed < over {
			continue
		}
		measure()
		if n <= r.in.BudgetTokens {
			return final, n, touched
		}
		over = removed + n - r.in.BudgetTokens
	}
	if touched == 0 {
		return final, n, 0
	}
	final = compose(r.trimNote(drop, lines, touched))
	return final, r.count(briefd.WrapBriefing(final)), touched
}

// shorten cuts line to about keep tokens, marking the cut.
func shorten(line string, keep int, count func(string) int) string {
	rs := []rune(line)
	n := len(rs) * keep / max(count(line), 1)
	for n > 0 {
		s := string(rs[:n]) + "…"
		if count(s) <= keep {
			return s
		}
		n = n * 9 / 10
	}
	return "…"
}

// trimNote says which ledger lines were left out or shortened, by their
// message ids.
func (r *run) trimNote(drop []bool, lines []string, n int) string {
	var ids []string
	for i, d := range drop {
		if !d && lines[i] == r.ledgerLines[i] {
			continue
		}
		for _, id := range msgIDRe.FindAllString(r.ledgerLines[i], -1) {
			if !slices.Contains(ids, id) && len(ids) < 8 {
				ids = append(ids, id)
			}
		}
	}
	note := fmt.Sprintf("[%d ledger lines left out or shortened for size", n)
	if len(ids) > 0 {
		note += ": " + strings.Join(ids, ", ")
	}
	return note + "]"
}

// lineCosts returns the tokens of each ledger line.
func (r *run) lineCosts() []int {
	costs := make([]int, len(r.ledgerLines))
	for i, l := range r.ledgerLines {
		costs[i] = r.count(l) + 1
	}
	return costs
}

// trimmable is the most ledger tokens fitLedger may leave out: a share of
// the ledger, from its lines that are not protected.
func (r *run) trimmable() int {
	total, free := 0, 0
	for i, c := range r.lineCosts() {
		total += c
		if !r.protected[i] {
			free += c
		}
	}
	return min(free, int(float64(total)*maxLedgerTrim))
}

// covered reports a ledger line whose identifiers all occur in the
// narrative (and that has some).
func (r *run) covered(line, narrative string) bool {
	ids := r.c.cfg.Identifiers(line)
	n := 0
	for _, id := range ids {
		if msgIDRe.MatchString(id) && r.src.idsOnly(id) {
			continue
		}
		n++
		if !strings.Contains(narrative, id) {
			return false
		}
	}
	return n > 0
}

// protectedLedgerLines marks the lines never left out: the first line,
// headings, blank lines, and lines carrying a user's words.
func (r *run) protectedLedgerLines() []bool {
	p := make([]bool, len(r.ledgerLines))
	var users []string
	for _, u := range r.src.users {
		c := collapse(u)
		users = append(users, c[:min(len(c), 60)])
	}
	all := collapse(strings.Join(r.src.users, "\n"))
	for i, l := range r.ledgerLines {
		t := strings.TrimSpace(l)
		switch {
		case i == 0, t == "", strings.HasPrefix(t, "#"), strings.HasSuffix(t, ":") && len(t) < 60:
			p[i] = true
			continue
		}
		c := collapse(t)
		if len(c) >= 40 && strings.Contains(all, c) {
			p[i] = true
			continue
		}
		for _, u := range users {
			if len(u) >= 12 && strings.Contains(c, u) {
				p[i] = true
				break
			}
		}
	}
	return p
}
