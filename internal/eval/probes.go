package eval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/briefd/briefd"
)

// ProbeSet is one conversation's probes: questions whose answers are facts
// of the part of the conversation that compaction replaces, facts that the
// conversation's future needed. The format is documented in docs/probes.md.
type ProbeSet struct {
	Conversation string `json:"conversation"`
	// Cut is the freeze point: the agent holds Messages[:Cut].
	Cut int `json:"cut"`
	// FactsUntil is the last message the answers may come from.
	FactsUntil string  `json:"facts_until"`
	Probes     []Probe `json:"probes"`
}

// Probe is one question with its gold answer.
type Probe struct {
	ID string `json:"id"`
	// Dimension is what the fact is about: one of ProbeDimensions.
	Dimension string `json:"dimension"`
	Question  string `json:"question"`
	Gold      string `json:"gold"`
	// Sources are the ids of the messages the answer comes from, UsedIn
	// those of the future that used it.
	Sources   []string `json:"sources"`
	UsedIn    []string `json:"used_in"`
	WhyNeeded string   `json:"why_needed"`
}

// ProbeDimensions are the dimensions a probe may have (docs/probes.md).
var ProbeDimensions = []string{"task", "user", "artifacts", "results", "errors", "decisions", "state", "next"}

// Where a probe's source messages are after the compaction at its cut.
const (
	// LocationSpan: every source was compacted; only the briefing (or the
	// baseline in its place) can answer.
	LocationSpan = "span"
	// LocationMixed: some sources were compacted, some kept verbatim.
	LocationMixed = "mixed"
	// LocationKept: every source is kept verbatim (pinned head or kept
	// tail); the answer is in the tail, whatever the briefing says.
	LocationKept = "kept"
)

// LoadProbes reads every *.json probe file of dir, sorted by name, and
// checks each on its own (ids, dimensions, non-empty fields).
func LoadProbes(dir string) ([]ProbeSet, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("eval: list probes: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("eval: no *.json probe file in %s", dir)
	}
	sort.Strings(files)
	var sets []ProbeSet
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		var ps ProbeSet
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ps); err != nil {
			return nil, fmt.Errorf("eval: probe file %s: %w", f, err)
		}
		if err := ps.check(); err != nil {
			return nil, fmt.Errorf("eval: probe file %s: %w", f, err)
		}
		if prev, dup := seen[ps.Conversation]; dup {
			return nil, fmt.Errorf("eval: probe files %s and %s are both for %s", prev, f, ps.Conversation)
		}
		seen[ps.Conversation] = f
		sets = append(sets, ps)
	}
	return sets, nil
}

func (ps *ProbeSet) check() error {
	switch {
	case ps.Conversation == "":
		return errors.New(`no "conversation"`)
	case ps.Cut <= 0:
		return fmt.Errorf("cut %d must be positive", ps.Cut)
	case len(ps.Probes) == 0:
		return errors.New("no probes")
	}
	ids := map[string]bool{}
	for i, p := range ps.Probes {
		switch {
		case p.ID == "":
			return fmt.Errorf("probe %d has no id", i+1)
		case ids[p.ID]:
			return fmt.Errorf("probe id %s used twice", p.ID)
		case !slices.Contains(ProbeDimensions, p.Dimension):
			return fmt.Errorf("probe %s: dimension %q is not one of %s", p.ID, p.Dimension, strings.Join(ProbeDimensions, ", "))
		case strings.TrimSpace(p.Question) == "" || strings.TrimSpace(p.Gold) == "":
			return fmt.Errorf("probe %s: question and gold must not be empty", p.ID)
		case len(p.Sources) == 0:
			return fmt.Errorf("probe %s: no source message", p.ID)
		}
		ids[p.ID] = true
	}
	return nil
}

