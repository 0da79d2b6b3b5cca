package brief

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
)

// Rendering: every fact the model holds becomes an item with up to three
// texts (full, short, minimal) and a priority. The user's messages, the
// state and the next step are always carried; the rest is chosen by
// priority (what changed, what failed, what was found, newest first) at
// the richest level the budget allows, then an index of the identifiers
// the text does not already carry, then a line naming what was left out.

// section is where an item is printed; sections print in this order.
type section int

const (
	secHeader section = iota
	secTask
	secUser
	secState
	secFiles
	secRecords
	secSteps
	secErrors
	secNotes
	secNext
	secHarness
	secIndex
	secOmitted
	numSections
)

// sectionNames are the labels a section starts with; the text of a
// briefing is parsed back by them when it is folded into the next one.
var sectionNames = [numSections]string{"", "TASK", "USER (verbatim, oldest first)", "STATE", "FILES",
	"RECORDS", "STEPS AND RESULTS (oldest first)", "ERRORS", "SAID BY THE AGENT", "NEXT",
	"HARNESS (not the user)", "ALSO MENTIONED", "LEFT OUT FOR SIZE"}

// inline sections print their single item on the label's line.
var inline = [numSections]bool{secTask: true, secNext: true, secIndex: true, secOmitted: true}

// item is one fact to print.
type item struct {
	sec   section
	key   string   // the object it is about (a path, a record id), for folding
	ids   []string // the messages it cites
	texts [levels]string
	prio  float64
	must  bool
	order float64 // position within its section
	level int     // chosen level; -1 when left out
	steps []*step // the steps it tells, for the left-out line
	// unsaid holds, per level, the steps its text there does not name
	// (unsaidAt).
	unsaid     [levels][]*step
	unsaidDone [levels]bool
	// identsAt caches the identifiers of each level's text, read through
	// cache (the same step's line is the same text at every re-compaction).
	identsAt [levels][]string
	cache    *Cache
	// usesAt caches, per level, the uses of those identifiers in the span
	// (see textUses).
	usesAt [levels]*identUses
	// group ties a table's rows to its header, which prints only with a row.
	group  string
	header bool
	// idents are the identifiers a left-out item would lose, offered to the
	// index instead.
	idents []string
}

// textIdents returns the identifiers of the item's chosen text, read
// once per level.
func (it *item) textIdents() []string { return it.identsOf(it.level) }

// identsOf returns the identifiers of the text at level lv, read once.
func (it *item) identsOf(lv int) []string {
	if it.identsAt[lv] == nil {
		it.identsAt[lv] = it.cache.idents(it.texts[lv])
		if it.identsAt[lv] == nil {
			it.identsAt[lv] = []string{}
		}
	}
	return it.identsAt[lv]
}

func (it *item) text() string {
	if it.level < 0 {
		return ""
	}
	return it.texts[it.level]
}

// smallest returns the index of the least detailed non-empty text.
func (it *item) smallest() int {
	for l := levels - 1; l >= 0; l-- {
		if it.texts[l] != "" {
			return l
		}
	}
	return -1
}

// setAll gives every level the same text.
func (it *item) setAll(t string) {
	for l := range it.texts {
		it.texts[l] = t
	}
}

// estimate approximates the tokens of a text: briefings mix prose, code
// and identifiers, which run about 3.3 bytes per token; the renderer
// corrects the estimate with an exact count.
func estimate(s string) float64 { return estimateLen(len(s)) }

// estimateLen is estimate of a text of n bytes.
func estimateLen(n int) float64 { return float64(n)/3.3 + 1 }

// layout is the items of a briefing and the budget they share.
type layout struct {
	m     *model
	items []*item
	head  string
	// foot is the last line: how the compacted originals can be read back.
	foot   string
	focus  []string
	budget int // tokens for the wrapped text
	count  func(string) int
	// indexShare is the most of the budget the identifier index may take.
	indexShare float64
	// lastIndex and lastOmitted are the index and left-out line of the
	// last choice, for the structured record.
	lastIndex, lastOmitted string
	lastIndexNames         []string // lastIndex's names, in its order
	// indexNeed estimates the tokens of the whole identifier index, to
	// reserve no more room for it than it can use.
	indexNeed float64
	// ranked and msgIDs are the index candidates, scored once (see
	// score); baseScore holds the scores of those the span does not use.
	baseScore map[string]float64
	ranked    []identScore
	msgIDs    map[string]bool
	// users are the items of the span's user messages, in order.
	users []*item
	// carried is the identifiers of the items the last choice shows, when
	// its index was made, each once: a slice, which the coverage ranges
	// over faster than the set index checks.
	carried []string
	// grams filters the index candidates checked against the carried
	// identifiers (see gramSet).
	grams *gramSet
	// byPrio is the optional items by priority, sorted once; sorted is
	// every item in print order (printOrder).
	byPrio []*item
	sorted []*item
	// grouped are the items of tables (rows and headers), for finish.
	grouped []*item
	// left counts what the last choice left out (omittedText).
	left leftOut
	// namedAt memoizes userNamed for the records' lines, which ask it of
	// the same few words (a cabin class) row after row.
	namedAt map[string]int
	// memo keeps the sections' texts and counts (see pieces.go);
	// countSplits is Input.CountSplits.
	memo        *pieceMemo
	countSplits bool
}

// build turns the model into items.
func (l *layout) build(userCap int) {
	m := l.m
	n := float64(max(1, len(m.steps)))
	recency := func(k int) float64 { return float64(k+1) / n }

	// The task is the pinned first user message (the header says so); a
	// focus is echoed.
	if len(l.focus) > 0 {
		l.add(&item{sec: secTask, must: true}, "focus asked for this compaction: "+strings.Join(l.focus, " ")+".")
	}

	// The user's messages, verbatim; the prior ones first.
	if m.prior != nil {
		for k, e := range m.prior.section(secUser) {
			it := &item{sec: secUser, must: true, ids: e.IDs, order: float64(k) - 1e6}
			it.texts[levelFull] = e.Text
			it.texts[levelShort] = shortenUser(e.Text, userCap)
			it.texts[levelMin] = it.texts[levelShort]
			l.items = append(l.items, it)
		}
	}
	for k := range m.users {
		it := m.userItem(k, userCap)
		l.items = append(l.items, it)
		l.users = append(l.users, it)
	}

	// Harness reminders in the user role: each distinct one quoted once
	// (its opening, verbatim), after the next step: they are not the
	// user's words and say nothing of the task.
	for k, h := range m.harness {
		// One quoted by an earlier briefing only competes for room.
		l.add(&item{sec: secHarness, must: !h.earlier, prio: 2, ids: h.ids, order: float64(k)},
			"["+rangeOf(h.ids)+"] "+quoteHead(h.text, harnessQuote))
	}

	// State and next step: always.
	// The state is the new span's; what earlier spans changed stays in
	// the folded file and record lines.
	for k, t := range m.stateLines() {
		l.add(&item{sec: secState, must: true, order: float64(k)}, "- "+t)
	}
	// A question awaiting the user's answer is quoted whole when there is
	// room (see choose): the options it lists are what the answer refers
	// to.
	next := m.nextText(nextQuoteFull)
	if next != "" {
		it := l.add(&item{sec: secNext, must: true}, next)
		it.texts[levelShort] = m.nextText(nextQuoteShort)
		it.texts[levelMin] = m.nextText(nextQuoteMin)
	}

	l.buildFiles(recency)
	l.buildRecords(recency)
	l.buildErrors(recency)
	l.buildSteps(recency)
	l.buildNotes(recency)
	l.buildTold(recency, next)
	l.buildPrior()
	l.applyFocus()
	for _, it := range l.items {
		if it.sec == secFiles {
			it.dropSmallCuts()
		}
	}
}

// A file's shorter level that saves less than cutWorthBytes and less than
// cutWorthShare of the level above it is not worth its cut: it ends the
// line in "…" on the very fact, what a change replaced ("every
// `'private-members': bool_option` →…"), for a few bytes. Such a level
// takes the fuller text. Only file lines: elsewhere (records, steps) the
// bytes a small cut saves let another line in, and the chained eval
// keeps fewer of the oldest names when every line is kept whole.
const (
	cutWorthBytes = 40
	cutWorthShare = 0.2
)

// dropSmallCuts gives each level that would cut too little the text of the
// level above it. It is idempotent: kept items pass through it again.
func (it *item) dropSmallCuts() {
	for lv := 1; lv < levels; lv++ {
		full, cut := it.texts[lv-1], it.texts[lv]
		if full == "" || cut == "" || cut == full {
			continue
		}
		if d := len(full) - len(cut); d > 0 && d < cutWorthBytes && float64(d) < cutWorthShare*float64(len(full)) {
			it.texts[lv] = full
		}
	}
}

// mandatoryLevel is the level a mandatory item takes first: the next
// step's shortest quote (a longer one is an upgrade), else full.
func (it *item) mandatoryLevel() int {
	if it.sec == secNext && it.texts[levelMin] != "" {
		return levelMin
	}
	return levelFull
}

func (l *layout) add(it *item, text string) *item {
	it.setAll(text)
	l.items = append(l.items, it)
	return it
}

// quoteHead quotes the first n bytes of a text verbatim (newlines kept),
// marking a cut.
func quoteHead(t string, n int) string {
	if len(t) <= n || strings.HasSuffix(t, " […]") {
		return t
	}
	h := headOf(t, n)
	// Cut between words: a quote ending mid-word ("as s […]") reads as a
	// different word.
	if i := strings.LastIndexAny(h, " \n"); i >= n*2/3 {
		h = h[:i]
	}
	return strings.TrimRight(h, " \n") + " […]"
}

// shortenUser cuts a long user message to about cap tokens, marking it.
func shortenUser(text string, capTokens int) string {
	max := capTokens * 3
	if len(text) <= max {
		return text
	}
	return headOf(text, max) + " […]"
}

// buildFiles: one line per file the span touched. A changed file tells
// its net change; a file only read tells which parts were read and the
// lines the agent then referred to (so its views need no step lines of
// their own); a scratch file created and still present is named by the
// state, and gets a line only for its content or its last run; a file
// created and deleted within the span is left out.
func (l *layout) buildFiles(recency func(int) float64) {
	m := l.m
	checks := m.changeChecks()
	for k, f := range m.sortedFiles() {
		order := float64(k)
		views := viewSteps(m, f)
		switch {
		case f.created != "" && f.deleted != "" && f.movedTo == "" && f.lastRun == nil:
			continue
		case f.missing && !f.net():
			// It tells the failed calls that found it missing.
			missed := m.missedAt(f.path)
			it := &item{sec: secFiles, key: f.path, prio: 4 + recency(f.n), order: order, ids: headLines(f.views, 1), steps: missed}
			it.setAll("- " + f.name() + ": does not exist (a tool said so)")
			l.items = append(l.items, it)
			continue
		}
		changed := f.net() || len(f.undone) > 0 || f.deleted != ""
		if changed && f.created != "" && len(f.changes) == 0 && f.content == "" && f.lastRun == nil && f.deleted == "" && len(f.undone) == 0 {
			continue // the state names it
		}
		if !changed {
			if len(views) == 0 {
				continue
			}
			it := &item{sec: secFiles, key: f.path, prio: 4 + 2.5*recency(f.n), order: order, ids: stepIDs(views), steps: views}
			if len(views) > 1 {
				it.prio += 0.5
			}
			r := m.readTexts(f, views)
			if r.notable {
				it.prio += 1
			}
			if r.content {
				it.prio += 1
			}
			it.texts = r.texts
			l.items = append(l.items, it)
			continue
		}
		// The file's line tells its changes too: steps that only changed it
		// need no line of their own.
		it := &item{sec: secFiles, key: f.path, prio: 9 + recency(f.n), order: order, ids: fileIDs(f), steps: append(append(views, toldChanges(f, changeSteps(m, f))...), checks[f]...)}
		// (The last run's result is read only for the last check: a warm
		// Write does not read every script's output again.)
		runInState := m.isCheck(f.lastRun) && m.toldInState(f.lastRun, clipResult(resultTextShort(f.lastRun), checkRoom))
		it.texts = m.fileTexts(f, runInState, func(lv int) string { return "- " + f.name() + ": " + fileText(f, lv, runInState) })
		if cs := checks[f]; len(cs) > 0 {
			cs = cs[max(0, len(cs)-3):]
			checked := checksText(cs)
			it.texts[levelFull] += checked
			it.texts[levelShort] += checked
			it.texts[levelMin] += "; checked by grep [" + rangeOf(stepIDs(cs)) + "]"
		}
		// A file shown whole needs no key lines: they would follow its
		// content as if they were its last line.
		if notable := fileNotable(m.viewsSinceChange(f, views), 2); len(notable) > 0 && !shownWhole(f, levelFull) {
			it.texts[levelFull] += "; key lines: " + quoteAll(notable)
		}
		l.items = append(l.items, it)
	}
}

// viewsSinceChange are the views of a changed file after its last change:
// lines read before it may no longer be there.
func (m *model) viewsSinceChange(f *fileState, views []*step) []*step {
	last := ""
	switch {
	case len(f.undone) > 0 && (len(f.changes) == 0 || m.stepAt(f.undone[len(f.undone)-1].id) > m.stepAt(f.changes[len(f.changes)-1].id)):
		last = f.undone[len(f.undone)-1].id
	case len(f.changes) > 0:
		last = f.changes[len(f.changes)-1].id
	default:
		last = f.created
	}
	if last == "" {
		return views
	}
	n := m.stepAt(last)
	i := 0
	for i < len(views) && views[i].n <= n {
		i++
	}
	return views[i:]
}

// readLines are the texts of the line of a file only read, and what
// raises its priority: lines the agent referred to, a small content.
type readLines struct {
	texts            [levels]string
	notable, content bool
}

