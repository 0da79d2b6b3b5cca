package brief

import (
	"hash/maphash"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What one step showed, in words, at three levels of detail: full (the
// result with the lines the agent reacted to and its own reading of it),
// short (the result's gist), minimal (the call and its outcome). The
// renderer picks a level per step by priority and recency.

const (
	levelFull = iota
	levelShort
	levelMin
	levels
)

// group is one or more consecutive steps told as one line: retries of the
// same call with the same outcome, or a run of searches that found nothing.
type group struct {
	steps    []*step
	negative bool // searches with no match
	// line memoizes what its line reads (see model.groupLine): a group's
	// steps do not change once grouped.
	line *groupLine
}

func (g *group) first() *step { return g.steps[0] }
func (g *group) last() *step  { return g.steps[len(g.steps)-1] }

// groupSteps merges consecutive steps that tell the same thing.
func groupSteps(steps []*step) []*group {
	return appendGroups(nil, steps)
}

// appendGroups goes on grouping steps after the groups out, the last of
// which the first step may join.
func appendGroups(out []*group, steps []*step) []*group {
	for _, s := range steps {
		if len(out) > 0 {
			g := out[len(out)-1]
			p := g.last()
			switch {
			case g.negative && noMatch(s):
				g.steps = append(g.steps, s)
				continue
			case p.f.call.label == s.f.call.label && sameOutcome(p, s) && !s.f.call.kind.changes():
				g.steps = append(g.steps, s)
				continue
			}
		}
		out = append(out, &group{steps: []*step{s}, negative: noMatch(s)})
	}
	return out
}

// noMatch reports a search (or a listing of a path) that found nothing.
// It is read once per step: what it reads is fixed when the step is.
func noMatch(s *step) bool {
	if s.noMatch == 0 {
		s.noMatch = 1
		if readNoMatch(s) {
			s.noMatch = 2
		}
	}
	return s.noMatch == 2
}

func readNoMatch(s *step) bool {
	k := s.f.call.kind
	if k != kindSearch {
		return false
	}
	o := &s.f.out
	if cutAt(o.lines) != "" {
		return false // cut: what it found may be in the part left out
	}
	if o.empty && !s.failed {
		return true
	}
	_, n := searchHits(o.lines)
	return n == 0 && !s.failed && len(binaryMatches(o.lines)) == 0
}

func sameOutcome(a, b *step) bool {
	return outcomeKey(a) == outcomeKey(b) && a.f.out.totalLines == b.f.out.totalLines
}

// ids renders the group's message ids: [m0007] or [m0007, m0011] or
// [m0010–m0018].
func (g *group) ids() string {
	if len(g.steps) == 1 {
		return "[" + g.first().id() + "]"
	}
	if len(g.steps) > 3 {
		return "[" + g.first().id() + "–" + g.last().lastID() + "]"
	}
	parts := make([]string, len(g.steps))
	for i, s := range g.steps {
		parts[i] = s.id()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// text renders the group at a level.
func (g *group) text(m *model, level int) string {
	s := g.last()
	if g.negative && len(g.steps) > 1 {
		var labels []string
		for _, x := range g.steps {
			labels = appendNew(labels, clip(x.f.call.label, []int{90, 60, 40}[level]))
		}
		max := []int{5, 3, 2}[level]
		more := ""
		if len(labels) > max {
			more = "; +" + strconv.Itoa(len(labels)-max) + " more"
			labels = labels[:max]
		}
		return g.ids() + " " + strconv.Itoa(len(g.steps)) + " searches, no match: " + strings.Join(labels, "; ") + more
	}
	labelMax := []int{140, 90, 60}[level]
	var b strings.Builder
	b.WriteString(g.ids())
	b.WriteByte(' ')
	b.WriteString(callText(s, labelMax))
	if len(g.steps) > 1 {
		b.WriteString(" (×" + strconv.Itoa(len(g.steps)) + ")")
	}
	if r, more := m.repeated(g.first()); len(r) > 0 {
		ids := make([]string, len(r))
		for i, e := range r {
			ids[i] = e.id()
		}
		t := strings.Join(ids, ", ")
		if more > 0 {
			t += " and " + strconv.Itoa(more) + " more"
		}
		b.WriteString(" (same answer as " + t + ")")
	}
	// The runs of a group printed the same: the first one's result says
	// what it printed (the later ones would say "the same output as" it).
	res := m.stepResult(g.first(), level)
	if res != "" {
		b.WriteString(" → ")
		b.WriteString(res)
	}
	if level == levelFull {
		if r := reading(s); r != "" {
			b.WriteString(" Agent: \"" + r + "\"")
		}
	}
	return b.String()
}

// stepResult is a step's result as its line in STEPS tells it. What
// another line of the briefing already quotes is pointed to, not quoted
// again: the last check's result, which STATE tells, and an error seen
// before (one error of ERRORS), told in full by the step that first
// showed it (a run repeated while debugging fails the same way each time,
// and its news is the agent's reading, not the error).
func (m *model) stepResult(s *step, level int) string {
	res := resultText(m, s, level)
	if m.isCheck(s) {
		// Where its error was raised is the one thing the state's line
		// lacks.
		core, at := res, ""
		if e := s.f.out.errAt; e != "" {
			if c, ok := strings.CutSuffix(res, " (at "+e+")"); ok {
				core, at = c, " (at "+e+")"
			}
		}
		if m.toldInState(s, core) {
			return toState + at
		}
		// The state quotes its first lines: the line tells the rest.
		if shown, ok := strings.CutSuffix(m.checkShown(), "…"); ok && len(shown) > 40 && pointable(s) {
			if rest, ok := strings.CutPrefix(core, shown); ok && strings.HasPrefix(rest, " | ") {
				return toState + thenTold + rest[len(" | "):] + at
			}
		}
	}
	if e := s.sameErr; e != nil && level == levelFull {
		// At the shorter levels the error cut short is shorter than a
		// pointer with it.
		head, _, _ := strings.Cut(res, ":")
		return head + ": the same error as [" + e.id() + "]: " + clip(s.f.out.errLine, 120)
	}
	return res
}

// callText is how a step's call reads: the command, or tool(args).
func callText(s *step, max int) string {
	c := &s.f.call
	l := c.label
	if c.kind == kindThink {
		l = "think"
	}
	if len(l) > max && c.short != "" {
		l = c.short
	}
	return clip(l, max)
}

// reading is the first sentence of the assistant's text after the result,
// when it says what the result meant (not what it will do next).
func reading(s *step) string {
	for _, sent := range sentences(s.react) {
		if isIntention(sent) || !isReading(sent) {
			return ""
		}
		return clip(sent, 170)
	}
	return ""
}

// isReading reports whether a sentence interprets a result, rather than
// announcing an action ("Running the script.", "Try to locate the
// directory"), wondering aloud, or thanking the harness ("Thank you for
// providing the project structure.").
func isReading(s string) bool {
	if len(s) < 25 || strings.HasSuffix(s, "?") {
		return false
	}
	first := strings.Fields(s)[0]
	if strings.HasSuffix(first, "ing") && first[0] >= 'A' && first[0] <= 'Z' {
		return false // Running, Checking, Creating
	}
	for _, w := range []string{"Now", "Let", "Next", "OK", "Okay", "Great", "Good", "Maybe", "Perhaps", "Wait", "Hmm", "So,", "First", "Then", "Thank", "Thanks", "Try"} {
		if (first == w || strings.HasPrefix(first, w+",")) && !strings.HasPrefix(s, "Thanks to ") {
			return false // ("Thanks to the fix, …" reads a result)
		}
	}
	return true
}

// thoughtText is a think tool's thought within max bytes. A thought
// reasons towards its conclusion, so a cut keeps its first and last
// sentences ("The original flight … departs at 01:00 EST. … The flight
// HAT052 at 03:00 EST is within the preferred time range."): cut at the
// end it stopped before it concluded.
func thoughtText(t string, max int) string {
	t = strings.TrimSpace(t)
	if len(t) <= max {
		return t
	}
	ss := sentences(t)
	if len(ss) < 2 {
		return clip(t, max)
	}
	first, last := ss[0], ss[len(ss)-1]
	const gap = len(" … ")
	switch {
	case len(first)+gap+len(last) <= max:
		return first + " … " + last
	case len(last)+gap+12 <= max:
		return clip(first, max-gap-len(last)) + " " + last
	}
	return clip(t, max)
}

// resultText says what a step showed, by kind.
func resultText(m *model, s *step, level int) string {
	f := s.f
	o := &f.out
	c := &f.call
	if c.kind == kindThink {
		return thoughtText(c.thought, []int{300, 180, 100}[level])
	}
	if c.kind == kindFinish {
		return clip("finished: "+cmpOr(c.thought, firstNonEmpty(o.short)), []int{240, 120, 40}[level])
	}
	if o.empty && !s.failed && len(o.lines) == 0 {
		switch {
		case c.kind == kindSearch:
			return "no match"
		case c.kind.changes():
			return changeText(s, level)
		}
		if o.hasExit {
			return "ok, no output"
		}
		return "no output"
	}
	if s.failed {
		return failureText(s, level)
	}
	switch c.kind {
	case kindTest:
		if o.tests != "" {
			return testText(o, level)
		}
	case kindSearch:
		return searchText(s, level)
	case kindEdit, kindWrite, kindDelete, kindRevert:
		if runsAfterChange(s) {
			// cat > x.py <<EOF … EOF; python x.py: what the run printed
			// is the step's result, the write only its first part.
			out := outputText(s, level)
			if o.tests != "" {
				out = testText(o, level)
			}
			if strings.HasPrefix(f.call.label, "write ") || strings.HasPrefix(f.call.label, "append to ") {
				return out // the label says what was written, then what ran
			}
			if ch := changeText(s, levelMin); ch != "ok" {
				return ch + ", then ran → " + out
			}
			return out // "rm -rf _build && sphinx-build …" rebuilt what it removed
		}
		return changeText(s, level)
	case kindLookup, kindMutate:
		if len(f.records) > 0 {
			return recordsText(m, s, level)
		}
	case kindHTTP:
		return httpText(m, s, level)
	case kindView:
		return viewText(s, level)
	case kindList:
		if lsEchoes(c, o) {
			return "exists"
		}
		return listText(o, level)
	case kindInstall:
		// What an install did is in its last lines ("Successfully
		// installed …", "Setting up dvipng …"), not in its first (a
		// package index fetched).
		for i := len(o.lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(o.lines[i]); l != "" && l != "[…]" && !installNoiseRe.MatchString(l) {
				return clip(l, []int{200, 120, 70}[level]) + " (" + strconv.Itoa(o.totalLines) + " lines)"
			}
		}
	}
	if o.tests != "" {
		return testText(o, level)
	}
	return outputText(s, level)
}

func failureText(s *step, level int) string {
	o := &s.f.out
	var b strings.Builder
	switch {
	case o.timeout:
		b.WriteString("timed out")
	case o.hasExit:
		b.WriteString("exit " + strconv.Itoa(o.exit))
	default:
		b.WriteString("failed")
	}
	if level == levelMin {
		if o.errLine != "" {
			b.WriteString(": " + clip(o.errLine, 90))
		}
		return b.String()
	}
	if o.tests != "" {
		b.WriteString(": " + testText(o, level))
		return b.String()
	}
	if o.errLine != "" {
		b.WriteString(": " + clip(o.errLine, []int{220, 140}[level]))
		if o.errAt != "" && level == levelFull {
			b.WriteString(" (at " + o.errAt + ")")
		}
		return b.String()
	}
	if l := salient(s, 2); len(l) > 0 && level == levelFull {
		b.WriteString(": " + strings.Join(l, " | "))
	} else if len(o.short) > 0 {
		b.WriteString(": " + clip(strings.Join(o.short, " | "), []int{240, 120}[level]))
	} else if t := lastMeaningful(o.lines); t != "" {
		b.WriteString(": " + clip(t, []int{160, 100}[level]))
	}
	return b.String()
}

func testText(o *output, level int) string {
	t := o.tests
	if len(o.failed) > 0 {
		max := []int{4, 2, 1}[level]
		t += "; " + strings.Join(headLines(o.failed, max), "; ")
	} else if o.testsOK && o.raisedBy == "" && exceptionRe.MatchString(o.errLine) && !cleanupMissingRe.MatchString(o.errLine) {
		// A test that catches what it checks passes while the code it
		// runs raises: "OK" alone reads as the check passing.
		t += ", though its output shows " + clip(o.errLine, []int{200, 120, 70}[level])
	}
	return clip(t, []int{320, 180, 120}[level])
}

// searchText: no match; up to three hits whole; else the count and the
// files, with the hits the agent reacted to.
func searchText(s *step, level int) string {
	hits, n := searchHits(s.f.out.lines)
	// An output cut by the harness ("[… 84000 characters elided …]")
	// holds more hits than it shows: its counts are lower bounds ("61+
	// hits"), and one that shows none is not a search that found none.
	more, cutLine := "", cutAt(s.f.out.lines)
	if cutLine != "" {
		more = "+"
	}
	if n == 0 && cutLine != "" {
		return "no hit in what the output kept; it was cut: " + cutLine
	}
	if n == 0 {
		if b := binaryMatches(s.f.out.lines); len(b) > 0 {
			return "no match in text files; binary files matched: " + strings.Join(headLines(b, 3), ", ") + moreCount(len(b), 3)
		}
		return "no match"
	}
	if c := &s.f.call; c.searches > 1 || c.outputs > 1 {
		// Several searches in one line: their outputs follow one another
		// (with any "|| echo" fallback), and a count or a list of line
		// numbers would credit every hit to the first pattern.
		var lines []string
		for _, l := range s.f.out.lines {
			if t := strings.TrimSpace(l); t != "" {
				lines = append(lines, clip(compactNumbered(t), []int{110, 70, 50}[level]))
			}
		}
		max := []int{8, 4, 2}[level]
		what := strconv.Itoa(s.f.call.searches) + " searches"
		if s.f.call.outputs > s.f.call.searches {
			what = strconv.Itoa(s.f.call.outputs) + " commands"
		}
		t := "output of the " + what + ", in order: " + strings.Join(headLines(lines, max), " | ")
		if len(lines) > max {
			t += " | … (" + strconv.Itoa(len(lines)) + " lines)"
		}
		return clip(stripTags(t), []int{600, 300, 140}[level])
	}
	if joined := stripTags(strings.Join(hits, " | ")); n <= 3 && more == "" && len(joined) <= []int{360, 200, 100}[level] {
		return joined
	}
	if lines := hitLines(hits); len(lines) == len(hits) {
		// One file searched: the hits are its lines. A few are kept with
		// their text (what each use of a name does), each cut short.
		if level != levelMin && n == len(hits) && n <= 8 {
			parts := make([]string, len(hits))
			for i, h := range hits {
				parts[i] = clip(compactNumbered(h), []int{110, 55}[level])
			}
			if t := strconv.Itoa(n) + more + " hits: " + strings.Join(parts, " | "); len(t) <= []int{700, 320}[level] {
				return t
			}
		}
		t := strconv.Itoa(n) + more + " hits at lines " + strings.Join(headLines(lines, []int{12, 6, 3}[level]), ", ")
		if n > []int{12, 6, 3}[level] {
			t += ", …"
		}
		if level == levelFull {
			if l := salient(s, 2); len(l) > 0 {
				t += "; incl. " + strings.Join(l, " | ")
			}
		}
		return clip(t, []int{420, 200, 100}[level])
	}
	if s.f.call.oneFile {
		// One file searched: its hits are lines, whatever they hold.
		t := strconv.Itoa(n) + more + " hits: " + strings.Join(headLines(hits, []int{6, 3, 2}[level]), " | ")
		if n > []int{6, 3, 2}[level] {
			t += " | …"
		}
		return clip(stripTags(t), []int{420, 220, 120}[level])
	}
	if level != levelMin && n == len(hits) && n <= 6 && more == "" {
		// A few hits in several files: each with its text, by file (what
		// each use does), where the file names alone told none of it.
		if t := hitsByFile(hits, []int{110, 60}[level]); t != "" && !countsOnly(hits) && len(t) <= []int{700, 320}[level] {
			return strconv.Itoa(n) + " hits: " + stripTags(t)
		}
	}
	// Counted over every hit line: lower bounds ("61+ hits in 60+ files")
	// only where the output was cut.
	var files []string // the files named, from the first hits
	total := 0         // the files of all hits
	t := strconv.Itoa(n) + more + " hits"
	find := strings.HasPrefix(s.f.call.label, "find ")
	if !slices.ContainsFunc(hits, func(h string) bool { return strings.Contains(h, ":") || !find && !strings.ContainsAny(h, "/.") }) {
		// find, grep -l: each hit is a path.
		files, total = hits, n
		t = strconv.Itoa(n) + more + " paths"
	} else {
		files, total = hitFilesAll(s.f.out.lines, 6)
		if total > 1 {
			t += " in " + strconv.Itoa(total) + more + " files"
		}
	}
	if level == levelMin {
		if len(files) > 0 {
			t += ": " + strings.Join(headLines(files, 3), ", ") + moreCount(max(total, len(files)), 3)
		}
		return clip(t, 160)
	}
	room := []int{6, 3}[level]
	if len(files) > 0 {
		shown := headLines(files, room)
		t += ": " + strings.Join(shown, ", ")
		if max(total, len(files)) > len(shown) {
			t += ", …"
		}
	}
	if level == levelFull {
		if l := salient(s, 2); len(l) > 0 {
			t += "; incl. " + strings.Join(l, " | ")
		}
	}
	return clip(t, []int{420, 220}[level])
}

// hitLines returns the line numbers of "N:text" hits.
func hitLines(hits []string) []string {
	var out []string
	for _, h := range hits {
		i := strings.IndexByte(h, ':')
		if i <= 0 || !isNumber(h[:i]) {
			return out
		}
		out = append(out, h[:i])
	}
	return out
}

// hitsByFile writes hits ("path:text") grouped by their file, in the
// order the files come, each text cut to max: "a.py: x = 1 | y = 2;
// tests/test_a.py: assert x"; "" when a hit names no file.
func hitsByFile(hits []string, max int) string {
	var files []string
	texts := map[string][]string{}
	for _, h := range hits {
		p := hitPath(h)
		if p == "" || len(p) >= len(h) {
			return ""
		}
		if _, ok := texts[p]; !ok {
			files = append(files, p)
		}
		texts[p] = append(texts[p], clip(compactNumbered(h[len(p)+1:]), max))
	}
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = f + ": " + strings.Join(texts[f], " | ")
	}
	return strings.Join(parts, "; ")
}

// countsOnly reports grep -c's output: each hit a file and a number.
func countsOnly(hits []string) bool {
	return !slices.ContainsFunc(hits, func(h string) bool {
		p := hitPath(h)
		return p == "" || len(p) >= len(h) || !isNumber(strings.TrimSpace(h[len(p)+1:]))
	})
}

// hitFilesAll lists the first keep distinct files a search's hits are in
// and counts them all, over every output line (searchHits keeps the first
// 40 hits, which may all be one file's).
func hitFilesAll(lines []string, keep int) (names []string, total int) {
	seen := map[string]bool{}
	for _, l := range lines {
		if t := strings.TrimSpace(l); isHit(t) {
			if p := hitPath(t); p != "" && !seen[p] {
				seen[p] = true
				if len(names) < keep {
					names = append(names, p)
				}
			}
		}
	}
	return names, len(seen)
}

// hitPath is the file a hit line names before its first colon, or "".
func hitPath(h string) string {
	p := h
	from := 0
	if len(h) > 2 && (h[0]|0x20 >= 'a' && h[0]|0x20 <= 'z') && h[1] == ':' && (h[2] == '/' || h[2] == '\\') {
		from = 2 // a drive letter ("C:/src/a.py:12: x")
	}
	if i := strings.IndexByte(h[from:], ':'); i > 0 {
		p = h[:from+i]
	}
	if strings.ContainsAny(p, " \t") || isNumber(p) {
		return ""
	}
	return p
}

// hitFiles lists the distinct files of search hits, in order.
func hitFiles(hits []string) []string {
	var out []string
	for _, h := range hits {
		if p := hitPath(h); p != "" {
			out = appendNew(out, p)
		}
	}
	return out
}

// changeText describes what an edit, write, delete or revert did; the
// path is named when the command line does not show it.
func changeText(s *step, level int) string {
	var parts []string
	for _, op := range s.f.call.ops {
		if op.op == kindView || op.op == kindRun || op.op == kindSearch {
			continue
		}
		what := op.what
		if op.noop {
			what = "no-op edit: " + what
		}
		if what == "" {
			what = op.op.String()
		}
		if op.path != "." && !strings.Contains(s.f.call.label, op.path) { // ".": the work tree, as a stash pop's
			p := op.path
			if b := baseName(p); len(p) > 40 && strings.Contains(s.f.call.label, b) {
				p = b // the label names the file; the full path is in FILES
			}
			what = p + ": " + what
		}
		parts = append(parts, what)
	}
	if len(parts) == 0 {
		return "ok"
	}
	return clip(strings.Join(parts, "; "), []int{300, 160, 80}[level])
}

// viewText: the file (and lines) read, and the lines the agent then
// referred to.
func viewText(s *step, level int) string {
	o := &s.f.out
	t := ""
	if o.fileLines > 0 {
		t = strconv.Itoa(o.fileLines) + " lines"
	} else if o.totalLines > 0 {
		t = strconv.Itoa(o.totalLines) + " lines shown"
	}
	if level == levelMin {
		return t
	}
	if len(o.short) > 0 && o.totalLines <= 3 {
		return clip(strings.Join(o.short, " | "), []int{240, 120}[level])
	}
	if l := salient(s, []int{3, 1}[level]); len(l) > 0 {
		if t != "" {
			t += "; "
		}
		t += "incl. " + strings.Join(l, " | ")
	}
	return clip(t, []int{420, 200}[level])
}

// lsEchoes reports `ls FILE` alone whose whole output is the name it was
// given: what it says is that the file is there. Not a long listing (its
// mode and size are the answer), several operands (which of them
// printed?), or a line of several commands.
func lsEchoes(c *call, o *output) bool {
	f := strings.Fields(c.label)
	if len(f) < 2 || f[0] != "ls" || strings.ContainsAny(c.label, ";&|<>") {
		return false
	}
	arg := ""
	for _, w := range f[1:] {
		switch {
		case strings.HasPrefix(w, "-"):
		case arg != "":
			return false
		default:
			arg = w
		}
	}
	body := strings.TrimSpace(o.body)
	return arg != "" && (body == arg || body == arg+"*" || body == arg+"@")
}

// listText tells a listing: "ls -l" and one-per-line listings by their
// lines, a column listing by its words.
func listText(o *output, level int) string {
	entries, all, cut := listEntries(o.lines)
	if o.listed > all {
		all, cut = o.listed, o.listCut // counted on the whole output when read
	}
	if all == 0 {
		return "empty"
	}
	count := ""
	switch {
	case cut:
		// Lines were left out (by the harness, or of a long output): the
		// count is of those shown.
		count = " (over " + strconv.Itoa(all) + " entries)"
	case all > len(entries) || all > 3:
		count = " (" + strconv.Itoa(all) + " entries)"
	}
	max := []int{16, 10, 0}[level]
	if slices.ContainsFunc(entries, func(e string) bool { return strings.Contains(e, ": ") }) {
		// Entries that say what each name is ("./eps1.1_ones…mpeg:
		// ASCII text", as file prints them): the saying is the result;
		// the names, which the call named (or its glob matched), are
		// shortened when long.
		described := shortenLeads(entries)
		if max == 0 {
			return clip(strings.Join(described, " | "), 110) + count
		}
		t := strings.Join(headLines(described, max), " | ")
		if len(entries) > max {
			t += " …"
		}
		return clip(t, []int{220, 140}[level]) + count
	}
	if groups := treeGroups(o.lines); len(groups) > 1 && !cut && all <= smallTree {
		// A small tree (ls -R of a new project): its directories' names
		// are the project's files, which the next steps open.
		if t := strings.Join(groups, " | ") + count; len(t) <= []int{480, 320, 240}[level] {
			return t
		}
	}
	if t := strings.Join(entries, " "); level != levelMin && all == len(entries) && len(t) <= wholeListing {
		// A name cut off cannot be told from one not there (is there a
		// build/?): a listing of a few lines' names is told whole where
		// there is room for more than its least detail.
		return t + count
	}
	if max == 0 {
		if all <= 3 {
			return clip(strings.Join(entries, " "), 60) // as short as a count
		}
		// The names are what a listing shows (is there a CMakeLists.txt, a
		// build/?): the first ones and the count.
		return clip(strings.Join(headLines(entries, 12), " "), 110) + count
	}
	t := strings.Join(headLines(entries, max), " ")
	if len(entries) > max {
		t += " …"
	}
	return clip(t, []int{220, 140}[level]) + count
}

// wholeListing is the most bytes a listing's names take to be told whole
// above the least detail.
const wholeListing = 320

// smallTree is the most entries a recursive listing may have to be told
// directory by directory.
const smallTree = 40

// treeGroups reads a recursive listing (ls -R) by directory: the top
// level's names, then "dir: names" for each directory below it, named
// from the top one ("src/assets: react.svg"). Nil for a listing of one
// directory.
func treeGroups(lines []string) []string {
	var groups []string
	top, dir := "", ""
	var names []string
	flush := func() {
		if len(names) == 0 {
			return
		}
		t := strings.Join(names, " ")
		if dir != top {
			label := dir
			if top != "" {
				label = strings.TrimPrefix(strings.TrimPrefix(dir, top), "/")
			}
			t = strings.TrimPrefix(label, "./") + ": " + t
		}
		groups = append(groups, t)
		names = nil
	}
	headers := 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case dirHeader(t):
			flush()
			dir = strings.TrimSuffix(t, ":")
			if headers == 0 && len(groups) == 0 {
				top = dir // names before any header are of the directory listed
			}
			headers++
		case t == "" || strings.HasPrefix(t, "total ") || strings.ContainsAny(t, "#$") || lsLongRe.MatchString(l):
			// blanks, totals, a prompt; a long listing is told by lines
			if lsLongRe.MatchString(l) {
				return nil
			}
		default:
			for _, w := range strings.Fields(t) {
				if !buildArtifact(w) {
					names = append(names, w)
				}
			}
		}
	}
	flush()
	if headers < 2 {
		return nil
	}
	return groups
}

// dirHeader reports a line of ls -R that starts a directory's names
// ("./src:", "django/template/backends:", "./my dir:").
func dirHeader(t string) bool {
	return strings.HasSuffix(t, ":") && (!strings.Contains(t, " ") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "/"))
}

