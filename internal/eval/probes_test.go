package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

const probeDir = "testdata/probes"

// Every probe file of the set is well formed; when the shared histories
// are there, each also fits its history (cut, sources before it, uses
// after it).
func TestProbeSet(t *testing.T) {
	sets, err := LoadProbes(probeDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) < 18 {
		t.Errorf("%d probe files", len(sets))
	}
	n := 0
	for _, ps := range sets {
		n += len(ps.Probes)
		for _, p := range ps.Probes {
			if !strings.HasPrefix(p.ID, ps.Conversation+"/") {
				t.Errorf("probe %s of %s", p.ID, ps.Conversation)
			}
		}
		h, err := readHistory(filepath.Join(sharedHistories, ps.Conversation+".json"))
		if err != nil {
			continue
		}
		if err := ps.checkAgainst(h); err != nil {
			t.Errorf("%s: %v", ps.Conversation, err)
		}
	}
	t.Logf("%d probes in %d conversations", n, len(sets))
}

func TestLoadProbesRejects(t *testing.T) {
	for name, body := range map[string]string{
		"no probes":     `{"conversation": "x", "cut": 4, "probes": []}`,
		"bad dimension": `{"conversation": "x", "cut": 4, "probes": [{"id": "x/p1", "dimension": "mood", "question": "q", "gold": "g", "sources": ["m1"]}]}`,
		"no gold":       `{"conversation": "x", "cut": 4, "probes": [{"id": "x/p1", "dimension": "task", "question": "q", "gold": " ", "sources": ["m1"]}]}`,
		"unknown field": `{"conversation": "x", "cut": 4, "probs": []}`,
		"no sources":    `{"conversation": "x", "cut": 4, "probes": [{"id": "x/p1", "dimension": "task", "question": "q", "gold": "g"}]}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadProbes(dir); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// tauBench2Packets writes the packets of tau-bench-2, whose history ships
// in examples/, and returns the probes' and the packets' directories.
func tauBench2Packets(t *testing.T) (probes, out string, man *Manifest) {
	t.Helper()
	probes = t.TempDir()
	data, err := os.ReadFile(filepath.Join(probeDir, "tau-bench-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(probes, "tau-bench-2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "packets")
	man, err = WritePackets(t.Context(), PacketOptions{Probes: probes, Histories: examples, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return probes, out, man
}

func TestWritePackets(t *testing.T) {
	probes, out, man := tauBench2Packets(t)
	if len(man.Conversations) != 1 || !man.Conversations[0].Compacted {
		t.Fatalf("manifest %+v", man)
	}
	pm := man.Conversations[0]
	ps := mustProbes(t, probes)[0]
	if len(pm.Probes) != len(ps.Probes) || pm.BaselineChars > pm.BriefingChars || pm.BaselineChars < pm.BriefingChars-1 {
		t.Errorf("manifest %+v", pm)
	}
	for _, p := range pm.Probes {
		if len(p.Compacted)+len(p.Kept) == 0 || p.Location == "" {
			t.Errorf("probe %+v not located", p)
		}
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	brief, middle := read(pm.Packets[PacketBriefd]), read(pm.Packets[PacketMiddle])
	if brief == middle || pm.Packets[PacketBriefd] == pm.Packets[PacketMiddle] {
		t.Fatal("the two packets are the same")
	}
	for name, text := range map[string]string{"briefd": brief, "middle": middle} {
		for _, p := range ps.Probes {
			if !strings.Contains(text, p.Question) {
				t.Errorf("%s packet lacks %s", name, p.ID)
			}
			if strings.Contains(text, p.Gold) {
				t.Errorf("%s packet holds the gold answer of %s", name, p.ID)
			}
		}
		// Both show the same pinned head and kept tail.
		if !strings.Contains(text, "[system]\n# Airline Agent Policy") || !strings.HasPrefix(text, "[system]") {
			t.Errorf("%s packet does not start with the pinned system prompt", name)
		}
		if !strings.Contains(text, "H8 [next_step]") {
			t.Errorf("%s packet lacks the hand-off questions", name)
		}
	}
	if !strings.Contains(brief, briefd.OpenTag) || strings.Contains(middle, briefd.OpenTag) {
		t.Error("the briefing is not in the briefd packet alone")
	}
	if !strings.Contains(middle, middleMark) {
		t.Error("the middle packet has no truncation mark")
	}
	gold := read(pm.Gold)
	for _, p := range ps.Probes {
		if !strings.Contains(gold, p.Gold) {
			t.Errorf("gold.md lacks the answer of %s", p.ID)
		}
	}
	if strings.Contains(gold, "A.txt") || strings.Contains(gold, "B.txt") {
		t.Error("gold.md says which packet is whose: graders who read it are not blind")
	}
	// The original, for graders: every message of the prefix by id, the
	// span and the kept tail marked.
	orig := read(pm.Original)
	for _, want := range []string{"[m0004 user]", "==== the compacted span begins", "==== the kept tail begins", "[" + pm.BoundaryID + " "} {
		if !strings.Contains(orig, want) {
			t.Errorf("original.txt lacks %q", want)
		}
	}

	// The grades template aggregates to all ungraded.
	agg, err := AggregateFile(filepath.Join(out, "grades.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{PacketBriefd, PacketMiddle} {
		var all Tally
		for _, tl := range agg.Methods[m].Probes {
			all.plus(tl)
		}
		if all.Ungraded != len(ps.Probes) || all.Graded() != 0 {
			t.Errorf("%s: template tallies %+v", m, all)
		}
	}
	var mf Manifest
	if err := json.Unmarshal([]byte(read("manifest.json")), &mf); err != nil || len(mf.Conversations) != 1 {
		t.Errorf("manifest.json: %v", err)
	}
	var sb strings.Builder
	if err := man.WriteTable(&sb); err != nil || !strings.Contains(sb.String(), "tau-bench-2") {
		t.Errorf("table: %v\n%s", err, sb.String())
	}
}

func mustProbes(t *testing.T, dir string) []ProbeSet {
	t.Helper()
	sets, err := LoadProbes(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

func TestWritePacketsChecksSources(t *testing.T) {
	probes := t.TempDir()
	body := `{"conversation": "tau-bench-2", "cut": 43, "facts_until": "m0025", "probes": [
	  {"id": "tau-bench-2/p1", "dimension": "task", "question": "q", "gold": "g", "sources": ["m0050"], "used_in": ["m0051"]}]}`
	if err := os.WriteFile(filepath.Join(probes, "tau-bench-2.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := WritePackets(t.Context(), PacketOptions{Probes: probes, Histories: examples, Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "m0050") {
		t.Errorf("a source after the cut: %v", err)
	}
}

func TestAggregateGrades(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	gf := GradesFile{Grades: []Grade{
		{Conversation: "c1", Method: PacketBriefd, Grader: "r1",
			Probes:     []ProbeVerdict{{"c1/p1", LocationSpan, VerdictUsable, ""}, {"c1/p2", LocationMixed, VerdictBare, ""}, {"c1/p3", LocationKept, VerdictUsable, ""}},
			Dimensions: map[string]*float64{"task": f(5), "readability": f(4), "errors": nil}},
		{Conversation: "c1", Method: PacketBriefd, Grader: "r2",
			Probes:     []ProbeVerdict{{"c1/p1", LocationSpan, VerdictMissing, ""}, {"c1/p2", LocationMixed, "", ""}},
			Dimensions: map[string]*float64{"task": f(4)}},
		{Conversation: "c1", Method: PacketMiddle, Grader: "r1",
			Probes:     []ProbeVerdict{{"c1/p1", LocationSpan, VerdictMissing, ""}},
			Dimensions: map[string]*float64{"task": f(3), "readability": f(2)}},
	}}
	agg, err := AggregateGrades(gf)
	if err != nil {
		t.Fatal(err)
	}
	b := agg.Methods[PacketBriefd]
	if got := b.NeedSpan(); got != (Tally{Usable: 1, Bare: 1, Missing: 1, Ungraded: 1}) {
		t.Errorf("briefd needing the span: %+v", got)
	}
	if got := b.Probes[LocationKept]; got != (Tally{Usable: 1}) {
		t.Errorf("briefd kept: %+v", got)
	}
	if s := b.Dimensions["task"]; s.Mean != 4.5 || s.N != 2 {
		t.Errorf("task %+v", s)
	}
	if s := b.Dimensions["errors"]; s.N != 0 {
		t.Errorf("a null score counted: %+v", s)
	}
	if got := b.Conversations["c1"]; got.Graded() != 3 {
		t.Errorf("per conversation %+v", got)
	}
	if len(agg.Graders) != 2 {
		t.Errorf("graders %q", agg.Graders)
	}
	var sb strings.Builder
	if err := agg.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"33.3% of 3", "task", "4.50 (n=2)", "3.00 (n=1)", "dimensions below 4.5 (readability 4): none"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}

	for name, g := range map[string]Grade{
		"verdict":   {Conversation: "c", Method: PacketBriefd, Probes: []ProbeVerdict{{"p", LocationSpan, "partly", ""}}},
		"method":    {Conversation: "c", Method: "llm"},
		"dimension": {Conversation: "c", Method: PacketBriefd, Dimensions: map[string]*float64{"style": f(3)}},
		"score":     {Conversation: "c", Method: PacketBriefd, Dimensions: map[string]*float64{"task": f(6)}},
		"location":  {Conversation: "c", Method: PacketBriefd, Probes: []ProbeVerdict{{"p", "tail", VerdictUsable, ""}}},
		"twice":     {Conversation: "c", Method: PacketBriefd, Probes: []ProbeVerdict{{"p", LocationSpan, VerdictUsable, ""}, {"p", LocationSpan, VerdictBare, ""}}},
	} {
		if _, err := AggregateGrades(GradesFile{Grades: []Grade{g}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	dup := Grade{Conversation: "c", Method: PacketBriefd, Grader: "r"}
	if _, err := AggregateGrades(GradesFile{Grades: []Grade{dup, dup}}); err == nil {
		t.Error("the same grader twice on one packet: accepted")
	}
}

func TestRenderTranscript(t *testing.T) {
	msgs := []briefd.Message{
		{ID: "s", Role: briefd.RoleSystem, Content: briefd.Text("be brief")},
		{ID: "u", Role: briefd.RoleUser, Content: briefd.Text("list files")},
		{ID: "a", Role: briefd.RoleAssistant, Content: briefd.Text("Listing."), ToolCalls: []briefd.ToolCall{
			{ID: "c1", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"cmd":"ls"}`}}}},
		{ID: "t", Role: briefd.RoleTool, ToolCallID: "c1", Content: briefd.Text("a.go\nb.go\n")},
		{ID: "b", Role: briefd.RoleUser, Content: briefd.Text("x"), Metadata: map[string]string{briefd.MetaKind: briefd.KindBriefing}},
	}
	var b strings.Builder
	renderTranscript(&b, msgs)
	want := "[system]\nbe brief\n\n[user]\nlist files\n\n[assistant]\nListing.\n[tool call: bash (c1)] {\"cmd\":\"ls\"}\n\n" +
		"[tool result: bash (c1)]\na.go\nb.go\n\n[user]\nx\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