// fileReadTexts writes the line of a file the span only read, from its
// views.
func fileReadTexts(f *fileState, views []*step) readLines {
	var r readLines
	notable := fileNotable(views, 4)
	r.notable = len(notable) > 0
	read := readParts(f, views)
	shown := viewOutline(views)
	content := smallViewed(views)
	if shown != "" {
		read += "; " + shown
	}
	r.texts[levelFull] = "- " + f.name() + ": read " + read
	if len(notable) > 0 && content == "" {
		// (A file shown whole has no key lines to pick out.)
		r.texts[levelFull] += "; key lines: " + quoteAll(notable)
	}
	r.texts[levelFull] = clip(r.texts[levelFull], 700)
	r.texts[levelShort] = "- " + f.name() + ": read " + clip(read, 80)
	if len(notable) > 0 {
		r.texts[levelShort] += "; key line: " + quoteCode(notable[len(notable)-1], 110)
	}
	// The least detail keeps the part the last view read ("read lines
	// 130-180 [m0019]"): a bare "read" reads as the whole file.
	r.texts[levelMin] = "- " + f.name() + ": read " + clip(readParts(f, views[len(views)-1:]), 60)
	switch {
	case content != "":
		// A small file read whole is its content (a key, a
		// ciphertext, a config): kept at every level.
		r.content = true
		c := "; content:\n" + indent(content)
		r.texts[levelFull] = clip(r.texts[levelFull], 700) + c
		r.texts[levelShort] = "- " + f.name() + ": read " + clip(readParts(f, views), 60) + c
		r.texts[levelMin] += c
	case shown != "":
		r.texts[levelShort] = "- " + f.name() + ": read " + clip(readParts(f, views), 60) + "; " + clip(shown, 120)
		r.texts[levelMin] += ": " + clip(shown, 70)
	case len(notable) == 0:
		// A data file read whole (a bit string, base64, a log) with no
		// outline or line the agent named: "read whole" alone says
		// nothing of what it holds; its first line does.
		if head, size := viewHead(views[len(views)-1]); head != "" {
			r.texts[levelFull] += "; begins " + quoteCode(head, 100) + size
			r.texts[levelShort] += "; begins " + quoteCode(head, 60) + size
			r.texts[levelMin] += "; begins " + quoteCode(head, 30)
		}
	}
	return r
}

// viewHead is the first line of a data file a view printed whole (at
// most 3 lines: a key, a ciphertext, a bit string, base64), and its size;
// "" for a part of a file, a longer file (its outline or key lines tell
// it), or output that is not the file's as it is (a build's log before a
// cat, a pipe's: `cat x | base64 -d` prints what x decodes to).
func viewHead(s *step) (head, size string) {
	o := &s.f.out
	if !wholeView(s) {
		return "", ""
	}
	// An editor's view numbers its lines; a data file's own "3:1415…" is
	// its content.
	numbered := o.file != ""
	var lines []string
	for i, l := range splitLines(strings.TrimSpace(o.body)) {
		if i == 0 && numbered {
			continue // the editor's header
		}
		if m := numberedLineRe.FindStringSubmatch(l); m != nil && numbered {
			l = m[2]
		}
		if l = strings.TrimSpace(l); l != "" && !editorMarkRe.MatchString(l) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 || len(lines) > 3 {
		return "", ""
	}
	head = lines[0]
	if n := len(lines); n > 1 {
		return head, " (" + strconv.Itoa(n) + " lines)"
	}
	n := strconv.Itoa(utf8.RuneCountInString(head)) + " characters"
	if len(o.body) >= maxBodyBytes {
		n = "over " + n // the output was cut
	}
	return head, " (" + n + ")"
}

// editorMarkRe matches an editor's marks around a file's lines: "(this is
// the beginning of the file)", "(12 more lines below)".
var editorMarkRe = regexp.MustCompile(`^\((?:this is the (?:beginning|end) of the file|\d+ more lines? (?:above|below))\)$`)

// changeSteps are the steps that only changed this one file (an edit, a
// write, a revert, a delete) and succeeded.
func changeSteps(m *model, f *fileState) []*step {
	return m.stepsOnBy(f, &f.onlyChanged, changedOnly)
}

// toldChanges are the steps that changed f whose line f's line is: not
// a line that wrote the file and then ran something with output, other
// than its last run ("cat > repro.py <<EOF … EOF; python repro.py" →
// "FAILURE: …"), whose result f's line does not tell.
func toldChanges(f *fileState, steps []*step) []*step {
	out := steps
	for i, s := range steps {
		if s.f.call.ranAfterChange && !s.f.out.empty && s != f.lastRun {
			if len(out) == len(steps) {
				out = slices.Clone(steps[:i]) // steps is a memo's: not written
			}
			continue
		}
		if len(out) != len(steps) {
			out = append(out, s)
		}
	}
	return out
}

// changedOnly filters the steps on one file for changeSteps.
func changedOnly(m *model, f *fileState, steps []*step) []*step {
	var out []*step
	for _, s := range steps {
		if !s.f.call.kind.changes() || s.f.call.kind == kindMutate || s.failed || len(s.files) != 1 {
			continue
		}
		if m.file(s.files[0], false) == f {
			out = append(out, s)
		}
	}
	return out
}

// viewSteps are the steps that only read a file.
func viewSteps(m *model, f *fileState) []*step {
	return m.stepsOnBy(f, &f.onlyRead, readOnly)
}

// readOnly filters the steps on one file for viewSteps.
func readOnly(m *model, f *fileState, steps []*step) []*step {
	var out []*step
	for _, s := range steps {
		if s.f.call.kind != kindView || s.failed || len(s.files) != 1 {
			continue
		}
		if m.file(s.files[0], false) == f {
			out = append(out, s)
		}
	}
	return out
}

func stepIDs(steps []*step) []string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.id()
	}
	return ids
}

// readParts tells which parts of a file were read, and where: "lines
// 910-930 [m0017], whole [m0021]".
func readParts(f *fileState, views []*step) string {
	var parts []string
	for _, s := range views {
		what := ""
		for _, op := range s.f.call.ops {
			if op.op == kindView && op.what != "" {
				what = op.what
			}
		}
		if what == "" {
			if n := s.f.out.fileLines; n > 0 {
				what = strconv.Itoa(n) + " lines"
			} else {
				what = "whole"
			}
		}
		if strings.Contains(s.f.out.body, " characters elided …]") {
			what += " (the harness cut the output)"
		}
		parts = append(parts, what+" ["+s.id()+"]")
	}
	if len(parts) > 6 {
		parts = append(parts[:2], append([]string{"…"}, parts[len(parts)-3:]...)...)
	}
	return strings.Join(parts, ", ")
}

// smallViewed is the text of a file's last view when the view showed all
// of a small file (at most 400 bytes, 12 lines), numbering dropped.
func smallViewed(views []*step) string {
	s := views[len(views)-1]
	o := &s.f.out
	if len(o.body) > 400 || o.totalLines > smallFileLines+1 || !wholeView(s) {
		return ""
	}
	lines := splitLines(strings.TrimSpace(o.body))
	if o.file != "" && len(lines) > 0 {
		lines = lines[1:] // the editor's header
	}
	if c := editorContent(lines); c != "" {
		return c
	}
	return strings.Join(lines, "\n")
}

// wholeView reports a view that printed a whole file as the file holds
// it: not a part of it, not cut by the harness, not after a build's log
// ("sphinx-build … && cat out.txt"), not through a pipe (`cat x | base64
// -d` prints what x decodes to) or with other commands' output.
func wholeView(s *step) bool {
	o, c := &s.f.out, &s.f.call
	if o.empty || strings.Contains(o.body, "characters elided") || c.builds || c.ranAfterChange || c.kind != kindView ||
		c.outputs > 1 || strings.Contains(c.label, "|") {
		return false
	}
	for _, op := range c.ops {
		if op.op == kindView && op.what != "" && !strings.HasPrefix(op.what, "whole") {
			return false // a part of the file
		}
	}
	return true
}

// viewOutline joins what the views of a file showed, newest last, once
// each.
func viewOutline(views []*step) string {
	var parts []string
	for _, s := range views {
		if o := s.f.out.outline; o != "" && !slices.Contains(parts, o) {
			parts = append(parts, o)
		}
	}
	return strings.Join(parts, "; ")
}

// fileNotable gathers the lines the agent referred to after reading a
// file, newest last, at most n.
// quoteAll quotes lines of code one by one, so each reads as code.
func quoteAll(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = quoteCode(l, 160)
	}
	return strings.Join(q, ", ")
}

func fileNotable(views []*step, n int) []string {
	var out []string
	for i := len(views) - 1; i >= 0 && len(out) < n; i-- {
		for _, l := range salient(views[i], 2) {
			if len(out) < n && !slices.Contains(out, l) {
				out = append([]string{l}, out...)
			}
		}
	}
	return out
}

func moreCount(n, shown int) string {
	if n <= shown {
		return ""
	}
	return " +" + strconv.Itoa(n-shown) + " more"
}

func fileIDs(f *fileState) []string {
	var ids []string
	if f.created != "" {
		ids = append(ids, f.created)
	}
	for _, c := range f.changes {
		ids = append(ids, c.id)
	}
	return ids
}

// fileText tells a file's net state: created, its surviving changes, the
// reverts that undid earlier ones, deletion, its content when small, and
// the last run of it.
func fileText(f *fileState, level int, lastRunInState bool) string {
	var parts []string
	if f.created != "" {
		parts = append(parts, "created ["+f.created+"]")
	}
	var undone []string
	revertRoom := 0 // the room the revert's name takes at the least detail
	for _, u := range f.undone {
		var what []string
		for _, c := range u.changes {
			what = append(what, clip(c.what, []int{120, 90, 60}[level])+" ["+c.id+"]")
		}
		if len(what) == 0 {
			what = append(what, "changes")
		}
		// Undone changes are history, not state: past two they are
		// counted, not listed.
		if level == levelMin && len(what) > 1 || len(what) > 2 {
			what = []string{strconv.Itoa(len(what)) + " changes [" + u.changes[0].id + "–" + u.changes[len(u.changes)-1].id + "]"}
		}
		// "git checkout": the reader sees the file is back as committed;
		// "deleting the lines matching `DEBUG`": what the changes were.
		by := "undone by ["
		if how := undoHow(u.what); how != "" {
			by = "undone by " + how + " ["
		}
		why := ""
		if u.why != "" && level != levelMin {
			why = " (\"" + clip(u.why, []int{140, 90}[level]) + "\")" // why it went
		}
		undone = append(undone, strings.Join(what, ", ")+" "+by+u.id+"]"+why)
	}
	// What the file now holds comes first; the changes undone on the way
	// are history, after it (and counted alone at the least detail).
	if len(f.changes) > 0 {
		parts = append(parts, changeList(f.changes, level))
	}
	// At the least detail, or when listing them would run the line past
	// its room (and cut the last ones off), the undone changes are
	// counted, each undo with its way.
	if len(undone) > 0 && len(f.changes) > 0 && (level == levelMin || len(strings.Join(parts, "; "))+len(strings.Join(undone, "; ")) > []int{900, 300, 140}[level]) {
		undone = []string{undoneCount(f.undone, level)}
		// How they were undone says what they were (debug prints a
		// pattern deleted) and whether the file went back to what was
		// committed: the line keeps room for it.
		revertRoom = max(0, len(undone[0])-35)
	}
	parts = append(parts, undone...)
	if f.movedTo != "" {
		parts = append(parts, "moved to "+f.movedTo+" ["+f.deleted+"]")
	} else if f.deleted != "" {
		parts = append(parts, "deleted ["+f.deleted+"]")
	} else if f.created != "" {
		parts = append(parts, "still present")
	}
	if f.outline != "" && f.deleted == "" && level != levelMin {
		parts = append(parts, clipQuoted(f.outline, []int{200, 110}[level]))
	}
	switch {
	case f.lastRun == nil || level == levelMin:
	case lastRunInState:
		parts = append(parts, "last run ["+f.lastRun.id()+"] → "+toState)
	default:
		parts = append(parts, "last run ["+f.lastRun.id()+"] → "+clipResult(resultTextShort(f.lastRun), []int{160, 90}[level]))
	}
	t := strings.Join(parts, "; ")
	limit := []int{900, 300, 140}[level]
	extra := 0
	for _, c := range f.changes {
		// The room a script's written text takes (scriptEffect) is not
		// taken from the rest of the line: once, for the longest.
		if _, eff, ok := strings.Cut(c.what, " ("); ok && strings.HasPrefix(c.what, "rewritten by running ") {
			extra = max(extra, min(len(eff), 240))
		}
	}
	limit += extra + revertRoom
	// A small file's text is its state: kept at every level it fits.
	if shownWhole(f, level) {
		return clip2(t, limit) + "; content:\n" + indent(f.content)
	}
	return clip2(t, limit)
}

// clipQuoted clips a text of `quoted` statements to max bytes, cutting
// before a quote it would leave open.
func clipQuoted(t string, max int) string {
	c := clip(t, max)
	if strings.Count(c, "`")%2 == 0 {
		return c
	}
	open := strings.LastIndex(c, "`")
	head := strings.TrimRight(strings.TrimSuffix(strings.TrimRight(c[:open], " "), ","), " ")
	if head == "" || strings.HasSuffix(head, "runs") {
		return strings.TrimSuffix(c, "…") + "…`" // the first quote alone: closed where cut
	}
	return head + " …"
}

