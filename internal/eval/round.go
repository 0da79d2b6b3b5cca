package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A round of the probe set (docs/probes.md) is run by agents outside the
// program: readers who each see packets of several conversations but never
// both packets of one, and graders who grade both packets of the
// conversations they are given. WriteRound hands the work out and writes
// each agent's instructions; CollectGrades gathers what the graders wrote
// into the grades file [AggregateGrades] reads.

// RoundOptions size a round.
type RoundOptions struct {
	// Readers and Graders are how many agents of each kind there are;
	// GradersPerConversation is how many graders grade each conversation.
	Readers, Graders, GradersPerConversation int
}

// Round is the assignment, written to round/assignment.json.
type Round struct {
	// Readers lists, per reader, the packets it reads (relative to the
	// packets directory, as in the manifest).
	Readers [][]string `json:"readers"`
	// Graders lists, per grader, the conversations it grades.
	Graders [][]string `json:"graders"`
}

// GraderFile is what a grader writes for one conversation, to
// round/grades/<grader>-<conversation>.json: its verdicts on the answers
// to both packets, by the packets' letters, so that it need not know
// which packet is whose.
type GraderFile struct {
	Conversation string                  `json:"conversation"`
	Grader       string                  `json:"grader"`
	Packets      map[string]GraderPacket `json:"packets"`
}

// GraderPacket is a grader's verdicts on one packet's answers.
type GraderPacket struct {
	// Probes maps a probe id to usable, bare or missing.
	Probes map[string]string `json:"probes"`
	// Dimensions maps each of GradeDimensions to a 0-5 score.
	Dimensions map[string]float64 `json:"dimensions"`
	Notes      string             `json:"notes,omitempty"`
}

// Assign hands the compacted conversations' packets to readers and the
// conversations to graders: conversation i's packet A goes to reader
// i mod R and its packet B to reader i+1 mod R, so no reader reads both
// packets of one conversation and each reads about 2n/R; conversation i
// goes to graders i, i+1, ... mod G.
func Assign(man *Manifest, opts RoundOptions) (*Round, error) {
	if opts.Readers < 2 {
		return nil, errors.New("eval: a round needs at least two readers: one reader must not read both packets of a conversation")
	}
	if opts.GradersPerConversation < 1 || opts.Graders < opts.GradersPerConversation {
		return nil, fmt.Errorf("eval: %d graders cannot give each conversation %d", opts.Graders, opts.GradersPerConversation)
	}
	r := &Round{Readers: make([][]string, opts.Readers), Graders: make([][]string, opts.Graders)}
	i := 0
	for _, c := range man.Conversations {
		if !c.Compacted {
			continue
		}
		for k, letter := range []string{"A.txt", "B.txt"} {
			rel := filepath.Join(c.Conversation, letter)
			reader := (i + k) % opts.Readers
			r.Readers[reader] = append(r.Readers[reader], rel)
		}
		for k := range opts.GradersPerConversation {
			g := (i + k) % opts.Graders
			r.Graders[g] = append(r.Graders[g], c.Conversation)
		}
		i++
	}
	switch {
	case i == 0:
		return nil, errors.New("eval: no conversation was compacted: no packets to hand out")
	case opts.Readers > 2*i:
		return nil, fmt.Errorf("eval: %d readers for %d packets: some would read nothing", opts.Readers, 2*i)
	case opts.Graders > i*opts.GradersPerConversation:
		return nil, fmt.Errorf("eval: %d graders for %d gradings: some would grade nothing", opts.Graders, i*opts.GradersPerConversation)
	}
	return r, nil
}

