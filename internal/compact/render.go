package compact

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/briefd/briefd"
)

// Rendering under a token budget. The budget covers what the agent reads:
// the text escaped and wrapped by briefd.WrapBriefing. Every line's tokens
// are counted once (escaped, with its newline) and cached; the sum of the
// lines is a close estimate of the text, and the final text is counted
// exactly before it is returned.
//
// Priorities: the header, every user message (oldest shortened first over
// the user cap, with a visible marker) and the current state are
// mandatory; the budget grows to fit them when it must. The rest of the
// room is shared: errors, files, the newest steps of the timeline, then
// identifiers by rank; what is left over goes to older steps.

// DefaultUserCapTokens bounds the user messages carried verbatim (Codex
// keeps 20k tokens of them); over it the oldest are shortened first.
const DefaultUserCapTokens = 20_000

// EvidenceFloorTokens is the room the evidence (timeline, files, errors,
// identifiers) keeps when the user messages crowd the budget: the budget
// grows to leave min(half of it, EvidenceFloorTokens) after the header,
// the user messages and the current state.
const EvidenceFloorTokens = 256

type renderer struct {
	cache  *ExtractCache
	count  func(string) int
	budget int // the wrapped text never exceeds it
	cap    int // user messages' tokens
}

// cost is the tokens a line adds to the wrapped text, with its newline.
func (r *renderer) cost(s string) int {
	return r.cache.count(briefd.EscapeBriefing(s)+"\n", r.count)
}

// exact counts the wrapped text as the agent will see it.
func (r *renderer) exact(text string) int { return r.count(briefd.WrapBriefing(text)) }

// section is a run of lines with their estimated cost.
type section struct {
	lines []string
	cost  int
}

func (s *section) add(r *renderer, line string) {
	s.lines = append(s.lines, line)
	s.cost += r.cost(line)
}

func (r *renderer) userBlock(in Instruction) string {
	prefix := "[" + strings.Join(in.IDs, ", ") + "]"
	if len(in.IDs) > 1 {
		prefix += " (sent " + strconv.Itoa(len(in.IDs)) + "×)"
	}
	return prefix + " " + in.Text
}

// shortenUser returns the visible, shortened form of a user message.
func shortenUser(in Instruction, keep int) string {
	head := clipHead(in.Text, keep)
	// End on a space so no identifier is cut into a new one.
	if i := strings.LastIndexAny(head, " \n\t"); i > 0 && len(head) < len(in.Text) {
		head = head[:i]
	}
	prefix := "[" + strings.Join(in.IDs, ", ") + "]"
	if keep <= 0 {
		return prefix + " [user message omitted for size: " + fmtCount(len(in.Text)) + " chars]"
	}
	return prefix + " " + head + " […shortened for size: first " + fmtCount(len(head)) + " of " + fmtCount(len(in.Text)) + " chars]"
}

// mandatory is what every briefing carries whatever its budget.
type mandatory struct {
	head, users, state section
	usersText          string // the user blocks, for coverage checks
	wrap               int    // tokens of the wrapper around the text
}

func (m *mandatory) cost() int { return m.wrap + m.head.cost + m.users.cost + m.state.cost }

// mandatoryParts renders the header, the user messages under the user cap
// and the current state.
func (r *renderer) mandatoryParts(l *Ledger, header string) mandatory {
	var m mandatory
	m.wrap = r.cache.count(briefd.WrapBriefing(""), r.count)
	m.head.add(r, header)

	blocks := make([]string, len(l.UserInstructions))
	costs := make([]int, len(l.UserInstructions))
	total := 0
	for i, in := range l.UserInstructions {
		blocks[i] = r.userBlock(in)
		costs[i] = r.cost(blocks[i])
		total += costs[i]
	}
	for _, keep := range []int{400, 0} {
		for i := 0; i < len(blocks) && total > r.cap; i++ {
			short := shortenUser(l.UserInstructions[i], keep)
			if c := r.cost(short); c < costs[i] {
				total += c - costs[i]
				blocks[i], costs[i] = short, c
			}
		}
	}
	if len(blocks) > 0 {
		m.users.add(r, "")
		m.users.add(r, "## User messages (verbatim, oldest first)")
		for _, b := range blocks {
			m.users.add(r, b)
		}
		m.usersText = strings.Join(blocks, "\n")
	}

	m.state.add(r, "")
	m.state.add(r, "## Current state")
	if l.CurrentState != "" {
		m.state.add(r, l.CurrentState)
	}
	unresolved := 0
	for _, e := range l.Errors {
		if !e.Resolved {
			unresolved++
		}
	}
	if unresolved > 0 {
		m.state.add(r, strconv.Itoa(unresolved)+" error(s) without evidence of resolution (see Errors).")
	}
	if l.NextStep != "" {
		m.state.add(r, "Next step (stated by the assistant; not done unless later messages show it): "+l.NextStep)
	}
	return m
}