// undoneCount tells the changes undone on a file's way at the least
// detail: counted, each undo with how it undid them ("4 by deleting the
// lines matching `DEBUG` [m0063], 3 by git checkout [m0075]"); past three
// undos, counted over their range, with the last one's revert.
func undoneCount(undos []undo, level int) string {
	type group struct {
		n            int
		id, how, why string
	}
	var groups []group
	n := 0
	for _, u := range undos {
		k := max(1, len(u.changes))
		n += k
		how := undoHow(u.what)
		if g := len(groups) - 1; g >= 0 && groups[g].id == u.id && strings.HasPrefix(how, "deleting") && strings.HasPrefix(groups[g].how, "deleting") {
			groups[g].n += k
			groups[g].how += " or " + strings.TrimPrefix(how, "deleting the lines matching ")
			continue
		}
		groups = append(groups, group{k, u.id, how, u.why})
	}
	by := func(how string) string {
		if how == "" {
			return ""
		}
		return " by " + how
	}
	// Why it was undone, above the least detail: what the agent judged
	// wrong is what not to do again.
	why := func(g group) string {
		if g.why == "" || level == levelMin {
			return ""
		}
		return " (\"" + clip(g.why, []int{140, 90}[level]) + "\")"
	}
	switch {
	case len(groups) == 1:
		g := groups[0]
		return plural(n, "earlier change") + " undone" + by(g.how) + " [" + g.id + "]" + why(g)
	case len(groups) <= 3:
		// Each told as a fact of its own: "4 insertions matching `DEBUG`
		// deleted again [m0063], 3 changes undone by git checkout [m0075]"
		// (a count followed by its ways read as a code to decode). What is
		// counted is insertions, not lines: one may add a block, or a line
		// after each line a pattern matches.
		parts := make([]string, len(groups))
		for i, g := range groups {
			if p, ok := strings.CutPrefix(g.how, "deleting the lines matching "); ok {
				parts[i] = plural(g.n, "insertion") + " matching " + p + " deleted again [" + g.id + "]"
				continue
			}
			parts[i] = plural(g.n, "change") + " undone" + by(g.how) + " [" + g.id + "]" + why(g)
		}
		return "earlier, " + strings.Join(parts, ", ")
	}
	t := plural(n, "earlier change") + " undone [" + undos[0].id + "–" + undos[len(undos)-1].id + "]"
	if v, ok := strings.CutPrefix(undos[len(undos)-1].what, "reverted with "); ok {
		t += ", the last time by " + v
	}
	return t
}

// undoHow says how an undo undid changes: "git checkout" for a revert,
// "deleting the lines matching `DEBUG`" for a deletion by pattern, "" when
// its text tells neither.
func undoHow(what string) string {
	if v, ok := strings.CutPrefix(what, "reverted with "); ok {
		return v
	}
	if p, ok := strings.CutPrefix(what, "deleted each line matching "); ok {
		return "deleting the lines matching " + p
	}
	return ""
}

// shownWhole reports whether a changed file's line at level carries its
// content.
func shownWhole(f *fileState, level int) bool {
	return f.content != "" && f.deleted == "" && len(f.content) <= []int{1500, 400, 200}[level]
}

// resultTextShort is a step's result at short detail, without the model
// (used where the step is known to be a run).
func resultTextShort(s *step) string {
	if s.f.out.empty && !s.failed {
		return "ok, no output"
	}
	if s.failed {
		return failureText(s, levelShort)
	}
	if s.f.out.tests != "" {
		return testText(&s.f.out, levelShort)
	}
	return outputText(s, levelShort)
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// clip2 clips a text that may hold an indented block: the block is kept
// whole when the text fits.
func clip2(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if i := strings.Index(s, "; content:\n"); i >= 0 && i < max {
		return s[:i]
	}
	return clip(s, max)
}

// buildRecords: one line per record read or changed. Records of one
// shape (the same fields, from the same tool) print as a table: a line
// naming the columns once (with the values every row shares), then one
// line of values per record, the columns the system prompt names first.
// Then the ids of a list not yet read.
func (l *layout) buildRecords(recency func(int) float64) {
	m := l.m
	recs := m.sortedRecords()
	shapes := map[string][]*recordState{}
	var order []string
	for _, r := range recs {
		k := r.rec.shape()
		if shapes[k] == nil {
			order = append(order, k)
		}
		shapes[k] = append(shapes[k], r)
	}
	pos := 0
	for _, k := range order {
		group := shapes[k]
		if len(group) == 1 {
			l.recordItem(group[0], m.tripRow(group[0]), "", recency, float64(pos))
			pos++
			continue
		}
		cols, shared, sharedBrief := columns(group, m.prefersField)
		// A value every row shares and the user stated (their user id)
		// says nothing new.
		said := func(s string) bool {
			_, v, _ := strings.Cut(s, " ")
			return m.userSaid(v)
		}
		shared, sharedBrief = slices.DeleteFunc(shared, said), slices.DeleteFunc(sharedBrief, said)
		t := newTable(group, cols)
		// The header says once what every row shares; the rows name their
		// own cells where a value does not say what it is (a flag, a
		// count, a name), so a row reads without decoding it against a
		// list of columns.
		if h := tableHeader(shared, t.year); h != "" {
			head := &item{sec: secRecords, group: k, header: true, prio: 11, order: float64(pos)}
			head.setAll(h)
			// The shorter levels, as the rows', tell items by ids and dates.
			head.texts[levelShort] = tableHeader(sharedBrief, t.year)
			head.texts[levelMin] = head.texts[levelShort]
			l.items = append(l.items, head)
			pos++
		}
		for _, r := range group {
			l.recordItem(r, t, k, recency, float64(pos))
			pos++
		}
	}
	unread := m.unread()
	if len(unread) > 0 {
		unread = unread[:len(unread)-1] // the next step names the last list (nextText)
	}
	for _, u := range unread {
		it := &item{sec: secRecords, prio: 9.5, order: 1e6, ids: []string{u.id}}
		it.setAll("- not yet read: " + strings.Join(u.ids, ", ") + " (" + u.field + " of " + u.owner + " [" + u.id + "])")
		l.items = append(l.items, it)
	}
}

// tripRow is how a record of its own shape that goes somewhere (origin and
// destination, from and to) is written: as a row of a table of one, the
// same as the rows of several trips ("LAX-ATL; basic_economy; HAT030
// 05-13, …"), without the fields that name a record in play or an id the
// user stated. Nil for other records, which read better by their fields'
// names.
func (m *model) tripRow(r *recordState) *table {
	var cols []string
	for _, f := range r.rec.fields {
		if f.value != r.id && (m.records[f.value] != nil || holdsIDs(f.value) && m.userSaid(f.value)) {
			continue
		}
		cols = append(cols, f.name)
	}
	sort.SliceStable(cols, func(i, j int) bool { return m.prefersField(cols[i]) && !m.prefersField(cols[j]) })
	t := newTable([]*recordState{r}, cols)
	if t.joined == nil {
		return nil
	}
	for a, b := range t.joined {
		x, _ := r.rec.value(a)
		y, _ := r.rec.value(b)
		if !tripEnd(x) || !tripEnd(y) {
			return nil // dates, addresses: not where a trip goes
		}
	}
	t.single = true
	t.year = "" // no header says it
	return t
}

// userNamed is m.userNamed, read once a Write for each word: the step
// count from which the user had named it, or -1.
func (l *layout) userNamed(w string, n int) bool {
	at, ok := l.namedAt[w]
	if !ok {
		at = l.m.namedFrom(w)
		if l.namedAt == nil {
			l.namedAt = map[string]int{}
		}
		l.namedAt[w] = at
	}
	return at >= 0 && at <= n
}

// tripEnd reports a value that names a place a trip starts or ends at
// ("LAX", "Chicago"), not a date or an address.
func tripEnd(v string) bool { return place(v) && !strings.ContainsAny(v, "@./:") }

// recordSteps are the lookups that read just this record: its line tells
// them.
func recordSteps(m *model, id string) []*step {
	var out []*step
	for _, s := range m.steps {
		if s.f.call.kind == kindLookup && len(s.f.records) == 1 && s.f.records[0].id == id {
			out = append(out, s)
		}
	}
	return out
}

// listsIDs reports a value that lists ids, each maybe with a date or an
// amount ("HAT030 2024-05-13, HAT223, HAT252 05-21", "gift_card_7091239
// 187"), not text that names one in passing.
func listsIDs(v string) bool {
	for _, p := range strings.Split(v, ", ") {
		f := strings.Fields(p)
		if len(f) == 0 || len(f) > 2 || !holdsIDs(f[0]) || len(f) == 2 && !shortDateRe.MatchString(f[1]) && !isNumber(f[1]) {
			return false
		}
	}
	return true
}

// idsOnly reduces a cell to the ids it holds and the date that ends it
// ("HAT099, HAT274 05-22"), a list of names to its count ("(3)"), or
// else "…".
func idsOnly(v string) string { return idsUpTo(v, 4) }

// idsUpTo is idsOnly keeping up to n ids of a list.
func idsUpTo(v string, n int) string {
	var ids []string
	words := strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '(' || r == ')' })
	for _, w := range words {
		if holdsIDs(w) {
			ids = append(ids, w)
		}
	}
	if len(ids) == 0 {
		if n := strings.Count(v, ", ") + 1; n > 1 {
			return "(" + strconv.Itoa(n) + ")"
		}
		return "…"
	}
	if len(ids) > n {
		return strings.Join(ids[:n], ", ") + moreCount(len(ids), n)
	}
	// Each id keeps the date written after it ("HAT116, HAT020 05-04,
	// HAT169 05-06"): a list of flights keeps its days.
	var parts []string
	for _, p := range strings.Split(v, ", ") {
		var keep []string
		for _, w := range strings.FieldsFunc(p, func(r rune) bool { return r == ' ' || r == ';' || r == '(' || r == ')' }) {
			if holdsIDs(w) || shortDateRe.MatchString(w) && len(keep) > 0 {
				keep = append(keep, w)
			}
		}
		if len(keep) > 0 {
			parts = append(parts, strings.Join(keep, " "))
		}
	}
	return strings.Join(factorDates(parts), ", ")
}

// shortDateRe matches a date as a table cell writes it: "2024-05-22" or,
// in a table whose dates share their year, "05-22".
var shortDateRe = regexp.MustCompile(`^(?:\d{4}-)?\d{2}-\d{2}$`)

// routePairs are pairs of columns a table row says as one "A-B" cell; a
// trip's (the first) may be told by its stops (record.loop).
var routePairs = [][2]string{{"origin", "destination"}, {"from", "to"}, {"source", "target"}}

// table is how the rows of records of one shape are written: their
// columns, pairs of them joined, and the year every date shares, which the
// header says once.
type table struct {
	cols   []string
	joined map[string]string // first column of a pair -> its second
	year   string
	// single marks the row of a record of its own shape (tripRow): it
	// has a line's room, not a row's.
	single bool
}

var dateTimeRe = regexp.MustCompile(`\b(\d{4})-(\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b`)

func newTable(group []*recordState, cols []string) *table {
	t := &table{cols: cols}
	for _, p := range routePairs {
		if !slices.Contains(cols, p[0]) || !slices.Contains(cols, p[1]) {
			continue
		}
		short := true
		for _, r := range group {
			a, _ := r.rec.value(p[0])
			b, _ := r.rec.value(p[1])
			short = short && len(a) <= 24 && len(b) <= 24
		}
		if short {
			if t.joined == nil {
				t.joined = map[string]string{}
			}
			t.joined[p[0]] = p[1]
			// By name: an earlier pair's column is gone from t.cols.
			t.cols = slices.DeleteFunc(slices.Clone(t.cols), func(c string) bool { return c == p[1] })
		}
	}
	years := map[string]bool{}
	for _, r := range group {
		for _, c := range cols {
			v, _ := r.rec.value(c)
			for _, m := range dateTimeRe.FindAllStringSubmatch(v, -1) {
				years[m[1]] = true
			}
		}
	}
	if len(years) == 1 {
		for y := range years {
			t.year = y
		}
	}
	return t
}

// recordsHeader starts the line before a table's rows that says what they
// all share.
const recordsHeader = "- (below, "

// tableHeader is that line: the values every row shares and the year of
// their dates; "" when they share nothing.
func tableHeader(shared []string, year string) string {
	var parts []string
	if len(shared) > 0 {
		parts = append(parts, "every record has "+strings.Join(shared, "; "))
	}
	if year != "" {
		parts = append(parts, "dates in "+year)
	}
	if len(parts) == 0 {
		return ""
	}
	return recordsHeader + strings.Join(parts, "; ") + ")"
}

// cellText is a row's cell as written: the value, after its column's name
// where the value alone does not say what it is (a flag, a number, a
// count of names, a date or a time of its own, an id, numbers by key). A
// route ("IAH-DEN"), ids with their dates ("HAT078, HAT118 05-27"), a
// word of the domain ("basic_economy") or a name reads alone.
func (t *table) cellText(i int, v string) string {
	c := t.cols[i]
	if _, ok := t.joined[c]; ok || !bareValueRe.MatchString(v) && !(numberMapRe.MatchString(v) && !holdsIDs(v)) && !strings.HasSuffix(c, "_id") {
		return v
	}
	// An id alone does not say what it names, nor "economy 2, business 1"
	// whether it counts seats or dollars. (Payments, "gift_card_8190333
	// 830", go without their name: at the least budgets the name took a
	// row's room, and with it the reservation being changed.)
	return c + " " + v
}

var bareValueRe = regexp.MustCompile(`^(?:yes|no|true|false|none|null|-|\(\d+\)|[-+]?\d+(?:\.\d+)?|(?:\d{4}-)?\d{2}-\d{2}(?:T\d{2}:\d{2})?|\d{2}:\d{2}(?::\d{2})?)$`)

// cells returns a row's cells: pairs joined, dates without the table's
// year or their seconds.
func (t *table) cells(r *record, brief bool) []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		v, _ := r.value(c)
		if brief {
			v, _ = r.briefValue(c)
		}
		if second, ok := t.joined[c]; ok {
			w, _ := r.value(second)
			v = cmpOr(v, "-") + "-" + cmpOr(w, "-")
			if r.loop != "" && c == routePairs[0][0] {
				v = r.loop // "EWR-EWR" says not where it goes
			}
		}
		out[i] = dateTimeRe.ReplaceAllStringFunc(cmpOr(v, "-"), func(d string) string {
			m := dateTimeRe.FindStringSubmatch(d)
			s := m[2]
			if m[1] != t.year {
				s = m[1] + "-" + s
			}
			if m[3] != "" {
				s += "T" + m[3] // the source's own ISO form
			}
			return s
		})
	}
	return out
}

// minCell is the longest cell a table row keeps at its least detail (a
// date is always kept: policies reason about it).
const minCell = 16

