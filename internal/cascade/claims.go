package cascade

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// A completion claim says a step was done: the keyword COMPLETED, a
// "completed" status in the structured reply, or prose ("you fixed",
// "8C8K4E was cancelled", "the tests pass"). The gate ties each claim to a
// message that shows it: one that concerns the claim (shares its
// identifiers, or a word few messages share) and shows the kind of success
// the claim asserts. A cited message that does not is a violation; the
// feedback names the message that does, when there is one, so that a model
// corrects its citation instead of relabelling verified work IN-PROGRESS.

// claimKind is what a claim asserts, and so what evidence it needs.
type claimKind int

const (
	// kindRead: something was looked up or read; any tool result without
	// a failure that concerns it.
	kindRead claimKind = iota
	// kindRun: something was run, or a failure reproduced; a run that
	// concerns it, whatever its outcome.
	kindRun
	// kindChange: something was edited, created, fixed; a change without
	// failure, or a successful run.
	kindChange
	// kindAction: a record was cancelled, booked, uploaded...; a call that
	// performs that action, or a result whose status records it.
	kindAction
	// kindWorks: something works; a result without failure.
	kindWorks
	// kindVerify: a test passed, a fix was verified; a run (not a view or an
	// edit) without failure and with a success signal or the claimed output.
	kindVerify
	// kindUser: the user confirmed or agreed; a user message.
	kindUser
)

func (k claimKind) String() string {
	return [...]string{"read", "run", "change", "action", "works", "verify", "user"}[k]
}

// kindWords maps a word of a claim to its kind; actionStems maps an action
// word to the stems its evidence must show.
var (
	kindWords = func() map[string]claimKind {
		m := map[string]claimKind{}
		set := func(k claimKind, ws string) {
			for _, w := range strings.Fields(ws) {
				m[w] = k
			}
		}
		set(kindRead, `read reading look looked looking lookup search searched searching find found finding locate located
			locating list listed listing view viewed viewing inspect inspected explore explored exploring open opened retrieve
			retrieved fetch fetched get got query queried examine examined decompile decompiled decompiling study`)
		set(kindRun, `reproduce reproduced reproduces reproducing reproduction repro ran run runs running rerun executed execute
			executing printed prints`)
		set(kindChange, `fix fixed fixes fixing edit edited edits editing modify modified modifying modification change
			changed changing add added adding addition create created creating creation write wrote written writing remove
			removed removing removal delete deleted deleting deletion patch patched patching apply applied applying revert
			reverted reverting implement implemented implementing implementation replace replaced replacing insert inserted
			inserting restore restored restoring rename renamed refactor refactored fill filled filling resolve resolved
			correct corrected rewrite rewrote rewritten update updated updating`)
		set(kindAction, `cancel cancelled canceled cancelling canceling cancellation book booked booking rebook rebooked
			refund refunded refunding upgrade upgraded downgrade downgraded exchange exchanged transfer transferred submit
			submitted submission commit committed merge merged push pushed deploy deployed install installed upload uploaded
			uploading send sent pay paid charge charged issued`)
		set(kindWorks, "works worked working")
		set(kindVerify, `verify verified verifying verification test tested testing pass passes passed passing confirm
			confirmed succeed succeeded succeeds validate validated validation success successful successfully checked solved`)
		return m
	}()
	actionStems = map[string][]string{
		"cance": {"cancel"}, "book": {"book"}, "reboo": {"book", "update"}, "refun": {"refund", "cancel"},
		"upgra": {"upgrade", "update"}, "downg": {"downgrade", "update"}, "excha": {"exchange", "update"},
		"trans": {"transfer"}, "submi": {"submit"}, "commi": {"commit"}, "merge": {"merge"}, "push": {"push"},
		"deplo": {"deploy"}, "insta": {"install"}, "uploa": {"upload", "-f ", "--form", "-x post"}, "send": {"send"},
		"sent": {"send"}, "pay": {"pay", "book", "update"}, "paid": {"pay", "book", "update"},
		"charg": {"charge", "pay", "book", "update"}, "issue": {"issue", "send", "certificate"},
	}
)

