package brief

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
)

// The span model: one pass over the span's messages builds what the
// briefing reports: the user's messages, the steps with their results, the
// last known state of every file and record, the errors and what resolved
// them, the decisions and the intentions the assistant stated.

// step is one tool call of the span with its result.
type step struct {
	n      int      // order in the span
	ids    []string // the calling message and the result message
	f      *stepFacts
	failed bool
	said   string // the assistant text of the calling message (first call only)
	react  string // the assistant text right after the result: what it made of it
	// reactWords are react's distinctive words, to find the output lines
	// it refers to.
	reactWords []string
	reactRefs  map[string]bool
	// salient memoizes salient(s, n) by n.
	salient map[int][]string
	files   []string
	idents  []string // identifiers of the call and result, to rank the index
	records []string // ids of records it read or changed
	// lineIdents memoizes stepIdents.
	lineIdents []string
	// prevRun is the last earlier step with the same call and an output.
	prevRun *step
	// sameErr is the step that first showed the error this one shows
	// again (the same error of ERRORS: trackError), when the error is
	// told by its line: a failure seen again is told by pointing there.
	sameErr *step
	// outcome memoizes outcomeKey, noMatch noMatch (0 unread, 1 false,
	// 2 true).
	outcome string
	noMatch int8
	// checks and checkOf memoize readCheckedChange (checks 1 once read):
	// what it reads, the step's output and the changes made before it,
	// is fixed once read.
	checks  int8
	checkOf string
}

func (s *step) id() string { return s.ids[0] }

// lastID is the result message's id, or the call's.
func (s *step) lastID() string { return s.ids[len(s.ids)-1] }

// userMsg is one user message, verbatim.
type userMsg struct {
	ids  []string
	text string
	// repeatAt is where the message starts repeating a pinned message word
	// for word to its end (a harness's standing instructions after the
	// task), repeatOf that message's id; 0 when it does not.
	repeatAt int
	repeatOf string
	// earlier marks a harness reminder quoted by a folded briefing and
	// not repeated in the new messages.
	earlier bool
	// at is how many steps came before the message first said it.
	at int
}

// note is a sentence the assistant wrote, with its message.
type note struct {
	id   string
	n    int // the step count when it was written
	text string
	done bool // an intention carried out by a call
	// onlyAsks marks a message to the user that only asks for what the
	// user's answer will say (onlyAsks), read once with the message.
	onlyAsks bool
}

// fileState is the last known state of one file.
type fileState struct {
	path    string // the longest form seen (an absolute path contains the relative one)
	created string // the message that first wrote it, when the span did
	changes []change
	undone  []undo // reverts that undid earlier changes
	deleted string
	views   []string // messages that read it
	viewed  []string // what the views covered ("lines 910-930")
	runs    []string // messages that ran it
	lastRun *step
	movedTo string   // the directory it was moved into (mv x dir/)
	content string   // its whole content when small and known (a write, an editor echo)
	outline string   // what a larger written file defines (outline)
	dir     string   // the directory a relative path was written from (a cd before it)
	writes  []string // files this script rewrites when it runs
	effect  string   // what it writes into them (scriptEffect)
	missing bool     // a tool said it does not exist
	n       int      // the last step that touched it
	// lines and read memoize the texts of its line (see model.fileTexts
	// and model.readTexts).
	lines *fileLines
	read  *readMemo
	// onlyRead and onlyChanged are its view and change steps (see
	// model.stepsOnBy).
	onlyRead, onlyChanged *viewMemo
}

var substitutionRe = regexp.MustCompile("^(.*?)`([^`]*)` → `([^`]*)`$")

// inverseChanges returns the indexes of the earlier changes that what
// undoes, oldest first: the latest one at the same place with from and to
// swapped, or every line inserted that a deletion's pattern matches (sed
// '/DEBUG:/d' deletes each debug print added before it); nil for none.
func inverseChanges(changes []change, what string) []int {
	// Each file operation asks this of the file's every change: the
	// regexps run only where their fixed text is.
	subst := func(t string) []string {
		if !strings.Contains(t, "` → `") {
			return nil
		}
		return substitutionRe.FindStringSubmatch(t)
	}
	var d []string
	if strings.HasPrefix(what, "deleted each line matching ") {
		d = deletedMatchRe.FindStringSubmatch(what)
	}
	if d != nil {
		var out []int
		for i, c := range changes {
			if strings.HasPrefix(c.what, "inserted ") {
				if in := insertedLineRe.FindStringSubmatch(c.what); in != nil && strings.Contains(in[1], d[1]) {
					out = append(out, i)
					continue
				}
			}
			// s/def f():/def f():\n    print("DEBUG: …")/ added lines
			// after a line it kept: they go with the pattern too.
			if c := subst(c.what); c != nil && c[1] == "" && c[2] != "" && !strings.Contains(c[2], d[1]) {
				if added, ok := strings.CutPrefix(c[3], c[2]+" ⏎ "); ok && strings.Contains(added, d[1]) {
					out = append(out, i)
				}
			}
		}
		return out
	}
	m := subst(what)
	if m == nil {
		return nil
	}
	for i := len(changes) - 1; i >= 0; i-- {
		if c := subst(changes[i].what); c != nil && c[1] == m[1] && c[2] == m[3] && c[3] == m[2] {
			return []int{i}
		}
	}
	return nil
}

// insertedLineRe and deletedMatchRe read a one-line insertion and the
// deletion of the lines a pattern matches, as sedLines writes them.
var (
	insertedLineRe = regexp.MustCompile("^inserted (?:before|after) [^`]*?(?:`[^`]*`[^`]*?)?: `([^`]+)`$")
	deletedMatchRe = regexp.MustCompile("^deleted each line matching `([^`]+)`$")
)

// runAfter reports whether a failed line ran something after op: "cat >
// x.py <<EOF … EOF; python x.py" failed in its run, and its write stands.
func runAfter(s *step, op fileOp) bool {
	if s.f.call.ranAfterChange {
		return true // "sed -i … && pytest": the tests ran, so the edit did
	}
	seen := false
	for _, o := range s.f.call.ops {
		switch {
		case o.path == op.path && o.op == op.op:
			seen = true
		case seen && (o.op == kindRun || o.op == kindTest):
			return true
		}
	}
	return false
}

// name is the file as the briefing writes it: its path, and where a
// relative one lives when a cd put it there ("conf.py (in reproduce_issue/)").
func (f *fileState) name() string {
	if f.dir != "" && !strings.Contains(f.path, "/") {
		return f.path + " (in " + f.dir + "/)"
	}
	return f.path
}

type change struct {
	id   string
	what string
	noop bool
}

// undo is a revert and the changes it undid.
type undo struct {
	id      string
	what    string
	changes []change
	// why is the sentence of the undoing message that judged the changes
	// ("It seems I matched the WRONG block"), or "".
	why string
}

// undoReason is the sentence of an undoing message's text that judges
// what it undoes ("This seems wrong based on …", "It seems I matched the
// WRONG block"), among its first three, when short; else "".
func undoReason(said string) string {
	ss := sentences(plainText(said))
	for _, s := range ss[:min(3, len(ss))] {
		if len(s) <= 140 && undoReasonRe.MatchString(s) && !isIntention(s) {
			return s
		}
	}
	return ""
}

// undoReasonRe finds a judgement of what was done.
var undoReasonRe = regexp.MustCompile(`(?i)\b(?:wrong|mistakes?|broke|broken|incorrect(?:ly)?|flawed|messed up|not what|not right|(?:does|did)n't work|does not work|did not work|unnecessary|bad idea|no longer needed)\b`)

// net reports whether the file differs from before the span: a change
// that survived every revert, a write, or a delete.
func (f *fileState) net() bool {
	if f.deleted != "" {
		return f.created == ""
	}
	if f.created != "" {
		return true
	}
	for _, c := range f.changes {
		if !c.noop {
			return true
		}
	}
	return false
}

// recordState is the last known state of one record.
type recordState struct {
	id      string
	rec     record
	readAt  string
	changed []string // messages of calls that changed it
	status  string   // the change's outcome, from the mutating call's result
	n       int
	// decided memoizes decidedOn: whether notes[:decidedN] name it after
	// step decidedAt (its n then).
	decided             bool
	decidedN, decidedAt int
}

// errState is one error and what became of it.
type errState struct {
	line       string
	at         string // where it was raised
	ids        []string
	key        string // what failed: the kind and target of the step
	resolved   string // the message of the first success of the same thing
	resolvedBy *step  // that success
	lastHead   string // the failed line's last command (call.lastHead), which a later success of resolves it
	checked    string // the reaction of resolvedBy that misfired was read from
	misfired   bool
	lastFailed *step  // the step it was last seen in, whose reaction may judge it
	first      *step  // the step it was first seen in
	fix        string // what changed between the last failure and that success
	n          int    // last step it was seen
	count      int
	// explainedAt is the message where the agent said what explains the
	// failure as expected (explanation, its words): not a bug left open.
	explainedAt, explanation string
	// raisedBy is the test's own raise statement that raised it
	// (output.raisedBy): a reproduction's exception, raised on purpose.
	raisedBy string
	// reworded marks an error seen again with other quoted text (an edit's
	// old_str): its line is the newest wording.
	reworded bool

	// judged is the reaction of lastFailed that unrelatedTo was read from
	// (see unrelated); lines memoizes its line (see model.errorTexts).
	judged      string
	unrelatedTo bool
	lines       *errorLines
}

