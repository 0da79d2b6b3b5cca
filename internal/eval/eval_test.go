package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// examples is the repository's own histories: the report's invariants
// are checked on them without ../shared.
const examples = "../../examples/histories"

func TestRunInvariants(t *testing.T) {
	files, err := Files(examples)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	rep, err := Run(t.Context(), files, Options{Progress: func(i, n int, f string) {
		if n != len(files) || i != len(seen) {
			t.Errorf("progress %d/%d for file %d of %d", i, n, len(seen), len(files))
		}
		seen = append(seen, f)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, files) {
		t.Errorf("progress saw %q", seen)
	}
	if rep.Files != len(files) || len(rep.Conversations)+len(rep.Failures) != len(files) {
		t.Fatalf("%d files: %d scored, %d failures", len(files), len(rep.Conversations), len(rep.Failures))
	}
	if len(rep.Conversations) == 0 {
		t.Fatal("nothing compacted")
	}
	for _, m := range Methods {
		if len(rep.Rows[m]) != len(rep.Conversations) {
			t.Fatalf("%s: %d rows for %d conversations", m, len(rep.Rows[m]), len(rep.Conversations))
		}
	}
	unit := func(name string, p *float64) {
		if p != nil && (*p < 0 || *p > 1) {
			t.Errorf("%s = %v out of [0, 1]", name, *p)
		}
	}
	for i, c := range rep.Conversations {
		ours := rep.Rows[MethodOurs][i]
		if c.Cut <= 0 || c.Cut > c.Messages || c.Window <= 0 || c.BriefingChars <= 0 || c.BoundaryID == "" {
			t.Errorf("%s: %+v", c.ID, c)
		}
		if ours.PairsOK == nil || !*ours.PairsOK {
			t.Errorf("%s: spliced history pairs %v", c.ID, ours.PairsOK)
		}
		// Every method is scored against the same span and future.
		for _, m := range Methods {
			r := rep.Rows[m][i]
			if r.ID != c.ID || r.Need != ours.Need || r.SpanChars != ours.SpanChars {
				t.Errorf("%s/%s: row %+v does not match ours %+v", c.ID, m, r, ours)
			}
			if m != MethodOurs && r.PairsOK != nil {
				t.Errorf("%s/%s: a baseline has pairs_ok", c.ID, m)
			}
			for name, p := range map[string]*float64{"future_recall": r.FutureRecall, "future_recall_named": r.FutureRecallNamed,
				"span_survival": r.SpanSurvival, "user_coverage": r.UserCoverage} {
				unit(m+" "+name, p)
			}
			if (r.FutureRecall == nil) != (r.Need == 0) {
				t.Errorf("%s/%s: future_recall %v with need %d", c.ID, m, r.FutureRecall, r.Need)
			}
		}
		// The briefing's size is the one reported, and the baselines are
		// at most its size.
		if got := int(ours.Ratio*float64(ours.SpanChars) + 0.5); got != c.BriefingChars {
			t.Errorf("%s: ratio x span = %d, briefing %d chars", c.ID, got, c.BriefingChars)
		}
		for _, m := range []string{MethodHeadTail, MethodRecency} {
			if r := rep.Rows[m][i]; r.Ratio > ours.Ratio {
				t.Errorf("%s: %s ratio %v above the briefing's %v", c.ID, m, r.Ratio, ours.Ratio)
			}
		}
		drop := rep.Rows[MethodDrop][i]
		if drop.Ratio != 0 || (drop.FutureRecall != nil && *drop.FutureRecall != 0) || drop.Fabricated != 0 {
			t.Errorf("%s: dropping the span scored %+v", c.ID, drop)
		}
	}

	// The JSON has eval_quality.py's shape: a list of rows per method.
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape map[string]json.RawMessage
	if err := json.Unmarshal(data, &shape); err != nil {
		t.Fatal(err)
	}
	for _, m := range Methods {
		var rows []map[string]any
		if err := json.Unmarshal(shape[m], &rows); err != nil || len(rows) != len(rep.Conversations) {
			t.Fatalf("%s: %v, %d rows", m, err, len(rows))
		}
		for _, k := range []string{"id", "need", "future_recall", "future_recall_named", "span_survival", "user_coverage", "fabricated", "ratio", "span_chars"} {
			if _, ok := rows[0][k]; !ok {
				t.Errorf("%s rows lack %q", m, k)
			}
		}
	}

	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== ours", "== recency", "future_recall_named: mean", "pairs_ok: ", "compactor failures: ", "Targets (issue 8)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestRunErrors(t *testing.T) {
	if _, err := Files(t.TempDir()); err == nil {
		t.Error("an empty directory listed histories")
	}
	if _, err := Files(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("a missing directory listed histories")
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"id": "x"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), []string{bad}, Options{}); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a broken file: %v", err)
	}
	if _, err := Run(t.Context(), nil, Options{Frac: 1.5}); err == nil {
		t.Error("frac 1.5 accepted")
	}
	// An invalid conversation is the compactor's failure, counted and
	// listed, as the yardstick counts a crash of `worker compact`.
	inv := filepath.Join(dir, "orphan.json")
	msgs := []briefd.Message{{ID: "s", Role: briefd.RoleSystem}, {ID: "u", Role: briefd.RoleUser, Content: briefd.Text("hi")}}
	for i := 0; i < 10; i++ {
		msgs = append(msgs, briefd.Message{ID: "a" + string(rune('0'+i)), Role: briefd.RoleAssistant, Content: briefd.Text("x")})
	}
	msgs = append(msgs, briefd.Message{ID: "a0", Role: briefd.RoleAssistant, Content: briefd.Text("duplicate id")})
	data, _ := json.Marshal(briefd.History{ID: "orphan", Messages: msgs})
	if err := os.WriteFile(inv, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), []string{inv}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) != 1 || rep.Failures[0].ID != "orphan" || len(rep.Conversations) != 0 {
		t.Errorf("failures %+v, %d scored", rep.Failures, len(rep.Conversations))
	}
}

func TestRunChainInvariants(t *testing.T) {
	files, err := Files(examples)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunChain(t.Context(), files, ChainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, f := range files {
		h, err := readHistory(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Messages) >= 60 {
			long++
		}
	}
	if rep.Skipped != len(files)-long || len(rep.Rows)+len(rep.Failures) != long || long == 0 {
		t.Fatalf("%d files, %d long: %d rows, %d failures, %d skipped", len(files), long, len(rep.Rows), len(rep.Failures), rep.Skipped)
	}
	for _, r := range rep.Rows {
		if r.Cycles < 1 || r.Size <= 0 || r.Size > 1 || !r.PairsOK || r.Window < 2000 {
			t.Errorf("%s: %+v", r.ID, r)
		}
		for _, p := range []*float64{r.Recall, r.FirstRecall, r.RecencyRecall, r.RecencyFirstRecall} {
			if p != nil && (*p < 0 || *p > 1) {
				t.Errorf("%s: a recall of %v", r.ID, *p)
			}
		}
		if (r.Recall == nil) != (r.Need == 0) || (r.FirstRecall == nil) != (r.NeedFirst == 0) || r.NeedFirst > r.Need {
			t.Errorf("%s: need %d / %d, recall %v / %v", r.ID, r.Need, r.NeedFirst, r.Recall, r.FirstRecall)
		}
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  cycles: mean", "  recency_first_recall: ", "  pairs_ok: ", "conversations: "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