// listEntries reads a listing's lines: the top level's names (build
// artifacts left out), how many entries it lists in all, and whether
// lines were cut from it ("[…]", "[… 67261 characters elided …]").
func listEntries(lines []string) (entries []string, all int, cut bool) {
	long := false
	for _, l := range lines {
		if lsLongRe.MatchString(l) {
			long = true
			break
		}
	}
	deeper := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if dirHeader(t) && len(entries) > 0 {
			// ls -R's next directory: the names shown are the top
			// level's, the count is every entry's.
			deeper = true
		}
		n := len(entries)
		switch {
		case t == "[…]" || strings.HasPrefix(t, "[… ") && strings.HasSuffix(t, " elided …]"):
			cut = true
		case t == "" || strings.HasPrefix(t, "total ") || dirHeader(t):
			// blank lines, totals and ls -R's directory headers
		case long:
			if f := strings.Fields(t); len(f) >= 9 {
				entries = append(entries, strings.Join(f[8:], " "))
			}
		case !strings.Contains(t, " ") || strings.Contains(t, ": "):
			// One name a line, or "name: what it is" (file, stat): a line
			// is an entry.
			entries = append(entries, t)
		default:
			entries = append(entries, strings.Fields(t)...)
		}
		// Build artifacts say nothing of the project.
		kept := entries[:n]
		for _, e := range entries[n:] {
			if !buildArtifact(e) {
				kept = append(kept, e)
			}
		}
		all += len(entries) - n
		entries = kept
		if deeper {
			entries = entries[:n]
		}
	}
	return entries, all, cut
}