// columns orders a table's columns (named by the system prompt first) and
// sets apart the ones every row shares.
func columns(group []*recordState, prefer func(string) bool) (cols, shared, sharedBrief []string) {
	first := group[0].rec.fields
	for _, f := range first {
		same := true
		for _, r := range group[1:] {
			if v, ok := r.rec.value(f.name); !ok || v != f.value {
				same = false
				break
			}
		}
		if same {
			shared = append(shared, f.name+" "+f.value)
			sharedBrief = append(sharedBrief, f.name+" "+f.briefValue())
			continue
		}
		cols = append(cols, f.name)
	}
	sort.SliceStable(cols, func(i, j int) bool { return prefer(cols[i]) && !prefer(cols[j]) })
	return cols, shared, sharedBrief
}

// recordItem adds one record's line: "name value" pairs, or a table row
// of the given columns.
func (l *layout) recordItem(r *recordState, t *table, group string, recency func(int) float64, order float64) {
	m := l.m
	at := r.readAt
	if len(r.changed) > 0 {
		at = r.changed[len(r.changed)-1]
	}
	head := "- " + r.id + " [" + at + "]"
	if len(r.changed) > 0 && (t == nil || group == "") {
		head += " (" + cmpOr(r.status, "changed") + ")"
	}
	it := &item{sec: secRecords, key: r.id, group: group, prio: 8 + 1.5*recency(r.n), order: order, ids: []string{at}, steps: recordSteps(m, r.id)}
	if len(r.changed) > 0 {
		it.prio++
	}
	switch {
	case m.userSaid(r.id):
		// The record the user named (their profile, the reservation they
		// gave): what the conversation is about, and where the ids later
		// calls take (payment methods, reservations) come from: it
		// outranks the newer records of a search.
		it.prio += 2.5
	case m.usedLater(r):
		it.prio += 1.25 // a later call acted on it: it is in play
	case m.decidedOn(r):
		// The agent concluded on it ("59XX6W can be canceled because it
		// has travel insurance"): the conclusion needs its record.
		it.prio += 1.25
	}
	if t == nil {
		rest := r.rec
		rest.id = ""
		// A field naming another record in play, or an id the user stated
		// (user_id), says nothing new. (A user's claim the record bears
		// out, "silver", is a fact: the user may be wrong.)
		rest.fields = slices.DeleteFunc(slices.Clone(rest.fields), func(f field) bool {
			return f.value != r.id && (m.records[f.value] != nil || holdsIDs(f.value) && m.userSaid(f.value))
		})
		rest.fields = loopFields(rest.fields, rest.loop)
		it.texts[levelFull] = head + rest.line(m.fieldWeight, 900)
		it.texts[levelShort] = head + rest.line(m.fieldWeight, 260)
		if slices.ContainsFunc(rest.fields, func(f field) bool { return f.brief != "" }) {
			// Its items told by their ids and dates (not their routes and
			// prices) before any other value is cut.
			items := rest
			items.fields = slices.Clone(rest.fields)
			for i := range items.fields {
				items.fields[i].value = items.fields[i].briefValue()
			}
			it.texts[levelShort] = head + items.line(m.fieldWeight, 260)
		}
		// The least detail keeps the short values (a cabin, a flag, a date)
		// and the ids of the long ones, as table rows do.
		brief := rest
		brief.fields = nil
		named := func(w string) bool { return l.userNamed(w, r.n) }
		for _, f := range rest.fields {
			f.value = f.briefValue() // items by their ids and dates
			if numberMapRe.MatchString(f.value) {
				f.value = namedNumbers(f.value, named)
			}
			if len(f.value) > minCell && !looksLikeDate(f.value) && !(holdsIDs(f.value) && len(f.value) <= 260) && !(numberMapRe.MatchString(f.value) && len(f.value) <= 70) {
				// A record's own lists of ids (its reservations, its
				// payment methods, with their balances when short) are
				// what later calls take.
				if f.value = idsUpTo(f.value, 8); f.value == "…" {
					continue
				}
			}
			brief.fields = append(brief.fields, f)
		}
		it.texts[levelMin] = head + brief.line(m.fieldWeight, 360)
		if len(it.texts[levelMin]) >= len(it.texts[levelShort]) {
			// The ids of the long values (every reservation, every payment
			// method) outweigh their first words cut short.
			it.texts[levelShort] = it.texts[levelMin]
		}
	} else {
		// Cells are cut one by one; the least detail keeps the short cells
		// (a cabin, a flag, a date) whole, the ids of the long ones (a
		// list of flights keeps its flight numbers), and leaves out the
		// rest.
		full, brief := t.cells(&r.rec, false), t.cells(&r.rec, true)
		named := func(w string) bool { return l.userNamed(w, r.n) }
		for i, v := range brief {
			if numberMapRe.MatchString(v) {
				brief[i] = namedNumbers(v, named) // the class the user named
			}
		}
		cellRoom, idsKept := []int{160, 40, 0}, 4
		if t.single {
			cellRoom, idsKept = []int{600, 40, 0}, 8
		}
		for lv, cell := range cellRoom {
			cells := full
			if lv != levelFull {
				cells = brief // items by their ids and dates
			}
			vals := make([]string, 0, len(cells))
			for i, v := range cells {
				switch {
				case lv == levelFull && len(v) > cell && listsIDs(brief[i]):
					// Its items told whole do not fit: by their ids and
					// days, every one (the last leg is one to change too).
					v = idsUpTo(brief[i], 12)
				case lv == levelShort && len(v) > cell && listsIDs(v):
					// A list of ids (flights with their days, payments
					// with their amounts) keeps its ids rather than the
					// first of them whole.
					v = idsUpTo(v, idsKept)
				case cell > 0:
					v = clip(v, cell)
				case len(v) > minCell && !looksLikeDate(v) && !shortDateRe.MatchString(strings.Fields(v)[0]) && !(numberMapRe.MatchString(v) && len(v) <= 50):
					if v = idsUpTo(v, idsKept); v == "…" {
						continue
					}
				}
				vals = append(vals, t.cellText(i, v))
			}
			it.texts[lv] = head + ": " + strings.Join(vals, "; ")
		}
	}
	l.items = append(l.items, it)
}

// loopFields tells a record that ends where it starts by its stops: its
// two ends ("origin EWR; destination EWR") become "route EWR-IAH-EWR".
func loopFields(fields []field, loop string) []field {
	if loop == "" {
		return fields
	}
	p := routePairs[0]
	i := slices.IndexFunc(fields, func(f field) bool { return f.name == p[0] })
	j := slices.IndexFunc(fields, func(f field) bool { return f.name == p[1] })
	if i >= 0 && j >= 0 {
		fields[i] = field{name: "route", value: loop}
		return slices.Delete(fields, j, j+1)
	}
	return fields
}

// namedNumbers keeps, of "basic_economy 63, economy 163, business 235",
// the numbers the user named ("economy 163"; namedKeys).
func namedNumbers(v string, named func(string) bool) string {
	pairs := strings.Split(v, ", ")
	keys := make([]string, len(pairs))
	for i, p := range pairs {
		keys[i], _, _ = strings.Cut(p, " ")
	}
	keep := namedKeys(keys, named)
	if keep == nil {
		return v
	}
	out := make([]string, len(keep))
	for j, i := range keep {
		out[j] = pairs[i]
	}
	return strings.Join(out, ", ")
}

// baseImportance ranks a step by what it did.
var baseImportance = [...]float64{kindOther: 3, kindList: 1.5, kindInstall: 2, kindView: 4, kindSearch: 4.5, kindLookup: 5,
	kindHTTP: 6, kindRun: 6.5, kindTest: 7.5, kindThink: 3, kindWrite: 6.5, kindEdit: 6.5, kindDelete: 5, kindRevert: 6.5,
	kindMutate: 8.5, kindFinish: 8}

// buildSteps: one line per step (or group of alike steps), newest and
// most telling first when the budget is short.
func (l *layout) buildSteps(recency func(int) float64) {
	m := l.m
	told := make([]bool, len(m.steps)) // by step
	for _, it := range l.items {
		if it.sec == secFiles || it.sec == secRecords || it.sec == secErrors {
			for _, s := range it.steps {
				told[s.n] = true
			}
		}
	}
	var rest []*step
	for _, s := range m.steps {
		if !told[s.n] {
			rest = append(rest, s)
		}
	}
	groups := m.stepGroups(rest)
	// A call repeated with the same answer is told once, by its last
	// repeat, which names the earlier ones (each hides the one before).
	var repeated map[*step]bool
	for _, g := range groups {
		if e := m.repeatOf(g.first()); e != nil {
			if repeated == nil {
				repeated = map[*step]bool{}
			}
			repeated[e] = true
		}
	}
	for _, g := range groups {
		if len(g.steps) == 1 && repeated[g.first()] {
			continue
		}
		s := g.last()
		k := s.f.call.kind
		p := baseImportance[k] + 4*recency(s.n)
		// Runs of one command whose outcomes differ are the evidence of
		// what changed in between (a bug reproduced, then fixed).
		if m.runOutcomes(s) > 1 {
			p += 2
		}
		switch {
		case s.failed && m.resolvedFailure(s):
			p -= 1 // its error line says what failed and what fixed it
		case s.failed:
			p += 1.5
		case g.negative:
			p += 0.5 // what is not there saves repeating the search
		case k == kindSearch || k == kindView:
			if s.react != "" && len(salient(s, 1)) > 0 {
				p += 1
			}
		}
		switch {
		case len(s.f.records) == 1 && m.records[s.f.records[0].id] != nil:
			p -= 3 // the record's line says it
		case len(s.f.records) >= 2 && k == kindLookup:
			p += 1 // a search's results are what the next choice is made from
		case s.f.out.empty && !s.failed && (k == kindRun || k == kindOther):
			p -= 1.5 // "ok, no output" tells little
		}
		l.items = append(l.items, m.groupItem(g, p))
	}
}

// changeChecks are the greps that only check a change landed
// (checksChange), by the file they check: its line names them, in place
// of step lines that would quote the changed lines again.
func (m *model) changeChecks() map[*fileState][]*step {
	var checks map[*fileState][]*step
	for _, s := range m.steps {
		if s.f.call.grepped == "" || !m.checksChange(s) {
			continue
		}
		if checks == nil {
			checks = map[*fileState][]*step{}
		}
		f := m.file(s.f.call.greppedIn, false)
		checks[f] = append(checks[f], s)
	}
	return checks
}

// checksText names the greps that found a file's new text after its last
// change, at most three, with the lines they found it on when numbered:
// "; grep [m0033] finds the new text at line 917" (at the least detail,
// "; checked by grep [m0033]").
func checksText(cs []*step) string {
	if len(cs) > 1 {
		return "; greps [" + rangeOf(stepIDs(cs)) + "] find the new text"
	}
	s := cs[0]
	t := "; grep [" + s.id() + "] finds the new text"
	hits, n := searchHits(s.f.out.lines)
	switch lines := hitLines(hits); {
	case len(lines) == len(hits) && len(lines) == 1:
		t += " at line " + lines[0]
	case len(lines) == len(hits) && len(lines) > 1:
		t += " at lines " + strings.Join(headLines(lines, 4), ", ")
		if len(lines) > 4 {
			t += ", …"
		}
	default:
		t += " on " + plural(n, "line")
	}
	return t
}

// checksChange reports a grep of one file whose every hit is text a
// change of that file put there, a change that still stands ("grep 'if
// shape else 1' dense_ndim_array.py" after `if shape else 0` → `if shape
// else 1`, both hits the changed lines): a check that the edit landed,
// which the file's line tells. (A grep that finds other lines too, or
// whose pattern the old text held as well, is a search; one of a change
// since undone tells what the undo took back.)
func (m *model) checksChange(s *step) bool {
	if s.checks == 0 {
		s.checks, s.checkOf = 1, m.readCheckedChange(s)
	}
	if s.checkOf == "" {
		return false
	}
	// After the file's last change or undo, the text it found is the
	// file's text now (one before it may have found text since replaced),
	// and the change it checks must stand.
	f := m.file(s.f.call.greppedIn, false)
	return f != nil && m.lastChangeAt(f) < s.n && slices.ContainsFunc(f.changes, func(ch change) bool { return ch.id == s.checkOf })
}

// changedLines reads the line numbers a change's text begins with ("line
// 917: ", "lines 12, 40: "), or nil.
func changedLines(prefix string) []string {
	m := changedLinesRe.FindStringSubmatch(prefix)
	if m == nil {
		return nil
	}
	return strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' })
}

var changedLinesRe = regexp.MustCompile(`^lines? ([\d, ]+): $`)

// lastChangeAt is the step of a file's newest change or undo, -1 for none.
func (m *model) lastChangeAt(f *fileState) int {
	n := -1
	if k := len(f.changes); k > 0 {
		n = m.stepAt(f.changes[k-1].id)
	}
	if k := len(f.undone); k > 0 {
		n = max(n, m.stepAt(f.undone[k-1].id))
	}
	return n
}

// readCheckedChange returns the id of the newest change made before s,
// standing or undone since, whose new text every hit of s holds: read
// once, it is the same whatever came after s.
func (m *model) readCheckedChange(s *step) string {
	c := &s.f.call
	if c.grepped == "" || len(c.grepped) < 4 || s.failed {
		return ""
	}
	f := m.file(c.greppedIn, false)
	if f == nil {
		return ""
	}
	hits, n := searchHits(s.f.out.lines)
	if n == 0 || n != len(hits) {
		return ""
	}
	found, at := "", -1
	try := func(ch change) {
		k := m.stepAt(ch.id)
		if k >= s.n || k <= at {
			return
		}
		sub := substitutionRe.FindStringSubmatch(ch.what)
		if sub == nil || !strings.Contains(sub[3], c.grepped) || strings.Contains(sub[2], c.grepped) || strings.Contains(sub[3], "…") {
			return
		}
		if slices.ContainsFunc(hits, func(h string) bool { return !strings.Contains(h, strings.TrimSpace(sub[3])) }) {
			return
		}
		// A change of named lines ("line 917: …"): a numbered hit on
		// another line is text the change did not put there.
		if named := changedLines(sub[1]); named != nil {
			if lines := hitLines(hits); len(lines) == len(hits) && slices.ContainsFunc(lines, func(l string) bool { return !slices.Contains(named, l) }) {
				return
			}
		}
		found, at = ch.id, k
	}
	for _, ch := range f.changes {
		try(ch)
	}
	for _, u := range f.undone {
		for _, ch := range u.changes {
			try(ch)
		}
	}
	return found
}