// checkAgainst checks the probe set against its history: the cut is
// inside it, the sources are before the cut (and not after FactsUntil),
// the uses after it.
func (ps *ProbeSet) checkAgainst(h *briefd.History) error {
	if ps.Cut > len(h.Messages) {
		return fmt.Errorf("cut %d is past the history's %d messages", ps.Cut, len(h.Messages))
	}
	at := map[string]int{}
	for i, m := range h.Messages {
		at[m.ID] = i
	}
	limit := ps.Cut - 1
	if ps.FactsUntil != "" {
		i, ok := at[ps.FactsUntil]
		if !ok || i >= ps.Cut {
			return fmt.Errorf("facts_until %s is not a message before the cut", ps.FactsUntil)
		}
		limit = i
	}
	for _, p := range ps.Probes {
		for _, s := range p.Sources {
			if i, ok := at[s]; !ok || i > limit {
				return fmt.Errorf("probe %s: source %s is not a message up to %s", p.ID, s, h.Messages[limit].ID)
			}
		}
		for _, u := range p.UsedIn {
			if i, ok := at[u]; !ok || i < ps.Cut {
				return fmt.Errorf("probe %s: used_in %s is not a message after the cut", p.ID, u)
			}
		}
	}
	return nil
}

// PacketOptions tune [WritePackets].
type PacketOptions struct {
	// Options carries the engine's configuration; Frac does not apply
	// (each probe set gives its cut).
	Options
	// Probes is the directory of probe files, Histories that of the
	// histories they were written for, Out where the packets go.
	Probes, Histories, Out string
}

// Methods of the probe packets.
const (
	// PacketBriefd is the history spliced by a forced compaction.
	PacketBriefd = "briefd"
	// PacketMiddle is the same history with the serialized span,
	// middle-truncated to the briefing's length, in place of the briefing.
	PacketMiddle = "middle"
)

// Manifest describes the packets written by [WritePackets]. It is written
// to manifest.json in the output directory.
type Manifest struct {
	Out           string           `json:"out"`
	Conversations []PacketManifest `json:"conversations"`
}

// PacketManifest is one conversation's packets.
type PacketManifest struct {
	Conversation string `json:"conversation"`
	Cut          int    `json:"cut"`
	// Window is the context window of the compaction: chars(prefix)/4+1,
	// as eval_quality.py sizes it.
	Window int `json:"window"`
	// Compacted is false when the engine did not compact at the cut;
	// Reason says why, and no packet is written.
	Compacted  bool   `json:"compacted"`
	Reason     string `json:"reason,omitempty"`
	BoundaryID string `json:"boundary_id,omitempty"`
	// SpanMessages counts the messages the briefing replaced, SpanChars
	// their characters (msg_text).
	SpanMessages int `json:"span_messages,omitempty"`
	SpanChars    int `json:"span_chars,omitempty"`
	// BriefingChars is the length of the briefing message the agent reads;
	// BaselineChars that of the message in its place in the middle packet.
	BriefingChars int `json:"briefing_chars,omitempty"`
	BaselineChars int `json:"baseline_chars,omitempty"`
	// Packets maps each method (briefd, middle) to its packet file,
	// relative to the output directory. The files are named A and B so
	// that a reader cannot tell which is which.
	Packets map[string]string `json:"packets,omitempty"`
	// Gold is the graders' file: questions, gold answers, sources. It
	// does not say which packet is whose.
	Gold string `json:"gold,omitempty"`
	// Original is the history up to the cut with its message ids, the
	// boundary marked: what graders check the answers against.
	Original string          `json:"original,omitempty"`
	Probes   []ProbeLocation `json:"probes"`
}

// ProbeLocation says where a probe's sources are after the compaction.
type ProbeLocation struct {
	ID        string `json:"id"`
	Dimension string `json:"dimension"`
	// Location is span, mixed or kept (see LocationSpan).
	Location string `json:"location"`
	// Compacted and Kept split the probe's sources.
	Compacted []string `json:"compacted,omitempty"`
	Kept      []string `json:"kept,omitempty"`
}