// buildArtifact reports a listing's entry that a build or an interpreter
// made: __pycache__, compiled modules and objects.
func buildArtifact(name string) bool {
	name = strings.TrimRight(name, "*/@")
	if name == "__pycache__" {
		return true
	}
	for _, ext := range []string{".pyc", ".pyo", ".so", ".o", ".dylib"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// outputText: a short output whole; else its first line, the lines the
// agent referred to, and its length.
func outputText(s *step, level int) string {
	o := &s.f.out
	if t := strings.TrimSpace(o.body); t == "[]" || t == "{}" {
		return "none found"
	}
	if len(o.short) > 0 {
		// A short output is the result: kept whole unless the budget is
		// at its tightest, where the conclusion it ends with ("FAILURE:
		// Query returned False") keeps its place after the cut (one
		// followed by other lines stays where it is).
		t, room := strings.Join(o.short, " | "), []int{400, 300, 120}[level]
		if v := verdictLine(o.short); len(t) > room && v != "" && v == strings.TrimSpace(o.short[len(o.short)-1]) && !strings.Contains(clip(t, room), v) && len(v) < room/2 {
			head := strings.TrimSuffix(strings.TrimSuffix(t, v), " | ")
			return clip(head, room-len(v)-len("… ")) + " " + v // clip marks the cut
		}
		return clip(t, room)
	}
	first := firstMeaningful(o.lines)
	elided := false // lines before first are left out
	if l := slices.IndexFunc(o.lines, func(l string) bool { return !progressLine(l) }); l > 0 {
		first = firstMeaningful(o.lines[l:])
	}
	if c := &s.f.call; viewProgs[lastProg(c)] && (c.builds || c.ranAfterChange) {
		// "sphinx-build … && cat _build/text/index.txt": the file shown
		// last is what the line was for; the build's log comes first.
		first = lastMeaningfulN(o.lines, 3)
	} else if p := s.prevRun; p != nil {
		// The same command ran before: what this run printed that the
		// last one did not is its news (a warning every run repeats, or a
		// script's unchanged opening lines, are not).
		before := make(map[string]bool, len(p.f.out.lines))
		for _, l := range p.f.out.lines {
			before[strings.TrimSpace(l)] = true
		}
		news := slices.IndexFunc(o.lines, func(l string) bool { return !progressLine(l) && !before[strings.TrimSpace(l)] })
		if news < 0 && len(o.lines) == len(p.f.out.lines) && o.body == p.f.out.body {
			return "the same output as [" + p.id() + "]"
		}
		if news < 0 {
			// Nothing new, but not the same: told as it is.
		} else if t := strings.TrimSpace(o.lines[news]); t != first {
			first, elided = t, true
			// A few new lines are the run's whole news: told together.
			var fresh []string
			for _, l := range o.lines[news:] {
				if l = strings.TrimSpace(l); l != "" && !progressLine(l) && !before[l] {
					fresh = append(fresh, l)
				}
			}
			if len(fresh) <= 3 {
				first = strings.Join(fresh, " | ")
			}
		}
	}
	if strings.HasSuffix(first, ":") {
		// A label ("Str printer:") says nothing without the line it heads.
		if i := slices.IndexFunc(o.lines, func(l string) bool { return strings.TrimSpace(l) == first }); i >= 0 {
			if next := firstMeaningful(o.lines[i+1:]); next != "" {
				first += " " + next
			}
		}
	}
	raw := first
	if elided {
		first = "… " + first
	}
	tally := verdictTally(o.lines)
	if level == levelMin {
		if tally != "" {
			return clip(first, max(30, 80-len(tally))) + " … " + tally
		}
		return clip(first, 80)
	}
	parts := []string{clip(first, 140)}
	verdict := verdictLine(o.lines)
	if verdict != "" && (verdict == raw || strings.Contains(first, verdict)) {
		verdict = ""
	}
	if verdict == "" {
		verdict = tally
	}
	if verdict != "" && level == levelShort {
		// The conclusion takes its room from the first line's: the
		// whole stays within the level's 200 bytes with its joint and
		// line count.
		verdict = clip(verdict, 100)
		parts[0] = clip(first, max(60, 200-len(verdict)-len(" … ")-len(" (10000 lines)")-len("…")))
	}
	if level == levelFull {
		// The lines the agent referred to, in the output's order; one
		// the first line already holds is not repeated, and a label
		// ("Testing None:") comes with the line it heads.
		var picked []string
		for _, l := range salient(s, 3) {
			if l == clip(first, 140) || strings.Contains(first, l) {
				continue
			}
			i := slices.IndexFunc(o.lines, func(x string) bool { return strings.TrimSpace(x) == l })
			if i >= 0 && strings.HasSuffix(l, ":") {
				if next := firstMeaningful(o.lines[i+1:]); next != "" {
					l += " " + next
				}
			}
			picked = append(picked, l)
		}
		for _, p := range picked { // salient keeps the output's order
			if !strings.Contains(parts[len(parts)-1], p) { // the line a label before it headed
				parts = append(parts, p)
			}
		}
		if last := lastMeaningful(o.lines); last != "" && last != raw && len(parts) < 4 && !strings.Contains(strings.Join(parts, " "), last) {
			if verdict != "" && verdict != last {
				// The conclusion, printed before the last line, is told
				// before it: the lines keep the output's order.
				parts = append(parts, clip(verdict, 140))
			}
			parts = append(parts, clip(last, 140))
		}
	}
	if verdict != "" && !strings.Contains(strings.Join(parts, " "), clip(verdict, 140)) {
		// What the script concluded ("ISSUE NOT REPRODUCED: …") or the
		// warning the task is about is the run's result, wherever the
		// first line is.
		parts = append(parts, clip(verdict, 140))
	}
	// Lines picked from a long output are not neighbours: "…" says a
	// part lies between them, so none reads as the previous one's value.
	t := strings.Join(parts, " … ")
	if o.totalLines > 5 {
		t += " (" + strconv.Itoa(o.totalLines) + " lines)"
	}
	return clip(t, []int{480, 200}[level])
}

// shortenLead shortens the long name a line starts with ("NAME: what
// it is"): to its base name, and a long base name to its ends, cut on
// character boundaries.
func shortenLead(l string) string {
	name, rest, ok := strings.Cut(l, ": ")
	if !ok || len(name) <= 24 || strings.ContainsAny(name, " \t") {
		return l
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	if len(name) > 24 {
		name = clip(name, 14) + tailOf(name, 8)
	}
	return name + ": " + strings.TrimSpace(rest)
}

// shortenLeads is shortenLead of every line, or the lines as they are
// when shortening would make two names alike (checkpoint_epo…final.pt
// for each of three checkpoints): which is which is the result.
func shortenLeads(lines []string) []string {
	out := make([]string, len(lines))
	seen := make(map[string]bool, len(lines))
	for i, l := range lines {
		out[i] = shortenLead(l)
		name, _, _ := strings.Cut(out[i], ": ")
		if seen[name] {
			return lines
		}
		seen[name] = true
	}
	return out
}

// verdictTally counts the lines of a script's output that end in its own
// verdict on one case ("ImmutableDenseNDimArray passed.") or lead with it
// ("PASS: .a/foo.py was ignored", "✗ empty input"): "4 lines say passed",
// "3 lines say passed, 1 says failed". A script that checks several cases
// prints its result that way, and its first line is only the first case.
// It tells what it counted, not that nothing else failed: a runner marks
// failures in ways it does not read (Mocha's "1) name"). "" unless two or
// more lines, at most half of them, say so, and the output holds no
// traceback or error line (the run broke: its PASS lines mean nothing)
// and was not cut.
func verdictTally(lines []string) string {
	var passed, failed, n int
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if isCut(t) || errorLineRe.MatchString(t) || exceptionRe.MatchString(t) && strings.Contains(t, ":") {
			return ""
		}
		n++
		low := strings.ToLower(strings.TrimRight(t, ".!"))
		if strings.Contains(low, "pass") && strings.Contains(low, "fail") {
			continue // a summary of both ("2 passed; 2 failed")
		}
		switch {
		case strings.HasSuffix(low, " passed") || strings.HasPrefix(t, "PASS: ") || strings.HasPrefix(t, "PASSED: ") || strings.HasPrefix(t, "✓ "):
			passed++
		case strings.HasSuffix(low, " failed") || strings.HasPrefix(t, "FAIL: ") || strings.HasPrefix(t, "FAILED: ") || strings.HasPrefix(t, "✗ "):
			failed++
		}
	}
	if passed+failed < 2 || 2*(passed+failed) > n {
		return ""
	}
	say := func(k int, what string) string {
		if k == 1 {
			return "1 says " + what
		}
		return strconv.Itoa(k) + " say " + what
	}
	switch {
	case failed == 0:
		return strconv.Itoa(passed) + " lines say passed"
	case passed == 0:
		return strconv.Itoa(failed) + " lines say failed"
	}
	return say(passed, "passed") + ", " + say(failed, "failed")
}

// verdictLine is the conclusion a script printed near its end: a line
// led by capitals ("ISSUE NOT REPRODUCED: Found 'x'", "SUCCESS: …") or
// a warning kept for the task ("x.py:7: DeprecationWarning: …"), among
// the last four meaningful lines; "" when none.
func verdictLine(lines []string) string {
	seen := 0
	for i := len(lines) - 1; i >= 0 && seen < 4; i-- {
		t := strings.TrimSpace(lines[i])
		if t == "" || t == "[…]" {
			continue
		}
		seen++
		if verdictRe.MatchString(t) || warningRe.MatchString(t) {
			return t
		}
	}
	return ""
}

// verdictRe matches a line a script leads with its conclusion: "ISSUE
// NOT REPRODUCED: …", "BUG FIXED", "SUCCESS: …", "FAIL: test_x"; not a
// log line (DEBUG:, INFO:, WARNING:), SQL (CREATE TABLE) or a constant.
var verdictRe = regexp.MustCompile(`^(?:ISSUE|BUG|SUCCESS|SUCCEEDED|FAILURE|FAILED|FAIL|PASSED|PASS|RESULT|FIXED|CONFIRMED|REPRODUCED|VERIFIED)(?:[ _][A-Z]{2,})*(?:[:!.]|$)`)

// progressLine reports a blank, elided or progress line.
func progressLine(l string) bool {
	t := strings.TrimSpace(l)
	return t == "" || t == "[…]" || buildLogRe.MatchString(t)
}

func firstMeaningful(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && t != "[…]" {
			return t
		}
	}
	return ""
}

// lastProg is the program of a shell line's last command ("cat" of "make &&
// cat out.txt"), or "".
func lastProg(c *call) string {
	prog, _, _ := strings.Cut(c.lastHead, " ")
	return prog
}

// lastMeaningfulN joins the last n meaningful lines, in order.
func lastMeaningfulN(lines []string, n int) string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if t := strings.TrimSpace(lines[i]); !progressLine(t) {
			out = append(out, t)
		}
	}
	slices.Reverse(out)
	return strings.Join(out, " | ")
}