// model is everything the briefing can say about a span.
type model struct {
	head     []briefd.Message
	policy   string // the system prompt, lower-cased, to rank record fields
	users    []userMsg
	harness  []userMsg // harness messages (format reminders), by distinct opening
	toolErrs []note    // tool errors delivered as user messages
	steps    []*step
	files    map[string]*fileState
	fileKeys []string
	records  map[string]*recordState
	recKeys  []string
	lists    []idList // id lists of records, to tell read from unread
	errors   []*errState
	notes    []note // decisions
	intents  []note
	// intentScans are, per intention, its words and how far markIntentions
	// has looked for a call that carries it out; lowLabels are the steps'
	// labels lower-cased, read once (the steps may be shared: not written).
	intentScans []intentScan
	lowLabels   []string
	asked       *note // the last question the assistant asked the user, unanswered in the span
	// drafted is the last assistant message that wrote shell commands in
	// its text but made no tool call: nothing ran them.
	drafted *note
	told    []note // what the assistant told the user (its messages without tool calls)
	// toldAnswered counts the told messages a user message came after.
	toldAnswered int
	finished     *step
	ids          map[string]*identUse // span identifiers
	idOrder      []string
	// headIDs are the identifiers of the pinned head (the system prompt,
	// the task), which the agent reads verbatim: the index need not list
	// them again.
	headIDs  map[string]bool
	first    string // first and last message ids of the span
	last     string
	messages int
	prior    *prior // the earlier briefing folded in
	// argValues maps each argument value of a call to the last step that
	// passed it, to tell read ids from unread.
	argValues map[string]int
	// lastRun maps a call's label to the last step that made it, to tell
	// what a repeated run printed that the one before did not.
	lastRun map[string]*step
	// check memoizes lastCheck by the steps it was read from.
	check checkMemo
	// userAt is the step count when the last user message came.
	userAt int
	// dialogue is set when the span has a real user message after the
	// task: only then is an assistant message without a call addressed
	// to a user (elsewhere the harness answers it).
	dialogue bool

	// What reading the next message needs (see read).
	keepWarnings bool           // the task is about a warning (taskMentionsWarnings)
	results      map[string]int // each call id's result, by index in the span
	lastStep     *step          // the step an assistant text reacts to
	// sealed is set while a Warm's model is read for a briefing: the file
	// lookups made then are undone after it (see seal).
	sealed bool
	undo   []fileUndo
	keys   int // len(fileKeys) when sealed
	// onFile indexes the steps of steps[:onFileN] that touched one file
	// (see stepsOn).
	onFile  map[*fileState][]*step
	onFileN int
	// stepN maps the messages of steps[:stepNN] to their steps' order.
	stepN  map[string]int
	stepNN int
	// unreadEdits reports a command among steps[:unreadEditsN] that may
	// edit files unread (touchedExisting).
	unreadEdits  bool
	unreadEditsN int
	// tools are the tool names of steps[:toolsN], each once (toolTakes).
	tools  []string
	toolsN int
	// userLines memoizes the items of the user's messages (see
	// userItem).
	userLines []*userLine
	// entries and lastEntries memoize the JSON of the record's entries of
	// this Write and the last, by content, placed and lastPlaced by place
	// (see entryJSON).
	entries, lastEntries           map[entryMemoKey][]byte
	placed, lastPlaced             map[string][]placedEntry
	entriesBytes, lastEntriesBytes int
	// lines memoizes the texts of step groups (see groupTexts).
	lines map[lineKey]lineTexts
	// What the layout derives from the model and keeps while it grows
	// (see warm.go): each index covers the steps (or identifiers) up to
	// its count, and grows with them.
	//
	// byID indexes the steps by their calling message, lastOf gives each
	// the position of its message's last step (see callsOf, lastCall).
	byID   map[string][]*step
	lastOf []int
	byIDN  int
	// repeats gives each step the earlier step it repeats (see repeatOf);
	// lastAnswer holds the latest read-only call per label and answer.
	repeats    []*step
	lastAnswer map[answerKey]*step
	repeatsN   int
	// outcomes holds the outcomes of the runs and tests by command, and
	// outcomesAt each step's command's (see runOutcomes).
	outcomes   map[string]*outcomeSet
	outcomesAt []*outcomeSet
	outcomesN  int
	// missed indexes the failed steps by the paths they found missing
	// (see missedAt).
	missed  map[string][]*step
	missedN int
	// named lists the identifiers of idOrder that are not bare numbers,
	// and namedNeed sums their estimated cost in the index, in that order
	// (see namedIdents).
	named     []string
	namedN    int
	namedNeed float64
	// idUses is ids[idOrder[i]] by i; scoring counts the layouts that
	// scored the identifiers (see scoreIdents).
	idUses    []*identUse
	scoring   int
	coverings int // counts the coverages (see identUse.counted)
	// notesAt holds what the lines of notes read of them, by index, with
	// the note they were read from (see noteLine).
	notesAt []noteLines
	// groups are the groups of the steps without a line of their own
	// (grouped) the last layout made (see stepGroups).
	grouped []*step
	groups  []*group
	// resolvedIDs is resolvedFailures while the layout is built: it is
	// derived from every error, so a model read further drops it (see
	// seal).
	resolvedIDs map[string]bool
	// plain memoizes plainName by identifier: the index asks it of every
	// candidate at every choice of a fit, and its regexp is the slow part.
	plain map[string]bool
	// memoBytes approximates the texts the memos hold.
	memoBytes int
}

// plainName is plainName(id), read once per identifier.
func (m *model) plainName(id string) bool {
	p, ok := m.plain[id]
	if !ok {
		if m.plain == nil {
			m.plain = map[string]bool{}
		}
		p = plainName(id)
		m.plain[id] = p
		m.memoBytes += len(id) + 16
	}
	return p
}

type idList struct {
	id    string // the message
	owner string // the record holding the list
	field string
	ids   []string
}

type identUse struct {
	msgs   int
	spoken bool // in a user or assistant text or a call's arguments
	last   int
	// kind memoizes identKindScore of its identifier, when kindRead.
	kind     float64
	kindRead bool
	// score is its score as an index candidate (scoreIdents), when scored
	// is the model's scoring; counted is the model's coverings when the
	// coverage counted it.
	score   float64
	scored  int
	counted int
}

// kindScore is identKindScore(id), read once per identifier of the span
// (u is nil for one the span does not use).
func (u *identUse) kindScore(id string) float64 {
	if u == nil {
		return identKindScore(id)
	}
	if !u.kindRead {
		u.kind, u.kindRead = identKindScore(id), true
	}
	return u.kind
}

// build reads the span into a model.
func build(head, span []briefd.Message, prev *briefd.Briefing, cache *Cache) *model {
	m := newModel(head, span)
	for i := range span {
		m.read(span, i, prev, cache)
	}
	m.markIntentions()
	return m
}

// newModel starts the model of a span: what the reading of its messages
// depends on beside the messages read so far (the pinned head; whether the
// span holds a dialogue; where each call's result is).
func newModel(head, span []briefd.Message) *model {
	m := &model{head: head, files: map[string]*fileState{}, records: map[string]*recordState{},
		ids: map[string]*identUse{}, argValues: map[string]int{}, results: map[string]int{}}
	m.keepWarnings = taskMentionsWarnings(head)
	m.headIDs = map[string]bool{}
	for i := range head {
		if head[i].Role == briefd.RoleSystem {
			m.policy += strings.ToLower(head[i].Content.String()) + "\n"
		}
		ident.Scan(head[i].Content.String(), func(id string) { m.headIDs[id] = true })
	}
	m.dialogue = hasDialogue(span)
	m.findResults(span, 0)
	return m
}

// hasDialogue reports a real user message in span (see model.dialogue).
func hasDialogue(span []briefd.Message) bool {
	for i := range span {
		if span[i].Role == briefd.RoleUser && !span[i].IsBriefing() {
			if t := strings.TrimSpace(span[i].Content.String()); t != "" && !isHarness(t) && !isToolError(t) {
				return true
			}
		}
	}
	return false
}

// findResults files the results among span[from:] by their call's id (the
// last one when ids repeat).
func (m *model) findResults(span []briefd.Message, from int) {
	for i := from; i < len(span); i++ {
		if span[i].Role == briefd.RoleTool && span[i].ToolCallID != "" {
			m.results[span[i].ToolCallID] = i
		}
	}
}

// read reads span[i], the message after those read so far.
func (m *model) read(span []briefd.Message, i int, prev *briefd.Briefing, cache *Cache) {
	msg := &span[i]
	if m.first == "" {
		m.first = msg.ID
	}
	m.last = msg.ID
	switch {
	case msg.IsBriefing():
		m.prior = foldPrior(msg, prev)
		if m.prior.first != "" && m.first == msg.ID {
			m.first = m.prior.first
		}
		m.foldHarness()
		return
	case msg.Role == briefd.RoleTool:
		m.messages++
		return // read with its call
	}
	m.messages++
	text := msg.Content.String()
	switch msg.Role {
	case briefd.RoleUser:
		m.readUser(msg, text, cache)
		m.lastStep = nil
	case briefd.RoleAssistant:
		thought := stripThought(text)
		tf := cache.text(thought)
		if lastStep := m.lastStep; lastStep != nil && thought != "" {
			lastStep.react = thought
			lastStep.reactWords = tf.words
			lastStep.reactRefs = tf.lineRefs
			m.readExplanation(msg.ID, lastStep, thought)
		}
		m.countIdents(tf.idents, true)
		m.readAssistant(msg, thought, tf)
		if len(msg.ToolCalls) == 0 {
			if d := draftedCommands(text); d != "" {
				m.drafted = &note{id: msg.ID, n: len(m.steps), text: d}
			}
		}
		first := true
		for k := range msg.ToolCalls {
			tc := &msg.ToolCalls[k]
			var res *briefd.Message
			if j, ok := m.results[tc.ID]; ok {
				res = &span[j]
			}
			s := &step{n: len(m.steps), ids: []string{msg.ID}, f: cache.step(tc, res, m.keepWarnings)}
			if res != nil {
				s.ids = append(s.ids, res.ID)
			}
			if first {
				s.said = thought
				first = false
			}
			m.countIdents(s.f.argIDs, true)
			m.countIdents(s.f.outIDs, false)
			for _, v := range s.f.call.args {
				m.argValues[v] = s.n
			}
			m.addStep(s)
			m.lastStep = s
		}
		if len(msg.ToolCalls) == 0 {
			m.lastStep = nil
		}
	default:
		m.lastStep = nil
	}
}

// failedEdit is the file an edit that failed was to change (the editor
// refused it: no replacement, a syntax error it would introduce): the
// file is as it was, so the next step is the edit, not a fix. "" for any
// other error.
func (e *errState) failedEdit() string {
	if e.lastFailed == nil || e.lastFailed.f.call.kind != kindEdit {
		return ""
	}
	return e.lastFailed.f.call.target
}

// refusals are the ids of the open refusals of edits of file f, oldest
// first, and the newest of those errors.
func (m *model) refusals(f string) (ids []string, newest *errState) {
	for _, e := range m.errors {
		if e.failedEdit() == f && e.open() {
			ids = append(ids, e.ids...)
			if newest == nil || e.n >= newest.n {
				newest = e
			}
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return m.stepAt(a) - m.stepAt(b) })
	return ids, newest
}

// otherRefusal tells the newest open refusal of an edit of f whose reason
// differs from newest's and which says where in the file, with its id
// ("one of them, [m0031], refused otherwise: Multiple occurrences of
// old_str `return pattern_type;` in lines [317, 449]…"), or "": told with the newest refusal alone, a text
// that occurs twice reads as one that did not occur. (A call the tool
// could not take, "Parameter `old_str` is required", says nothing of the
// file.)
func (m *model) otherRefusal(f string, newest *errState) string {
	var other *errState
	for _, e := range m.errors {
		if e != newest && e.failedEdit() == f && e.open() && saysLineRe.MatchString(attemptShape(e.line)) &&
			refusalKind(e.line) != refusalKind(newest.line) && (other == nil || e.n >= other.n) {
			other = e
		}
	}
	if other == nil {
		return ""
	}
	return "one of them, [" + other.ids[len(other.ids)-1] + "], refused otherwise: " + clip(errorText(other.line), 140)
}