// WritePackets compacts each probe set's history at its cut (forced, with
// the window eval_quality.py would give it) and writes, per conversation,
// the reader packets (the spliced history as the agent reads it, then the
// questions), the graders' gold file, and, for the whole set,
// manifest.json and a grades.json template for [Aggregate]. The packets
// of a conversation the engine does not compact are not written; the
// manifest says why.
func WritePackets(ctx context.Context, opts PacketOptions) (*Manifest, error) {
	sets, err := LoadProbes(opts.Probes)
	if err != nil {
		return nil, err
	}
	comp, err := newCompactor(opts.Options, true)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	man := &Manifest{Out: opts.Out}
	grades := GradesFile{Protocol: "docs/probes.md", Grades: []Grade{}}
	for i, ps := range sets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		file := filepath.Join(opts.Histories, ps.Conversation+".json")
		if opts.Progress != nil {
			opts.Progress(i, len(sets), file)
		}
		h, err := readHistory(file)
		if err != nil {
			return nil, err
		}
		if err := ps.checkAgainst(h); err != nil {
			return nil, fmt.Errorf("eval: probes of %s: %w", ps.Conversation, err)
		}
		pm, err := writeConversationPackets(ctx, comp, h, ps, opts.Out)
		if err != nil {
			return nil, fmt.Errorf("eval: packets of %s: %w", ps.Conversation, err)
		}
		man.Conversations = append(man.Conversations, *pm)
		if pm.Compacted {
			for _, method := range []string{PacketBriefd, PacketMiddle} {
				grades.Grades = append(grades.Grades, templateGrade(pm, method))
			}
		}
	}
	if err := writeJSON(filepath.Join(opts.Out, "manifest.json"), man); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(opts.Out, "grades.json"), grades); err != nil {
		return nil, err
	}
	return man, nil
}

