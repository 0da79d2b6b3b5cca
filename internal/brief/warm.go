package brief

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
)

// Warm briefings: a conversation's span grows by a turn between snapshots,
// and its model is a left fold over the span's messages (model.read), so
// the model of the span read last is kept and the new messages read into
// it. What is derived from the whole model (the intentions carried out,
// the state, the items and their fit to the budget) is derived again on
// every call, from the model, so a warm Write writes the bytes a fresh one
// does.

// Warm is what Write keeps of one conversation between calls: the model of
// the span it read last, before the passes over the whole of it. It is
// not safe for concurrent use: the caller keeps one per conversation, hands
// it to one Write at a time, and bounds the memory of those it keeps by
// Bytes. The zero value is an empty Warm.
type Warm struct {
	m     *model
	n     int // span messages read into m
	seed  maphash.Seed
	key   uint64 // the head and the previous briefing m was read with
	first string // ids of the first and last messages read
	last  string
	// calls holds the ids of the calls read: a later result with one of
	// them would be that call's result (build takes the last), so the
	// span is read afresh.
	calls map[string]bool
	// marked counts the intentions whose window of steps has closed:
	// whether a call carried them out is final.
	marked int
	bytes  int
	// pieces keeps the sections of the briefing written last, with their
	// counts (see pieces.go), keyed by the lines they print.
	pieces *pieceMemo
}

// Len returns the number of span messages w holds the model of.
func (w *Warm) Len() int {
	if w == nil {
		return 0
	}
	return w.n
}

// Bytes approximates the memory w holds beside the messages themselves
// (its reading of tool outputs is shared with the Cache while cached),
// with what the layout keeps in the model between calls: its indexes of
// the steps and identifiers, and the memoized texts of lines.
func (w *Warm) Bytes() int {
	if w == nil {
		return 0
	}
	n := w.bytes + w.pieces.Bytes()
	if w.m != nil {
		n += w.m.layoutBytes()
	}
	return n
}

// layoutBytes approximates what the layout keeps in the model between
// calls: the memoized texts and JSON, and the indexes (a few words per
// step, identifier or note, a note's kept item, and a set entry per
// identifier of the head).
func (m *model) layoutBytes() int {
	return m.memoBytes + m.entriesBytes + m.lastEntriesBytes +
		48*(m.byIDN+m.outcomesN+m.missedN) + 16*len(m.named) + 8*len(m.idUses) +
		480*len(m.notesAt) + 8*len(m.grouped) + 48*len(m.groups) + 48*len(m.headIDs)
}

// Reset empties w.
func (w *Warm) Reset() {
	if w != nil {
		*w = Warm{seed: w.seed}
	}
}

// pieceMemo returns w's sections of the briefing written last, or, for a
// nil w, new ones that last one Write.
func (w *Warm) pieceMemo() *pieceMemo {
	if w == nil {
		return new(pieceMemo)
	}
	if w.pieces == nil {
		w.pieces = new(pieceMemo)
	}
	return w.pieces
}

// headKey hashes what the reading of a span depends on besides its
// messages: the head (the policy, the task's warning check) and the
// earlier briefing folded in.
func (w *Warm) headKey(head []briefd.Message, prev *briefd.Briefing) uint64 {
	var h maphash.Hash
	h.SetSeed(w.seed)
	str := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	for i := range head {
		str(head[i].ID)
		str(string(head[i].Role))
		str(head[i].Content.String())
	}
	if prev != nil {
		str("prev")
		str(string(prev.Structured))
		var d [8]byte
		binary.LittleEndian.PutUint64(d[:], uint64(prev.Depth))
		h.Write(d[:])
	}
	return h.Sum64()
}