// pools are the optional lines, most important first within each pool.
type pools struct {
	task   string
	prev   []string // an earlier briefing's text, when its ledger is unknown
	prevH  string
	errs   []string
	files  []string
	tl     []tlLine
	idents []int // l.Identifiers by rank
}

// selection is how much of each pool the text shows.
type selection struct {
	task         bool
	prevFrom     int  // prev[prevFrom:] shown
	errs, files  int  // prefixes shown
	tlFrom       int  // tl[tlFrom:] shown
	tlSummary    bool // no step line fits: one condensed line for them all
	picked       []int
	pickedValues int
}

// fill chooses the optional lines for room tokens (estimates).
func (r *renderer) fill(l *Ledger, p *pools, m *mandatory, room int) selection {
	sel := selection{prevFrom: len(p.prev), tlFrom: len(p.tl)}
	secHdr := r.cost("") + 8 // a blank line and a "## Title" line
	used := 0
	fits := func(c int) bool { return used+c <= room }
	if p.task != "" && room > 160 {
		if c := r.cost("") + r.cost("## Task") + r.cost(p.task); fits(c) {
			used += c
			sel.task = true
		}
	}
	// Earlier briefing text (unknown ledger): its newest lines, a third.
	if len(p.prev) > 0 {
		share, c := room/3, secHdr+r.cost("[9,999 earlier lines of it condensed]")
		for sel.prevFrom > 0 {
			lc := r.cost(p.prev[sel.prevFrom-1])
			if c+lc > share {
				break
			}
			c += lc
			sel.prevFrom--
		}
		if sel.prevFrom < len(p.prev) && fits(c) {
			used += c
		} else {
			sel.prevFrom = len(p.prev)
		}
	}
	take := func(pool []string, n *int, share int) {
		c := 0
		if *n == 0 {
			c = secHdr
		}
		for *n < len(pool) {
			lc := r.cost(pool[*n])
			if c+lc > share || !fits(c+lc) {
				break
			}
			c += lc
			*n++
		}
		if *n > 0 {
			used += c
		}
	}
	condensedCost := r.cost("[999 earlier steps condensed: 999 search_direct_flight, 999 get_reservation_details, 999 edited, 999 searched, 99 said, 99 user, 9 other; m0000–m9999]")
	takeTL := func(share int) {
		c := 0
		if sel.tlFrom == len(p.tl) {
			c = secHdr + condensedCost
		}
		for sel.tlFrom > 0 {
			lc := r.cost(p.tl[sel.tlFrom-1].text)
			if c+lc > share || !fits(c+lc) {
				break
			}
			c += lc
			sel.tlFrom--
		}
		if sel.tlFrom < len(p.tl) {
			used += c
		}
	}
	// The newest unresolved error is worth its line whatever the share:
	// the state line points to it.
	errShare := room * 10 / 100
	if len(p.errs) > 0 {
		errShare = max(errShare, secHdr+r.cost(p.errs[0]))
	}
	take(p.errs, &sel.errs, errShare)
	take(p.files, &sel.files, room*15/100)
	takeTL(room * 20 / 100)
	if sel.tlFrom == len(p.tl) && len(p.tl) > 0 && fits(secHdr+condensedCost) {
		// What was done must not vanish: at least one line of counts.
		sel.tlSummary = true
		used += secHdr + condensedCost
	}

	// Identifiers by rank, skipping those the text already quotes.
	var shown strings.Builder
	shown.WriteString(m.usersText)
	shown.WriteString(strings.Join(m.state.lines, "\n"))
	if sel.task {
		shown.WriteString(p.task)
	}
	for _, s := range p.errs[:sel.errs] {
		shown.WriteString(s)
	}
	for _, s := range p.files[:sel.files] {
		shown.WriteString(s)
	}
	for _, s := range p.tl[sel.tlFrom:] {
		shown.WriteString(s.text)
	}
	for _, s := range p.prev[sel.prevFrom:] {
		shown.WriteString(s)
	}
	// Coverage by token, not substring: a scan of the shown text is linear,
	// where a substring search per candidate was the slowest part of a
	// warm briefing. Parts of tokens (a path's basename, a date's year)
	// count as covered too.
	covered := coveredSet(shown.String())
	identHdr := secHdr + r.cost("[9,999 other identifiers are quoted above or were left out for size]")
	c := identHdr
	groups := map[string]bool{}
	for _, i := range p.idents {
		e := &l.Identifiers[i]
		// A value and its separator (about 4 bytes a token for these
		// strings); a new group line adds its message id. The final text
		// is counted exactly, so an estimate only costs a retry.
		ic := (len(e.Value)+2)/3 + 1
		g := firstID(e.IDs)
		if !groups[g] {
			ic += 4
		}
		if !fits(c + ic) {
			if room-used-c < 3 {
				break
			}
			continue
		}
		if covered[e.Value] {
			continue
		}
		groups[g] = true
		c += ic
		sel.picked = append(sel.picked, i)
		addCovered(covered, e.Value)
	}
	if len(sel.picked) > 0 {
		used += c
	}
	// Leftovers: older steps, more files, more errors.
	if sel.tlSummary {
		// Step lines replace the summary line if any fit now.
		used -= secHdr + condensedCost
		sel.tlSummary = false
		takeTL(room)
		if sel.tlFrom == len(p.tl) {
			sel.tlSummary = true
			used += secHdr + condensedCost
		}
	} else {
		takeTL(room)
	}
	take(p.files, &sel.files, room)
	take(p.errs, &sel.errs, room)
	return sel
}