// refusalKind is a refusal's message without what it quotes or the
// numbers it gives (a line, a count): "did not appear verbatim" at any
// text, "new syntax error(s) App.tsx:15" at any line.
func refusalKind(line string) string {
	return digitsRe.ReplaceAllString(attemptShape(line), "#")
}

var digitsRe = regexp.MustCompile(`\d+`)

// saysLineRe matches a message that gives a line of the file ("in lines
// [317, 449]", "at line 12"), not one that has "line" in a path.
var saysLineRe = regexp.MustCompile(`(?i)\blines? \[?\d`)

// open reports whether an error is still open: nothing resolved it, or
// the agent itself said the step that did misfired (an edit that went
// through but landed in the wrong place leaves the cause in place). It is
// read at writing time, so a reaction read later counts.
func (e *errState) open() bool {
	if e.resolved == "" || e.resolvedBy == nil {
		return e.resolved == ""
	}
	// The reaction is read once per text (a warm model keeps the error
	// while the reaction may arrive later).
	if r := e.resolvedBy.react; r != e.checked {
		// The agent's first reading of the result, not what it goes on to
		// say about the task.
		e.checked, e.misfired = r, misfireRe.MatchString(headOf(r, 300))
	}
	return e.misfired
}

// misfireRe marks an agent's reading of a step that worked as a command but
// not as a fix.
var misfireRe = regexp.MustCompile(`(?i)\b(?:not (?:correctly|properly) (?:placed|applied|inserted)|(?:inserted|placed|put|added) in the wrong place|(?:is|are|became|now) unreachable|(?:fix|change|edit|patch) (?:didn't|did not|doesn't|does not) work|still (?:fails|failing))\b`)

// harnessMark labels a harness reminder that an earlier briefing quoted in
// its user section (briefings now give them a section of their own).
const harnessMark = "harness reminder, not from the user: "

// foldHarness takes the harness reminders an earlier briefing quoted, in
// their section or among its user entries, so that each distinct one stays
// quoted once.
func (m *model) foldHarness() {
	var quoted []Entry
	users := m.prior.entries[secUser][:0]
	for _, e := range m.prior.entries[secUser] {
		if _, quote, ok := strings.Cut(e.Text, harnessMark); ok {
			quoted = append(quoted, Entry{Text: quote, IDs: e.IDs})
			continue
		}
		users = append(users, e)
	}
	m.prior.entries[secUser] = users
	for _, e := range m.prior.entries[secHarness] {
		quote := e.Text
		if strings.HasPrefix(quote, "[") {
			if _, rest, ok := strings.Cut(quote, "] "); ok {
				quote = rest
			}
		}
		quoted = append(quoted, Entry{Text: quote, IDs: e.IDs})
	}
	m.prior.entries[secHarness] = nil
	for _, e := range quoted {
		if i := slices.IndexFunc(m.harness, func(h userMsg) bool { return harnessKey(h.text) == harnessKey(e.Text) }); i >= 0 {
			m.harness[i].ids = append(m.harness[i].ids, e.IDs...)
			continue
		}
		m.harness = append(m.harness, userMsg{ids: e.IDs, text: e.Text, earlier: true})
	}
}

// taskMentionsWarnings reports whether the pinned task is about a warning,
// so that warning lines in outputs are results, not noise.
func taskMentionsWarnings(head []briefd.Message) bool {
	for i := range head {
		if head[i].Role == briefd.RoleUser {
			t := strings.ToLower(head[i].Content.String())
			return strings.Contains(t, "warning") || strings.Contains(t, "deprecat")
		}
	}
	return false
}

// readUser files a user message: the user's words, a harness reminder, or
// a tool error delivered in the user role.
func (m *model) readUser(msg *briefd.Message, text string, cache *Cache) {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return
	case isHarness(t):
		// The assistant message it answers was a malformed action, not a
		// message to the user.
		if m.asked != nil && len(m.told) > 0 && m.told[len(m.told)-1].id == m.asked.id {
			m.told = m.told[:len(m.told)-1]
		}
		m.asked = nil
		key := harnessKey(t)
		for i := range m.harness {
			if harnessKey(m.harness[i].text) == key {
				m.harness[i].ids = append(m.harness[i].ids, msg.ID)
				m.harness[i].earlier = false
				return
			}
		}
		m.harness = append(m.harness, userMsg{ids: []string{msg.ID}, text: t})
		return
	case isToolError(t):
		m.toolErrs = append(m.toolErrs, note{id: msg.ID, n: len(m.steps), text: t})
		return
	}
	m.asked = nil
	m.userAt = len(m.steps)
	m.toldAnswered = len(m.told) // the user has spoken since each of them
	m.countIdents(cache.text(t).idents, true)
	for i := range m.users {
		if m.users[i].text == t {
			m.users[i].ids = append(m.users[i].ids, msg.ID)
			return
		}
	}
	u := userMsg{ids: []string{msg.ID}, text: t, at: len(m.steps)}
	u.repeatAt, u.repeatOf = repeatsHead(t, m.head)
	m.users = append(m.users, u)
}

// userNamed reports whether the user, before step n, named w as a word
// (case aside; "basic economy" names basic_economy): in the pinned task
// or a message of the span. A step's text may depend on it: what it reads
// is fixed when the step is.
func (m *model) userNamed(w string, n int) bool {
	at := m.namedFrom(w)
	return at >= 0 && at <= n
}

// namedFrom is the step count from which the user had named w (0 when the
// pinned head names it), or -1 when no user message names it.
func (m *model) namedFrom(w string) int {
	w = strings.ToLower(strings.ReplaceAll(w, "_", " "))
	for i := range m.head {
		if m.head[i].Role == briefd.RoleUser && containsWord(strings.ToLower(m.head[i].Content.String()), w) {
			return 0
		}
	}
	from := -1
	for i := range m.users {
		if u := &m.users[i]; (from < 0 || u.at < from) && containsWord(strings.ToLower(u.text), w) {
			from = u.at
		}
	}
	return from
}

// said is the message as the briefing quotes it: whole, or up to where it
// repeats a pinned message, which it then names.
func (u *userMsg) said() string {
	if u.repeatAt == 0 {
		return u.text
	}
	return strings.TrimRight(u.text[:u.repeatAt], "\n ") + " […the rest repeats the pinned message " + u.repeatOf + " word for word]"
}

// repeatsHead finds where a user message starts repeating one of the pinned
// messages word for word to its end, the harness's status lines aside: a
// task followed by the standing instructions the harness also put in the
// first message. It returns the offset, at a line start past the opening
// eval and readers match the message by, and the pinned message's id; or
// 0, "".
func repeatsHead(t string, head []briefd.Message) (int, string) {
	const keep, least = 120, 400
	if len(t) < keep+least {
		return 0, ""
	}
	core := t
	for {
		i := strings.LastIndexByte(core, '\n')
		if i < 0 || !harnessStatusLine(strings.TrimSpace(core[i+1:])) {
			break
		}
		core = strings.TrimRight(core[:i], "\n ")
	}
	for o := keep; o < len(core)-least; {
		i := strings.IndexByte(core[o:], '\n')
		if i < 0 {
			break
		}
		o += i + 1
		if len(core)-o < least {
			break
		}
		for k := range head {
			if strings.Contains(head[k].Content.String(), core[o:]) {
				return o, head[k].ID
			}
		}
	}
	return 0, ""
}

// harnessStatusLine reports a line an agent harness appends to what it
// sends (SWE-agent's open file, directory and prompt).
func harnessStatusLine(t string) bool {
	return strings.HasPrefix(t, "(Open file:") || strings.HasPrefix(t, "(Current directory:") || t == "bash-$" || t == ""
}

// harnessKey tells harness reminders apart by their opening, whitespace
// folded (a folded briefing's quote lost its blank lines).
func harnessKey(t string) string {
	return headOf(strings.Join(strings.Fields(strings.TrimSuffix(t, " […]")), " "), 100)
}

// harnessQuote is how much of a harness message or a tool error in the
// user role the briefing quotes verbatim: enough to recognise it.
const harnessQuote = 130

// Harness reminders: the agent framework's own messages in the user role.
var harnessRe = regexp.MustCompile(`^(?:Please always provide EXACTLY ONE action|Your (?:last )?(?:output|response) (?:must|did not|was)|Please format your (?:response|output)|Invalid format|Your command ran successfully and did not produce any output|The output of your last command was too long)`)

func isHarness(t string) bool { return harnessRe.MatchString(t) }

// Tool errors in the user role (OpenHands error observations without a
// call are converted that way).
var toolErrorRe = regexp.MustCompile(`^(?:Parameter '.+' is expected to be one of|ERROR:|Invalid .* parameter|Error: (?:Invalid|Missing|Unknown) |Tool .* (?:failed|not found)|Missing required parameter)`)

func isToolError(t string) bool { return toolErrorRe.MatchString(t) }