func writeConversationPackets(ctx context.Context, comp *compactor, h *briefd.History, ps ProbeSet, out string) (*PacketManifest, error) {
	prefix := h.Messages[:ps.Cut]
	pm := &PacketManifest{Conversation: ps.Conversation, Cut: ps.Cut, Window: pyLen(joinText(prefix))/4 + 1}
	res, err := comp.compact(ctx, h.ID, prefix, pm.Window)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	compacted := map[string]bool{}
	if res.Compacted {
		for _, id := range res.Briefing.CompactedIDs {
			compacted[id] = true
		}
	}
	for _, p := range ps.Probes {
		loc := ProbeLocation{ID: p.ID, Dimension: p.Dimension}
		for _, s := range p.Sources {
			if compacted[s] {
				loc.Compacted = append(loc.Compacted, s)
			} else {
				loc.Kept = append(loc.Kept, s)
			}
		}
		switch {
		case len(loc.Kept) == 0:
			loc.Location = LocationSpan
		case len(loc.Compacted) == 0:
			loc.Location = LocationKept
		default:
			loc.Location = LocationMixed
		}
		pm.Probes = append(pm.Probes, loc)
	}
	if !res.Compacted {
		pm.Reason = res.Reason
		return pm, nil
	}
	pm.Compacted, pm.BoundaryID = true, res.Briefing.BoundaryID
	var span []briefd.Message
	for _, m := range prefix {
		if compacted[m.ID] {
			span = append(span, m)
		}
	}
	pm.SpanMessages, pm.SpanChars = len(span), sumChars(span)

	briefing := -1
	for i := range res.Messages {
		if res.Messages[i].IsBriefing() {
			briefing = i
			break
		}
	}
	if briefing < 0 {
		return nil, errors.New("the spliced history has no briefing message")
	}
	bm := res.Messages[briefing]
	pm.BriefingChars = pyLen(bm.Content.String())
	baseline := middleTruncate(serialize(span), pm.BriefingChars)
	pm.BaselineChars = pyLen(baseline)
	withBaseline := slices.Clone(res.Messages)
	withBaseline[briefing] = briefd.Message{ID: bm.ID, Role: briefd.RoleUser, Content: briefd.Text(baseline)}

	dir := filepath.Join(out, ps.Conversation)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Which method is A is a fixed function of the conversation, so that
	// runs agree and about half the packets named A are briefd's.
	names := map[string]string{PacketBriefd: "A.txt", PacketMiddle: "B.txt"}
	hash := fnv.New32a()
	hash.Write([]byte(ps.Conversation))
	if hash.Sum32()%2 == 1 {
		names[PacketBriefd], names[PacketMiddle] = "B.txt", "A.txt"
	}
	pm.Packets = map[string]string{}
	for method, msgs := range map[string][]briefd.Message{PacketBriefd: res.Messages, PacketMiddle: withBaseline} {
		var b strings.Builder
		renderTranscript(&b, msgs)
		writeQuestions(&b, ps)
		rel := filepath.Join(ps.Conversation, names[method])
		if err := os.WriteFile(filepath.Join(out, rel), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		pm.Packets[method] = rel
	}
	pm.Gold = filepath.Join(ps.Conversation, "gold.md")
	if err := os.WriteFile(filepath.Join(out, pm.Gold), []byte(goldSheet(ps, pm)), 0o644); err != nil {
		return nil, err
	}
	pm.Original = filepath.Join(ps.Conversation, "original.txt")
	if err := os.WriteFile(filepath.Join(out, pm.Original), []byte(renderOriginal(prefix, compacted, pm.BoundaryID)), 0o644); err != nil {
		return nil, err
	}
	return pm, nil
}

// renderOriginal writes the history up to the cut for graders: each
// message with its id and role, tool calls with their arguments, and
// marks where the compacted span begins and where the kept tail does.
func renderOriginal(prefix []briefd.Message, compacted map[string]bool, boundary string) string {
	var b strings.Builder
	inSpan := false
	for i := range prefix {
		m := &prefix[i]
		switch {
		case compacted[m.ID] && !inSpan:
			inSpan = true
			b.WriteString("==== the compacted span begins: the hand-off replaces the messages from here ====\n\n")
		case m.ID == boundary:
			inSpan = false
			b.WriteString("==== the kept tail begins: the messages from here are in both packets verbatim ====\n\n")
		}
		fmt.Fprintf(&b, "[%s %s]", m.ID, m.Role)
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " (result of %s)", m.ToolCallID)
		}
		b.WriteString("\n")
		if c := m.Content.String(); c != "" {
			b.WriteString(c)
			if !strings.HasSuffix(c, "\n") {
				b.WriteByte('\n')
			}
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "[tool call: %s (%s)] %s\n", tc.Function.Name, tc.ID, tc.Function.Arguments)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// middleMark joins the two ends of a middle-truncated span.
const middleMark = "\n[... the middle of the earlier conversation was cut for size ...]\n"

// middleTruncate is the headtail baseline of eval_quality.py (ser[:n//2] +
// ser[-(n//2):]) for a reader: the cut is marked, and the mark is taken
// out of the size so that the whole is at most n characters.
func middleTruncate(ser string, n int) string {
	if pyLen(ser) <= n {
		return ser
	}
	half := max(0, n-pyLen(middleMark)) / 2
	if half == 0 {
		return pyHead(ser, n)
	}
	return pyHead(ser, half) + middleMark + pySuffix(ser, half)
}

// renderTranscript writes msgs as plain text, as a model receives a chat:
// each message's role and content in order, tool calls with their
// arguments, tool results with the call they answer. Message ids and
// metadata are left out: the model does not see them.
func renderTranscript(b *strings.Builder, msgs []briefd.Message) {
	calls := map[string]string{}
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			b.WriteString("\n")
		}
		switch m.Role {
		case briefd.RoleTool:
			fmt.Fprintf(b, "[tool result: %s (%s)]\n", cmp.Or(calls[m.ToolCallID], "?"), m.ToolCallID)
		default:
			fmt.Fprintf(b, "[%s]\n", m.Role)
		}
		if c := m.Content.String(); c != "" {
			b.WriteString(c)
			if !strings.HasSuffix(c, "\n") {
				b.WriteByte('\n')
			}
		}
		if n := m.Content.Images(); n > 0 {
			fmt.Fprintf(b, "[%d image(s)]\n", n)
		}
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = tc.Function.Name
			fmt.Fprintf(b, "[tool call: %s (%s)] %s\n", tc.Function.Name, tc.ID, tc.Function.Arguments)
		}
	}
}