// resume returns the model to read span[from:] into: w's when span
// extends the span w read (the caller guarantees that its first w.Len()
// messages are those w read; the head, the previous briefing and the ids
// at the seam are checked here), else a new one.
func (w *Warm) resume(head, span []briefd.Message, prev *briefd.Briefing) (m *model, from int) {
	if w.seed == (maphash.Seed{}) {
		w.seed = maphash.MakeSeed()
	}
	key := w.headKey(head, prev)
	if w.m != nil && w.key == key && w.n > 0 && w.n <= len(span) && span[0].ID == w.first && span[w.n-1].ID == w.last &&
		w.fresh(span[w.n:]) {
		w.m.head = head
		w.m.findResults(span, w.n)
		return w.m, w.n
	}
	w.Reset()
	w.key = key
	w.calls = map[string]bool{}
	return newModel(head, span), 0
}

// fresh reports whether reading the new messages leaves what was read
// before as a fresh reading of the whole span would have it: no new real
// user message where there was none (model.dialogue), no new result for a
// call read before.
func (w *Warm) fresh(add []briefd.Message) bool {
	if !w.m.dialogue && hasDialogue(add) {
		return false
	}
	for i := range add {
		if add[i].Role == briefd.RoleTool && add[i].ToolCallID != "" {
			if _, ok := w.m.results[add[i].ToolCallID]; ok || w.calls[add[i].ToolCallID] {
				return false
			}
		}
	}
	return true
}

// keep records that m holds span, read from from on.
func (w *Warm) keep(m *model, span []briefd.Message, from, steps int) {
	w.m, w.n = m, len(span)
	if len(span) > 0 {
		w.first, w.last = span[0].ID, span[len(span)-1].ID
	}
	for i := from; i < len(span); i++ {
		w.bytes += 160 + len(span[i].Content.Text)/4
		for k := range span[i].ToolCalls {
			w.calls[span[i].ToolCalls[k].ID] = true
			w.bytes += 48
		}
	}
	for _, s := range m.steps[steps:] {
		w.bytes += 256 + s.f.cost
	}
}

// markIntentions marks the intentions carried out, from the first whose
// window of steps is still open; marks only go from not done to done as
// steps are added, so the model keeps them.
func (w *Warm) markIntentions() {
	m := w.m
	m.markIntentionsFrom(w.marked)
	for w.marked < len(m.intents) && m.intents[w.marked].n+intentWindow <= len(m.steps) {
		w.marked++
	}
}

// readSpan reads span into w's model (the part w has not read), checking
// ctx between messages; on an error w is left empty.
func (w *Warm) readSpan(ctx context.Context, head, span []briefd.Message, prev *briefd.Briefing, cache *Cache) (*model, error) {
	m, from := w.resume(head, span, prev)
	steps := len(m.steps)
	if len(span)-from > 256 {
		if err := prewarm(ctx, head, span, from, cache); err != nil {
			w.Reset()
			return nil, err
		}
	}
	for i := from; i < len(span); i++ {
		if i%32 == 0 && ctx.Err() != nil {
			w.Reset()
			return nil, context.Cause(ctx)
		}
		m.read(span, i, prev, cache)
	}
	w.keep(m, span, from, steps)
	w.markIntentions()
	return m, nil
}

// journal records a file lookup's change to the model while it is sealed.
func (m *model) journal(key string, f *fileState) {
	if !m.sealed {
		return
	}
	u := fileUndo{key: key, f: f}
	if f != nil {
		u.path = f.path
	}
	m.undo = append(m.undo, u)
}

// fileUndo is a file lookup to undo: the key it added and the path it
// lengthened.
type fileUndo struct {
	key  string
	f    *fileState
	path string
}

// seal marks the reading done: the passes over the whole model may look
// files up (adding the forms of a path they name), and unseal takes those
// back, so that the model stays what reading the messages made it.
func (m *model) seal() {
	m.sealed, m.keys, m.undo = true, len(m.fileKeys), nil
	m.resolvedIDs = nil
}

func (m *model) unseal() {
	for i := len(m.undo) - 1; i >= 0; i-- {
		u := m.undo[i]
		delete(m.files, u.key)
		if u.f != nil {
			u.f.path = u.path
		}
	}
	m.fileKeys = m.fileKeys[:m.keys]
	m.sealed, m.undo = false, nil
	m.resolvedIDs = nil
}