// coveredSet returns the identifiers of text and their parts.
func coveredSet(text string) map[string]bool {
	set := map[string]bool{}
	scanIdentifiers(text, func(id string) { addCovered(set, id) })
	return set
}

// addCovered adds id and every part of it that starts or ends at a
// separator: django/db/models.py covers models.py and django/db, and
// 2024-05-19 covers 2024.
func addCovered(set map[string]bool, id string) {
	if set[id] {
		return
	}
	set[id] = true
	for i := 0; i < len(id); i++ {
		switch id[i] {
		case '/', '.', '-', '_', ':':
			if i > 0 {
				set[id[:i]] = true
			}
			if i+1 < len(id) {
				set[id[i+1:]] = true
			}
		}
	}
}

// compose writes the text of a selection in reading order.
func (r *renderer) compose(l *Ledger, p *pools, m *mandatory, sel selection) string {
	out := append([]string(nil), m.head.lines...)
	if sel.task {
		out = append(out, "", "## Task", p.task)
	}
	out = append(out, m.users.lines...)
	if sel.prevFrom < len(p.prev) {
		out = append(out, "", p.prevH)
		if sel.prevFrom > 0 {
			out = append(out, "["+fmtCount(sel.prevFrom)+" earlier lines of it condensed]")
		}
		out = append(out, p.prev[sel.prevFrom:]...)
	}
	if sel.tlFrom < len(p.tl) {
		out = append(out, "", "## What was done (oldest first)")
		if sel.tlFrom > 0 {
			out = append(out, condensedSummary(l.Timeline[:p.tl[sel.tlFrom-1].end]))
		}
		for _, ln := range p.tl[sel.tlFrom:] {
			out = append(out, ln.text)
		}
	}
	if sel.tlSummary && sel.tlFrom == len(p.tl) {
		out = append(out, "", "## What was done (oldest first)", condensedSummary(l.Timeline))
	}
	if sel.files > 0 {
		out = append(out, "", "## Files (what happened to each; message ids)")
		out = append(out, p.files[:sel.files]...)
	}
	if sel.errs > 0 {
		out = append(out, "", "## Errors")
		out = append(out, p.errs[:sel.errs]...)
	}
	if len(sel.picked) > 0 {
		out = append(out, identLines(l, sel.picked)...)
	}
	state := m.state.lines
	if sel.tlFrom < len(p.tl) && l.CurrentState != "" {
		// The last step is the timeline's last line: name it, not repeat it.
		last := p.tl[len(p.tl)-1]
		if lastStep := "Last step (" + firstID(last.ids) + "): "; strings.HasPrefix(l.CurrentState, lastStep) && strings.HasSuffix(last.text, l.CurrentState[len(lastStep):]) {
			state = append([]string(nil), state...)
			for i, s := range state {
				if s == l.CurrentState {
					state[i] = "Last step: " + firstID(last.ids) + ", the last line of What was done."
				}
			}
		}
	}
	out = append(out, state...)
	return strings.Join(out, "\n")
}