func lastMeaningful(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" && t != "[…]" {
			return t
		}
	}
	return ""
}

// installNoiseRe matches what installers print after their result.
var installNoiseRe = regexp.MustCompile(`^(?:WARNING: Running pip as|WARNING: You are using pip version|You should consider upgrading|\[notice\]|It is recommended to use a virtual)`)

// httpText: a page's title and form fields, and what changed from the
// previous response of the same URL (or its first lines).
func httpText(m *model, s *step, level int) string {
	o := &s.f.out
	var parts []string
	prev := previousResponse(m, s)
	if prev == nil {
		// A first visit: the page's title and its form's fields.
		if o.title != "" {
			parts = append(parts, "title \""+o.title+"\"")
		}
		if len(o.fields) > 0 {
			form := "form"
			if o.form != "" {
				form += " (" + o.form + ")"
			}
			parts = append(parts, form+" fields "+strings.Join(o.fields, ", "))
		}
		if len(o.links) > 0 {
			parts = append(parts, "links "+strings.Join(headLines(o.links, 8), ", ")+moreCount(len(o.links), 8))
		}
	}
	if level != levelMin || prev != nil {
		var lines []string
		for _, l := range htmlOrLines(o) {
			if prev[l] || l == o.title {
				continue
			}
			lines = append(lines, l)
		}
		switch {
		case len(lines) > 0:
			parts = append(parts, clip(strings.Join(headLines(lines, []int{4, 2, 1}[level]), " | "), []int{300, 140, 90}[level]))
		case prev != nil:
			parts = append(parts, "the same page as before")
		}
	}
	if len(parts) == 0 {
		return outputText(s, level)
	}
	return strings.Join(parts, "; ")
}