// stripThought drops a framework's "THOUGHT:" label and code blocks (the
// command is read from the call).
func stripThought(text string) string {
	t := strings.TrimSpace(text)
	t = strings.TrimPrefix(t, "THOUGHT:")
	t = strings.TrimPrefix(t, "Thought:")
	if strings.Contains(t, "```") {
		var b strings.Builder
		in := false
		for _, l := range strings.Split(t, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				in = !in
				continue
			}
			if !in {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		t = b.String()
	}
	return strings.TrimSpace(t)
}

// readAssistant keeps decisions, intentions and questions to the user.
func (m *model) readAssistant(msg *briefd.Message, thought string, tf *textFacts) {
	if thought == "" {
		return
	}
	for k, s := range tf.intents {
		// The message's last intention, or one with nothing to match a
		// call by, is what the message's own call carries out; others are
		// matched below.
		own := len(msg.ToolCalls) > 0 && (k == len(tf.intents)-1 && !laterRe.MatchString(s) || len(keyWords(s)) == 0)
		m.intents = append(m.intents, note{id: msg.ID, n: len(m.steps), text: s, done: own})
	}
	for _, s := range tf.decisions {
		if m.quotesHead(s) {
			continue // the task's own words, quoted: pinned, not a finding
		}
		if !slices.ContainsFunc(m.notes, func(n note) bool { return n.text == s }) {
			m.notes = append(m.notes, note{id: msg.ID, n: len(m.steps), text: s})
		}
	}
	if len(msg.ToolCalls) == 0 && m.dialogue {
		m.asked = &note{id: msg.ID, n: len(m.steps), text: thought}
		m.told = append(m.told, note{id: msg.ID, n: len(m.steps), text: thought, onlyAsks: onlyAsks(plainText(thought))})
	}
}

var (
	intentRe = regexp.MustCompile(`(?i)^(?:now,? |next,? |then,? |first,? |finally,? |(?:after|once|when|if) [^,]{1,60}, )?(?:I will|I'll|I am going to|I'm going to|let me|let's|I need to|we need to|I should|I want to|my next step|the next step)\b`)
	// decisionRe marks a sentence that decides, explains a cause, or
	// concludes from evidence.
	decisionRe = regexp.MustCompile(`(?i)\b(?:it(?:'s| is) (?:possible|likely) that|(?:is|are) (?:likely|probably) (?:related|caused|due)|instead|decided|decide to|revert|because|root cause|the (?:issue|problem|bug|fix|cause|reason) (?:is|was|lies)|lies (?:in|within)|this means|which means|means that|rather than|not needed|unnecessary|confirms?|confirmed|is fixed|are fixed|works now|now works|still fails|so I should|I should (?:not|keep|only|revert|change|use|also)|we should (?:not|keep|only|use)|must (?:not|be|use))\b`)
)

// isIntention reports a sentence in which the agent says what it will do;
// "let me know" asks the user instead ("If you have any further
// questions, let me know.").
func isIntention(s string) bool {
	loc := intentRe.FindStringIndex(s)
	return loc != nil && !strings.HasPrefix(strings.ToLower(s[loc[1]:]), " know")
}

// hypothesisRe marks a lead rather than a decision.
var hypothesisRe = regexp.MustCompile(`(?i)\b(?:possible|likely|probably|might|suspect)\b`)

// laterRe marks an intention for after the message's own call.
var laterRe = regexp.MustCompile(`(?i)^(?:after|once|when|then|next|later|finally|afterwards)\b`)

// isDecision keeps a marked sentence that names something (code, a path, an
// identifier): "it works" alone tells the next agent nothing.
func isDecision(s string) bool {
	if len(s) < 30 || strings.HasSuffix(s, "?") || !decisionRe.MatchString(s) {
		return false
	}
	switch strings.TrimRight(strings.Fields(s)[0], ",") {
	case "Maybe", "Perhaps", "Wait", "Hmm", "Possibly", "If", "Unless":
		return false // speculation, not a decision
	}
	if strings.Contains(s, "`") || len(ident.Identifiers(s)) > 0 || len(keyWords(s)) > 0 {
		return true
	}
	// A hypothesis names its subject in plain words: "Perl's open
	// function", "a CGI vulnerability".
	return hypothesisRe.MatchString(s) && properNounRe.MatchString(s[1:])
}

var properNounRe = regexp.MustCompile(`\b[A-Z][A-Za-z]{2,}`)

// sentences splits prose into sentences, dropping code lines and list
// markers.
func sentences(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		p := strings.TrimSpace(para)
		if strings.HasPrefix(p, ">") {
			continue // a block quote is someone else's words (the issue's)
		}
		p = strings.TrimLeft(p, "-*• ")
		if !strings.Contains(p, "`") {
			// Markdown bold ("**Reservation 59XX6W** can be canceled"), whose
			// opening marks the list-marker trim took.
			p = strings.ReplaceAll(p, "**", "")
		}
		if p == "" || strings.HasPrefix(p, "#") && !strings.HasPrefix(p, "# ") {
			continue
		}
		for p != "" {
			i := sentenceEnd(p)
			s := strings.TrimSpace(p[:i])
			p = strings.TrimSpace(p[i:])
			if len(s) >= 12 {
				out = append(out, s)
			}
		}
	}
	return out
}

// sentenceEnd returns the end of the first sentence of p: after ". ", "! ",
// "? " (not inside a path, a number or `code`), or the whole paragraph.
func sentenceEnd(p string) int {
	code := false
	for i := 0; i < len(p)-1; i++ {
		c := p[i]
		if c == '`' {
			code = !code
		}
		if code {
			continue
		}
		if (c == '.' || c == '!' || c == '?') && p[i+1] == ' ' && i > 0 && p[i-1] != '.' {
			return i + 1
		}
		if (c == '.' || c == '!' || c == '?') && p[i+1] >= 'A' && p[i+1] <= 'Z' && i > 0 && proseWord(p[i+1:]) &&
			(p[i-1] >= 'a' && p[i-1] <= 'z' || strings.IndexByte(")`\"'", p[i-1]) >= 0 && sentenceStarts(p[i+1:])) {
			// "message.Next, I'll", "totient).The code" (a missing
			// space), not "sympy.Array(3)" nor "reflect.ValueOf(v).Elem is"
			return i + 1
		}
	}
	return len(p)
}

// sentenceStarts reports whether s starts with a word that opens
// sentences (The, This, I, So, …): after a closing parenthesis or quote,
// a capital word may be a selector (".Elem", ".Header").
func sentenceStarts(s string) bool {
	w, _, _ := strings.Cut(s, " ")
	w = strings.TrimRight(w, ",")
	switch w {
	case "The", "This", "That", "These", "Those", "It", "Its", "I", "I'll", "I'm", "We", "So", "Now", "Then", "Since", "Given",
		"To", "Let's", "Each", "But", "And", "If", "In", "A", "An", "My", "Our", "Next", "Also", "However", "Once", "There":
		return true
	}
	return false
}

// proseWord reports whether s starts with a word of prose: letters (and
// an apostrophe) ended by a space, a comma or the end, not by the '(',
// '.', '_' or digit of a name in code.
func proseWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '\'':
		case c == ' ' || c == ',' || c == ':' || c == ';':
			return true
		default:
			return false
		}
	}
	return true
}

// countIdents counts one message's distinct identifiers.
func (m *model) countIdents(ids []string, spoken bool) {
	n := len(m.steps)
	for _, id := range ids {
		u := m.ids[id]
		if u == nil {
			u = &identUse{}
			m.ids[id] = u
			m.idOrder = append(m.idOrder, id)
			m.idUses = append(m.idUses, u)
		}
		u.msgs++
		u.spoken = u.spoken || spoken
		u.last = n
	}
}

// addStep files a step and what it did to files, records and errors.
func (m *model) addStep(s *step) {
	f := s.f
	o := &f.out
	s.failed = stepFailed(f)
	if len(o.lines) > 0 {
		if m.lastRun == nil {
			m.lastRun = map[string]*step{}
		}
		s.prevRun = m.lastRun[f.call.label]
		m.lastRun[f.call.label] = s
		if h := f.call.lastHead; h != "" && (f.call.kind == kindRun || f.call.kind == kindTest || f.call.ranAfterChange) {
			// "cat >> reproduce_issue.py … && python3 reproduce_issue.py"
			// ran the script "python3 reproduce_issue.py" ran before: its
			// news is what that run did not print.
			if s.prevRun == nil {
				s.prevRun = m.lastRun["\x00run "+h]
			}
			m.lastRun["\x00run "+h] = s
		}
	}
	m.steps = append(m.steps, s)
	for _, op := range f.call.ops {
		if op.op == kindDelete && f.call.ranAfterChange && !s.failed && strings.Contains(o.body, strings.TrimSuffix(op.path, "/")+"/") {
			// "rm -rf migrations && python manage.py makemigrations": the
			// run made the directory again (its output names what it put
			// there); it is not gone.
			continue
		}
		m.fileOp(s, op)
	}
	for _, p := range o.missing {
		if fs := m.file(p, f.call.kind == kindList || f.call.kind == kindView); fs != nil && len(fs.changes) == 0 && fs.created == "" {
			fs.missing = true
			fs.n = s.n
			fs.views = appendNew(fs.views, s.id())
		}
	}
	switch f.call.kind {
	case kindLookup, kindMutate, kindOther:
		m.readRecords(s)
	case kindFinish:
		m.finished = s
	}
	m.trackError(s)
}

// stepFailed decides whether a step failed: a non-zero exit (but grep's
// "no match"), a timeout, failing tests, an editor's refusal, or, where the
// tool reports no exit status, an error line. A file view's content may
// hold error-like lines, so there only the tool's own complaints count.
func stepFailed(f *stepFacts) bool {
	o := &f.out
	k := f.call.kind
	switch {
	case o.timeout || len(o.failed) > 0 && !o.testsOK:
		return true
	case o.hasExit && o.exit != 0:
		return !(k == kindSearch && o.exit == 1 && o.errLine == "")
	case o.hasExit:
		return k == kindEdit && editFailed(o)
	case k == kindEdit && editFailed(o):
		return true
	case o.errLine == "":
		return false
	case k == kindView || k == kindSearch || k == kindList || k == kindWrite || k == kindEdit:
		return toolComplaint(o.errLine)
	}
	return true
}

// toolComplaint reports an error line written by the tool, not read from a
// file.
func toolComplaint(line string) bool {
	return strings.HasPrefix(line, "ERROR") || strings.HasPrefix(line, "Error:") || strings.HasPrefix(line, "error:") ||
		strings.Contains(line, "No such file") || strings.Contains(line, "cannot access") || strings.Contains(line, "command not found") ||
		strings.Contains(line, "Permission denied")
}

// editFailed reports an editor's refusal ("No replacement was performed").
func editFailed(o *output) bool {
	for _, l := range headLines(o.lines, 4) {
		if strings.Contains(l, "No replacement was performed") || strings.Contains(l, "did not appear verbatim") ||
			strings.Contains(l, "Your proposed edit has introduced new syntax error") ||
			strings.Contains(l, "edit was not applied") || strings.Contains(l, "NOT applied") {
			return true
		}
	}
	return false
}

func headLines(l []string, n int) []string {
	if len(l) > n {
		return l[:n]
	}
	return l
}

// file returns the state of a path, matching relative and absolute forms of
// the same file; it creates one when create is set.
func (m *model) file(p string, create bool) *fileState {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	if p == "" || p == "." || p == "/dev/null" || strings.ContainsAny(p, "*?$`()<>|;&{}") || isNumber(p) {
		return nil
	}
	if f, ok := m.files[p]; ok {
		return f
	}
	for _, k := range m.fileKeys {
		if strings.HasSuffix(k, "/"+p) || strings.HasSuffix(p, "/"+k) {
			f := m.files[k]
			m.journal(p, f)
			if len(p) > len(f.path) {
				f.path = p
			}
			m.files[p] = f
			return f
		}
	}
	if !create {
		return nil
	}
	m.journal(p, nil)
	f := &fileState{path: p}
	m.files[p] = f
	m.fileKeys = append(m.fileKeys, p)
	return f
}