// groupSteps are the steps a group's line tells: its own, after the
// earlier calls its first step repeats, which the line names.
func (m *model) groupSteps(g *group) []*step {
	if r, _ := m.repeated(g.first()); len(r) > 0 {
		return append(r, g.steps...)
	}
	return g.steps
}

// groupItem returns the item of a group's line at priority p.
func (m *model) groupItem(g *group, p float64) *item {
	gl := m.groupLine(g)
	return gl.item(item{sec: secSteps, prio: p, order: float64(g.first().n), ids: gl.ids, steps: m.groupSteps(g), texts: gl.texts, idents: gl.idents})
}

// groupIdents are the identifiers a group's steps carry at full detail.
func groupIdents(g *group) []string {
	if len(g.steps) == 1 {
		return slices.Clip(stepIdents(g.steps[0])) // read only: shared with the step
	}
	var out []string
	for _, x := range g.steps {
		out = append(out, stepIdents(x)...)
	}
	return out
}

// outcomeKey sums up what a run showed, to compare runs of one command.
// It is written once per step: what it reads is fixed when the step is.
func outcomeKey(s *step) string {
	if s.outcome == "" {
		o := &s.f.out
		s.outcome = strconv.FormatBool(s.failed) + "|" + o.errLine + "|" + o.tests + "|" + strings.Join(o.short, "\n") + "|" + lastMeaningful(o.lines)
	}
	return s.outcome
}

// stepIdents are the identifiers a step's line carries at full detail.
func stepIdents(s *step) []string {
	if s.lineIdents == nil {
		s.lineIdents = ident.Identifiers(s.f.call.label + " " + s.f.out.errLine + " " + s.f.out.tests)
	}
	return s.lineIdents
}

// buildErrors: each error with its message, where it was raised, and what
// resolved it (or that nothing has yet).
func (l *layout) buildErrors(recency func(int) float64) {
	m := l.m
	syntax := m.syntaxErrors()
	inState := m.checkFails()
	if inState != nil && !pointable(inState.lastFailed) {
		inState = nil
	}
	for k, e := range m.errors {
		// The open refusals of edits of one file are one line: the newest,
		// with every refusal's id. Each told alone repeats what NEXT and
		// STATE say of the file, with old texts no longer tried.
		eids, tries, also := e.ids, 0, ""
		if f := e.failedEdit(); f != "" && e.open() {
			all, newest := m.refusals(f)
			if newest != e {
				continue // told with the newest refusal of the same file
			}
			if len(all) > len(e.ids) {
				eids, tries = all, len(all)
				also = m.otherRefusal(f, e)
			}
		}
		ids := "[" + strings.Join(headLines(eids, 3), ", ") + "]"
		if len(eids) > 3 {
			ids = "[" + eids[0] + " … " + eids[len(eids)-1] + ", " + strconv.Itoa(len(eids)) + "×]"
		}
		switch {
		case tries > 0 && also != "":
			ids += " (" + strconv.Itoa(tries) + " refused edits of the file; the last refusal shown; " + also + ")"
		case tries > 0:
			ids += " (" + strconv.Itoa(tries) + " refused edits of the file; the last refusal shown)"
		case e.reworded:
			ids += " (" + strconv.Itoa(len(e.ids)) + " tries, each with other text; the last one shown)"
		}
		status := "unresolved"
		switch {
		case e.explainedAt != "":
			status = "explained by the agent [" + e.explainedAt + "]: \"" + clip(e.explanation, 160) + "\""
		case e.raisedBy != "":
			status = "raised on purpose by the test's own " + quoteCode(e.raisedBy, 80) + ", not a fault of the code under test"
		case e.unrelated():
			status = "unresolved; reading it [" + e.lastFailed.lastID() + "], the agent judged it unrelated to its change"
		}
		p := 7 + 2*recency(e.n)
		resolved := "resolved [" + e.resolved + "]"
		if e.resolvedBy != nil && e.resolvedBy.failed {
			// Got past by a run that failed with another error: "resolved"
			// alone reads as a run that worked.
			resolved += " (that run failed otherwise)"
		}
		if !e.open() {
			status = resolved + " " + e.fix
			p -= 1 // what fixed it saves trying the same again
		}
		hollow := ""
		if !e.open() {
			if x := m.hollowPass(e, syntax); x != nil {
				where, _, _ := strings.Cut(x.at, " line ")
				if f := m.knownFile(where); f != nil {
					where = f.name()
				}
				hollow = "seemed resolved [" + e.resolved + "], but " + where + " did not load then [" + x.ids[0] + "]"
				status = hollow + ": " + clip(x.line, 60)
				p += 1
			}
		}
		where := ""
		if e.at != "" {
			where = " (at " + e.at + ")"
		}
		// The line tells a failed call whose command says little (an
		// editor view, a lookup): its step needs no line of its own.
		var told []*step
		for _, id := range eids {
			for _, st := range m.callsOf(id) {
				if k := st.f.call.kind; st.failed && k != kindRun && k != kindTest && k != kindHTTP {
					told = append(told, st)
				}
			}
		}
		it := &item{sec: secErrors, prio: p, order: float64(k), ids: eids, steps: told}
		if e == inState && status == "unresolved" && tries == 0 && strings.Contains(m.checkShown(), errorText(e.line)) {
			// The state quotes it whole as what the last check still
			// fails with: the line adds where it was raised and its
			// sightings.
			it.texts = m.errorTexts(e, errorKey{line: errInState, where: where, ids: ids}, func(t *[levels]string) {
				line := "- " + errInState + where + " " + ids + ": unresolved"
				*t = [levels]string{line, line, line}
			})
			l.items = append(l.items, it)
			continue
		}
		it.texts = m.errorTexts(e, errorKey{e.line, where, ids, status}, func(t *[levels]string) {
			line := errorText(e.line)
			room := 220
			if strings.Contains(line, " (raised while handling ") {
				room = 360 // the exception it was raised while handling may be the cause
			}
			t[levelFull] = "- " + clip(line, room) + where + " " + ids + ": " + status
			// The error's message is what prevents repeating it: kept whole
			// unless the room is at its tightest.
			t[levelShort] = "- " + clip(line, 130) + " " + ids + ": " + clip(status, 90)
			short := "unresolved"
			switch {
			case e.explainedAt != "":
				short = "explained by the agent [" + e.explainedAt + "]"
			case e.raisedBy != "":
				short = "raised on purpose by the test"
			case e.unrelated():
				short = "unresolved, judged unrelated to the change [" + e.lastFailed.lastID() + "]"
			}
			switch {
			case hollow != "":
				short = hollow
			case !e.open():
				short = clip(resolved+" "+e.fix, 90)
			}
			t[levelMin] = "- " + clip(line, 90) + " " + ids + ": " + short
		})
		l.items = append(l.items, it)
	}
	for _, t := range m.toolErrs {
		it := &item{sec: secErrors, prio: 5 + recency(t.n), order: 1e5 + float64(t.n), ids: []string{t.id}}
		// The first call after it says whether the agent got past it.
		after := ""
		if t.n < len(m.steps) {
			if next := m.steps[t.n]; !next.failed {
				after = "; the next call [" + next.id() + "] worked"
			}
		}
		// Quoted verbatim at every level: it was delivered in the user role,
		// and must be recognisable as the tool error it is.
		it.texts[levelFull] = "- [" + t.id + "] a tool error in the user role, not a user request: " + quoteHead(t.text, 300) + after
		it.texts[levelShort] = "- [" + t.id + "] tool error, not from the user: " + quoteHead(t.text, harnessQuote) + after
		it.texts[levelMin] = it.texts[levelShort]
		l.items = append(l.items, it)
	}

}

// errorText is an error line as the ERRORS section writes it: without a
// bare "ERROR:" label before the message.
func errorText(line string) string {
	for _, p := range []string{"ERROR: ", "Error: ", "error: "} {
		if rest, ok := strings.CutPrefix(line, p); ok && len(rest) > 10 {
			return rest
		}
	}
	return line
}

// buildNotes: the assistant's decisions and conclusions, newest first when
// short of room.
func (l *layout) buildNotes(recency func(int) float64) {
	m := l.m
	first := true
	// A long reasoning yields many sentences: the three weightiest of one
	// message are quoted (a run of them out of their argument reads as
	// noise; expand_history has the whole).
	if len(m.notes) > 0 {
		m.noteLine(len(m.notes) - 1) // every note's memo made, before items are taken from them
	}
	rank := make([]int, len(m.notes)) // among its message's notes (a run of them), by weight
	for a := 0; a < len(m.notes); {
		b := a + 1
		for b < len(m.notes) && m.notes[b].id == m.notes[a].id {
			b++
		}
		for k := a; k < b && b-a > 3; k++ {
			for j := a; j < b; j++ {
				if wj, wk := m.noteLine(j).weight, m.noteLine(k).weight; j != k && (wj > wk || wj == wk && j > k) {
					rank[k]++
				}
			}
		}
		a = b
	}
	for k, nt := range m.notes {
		if rank[k] >= 3 || m.restatedLater(k, rank) {
			continue
		}
		nl := m.noteLine(k)
		it := nl.noteItem(item{sec: secNotes, prio: 3 + 3*recency(nt.n) + nl.weight, order: float64(nt.n) + float64(k)/1000, ids: nl.ids})
		if first && nl.hypothesis {
			// The first hypothesis frames what the steps after it were
			// testing: it outlasts its age.
			it.prio += 3
			first = false
		}
		if m.concludesOnRecord(nl, nt.n) {
			// "Reservation 59XX6W can be canceled because it has travel
			// insurance": what the agent made of a record it read.
			it.prio += 1.5
		}
		it.texts = m.noteTexts(nl, func(t *[levels]string) {
			t[levelFull] = "- [" + nt.id + "] " + clipNote(nt.text, 260)
			t[levelShort] = "- [" + nt.id + "] " + clipNote(nt.text, 140)
			t[levelMin] = "- [" + nt.id + "] " + clipNote(nt.text, 100)
		})
		l.items = append(l.items, it)
	}
}

// concludesOnRecord reports a note, written at step n, that names a
// record read before it.
func (m *model) concludesOnRecord(nl *noteLines, n int) bool {
	for _, w := range nl.names {
		if r := m.records[w]; r != nil && r.n < n {
			return true
		}
	}
	return false
}

// clipNote clips a decision to max bytes from the clause that decides:
// "Given that RSA-1024 is not factorizable in reasonable time, the
// weakness likely lies within the small exponent" keeps "… the weakness
// likely lies within the small exponent", where a cut at the end keeps
// the preamble. Likewise a last sentence that concludes from the ones
// before ("So `self.options` must be an object …") is quoted from its
// start where a cut at the end would keep the premise and "So…".
func clipNote(t string, max int) string {
	if len(t) <= max {
		return t
	}
	if ss := sentences(t); len(ss) >= 2 && conclusionRe.MatchString(ss[len(ss)-1]) {
		// Only where the cut would leave the conclusion's first words
		// alone ("So…"): a longer part of it says what it concludes.
		if at := strings.LastIndex(t, ss[len(ss)-1]); at >= 0 && len(strings.TrimSuffix(clip(t, max), "…"))-at < 24 {
			return "… " + clip(ss[len(ss)-1], max-len("… "))
		}
	}
	if !preambleRe.MatchString(t) {
		return clip(t, max)
	}
	if loc := decisionRe.FindStringIndex(t); loc != nil && loc[1] > max-10 {
		if i := strings.LastIndex(t[:loc[0]], ", "); i > 0 {
			return "… " + clip(t[i+2:], max-len("… "))
		}
	}
	return clip(t, max)
}

// preambleRe matches a sentence that opens on a clause of its premises
// ("Given that …, ", "Since …, "): what it decides comes after.
var preambleRe = regexp.MustCompile(`^(?:Given|Since|Considering|Now that)\b[^,]{8,}, `)

// restateWindow is how many later notes a note is compared with.
const restateWindow = 40

// restatedLater reports whether a later note of another message, quoted
// too (rank under 3), says what notes[k] says: three quarters of its
// content words or more ("The issue is about datetime axis spacing when
// usetex=True", said again sixteen messages on). The later one is kept:
// it is the agent's current view. Known for good once the window is read.
func (m *model) restatedLater(k int, rank []int) bool {
	nl := m.noteLine(k)
	if nl.restatedKnown {
		return nl.restated
	}
	restated, j := false, max(nl.restatedTo, k+1)
	words := nl.words
	if len(words) >= 4 {
		for ; j < len(m.notes) && j <= k+restateWindow && !restated; j++ {
			if rank[j] < 3 && m.notes[j].id != m.notes[k].id {
				restated = sharedWords(words, m.noteLine(j).words)*4 >= len(words)*3
			}
		}
	}
	nl = m.noteLine(k) // noteLine(j) may have grown the memos
	nl.restatedTo = j
	if restated || k+restateWindow < len(m.notes) || len(words) < 4 {
		nl.restated, nl.restatedKnown = restated, true
	}
	return restated
}