// identLines groups identifiers by the message they first appear in, in
// message order, one line per message.
func identLines(l *Ledger, picked []int) []string {
	type group struct {
		id   string
		vals []string
		pos  int
	}
	var groups []*group
	byID := map[string]*group{}
	for _, i := range picked {
		e := &l.Identifiers[i]
		id := firstID(e.IDs)
		g := byID[id]
		if g == nil {
			g = &group{id: id, pos: i}
			byID[id] = g
			groups = append(groups, g)
		}
		g.pos = min(g.pos, i)
		g.vals = append(g.vals, e.Value)
	}
	sort.SliceStable(groups, func(a, b int) bool { return groups[a].pos < groups[b].pos })
	out := []string{"", "## Identifiers (verbatim, after the id of the message they first appear in)"}
	for _, g := range groups {
		out = append(out, g.id+": "+strings.Join(g.vals, ", "))
	}
	if n := len(picked); n < len(l.Identifiers) {
		out = append(out, "["+fmtCount(len(l.Identifiers)-n)+" other identifiers are quoted above or were left out for size]")
	}
	return out
}

// rankIdents orders identifiers by score, ties by first appearance.
func rankIdents(ids []IdentEntry) []int {
	idx := make([]int, len(ids))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ids[idx[a]].score > ids[idx[b]].score })
	return idx
}

func idList(ids []string, max int) string {
	if len(ids) <= max {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:max], ", ") + " +" + strconv.Itoa(len(ids)-max)
}

// errorLines lists errors, unresolved first, newest first; identical
// errors collapse into one line with their count and ids.
func errorLines(l *Ledger) []string {
	type group struct {
		text     string
		ids      []string
		resolved bool
		by       string
	}
	var groups []*group
	byKey := map[string]*group{}
	for i := len(l.Errors) - 1; i >= 0; i-- {
		e := l.Errors[i]
		text := oneLine(e.Text, 160)
		key := text + "\x00" + strconv.FormatBool(e.Resolved)
		g := byKey[key]
		if g == nil {
			g = &group{text: text, resolved: e.Resolved, by: firstID(e.ResolvedBy)}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, firstID(e.IDs))
	}
	var un, res []string
	for _, g := range groups {
		ids := g.ids
		slices.Reverse(ids)
		line := "- (" + idList(ids, 4)
		if len(ids) > 1 {
			line += "; " + strconv.Itoa(len(ids)) + "×"
		}
		line += ") " + g.text
		if g.resolved {
			res = append(res, line+" → resolved: the same step later succeeded ("+g.by+")")
		} else {
			un = append(un, line+" → no evidence of resolution")
		}
	}
	return append(un, res...)
}

// fileLines lists files: written ones first, then by how often touched.
func fileLines(l *Ledger) []string {
	idx := make([]int, len(l.Files))
	for i := range idx {
		idx[i] = i
	}
	written := func(f *FileEntry) bool {
		for _, a := range f.Actions {
			if a == "edited" || a == "created" {
				return true
			}
		}
		return false
	}
	sort.SliceStable(idx, func(a, b int) bool {
		fa, fb := &l.Files[idx[a]], &l.Files[idx[b]]
		if wa, wb := written(fa), written(fb); wa != wb {
			return wa
		}
		return len(fa.IDs) > len(fb.IDs)
	})
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		f := &l.Files[i]
		out = append(out, "- "+f.Path+": "+strings.Join(f.Actions, ", ")+" ("+idList(f.IDs, 4)+")")
	}
	return out
}

// fmtCount writes n with thousands separators ("4,591"), so that a count in
// a marker is never read as an identifier of the conversation.
func fmtCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