// WriteRound reads dir/manifest.json (written by [WritePackets]), hands
// the work out (Assign) and writes, under dir/round, the assignment and
// one instruction file per agent (reader-N.md, grader-N.md) naming the
// files it may read and where it writes. Graders write into
// dir/round/grades, which CollectGrades reads.
func WriteRound(dir string, opts RoundOptions) (*Round, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	man, err := readManifest(abs)
	if err != nil {
		return nil, err
	}
	r, err := Assign(man, opts)
	if err != nil {
		return nil, err
	}
	round := filepath.Join(abs, "round")
	dirs := []string{round, filepath.Join(round, "grades")}
	for k := range r.Readers {
		// A directory per reader: a reader who looks around its own
		// finds no other reader's answers (to a conversation's other
		// packet).
		dirs = append(dirs, readerDir(abs, k))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
	}
	if err := writeJSON(filepath.Join(round, "assignment.json"), r); err != nil {
		return nil, err
	}
	answers := map[string]string{} // packet -> its answers file
	for k, packets := range r.Readers {
		for _, p := range packets {
			answers[p] = answerFile(abs, k, p)
		}
		if err := writeText(filepath.Join(round, fmt.Sprintf("reader-%d.md", k+1)), readerInstructions(abs, packets, answers)); err != nil {
			return nil, err
		}
	}
	for k, convs := range r.Graders {
		name := fmt.Sprintf("g%d", k+1)
		if err := writeText(filepath.Join(round, fmt.Sprintf("grader-%d.md", k+1)), graderInstructions(abs, name, convs, answers)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readerDir is where reader k (from 0) writes its answers.
func readerDir(dir string, k int) string {
	return filepath.Join(dir, "round", "answers", fmt.Sprintf("reader-%d", k+1))
}

// answerFile is where reader k writes its answers to a packet.
func answerFile(dir string, k int, packet string) string {
	conv, letter := filepath.Split(packet)
	return filepath.Join(readerDir(dir, k), filepath.Clean(conv)+"-"+strings.TrimSuffix(letter, ".txt")+".md")
}

func readerInstructions(dir string, packets []string, answers map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `You are a reader in a blind test of conversation hand-offs. You will read %d text files, each a separate,
unrelated conversation between a user and an AI agent, ending with questions for the reader. Answer each
file's questions from that file's text alone, as if you were the assistant at its last message.

- Read only the files named below, each whole. Open no other file or directory, do not search, and run no
  program on the files.
- For each file, answer every Q question (Q1, Q2, ...) and then H1 to H8, each under its id ("Q1: ...",
  "H1: ..."). Quote identifiers, values and paths exactly. When the file does not hold an answer, write
  "not in the history" rather than guess. The H answers take a few lines each.
- Write each file's answers to the path given, then go on to the next file.

`, len(packets))
	for i, p := range packets {
		fmt.Fprintf(&b, "%d. Read %s and write your answers to %s\n", i+1, filepath.Join(dir, p), answers[p])
	}
	b.WriteString("\nWhen all are written, reply with the list of answer files.\n")
	return b.String()
}

func graderInstructions(dir, name string, convs []string, answers map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `You are grader %s in a blind test of conversation hand-offs. In each conversation below, the older part
of an AI agent's conversation was replaced by a hand-off block, in two ways (packets A and B; you are not
told which method is which), and a reader who saw only one packet answered questions. Grade both readers'
answers against the truth.

For each conversation C, read (paths under %s):
- C/gold.md: each question with its gold answer, the messages it comes from, what the future used it for;
- C/original.txt: the conversation up to the cut, the truth; marks show where the replaced part begins and
  where the kept tail begins;
- C/A.txt and C/B.txt: what the readers saw; the hand-off block stands where the replaced part was;
- the readers' answers to C/A.txt and C/B.txt, at the paths listed with C below.

Grade each packet separately (these instructions are the whole protocol):
1. Per probe (Q1 is C/p1, ...), a verdict: "usable" (the fact is there and correct enough to act on),
   "bare" (only a name, code or id without the fact asked for), "missing" (absent, or wrong).
2. A 0-5 score per dimension from the H answers, judged against original.txt: task (H1), user_instructions
   (H2), artifacts (H3), commands_results (H4), errors (H5), decisions (H6), state (H7), next_step (H8).
   5 complete and correct, the agent could go on without re-reading anything; 4 correct, a detail missing
   that costs little; 3 the main point, but something needed to act is missing or vague; 2 partial: much
   missing, or something misleading; 1 hardly anything usable; 0 absent or wrong.
3. readability, 0-5, of the hand-off block itself, read as an agent would: 5 reads in one pass as a
   hand-off; 3 usable with effort (noise, lists to decode); 1 mostly noise; 0 unusable.
4. notes: one to three sentences on what cost points.

After each conversation write %s/round/grades/%s-C.json, in this shape (every probe id of C; integer scores):
{"conversation": "C", "grader": "%s", "packets": {"A": {"probes": {"C/p1": "usable"}, "dimensions": {"task": 5, "user_instructions": 5, "artifacts": 4, "commands_results": 4, "errors": 4, "decisions": 4, "state": 4, "next_step": 5, "readability": 4}, "notes": "..."}, "B": {...}}}

Open no other files. Conversations:
`, name, dir, dir, name, name)
	for _, c := range convs {
		fmt.Fprintf(&b, "- %s: answers to A in %s, to B in %s\n", c, answers[filepath.Join(c, "A.txt")], answers[filepath.Join(c, "B.txt")])
	}
	b.WriteString("\nWhen all are written, reply with the files written and a line per conversation on how A and B compared.\n")
	return b.String()
}

// CollectGrades reads dir/manifest.json, dir/round/assignment.json and
// the graders' files in dir/round/grades, and returns them as a grades
// file: each packet letter mapped back to its method, each verdict to its
// probe. A file must be named after its grader and conversation, come
// from a grader the round gave that conversation, grade both packets and
// give every probe a verdict and every dimension a score; any other file
// (one left from an earlier round, one half written) is an error that
// names it.
func CollectGrades(dir string) (GradesFile, error) {
	gf := GradesFile{Protocol: "docs/probes.md", Grades: []Grade{}}
	man, err := readManifest(dir)
	if err != nil {
		return gf, err
	}
	var r Round
	data, err := os.ReadFile(filepath.Join(dir, "round", "assignment.json"))
	if err != nil {
		return gf, fmt.Errorf("eval: %w (hand the round out first: worker eval --round)", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return gf, fmt.Errorf("eval: %s: %w", filepath.Join(dir, "round", "assignment.json"), err)
	}
	assigned := map[string]bool{} // grader-conversation
	for k, convs := range r.Graders {
		for _, c := range convs {
			assigned[fmt.Sprintf("g%d-%s", k+1, c)] = true
		}
	}
	byConv := map[string]*PacketManifest{}
	for i := range man.Conversations {
		byConv[man.Conversations[i].Conversation] = &man.Conversations[i]
	}
	files, err := filepath.Glob(filepath.Join(dir, "round", "grades", "*.json"))
	if err != nil {
		return gf, fmt.Errorf("eval: %w", err)
	}
	if len(files) == 0 {
		return gf, fmt.Errorf("eval: no graders' files in %s", filepath.Join(dir, "round", "grades"))
	}
	slices.Sort(files)
	for _, f := range files {
		grades, err := readGraderFile(f, byConv, assigned)
		if err != nil {
			return gf, fmt.Errorf("eval: %s: %w", f, err)
		}
		gf.Grades = append(gf.Grades, grades...)
	}
	return gf, nil
}

func readGraderFile(path string, byConv map[string]*PacketManifest, assigned map[string]bool) ([]Grade, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f GraderFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	pm := byConv[f.Conversation]
	key := f.Grader + "-" + f.Conversation
	switch {
	case pm == nil || !pm.Compacted:
		return nil, fmt.Errorf("conversation %q has no packets", f.Conversation)
	case f.Grader == "":
		return nil, errors.New("no grader named")
	case filepath.Base(path) != key+".json":
		return nil, fmt.Errorf("it holds %s's grades of %s: its name should be %s.json", f.Grader, f.Conversation, key)
	case !assigned[key]:
		return nil, fmt.Errorf("the round did not give %s to %s (a file of an earlier round?)", f.Conversation, f.Grader)
	}
	methods := map[string]string{}
	for method, rel := range pm.Packets {
		methods[strings.TrimSuffix(filepath.Base(rel), ".txt")] = method
	}
	letters := make([]string, 0, len(f.Packets))
	for l := range f.Packets {
		if _, ok := methods[l]; !ok {
			return nil, fmt.Errorf("no packet %q", l)
		}
		letters = append(letters, l)
	}
	if len(letters) != len(methods) {
		return nil, fmt.Errorf("%d of the %d packets graded: a round's grader grades both", len(letters), len(methods))
	}
	slices.Sort(letters)
	var out []Grade
	for _, letter := range letters {
		gp := f.Packets[letter]
		method := methods[letter]
		g := templateGrade(pm, method)
		g.Grader, g.Notes = f.Grader, gp.Notes
		for i := range g.Probes {
			v, ok := gp.Probes[g.Probes[i].ID]
			if !ok || v == "" {
				return nil, fmt.Errorf("packet %s: no verdict for %s", letter, g.Probes[i].ID)
			}
			g.Probes[i].Verdict = v
		}
		if len(gp.Probes) != len(g.Probes) {
			return nil, fmt.Errorf("packet %s: %d verdicts for %d probes", letter, len(gp.Probes), len(g.Probes))
		}
		for _, d := range GradeDimensions {
			v, ok := gp.Dimensions[d]
			if !ok {
				return nil, fmt.Errorf("packet %s: no score for %s", letter, d)
			}
			g.Dimensions[d] = &v
		}
		out = append(out, g)
	}
	return out, nil
}

func readManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("eval: %w (write the packets first: worker eval --probes)", err)
	}
	var man Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	return &man, nil
}

func writeText(path, text string) error {
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}