func htmlOrLines(o *output) []string {
	var out []string
	for _, l := range o.lines {
		if t := strings.TrimSpace(l); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// previousResponse returns the lines of the last earlier response from the
// same URL.
func previousResponse(m *model, s *step) map[string]bool {
	url := s.f.call.url
	if url == "" {
		return nil
	}
	for i := s.n - 1; i >= 0; i-- {
		p := m.steps[i]
		if p.f.call.url == url {
			set := map[string]bool{}
			for _, l := range htmlOrLines(&p.f.out) {
				set[l] = true
			}
			return set
		}
	}
	return nil
}

// recordsText: a single record is told in the records section, so the
// step names it; a list of records is condensed here.
func recordsText(m *model, s *step, level int) string {
	recs := s.f.records
	if len(recs) == 1 && recs[0].id != "" && m.records[recs[0].id] != nil {
		st := ""
		if s.f.call.kind == kindMutate {
			st = ", " + recordStatus(recs[0])
		}
		return "record " + recs[0].id + st + " (in RECORDS)"
	}
	max := []int{12, 8, 0}[level]
	t := strconv.Itoa(len(recs)) + " records"
	// Alike records (search results) are told by what tells them apart at
	// every level: the same fields written out per record take twice the
	// room and are cut before the prices.
	named := func(w string) bool { return m.userNamed(w, s.n) }
	if d := recordsDigest(recs, level, named); d != "" {
		return clip(t+" "+d, []int{1400, 700, 360}[level])
	}
	// Combinations (one-stop flights) take more room: at the least detail
	// they are named by their parts, and the lean digest comes a level up.
	if level < levelMin {
		if d := optionsDigest(recs, level+1, named); d != "" {
			return clip(strconv.Itoa(len(recs))+" options of "+d, []int{1400, 700}[level])
		}
	}
	if level == levelMin {
		if d := pricedOptions(recs, named); d != "" {
			return clip(strconv.Itoa(len(recs))+" options of "+d, 360)
		}
	}
	if max == 0 {
		ids := make([]string, 0, len(recs))
		for _, r := range recs {
			ids = append(ids, r.id)
		}
		return clip(t+": "+strings.Join(ids, ", "), 160)
	}
	var parts []string
	for _, r := range headLines2(recs, max) {
		parts = append(parts, r.line(m.fieldWeight, []int{150, 60}[level]))
	}
	t += ": " + strings.Join(parts, " | ")
	if len(recs) > max {
		t += " | …"
	}
	return clip(t, []int{1400, 420}[level])
}

var (
	numberMapRe = regexp.MustCompile(`^\w+ -?\d+(?:\.\d+)?(?:, \w+ -?\d+(?:\.\d+)?)*$`)
	secondsRe   = regexp.MustCompile(`\b(\d{1,2}:\d{2}):00\b`)
	clockRe     = regexp.MustCompile(`^\d{1,2}:\d{2}(?:\+\d)?$`)
	choiceRe    = regexp.MustCompile(`(?i)price|cost|fare|amount|total|time|date|depart|arriv|seat|stock|status`)
	// startRe and endRe name the two ends of a span of time, which two
	// clock columns in a row are joined as (departure-arrival).
	startRe = regexp.MustCompile(`(?i)depart|start|begin|open|from`)
	endRe   = regexp.MustCompile(`(?i)arriv|end|finish|close|until`)
	// availRe names what is left of a thing (seats, stock): at the least
	// detail a digest keeps what one chooses by (times, prices) over it.
	availRe = regexp.MustCompile(`(?i)seat|stock|avail|inventory|quantity`)
	// priceRe names what a thing costs, which pricedOptions adds up.
	priceRe = regexp.MustCompile(`(?i)price|cost|fare`)
)

// digestColumn is one column of a digest: a field that tells alike records
// apart, its value per record.
type digestColumn struct {
	name, label string
	values      []string
	avail       bool
	route       bool
	// span marks two clock columns joined ("departure-arrival").
	span bool
	// keys name the numbers of a column of several ("prices (economy,
	// business)": 123/333), whose values join them with "/".
	keys []string
}

// onlyKeys keeps the numbers of a column of several that named says to
// keep, when it keeps some but not all.
func (c digestColumn) onlyKeys(named func(string) bool) digestColumn {
	if named == nil {
		return c
	}
	keep := namedKeys(c.keys, named)
	if keep == nil {
		return c
	}
	out := c
	out.keys, out.values = nil, make([]string, len(c.values))
	for _, i := range keep {
		out.keys = append(out.keys, c.keys[i])
	}
	out.label = c.name + " (" + strings.Join(out.keys, ", ") + ")"
	for r, v := range c.values {
		nums := strings.Split(v, "/")
		if len(nums) != len(c.keys) {
			return c
		}
		picked := make([]string, len(keep))
		for j, i := range keep {
			picked[j] = nums[i]
		}
		out.values[r] = strings.Join(picked, "/")
	}
	return out
}

// namedKeys returns the positions of the keys the user named (economy of
// basic_economy, economy, business), or nil when it named none or all:
// the numbers of a record or a digest column kept at the least detail.
func namedKeys(keys []string, named func(string) bool) []int {
	var keep []int
	for i, k := range keys {
		if named(k) {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(keys) {
		return nil
	}
	return keep
}

// digestColumns returns the fields of alike records that one chooses
// between them by (times, prices, seats) and that differ between them.
// Two clock columns in a row become one ("departure-arrival": 06:00-12:00).
func digestColumns(recs []record) []digestColumn {
	var cols []digestColumn
	for _, f := range recs[0].fields {
		if !choiceRe.MatchString(f.name) {
			continue
		}
		c := digestColumn{name: f.name, label: f.name, avail: availRe.MatchString(f.name)}
		varies, ok := false, true
		for _, r := range recs {
			v, _ := r.value(f.name)
			varies = varies || v != f.value
			switch {
			case numberMapRe.MatchString(v):
				var keys, nums []string
				for _, kv := range strings.Split(v, ", ") {
					k, n, _ := strings.Cut(kv, " ")
					keys, nums = append(keys, k), append(nums, n)
				}
				if c.keys != nil && !slices.Equal(c.keys, keys) {
					ok = false // "100/300" would not say whose numbers
				}
				c.label = f.name + " (" + strings.Join(keys, ", ") + ")"
				c.keys = keys
				v = strings.Join(nums, "/")
			case len(v) <= 12:
				v = secondsRe.ReplaceAllString(v, "$1")
			default:
				ok = false
			}
			c.values = append(c.values, v)
		}
		if !ok || !varies {
			continue
		}
		if n := len(cols); n > 0 && clockColumn(cols[n-1]) && clockColumn(c) && startRe.MatchString(cols[n-1].name) && endRe.MatchString(c.name) {
			prev := &cols[n-1]
			prev.label = spanLabel(prev.name, c.name)
			for i := range prev.values {
				prev.values[i] += "-" + c.values[i]
			}
			prev.span = true
			continue
		}
		cols = append(cols, c)
	}
	return cols
}

func clockColumn(c digestColumn) bool {
	if c.span || c.route {
		return false
	}
	for _, v := range c.values {
		if !clockRe.MatchString(v) {
			return false
		}
	}
	return true
}

// spanLabel names two columns by the words that tell them apart:
// "departure-arrival" for scheduled_departure_time_est and
// scheduled_arrival_time_est.
func spanLabel(a, b string) string {
	wa, wb := strings.Split(a, "_"), strings.Split(b, "_")
	var ua, ub []string
	for _, w := range wa {
		if !slices.Contains(wb, w) {
			ua = append(ua, w)
		}
	}
	for _, w := range wb {
		if !slices.Contains(wa, w) {
			ub = append(ub, w)
		}
	}
	if len(ua) == 0 || len(ub) == 0 {
		return a + "-" + b
	}
	return strings.Join(ua, "_") + "-" + strings.Join(ub, "_")
}

// pickColumns keeps at most four columns; at the least detail, what is
// left of each (seats) and the parts' route (the combinations say how
// they chain) go when other columns remain, and a column of several
// numbers (prices per cabin) keeps those the user named (economy), if any.
func pickColumns(cols []digestColumn, level int, named func(string) bool) []digestColumn {
	if level == levelMin {
		var keep []digestColumn
		for _, c := range cols {
			if !c.avail && !c.route {
				keep = append(keep, c.onlyKeys(named))
			}
		}
		if len(keep) > 0 {
			cols = keep
		}
	}
	return cols[:min(len(cols), 4)]
}

func columnLabels(cols []digestColumn, level int) string {
	labels := make([]string, len(cols))
	for i, c := range cols {
		labels[i] = c.label
	}
	if level == levelMin {
		return "(" + strings.Join(labels, "; ") + ")"
	}
	return "(columns: " + strings.Join(labels, "; ") + ")"
}

func columnRow(id string, cols []digestColumn, k int) string {
	vals := make([]string, len(cols))
	for i, c := range cols {
		vals[i] = c.values[k]
	}
	return id + " " + strings.Join(vals, ", ")
}

// recordsDigest writes a list of alike records (search results) by what
// tells them apart, the things one is chosen by: "(columns:
// departure-arrival; prices (basic_economy, economy, business)): HAT052
// 03:00-09:00, 54/125/328 | HAT102 21:00-03:00+1, 81/117/296". Empty when
// the records are not alike or nothing short tells them apart.
func recordsDigest(recs []record, level int, named func(string) bool) string {
	if len(recs) < 2 || len(recs) > 12 || !alike(recs) {
		return ""
	}
	cols := digestColumns(recs)
	if len(cols) == 0 {
		return ""
	}
	cols = pickColumns(cols, level, named)
	return columnLabels(cols, level) + ": " + columnRows(recs, cols)
}

// columnRows writes each record's row of the columns, joined.
func columnRows(recs []record, cols []digestColumn) string {
	rows := make([]string, len(recs))
	for k, r := range recs {
		rows[k] = columnRow(r.id, cols, k)
	}
	return strings.Join(rows, " | ")
}

func alike(recs []record) bool {
	shape := recs[0].shape()
	for _, r := range recs[1:] {
		if r.shape() != shape {
			return false
		}
	}
	return true
}

// optionsDigest writes a list of combinations (one-stop flights: pairs of
// legs) as the combinations by their parts' ids, grouped by what they
// begin with, then each distinct part once with what tells the parts
// apart: "2 parts in order: HAT069 then HAT011 or HAT258; HAT083 then
// HAT011; the parts (columns: origin-destination; departure-arrival;
// prices (economy, business)): HAT069 JFK-SEA, 06:00-12:00, 123/333 | …".
// A part's prices are the facts a choice between combinations adds up.
// Empty unless every record is a combination of as many alike parts.
func optionsDigest(recs []record, level int, named func(string) bool) string {
	n, parts, _ := optionParts(recs)
	if parts == nil {
		return ""
	}
	cols := digestColumns(parts)
	if route := routeColumn(recs, parts); route != nil {
		cols = append([]digestColumn{*route}, cols...)
	}
	if len(cols) == 0 {
		return ""
	}
	cols = pickColumns(cols, level, named)
	return strconv.Itoa(n) + " parts: " + optionGroups(recs, func(id string) string { return id }) +
		"; the parts " + columnLabels(cols, level) + ": " + columnRows(parts, cols)
}

// optionParts reads combinations (one-stop flights): how many parts each
// has, its distinct parts in order, and each part's place among them;
// parts nil unless every record is a combination of as many alike parts
// (2 to 24 distinct, at most 40 combinations).
func optionParts(recs []record) (n int, parts []record, at map[string]int) {
	n = len(recs[0].parts)
	if n < 2 || len(recs) > 40 {
		return 0, nil, nil
	}
	at = map[string]int{}
	for _, r := range recs {
		if len(r.parts) != n {
			return 0, nil, nil
		}
		for _, p := range r.parts {
			if _, ok := at[p.id]; !ok {
				at[p.id] = len(parts)
				parts = append(parts, p)
			}
		}
	}
	if len(parts) < 2 || len(parts) > 24 || !alike(parts) {
		return 0, nil, nil
	}
	return n, parts, at
}

// optionGroups writes the combinations grouped by their first parts, each
// part as tell writes it: "HAT069 then HAT011 or HAT258; HAT083 then
// HAT011".
func optionGroups(recs []record, tell func(id string) string) string {
	var heads []string
	lasts := map[string][]string{}
	for _, r := range recs {
		n := len(r.parts)
		ids := make([]string, n-1)
		for i, p := range r.parts[:n-1] {
			ids[i] = tell(p.id)
		}
		h := strings.Join(ids, " then ")
		if _, ok := lasts[h]; !ok {
			heads = append(heads, h)
		}
		lasts[h] = append(lasts[h], tell(r.parts[n-1].id))
	}
	groups := make([]string, len(heads))
	for i, h := range heads {
		groups[i] = h + " then " + orList(lasts[h])
	}
	return strings.Join(groups, "; ")
}

// pricedOptions writes combinations (one-stop flights) at the least
// detail with the one price the user named beside each part: "2 parts
// (economy price of each): HAT069 123 then HAT011 177 or HAT258 167;
// HAT083 137 then HAT011 177". Choosing between combinations ("the
// second cheapest in economy") needs those numbers, and the ids alone
// cost nearly as much. Empty unless every record is a combination of as
// many parts, each with a price column of which the user named one key.
func pricedOptions(recs []record, named func(string) bool) string {
	if named == nil {
		return ""
	}
	n, parts, at := optionParts(recs)
	if parts == nil {
		return ""
	}
	var price *digestColumn
	for _, c := range digestColumns(parts) {
		if c.keys == nil || !priceRe.MatchString(c.name) {
			continue
		}
		// "basic economy" names economy too: the longer key is the one
		// meant.
		var keys []string
		for _, i := range namedKeys(c.keys, named) {
			keys = append(keys, c.keys[i])
		}
		keys = slices.DeleteFunc(keys, func(k string) bool {
			return slices.ContainsFunc(keys, func(o string) bool { return o != k && strings.Contains(o, k) })
		})
		if len(keys) == 1 {
			c = c.onlyKeys(func(w string) bool { return w == keys[0] })
			price = &c
			break
		}
	}
	if price == nil {
		return ""
	}
	return strconv.Itoa(n) + " parts (" + price.keys[0] + " price of each): " +
		optionGroups(recs, func(id string) string { return id + " " + price.values[at[id]] })
}

// orList writes "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// routeColumn returns the parts' route pair (routePairs: a leg's
// destination is the next leg's origin in every combination) as one
// column of the parts ("JFK-SEA"), or nil.
func routeColumn(recs []record, parts []record) *digestColumn {
	for _, pair := range routePairs {
		from, to := pair[0], pair[1]
		if !chains(recs, from, to) {
			continue
		}
		c := &digestColumn{name: from, label: from + "-" + to, route: true}
		for _, p := range parts {
			a, _ := p.value(from)
			z, _ := p.value(to)
			c.values = append(c.values, a+"-"+z)
		}
		return c
	}
	return nil
}

// chains reports that in every combination each part's to field is the
// next part's from field, and that no part goes from a place to itself.
func chains(recs []record, from, to string) bool {
	for _, r := range recs {
		for i, p := range r.parts {
			a, _ := p.value(from)
			z, _ := p.value(to)
			if a == "" || a == z {
				return false
			}
			if i+1 < len(r.parts) {
				if next, _ := r.parts[i+1].value(from); next != z {
					return false
				}
			}
		}
	}
	return true
}

func headLines2(r []record, n int) []record {
	if len(r) > n {
		return r[:n]
	}
	return r
}

// salient returns up to n lines of a step's output that the assistant's
// next message refers to: lines sharing its distinctive words or the line
// numbers it cites.
func salient(s *step, n int) []string {
	if s.react == "" || len(s.f.out.lines) == 0 {
		return nil
	}
	if got, ok := s.salient[n]; ok {
		return got
	}
	// The same step with the same reaction points at the same lines in
	// every re-compaction: the result is kept with the step's facts.
	k := salientKey{react: maphash.String(salientSeed, s.react), n: n}
	s.f.salMu.Lock()
	out, ok := s.f.salient[k]
	s.f.salMu.Unlock()
	if !ok {
		out = findSalient(s, n)
		s.f.salMu.Lock()
		if s.f.salient == nil {
			s.f.salient = map[salientKey][]string{}
		}
		s.f.salient[k] = out
		s.f.salMu.Unlock()
	}
	if s.salient == nil {
		s.salient = map[int][]string{}
	}
	s.salient[n] = out
	return out
}

var salientSeed = maphash.MakeSeed()

// boilerLineRe matches a line of a file that is seldom its point: an
// import, a comment, a docstring's example, after any line number.
var boilerLineRe = regexp.MustCompile(`^(?:\d+\s*[:|\t ]\s*)?(?:from \S+ import |import |#include|#|//|/?\*|>>>|\.\.\. |"""|\'\'\')`)

func findSalient(s *step, n int) []string {
	words := s.reactWords
	nums := s.reactRefs
	if nums == nil {
		nums = lineRefs(s.react)
	}
	if len(words) == 0 && len(nums) == 0 {
		return nil
	}
	type scored struct {
		i, score int
	}
	var best []scored
	for i, l := range s.f.out.lines {
		t := strings.TrimSpace(l)
		if len(t) < 4 || t == "[…]" || i == 0 && (catNHeaderRe.MatchString(t) || fileHeaderRe.MatchString(t) || editedRe.MatchString(t)) {
			continue // an editor's header names the file, it is not content
		}
		low := strings.ToLower(t)
		score := 0
		for _, w := range words {
			if strings.Contains(low, w) {
				score += 2
			}
		}
		if m := numberedLineRe.FindStringSubmatch(l); m != nil && nums[m[1]] {
			score += 3
		}
		if score > 0 && boilerLineRe.MatchString(t) {
			score -= 2 // it names what the code uses, not what it does
		}
		if score > 0 {
			best = append(best, scored{i, score})
		}
	}
	if len(best) == 0 {
		return nil
	}
	// Highest scores, shown in output order.
	for i := 1; i < len(best); i++ {
		for j := i; j > 0 && best[j].score > best[j-1].score; j-- {
			best[j], best[j-1] = best[j-1], best[j]
		}
	}
	if len(best) > n {
		best = best[:n]
	}
	for i := 1; i < len(best); i++ {
		for j := i; j > 0 && best[j].i < best[j-1].i; j-- {
			best[j], best[j-1] = best[j-1], best[j]
		}
	}
	out := make([]string, 0, len(best))
	joined := -1 // the line a docstring came from, told with its definition
	for _, b := range best {
		if b.i == joined {
			continue
		}
		doc, at := docstringAfter(s.f.out.lines, b.i)
		joined = at
		out = append(out, clip(compactNumbered(s.f.out.lines[b.i])+doc, 160))
	}
	return out
}

// docstringAfter is the first line of the docstring that follows a
// definition at lines[i], with a space before it: `def to_path(value):`
// alone says nothing of what it does; "" when none follows. at is the
// line the docstring's text was read from (-1 for none).
func docstringAfter(lines []string, i int) (doc string, at int) {
	code := func(l string) string {
		if m := numberedLineRe.FindStringSubmatch(l); m != nil {
			l = m[2]
		}
		return strings.TrimSpace(l)
	}
	if i+1 >= len(lines) || !defLineRe.MatchString(code(lines[i])) {
		return "", -1
	}
	next, q := code(lines[i+1]), ""
	for _, d := range []string{`"""`, `'''`} {
		if strings.HasPrefix(next, d) {
			q = d
		}
	}
	if q == "" {
		return "", -1
	}
	at, end := i+1, q
	first := strings.TrimSpace(next[len(q):])
	if d, ok := strings.CutSuffix(first, q); ok {
		first = strings.TrimSpace(d)
	} else {
		end = "…" + q // more lines follow
		if first == "" && i+2 < len(lines) {
			at, first = i+2, code(lines[i+2])
		}
	}
	if first == "" || strings.Contains(first, q) {
		return "", -1
	}
	return " " + q + first + end, at
}

// defLineRe matches a Python definition's line.
var defLineRe = regexp.MustCompile(`^(?:async\s+)?(?:def|class)\s+\w+.*:$`)

// compactNumbered turns "   917\t        qs = x" into "917: qs = x".
func compactNumbered(l string) string {
	if m := numberedLineRe.FindStringSubmatch(l); m != nil {
		rest := strings.TrimSpace(m[2])
		// grep -n over nl -ba output numbers the line twice ("629: 629 def").
		if r, ok := strings.CutPrefix(rest, m[1]); ok && (strings.HasPrefix(r, " ") || strings.HasPrefix(r, "\t")) {
			rest = strings.TrimSpace(r)
		}
		return m[1] + ": " + rest
	}
	return strings.TrimSpace(l)
}

var lsLongRe = regexp.MustCompile(`^[-dlcbps][-rwxsStT]{9}[.+@]?\s`)

var lineRefRe = regexp.MustCompile(`(?i)\blines? (\d+)(?:\s*(?:-|–|to|and)\s*(\d+))?`)

// lineRefs returns the line numbers a text cites ("line 917", "lines
// 917-919").
func lineRefs(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range lineRefRe.FindAllStringSubmatch(text, 8) {
		a, _ := strconv.Atoi(m[1])
		b := a
		if m[2] != "" {
			b, _ = strconv.Atoi(m[2])
		}
		if b < a || b-a > 5 {
			b = a
		}
		for i := a; i <= b; i++ {
			out[strconv.Itoa(i)] = true
		}
	}
	return out
}
