package cascade

// The corpus replay: hand-written model replies to the requests the
// cascade sent on twelve shared conversations (testdata/corpus/README.md),
// each served to the cascade whatever the prompt says, so the figures
// survive prompt changes. Run
//
//	go test ./internal/cascade -run TestCorpus -v
//
// for the table of acceptance per kind. The same file runs against older
// code with the glue of testdata/corpus/baseline (before.sh).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/openaitest"
)

// corpusInput is what the replay needs of one conversation: the cascade's
// input, as the engine built it at capture time, with its provenance.
type corpusInput struct {
	Conversation string `json:"conversation"`
	Source       string `json:"source"`
	SourceCommit string `json:"source_commit"`
	SourceItem   string `json:"source_item,omitempty"`
	License      string `json:"license"`
	// Messages is the length of the whole history, Cut the prefix kept
	// by the freeze.
	Messages int `json:"messages"`
	Cut      int `json:"cut"`
	// Command is the equivalent `worker compact` invocation.
	Command       string           `json:"command"`
	PromptVersion string           `json:"prompt_version"`
	Encoding      string           `json:"encoding"`
	BoundaryID    string           `json:"boundary_id"`
	BudgetTokens  int              `json:"budget_tokens"`
	Pinned        []briefd.Message `json:"pinned"`
	Span          []briefd.Message `json:"span"`
	Previous      *briefd.Briefing `json:"previous,omitempty"`
	Draft         corpusDraft      `json:"draft"`
}

// corpusDraft is the deterministic ledger the cascade carried: only the
// narrow interface it depends on (text and structured JSON).
type corpusDraft struct {
	Text         string          `json:"text"`
	Structured   json.RawMessage `json:"structured,omitempty"`
	Depth        int             `json:"depth"`
	BudgetTokens int             `json:"budget_tokens"`
}

// corpusReply is one hand-written reply and its label.
type corpusReply struct {
	Conv string
	Name string
	// Kind is honest/<style>, sloppy/miscited (an honest reply citing the
	// wrong message for a verified step) or lie/<kind>.
	Kind string
	// Rule is the gate rule that must reject a lie; Marker a piece of the
	// lie the rejection must name.
	Rule, Marker string
	// Evidence is the message that does show a miscited step.
	Evidence string
	Note     string
	Text     string
}

func (r corpusReply) lie() bool    { return strings.HasPrefix(r.Kind, "lie/") }
func (r corpusReply) isJSON() bool { return strings.HasPrefix(strings.TrimSpace(r.Text), "{") }
func (r corpusReply) id() string   { return r.Conv + "/" + r.Name }

// loadCorpus reads every conversation of testdata/<name>.
func loadCorpus(t *testing.T, name string) (map[string]*corpusInput, []corpusReply) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", name, "*", "input.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus under testdata/%s (%v)", name, err)
	}
	inputs := map[string]*corpusInput{}
	var replies []corpusReply
	for _, p := range dirs {
		dir := filepath.Dir(p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var in corpusInput
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		inputs[in.Conversation] = &in
		rs, err := parseReplies(filepath.Join(dir, "replies.txt"), in.Conversation)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, rs...)
	}
	return inputs, replies
}

// parseReplies reads a replies.txt: entries start with "=== name", then
// "key: value" lines, then "---", then the reply verbatim.
func parseReplies(path, conv string) ([]corpusReply, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []corpusReply
	var cur *corpusReply
	var body []string
	inBody := false
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimRight(strings.Join(body, "\n"), "\n")
			out = append(out, *cur)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "=== "); ok {
			flush()
			cur, body, inBody = &corpusReply{Conv: conv, Name: strings.TrimSpace(name)}, nil, false
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: text before the first entry", path, n)
		}
		if inBody {
			body = append(body, line)
			continue
		}
		if line == "---" {
			inBody = true
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key: value or ---", path, n)
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "kind":
			cur.Kind = v
		case "rule":
			cur.Rule = v
		case "marker":
			cur.Marker = v
		case "evidence":
			cur.Evidence = v
		case "note":
			cur.Note = v
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q", path, n, k)
		}
	}
	flush()
	for _, r := range out {
		if r.Kind == "" || r.Text == "" || (r.lie() && (r.Rule == "" || r.Marker == "")) {
			return nil, fmt.Errorf("%s: entry %s lacks its kind, text, rule or marker", path, r.Name)
		}
	}
	return out, sc.Err()
}

