package brief

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The state and the next step, derived from the model: what changed (or
// that nothing did), what the last check after the last change showed, what
// is still failing, and the first thing nobody has done yet.

// stateLines say what the span left changed, verified and broken, one
// fact a line: the state is read first and must read in one pass.
func (m *model) stateLines() []string {
	var parts []string
	var changed, scratch []string
	for _, f := range m.sortedFiles() {
		switch {
		case f.movedTo != "" && f.created != "":
			scratch = append(scratch, f.name()+" (moved to "+f.movedTo+")")
		case !f.net():
		case f.movedTo != "":
			changed = append(changed, f.name()+" moved to "+f.movedTo)
		case f.deleted != "":
			changed = append(changed, f.name()+" deleted")
		case f.created != "":
			scratch = append(scratch, f.name())
		default:
			changed = append(changed, f.name())
		}
	}
	var recs []string
	for _, r := range m.sortedRecords() {
		if len(r.changed) > 0 {
			recs = append(recs, r.id+" "+cmpOr(r.status, "changed")+" ["+r.changed[len(r.changed)-1]+"]")
		}
	}
	// Mutating calls whose target was never read as a record.
	for _, s := range m.steps {
		if s.f.call.kind == kindMutate && !s.failed && len(s.records) == 0 && s.f.call.target != "" && m.records[s.f.call.target] == nil {
			recs = append(recs, s.f.call.tool+" "+s.f.call.target+" ["+s.id()+"]")
		}
	}
	var earlier []string
	if m.prior != nil {
		for _, e := range m.prior.entries[secFiles] {
			rest := strings.TrimPrefix(strings.TrimPrefix(e.Text, "- "), e.Key+": ")
			if e.Key != "" && !strings.HasPrefix(rest, "read ") && !strings.HasPrefix(rest, "does not exist") && !slices.Contains(changed, e.Key) {
				earlier = append(earlier, e.Key)
			}
		}
	}
	switch {
	case len(changed) > 0:
		parts = append(parts, "changed: "+strings.Join(changed, ", "))
	case len(scratch) == 0 && len(recs) == 0 && len(earlier) == 0 && m.prior == nil:
		if m.hasEditTools() {
			parts = append(parts, "no file changed yet")
		} else {
			parts = append(parts, "no call has changed anything yet")
		}
	}
	if len(earlier) > 0 {
		parts = append(parts, "changed before this span (see FILES): "+strings.Join(earlier, ", "))
	}
	if len(scratch) > 0 {
		t := "created and still present: " + strings.Join(scratch, ", ")
		if failing, _ := m.stillFailing(); failing != nil && len(changed) == 0 && len(earlier) == 0 && m.prior == nil && m.hasEditTools() && !m.touchedExisting() {
			// A failing run is then the failure before any fix (a
			// reproduction), not a fix that did not work.
			t = "changed: nothing that existed before; " + t
		}
		parts = append(parts, t)
	}
	if len(recs) > 0 {
		parts = append(parts, "records changed: "+strings.Join(recs, ", "))
	}
	check, _ := m.lastCheck()
	failing, others := m.stillFailing()
	more := ""
	if others > 0 {
		more = " (and " + plural(others, "other error") + " still open)"
	}
	switch {
	case failing != nil && failing == m.checkFails():
		// The last check is what still fails: told once.
		parts = append(parts, check+" — still failing"+more)
	case failing != nil:
		if check != "" {
			parts = append(parts, check)
		}
		t := "still failing: " + clip(failing.line, 100) + " [" + failing.ids[len(failing.ids)-1] + "]"
		if f := failing.failedEdit(); f != "" {
			t = "the last edit of " + shortPath(f) + " was not made: " + clip(failing.line, 100) + " [" + failing.ids[len(failing.ids)-1] + "]"
			if fs := m.knownFile(f); fs != nil && len(fs.changes) > 0 && m.stepAt(fs.changes[len(fs.changes)-1].id) < failing.n {
				// "changed: F" above is an earlier edit that landed.
				t = "an edit of " + shortPath(f) + " after its change [" + fs.changes[len(fs.changes)-1].id + "] was refused: " +
					clip(failing.line, 100) + " [" + failing.ids[len(failing.ids)-1] + "]"
			}
		}
		switch {
		case failing.explainedAt != "":
			t += ", explained by the agent [" + failing.explainedAt + "]"
		case failing.unrelated():
			t += ", judged unrelated to the change by the agent [" + failing.lastFailed.lastID() + "]"
		}
		parts = append(parts, t+more)
	case check != "":
		parts = append(parts, check)
	}
	if m.finished != nil {
		parts = append(parts, "finish called ["+m.finished.id()+"]")
	}
	if len(parts) == 0 {
		return []string{"no change recorded in this span"}
	}
	return parts
}

// touchedExisting reports a file that was there before the span changed
// at some point, even if undone since (a failure then may be the edit's),
// or a command that may edit files the steps do not name: a change
// read without a file (git apply fix.patch) or an in-place editor the
// steps are not read for (perl -pi).
func (m *model) touchedExisting() bool {
	for _, f := range m.files {
		if f.created == "" && (len(f.changes) > 0 || len(f.undone) > 0 || f.deleted != "" || f.movedTo != "") {
			return true
		}
	}
	// The steps only grow: each is read once (a warm model keeps the scan).
	for ; m.unreadEditsN < len(m.steps); m.unreadEditsN++ {
		c := &m.steps[m.unreadEditsN].f.call
		if c.kind.changes() && len(c.ops) == 0 || unreadEditRe.MatchString(c.label) {
			m.unreadEdits = true
		}
	}
	return m.unreadEdits
}

var unreadEditRe = regexp.MustCompile(`\b(?:perl|ruby)\s+-[a-zA-Z]*i|\bawk\s+-i\s+inplace|\bgit\s+(?:stash\s+pop|cherry-pick|merge|rebase)\b|\bed\s`)

// stillFailing returns the newest error still open among the last steps,
// which the state shows, and how many other open ones ERRORS lists.
func (m *model) stillFailing() (*errState, int) {
	var newest *errState
	open := 0 // all of them, as ERRORS lists them
	for _, e := range m.errors {
		if e.open() && !e.expected() { // an explained failure is not one still open
			open++
			if e.n >= len(m.steps)-8 && (newest == nil || e.n >= newest.n) {
				newest = e // an error seen again is as new as its last sighting
			}
		}
	}
	if newest == nil {
		return nil, 0
	}
	if f := newest.failedEdit(); f != "" {
		// Earlier refusals of an edit of the same file are the same
		// change not yet made, not other errors.
		for _, e := range m.errors {
			if e != newest && e.open() && !e.expected() && e.failedEdit() == f {
				open--
			}
		}
	}
	return newest, open - 1
}

// hasEditTools reports whether the agent works on files (shell or editor
// tools) rather than through API tools.
func (m *model) hasEditTools() bool {
	for _, s := range m.steps {
		switch s.f.call.kind {
		case kindLookup, kindMutate:
			return false
		}
	}
	return true
}

// checkMemo is lastCheck's answer and the steps it was read from. The
// check's result is read at short detail, which for a run, a test or a
// request does not read the step's reaction (set after the step is
// added): were a check's short result to read it, the memo would need it
// in its key (TestWarmWriteIdentity).
type checkMemo struct {
	steps int
	last  *step
	line  string
	step  *step
	shown string // the result the line tells
}

// lastCheck tells the last test or run after the last change, and its
// outcome, with its step; or that nothing ran since. It reads the steps
// alone (their facts, fixed when read), so it is kept until one is added.
func (m *model) lastCheck() (string, *step) {
	c := &m.check
	if n := len(m.steps); n == 0 || c.steps != n || c.last != m.steps[n-1] {
		*c = checkMemo{steps: n}
		if n > 0 {
			c.last = m.steps[n-1]
		}
		c.line, c.step, c.shown = m.readLastCheck()
	}
	return c.line, c.step
}

// toState is a result told by pointing at the state's last check, which
// quotes it. A folded briefing's pointers are given their result back
// (prior.resolveInState): the next briefing's state tells another check.
const toState = "the last check, in STATE"

// checkPrefix begins the state's line of the last check.
const checkPrefix = "last check after the last change: ["

// errInState begins the line of ERRORS for the error the state's last
// check still fails with (checkFails): the state quotes it.
const errInState = "the error of the last check, in STATE"

// pointsToState reports a line that points at the state's last check.
func pointsToState(line string) bool {
	return strings.Contains(line, "→ "+toState) || strings.HasPrefix(line, "- "+errInState)
}

// pointedTo gives a line that points at the state's last check the result
// it points to: for a record that stands alone, or a folded briefing whose
// state the next one replaces.
func pointedTo(line, result string) string {
	// The state's quote may end cut ("…") where the line goes on with the
	// rest: told whole, the two join.
	whole := strings.TrimSuffix(result, "…")
	if rest, ok := strings.CutPrefix(line, "- "+errInState); ok {
		return "- " + result + rest // cut as the state's quote is: the rest of the output may be
	}
	if strings.Contains(line, "→ "+toState+thenTold) {
		return strings.Replace(line, "→ "+toState+thenTold, "→ "+whole+" | ", 1)
	}
	return strings.Replace(line, "→ "+toState, "→ "+result, 1)
}

// thenTold follows toState in a line that tells what the state's quote
// of the check leaves out: "→ the last check, in STATE, then: Reproduced".
const thenTold = ", then: "

// checkFails returns the error the state's last check still fails with,
// which the state tells ("— still failing"), or nil.
func (m *model) checkFails() *errState {
	failing, _ := m.stillFailing()
	if _, cs := m.lastCheck(); failing == nil || cs == nil || failing.ids[len(failing.ids)-1] != cs.id() {
		return nil
	}
	return failing
}

// pointable reports whether a line may point at the state's line of s, the
// last check: not when its call itself reads " → ", since a folded
// briefing finds the check's result after the first arrow of that line.
func pointable(s *step) bool { return !strings.Contains(callText(s, 70), " → ") }

// checkShown is the result the state's line of the last check tells.
func (m *model) checkShown() string {
	m.lastCheck()
	return m.check.shown
}

// isCheck reports whether s is the last check the state tells.
func (m *model) isCheck(s *step) bool {
	_, cs := m.lastCheck()
	return s != nil && s == cs
}

// toldInState reports whether res, the result of s, is the last check's
// result that the state quotes (or a shorter cut of it): its line then
// points there rather than quote it again (where pointable).
func (m *model) toldInState(s *step, res string) bool {
	if !m.isCheck(s) || len(res) <= 40 || !pointable(s) {
		return false
	}
	return strings.HasPrefix(m.checkShown(), strings.TrimSuffix(res, "…"))
}

// readLastCheck is lastCheck's answer, and the result its line tells.
func (m *model) readLastCheck() (line string, check *step, shown string) {
	lastChange := -1
	for _, s := range m.steps {
		if (s.f.call.kind == kindEdit || s.f.call.kind == kindWrite || s.f.call.kind == kindRevert) && (!s.failed || runsAfterChange(s)) && !allNoop(s) {
			lastChange = s.n
		}
	}
	if lastChange < 0 {
		return "", nil, ""
	}
	if s := m.steps[lastChange]; runsAfterChange(s) {
		check = s // sed -i … && python x.py: the same command checked it
	}
	for _, s := range m.steps[lastChange+1:] {
		if k := s.f.call.kind; k == kindTest || k == kindRun || k == kindHTTP || s.f.call.builds || s.f.call.ranAfterChange {
			check = s
		}
	}
	if check == nil {
		return "not run, tested or sent since the last change [" + m.steps[lastChange].id() + "]", nil, ""
	}
	res := resultText(m, check, levelShort)
	if p := check.prevRun; p != nil && strings.HasPrefix(res, "the same output as") {
		// The state reads on its own: the output itself, from the first
		// of the runs that printed it ("the same output as [m0079]", which
		// was the same as [m0073], is m0073's), and only the output: that
		// run's edit or exit status is not the check's.
		prev := outputText(p, levelShort)
		for seen := 0; strings.HasPrefix(prev, "the same output as") && p.prevRun != nil && seen < 64; seen++ {
			p = p.prevRun
			prev = outputText(p, levelShort)
		}
		res += ": " + prev
	}
	shown = clipResult(res, checkRoom)
	return checkPrefix + check.id() + "] " + callText(check, 70) + " → " + shown, check, shown
}

// checkRoom is the most bytes of its result the state's line of the last
// check quotes; a step line whose result that holds whole points there
// (toldInState), and one it holds the first lines of tells the rest
// (thenTold).
const checkRoom = 160

// clipResult clips a result told as lines picked from an output ("first
// … picked … last (23 lines)") to max bytes: the picked lines between go
// first, then the first line is cut, so that the last line, where a
// script prints its conclusion, stays.
func clipResult(res string, max int) string {
	if len(res) <= max {
		return res
	}
	body, tail := res, ""
	if i := strings.LastIndex(res, " ("); i > 0 && strings.HasSuffix(res, " lines)") {
		body, tail = res[:i], res[i:]
	}
	parts := strings.Split(body, " … ")
	if len(parts) < 2 || parts[0] == "" {
		return clip(res, max)
	}
	last := parts[len(parts)-1]
	rest := max - len(tail) - len(" … ") - len(last)
	if rest < 40 {
		return clip(res, max)
	}
	// The first line, then as many picked lines as fit, then the last.
	out := clip(parts[0], rest)
	for _, p := range parts[1 : len(parts)-1] {
		if len(out)+len(" … ")+len(p) > rest {
			break
		}
		out += " … " + p
	}
	return out + " … " + last + tail
}

// runsAfterChange reports whether a command both changed a file and ran
// something after the change.
func runsAfterChange(s *step) bool {
	if s.f.call.ranAfterChange {
		return true
	}
	changed := false
	for _, op := range s.f.call.ops {
		switch op.op {
		case kindEdit, kindWrite:
			changed = true
		case kindRun:
			if changed {
				return true
			}
		}
	}
	return false
}

// allNoop reports a step whose every change changes nothing.
func allNoop(s *step) bool {
	changes := 0
	for _, op := range s.f.call.ops {
		if op.op == kindEdit || op.op == kindWrite || op.op == kindRevert || op.op == kindDelete {
			if !op.noop {
				return false
			}
			changes++
		}
	}
	return changes > 0
}

// nextText derives the next step: the unread rest of a list being gone
// through, an unanswered question to the user, the latest stated intention
// no call carried out, the one path a last search found, the error still
// open; else nothing (""). A question is quoted in at most quote bytes.
func (m *model) nextText(quote int) string {
	var unread *idList
	if u := m.unread(); len(u) > 0 {
		unread = &u[len(u)-1]
	}
	// A question the agent asked last is what the next message answers:
	// it comes before the records still to read, named then by their ids
	// alone (the record that lists them is in RECORDS).
	if m.asked != nil && m.asked.n == len(m.steps) {
		t := "the user has not yet answered [" + m.asked.id + "]: \"" + endingOf(plainText(m.asked.text), quote) + "\""
		if unread != nil {
			t += "; not yet read: " + strings.Join(unread.ids, ", ")
		}
		return t
	}
	if l := unread; l != nil {
		return "read " + strings.Join(l.ids, ", ") + " (" + l.field + " of " + l.owner + " [" + l.id + "], not yet read)."
	}
	if d := m.drafted; d != nil && d.n == len(m.steps) && d.n > 0 {
		// "Let's run it." names nothing: what it meant is the message's
		// own commands, and none of them ran.
		return "[" + d.id + "] wrote commands but made no tool call, so none ran: " + d.text + "."
	}
	for i := len(m.intents) - 1; i >= 0; i-- {
		in := m.intents[i]
		if !in.done && in.n >= len(m.steps)-2 {
			t := "stated at [" + in.id + "], not yet done: \"" + clip(in.text, 220) + "\""
			if !namesFile(in.text) {
				// The sentence names no file: its message's own call says
				// where the agent was working.
				for _, st := range m.steps {
					if st.id() == in.id && strings.Contains(st.f.call.label, "/") {
						t += " (its message's call: " + clip(st.f.call.label, 100) + ")"
						break
					}
				}
			}
			return t
		}
	}
	if n := len(m.steps); n > 0 {
		last := m.steps[n-1]
		if last.f.call.kind == kindSearch && !last.failed {
			if hits, k := searchHits(last.f.out.lines); k == 1 {
				p := hitFiles(hits)
				if len(p) == 1 {
					if f := m.file(p[0], false); f == nil || len(f.views) == 0 {
						return "open " + p[0] + ", the one hit of the last search [" + last.id() + "]."
					}
				}
			}
		}
	}
	failing, _ := m.stillFailing()
	var open *errState // the newest open error, by its last sighting
	for _, e := range m.errors {
		if e.open() && !e.unrelated() && e.n >= len(m.steps)-3 && (open == nil || e.n >= open.n) {
			open = e
		}
	}
	if e := open; e != nil {
		if f := e.failedEdit(); f != "" {
			said := " (\"" + clip(e.line, 90) + "\")"
			if e == failing {
				said = " (the refusal STATE quotes)" // read just before
			}
			if ids, _ := m.refusals(f); len(ids) > 1 {
				said = " (" + strconv.Itoa(len(ids)) + " tries)" + said
			}
			left := "which left the file unchanged"
			if fs := m.knownFile(f); fs != nil && len(fs.changes) > 0 {
				left = "so the file has only the changes FILES lists" // an earlier edit of it did land
			}
			return "the change to " + shortPath(f) + " is still to be made: its edit was refused at [" + e.ids[len(e.ids)-1] + "]" + said + ", " + left + "."
		}
		if e == failing {
			// Quoted in full in the state, read just before.
			return "resolve what still fails (STATE): \"" + clip(e.line, 60) + "\" [" + e.ids[len(e.ids)-1] + "]."
		}
		return "resolve \"" + clip(e.line, 140) + "\" [" + e.ids[len(e.ids)-1] + "]."
	}
	if m.finished != nil {
		return "the agent called finish [" + m.finished.id() + "]; see the kept messages."
	}
	// Nothing stated is open: the kept messages go on from here, and the
	// state line already tells what is left over (files still present, the
	// last check). A line saying so would only take room.
	return ""
}

// lastSentences returns the last n sentences of a text.
func lastSentences(text string, n int) string {
	s := sentences(text)
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.Join(s, " ")
}

// countKinds names the kinds of a set of steps: "5 view, 3 search".
func countKinds(steps []*step) string {
	var counts [256]int // by kind
	var order []kind
	for _, s := range steps {
		k := s.f.call.kind
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, strconv.Itoa(counts[k])+" "+k.String())
	}
	return strings.Join(parts, ", ")
}

var fileNameRe = regexp.MustCompile(`^[\w.-]+\.[A-Za-z]{1,5}$`)

// namesFile reports whether a sentence names a path or a file.
func namesFile(t string) bool {
	for _, w := range strings.Fields(t) {
		w = strings.Trim(w, "`'\"()[]{},;:!?")
		w = strings.TrimSuffix(w, ".")
		if strings.Contains(w, "/") || fileNameRe.MatchString(w) {
			return true
		}
	}
	return false
}

// emphasis is markdown's bold and italics markers, which cut into a
// quote's sentences as "Total Cost:** $239".
var emphasis = strings.NewReplacer("**", "", "__", "")

// plainText is an agent's message without markdown emphasis, for quoting.
func plainText(t string) string { return emphasis.Replace(t) }