// proseVerbs are the words that make a prose sentence a completion claim:
// past participles and third-person verbs, never nouns or imperatives.
var proseVerbs = toSet(`fixed edited modified changed added created written wrote removed deleted patched applied
	reverted implemented replaced inserted restored renamed refactored filled resolved corrected rewrote rewritten updated
	cancelled canceled booked rebooked refunded upgraded downgraded exchanged transferred submitted committed merged pushed
	deployed installed uploaded sent paid charged issued
	works worked verified tested passes passed passing confirmed succeeded succeeds validated reproduced ran executed solved`)

// beDone are the generic completion words, claims only after a form of
// "be": "the work is done", "was completed".
var beDone = toSet(`done completed finished complete`)

var beWords = toSet(`is are was were been be now`)

// negators cancel a claim when they come before its verb in the clause:
// "not yet cancelled", "nothing was edited", "will be verified".
var negators = toSet(`not no never nothing none neither nor without yet until unless once if whether would will should
	must need needs to can could may might pending planned plan unable instead hasn t isn wasn weren haven didn doesn don
	cannot still unverified before stays stay remains remain kept keeps left`)

// negatorsAfter cancel a claim right after its verb: "applied, unverified".
var negatorsAfter = toSet(`not yet unverified untested unconfirmed nothing`)

// passContext: "passes" and "passed" claim success only about tests or
// checks ("it passes the string to FUN_004015dc" claims nothing).
var passContext = regexp.MustCompile(`(?i)\b(?:tests?|suite|checks?|build|lint|reproduction|script|spec|ci|repro)\b`)

// claim is one completion claim of a reply.
type claim struct {
	subject  string   // what was done, as the reply says it
	cited    []string // the message ids it cites
	kind     claimKind
	stems    []string // for kindAction: what the evidence must show
	quotes   []string // quoted output the evidence must contain
	testy    bool     // it is about tests
	found    bool     // a lookup that found what it names (vs read it)
	keyword  bool     // COMPLETED or "completed", not prose
	explicit bool     // the reply cited messages for it
}

// label is the claim as feedback names it.
func (c claim) label() string {
	return clip(strings.TrimSpace(collapse(c.subject)), 160)
}

var (
	statusWordRe = regexp.MustCompile(`\b(COMPLETED|IN-PROGRESS|IN PROGRESS|FAILED|DONE)\b`)
	clauseSepRe  = regexp.MustCompile(`;\s|\.\s+|\.$|\n`)
	dateAfterRe  = regexp.MustCompile(`^\W{0,3}(?:on\s+)?(?:\d{4}-\d{2}-\d{2}|\d{1,2}[-/]\d{1,2}\b|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d)`)
)

// textClaims returns the completion claims of a plain-text reply. Claims in
// the task, the user's instructions and the next steps are not claims of
// work done.
func (s *source) textClaims(secs []section) []claim {
	var out []claim
	for _, sec := range secs {
		switch sec.name {
		case secTask, secInstructions, secNext:
			continue
		}
		masked := strings.Split(maskQuotes(sec.text), "\n")
		for i, line := range strings.Split(sec.text, "\n") {
			out = append(out, s.lineClaims(line, masked[i])...)
		}
	}
	return out
}