// replayOutcome is what the gate made of one reply.
type replayOutcome struct {
	firstAccepted bool
	firstRules    []string // rules the first reply failed
	firstDetail   string   // the first reply's rejection, as the attempt records it
	feedback      bool     // a feedback round took place
	finalAccepted bool     // the first or the feedback reply was accepted
	relabelled    bool     // the accepted reply claims fewer completed steps than the first
	proposed      bool     // the feedback named a message to cite
	err           error
}

// rightReason reports whether a rejected lie was rejected by its rule,
// naming the lie.
func (o replayOutcome) rightReason(r corpusReply) bool {
	return !o.firstAccepted && slices.Contains(o.firstRules, r.Rule) &&
		strings.Contains(strings.ToLower(o.firstDetail), strings.ToLower(r.Marker))
}

// replay serves r to a one-model cascade: the reply first, then what a
// compliant model writes after the gate's feedback (compliantRevision).
func replay(t *testing.T, in *corpusInput, r corpusReply, counter *compact.TokenCounter) replayOutcome {
	t.Helper()
	text := adaptReply(r.Text)
	var second string
	proposed := false
	srv := openaitest.NewServer(t)
	srv.SetDefault(openaitest.Step{Func: func(req openaitest.Request) openaitest.Step {
		switch len(req.Messages) {
		case 2:
			return openaitest.Reply(text)
		case 4:
			second = compliantRevision(text, req.Messages[3].Content, r)
			proposed = citeInstruction.MatchString(req.Messages[3].Content)
			return openaitest.Reply(second)
		default:
			return openaitest.Status(400, "replay: one level only")
		}
	}})
	c, err := New(Config{
		BaseURL: srv.URL, Models: []ModelConfig{{Name: "replay", Timeout: 30 * time.Second}},
		Structured: r.isJSON(), MaxRetries: -1, Breaker: BreakerConfig{Failures: -1},
		Spend: SpendConfig{PerConversation: -1, PerTenant: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	sin := compact.SummaryInput{
		ConversationID: in.Conversation, Span: in.Span, Previous: in.Previous,
		Draft:        newDraft(in.Draft),
		BudgetTokens: in.BudgetTokens, CountTokens: counter.Count,
	}
	withPinned(&sin, in.Pinned)
	sum, err := c.Summarize(t.Context(), sin)
	var attempts []compact.Attempt
	if sum != nil {
		attempts = sum.Attempts
	} else if ae, ok := err.(*compact.AttemptsError); ok {
		attempts = ae.Attempts
	}
	var o replayOutcome
	var gated []compact.Attempt
	for _, a := range attempts {
		if a.Outcome == OutcomeAccepted || a.Outcome == OutcomeRejected {
			gated = append(gated, a)
		}
	}
	if len(gated) == 0 {
		o.err = fmt.Errorf("no reply reached the gate: %v (attempts %s)", err, outcomes(attempts))
		return o
	}
	o.firstAccepted = gated[0].Outcome == OutcomeAccepted
	o.firstRules, o.firstDetail = attemptRules(gated[0])
	o.feedback = len(gated) > 1
	o.finalAccepted = sum != nil
	o.proposed = proposed
	if o.finalAccepted && o.feedback {
		o.relabelled = completedClaims(second) < completedClaims(text)
	}
	return o
}

var (
	completedWordRe = regexp.MustCompile(`\bCOMPLETED\b`)
	completedJSONRe = regexp.MustCompile(`"status"\s*:\s*"completed"`)
	statusLabelRe   = regexp.MustCompile(`\b(COMPLETED|IN-PROGRESS|FAILED)\b`)
	citedIDRe       = regexp.MustCompile(`\bm\d{4}\b`)
	quotedRe        = regexp.MustCompile(`"([^"]{3,})"`)
	citeInstruction = regexp.MustCompile(`cite \[(m\d{4})\]`)
)

func completedClaims(s string) int {
	return len(completedWordRe.FindAllString(s, -1)) + len(completedJSONRe.FindAllString(s, -1))
}

// compliantRevision is the reply a compliant model sends after feedback:
// for each flagged completed step it cites the message the feedback names
// ("cite [m0042]"), or, when the feedback asks for IN-PROGRESS or FAILED,
// relabels the step; other violations it cannot fix, and the reply goes
// back unchanged. The step is found by the message ids or the quoted text
// the feedback names. This is what a model does when it follows feedback
// to the letter, which is how the feedback of 8a1d3ba made honest models
// under-report verified work. Asked to "cite the message that shows it"
// without being told which, it cites the one that does (the label's
// evidence), as a capable model would.
func compliantRevision(reply, feedback string, r corpusReply) string {
	lines := strings.Split(reply, "\n")
	for _, fb := range strings.Split(feedback, "\n") {
		fb = strings.TrimPrefix(strings.TrimSpace(fb), "- ")
		if !strings.Contains(fb, "COMPLETED") && !strings.Contains(fb, "completed") && !strings.Contains(fb, "claim") {
			continue
		}
		target := func(line string) bool {
			for _, q := range quotedRe.FindAllStringSubmatch(fb, -1) {
				snippet := strings.TrimSuffix(q[1], "…")
				if len(snippet) >= 8 && strings.Contains(line, snippet[:min(len(snippet), 60)]) {
					return true
				}
			}
			for _, id := range citedIDRe.FindAllString(fb, -1) {
				if strings.Contains(line, id) && statusLabelRe.MatchString(line) || strings.Contains(line, `"`+id+`"`) && strings.Contains(line, "completed") {
					return true
				}
			}
			return false
		}
		if m := citeInstruction.FindStringSubmatch(fb); m != nil {
			wrong := citedIDRe.FindAllString(fb, -1)
			for i, line := range lines {
				if !target(line) {
					continue
				}
				for _, w := range wrong {
					if w != m[1] {
						line = strings.ReplaceAll(line, w, m[1])
					}
				}
				lines[i] = line
			}
			continue
		}
		if strings.Contains(fb, "cite the message") && r.Evidence != "" {
			// A capable model asked to cite the message that shows the step
			// finds it (the label's evidence).
			wrong := citedIDRe.FindAllString(fb, -1)
			for i, line := range lines {
				if !target(line) {
					continue
				}
				for _, w := range wrong {
					line = strings.ReplaceAll(line, w, r.Evidence)
				}
				if !strings.Contains(line, r.Evidence) {
					line = strings.Replace(line, "COMPLETED", "COMPLETED ["+r.Evidence+"]", 1)
				}
				lines[i] = line
			}
			continue
		}
		if strings.Contains(fb, "IN-PROGRESS") || strings.Contains(fb, "in_progress") {
			for i, line := range lines {
				if target(line) {
					line = strings.ReplaceAll(line, "COMPLETED", "IN-PROGRESS")
					lines[i] = strings.ReplaceAll(line, `"completed"`, `"in_progress"`)
				}
			}
		}
	}
	return strings.Join(lines, "\n")
}

// kindStats counts the outcomes of one kind.
type kindStats struct {
	n, firstAccepted, rightReason, feedback, finalAccepted, relabelled, proposed int
	misses                                                                       []string
}

func TestCorpus(t *testing.T) { replayCorpus(t, "corpus", enforceCorpusTargets) }

// TestHeldOut replays replies written after the gate was tuned on the
// corpus, to conversations it never saw (testdata/heldout): it reports,
// it does not enforce.
func TestHeldOut(t *testing.T) { replayCorpus(t, "heldout", false) }

func replayCorpus(t *testing.T, name string, enforce bool) {
	inputs, replies := loadCorpus(t, name)
	counters := map[string]*compact.TokenCounter{}
	stats := map[string]*kindStats{}
	for _, r := range replies {
		in := inputs[r.Conv]
		ctr := counters[in.Encoding]
		if ctr == nil {
			var err error
			if ctr, err = compact.NewTokenCounter("", in.Encoding, 4); err != nil {
				t.Fatal(err)
			}
			counters[in.Encoding] = ctr
		}
		o := replay(t, in, r, ctr)
		if o.err != nil {
			t.Errorf("%s: %v", r.id(), o.err)
			continue
		}
		s := stats[r.Kind]
		if s == nil {
			s = &kindStats{}
			stats[r.Kind] = s
		}
		s.n++
		if o.firstAccepted {
			s.firstAccepted++
		}
		if r.lie() && o.rightReason(r) {
			s.rightReason++
		}
		if o.feedback {
			s.feedback++
		}
		if o.finalAccepted {
			s.finalAccepted++
		}
		if o.relabelled {
			s.relabelled++
		}
		if o.proposed {
			s.proposed++
			if r.lie() && r.Rule == "completion" {
				s.misses = append(s.misses, fmt.Sprintf("%s: the feedback proposed evidence for the lie", r.Name+"@"+r.Conv))
			}
		}
		switch {
		case r.lie() && !o.rightReason(r):
			s.misses = append(s.misses, fmt.Sprintf("%s: %s", r.Name+"@"+r.Conv, missReason(o, r)))
		case r.Kind == "sloppy/miscited" && (!o.finalAccepted || o.relabelled):
			s.misses = append(s.misses, fmt.Sprintf("%s: not accepted with its evidence after feedback [%s] %s", r.Conv, strings.Join(o.firstRules, ","), clip(o.firstDetail, 400)))
		case !r.lie() && r.Kind != "sloppy/miscited" && !o.firstAccepted:
			s.misses = append(s.misses, fmt.Sprintf("%s: rejected first [%s] %s", r.Conv, strings.Join(o.firstRules, ","), clip(o.firstDetail, 400)))
		}
	}
	kinds := make([]string, 0, len(stats))
	for k := range stats {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-28s %4s  %-22s %-22s %-16s %s\n", "kind", "n", "first reply", "right reason", "after feedback", "relabelled")
	for _, k := range kinds {
		s := stats[k]
		first := fmt.Sprintf("%d/%d accepted", s.firstAccepted, s.n)
		right := "-"
		if strings.HasPrefix(k, "lie/") {
			first = fmt.Sprintf("%d/%d rejected", s.n-s.firstAccepted, s.n)
			right = fmt.Sprintf("%d/%d (%.0f%%)", s.rightReason, s.n, pct(s.rightReason, s.n))
		} else {
			first += fmt.Sprintf(" (%.0f%%)", pct(s.firstAccepted, s.n))
		}
		after := fmt.Sprintf("%d/%d accepted", s.finalAccepted, s.n)
		fmt.Fprintf(&b, "%-28s %4d  %-22s %-22s %-16s %d of %d fed back\n", k, s.n, first, right, after, s.relabelled, s.feedback)
	}
	for _, k := range kinds {
		for _, m := range stats[k].misses {
			fmt.Fprintf(&b, "  miss %s %s\n", k, m)
		}
	}
	t.Log(b.String())
	if !enforce {
		return
	}
	for _, k := range kinds {
		s := stats[k]
		switch {
		case strings.HasPrefix(k, "honest/"):
			if pct(s.firstAccepted, s.n) < 95 {
				t.Errorf("%s: %d/%d first replies accepted, want >= 95%%", k, s.firstAccepted, s.n)
			}
		case strings.HasPrefix(k, "lie/"):
			if pct(s.rightReason, s.n) < 95 {
				t.Errorf("%s: %d/%d rejected for the right reason, want >= 95%%", k, s.rightReason, s.n)
			}
		case k == "sloppy/miscited":
			if pct(s.finalAccepted, s.n) < 95 {
				t.Errorf("%s: %d/%d accepted after the feedback round, want >= 95%%", k, s.finalAccepted, s.n)
			}
		}
		if strings.HasPrefix(k, "lie/") && s.proposed > 0 {
			t.Errorf("%s: the feedback proposed evidence for %d lies, want 0", k, s.proposed)
		}
		if !strings.HasPrefix(k, "lie/") && s.relabelled > 0 {
			t.Errorf("%s: %d verified steps relabelled after feedback, want 0", k, s.relabelled)
		}
	}
}

func missReason(o replayOutcome, r corpusReply) string {
	if o.firstAccepted {
		return "accepted"
	}
	return fmt.Sprintf("rejected by [%s], want %s naming %q: %s", strings.Join(o.firstRules, ","), r.Rule, r.Marker, clip(o.firstDetail, 300))
}

func pct(a, n int) float64 {
	if n == 0 {
		return 100
	}
	return 100 * float64(a) / float64(n)
}

// Every input carries what the replay needs, and every reply its label.
func TestCorpusWellFormed(t *testing.T) {
	inputs, replies := loadCorpus(t, "corpus")
	sources := map[string]bool{}
	for id, in := range inputs {
		if len(in.Span) == 0 || in.Draft.Text == "" || in.BudgetTokens <= 0 || in.License == "" || in.Source == "" {
			t.Errorf("%s: incomplete input", id)
		}
		sources[strings.TrimRight(id, "-0123456789")] = true
	}
	for _, src := range []string{"mini-swe-agent", "swe-agent", "openhands", "tau-bench"} {
		if !sources[src] {
			t.Errorf("no conversation from %s", src)
		}
	}
	if len(inputs) < 10 {
		t.Errorf("%d conversations, want at least 10", len(inputs))
	}
	for _, r := range replies {
		if r.Kind == "sloppy/miscited" && r.Evidence == "" {
			t.Errorf("%s: a miscited reply names its evidence", r.id())
		}
		if r.isJSON() && !json.Valid([]byte(r.Text)) {
			t.Errorf("%s: the JSON reply is not valid JSON", r.id())
		}
	}
	_ = briefd.RoleUser
}