// fileOp applies one operation to the file states.
func (m *model) fileOp(s *step, op fileOp) {
	if op.path == "" {
		return
	}
	if op.op == kindWrite && op.what == stashPopped {
		// git stash pop: the changes the last stash undid are back.
		for _, k := range m.fileKeys {
			f := m.files[k]
			if n := len(f.undone); n > 0 && strings.Contains(f.undone[n-1].what, "stash") && !s.failed {
				f.changes = append(f.undone[n-1].changes, change{id: s.id(), what: "stashed, then re-applied"})
				f.undone = f.undone[:n-1]
			}
		}
		return
	}
	if op.op == kindRevert && op.path == "." {
		// git stash / checkout .: every changed file is back.
		for _, k := range m.fileKeys {
			f := m.files[k]
			if len(f.changes) > 0 && !s.failed {
				f.undone = append(f.undone, undo{id: s.id(), what: op.what, changes: f.changes, why: undoReason(s.said)})
				f.changes = nil
			}
		}
		return
	}
	f := m.file(op.path, true)
	if f == nil {
		return
	}
	if op.dir != "" && f.dir == "" && !strings.Contains(f.path, "/") {
		f.dir = op.dir
	}
	f.n = s.n
	s.files = appendNew(s.files, f.path)
	switch op.op {
	case kindView:
		f.views = append(f.views, s.id())
		if op.what != "" {
			f.viewed = appendNew(f.viewed, op.what)
		}
		if o := &s.f.out; o.file != "" && o.fileLines > 0 && o.fileLines <= smallFileLines && !s.failed {
			if c := editorContent(o.lines); c != "" {
				f.content = c
			}
		}
	case kindRun:
		f.runs = append(f.runs, s.id())
		f.lastRun = s
		if !s.failed {
			for _, w := range f.writes {
				m.fileOp(s, fileOp{path: w, op: kindEdit, what: "rewritten by running " + f.path + f.effect})
			}
		}
	case kindSearch:
	case kindWrite:
		if s.failed && !runAfter(s, op) {
			return
		}
		if f.created == "" && len(f.changes) == 0 && len(f.views) == 0 {
			f.created = s.id()
		} else {
			// A whole rewrite supersedes the edits before it.
			what := "rewritten whole"
			if rest, ok := strings.CutPrefix(op.what, "written"); ok {
				what += rest
			} else {
				what += " (" + op.what + ")"
			}
			f.changes = []change{{id: s.id(), what: what}}
		}
		f.deleted, f.movedTo = "", ""
		f.content, f.outline, f.writes, f.effect = "", "", op.writes, op.effect
		if op.body != "" && strings.Count(op.body, "\n") <= smallFileLines {
			f.content = strings.TrimRight(op.body, "\n")
		} else {
			f.outline = op.outline
		}
	case kindEdit:
		if s.failed && !runAfter(s, op) {
			return
		}
		f.effect = "" // an edited script no longer writes what its text said
		if is := inverseChanges(f.changes, op.what); len(is) > 0 {
			// s/"auth"/auth/ after s/auth/"auth"/: the file is as it was.
			u := undo{id: s.id(), what: "the reverse edit", why: undoReason(s.said)}
			if strings.HasPrefix(op.what, "deleted each line matching ") {
				u.what = op.what // sed '/DEBUG/d': the pattern says what went
			}
			for k := len(is) - 1; k >= 0; k-- {
				u.changes = append(u.changes, f.changes[is[k]])
				f.changes = slices.Delete(f.changes, is[k], is[k]+1)
			}
			slices.Reverse(u.changes)
			f.undone = append(f.undone, u)
			f.content = ""
			return
		}
		what := op.what
		if s.f.out.file != "" { // an editor's echo of the edited file
			what = withAnchorText(what, s.f.out.lines)
		}
		f.changes = append(f.changes, change{id: s.id(), what: what, noop: op.noop})
		f.content = ""                     // the outline of the text written stays: an edit changes a part
		f.outline = withoutGist(f.outline) // not the statements it quotes, which it may change
		if o := &s.f.out; o.file != "" && o.fileLines > 0 && o.fileLines <= smallFileLines {
			f.content = editorContent(o.lines)
		}
	case kindDelete:
		if s.failed {
			return
		}
		f.deleted = s.id()
		f.movedTo = op.into
		m.takeAlong(s, f.path, f.movedTo)
	case kindRevert:
		if s.failed {
			return
		}
		if len(f.changes) > 0 || f.created != "" {
			f.undone = append(f.undone, undo{id: s.id(), what: op.what, changes: f.changes, why: undoReason(s.said)})
		}
		f.changes = nil
		f.content = ""
	}
}

// takeAlong removes the files known under a directory that was removed
// or moved ("rm -rf .a", "mv .a reproduction/"): without it, the files of
// a moved directory read as still present where they no longer are.
func (m *model) takeAlong(s *step, dir, movedTo string) {
	dir = strings.TrimSuffix(dir, "/") + "/"
	for _, k := range m.fileKeys {
		c := m.files[k]
		if !strings.HasPrefix(c.path, dir) || c.deleted != "" {
			continue
		}
		c.deleted, c.movedTo, c.n = s.id(), movedTo, s.n
		s.files = appendNew(s.files, c.path)
	}
}

// withAnchorText adds to "inserted after line 317: `x`" the text of line
// 317 as the editor's echo of the edit shows it ("inserted after line 317
// `return pattern_type;`: `x`"): a line number alone hides an insertion
// that landed after a return, where it never runs.
func withAnchorText(what string, echo []string) string {
	rest, ok := strings.CutPrefix(what, "inserted after line ")
	if !ok {
		return what
	}
	n, text, ok := strings.Cut(rest, ": ")
	if !ok || !isNumber(n) {
		return what
	}
	for k, l := range echo {
		// The kept lines have their whitespace folded: "317 return x;".
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), n); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t' || rest[0] == ':') {
			t := strings.TrimSpace(rest[1:])
			if t == "" {
				break
			}
			out := "inserted after line " + n + " " + quoteCode(t, 60) + ": " + text
			if word := leavingStatement(t); word != "" && unreachableAfter(text, echo[k+1:]) {
				out += " (after a " + word + ", before the next label: it never runs)"
			}
			return out
		}
	}
	return what
}

// leavingStatement returns the keyword of a C-like statement that leaves
// its block ("return pattern_type;" gives "return"), else "".
func leavingStatement(line string) string {
	word := strings.TrimRight(strings.Fields(line)[0], ";")
	if word != "return" && word != "break" && word != "continue" && word != "goto" || !strings.HasSuffix(line, ";") {
		return ""
	}
	return word
}

// unreachableAfter reports code inserted after a statement that leaves
// its block and before the next case label or the block's end in the
// editor's echo: no path reaches it. inserted is the quoted text (a label
// itself is reachable).
func unreachableAfter(inserted string, after []string) bool {
	first := strings.TrimPrefix(inserted, "`")
	if strings.HasPrefix(first, "case ") || strings.HasPrefix(first, "default") || strings.HasPrefix(first, "}") {
		return false
	}
	for _, l := range after {
		f := strings.Fields(l)
		if len(f) < 2 || !isNumber(f[0]) {
			continue // a blank line of the echo, or not an echo line
		}
		if f[1] == "case" || strings.HasPrefix(f[1], "default:") || f[1] == "}" || strings.HasPrefix(f[1], "};") {
			return true
		}
	}
	return false
}

// smallFileLines is the size up to which a file written in the span is
// carried whole: a scratch script the agent will run or upload again.
const smallFileLines = 12

var numberedLineRe = regexp.MustCompile(`^\s*(\d+)[:\t]\s?(.*)$`)

// editorContent is a file's content from an editor's numbered echo.
func editorContent(lines []string) string {
	var b strings.Builder
	n := 0
	for _, l := range lines {
		if m := numberedLineRe.FindStringSubmatch(l); m != nil {
			b.WriteString(m[2])
			b.WriteByte('\n')
			n++
		}
	}
	if n == 0 || n > smallFileLines {
		return ""
	}
	return strings.TrimRight(b.String(), "\n")
}

// readRecords files the records a lookup read or a change returned.
func (m *model) readRecords(s *step) {
	f := s.f
	if s.failed {
		return
	}
	// A list of records (search results) is a finding told by its step; a
	// single record, or what a change returned, is an object in play.
	if len(f.records) > 1 && f.call.kind != kindMutate {
		return
	}
	for _, r := range f.records {
		if r.id == "" {
			continue
		}
		rs := m.records[r.id]
		if rs == nil {
			rs = &recordState{id: r.id}
			m.records[r.id] = rs
			m.recKeys = append(m.recKeys, r.id)
		}
		rs.rec = r
		rs.n = s.n
		s.records = appendNew(s.records, r.id)
		if f.call.kind == kindMutate {
			rs.changed = append(rs.changed, s.id())
			rs.status = recordStatus(r)
		} else {
			rs.readAt = s.id()
		}
		for name, ids := range r.lists {
			m.lists = append(m.lists, idList{id: s.lastID(), owner: r.id, field: name, ids: ids})
		}
	}
	if f.call.kind == kindMutate && len(f.records) == 0 && f.call.target != "" {
		rs := m.records[f.call.target]
		if rs != nil {
			rs.changed = append(rs.changed, s.id())
			rs.status = clip(firstNonEmpty(f.out.short), 80)
		}
	}
}

func recordStatus(r record) string {
	for _, f := range r.fields {
		if f.name == "status" {
			return f.value
		}
	}
	return "changed"
}