// lineClaims reads one line: its COMPLETED claims first, then prose claims
// in what is left. masked is the line with its quotations blanked out
// (same offsets), so that quoted output is never read as a claim.
func (s *source) lineClaims(orig, line string) []claim {
	var out []claim
	locs := statusWordRe.FindAllStringIndex(line, -1)
	rest := []byte(line)
	prevEnd := 0
	for i, loc := range locs {
		word := line[loc[0]:loc[1]]
		// The claim's subject runs from the previous claim (or clause start)
		// to the keyword; its citation may come before or right after it.
		start := prevEnd
		if j := lastClauseBreak(line[start:loc[0]]); j >= 0 {
			start += j
			// "Ran X: it printed Y. COMPLETED [m1]": a bare keyword claims
			// the sentence before it.
			if len(words(line[start:loc[0]], 2)) < 2 {
				if k := lastClauseBreak(strings.TrimRight(line[prevEnd:start], ". ;")); k >= 0 {
					start = prevEnd + k
				} else {
					start = prevEnd
				}
			}
		}
		end := loc[1]
		next := len(line)
		if i+1 < len(locs) {
			next = locs[i+1][0]
		}
		after := line[loc[1]:next]
		if m := citeRe.FindStringIndex(after); m != nil && strings.TrimSpace(strings.Trim(after[:m[0]], ":,.()-–— ")) == "" {
			end = loc[1] + m[1]
		}
		prevEnd = end
		for k := start; k < end; k++ {
			rest[k] = ' '
		}
		if word != "COMPLETED" && word != "DONE" {
			continue
		}
		subject := statusWordRe.ReplaceAllString(line[start:end], " ")
		cited := s.citedIDs(line[start:end])
		quotes := quotedOutputs(orig[start:end])
		// "You fixed the lexer and the test run passed: COMPLETED [m7]"
		// claims two things; each needs its evidence.
		if subs := s.proseClaims(subject); len(subs) > 1 {
			for _, c := range subs {
				c.cited, c.explicit, c.keyword, c.quotes = cited, len(cited) > 0, true, quotes
				out = append(out, c)
			}
			continue
		}
		c := s.newClaim(subject, cited, true)
		c.quotes = quotes
		out = append(out, c)
	}
	masked := string(rest)
	for _, cl := range clauseSpans(masked) {
		for _, c := range s.proseClaims(masked[cl[0]:cl[1]]) {
			c.quotes = quotedOutputs(orig[cl[0]:cl[1]])
			out = append(out, c)
		}
	}
	return out
}

// lastClauseBreak returns the offset just after the last clause separator
// of s, or -1.
func lastClauseBreak(s string) int {
	best := -1
	for _, sep := range []string{"; ", ". "} {
		if i := strings.LastIndex(s, sep); i >= 0 && i+len(sep) > best {
			best = i + len(sep)
		}
	}
	return best
}

// clauseSpans returns the offsets of the clauses of s.
func clauseSpans(s string) [][2]int {
	var out [][2]int
	prev := 0
	for _, m := range append(clauseSepRe.FindAllStringIndex(s, -1), []int{len(s), len(s)}) {
		if strings.TrimSpace(s[prev:m[0]]) != "" {
			out = append(out, [2]int{prev, m[0]})
		}
		prev = m[1]
	}
	return out
}

// proseClaims returns the claims a clause makes with completion verbs. Each
// verb's subject is the clause text between its neighbouring verbs, so
// that "you fixed related.py and verified it: Form is valid" ties the fix
// to related.py and the verification to "Form is valid".
func (s *source) proseClaims(clause string) []claim {
	toks := tokenSpans(clause)
	type hit struct {
		i    int
		kind claimKind
		word string
	}
	var hits []hit
	for i, t := range toks {
		w := strings.ToLower(clause[t[0]:t[1]])
		switch {
		case proseVerbs[w]:
		case beDone[w] && i > 0 && beWords[strings.ToLower(clause[toks[i-1][0]:toks[i-1][1]])]:
		default:
			continue
		}
		if negated(clause, toks, i) || dateAfterRe.MatchString(strings.ToLower(clause[t[1]:])) {
			continue
		}
		if strings.HasPrefix(w, "pass") && !passContext.MatchString(clause) {
			continue
		}
		kind, ok := kindWords[w]
		if !ok {
			kind = kindChange // done, completed, finished
		}
		if w == "confirmed" && userSubject(clause) {
			kind = kindUser
		}
		hits = append(hits, hit{i, kind, w})
	}
	var out []claim
	cited := s.citedIDs(clause)
	for h, x := range hits {
		from, to := 0, len(clause)
		if h > 0 {
			// "You fixed the lexer and the full test run passed": the
			// second verb's subject starts after the conjunction.
			from = toks[hits[h-1].i][1]
			if k := lastConjunction(clause[from:toks[x.i][0]]); k >= 0 {
				from += k
			}
		}
		if h+1 < len(hits) {
			to = toks[hits[h+1].i][0]
		}
		c := claim{subject: clause[from:to], cited: cited, kind: x.kind, explicit: len(cited) > 0}
		if x.kind == kindAction {
			c.stems = actionStems[stem(x.word)]
		}
		c.testy = testWordRe.MatchString(c.subject)
		out = append(out, c)
	}
	return out
}