// stepAt returns the order of the step a message called, or -1. The
// index grows with the steps, as stepsOn's does.
func (m *model) stepAt(id string) int {
	if m.stepN == nil {
		m.stepN = map[string]int{}
	}
	for ; m.stepNN < len(m.steps); m.stepNN++ {
		s := m.steps[m.stepNN]
		if _, ok := m.stepN[s.id()]; !ok {
			m.stepN[s.id()] = s.n
			m.memoBytes += 48
		}
	}
	if n, ok := m.stepN[id]; ok {
		return n
	}
	return -1
}

// stepsOn returns the steps that touched f alone, in order. The index
// grows with the steps: a step's one path names the same file state for
// good (the path it recorded is a key of files, which never changes).
func (m *model) stepsOn(f *fileState) []*step {
	if m.onFile == nil {
		m.onFile = map[*fileState][]*step{}
	}
	for ; m.onFileN < len(m.steps); m.onFileN++ {
		s := m.steps[m.onFileN]
		if len(s.files) != 1 {
			continue
		}
		if g := m.file(s.files[0], false); g != nil {
			m.onFile[g] = append(m.onFile[g], s)
		}
	}
	return m.onFile[f]
}

// noteLines is what a note's line reads of the note, kept per note: its
// weight, whether it is a hypothesis, its ids and texts (written once),
// and its item, reused from Write to Write (noteItem) so that the
// identifiers read from its texts and their uses are kept too.
type noteLines struct {
	id, text   string
	weight     float64
	hypothesis bool
	ids        []string
	texts      [levels]string
	it         item
	// words are the note's content words, sorted, for restatedLater;
	// restated is its answer once every note it compares with is read,
	// and restatedTo the first later note not yet compared (the notes
	// read are final, so each is compared once, not at every Write).
	words []string
	// names are the note's words that could be a record's id ("59XX6W",
	// "sofia_kim_7287"): buildNotes looks them up among the records.
	names         []string
	restated      bool
	restatedKnown bool
	restatedTo    int
}

// noteItem sets the memo's item to it, keeping the identifiers read from
// the note's texts (which do not change) and their uses, and returns it.
// The memo is by index in a slice that grows: buildNotes makes every
// note's memo (noteLine of the last) before it takes an item, so that no
// item is left in an array the memo no longer holds.
func (nl *noteLines) noteItem(it item) *item {
	it.identsAt, it.usesAt = nl.it.identsAt, nl.it.usesAt
	nl.it = it
	return &nl.it
}

// noteLine returns the memo of notes[k], made again if the note is not
// the one it was made from. The memo is by index, in order, so the notes
// before k that have none are given theirs first: buildNotes ranks a
// message's notes (a run) before it walks them in order, and skips those
// ranked out, so memos made only for the k asked would leave gaps past
// which nothing is kept, and the notes there would be weighed again, each
// against every note of its run, at every Write. The pointer is valid
// until the next call.
func (m *model) noteLine(k int) *noteLines {
	nt := m.notes[k]
	if k < len(m.notesAt) && m.notesAt[k].id == nt.id && m.notesAt[k].text == nt.text {
		return &m.notesAt[k]
	}
	if k < len(m.notesAt) {
		m.notesAt = m.notesAt[:k] // the memos from k on were of other notes
	}
	for len(m.notesAt) <= k {
		m.notesAt = append(m.notesAt, newNoteLines(m.notes[len(m.notesAt)]))
	}
	return &m.notesAt[k]
}

// newNoteLines reads what a note's line reads of the note.
func newNoteLines(nt note) noteLines {
	return noteLines{id: nt.id, text: nt.text, weight: noteWeight(nt.text), hypothesis: hypothesisRe.MatchString(nt.text),
		ids: []string{nt.id}, words: contentWords(nt.text), names: idWords(nt.text)}
}