func firstNonEmpty(s []string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// attemptShape is an error message with what it quotes left out ("old_str
// `…` did not appear verbatim in …"): two rejections of an edit alike but
// for the text they quote have the same shape.
func attemptShape(line string) string {
	return quotedRe.ReplaceAllString(line, "…")
}

var quotedRe = regexp.MustCompile("`[^`]*`|'[^'\n]*'|\"[^\"\n]*\"")

// sideCommandRe matches an error of a file command beside the run ("cat:
// /tmp/debug.log: No such file or directory" after sphinx-build): the run
// itself started, so a later run that fails otherwise did not get past it.
var sideCommandRe = regexp.MustCompile(`^(?:cat|head|tail|ls|rm|grep|cd|wc|cp|mv|sed|nl|less|tee): `)

// stepKey names what a step attempted, so that a later success of the same
// thing resolves an earlier failure: the kind and target.
func stepKey(s *step) string {
	c := &s.f.call
	switch c.kind {
	case kindLookup, kindMutate, kindOther:
		if c.args != nil {
			return c.tool
		}
	}
	return c.kind.String() + " " + c.target
}

// ranTests reports whether a step that worked got as far as a test run
// that could not start would have: a test command that reports no tests
// ("python3 tests/test_basic.py" prints nothing and exits 0) ran none, so
// it does not resolve "No module named pytest".
func ranTests(s *step) bool {
	return s.f.call.kind != kindTest || s.f.out.tests != ""
}

// trackError records a failed step's error, and resolves earlier errors of
// the same thing when this step succeeds.
func (m *model) trackError(s *step) {
	o := &s.f.out
	key := stepKey(s)
	if s.failed && len(o.missing) > 0 && (s.f.call.kind == kindList || s.f.call.kind == kindView || s.f.call.kind == kindSearch || s.f.call.kind == kindDelete) {
		return // a path that does not exist is a finding, told by its file line
	}
	kindKey := "any " + s.f.call.kind.String()
	if !s.failed {
		for _, e := range m.errors {
			if e.resolved == "" && (e.key == key || e.key == kindKey && ranTests(s) || e.lastHead != "" && e.lastHead == s.f.call.lastHead) {
				e.resolved, e.resolvedBy = s.id(), s
				e.fix = m.fixBetween(e, s)
			}
		}
		return
	}
	if cleanupMissingRe.MatchString(o.errLine) {
		return // removing what is not there leaves things as wanted
	}
	line, raisedBy := o.errLine, o.raisedBy
	if line == "" {
		switch {
		case o.timeout:
			line = "timed out"
		case len(o.failed) > 0:
			line = "failing: " + strings.Join(headLines(o.failed, 2), "; ")
		case o.hasExit:
			line = "exit " + strconv.Itoa(o.exit)
			if l := firstNonEmpty(o.short); l != "" {
				line += ": " + clip(l, 160)
			}
		default:
			return
		}
	}
	// A run of a kind whose earlier run could not start (a module or file
	// not found), failing otherwise, got past that: it resolves it; so
	// does a later run of the same command that fails otherwise after an
	// error that stops a program before it runs (a syntax or import error).
	for _, e := range m.errors {
		if e.resolved == "" && e.line != line && (e.key == kindKey || e.lastHead != "" && e.lastHead == s.f.call.lastHead && earlyErrorRe.MatchString(e.line) || m.fixedWhereRaised(e, s, line) || passedSince(e, s, key)) {
			e.resolved, e.resolvedBy = s.id(), s
			e.fix = m.fixBetween(e, s)
		}
	}
	if invocationRe.MatchString(line) && (s.f.call.kind == kindTest || s.f.call.kind == kindRun) && !sideCommandRe.MatchString(line) {
		// The command could not start (a module or file not found): any
		// later run of the same kind that works went past it.
		key = kindKey
	}
	for _, e := range m.errors {
		if e.line == line && e.key == key && e.resolved == "" && syntaxMovedOn(e.at, o.errAt, line) &&
			syntaxSource(e.lastFailed.f.out.lines) != syntaxSource(o.lines) {
			// The same syntax error further down the same file, at
			// another source line (not the same one pushed down by lines
			// inserted above it): Python stops at the first one, so the
			// one before is gone, and this is another.
			e.resolved, e.resolvedBy = s.id(), s
			e.fix = m.fixBetween(e, s)
			continue
		}
		// A side command's error ("cat: /tmp/debug.log: No such file or
		// directory") is one error whatever line it came from.
		if e.line == line && (e.key == key || sideCommandRe.MatchString(line)) && e.resolved == "" {
			if o.errLine != "" && o.tests == "" && samePlace(o.errAt, e.first.f.out.errAt) {
				s.sameErr = e.first
			}
			if inFunction(o.errAt) && inFunction(e.at) && o.errAt != e.at {
				// Where it is raised now: in another function (save, after
				// parse), or in the same one further down, below lines
				// inserted above it (debug prints): the line to open. (A
				// syntax error pushed down by lines inserted above it keeps
				// its first place.)
				e.at = o.errAt
			}
			e.ids = append(e.ids, s.id())
			e.lastFailed = s
			e.n = s.n
			e.count++
			e.raisedBy = raisedBy
			return
		}
		// An edit rejected again, for the same reason but with other
		// text quoted (another old_str): one error, in its newest words.
		if s.f.call.kind == kindEdit && e.key == key && e.resolved == "" && e.lastFailed.f.call.kind == kindEdit && attemptShape(e.line) == attemptShape(line) && attemptShape(line) != line {
			e.line = line
			e.at = o.errAt
			e.ids = append(e.ids, s.id())
			e.lastFailed = s
			e.n = s.n
			e.count++
			e.reworded = true
			return
		}
	}
	m.errors = append(m.errors, &errState{line: line, at: o.errAt, ids: []string{s.id()}, key: key, n: s.n, count: 1, lastHead: s.f.call.lastHead, lastFailed: s, first: s, raisedBy: raisedBy})
}

// samePlace reports whether two sightings of an error were raised in the
// same place: the same frame, or the same function of the same file at
// another line (a debug line added above it moves the number). A KeyError
// raised in save after one raised in parse is the run getting further.
func samePlace(a, b string) bool {
	if a == b {
		return true
	}
	if !inFunction(a) || !inFunction(b) {
		return false // a syntax error's place is its line
	}
	return lineNoRe.ReplaceAllString(a, "") == lineNoRe.ReplaceAllString(b, "")
}

var lineNoRe = regexp.MustCompile(` line \d+`)

// inFunction reports a place that names its function ("x.py line 10 in
// parse"); a syntax error's names its line alone.
func inFunction(at string) bool { return strings.Contains(at, " in ") }

// syntaxMovedOn reports an error that stops a program before it runs
// (line), raised at now, further down the file it was raised in before
// (at): "… constraints.py line 144" after "… constraints.py line 135".
func syntaxMovedOn(at, now, line string) bool {
	if at == "" || now == "" || at == now || !syntaxErrorRe.MatchString(line) {
		return false // (an import error's place moves with the lines above it)
	}
	f1, l1, ok1 := strings.Cut(at, " line ")
	f2, l2, ok2 := strings.Cut(now, " line ")
	if !ok1 || !ok2 || f1 != f2 {
		return false
	}
	n1, err1 := strconv.Atoi(strings.Fields(l1 + " ")[0])
	n2, err2 := strconv.Atoi(strings.Fields(l2 + " ")[0])
	return err1 == nil && err2 == nil && n2 > n1
}

// syntaxErrorRe matches an error Python raises at the source line it
// cannot parse.
var syntaxErrorRe = regexp.MustCompile(`\b(?:SyntaxError|IndentationError|TabError)\b`)

// syntaxSource is the source line a syntax error report quotes: the line
// after its last `File "x.py", line N` (without "in f": a parse error
// has no function); "" when there is none.
func syntaxSource(lines []string) string {
	src := ""
	for i, l := range lines {
		if m := frameRe.FindStringSubmatch(l); m != nil && m[3] == "" && i+1 < len(lines) {
			src = strings.TrimSpace(lines[i+1])
		}
	}
	return src
}

// expected reports an error that is no fault left open: the agent
// explained it as the expected behaviour, or the test raised it itself.
func (e *errState) expected() bool { return e.explainedAt != "" || e.raisedBy != "" }

// fixedWhereRaised reports a run of the same command as e's that fails
// otherwise (line) after the file e was raised in was changed: the run
// got past it ("AttributeError: … 'MutableMapping'" raised in cookies.py,
// cookies.py edited, the tests then fail on 'Callable'). Not when the new
// failure stops a program before it runs (a syntax or import error): the
// old error may still be behind it.
func (m *model) fixedWhereRaised(e *errState, s *step, line string) bool {
	if e.at == "" || earlyErrorRe.MatchString(line) || e.key != stepKey(s) && (e.lastHead == "" || e.lastHead != s.f.call.lastHead) {
		return false
	}
	where, _, _ := strings.Cut(e.at, " line ")
	f := m.knownFile(where)
	if f == nil {
		return false
	}
	for _, t := range m.steps[e.n+1 : s.n] {
		if t.f.call.kind.changes() && !t.failed && slices.ContainsFunc(t.files, func(p string) bool { return m.knownFile(p) == f }) {
			return true
		}
	}
	return false
}

// hollowPass returns the later error that shows the run resolving e did
// not load the code it stood for: a syntax error raised, within the next
// hollowWindow steps, in a file that changed before that run and not
// again until the error, by a program the run named (in its line or its
// output). "python3 reproduce_issue.py" printed PASS because the pylint
// it ran crashed on the pylinter.py that update_pylinter.py had broken,
// as "pylint ." showed two calls later.
func (m *model) hollowPass(e *errState, syntax []syntaxError) *errState {
	r := e.resolvedBy
	if r == nil {
		return nil
	}
	k, _ := slices.BinarySearchFunc(syntax, r.n+1, func(x syntaxError, n int) int { return x.first - n })
	for _, x := range syntax[k:] {
		if x.first > r.n+hollowWindow {
			break
		}
		if x.err == e || !namesProgram(r.f.call.label, x.prog) && !namesProgram(r.f.out.body, x.prog) {
			continue
		}
		f := m.knownFile(x.where)
		if f == nil {
			continue
		}
		before, between := false, false
		for _, c := range f.changes {
			switch n := m.stepAt(c.id); {
			case n < r.n:
				before = true
			case n < x.first:
				between = true
			}
		}
		if before && !between {
			return x.err
		}
	}
	return nil
}

// namesProgram reports whether t names program prog as a word of its own
// ("pylint --recursive=y ." names pylint; "test_reproduce.py" does not
// name reproduce.py).
func namesProgram(t, prog string) bool {
	return containsBetween(t, prog,
		func(c byte) bool { return strings.IndexByte(" \t\n/'\"`", c) >= 0 }, // "/usr/bin/pylint"
		func(c byte) bool { return strings.IndexByte(" \t\n'\"`:", c) >= 0 })
}

// hollowWindow is how many steps after a pass a syntax error may show it
// hollow: the agent runs the program itself soon, or the pass stood.
const hollowWindow = 12

// syntaxError is an error a program raised before it ran: where it was
// first seen, the program that raised it, and the file it was raised in.
type syntaxError struct {
	err         *errState
	first       int
	prog, where string
}

// syntaxErrors are the span's syntax errors, by their first step.
func (m *model) syntaxErrors() []syntaxError {
	var out []syntaxError
	for _, x := range m.errors {
		if x.at == "" || len(x.ids) == 0 || !strings.Contains(x.line, "SyntaxError") && !strings.Contains(x.line, "IndentationError") && !strings.Contains(x.line, "TabError") {
			continue
		}
		first := m.stepAt(x.ids[0])
		if first >= len(m.steps) {
			continue
		}
		prog, rest, _ := strings.Cut(x.lastHead, " ")
		if prog == "python" || prog == "python3" {
			prog = rest // the script it ran
		}
		if prog == "" {
			continue
		}
		where, _, _ := strings.Cut(x.at, " line ")
		out = append(out, syntaxError{err: x, first: first, prog: prog, where: where})
	}
	slices.SortStableFunc(out, func(a, b syntaxError) int { return a.first - b.first })
	return out
}

// passedSince reports a run of the same tests as e's that fails on other
// tests only: the tests e failed on ran and passed ("test_pkgfile" failed,
// then the same file's run fails on test_collect_sub_with_symlinks).
func passedSince(e *errState, s *step, key string) bool {
	if e.key != key || e.lastFailed == nil || s.f.call.kind != kindTest {
		return false
	}
	was, now := failedTests(e.lastFailed), failedTests(s)
	if len(was) == 0 || len(now) == 0 || len(now) >= maxFailedListed {
		return false // a list cut short may leave e's tests out
	}
	for _, t := range was {
		if slices.Contains(now, t) {
			return false
		}
	}
	return true
}

// failedTests are the names of the tests a step's output says failed.
func failedTests(s *step) []string {
	var out []string
	for _, t := range s.f.out.failed {
		if !strings.HasPrefix(t, "first assertion: ") {
			out = append(out, t)
		}
	}
	return out
}

// knownFile is the file state a path names, as file finds it, without
// adding the path's form to the model.
func (m *model) knownFile(p string) *fileState {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	if f, ok := m.files[p]; ok {
		return f
	}
	for _, k := range m.fileKeys {
		if pathSuffix(k, p) || pathSuffix(p, k) {
			return m.files[k]
		}
	}
	return nil
}

// pathSuffix reports whether path ends with "/"+tail, without building
// that string: knownFile asks it of every file for every error.
func pathSuffix(path, tail string) bool {
	return len(path) > len(tail) && path[len(path)-len(tail)-1] == '/' && strings.HasSuffix(path, tail)
}

// installedNothing reports an install that found everything in place.
func installedNothing(s *step) bool {
	b := s.f.out.body
	return strings.Contains(b, "Requirement already satisfied") && !strings.Contains(b, "Successfully installed") ||
		strings.Contains(b, "is already the newest version") && !strings.Contains(b, "Setting up")
}

// unrelated reports an open error the agent, reading it, judged not its
// own: a failure that was there before its change.
func (e *errState) unrelated() bool {
	if e.lastFailed == nil {
		return false
	}
	if e.expected() {
		return true
	}
	// Read once per text, as open reads its reaction: a warm model keeps
	// the error while its last failure and that one's reaction change.
	if r := e.lastFailed.react; r != e.judged {
		e.judged, e.unrelatedTo = r, unrelatedRe.MatchString(headOf(r, 600))
	}
	return e.unrelatedTo
}

// readExplanation marks the newest open error of the last few steps as
// explained when the agent says a finding explains it ("xfail_strict =
// true is set. That explains why it failed with XPASS(strict)."): the
// failure is the expected behaviour, not a bug still open.
func (m *model) readExplanation(id string, after *step, thought string) {
	head := headOf(thought, 600)
	if !strings.Contains(head, "xplain") && !strings.Contains(head, "xpected") {
		return // most messages: the regexp is not run
	}
	loc := explainedRe.FindStringIndex(head)
	if loc == nil {
		return
	}
	var newest *errState
	for _, e := range m.errors {
		if e.open() && e.lastFailed != nil && e.lastFailed.n >= after.n-3 && (newest == nil || e.n > newest.n) {
			newest = e
		}
	}
	if newest == nil || newest.explainedAt != "" {
		return
	}
	// The sentence that says so, with the one before it (the finding).
	start := strings.LastIndex(thought[:loc[0]], ". ")
	if start >= 0 {
		start = strings.LastIndex(thought[:start], ". ")
	}
	end := loc[1] + strings.IndexAny(thought[loc[1]:]+".", ".\n")
	newest.explainedAt, newest.explanation = id, strings.TrimSpace(stripThought(thought[max(0, start+1):min(len(thought), end+1)]))
}

var explainedRe = regexp.MustCompile(`(?i)\b(?:that|this|which) explains (?:why|the)\b|\b(?:is|was) (?:the )?expected behaviou?r\b|\bfails? as expected\b`)

var unrelatedRe = regexp.MustCompile(`(?i)\b(?:unrelated to (?:my|the|our) (?:change|fix|edit)s?|not related to (?:my|the|our) (?:change|fix|edit)s?|pre-?existing (?:failure|error|issue|bug|test failure)|(?:was|is|were) (?:already )?failing before)`)

// cleanupMissingRe matches a clean-up that found nothing to remove.
var cleanupMissingRe = regexp.MustCompile(`^(?:rm|rmdir|unlink): cannot remove .*: No such file or directory$`)

// earlyErrorRe matches errors raised before a program runs its code.
var earlyErrorRe = regexp.MustCompile(`\b(?:SyntaxError|IndentationError|TabError|ImportError|ModuleNotFoundError)\b`)

// invocationRe matches an error of a command that did not get to run the
// thing it was asked to: a missing module, file or program, bad usage.
var invocationRe = regexp.MustCompile(`(?i)no module named|file or directory not found|no such file or directory|command not found|can't open file|usage:|unrecognized arguments|no tests ran|not found: `)

// resolvedFailure reports whether a failed step's error was resolved
// later in the span.
func (m *model) resolvedFailure(s *step) bool {
	return m.resolvedFailures()[s.id()]
}

// resolvedFailures returns the messages of the errors resolved later in
// the span, once per layout (see resolvedFailure): a step looked up every
// error.
func (m *model) resolvedFailures() map[string]bool {
	if m.resolvedIDs == nil {
		m.resolvedIDs = map[string]bool{}
		for _, e := range m.errors {
			if !e.open() {
				for _, id := range e.ids {
					m.resolvedIDs[id] = true
				}
			}
		}
	}
	return m.resolvedIDs
}

// fixBetween names what changed between an error's last failure and the
// success: files written or edited in between, or the changed arguments.
func (m *model) fixBetween(e *errState, ok *step) string {
	var changed, installed []string
	changedAt := map[string][]string{} // the messages that changed each path
	var last *step
	for _, s := range m.steps[:ok.n] {
		if s.n <= e.n {
			if s.n == e.n {
				last = s
			}
			continue
		}
		if s.f.call.kind.changes() && !s.failed {
			for _, p := range s.files {
				p = shortPath(p)
				if changedAt[p] == nil {
					changed = append(changed, p)
				}
				changedAt[p] = appendNew(changedAt[p], s.id())
			}
		}
		if s.f.call.kind == kindInstall && !s.failed && !installedNothing(s) {
			// An installed package fixes a missing program or module.
			installed = appendNew(installed, clip(s.f.call.label, 60)+" ["+s.id()+"]")
		}
	}
	var fixes []string
	if len(changed) > 0 {
		var created []string // files the fix wrote anew: a new script, not a repaired one
		for i, p := range changed {
			at := changedAt[p]
			changed[i] = p + " [" + strings.Join(headLines(at, 3), ", ") + "]"
			// (A file the failing command ran existed: rewriting it repaired it.)
			if f := m.knownFile(p); f != nil && f.created != "" && slices.Contains(at, f.created) &&
				(e.lastFailed == nil || !strings.Contains(e.lastFailed.f.call.label, baseName(p))) {
				created = append(created, changed[i])
				changed[i] = ""
			}
		}
		changed = slices.DeleteFunc(changed, func(s string) bool { return s == "" })
		if len(changed) > 0 {
			fixes = append(fixes, "changing "+strings.Join(headLines(changed, 3), ", "))
		}
		if len(created) > 0 {
			fixes = append(fixes, "creating "+strings.Join(headLines(created, 3), ", "))
		}
	}
	if len(installed) > 0 {
		fixes = append(fixes, strings.Join(headLines(installed, 2), ", "))
	}
	if len(fixes) > 0 {
		return "after " + strings.Join(fixes, " and ")
	}
	if last != nil {
		if d := paramsChange(last.f.call.params, ok.f.call.params); d != "" {
			return "with " + d
		}
		if last.f.call.label != ok.f.call.label {
			if progOf(last.f.call.label) != progOf(ok.f.call.label) {
				return "with another command: " + clip(ok.f.call.label, 100)
			}
			return "with different arguments: " + clip(ok.f.call.label, 100)
		}
	}
	return "on a retry"
}

// progOf is the first word of a command line.
func progOf(label string) string {
	p, _, _ := strings.Cut(label, " ")
	return p
}

// paramsChange tells the arguments a retry changed: "view_range [100, -1]
// (was [100, 150])".
func paramsChange(before, after map[string]string) string {
	if len(before) == 0 || len(after) == 0 {
		return ""
	}
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		a, inA := after[k]
		b, inB := before[k]
		switch {
		case a == b:
		case !inA:
			parts = append(parts, "no "+k+" (was "+b+")")
		case !inB:
			parts = append(parts, k+" "+a)
		default:
			parts = append(parts, k+" "+a+" (was "+b+")")
		}
	}
	if len(parts) == 0 || len(parts) > 3 {
		return ""
	}
	return strings.Join(parts, ", ")
}