// lastConjunction returns the offset after the last " and ", ", " or
// " but " of s, or -1.
func lastConjunction(s string) int {
	best := -1
	for _, c := range []string{" and ", ", ", " but ", " then "} {
		if i := strings.LastIndex(s, c); i >= 0 && i+len(c) > best {
			best = i + len(c)
		}
	}
	return best
}

// userSubject reports a clause about what the user did ("the user
// confirmed").
func userSubject(clause string) bool {
	l := strings.ToLower(clause)
	return strings.Contains(l, "user") || strings.Contains(l, "customer")
}

// negated reports a negation or a condition among the words before token i
// in its clause, or right after it ("cancelled? not yet").
func negated(clause string, toks [][2]int, i int) bool {
	for k := i - 1; k >= 0 && k >= i-8; k-- {
		w := strings.ToLower(clause[toks[k][0]:toks[k][1]])
		if negators[w] || strings.HasSuffix(w, "n't") {
			return true
		}
	}
	for k := i + 1; k < len(toks) && k <= i+2; k++ {
		if negatorsAfter[strings.ToLower(clause[toks[k][0]:toks[k][1]])] {
			return true
		}
	}
	return false
}

var tokenRe = regexp.MustCompile(`[A-Za-z][A-Za-z'’]*`)

func tokenSpans(s string) [][2]int {
	var out [][2]int
	for _, m := range tokenRe.FindAllStringIndex(s, -1) {
		out = append(out, [2]int{m[0], m[1]})
	}
	return out
}

// newClaim builds a keyword claim: its kind is the strongest its words
// name (a lookup, a run, an edit, an action, a verification); a step that
// names none ("App.tsx toggle: COMPLETED") claims a change was made.
func (s *source) newClaim(subject string, cited []string, keyword bool) claim {
	c := claim{subject: subject, cited: cited, keyword: keyword, explicit: len(cited) > 0, kind: kindChange}
	named := false
	for _, w := range words(maskQuotes(subject), 3) {
		k, ok := kindWords[w]
		if !ok || named && k <= c.kind {
			continue
		}
		c.kind, named = k, true
		if k == kindAction {
			c.stems = actionStems[stem(w)]
		}
		if k == kindRead && resultVerbs[w] {
			c.found = true
		}
	}
	c.testy = testWordRe.MatchString(subject)
	return c
}

// resultVerbs say a lookup found something: what they name may be in the
// lookup's output. Other lookups ("decompiled X", "read X") name what was
// looked at, which their call must name.
var resultVerbs = toSet(`found finding locate located locating listed saw`)