// idWords are a text's words of five characters or more, letters, digits
// and underscores, each once: the candidates for a record's id.
func idWords(t string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(t, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}) {
		if len(w) >= 5 && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// noteTexts returns the texts of a note's line, written by write once.
func (m *model) noteTexts(nl *noteLines, write func(*[levels]string)) [levels]string {
	if nl.texts[levelFull] == "" {
		write(&nl.texts)
		for _, t := range nl.texts {
			m.memoBytes += len(t)
		}
	}
	return nl.texts
}

// stepGroups returns groupSteps(rest), regrouping only from where rest
// departs from the steps grouped last: grouping is a left fold over the
// steps, so the groups of a common beginning are the same, and a warm
// model's steps without a line of their own mostly grow at the end. The
// groups kept are not changed (the one the new steps may join is copied):
// the lines of earlier layouts hold them.
func (m *model) stepGroups(rest []*step) []*group {
	d := 0
	for d < len(rest) && d < len(m.grouped) && rest[d] == m.grouped[d] {
		d++
	}
	out := make([]*group, 0, len(m.groups)+len(rest)-d)
	at := 0
	for _, g := range m.groups {
		if at+len(g.steps) > d {
			if at < d {
				out = append(out, &group{steps: slices.Clone(g.steps[:d-at]), negative: g.negative})
			}
			break
		}
		out = append(out, g)
		at += len(g.steps)
	}
	if n := len(out); n > 0 && d < len(rest) {
		last := *out[n-1]
		last.steps = slices.Clip(last.steps) // an append copies it
		last.line = nil                      // its steps may change
		out[n-1] = &last
	}
	out = appendGroups(out, rest[d:])
	m.grouped, m.groups = rest, out
	return out
}

// callsOf returns the steps of the message id, in order. The index
// grows with the steps: a step's message is fixed when read.
func (m *model) callsOf(id string) []*step {
	m.indexCalls()
	return m.byID[id]
}

// lastCall returns the position of the last step of s's message.
func (m *model) lastCall(s *step) int {
	m.indexCalls()
	return m.lastOf[s.n]
}

// indexCalls indexes the steps not yet indexed by message, and each
// step's last step of its message (lastOf).
func (m *model) indexCalls() {
	if m.byID == nil {
		m.byID = map[string][]*step{}
	}
	for ; m.byIDN < len(m.steps); m.byIDN++ {
		s := m.steps[m.byIDN]
		calls := append(m.byID[s.id()], s)
		m.byID[s.id()] = calls
		m.lastOf = append(m.lastOf, s.n)
		for _, c := range calls {
			m.lastOf[c.n] = s.n
		}
	}
}

// answerKey names a call and the whole text it answered.
type answerKey struct {
	label  string
	answer uint64
}

// repeatOf returns the latest earlier step that s repeats: a read-only
// call (a lookup, a search that found something, an HTTP request) with
// the same label whose result had the same text, or nil. A search that
// found nothing is told with its kind (appendGroups). The index grows
// with the steps: a step's answer is fixed when read.
func (m *model) repeatOf(s *step) *step {
	if m.lastAnswer == nil {
		m.lastAnswer = map[answerKey]*step{}
	}
	for ; m.repeatsN < len(m.steps); m.repeatsN++ {
		t := m.steps[m.repeatsN]
		var rep *step
		if k := t.f.call.kind; t.f.hasAnswer && (k == kindLookup || k == kindSearch && !noMatch(t) || k == kindHTTP) {
			key := answerKey{t.f.call.label, t.f.answer}
			rep = m.lastAnswer[key]
			m.lastAnswer[key] = t
		}
		m.repeats = append(m.repeats, rep)
	}
	return m.repeats[s.n]
}

// repeated returns the earlier steps s repeats, oldest first, and how
// many more there are: at most three, the oldest two when there are more
// (a poll repeated for hours is told as "and 40 more").
func (m *model) repeated(s *step) (named []*step, more int) {
	for e := m.repeatOf(s); e != nil; e = m.repeatOf(e) {
		named = append(named, e)
	}
	slices.Reverse(named)
	if len(named) > 3 {
		return named[:2], len(named) - 2
	}
	return named, 0
}

// namedIdents returns the span's identifiers that are not bare numbers,
// in order, and the tokens an index of them all would take. The list
// grows with idOrder, which reading only appends to; the sum is taken in
// the same order, so it is the same float a fresh model's is.
func (m *model) namedIdents() ([]string, float64) {
	for ; m.namedN < len(m.idOrder); m.namedN++ {
		if id := m.idOrder[m.namedN]; !ident.IsNumeric(id) {
			m.named = append(m.named, id)
			m.namedNeed += estimate(id + ", ")
		}
	}
	return m.named, m.namedNeed
}

// runOutcomes returns how many outcomes (outcomeKey) the runs and tests
// of s's command had in the span. The index grows with the steps: a step's
// outcome is fixed when read. Each step keeps its command's set, so that
// a count is not a lookup by the command's text.
func (m *model) runOutcomes(s *step) int {
	if m.outcomes == nil {
		m.outcomes = map[string]*outcomeSet{}
	}
	for ; m.outcomesN < len(m.steps); m.outcomesN++ {
		s := m.steps[m.outcomesN]
		set := m.outcomes[s.f.call.label]
		if set == nil {
			set = &outcomeSet{}
			m.outcomes[s.f.call.label] = set
		}
		m.outcomesAt = append(m.outcomesAt, set)
		if k := s.f.call.kind; k == kindRun || k == kindTest {
			if set.keys == nil {
				set.keys = map[string]bool{}
			}
			set.keys[outcomeKey(s)] = true
		}
	}
	return len(m.outcomesAt[s.n].keys)
}

// outcomeSet is the outcomes of a command's runs and tests.
type outcomeSet struct {
	keys map[string]bool
}

// missedAt returns the failed steps that found path missing, in order.
// The index grows with the steps: what a step found is fixed when read.
func (m *model) missedAt(path string) []*step {
	if m.missed == nil {
		m.missed = map[string][]*step{}
	}
	for ; m.missedN < len(m.steps); m.missedN++ {
		s := m.steps[m.missedN]
		if !s.failed {
			continue
		}
		for i, p := range s.f.out.missing {
			if !slices.Contains(s.f.out.missing[:i], p) {
				m.missed[p] = append(m.missed[p], s)
			}
		}
	}
	return slices.Clip(m.missed[path])
}

// fileLines are the texts of a changed file's line at every level, and
// what of the file they were written from.
type fileLines struct {
	name, created, deleted, movedTo, content, outline string
	lastRun                                           *step
	react                                             string // lastRun's
	runInState                                        bool   // lastRun is the last check, told in STATE
	changes                                           []change
	undone                                            []undo
	texts                                             [levels]string
}

// fileTexts returns write(lv) for every level, the line of a changed file,
// written again only when what it reads of f has changed (its name and
// what fileText reads): a warm model keeps its files, and most of them are
// not touched by the new steps. A rule that makes the line read more of
// the file must be added to fileLines (TestWarmTouchedAgain and
// TestWarmWriteIdentity find what it misses).
func (m *model) fileTexts(f *fileState, runInState bool, write func(lv int) string) [levels]string {
	name := f.name()
	if c := f.lines; c != nil && c.name == name && c.runInState == runInState && c.matches(f) {
		return c.texts
	}
	c := &fileLines{name: name, created: f.created, deleted: f.deleted, movedTo: f.movedTo, content: f.content, outline: f.outline, lastRun: f.lastRun, runInState: runInState,
		changes: slices.Clone(f.changes), undone: slices.Clone(f.undone)}
	if f.lastRun != nil {
		c.react = f.lastRun.react
	}
	for i := range c.undone {
		c.undone[i].changes = slices.Clone(c.undone[i].changes)
	}
	for lv := range levels {
		c.texts[lv] = write(lv)
		m.memoBytes += len(c.texts[lv])
	}
	if f.lines != nil {
		for _, t := range f.lines.texts {
			m.memoBytes -= len(t)
		}
	}
	f.lines = c
	return c.texts
}

func (c *fileLines) matches(f *fileState) bool {
	if c.created != f.created || c.deleted != f.deleted || c.movedTo != f.movedTo || c.content != f.content || c.outline != f.outline ||
		c.lastRun != f.lastRun || f.lastRun != nil && c.react != f.lastRun.react ||
		!slices.Equal(c.changes, f.changes) || len(c.undone) != len(f.undone) {
		return false
	}
	for i, u := range f.undone {
		if v := c.undone[i]; v.id != u.id || v.what != u.what || v.why != u.why || !slices.Equal(v.changes, u.changes) {
			return false
		}
	}
	return true
}

// readMemo is the line of a file only read, and what it was written
// from: the file's name, its views and their reactions.
type readMemo struct {
	name   string
	views  []*step
	reacts []string
	lines  readLines
}

// readTexts returns fileReadTexts(f, views), written again only when the
// file's name, its views or their reactions have changed. A rule that
// makes the line read more must be added to readMemo
// (TestWarmWriteIdentity finds what it misses).
func (m *model) readTexts(f *fileState, views []*step) readLines {
	name := f.name()
	if c := f.read; c != nil && c.name == name && slices.Equal(c.views, views) &&
		slices.EqualFunc(c.reacts, views, func(r string, s *step) bool { return r == s.react }) {
		return c.lines
	}
	c := &readMemo{name: name, views: slices.Clone(views), reacts: make([]string, len(views)), lines: fileReadTexts(f, views)}
	for i, s := range views {
		c.reacts[i] = s.react
	}
	for _, t := range c.lines.texts {
		m.memoBytes += len(t)
	}
	m.memoBytes += 24 * len(views)
	if f.read != nil {
		for _, t := range f.read.lines.texts {
			m.memoBytes -= len(t)
		}
		m.memoBytes -= 24 * len(f.read.views)
	}
	f.read = c
	return c.lines
}

// errorKey is what an error's line reads besides the error's message:
// where it was raised, its messages and its status (which says whether it
// was resolved, by what, or judged unrelated, and where).
type errorKey struct {
	line, where, ids, status string
}

// errorLines are the texts of an error's line, and what they were written
// from.
type errorLines struct {
	key   errorKey
	texts [levels]string
}

// errorTexts returns the texts of e's line, written by write once per
// key: a warm model keeps its errors, and most of them are not seen again
// by the new steps. A rule that makes the line read more of the error
// must be added to errorKey (TestWarmTouchedAgain and
// TestWarmWriteIdentity find what it misses).
func (m *model) errorTexts(e *errState, k errorKey, write func(*[levels]string)) [levels]string {
	if c := e.lines; c != nil && c.key == k {
		return c.texts
	}
	c := &errorLines{key: k}
	write(&c.texts)
	for _, t := range c.texts {
		m.memoBytes += len(t)
	}
	if e.lines != nil {
		for _, t := range e.lines.texts {
			m.memoBytes -= len(t)
		}
	}
	e.lines = c
	return c.texts
}

// stepsOnBy returns filter(m, f, m.stepsOn(f)), kept in *memo and
// filtering only the steps added since: the steps on a file only grow,
// and what a filter reads of a step is fixed when the step is read. The
// slice is clipped, so that an append copies it.
func (m *model) stepsOnBy(f *fileState, memo **viewMemo, filter func(*model, *fileState, []*step) []*step) []*step {
	on := m.stepsOn(f)
	v := *memo
	if v == nil || v.n > len(on) {
		v = &viewMemo{}
		*memo = v
	}
	if v.n < len(on) {
		v.steps = append(v.steps, filter(m, f, on[v.n:])...)
		m.memoBytes += 8 * (len(on) - v.n)
		v.n = len(on)
	}
	return slices.Clip(v.steps)
}

// viewMemo is the steps a filter kept of the first n steps on a file.
type viewMemo struct {
	n     int
	steps []*step
}

// groupLine is what a step group's line reads, kept with the group
// between layouts: its texts (groupTexts), written again when the last
// step's reaction arrives or the records in play change, its ids and
// identifiers, and its item, reused while the texts stand so that the
// identifiers read from them are kept too.
type groupLine struct {
	react       bool
	check       bool     // its first step is the last check (toldInState)
	pending     []string // records its texts name but RECORDS lacked (recordsPending)
	texts       [levels]string
	ids, idents []string
	it          item
}

// groupLine returns g's memo, up to date.
func (m *model) groupLine(g *group) *groupLine {
	react := g.last().react != ""
	check := m.isCheck(g.first())
	gl := g.line
	if gl == nil {
		gl = &groupLine{ids: []string{g.first().id()}, idents: groupIdents(g)}
		g.line = gl
		m.memoBytes += 256
	} else if gl.react == react && gl.check == check && !m.anyRecorded(gl.pending) {
		return gl
	}
	gl.react, gl.check = react, check
	gl.texts, gl.pending = m.groupTexts(g)
	gl.it.identsAt, gl.it.usesAt = [levels][]string{}, [levels]*identUses{}
	gl.it.unsaid, gl.it.unsaidDone = [levels][]*step{}, [levels]bool{}
	return gl
}

// item sets the memo's item to it, keeping the identifiers read from its
// texts and their uses, and the steps its texts do not name while they
// and its steps stand, and returns it.
func (gl *groupLine) item(it item) *item {
	it.identsAt, it.usesAt = gl.it.identsAt, gl.it.usesAt
	if it.texts == gl.it.texts && slices.Equal(it.steps, gl.it.steps) {
		it.unsaid, it.unsaidDone = gl.it.unsaid, gl.it.unsaidDone
	}
	gl.it = it
	return &gl.it
}

// lineKey names a group of steps and what its line reads besides them.
type lineKey struct {
	first, last int    // the group's first and last steps
	mid         string // the steps between, when there are any
	react       bool   // its last step's reaction is known (salient, reading)
	check       bool   // its first step is the last check (toldInState)
}

// groupTexts returns the group's line at every level ("- " + group.text),
// written once per group, and the records it names that RECORDS lacks
// (recordsPending). A step's line reads its steps (their facts, ids and
// outcome, fixed when read, and the last one's reaction, which the next
// assistant message sets once), earlier steps (an earlier response of the
// same URL), the head's policy (fixed for a Warm) and whether the records
// it names are in RECORDS: the texts are written again when one of those
// is filed. A rule that makes a step's line read more of the model must be
// added to the key (TestWarmWriteIdentity finds what it misses).
func (m *model) groupTexts(g *group) ([levels]string, []string) {
	if m.lines == nil {
		m.lines = map[lineKey]lineTexts{}
	}
	k := lineKey{first: g.first().n, last: g.last().n, react: g.last().react != "", check: m.isCheck(g.first())}
	if len(g.steps) > 2 {
		b := make([]byte, 0, 4*len(g.steps))
		for _, s := range g.steps[1 : len(g.steps)-1] {
			b = binary.AppendUvarint(b, uint64(s.n))
		}
		k.mid = string(b)
	}
	lt, ok := m.lines[k]
	if !ok || m.anyRecorded(lt.pending) {
		for lv := range levels {
			lt.texts[lv] = "- " + g.text(m, lv)
		}
		lt.pending = m.recordsPending(g)
		if !ok {
			m.memoBytes += 96 + len(k.mid)
			for _, t := range lt.texts {
				m.memoBytes += len(t)
			}
		}
		m.lines[k] = lt
	}
	return lt.texts, lt.pending
}

// lineTexts are a group's texts and the records they were written
// without.
type lineTexts struct {
	texts   [levels]string
	pending []string
}

// recordsPending are the records a group's steps read one of but which
// are not in RECORDS (a failed lookup's): the only way its line reads the
// records (recordsText tells a record in RECORDS by its id alone), and
// records are only ever added.
func (m *model) recordsPending(g *group) []string {
	var out []string
	for _, s := range g.steps {
		if recs := s.f.records; len(recs) == 1 && recs[0].id != "" && m.records[recs[0].id] == nil {
			out = append(out, recs[0].id)
		}
	}
	return out
}

// anyRecorded reports whether one of ids is in RECORDS now.
func (m *model) anyRecorded(ids []string) bool {
	for _, id := range ids {
		if m.records[id] != nil {
			return true
		}
	}
	return false
}

// userLine is the item of a user's message, and what it was written
// from.
type userLine struct {
	ids       []string
	text      string
	capTokens int
	it        item
}

// userItem returns the item of users[k]: its line ("[ids] text") whole,
// and cut to capTokens (shortenUser) at the shorter levels, written again
// only when the message's ids, text or the cap differ from those it was
// written from. The user's messages are carried verbatim, the longest
// lines of a briefing, and the same from one Write to the next: kept, the
// item keeps the identifiers read from its texts and their uses, and its
// texts stay the same strings, which the sections' and the record's memos
// compare by pointer.
func (m *model) userItem(k, capTokens int) *item {
	u := &m.users[k]
	if k < len(m.userLines) {
		if c := m.userLines[k]; c.text == u.text && c.capTokens == capTokens && slices.Equal(c.ids, u.ids) {
			c.it = item{sec: secUser, must: true, ids: u.ids, order: float64(k), texts: c.it.texts,
				identsAt: c.it.identsAt, usesAt: c.it.usesAt}
			return &c.it
		}
	}
	c := &userLine{ids: slices.Clone(u.ids), text: u.text, capTokens: capTokens}
	full := "[" + strings.Join(u.ids, ", ") + "] " + u.said()
	short := shortenUser(full, capTokens)
	c.it = item{sec: secUser, must: true, ids: u.ids, order: float64(k), texts: [levels]string{full, short, short}}
	if k > len(m.userLines) {
		return &c.it // not kept: the memo is by index, in order
	}
	m.memoBytes += userLineBytes(c)
	if k < len(m.userLines) {
		m.memoBytes -= userLineBytes(m.userLines[k])
		m.userLines[k] = c
	} else {
		m.userLines = append(m.userLines, c)
	}
	return &c.it
}

// userLineBytes approximates a user line's memory, with the identifiers
// and uses its item keeps (a word or two each).
func userLineBytes(c *userLine) int {
	n := 256 + len(c.it.texts[levelFull]) + 16*len(c.ids)
	if c.it.texts[levelShort] != c.it.texts[levelFull] {
		n += len(c.it.texts[levelShort])
	}
	return n + len(c.it.texts[levelFull])/2 // identifiers, at most one per two bytes, and their uses
}

// identUses are the uses (model.ids) of the identifiers of an item's text
// at one level (from, the item's textIdents), for the coverage: those the
// span uses, bare numbers left out, and those it did not use when they
// were looked up, at n identifiers of the span. The span's identifiers
// only grow (ids and idOrder together), so a use found stays; one not
// found is looked up again once the span has more.
type identUses struct {
	from    []string
	uses    []*identUse
	pending []string
	n       int
}

// textUses returns the uses of the identifiers of it's chosen text that
// the coverage counts. They are kept with the item, keyed by the slice of
// identifiers they were read from (a step group's item and a user's are
// kept between Writes, groupLine and userItem, with their identifiers
// while their texts stand).
func (it *item) textUses(m *model) []*identUse {
	ids := it.textIdents()
	c := it.usesAt[it.level]
	if c == nil || !sameSlice(c.from, ids) {
		c = &identUses{from: ids, pending: ids, n: -1}
		it.usesAt[it.level] = c
	}
	if c.n != len(m.idOrder) {
		rest := c.pending[:0:0]
		for _, id := range c.pending {
			switch u := m.ids[id]; {
			case u == nil:
				rest = append(rest, id)
			case !ident.IsNumeric(id):
				c.uses = append(c.uses, u)
			}
		}
		c.pending, c.n = rest, len(m.idOrder)
	}
	return c.uses
}

// sameSlice reports whether a and b are the same slice: the same array
// and length.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