func shortPath(p string) string { return p }

// markIntentions marks stated intentions that a call (of their message or
// later) carried out: one that runs the program the intention names, or
// shares two of its distinctive words, or its only one.
func (m *model) markIntentions() { m.markIntentionsFrom(0) }

// markIntentionsFrom marks the intentions from the i-th on. Each looks
// at the steps of its window once: a warm model resumes where the last
// look stopped (the steps read are final), so a Write costs the new steps.
func (m *model) markIntentionsFrom(i int) {
	for len(m.intentScans) < len(m.intents) {
		in := m.intents[len(m.intentScans)]
		sc := intentScan{words: append(keyWords(in.text), lineNumbers(in.text)...), low: strings.ToLower(in.text), next: in.n}
		m.intentScans = append(m.intentScans, sc)
		m.memoBytes += 48 + len(sc.low) + 24*len(sc.words)
	}
	for ; i < len(m.intents); i++ {
		in, sc := &m.intents[i], &m.intentScans[i]
		if in.done {
			continue
		}
		// An intention is carried out soon after it is stated, or not at
		// all: the window keeps the pass linear on long spans.
		to := min(in.n+intentWindow, len(m.steps))
		for ; sc.next < to; sc.next++ {
			j := sc.next
			label := m.lowLabel(j)
			score := 0
			for _, w := range sc.words {
				if strings.Contains(label, w) {
					score++
				}
			}
			if f := strings.Fields(label); len(f) > 0 && len(f[0]) >= 3 && containsWord(sc.low, f[0]) {
				score += 2
			}
			if verbMatches(sc.low, m.steps[j].f.call.kind) {
				score++
			}
			if score >= 2 || score == 1 && len(sc.words) <= 1 {
				in.done = true
				break
			}
		}
	}
}