// citedIDs returns the message ids cited in square brackets in text
// (ranges such as [m0008-m0016] and [m0011–m0019] cite their ends and
// every id between).
func (s *source) citedIDs(text string) []string {
	var out []string
	for _, m := range citeRe.FindAllStringSubmatch(text, -1) {
		for _, part := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
			for _, id := range s.expandRange(part) {
				if s.ids[id] && !slices.Contains(out, id) {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

var idRangeRe = regexp.MustCompile(`^(m\d{2,})\s*(?:-|–|—|\.\.|to)\s*m?(\d{2,})$`)

// expandRange returns the ids of a range "m0008-m0016" that occur in the
// source, or the part itself.
func (s *source) expandRange(part string) []string {
	m := idRangeRe.FindStringSubmatch(part)
	if m == nil {
		return []string{part}
	}
	lo, hi := m[1], "m"+m[2]
	if len(hi) != len(lo) || !s.ids[lo] || !s.ids[hi] {
		return []string{lo, hi}
	}
	var out []string
	in := false
	for _, sm := range s.order {
		if sm.id == lo {
			in = true
		}
		if in {
			out = append(out, sm.id)
		}
		if sm.id == hi {
			break
		}
	}
	return out
}

// checkClaims reports each claim no message supports.
func (s *source) checkClaims(claims []claim, extract func(string) []string, j *judgement) {
	for _, c := range claims {
		ok, found := s.support(c, extract)
		switch {
		case ok:
		case found != "" && c.explicit:
			j.fail(RuleCompletion, "the claim %q cites [%s], which does not show it; [%s] does: cite [%s]",
				c.label(), strings.Join(c.cited, ", "), found, found)
		case found != "":
			// Uncited prose that a message supports is accepted as is.
		case c.explicit:
			j.fail(RuleCompletion, "the claim %q cites [%s], but no message shows it (%s): cite the message that shows it, or give the step's real status (IN-PROGRESS or FAILED)",
				c.label(), strings.Join(c.cited, ", "), c.kind.need())
		default:
			j.fail(RuleCompletion, "the claim %q has no message that shows it (%s): cite the message that shows it, or give the step's real status (IN-PROGRESS or FAILED)",
				c.label(), c.kind.need())
		}
	}
}

// need says what evidence a claim of the kind needs, for feedback.
func (k claimKind) need() string {
	switch k {
	case kindRun:
		return "a run of it"
	case kindChange:
		return "an edit or change without error"
	case kindAction:
		return "a call that performs the action"
	case kindVerify:
		return "a run, not a view or an edit, that shows success"
	case kindUser:
		return "a user message"
	case kindWorks:
		return "a result without error"
	}
	return "a tool result without error"
}

// quotedOutputs returns the quoted passages of a claim: output the
// evidence of a verification must contain.
func quotedOutputs(subject string) []string {
	var out []string
	for _, q := range findQuotes(subject) {
		if len(strings.Fields(q.text)) >= 2 {
			out = append(out, q.text)
		}
	}
	return out
}

// support reports whether a cited message supports c; when none does, it
// returns a span message that does, if any (the latest).
func (s *source) support(c claim, extract func(string) []string) (bool, string) {
	t := s.newTie(c.subject, extract)
	// The messages a claim cites are its evidence together: the tie may
	// rest on one (the reservation read) and the success on another (the
	// cancellation).
	var union strings.Builder
	unionStems := map[string]bool{}
	for _, id := range c.cited {
		if m := s.msgs[id]; m != nil {
			union.WriteString(m.bundle())
			if m.partner != nil {
				union.WriteString(m.partner.bundle())
			}
			maps.Copy(unionStems, m.stems)
		}
	}
	cited := t
	cited.union, cited.unionStems = union.String(), unionStems
	for _, id := range c.cited {
		if m := s.msgs[id]; m != nil && s.supports(c, cited, m, true) {
			return true, ""
		}
	}
	for i := len(s.order) - 1; i >= 0; i-- {
		if m := s.order[i]; s.supports(c, t, m, false) {
			if !t.specific() && !(c.kind == kindVerify && c.testy) {
				// Nothing names the step: any such message would do, so
				// none is proposed; uncited prose is accepted.
				return !c.explicit, ""
			}
			return false, m.id
		}
	}
	return false, ""
}

// supports reports whether m shows claim c.
func (s *source) supports(c claim, t tie, m *srcMsg, cited bool) bool {
	if c.kind == kindUser {
		return m.role == "user" && (t.lenient(m) || cited)
	}
	if !m.isResultBearing() {
		return false
	}
	e := s.evidence(m)
	switch c.kind {
	case kindRead:
		if !c.found && len(t.idents) > 0 && !anyIn(e.calls, t.idents) {
			return false // "decompiled X": the call must name X
		}
		return !e.failure && t.lenient(m)
	case kindRun:
		return e.run && t.strict(m)
	case kindChange:
		if e.view && !e.failure && t.shownBy(e.raw) {
			return true // a view that shows the changed content
		}
		return !e.failure && (e.change || e.run && e.positive) && t.strict(m)
	case kindAction:
		return !e.failure && hasAction(m, e, c.stems) && t.strict(m)
	case kindWorks:
		if c.testy && !e.test {
			return false
		}
		return !e.failure && (e.positive || e.run || e.view || outputHas(e, c.quotes)) && t.strict(m)
	case kindVerify:
		if e.failure || !e.run || e.change && !e.positive || c.testy && !e.test {
			return false
		}
		if len(c.quotes) > 0 && !outputHas(e, c.quotes) {
			return false
		}
		// What the claim says happened must show in the output, not only
		// in the command: "injection confirmed" needs more than exit 0.
		if len(t.stems) > 0 && len(c.quotes) == 0 && !anyStem(e.raw, t.stems) {
			return false
		}
		return (e.positive || len(c.quotes) > 0) && t.strict(m)
	}
	return false
}

func outputHas(e msgEvidence, quotes []string) bool {
	if len(quotes) == 0 {
		return false
	}
	out := normQuote(e.results)
	for _, q := range quotes {
		if !strings.Contains(out, normQuote(q)) {
			return false
		}
	}
	return true
}

// tie is what ties a claim to a message: the identifiers it names (paths,
// ids, record codes), else the code names it mentions, else the words of it
// that some but not most span messages contain.
type tie struct {
	idents []string // must occur in the message when there are any
	code   []string // one occurring suffices
	stems  []string // min(2, len) must occur, or one rare one
	rare   map[string]bool
	// unknown: the claim names code no message has; it ties to nothing.
	unknown bool
	// union, when set, is the evidence of every cited message: the tie is
	// checked against it instead of one message.
	union      string
	unionStems map[string]bool
}

var (
	codeTokenRe  = regexp.MustCompile(`[A-Za-z_][\w.]*(?:_\w+|\.\w+)+(?:\(\))?|\w+\(\)`)
	numberRe     = regexp.MustCompile(`\b\d{3,}\b`)
	recordCodeRe = regexp.MustCompile(`\b[A-Z0-9]{5,12}\b`)
)

func (s *source) newTie(subject string, extract func(string) []string) tie {
	var t tie
	plain := citeRe.ReplaceAllString(maskQuotes(subject), " ")
	for _, id := range s.gateIdentifiers(plain, extract) {
		if msgIDRe.MatchString(id) && s.idsOnly(id) || isShortNumber(id) || isDigits(id) {
			continue // numbers are content, below
		}
		t.idents = append(t.idents, id)
	}
	// All-capital codes the source has (IFOYYZ, NQNU5R) name records even
	// without a digit.
	for _, c := range recordCodeRe.FindAllString(plain, -1) {
		if !isDigits(c) && !slices.Contains(t.idents, c) && containsToken(s.corpus, c) && !statusWordRe.MatchString(c) {
			t.idents = append(t.idents, c)
		}
	}
	for _, tok := range codeTokenRe.FindAllString(plain, -1) {
		tok = strings.TrimSuffix(tok, "()")
		if len(tok) < 5 || slices.Contains(t.idents, tok) || isFileName(tok) {
			continue
		}
		if !strings.Contains(s.corpus, tok) {
			// A code name the conversation never had: nothing can show
			// what the claim says of it.
			t.unknown = true
		}
		t.code = append(t.code, tok)
	}
	// Numbers of three digits or more (line 917, amount 116) name things
	// as precisely as code names.
	for _, n := range numberRe.FindAllString(plain, -1) {
		if !slices.Contains(t.idents, n) && !slices.Contains(t.code, n) {
			t.code = append(t.code, n)
		}
	}
	limit := max(2, len(s.order)/2)
	for _, st := range contentStems(plain) {
		// A word no message has ties to nothing; one most have ties to
		// everything; the words of the claim's verb say what, not to what.
		if df := s.df[st]; df == 0 || df > limit || kindStems[st] || genericStems[st] || isDigits(st) && len(st) < 3 {
			continue
		}
		t.stems = append(t.stems, st)
		if s.stepDF[st] == 1 {
			if t.rare == nil {
				t.rare = map[string]bool{}
			}
			t.rare[st] = true
		}
	}
	return t
}

// genericStems are words that name no particular thing in any span.
var genericStems = func() map[string]bool {
	m := map[string]bool{}
	for w := range toSet(`place thing things way step steps part case time new old file files code value values result
		results output state status data item items point end start first last problem issue bug error errors line lines
		work again already also able good fine well`) {
		m[stem(w)] = true
	}
	return m
}()

// kindStems are the stems of the kind words: they say what was done, not
// to what.
var kindStems = func() map[string]bool {
	m := map[string]bool{}
	for w := range kindWords {
		m[stem(w)] = true
	}
	for w := range proseVerbs {
		m[stem(w)] = true
	}
	return m
}()

func (t tie) specific() bool { return len(t.idents) > 0 || len(t.code) > 0 || len(t.stems) > 0 }

// strict: every identifier of the claim occurs in the evidence; without
// identifiers, a code name does, or two of its words (one if it has one).
// A claim with none of them ties to anything.
func (t tie) strict(m *srcMsg) bool {
	if t.union != "" {
		return t.strictIn(t.union, t.unionStems)
	}
	return t.strictIn(m.bundle(), m.stems)
}

func (t tie) strictIn(text string, stems map[string]bool) bool {
	if t.unknown {
		return false
	}
	if len(t.idents) > 0 {
		for _, id := range t.idents {
			if !containsToken(text, id) {
				return false
			}
		}
		return true
	}
	if len(t.code) > 0 && anyIn(text, t.code) {
		return true
	}
	if len(t.stems) == 0 {
		return len(t.code) == 0
	}
	n := 0
	for _, st := range t.stems {
		if stems[st] {
			if t.rare[st] {
				return true // a word of one step only names that step
			}
			n++
		}
	}
	return n >= min(2, len(t.stems))
}

// lenient: only the claim's identifiers (or, without any, code names)
// must occur.
func (t tie) lenient(m *srcMsg) bool {
	b := m.bundle()
	if t.union != "" {
		b = t.union
	}
	switch {
	case len(t.idents) > 0:
		return anyIn(b, t.idents)
	case len(t.code) > 0:
		return anyIn(b, t.code)
	}
	return true
}

// shownBy reports a listing that shows the content a change claim names:
// every code name and number of the claim in the output, and either a code
// name among them or two numbers or more. The file or record changed is
// what a listing names anyway, and one line number only says where: that
// proves nothing changed.
func (t tie) shownBy(output string) bool {
	names, numbers := 0, 0
	for _, x := range t.code {
		if !containsToken(output, x) {
			return false
		}
		if isDigits(x) {
			numbers++
		} else {
			names++
		}
	}
	return names > 0 || numbers >= 2
}

// anyStem reports whether text has a word of one of the stems.
func anyStem(text string, stems []string) bool {
	have := stemSet(text)
	for _, st := range stems {
		if have[st] {
			return true
		}
	}
	return false
}

// isFileName reports a path or a file name with a known extension.
func isFileName(x string) bool {
	if strings.Contains(x, "/") {
		return true
	}
	i := strings.LastIndexByte(x, '.')
	return i > 0 && fileExts[strings.ToLower(x[i+1:])]
}

var fileExts = toSet(`py pyi go js mjs ts tsx jsx c h cc cpp hpp rs java kt rb php pony md rst txt json jsonl yaml yml toml
	cfg ini sh bash css scss html xml sql lock mod sum log csv ipynb svg png jpg gif pdf pem zip gz tgz whl diff patch proto
	swift scala lua pl r ex exs erl hs ml vue dart cs env conf tex traj elf pcap pyc mpeg m4v avi`)

func anyIn(text string, needles []string) bool {
	for _, n := range needles {
		if containsToken(text, n) {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isShortNumber reports a bare number of at most three digits (5.5, 3.5,
// 0.5, 116): values a model computes or restates, not identifiers.
func isShortNumber(s string) bool {
	digits := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == ',' || c == '-' && i == 0:
		default:
			return false
		}
	}
	return digits > 0 && digits <= 3
}