// handOffQuestions are the fixed questionnaire of the 0-5 dimensions (all
// but readability, which the grader judges from the packet itself).
var handOffQuestions = []struct{ key, question string }{
	{"task", "What is the task?"},
	{"user_instructions", "What did the user ask for, require or forbid, in their own words where it matters?"},
	{"artifacts", "Which files, records or other objects did the work touch, and what is the last known state of each?"},
	{"commands_results", "Which commands or tool calls were run, and what did each show?"},
	{"errors", "Which errors occurred, and was each resolved (how)?"},
	{"decisions", "What was decided, and why?"},
	{"state", "What is done and verified, what is failing, what is pending?"},
	{"next_step", "What is the next step?"},
}

func writeQuestions(b *strings.Builder, ps ProbeSet) {
	b.WriteString("\n========================================================================\n")
	b.WriteString("[questions for the reader]\n")
	b.WriteString("You are the assistant of the conversation above, at its last message. Answer from the conversation above\n" +
		"alone. Quote identifiers, values and paths exactly. When it does not hold an answer, write \"not in the\n" +
		"history\" rather than guess.\n\n")
	for i, p := range ps.Probes {
		fmt.Fprintf(b, "Q%d [%s] %s\n", i+1, p.ID, p.Question)
	}
	b.WriteString("\nThen hand the work over in a few lines each:\n")
	for i, q := range handOffQuestions {
		fmt.Fprintf(b, "H%d [%s] %s\n", i+1, q.key, q.question)
	}
}

// goldSheet is the graders' file of a conversation.
func goldSheet(ps ProbeSet, pm *PacketManifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: gold answers (for graders only)\n\n", ps.Conversation)
	fmt.Fprintf(&b, "Frozen after message %d; boundary %s; %d messages (%d characters) compacted into a briefing of %d characters.\n",
		ps.Cut, pm.BoundaryID, pm.SpanMessages, pm.SpanChars, pm.BriefingChars)
	// Which packet is whose is in manifest.json and grades.json, not here:
	// graders who read this file stay blind.
	fmt.Fprintf(&b, "The original: original.txt, the history's messages up to the cut; answers come from messages up to %s.\n\n", ps.FactsUntil)
	for i, p := range ps.Probes {
		loc := pm.Probes[i]
		fmt.Fprintf(&b, "## Q%d %s (%s; sources %s: %s)\n\n", i+1, p.ID, p.Dimension, loc.Location, strings.Join(p.Sources, ", "))
		fmt.Fprintf(&b, "Question: %s\n\nGold: %s\n\nUsed later in %s: %s\n\n", p.Question, p.Gold, strings.Join(p.UsedIn, ", "), p.WhyNeeded)
	}
	b.WriteString("## Verdicts\n\nusable: the fact is there and correct enough to act on. bare: only a name or code, without the fact\n" +
		"the question asks. missing: absent or wrong. Score each H question 0-5 against the original, and readability\n" +
		"0-5 from the packet itself.\n")
	return b.String()
}

// WriteTable prints a line per conversation: its compaction and where its
// probes' sources are.
func (m *Manifest) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\tcut\twindow\tboundary\tspan msgs\tspan chars\tbriefing\tbaseline\tprobes\tspan\tmixed\tkept\t")
	total := map[string]int{}
	for _, c := range m.Conversations {
		n := map[string]int{}
		for _, p := range c.Probes {
			n[p.Location]++
			total[p.Location]++
		}
		if !c.Compacted {
			fmt.Fprintf(tw, "%s\t%d\t%d\tnot compacted\t\t\t\t\t%d\t\t\t\t\n", c.Conversation, c.Cut, c.Window, len(c.Probes))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c.Conversation, c.Cut, c.Window, c.BoundaryID,
			c.SpanMessages, c.SpanChars, c.BriefingChars, c.BaselineChars, len(c.Probes), n[LocationSpan], n[LocationMixed], n[LocationKept])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range m.Conversations {
		if !c.Compacted {
			fmt.Fprintf(w, "  %s not compacted: %s\n", c.Conversation, c.Reason)
		}
	}
	_, err := fmt.Fprintf(w, "\nProbes: %d with every source compacted, %d mixed, %d answered from kept messages (reported apart).\n"+
		"Packets in %s: give each reader one packet file alone; graders get gold.md and fill grades.json (docs/probes.md).\n",
		total[LocationSpan], total[LocationMixed], total[LocationKept], m.Out)
	return err
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("eval: encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}
