package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		convs int
		opts  RoundOptions
	}{
		{18, RoundOptions{Readers: 6, Graders: 6, GradersPerConversation: 3}},
		{5, RoundOptions{Readers: 2, Graders: 3, GradersPerConversation: 3}},
		{7, RoundOptions{Readers: 4, Graders: 5, GradersPerConversation: 2}},
	} {
		man := &Manifest{Conversations: []PacketManifest{{Conversation: "not-compacted"}}}
		for i := range tc.convs {
			man.Conversations = append(man.Conversations, PacketManifest{Conversation: fmt.Sprintf("c%d", i), Compacted: true})
		}
		r, err := Assign(man, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		loads := []int{}
		for _, packets := range r.Readers {
			convs := map[string]bool{}
			for _, p := range packets {
				seen[p]++
				c := filepath.Dir(p)
				if convs[c] {
					t.Errorf("%+v: a reader reads both packets of %s", tc.opts, c)
				}
				convs[c] = true
			}
			loads = append(loads, len(packets))
		}
		if len(seen) != 2*tc.convs || slices.Max(loads)-slices.Min(loads) > 2 {
			t.Errorf("%+v: %d packets handed out, reader loads %v", tc.opts, len(seen), loads)
		}
		for p, n := range seen {
			if n != 1 || strings.HasPrefix(p, "not-compacted") {
				t.Errorf("%+v: %s read %d times", tc.opts, p, n)
			}
		}
		graded := map[string]map[int]bool{}
		for g, convs := range r.Graders {
			for _, c := range convs {
				if graded[c] == nil {
					graded[c] = map[int]bool{}
				}
				graded[c][g] = true
			}
		}
		for c, gs := range graded {
			if len(gs) != tc.opts.GradersPerConversation {
				t.Errorf("%+v: %s has %d graders", tc.opts, c, len(gs))
			}
		}
		if len(graded) != tc.convs {
			t.Errorf("%+v: %d conversations graded", tc.opts, len(graded))
		}
	}
	man := &Manifest{Conversations: []PacketManifest{{Conversation: "c", Compacted: true}}}
	if _, err := Assign(man, RoundOptions{Readers: 1, Graders: 3, GradersPerConversation: 3}); err == nil {
		t.Error("one reader would read both packets")
	}
	if _, err := Assign(man, RoundOptions{Readers: 2, Graders: 2, GradersPerConversation: 3}); err == nil {
		t.Error("two graders cannot give a conversation three")
	}
	if _, err := Assign(man, RoundOptions{Readers: 3, Graders: 1, GradersPerConversation: 1}); err == nil {
		t.Error("three readers for two packets: one would read nothing")
	}
	if _, err := Assign(man, RoundOptions{Readers: 2, Graders: 2, GradersPerConversation: 1}); err == nil {
		t.Error("two graders for one grading: one would grade nothing")
	}
}