// contentWords are a text's distinct words of three letters or more,
// lower-cased and sorted, without the commonest English ones.
func contentWords(t string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) {
		if len(w) >= 3 && !stopWords[w] {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var stopWords = map[string]bool{"the": true, "and": true, "that": true, "this": true, "with": true, "for": true,
	"are": true, "was": true, "not": true, "but": true, "from": true, "when": true, "about": true, "then": true,
	"its": true, "it's": true, "has": true, "have": true, "will": true, "which": true, "there": true, "what": true}

// sharedWords counts the words two sorted lists share.
func sharedWords(a, b []string) int {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// noteWeight ranks a decision by what it names and how firmly it decides:
// "I should revert lines 987 and 1671" over "I suspect it was that".
func noteWeight(t string) float64 {
	w := 0.0
	hedged := hedgeRe.MatchString(t)
	if strongDecisionRe.MatchString(t) && !hedged {
		w += 1 // "maybe the issue is": a guess, not a finding
	}
	n := len(ident.Identifiers(t)) + strings.Count(t, "`")/2 + len(lineNumbers(t))
	w += math.Min(1.5, 0.5*float64(n))
	if hedged {
		w -= 0.5
	}
	return w
}

// hedgeRe marks a sentence the agent does not commit to ("Or maybe the
// issue is …"): it weighs as a guess. (Not hypothesisRe, which also
// makes a note the span's framing lead.)
var hedgeRe = regexp.MustCompile(`(?i)\b(?:possible|likely|probably|might|suspect|maybe|perhaps|wonder)\b`)

var strongDecisionRe = regexp.MustCompile(`(?i)\b(?:should (?:revert|keep|only|not|use|change)|instead|decided|revert|because|root cause|the (?:fix|cause|bug|issue|problem) (?:is|was))\b`)

// buildTold: what the assistant told the user, newest first when short of
// room (a refusal and its reason, an offer awaiting an answer).
func (l *layout) buildTold(recency func(int) float64, next string) {
	m := l.m
	// The agent's newest refusal ("a full refund is not possible") is a
	// decision the next turns stand on; earlier ones it repeats.
	refused := -1
	for k := len(m.told) - 1; k >= 0; k-- {
		if len(refusalSentences(m.told[k].text)) > 0 {
			refused = k
			break
		}
	}
	for k, t := range m.told {
		if strings.HasPrefix(next, "the user has not yet answered ["+t.id+"]") {
			continue // the next step quotes it
		}
		it := &item{sec: secNotes, prio: 5.5 + 3*recency(t.n), order: float64(t.n) + float64(k)/1000, ids: []string{t.id}}
		text := plainText(t.text)
		if k < m.toldAnswered && t.onlyAsks {
			// "Could you please provide your user ID?", answered: the
			// user's answer, quoted verbatim, says what was asked.
			it.prio = 1
		}
		full, short := clip(text, 420), clip(text, 200)
		if hasList(text) {
			// Options offered are told item by item, not cut in the
			// middle of the first.
			full, short = endingOf(text, 600), endingOf(text, 300)
		}
		it.texts[levelFull] = "- [" + t.id + "] to the user: " + full
		it.texts[levelShort] = "- [" + t.id + "] to the user: " + short
		// At the least, what it ends on: the question or offer the user
		// answers next.
		it.texts[levelMin] = "- [" + t.id + "] to the user: " + endingOf(text, 180)
		if k == refused {
			it.prio += 1
			it.texts[levelMin] = "- [" + t.id + "] to the user: " + m.refusalLine(t, text)
		}
		l.items = append(l.items, it)
	}
}

// refusalSentences returns the sentences of a message to the user that
// refuse or rule something out ("Since your booking was made on May 12th,
// a full refund is not possible"). Not finding something ("I cannot find
// a direct flight") is a result, not a refusal.
func refusalSentences(text string) []string {
	var out []string
	for _, s := range sentences(plainText(text)) {
		if refusalRe.MatchString(s) && !strings.HasSuffix(s, "?") && !notFoundRe.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// refusalLine is the least text of the agent's newest refusal to the
// user: its refusing sentences not already a note of the message, then,
// when it ends on a question or an offer, that ending, which the user's
// next message answers ("However, I can issue a $100 certificate … Which
// would you prefer?").
func (m *model) refusalLine(t note, text string) string {
	var keep []string
	for _, s := range refusalSentences(text) {
		if !slices.ContainsFunc(m.notes, func(nt note) bool { return nt.id == t.id && nt.text == s }) {
			keep = append(keep, s)
		}
	}
	r := strings.Join(keep, " ")
	if pt := plainText(text); strings.HasSuffix(lastSentences(pt, 1), "?") {
		if end := clip(lastSentences(pt, 2), 150); !strings.Contains(r, end) {
			return clip(r, 110) + " … " + end
		}
	}
	if r == "" {
		return endingOf(text, 180)
	}
	return clip(r, 200)
}

var notFoundRe = regexp.MustCompile(`(?i)\b(?:cannot|can ?not|can't|unable to|could not|couldn't) (?:find|locate|see|retrieve|access|get|look up|fetch)\b`)

var refusalRe = regexp.MustCompile(`(?i)\b(?:(?:is|are|was) not (?:possible|eligible|allowed|permitted|available|refundable)|not eligible|cannot|can ?not|can't|unable to|against (?:the|our) policy|(?:does|do) not (?:allow|permit|cover|override|qualify)|doesn't (?:allow|permit|cover|qualify)|no longer (?:possible|available))\b`)

// onlyAsks reports a message that only asks the user for something their
// answer will say ("I can help you with that. Could you please provide
// your user ID?"): every sentence a question for information or a
// courtesy, no ids, no list of options. A question to confirm ("Would you
// like me to refund $1,250?", "Shall I proceed?") is not one: "Yes." says
// nothing of what was agreed.
func onlyAsks(text string) bool {
	if holdsIDs(text) || hasList(text) || strings.ContainsAny(text, "$€£%") {
		return false // the options it offers, the ids and amounts it names
	}
	asks := false
	for _, s := range sentences(text) {
		low := strings.ToLower(s)
		switch {
		case strings.HasSuffix(s, "?") && !confirmRe.MatchString(low):
			asks = true
		case courtesyRe.MatchString(low):
		default:
			return false
		}
	}
	return asks
}

var (
	courtesyRe = regexp.MustCompile(`^(?:i can help(?: you)? with (?:that|this)|i(?:'d| would) be (?:happy|glad) to help|sure|certainly|of course|no problem|thank you|thanks)\b[^.!?]*[.!]?$`)
	confirmRe  = regexp.MustCompile(`^(?:would you like|do you want|shall i|should i)\b|\b(?:proceed|confirm|is that (?:correct|ok|okay|right)|anything else)\b`)
)

// The next step's quote of a question awaiting the user's answer, at each
// level, in bytes.
const nextQuoteFull, nextQuoteShort, nextQuoteMin = 900, 520, 260

var listItemRe = regexp.MustCompile(`^(\s*)(?:[-*•]|\d+[.)])\s+\S`)

// endingOf is what a message ends on, in at most limit bytes: its last two
// sentences, or, when it ends on a list (options offered to the user), the
// sentence that introduces the list, the list told item by item, and what
// follows it.
func endingOf(text string, limit int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	start, end := -1, -1 // the list's first and last lines
	for i, l := range lines {
		m := listItemRe.FindStringSubmatch(l)
		if m != nil && len(m[1]) < 2 {
			if start < 0 {
				start = i
			}
			end = i
			continue
		}
		if start < 0 {
			continue
		}
		if t := strings.TrimSpace(l); t == "" || m != nil || strings.HasPrefix(l, "  ") {
			end = i
			continue
		}
		break
	}
	if start < 0 {
		return clip(lastSentences(text, 2), limit)
	}
	// What introduces the list and what follows it take at most a quarter
	// of the room each: the list is what the answer refers to.
	intro := clip(lastSentences(strings.Join(lines[:start], "\n"), 2), max(limit/4, 60))
	outro := clip(lastSentences(strings.Join(lines[end+1:], "\n"), 1), max(limit/4, 60))
	room := max(limit-len(intro)-len(outro)-2, 40)
	return clip(strings.TrimSpace(intro+" "+tellList(lines[start:end+1], room)+" "+outro), limit)
}

// hasList reports whether a text holds a markdown list.
func hasList(text string) bool {
	for l := range strings.SplitSeq(text, "\n") {
		if m := listItemRe.FindStringSubmatch(l); m != nil && len(m[1]) < 2 {
			return true
		}
	}
	return false
}

// listNode is an item of a markdown list and the items nested under it.
type listNode struct {
	text   string
	indent int
	kids   []*listNode
}

// parseList reads a markdown list into its items; a line that is not an
// item continues the item before it.
func parseList(lines []string) []*listNode {
	root := &listNode{indent: -1}
	stack := []*listNode{root}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		m := listItemRe.FindStringSubmatch(l)
		if m == nil {
			if last := stack[len(stack)-1]; last != root {
				last.text += " " + t
			}
			continue
		}
		n := &listNode{text: t, indent: len(m[1])}
		for len(stack) > 1 && stack[len(stack)-1].indent >= n.indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 1 || strings.IndexAny(t[:1], "-*•") == 0 || strings.HasPrefix(t, "•") {
			// An item speaks without its bullet; a top item keeps its
			// number ("2. ...") for the reader to refer to.
			n.text = strings.TrimSpace(strings.TrimLeft(t, "-*• "))
		}
		parent := stack[len(stack)-1]
		parent.kids = append(parent.kids, n)
		stack = append(stack, n)
	}
	return root.kids
}

// listKeyRe is a short "Key: value" sub-item ("Departure: 03:00 EST").
var listKeyRe = regexp.MustCompile(`^([A-Za-z][\w ()/'-]{0,30}?):\s+(\S.*)$`)

// tellList tells a list on one line, in at most room bytes: each item with
// its sub-items ("1. Flight HAT052: Departure 03:00 EST, Price $125; 2.
// Flight HAT102: Departure 21:00 EST, Price $117"). When that takes more
// than half the room, sub-items that repeat the keys of an earlier item's, in the same
// order, give their values alone ("2. Flight HAT102: 21:00 EST, $117"):
// the first item shows what they are. Whole items are kept, oldest first;
// those left out for room are counted.
func tellList(lines []string, room int) string {
	items := parseList(lines)
	keyed, n, cut := tellItems(items, room, tellKeyed)
	if n == len(items) && len(keyed) <= room/2 {
		return keyed
	}
	best := keyed
	if bare, m, c := tellItems(items, room, tellBare); m >= n {
		best, n, cut = bare, m, c
	}
	if cut || 2*n <= len(items) {
		// Half the items or fewer fit with their details, or the first
		// alone is cut: their labels do ("1. Flight HAT052; 2. Flight
		// HAT102"). Of two options, the one left out is as likely the
		// one the answer picks.
		if labels, m, _ := tellItems(items, room, tellLabels); m > n || m == n && cut {
			return labels
		}
	}
	return best
}

// How tellItems tells the sub-items of an item.
const (
	tellKeyed  = iota // "Key value" each
	tellBare          // values alone where an earlier item showed the same keys
	tellLabels        // not at all: the item's own text alone
)

// tellItems tells as many whole items as room holds, how many, and
// whether the first had to be cut.
func tellItems(items []*listNode, room int, mode int) (string, int, bool) {
	seen := map[string]bool{}
	var tell func(n *listNode) string
	tell = func(n *listNode) string {
		label := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(n.text), ":"))
		if len(n.kids) == 0 {
			return label
		}
		if mode == tellLabels {
			// The codes its sub-items name (flights, ids) tell one item
			// from another where its label alone does not ("Option 1").
			var codes []string
			var walk func(*listNode)
			walk = func(k *listNode) {
				for _, w := range strings.FieldsFunc(k.text, func(r rune) bool { return r >= 0x80 || !isWordByte(byte(r)) }) {
					if isCode(w) && !strings.Contains(label, w) && !slices.Contains(codes, w) {
						codes = append(codes, w)
					}
				}
				for _, c := range k.kids {
					walk(c)
				}
			}
			for _, k := range n.kids {
				walk(k)
			}
			if len(codes) > 0 {
				return label + " (" + strings.Join(codes, ", ") + ")"
			}
			return label
		}
		keys := make([]string, len(n.kids))
		keyed := 0
		for i, k := range n.kids {
			if m := listKeyRe.FindStringSubmatch(k.text); m != nil && len(k.kids) == 0 {
				keys[i] = m[1]
				keyed++
			}
		}
		sig := strings.Join(keys, "\x00")
		bare := mode == tellBare && keyed >= 2 && seen[sig]
		if keyed >= 2 {
			seen[sig] = true
		}
		parts := make([]string, len(n.kids))
		sep := ", "
		for i, k := range n.kids {
			if len(k.kids) > 0 {
				sep = "; "
			}
			switch m := listKeyRe.FindStringSubmatch(k.text); {
			case keys[i] != "" && bare:
				parts[i] = m[2]
			case keys[i] != "":
				parts[i] = m[1] + " " + m[2]
			default:
				parts[i] = tell(k)
			}
		}
		if label == "" {
			return strings.Join(parts, sep)
		}
		return label + ": " + strings.Join(parts, sep)
	}
	sep := "; "
	for _, it := range items {
		for _, k := range it.kids {
			if len(k.kids) > 0 && mode != tellLabels {
				sep = " | " // items of items of items: a stronger break
			}
		}
	}
	told := make([]string, 0, len(items))
	used, cut := 0, false
	for i, it := range items {
		t := tell(it)
		more := ""
		if i < len(items)-1 {
			more = " (+" + strconv.Itoa(len(items)-1-i) + " more)"
		}
		if used+len(sep)+len(t)+len(more) > room && i > 0 {
			told[len(told)-1] += " (+" + strconv.Itoa(len(items)-i) + " more)"
			break
		}
		if i == 0 && len(t) > room-len(more) {
			t, cut = clip(t, room-len(more)), true
		}
		told = append(told, t)
		used += len(sep) + len(t)
	}
	return strings.Join(told, sep), len(told), cut
}

// applyFocus raises the priority of items that mention the focus words.
func (l *layout) applyFocus() {
	if len(l.focus) == 0 {
		return
	}
	for _, it := range l.items {
		low := strings.ToLower(it.texts[levelFull])
		for _, w := range l.focus {
			if len(w) >= 3 && strings.Contains(low, strings.ToLower(w)) {
				it.prio += 5
				break
			}
		}
	}
}

// rangeOf renders message ids as "m0010–m0018" or a short list.
func rangeOf(ids []string) string {
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return ids[0]
	case 2, 3:
		return strings.Join(ids, ", ")
	}
	return ids[0] + "–" + ids[len(ids)-1]
}

// ---- allocation ----

// debugFit, set by BRIEF_DEBUG in the environment, prints the fit's
// attempts and every item's choice to standard error; BRIEF_DEBUG=texts
// prints each item's texts too. For the writer's developers, at a prompt.
var debugFit = os.Getenv("BRIEF_DEBUG") != ""

// margin keeps a few tokens free for the message framing around the text.
const margin = 6

// fit chooses the level of every item within the budget, then fills the
// index and the left-out line; it returns the text and its exact count.
// Item costs are estimated; a scale on the estimates is searched for (a
// proportional guess, then bisection) so that the exactly counted text
// comes as close to the budget as it can without going over.
func (l *layout) fit() (string, int) {
	bestN, bestScale, lastScale := -1, 0.0, 0.0
	fits, over := math.Inf(1), 0.0 // the least scale known to fit, the greatest known to be over
	s := 1.0
	prevFit := -1
	for attempt := 0; attempt < 7; attempt++ {
		l.choose(s)
		lastScale = s
		n, size := l.measure(l.extras()) // size is the wrapped text's, estimated on the first attempt
		if n <= l.budget && prevFit >= 0 && n-prevFit < l.budget/50 {
			// More room no longer buys more text: everything is in.
			if n > bestN {
				bestN, bestScale = n, s
			}
			break
		}
		if n <= l.budget {
			prevFit = n
		}
		if debugFit {
			println("fit attempt", attempt, "scale", s, "n", n, "budget", l.budget)
		}
		if n <= l.budget {
			if n > bestN {
				bestN, bestScale = n, s
			}
			fits = math.Min(fits, s)
		} else {
			over = math.Max(over, s)
		}
		if bestN >= l.budget*95/100 {
			break
		}
		// First correct the estimates by what they missed on this text;
		// then bisect between a scale known to fit and one known not to.
		next := s * float64(n) / float64(l.budget)
		switch {
		case attempt == 0:
			next = float64(n) / estimateLen(size)
			if n > l.budget {
				next = math.Max(next, s*1.01)
			}
		case over > 0 && !math.IsInf(fits, 1):
			next = (over + fits) / 2
		case n > l.budget:
			next += 0.02
		}
		if math.Abs(next-s) < 0.004 {
			break
		}
		s = next
	}
	if bestN < 0 {
		// The mandatory items alone are over: the budget grows to them.
		l.choose(math.Inf(1))
		n, _ := l.measure(l.extras())
		return l.render(l.extras()), n
	}
	if lastScale != bestScale {
		// Leave the layout as the best text chose it, for the record.
		l.choose(bestScale)
	}
	if debugFit {
		// What was chosen: section, priority, level (-1 left out), the
		// texts' sizes per level, and the least one's start.
		for _, it := range l.byPrio {
			fmt.Fprintf(os.Stderr, "item %d %.2f %d %d/%d/%d %s %s\n", it.sec, it.prio, it.level, len(it.texts[0]), len(it.texts[1]), len(it.texts[2]), strings.Join(it.ids, ","), clip(it.texts[levelMin], 100))
			if os.Getenv("BRIEF_DEBUG") == "texts" {
				for lv, t := range it.texts {
					fmt.Fprintf(os.Stderr, "  level %d: %s\n", lv, t)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "budget %d, text %d tokens\n", l.budget, bestN)
	}
	return l.render(l.extras()), bestN
}

// extras are the index and left-out line of the last choice.
func (l *layout) extras() *extras {
	return &extras{index: l.lastIndex, omitted: l.lastOmitted}
}

// choose picks levels with estimated costs multiplied by scale, then the
// index and the left-out line (lastIndex, lastOmitted).
func (l *layout) choose(scale float64) {
	cost := func(s string) float64 {
		if s == "" {
			return 0
		}
		return estimate(s) * scale
	}
	room := float64(l.budget-margin) - cost(briefd.WrapBriefing(""))
	used := 0.0
	for _, it := range l.items {
		it.level = -1
	}
	l.carried = nil
	used += cost(l.head)
	// Mandatory items: the user's messages whole unless over their cap.
	var users, upgrade []*item
	for _, it := range l.items {
		if !it.must {
			continue
		}
		it.level = it.mandatoryLevel()
		if it.sec == secUser {
			users = append(users, it)
		}
		if it.level != levelFull {
			upgrade = append(upgrade, it)
		}
		used += cost(it.text()) + 1
	}
	// Shorten the oldest user messages first while over the room.
	for _, it := range users {
		if used <= room*0.85 {
			break
		}
		if it.texts[levelShort] != it.texts[levelFull] {
			used -= cost(it.texts[levelFull]) - cost(it.texts[levelShort])
			it.level = levelShort
		}
	}
	if l.byPrio == nil {
		// The same order at every scale: gathered and sorted once.
		opt := make([]*item, 0, len(l.items))
		for _, it := range l.items {
			if !it.must && it.sec != secIndex && it.sec != secOmitted {
				opt = append(opt, it)
			}
		}
		sortByPrio(opt)
		l.byPrio = opt
	}
	opt := l.byPrio
	reserve := math.Min(l.indexShare*float64(l.budget), l.indexNeed*scale)
	// Pass 1: every item at its least detail, by priority. shown is the
	// identifiers of the items taken, read once a line needs it.
	var shown map[string]bool
	took := func(it *item) {
		if shown != nil {
			for _, id := range it.textIdents() {
				shown[id] = true
			}
		}
	}
	for _, it := range opt {
		if it.prio < fillerPrio {
			continue // after every richer detail (pass 3)
		}
		var ok bool
		if used, ok = it.least(used, room-reserve, cost); ok {
			took(it)
			continue
		}
		// A line that carries names the index would list bare may take
		// their room in the index's reserve: the names then come with
		// what was found of them (a search's options and their prices).
		lv := it.smallest()
		if it.prio < 8 || used+cost(it.texts[lv])+1 > room {
			continue
		}
		if shown == nil {
			shown = map[string]bool{}
			for _, o := range l.items {
				if o.level >= 0 {
					took(o)
				}
			}
		}
		if freed := math.Min(reserve, l.indexRoomOf(it, lv, scale, shown)); freed > 0 {
			if used, ok = it.least(used, room-reserve+freed, cost); ok {
				reserve -= freed
				took(it)
			}
		}
	}
	// Objects in play (files changed, records) may take the index's
	// reserve: the state of an object beats a bare identifier.
	for _, it := range opt {
		if it.level >= 0 || it.prio < 8 {
			continue
		}
		used, _ = it.least(used, room, cost)
	}
	// A mandatory item's richer detail (the next step's whole quote of the
	// options offered) comes after every item's least detail (a profile's
	// payment methods) and before any other item's richer detail.
	for _, it := range upgrade {
		for lv := levelFull; lv < it.level; lv++ {
			if extra := cost(it.texts[lv]) - cost(it.text()); used+extra <= room-reserve {
				used += extra
				it.level = lv
				break
			}
		}
	}
	// Pass 2: richer detail, by priority.
	for _, it := range opt {
		used = it.richer(used, room-reserve, cost)
	}
	// Pass 3: lines that tell little (a listing, a question the user
	// answered) take what room is left, at their least detail, then
	// richer.
	for _, it := range opt {
		if it.prio >= fillerPrio {
			continue
		}
		used, _ = it.least(used, room-reserve, cost)
	}
	for _, it := range opt {
		if it.prio < fillerPrio {
			used = it.richer(used, room-reserve, cost)
		}
	}
	l.finish(room-used, scale)
}

// least shows an item at its least detail when that fits within room,
// given used, and returns what is used then and whether it was shown.
func (it *item) least(used, room float64, cost func(string) float64) (float64, bool) {
	lv := it.smallest()
	c := cost(it.texts[lv]) + 1
	if used+c > room {
		return used, false
	}
	it.level = lv
	return used + c, true
}

// richer raises an item shown to the richest level that fits within
// room, given used, and returns what is used then.
func (it *item) richer(used, room float64, cost func(string) float64) float64 {
	if it.level < 0 {
		return used
	}
	for lv := levelFull; lv < it.level; lv++ {
		if it.texts[lv] == "" {
			continue
		}
		if extra := cost(it.texts[lv]) - cost(it.texts[it.level]); used+extra <= room {
			it.level = lv
			return used + extra
		}
	}
	return used
}

// fillerPrio is the priority under which a line waits for every richer
// detail of the others.
const fillerPrio = 2.5

// indexRoomOf estimates the index's room for the names an item's text at
// level lv carries and no line shown does, which the index lists when the
// item is left out.
func (l *layout) indexRoomOf(it *item, lv int, scale float64, shown map[string]bool) float64 {
	if l.baseScore == nil {
		l.scoreIdents()
	}
	freed := 0.0
	for _, id := range it.identsOf(lv) {
		if _, ok := l.score(id); ok && !shown[id] && !ident.IsNumeric(id) {
			freed += estimate(id+", ") * scale
		}
	}
	return freed
}

// finish drops the headers of tables without a row shown, then writes the
// index in the room left (free, in estimated tokens) and the left-out line
// (lastIndex, lastOmitted).
func (l *layout) finish(free, scale float64) {
	if l.grouped == nil {
		l.grouped = []*item{} // the table rows and headers, found once
		for _, it := range l.items {
			if it.group != "" || it.header {
				l.grouped = append(l.grouped, it)
			}
		}
	}
	shownRows := map[string]bool{}
	for _, it := range l.grouped {
		if it.group != "" && !it.header && it.level >= 0 {
			shownRows[it.group] = true
		}
	}
	for _, it := range l.grouped {
		if it.header && !shownRows[it.group] {
			it.level = -1
		}
	}
	idx := l.index(math.Min(free-estimate("LEFT OUT FOR SIZE: ")*scale*6, l.indexShare*float64(l.budget)), scale)
	omitted := l.omittedText()
	l.lastIndex, l.lastOmitted = idx, omitted
}

// sortByPrio sorts items by priority, highest first, ties in the order
// given: a stable sort, done as an unstable one on the priority and the
// position (faster on the thousands of items of a long span). The
// priority is copied beside the position so that a comparison does not
// load two items.
func sortByPrio(items []*item) {
	// Sixteen bytes a rank, compared without cmp.Compare's NaN checks (a
	// priority is never NaN): a long span sorts some 1,500 items per Write.
	type ranked struct {
		prio float64
		pos  int
	}
	r := make([]ranked, len(items))
	for i, it := range items {
		r[i] = ranked{it.prio, i}
	}
	slices.SortFunc(r, func(a, b ranked) int {
		switch {
		case a.prio > b.prio:
			return -1
		case a.prio < b.prio:
			return 1
		}
		return a.pos - b.pos
	})
	sorted := make([]*item, len(items))
	for i := range r {
		sorted[i] = items[r[i].pos]
	}
	copy(items, sorted)
}

type extras struct {
	index   string
	omitted string
}

// printOrder returns the items in the order they print: by section, then
// by order within it, as listed when orders tie. It is sorted once; the
// items do not change after build.
func (l *layout) printOrder() []*item {
	if len(l.sorted) != len(l.items) {
		l.sorted = slices.Clone(l.items)
		sort.SliceStable(l.sorted, func(i, j int) bool {
			a, b := l.sorted[i], l.sorted[j]
			return a.sec < b.sec || a.sec == b.sec && a.order < b.order
		})
	}
	return l.sorted
}

// plainName reports a name from code with no digit, path or dot (want_all,
// attr_docs): listed bare it tells a reader nothing, and the lines that
// use it are where it matters.
func plainName(id string) bool {
	if noiseRe.MatchString(id) {
		return true
	}
	return !strings.ContainsAny(id, "0123456789/.:") && !strings.HasSuffix(id, "Error") && !strings.HasSuffix(id, "Exception") && !isCode(id)
}

// noiseRe matches tokens that look like identifiers and name nothing a
// reader could act on: CSS lengths and durations (1280px, 0.3s), a
// decompiler's automatic names (uVar5, local_1c, LAB_004018c7), sed
// scripts (/DEBUG/d, s/a/b/g), build artifacts (__pycache__/x.pyc), the
// rest of an escaped quote (\x27name read as x27name).
var noiseRe = regexp.MustCompile(`^(?:.*__pycache__.*|.*\.pyc|\d+(?:,\d+)?[sacid]/.*|s/[^/]+/.*|x(?:22|27|5[cC])[A-Za-z_]\w*|\d+(?:\.\d+)?(?:px|rem|em|ms|s|vh|vw|pt|%)|[a-z]{1,3}Var\d+|local_[0-9a-f]+|undefined\d*|(?:LAB|DAT)_[0-9a-f]+|/[^/]*/[dpg]|[^/]*/[gdp]|(?i:utf-?(?:8|16|32)|latin-?1|iso-?8859-\d+|ascii|cp\d{3,4}))$`)

// languageWords are literals and built-in names of common languages.
var languageWords = map[string]bool{"None": true, "True": true, "False": true, "null": true, "nil": true, "NULL": true,
	"true": true, "false": true, "undefined": true, "self": true, "this": true, "Exception": true, "Error": true,
	"Object": true, "String": true, "Bool": true, "Int": true, "Any": true, "List": true, "Dict": true, "Optional": true}

// indexFloor is the least score a name of the span needs to be listed:
// a file name seen once in a listing (README.md) scores under it; a path,
// an exception, a code, or a name the agent used scores over it. The
// names of lines left out are listed whatever their score.
const indexFloor = 4

// indexNote says what the index is for: names to search the compacted
// messages by, not facts. ("ALSO SEEN (names in the compacted messages;
// …)" read to graders as things that happened: a ValueError listed there
// was taken for an error the run had raised. A shorter note, "(names, not
// events; …)", took chained recall from 0.859 to 0.810, by the fit's
// choices, not by what it lists.)
const indexNote = " (names in the compacted messages, not events; expand_history finds them)"

// legacyIndexLabels are the index's labels in earlier briefings, which a
// fold still reads.
var legacyIndexLabels = []string{"ALSO SEEN (names in the compacted messages; expand_history finds them)", "ALSO SEEN"}

// indexNames reads the index line back as its names.
func indexNames(line string) []string {
	var out []string
	for _, id := range strings.Split(line, ", ") {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// index lists identifiers the text does not carry, best first, within
// room tokens.
func (l *layout) index(room, scale float64) string {
	l.lastIndexNames = nil // a choice without an index lists none
	if room <= 8 {
		return ""
	}
	if l.baseScore == nil {
		l.scoreIdents()
	}
	// Identifiers the text carries are not listed again: the chosen
	// items' identifiers (read once per item and level) are looked up in a
	// set, and a candidate about to be listed is checked as a substring of
	// them (a file name inside a path it carries, say).
	carried := map[string]bool{}
	var carriedIDs []string
	var carriedB strings.Builder
	for _, it := range l.items {
		if it.level < 0 {
			continue
		}
		for _, id := range it.textIdents() {
			if !carried[id] {
				carried[id] = true
				carriedIDs = append(carriedIDs, id)
				carriedB.WriteString(id)
				carriedB.WriteByte('\n')
			}
		}
	}
	carriedText := carriedB.String()
	if l.grams == nil {
		l.grams = new(gramSet)
	}
	l.grams.reset(carriedText)
	l.carried = carriedIDs    // the coverage counts them
	seen := map[string]bool{} // the candidates tried
	// Identifiers of lines left out rank higher: they would be lost.
	bonus := map[string]bool{}
	var lost []identScore
	for _, it := range l.items {
		if it.level == levelFull || len(it.idents) == 0 {
			continue
		}
		// A line left out, or shown shorter, loses identifiers its full
		// text had.
		var shown map[string]bool
		if it.level >= 0 {
			shown = map[string]bool{}
			for _, id := range it.textIdents() {
				shown[id] = true
			}
		}
		for _, id := range it.idents {
			if shown[id] || bonus[id] || ident.IsNumeric(id) || isMessageID(id) || l.msgIDs[id] {
				continue
			}
			bonus[id] = true
			sc, _ := l.score(id)
			lost = append(lost, identScore{id, sc + identKindScore(id)*boolF(sc == 0) + 3})
		}
	}
	sort.SliceStable(lost, func(i, j int) bool { return lost[i].score > lost[j].score })
	var out []string
	used := 0.0
	misses := 0
	try := func(c identScore) {
		// A bare date says nothing without the record it belongs to; a
		// W3C DTD or namespace is markup boilerplate; a language's literal
		// (None, True) names nothing of the task.
		// An installed library's file (a traceback frame in site-packages)
		// is not the work's.
		if carried[c.id] || seen[c.id] || l.m.headIDs[c.id] || looksLikeDate(c.id) || strings.Contains(c.id, "www.w3.org/") || languageWords[c.id] || l.m.plainName(c.id) ||
			strings.Contains(c.id, "/") && libraryFrame(c.id) {
			return
		}
		seen[c.id] = true
		cost := estimate(c.id+", ") * scale
		if used+cost > room {
			misses++
			return
		}
		if l.grams.mayContain(c.id) && strings.Contains(carriedText, c.id) {
			return
		}
		used += cost
		out = append(out, c.id)
	}
	// Merge the two lists by score.
	base := l.ranked
	for len(base) > 0 || len(lost) > 0 {
		switch {
		case len(lost) == 0 || len(base) > 0 && !bonus[base[0].id] && base[0].score >= lost[0].score:
			if !bonus[base[0].id] && base[0].score >= indexFloor {
				try(base[0])
			}
			base = base[1:]
		case len(base) > 0 && bonus[base[0].id]:
			base = base[1:]
		default:
			try(lost[0])
			lost = lost[1:]
		}
		if room-used < 3*scale || misses > 64 {
			break // full, or only long identifiers left
		}
	}
	// The record lists them as the text does: a later briefing folds an
	// earlier one from either, and breaks ties by their order.
	l.lastIndexNames = groupIndex(out)
	return strings.Join(l.lastIndexNames, ", ")
}

// The index's kinds, in the order it lists them: forty names read as
// noise, but a run of files, then the other names, then the exceptions,
// then the links lets the agent find the one it looks for. (Labelled
// groups were tried: their labels took the room of a name or two in the
// chained cycles, first_recall 0.942 to 0.926.)
const (
	indexFiles = iota
	indexOther
	indexErrors
	indexLinks
	numIndexKinds
)

func indexKindOf(id string) int {
	switch {
	case strings.Contains(id, "://"):
		return indexLinks
	case errorName(id):
		return indexErrors
	case strings.Contains(id, "/"):
		return indexFiles
	}
	// A dotted module (django.conf, django.db) is a name, though its last
	// part reads as an extension.
	if i := strings.LastIndexByte(id, '.'); i > 0 && fileExtensions[id[i+1:]] {
		return indexFiles
	}
	return indexOther
}

// errorName: an exception's or a warning's class name (KeyError,
// django.core.exceptions.ValidationError), a name of code otherwise.
func errorName(id string) bool {
	// The last part names the class: KeyError, not handleError, log.Error
	// or os.Exit.
	name := id[strings.LastIndexByte(id, '.')+1:]
	for _, suf := range [...]string{"Error", "Exception", "Warning", "Exit", "Interrupt"} {
		if strings.HasSuffix(name, suf) {
			return len(name) > len(suf) && name[0] >= 'A' && name[0] <= 'Z' && !strings.ContainsAny(id, "/()[] ")
		}
	}
	return false
}

// fileExtensions are the endings of the files an agent works on; a
// dotted name with another ending is a module or an attribute.
var fileExtensions = map[string]bool{
	"py": true, "pyi": true, "js": true, "jsx": true, "ts": true, "tsx": true, "go": true, "rs": true,
	"java": true, "rb": true, "php": true, "c": true, "h": true, "cc": true, "cpp": true, "hpp": true,
	"cs": true, "swift": true, "kt": true, "json": true, "yaml": true, "yml": true, "toml": true,
	"cfg": true, "ini": true, "txt": true, "md": true, "rst": true, "html": true, "css": true,
	"scss": true, "sh": true, "sql": true, "xml": true, "csv": true, "po": true, "lock": true,
	"ipynb": true, // not "log": np.log, math.log
}

// groupIndex lists the index's names by kind, best first within each
// kind.
func groupIndex(ids []string) []string {
	var byKind [numIndexKinds][]string
	for _, id := range ids {
		k := indexKindOf(id)
		byKind[k] = append(byKind[k], id)
	}
	return slices.Concat(byKind[:]...)
}

// gramSet marks the three-byte sequences of a text, hashed into bits: a
// string with a sequence not marked is not a substring of the text, which
// saves a search of it for most index candidates.
type gramSet [1 << 12]uint64

func gramBit(s string) uint32 {
	return (uint32(s[0])<<16 | uint32(s[1])<<8 | uint32(s[2])) * 2654435761 >> 14 // 18 bits
}

// reset marks the sequences of t alone.
func (g *gramSet) reset(t string) {
	clear(g[:])
	for i := 0; i+3 <= len(t); i++ {
		b := gramBit(t[i:])
		g[b>>6] |= 1 << (b & 63)
	}
}

// mayContain reports false when s is not a substring of the text.
func (g *gramSet) mayContain(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if b := gramBit(s[i:]); g[b>>6]&(1<<(b&63)) == 0 {
			return false
		}
	}
	return true
}

// identScore is an index candidate.
type identScore struct {
	id    string
	score float64
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// scoreIdents ranks the index candidates once per briefing. Scores add up
// what an identifier is (a path, an exception, a code name things the
// agent quotes again) and where it comes from: carried by an earlier
// briefing (it survived before), or used in the span (by the agent, in
// many messages, lately).
func (l *layout) scoreIdents() {
	m := l.m
	l.baseScore = map[string]float64{}
	m.scoring++ // the scores of the span's identifiers are kept with their uses
	l.msgIDs = map[string]bool{}
	for _, it := range l.items {
		for _, id := range it.ids {
			l.msgIDs[id] = true // a message id is not an identifier of the work
		}
	}
	var order []string
	add := func(id string, u *identUse, s float64) {
		if l.msgIDs[id] || isMessageID(id) {
			return
		}
		if u == nil { // named by the earlier briefing alone
			v, ok := l.baseScore[id]
			if !ok {
				order = append(order, id)
				v = identKindScore(id)
			}
			l.baseScore[id] = v + s
			return
		}
		if u.scored != m.scoring {
			order = append(order, id)
			u.score, u.scored = u.kindScore(id), m.scoring
		}
		u.score += s
	}
	if m.prior != nil {
		for _, id := range m.prior.index {
			add(id, m.ids[id], 4)
		}
	}
	n := float64(max(1, len(m.steps)))
	for i, id := range m.idOrder {
		u := m.idUses[i]
		if ident.IsNumeric(id) && !(u.spoken && u.msgs >= 2) {
			continue
		}
		s := 0.0
		if u.spoken {
			s += 1.5
		}
		s += math.Min(2, math.Log2(float64(u.msgs)))
		s += 1.5 * float64(u.last) / n
		add(id, u, s)
	}
	// Highest first, ties in order: a stable sort, done as an unstable one
	// on the score and the position (there are thousands).
	type ranked struct {
		identScore
		pos int
	}
	r := make([]ranked, len(order))
	for i, id := range order {
		sc, _ := l.score(id)
		r[i] = ranked{identScore{id, sc}, i}
	}
	slices.SortFunc(r, func(a, b ranked) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	l.ranked = make([]identScore, len(r))
	for i := range r {
		l.ranked[i] = r[i].identScore
	}
}

// score returns an index candidate's score, and whether it is one.
func (l *layout) score(id string) (float64, bool) {
	if u := l.m.ids[id]; u != nil {
		if u.scored != l.m.scoring {
			return 0, false
		}
		return u.score, true
	}
	s, ok := l.baseScore[id]
	return s, ok
}

// identKindScore ranks an identifier by what it names.
func identKindScore(id string) float64 {
	s := 1.0
	if ident.IsNumeric(id) {
		return s
	}
	switch {
	case strings.HasPrefix(id, "http"):
		s += 3
	case strings.Contains(id, "/") && ident.IsPath(baseName(id)):
		s += 3.5 // a file path
	case strings.HasSuffix(id, "Error") || strings.HasSuffix(id, "Exception"):
		s += 4.5
	case isCode(id):
		s += 3.5
	case strings.ContainsAny(id, "0123456789"):
		s += 2 // an id
	default:
		s += 1 // a name from the code (`xa.dtype`): the text around it says more
	}
	if len(id) > 60 {
		s--
	}
	return s
}

// mentionedIDs returns the message ids a text names, in id order.
func mentionedIDs(t string) []string {
	ids := messageIDsRe.FindAllString(t, -1)
	slices.Sort(ids)
	return slices.Compact(ids)
}

var messageIDsRe = regexp.MustCompile(`\bm\d{3,}\b`)

// isMessageID reports a message id as briefings cite it (m0012).
func isMessageID(s string) bool {
	if len(s) < 4 || s[0] != 'm' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isCode reports an upper-case code mixing letters and digits (HAT247,
// 8C8K4E, E501): a record or an error the agent may quote again.
func isCode(id string) bool {
	letters, digits := 0, 0
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'A' && c <= 'Z':
			letters++
		case c >= '0' && c <= '9':
			digits++
		default:
			return false
		}
	}
	return letters > 0 && digits > 0
}

// stepsLeftText counts the steps left out: "7 lookups", or "9 steps (2
// search, 7 lookup)" when they are of several kinds.
func stepsLeftText(n int, kinds string) string {
	count, k, ok := strings.Cut(kinds, " ")
	if !ok || strings.Contains(k, ",") || count != strconv.Itoa(n) {
		return plural(n, "step") + " (" + kinds + ")"
	}
	if noun, ok := kindNouns[k]; ok {
		if n == 1 {
			return "1 " + noun[0]
		}
		return count + " " + noun[1]
	}
	return plural(n, "step") + " (" + kinds + ")"
}

// kindNouns name steps of a kind, one and many.
var kindNouns = map[string][2]string{"lookup": {"lookup", "lookups"}, "search": {"search", "searches"},
	"view": {"file view", "file views"}, "list": {"listing", "listings"}, "run": {"run", "runs"},
	"test": {"test run", "test runs"}, "http": {"HTTP request", "HTTP requests"}, "think": {"thought", "thoughts"},
	"edit": {"edit", "edits"}, "write": {"file write", "file writes"}, "install": {"install", "installs"}}

// leftOutSection says what a section's lines left out are, before the
// messages they came from.
func leftOutSection(sec section) string {
	switch sec {
	case secNotes:
		return "the agent's remarks in "
	case secRecords:
		return "records read in "
	case secFiles:
		return "files touched in "
	case secErrors:
		return "errors in "
	}
	return strings.ToLower(strings.Fields(sectionNames[sec])[0]) + " lines from "
}

// keyedLeftOut names a line about an object left out: its key and the
// message it cites first ("related.py [m0029]"), the key alone when it
// cites none (a directory only moved).
func keyedLeftOut(it *item) string {
	if len(it.ids) == 0 {
		return it.key
	}
	return it.key + " [" + it.ids[0] + "]"
}

// omittedText names the steps and earlier items left out, by message ids.
func (l *layout) omittedText() string {
	// The steps left out are counted by position and listed in order,
	// the count kept from the last choice (countLeftOut).
	lo := l.countLeftOut()
	if lo.steps == 0 && !lo.other && lo.keys == 0 {
		if p := l.m.prior; p != nil && len(mentionedIDs(p.leftOut)) > 0 {
			return "an earlier briefing's lines from " + rangeOf(mentionedIDs(p.leftOut)) + "."
		}
		return ""
	}
	var parts []string
	if lo.steps > 0 {
		kinds, runs := lo.stepsText(l.m)
		parts = append(parts, stepsLeftText(lo.steps, kinds)+" at "+runs)
	}
	if lo.keys > 0 {
		keys := make([]string, len(lo.keyed))
		for i, it := range lo.keyed {
			keys[i] = keyedLeftOut(it)
		}
		parts = append(parts, "the lines of "+strings.Join(keys, ", ")+moreCount(lo.keys, keyedShown))
	}
	for sec := secTask; sec < numSections; sec++ {
		if ids := lo.cited[sec]; ids.n > 0 {
			parts = append(parts, leftOutSection(sec)+rangeOf(ids.ids()))
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