// intentScan is what markIntentions keeps of an intention: its
// distinctive words, its text lower-cased, and the next step to look at.
type intentScan struct {
	words []string
	low   string
	next  int
}

// lowLabel returns step j's label and target, lower-cased.
func (m *model) lowLabel(j int) string {
	for len(m.lowLabels) <= j {
		s := m.steps[len(m.lowLabels)]
		low := strings.ToLower(s.f.call.label + " " + s.f.call.target)
		m.lowLabels = append(m.lowLabels, low)
		m.memoBytes += 16 + len(low)
	}
	return m.lowLabels[j]
}

// intentWindow is how many steps after an intention may carry it out.
const intentWindow = 40

// intentVerbs are the verbs an intention names a kind of step by.
var intentVerbs = map[kind][]string{
	kindSearch: {"search", "find", "grep", "look for", "locate", "verify", "confirm"},
	kindView:   {"view", "open", "read", "look at", "inspect", "examine", "check", "see", "verify", "confirm"},
	kindRun:    {"run", "execute", "try", "verify", "confirm", "reproduce"},
	kindTest:   {"run", "test", "verify", "confirm"},
	kindWrite:  {"create", "write"},
	kindEdit:   {"edit", "modify", "change", "fix", "replace", "update", "add", "apply"},
	kindHTTP:   {"request", "fetch", "upload", "submit", "post"},
	kindLookup: {"retrieve", "look up", "check", "get", "find", "search"},
	kindMutate: {"cancel", "update", "book", "change", "modify"},
}

// verbMatches reports whether an intention names the kind of a call.
func verbMatches(low string, k kind) bool {
	for _, v := range intentVerbs[k] {
		if containsWord(low, v) {
			return true
		}
	}
	return false
}

// lineNumbers returns the numbers of three or more digits a sentence
// names (line numbers, mostly): a call that reads those lines carries out
// an intention to look at them.
func lineNumbers(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		if len(w) >= 3 {
			out = appendNew(out, w)
		}
	}
	return out
}

// containsWord reports whether w occurs in s as a whole word.
func containsWord(s, w string) bool {
	notWord := func(c byte) bool { return !isWordByte(c) }
	return containsBetween(s, w, notWord, notWord)
}

// containsBetween reports whether w occurs in s with the start of s or a
// byte before(c) before it, and the end of s or a byte after(c) after it.
func containsBetween(s, w string, before, after func(c byte) bool) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(w)
		if (a == 0 || before(s[a-1])) && (b == len(s) || after(s[b])) {
			return true
		}
		i = a + 1
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// keyWords are the distinctive words of a sentence: identifiers and
// code-like names, lower-cased.
func keyWords(s string) []string {
	var out []string
	for _, id := range ident.Identifiers(s) {
		out = appendNew(out, strings.ToLower(id))
	}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '/')
	}) {
		w = strings.Trim(w, "./")
		if len(w) >= 5 && (strings.ContainsAny(w, "_./") || hasUpperInside(w)) {
			out = appendNew(out, strings.ToLower(w))
		}
	}
	return out
}

func hasUpperInside(w string) bool {
	for i := 1; i < len(w); i++ {
		if w[i] >= 'A' && w[i] <= 'Z' {
			return true
		}
	}
	return false
}

// unread returns, for each id list a record held, the ids no later call
// used and no record read, when the agent was going through the list: two
// or more of it read, and no user message since (which may have moved the
// conversation on).
func (m *model) unread() []idList {
	var out []idList
	for _, l := range m.lists {
		var left []string
		read, lastRead := 0, -1
		for _, id := range l.ids {
			n, used := m.argValues[id]
			if r := m.records[id]; r != nil && r.readAt != "" {
				used, n = true, max(n, r.n)
			}
			if used {
				read++
				lastRead = max(lastRead, n)
				continue
			}
			left = append(left, id)
		}
		if read >= 2 && len(left) > 0 && m.userAt <= lastRead {
			out = append(out, idList{id: l.id, owner: l.owner, field: l.field, ids: left})
		}
	}
	return out
}

// userSaid reports whether the user stated a value (an id of six or more
// characters) in the span.
func (m *model) userSaid(v string) bool {
	if len(v) < 6 {
		return false
	}
	for _, u := range m.users {
		if strings.Contains(u.text, v) {
			return true
		}
	}
	return false
}

// decidedOn reports whether one of the agent's decisions (its notes)
// written after r was read names it. A short or numeric id ("2") is a
// word of many sentences: none is. The notes only grow, so each is read
// once per record.
func (m *model) decidedOn(r *recordState) bool {
	if len(r.id) < 5 || isNumber(r.id) {
		return false
	}
	if r.decidedAt != r.n || r.decidedN > len(m.notes) {
		r.decided, r.decidedN, r.decidedAt = false, 0, r.n
	}
	for ; !r.decided && r.decidedN < len(m.notes); r.decidedN++ {
		nt := m.notes[r.decidedN]
		r.decided = nt.n > r.n && containsWord(nt.text, r.id)
	}
	return r.decided
}

// usedLater reports whether a call after a record was read passed its id.
func (m *model) usedLater(r *recordState) bool {
	if n, ok := m.argValues[r.id]; ok && n > r.n {
		return true
	}
	// A record whose own values a later call searched by (the trip's
	// airports and day, passed to a flight search) is the one in play,
	// though no call named it.
	seen := map[string]bool{}
	for _, f := range r.rec.fields {
		for _, w := range strings.FieldsFunc(f.value, func(c rune) bool { return c == ' ' || c == ',' || c == ';' }) {
			if len(w) < 3 || seen[w] {
				continue
			}
			if n, ok := m.argValues[w]; ok && n > r.n && !commonValues[strings.ToLower(w)] {
				seen[w] = true
			}
		}
	}
	return len(seen) >= 2
}

// commonValues are values every record of a kind may share (a cabin, a
// flag): a later call passing them says nothing about which record is in
// play.
var commonValues = map[string]bool{"yes": true, "no": true, "true": true, "false": true, "none": true, "economy": true,
	"business": true, "basic_economy": true, "one_way": true, "round_trip": true}

// prefersField reports whether the system prompt names a record field.
func (m *model) prefersField(name string) bool {
	if m.policy == "" {
		return false
	}
	n := strings.ToLower(name)
	return strings.Contains(m.policy, n) || strings.Contains(m.policy, strings.ReplaceAll(n, "_", " "))
}

// fieldWeight ranks a record's field for its line: 2 when the system
// prompt names it (its policy reasons about it), less 4 when it says how
// to reach the person (address, email, phone) and no tool of the
// conversation takes it: a tier or a payment method decides what the
// agent may do, and a policy's list of a profile's fields names the
// contact details as it names them. A tool that changes an address
// (modify_pending_order_address) makes it a field in play.
func (m *model) fieldWeight(name string) int {
	n := 0
	if m.prefersField(name) {
		n += 2
	}
	if contactFieldRe.MatchString(name) && !m.toolTakes(name) {
		n -= 4
	}
	return n
}

// toolTakes reports a tool of the conversation whose name holds the
// field's ("address" in modify_user_address).
func (m *model) toolTakes(field string) bool {
	for ; m.toolsN < len(m.steps); m.toolsN++ {
		if t := strings.ToLower(m.steps[m.toolsN].f.call.tool); t != "" && !slices.Contains(m.tools, t) {
			m.tools = append(m.tools, t)
		}
	}
	f := strings.TrimSuffix(strings.ToLower(field), "es")
	return slices.ContainsFunc(m.tools, func(t string) bool { return strings.Contains(t, f) })
}

// sortedRecords returns record states in first-seen order.
func (m *model) sortedRecords() []*recordState {
	out := make([]*recordState, 0, len(m.recKeys))
	for _, k := range m.recKeys {
		out = append(out, m.records[k])
	}
	return out
}

// sortedFiles returns file states in first-seen order, once each.
func (m *model) sortedFiles() []*fileState {
	var out []*fileState
	seen := make(map[*fileState]bool, len(m.fileKeys))
	for _, k := range m.fileKeys {
		f := m.files[k]
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// quotesHead reports a sentence that quotes the pinned messages (the
// issue text the agent cites: "The PR description says: …").
func (m *model) quotesHead(s string) bool {
	if i := strings.IndexAny(s, "\"“"); i >= 0 {
		_, w := utf8.DecodeRuneInString(s[i:])
		s = s[i+w:] // what the quotation marks open
	}
	s = strings.TrimLeft(s, "> ")
	if len(s) < 40 {
		return false
	}
	probe := s[:40]
	for i := range m.head {
		if strings.Contains(m.head[i].Content.String(), probe) {
			return true
		}
	}
	return false
}

// abandonRe is a sentence that gives up what came before it.
var abandonRe = regexp.MustCompile(`(?i)\b(?:is tricky|a simpler approach|won't work|doesn't work|never mind|scratch that|instead, I(?:'ll| will))\b`)

// draftedCommands are the shell blocks of a message's text ("```bash"),
// labelled as the briefing labels commands: what a message that made no
// tool call meant to run.
func draftedCommands(text string) string {
	if !strings.Contains(text, "```") {
		return ""
	}
	var cmds []string
	var block []string
	in, shell := false, false
	for l := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "```") {
			if in && shell {
				block = append(block, l)
			} else if !in && abandonRe.MatchString(t) {
				// "Wait, sed is tricky with newlines. I'll use a simpler
				// approach.": the blocks before it are given up.
				cmds = nil
			}
			continue
		}
		if in {
			if shell && len(block) > 0 {
				cmds = append(cmds, quoteCommand(shellLabel(strings.Join(block, "\n")), 180))
			}
			in, block = false, nil
			continue
		}
		lang := strings.ToLower(strings.TrimPrefix(t, "```"))
		in, shell = true, lang == "bash" || lang == "sh" || lang == "shell" || lang == "console" || lang == "zsh"
	}
	if len(cmds) > 3 {
		cmds = append(cmds[:2], cmds[len(cmds)-1])
	}
	return strings.Join(cmds, ", then ")
}