// A round on tau-bench-2's packets: the instructions name the files, and
// a grader's file by packet letters comes back as grades by method.
func TestRoundCollectGrades(t *testing.T) {
	_, out, man := tauBench2Packets(t)
	if _, err := WriteRound(out, RoundOptions{Readers: 2, Graders: 1, GradersPerConversation: 1}); err != nil {
		t.Fatal(err)
	}
	reader, err := os.ReadFile(filepath.Join(out, "round", "reader-1.md"))
	if err != nil {
		t.Fatal(err)
	}
	grader, err := os.ReadFile(filepath.Join(out, "round", "grader-1.md"))
	if err != nil {
		t.Fatal(err)
	}
	aAnswers := filepath.Join(out, "round", "answers", "reader-1", "tau-bench-2-A.md")
	bAnswers := filepath.Join(out, "round", "answers", "reader-2", "tau-bench-2-B.md")
	if !strings.Contains(string(reader), filepath.Join(out, "tau-bench-2", "A.txt")) || !strings.Contains(string(reader), aAnswers) ||
		strings.Contains(string(reader), "B.txt") {
		t.Errorf("reader-1.md:\n%s", reader)
	}
	if !strings.Contains(string(grader), "- tau-bench-2: answers to A in "+aAnswers+", to B in "+bAnswers+"\n") || !strings.Contains(string(grader), filepath.Join(out, "round", "grades", "g1-C.json")) {
		t.Errorf("grader-1.md:\n%s", grader)
	}
	for _, d := range []string{"reader-1", "reader-2"} {
		if st, err := os.Stat(filepath.Join(out, "round", "answers", d)); err != nil || !st.IsDir() {
			t.Errorf("no answers directory for %s: %v", d, err)
		}
	}

	pm := man.Conversations[0]
	briefdLetter := strings.TrimSuffix(filepath.Base(pm.Packets[PacketBriefd]), ".txt")
	gp := func(verdict string, score float64) GraderPacket {
		p := GraderPacket{Probes: map[string]string{}, Dimensions: map[string]float64{}}
		for _, pr := range pm.Probes {
			p.Probes[pr.ID] = verdict
		}
		for _, d := range GradeDimensions {
			p.Dimensions[d] = score
		}
		return p
	}
	other := map[string]string{"A": "B", "B": "A"}[briefdLetter]
	f := GraderFile{Conversation: "tau-bench-2", Grader: "g1", Packets: map[string]GraderPacket{briefdLetter: gp(VerdictUsable, 5), other: gp(VerdictMissing, 2)}}
	grades := filepath.Join(out, "round", "grades")
	write := func(f GraderFile) {
		b, _ := json.Marshal(f)
		if err := os.WriteFile(filepath.Join(grades, "g1-tau-bench-2.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(f)
	gf, err := CollectGrades(out)
	if err != nil {
		t.Fatal(err)
	}
	agg, err := AggregateGrades(gf)
	if err != nil {
		t.Fatal(err)
	}
	if got := agg.Methods[PacketBriefd].NeedSpan(); got.Usable != len(pm.Probes) {
		t.Errorf("briefd: %+v (packet %s is briefd's)", got, briefdLetter)
	}
	if got := agg.Methods[PacketMiddle].NeedSpan(); got.Missing != len(pm.Probes) {
		t.Errorf("middle: %+v", got)
	}

	// A grader's file that leaves a probe, a verdict, a dimension or a
	// packet out, names no such packet or conversation, or is not the
	// grader's the round named, is an error naming the file.
	with := func(letter string, p GraderPacket) GraderFile {
		g := GraderFile{Conversation: "tau-bench-2", Grader: "g1", Packets: map[string]GraderPacket{briefdLetter: gp(VerdictUsable, 5), other: gp(VerdictMissing, 2)}}
		g.Packets[letter] = p
		return g
	}
	noProbe, noVerdict, noDim := gp(VerdictUsable, 5), gp(VerdictUsable, 5), gp(VerdictUsable, 5)
	delete(noProbe.Probes, pm.Probes[0].ID)
	noVerdict.Probes[pm.Probes[0].ID] = ""
	delete(noDim.Dimensions, "readability")
	onePacket := with(briefdLetter, gp(VerdictUsable, 5))
	delete(onePacket.Packets, other)
	for _, b := range []GraderFile{with("C", gp(VerdictUsable, 5)), with(briefdLetter, noProbe), with(briefdLetter, noVerdict), with(other, noDim),
		onePacket, {Conversation: "nope", Grader: "g1", Packets: f.Packets}, {Conversation: "tau-bench-2", Grader: "g2", Packets: f.Packets}} {
		write(b)
		if _, err := CollectGrades(out); err == nil || !strings.Contains(err.Error(), "g1-tau-bench-2.json") {
			t.Errorf("%+v: %v", b, err)
		}
	}
	write(f)
	// A file left by an earlier round's grader the assignment does not name.
	b, _ := json.Marshal(GraderFile{Conversation: "tau-bench-2", Grader: "g4", Packets: f.Packets})
	if err := os.WriteFile(filepath.Join(grades, "g4-tau-bench-2.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CollectGrades(out); err == nil || !strings.Contains(err.Error(), "g4-tau-bench-2.json") || !strings.Contains(err.Error(), "did not give") {
		t.Errorf("a stale grader's file: %v", err)
	}
	// Fields a grader invented are an error, not ignored.
	if err := os.WriteFile(filepath.Join(grades, "g4-tau-bench-2.json"), []byte(`{"conversation": "tau-bench-2", "grader": "g4", "packets": {}, "score": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CollectGrades(out); err == nil || !strings.Contains(err.Error(), "score") {
		t.Errorf("an unknown field: %v", err)
	}
}
