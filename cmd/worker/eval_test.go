package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/briefd/briefd/internal/openaitest"
)

const examples = "../../examples/histories"

func TestEvalCommand(t *testing.T) {
	rows := filepath.Join(t.TempDir(), "rows.json")
	code, out, stderr := run(t, "", "eval", "--json", rows, examples)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Not a terminal: no progress on stderr.
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	for _, want := range []string{"future_recall_named: mean", "== recency", "pairs_ok: ", "Targets (issue 8)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	var got map[string]json.RawMessage
	data, err := os.ReadFile(rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ours", "drop", "trunc512", "headtail", "recency", "failures"} {
		if _, ok := got[k]; !ok {
			t.Errorf("--json lacks %q", k)
		}
	}
}

func TestEvalUsage(t *testing.T) {
	for _, args := range [][]string{
		{"eval"},
		{"eval", "--context-window", "5000", examples},
		{"eval", "--chain", "--grade", "g.json"},
		{"eval", "--probes", "x"},
		{"eval", "--cycles", "3", examples},
		{"eval", "--grade", "g.json", examples},
		{"eval", "--round", "x", "--probes", "y"},
		{"eval", "--readers", "3", examples},
	} {
		if code, _, stderr := run(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
	if code, _, stderr := run(t, "", "eval", filepath.Join(t.TempDir(), "absent")); code != 1 || !strings.Contains(stderr, "absent") {
		t.Errorf("a missing directory: exit %d, %q", code, stderr)
	}
}

func TestEvalProbesAndGrade(t *testing.T) {
	probes := t.TempDir()
	data, err := os.ReadFile("../../internal/eval/testdata/probes/tau-bench-2.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(probes, "tau-bench-2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "packets")
	code, stdout, stderr := run(t, "", "eval", "--probes", probes, "--histories", examples, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "tau-bench-2") {
		t.Errorf("table:\n%s", stdout)
	}
	// A grader fills the template in.
	grades := filepath.Join(out, "grades.json")
	var gf struct {
		Protocol string           `json:"protocol"`
		Grades   []map[string]any `json:"grades"`
	}
	data, err = os.ReadFile(grades)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &gf); err != nil {
		t.Fatal(err)
	}
	for _, g := range gf.Grades {
		g["grader"] = "test"
		for _, p := range g["probes"].([]any) {
			p.(map[string]any)["verdict"] = map[string]string{"briefd": "usable", "middle": "missing"}[g["method"].(string)]
		}
		dims := g["dimensions"].(map[string]any)
		for k := range dims {
			dims[k] = map[string]float64{"briefd": 5, "middle": 3}[g["method"].(string)]
		}
	}
	data, _ = json.Marshal(gf)
	if err := os.WriteFile(grades, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "", "eval", "--grade", grades)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"usable as given        100.0% of 4", "5.00 (n=1)", "3.00 (n=1)", "does not beat middle truncation: none"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("grade table lacks %q:\n%s", want, stdout)
		}
	}

	// A round: instructions for the agents, then the graders' files by
	// packet letter, aggregated from the directory.
	code, stdout, stderr = run(t, "", "eval", "--round", out, "--readers", "2", "--graders", "1", "--graders-per-conversation", "1")
	if code != 0 || !strings.Contains(stdout, "reader-N.md") {
		t.Fatalf("--round: exit %d: %s%s", code, stdout, stderr)
	}
	for _, f := range []string{"assignment.json", "reader-1.md", "reader-2.md", "grader-1.md"} {
		if _, err := os.Stat(filepath.Join(out, "round", f)); err != nil {
			t.Error(err)
		}
	}
	verdicts := func(v string) map[string]string {
		m := map[string]string{}
		for i := 1; i <= 4; i++ {
			m[fmt.Sprintf("tau-bench-2/p%d", i)] = v
		}
		return m
	}
	dims := map[string]float64{}
	for _, d := range []string{"task", "user_instructions", "artifacts", "commands_results", "errors", "decisions", "state", "next_step", "readability"} {
		dims[d] = 4
	}
	// The grader grades by letter; the manifest says which is briefd's.
	var man struct {
		Conversations []struct {
			Packets map[string]string `json:"packets"`
		} `json:"conversations"`
	}
	data, err = os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil || json.Unmarshal(data, &man) != nil || len(man.Conversations) != 1 {
		t.Fatalf("manifest.json: %v", err)
	}
	briefd := strings.TrimSuffix(filepath.Base(man.Conversations[0].Packets["briefd"]), ".txt")
	middle := map[string]string{"A": "B", "B": "A"}[briefd]
	file := map[string]any{"conversation": "tau-bench-2", "grader": "g1", "packets": map[string]any{
		briefd: map[string]any{"probes": verdicts("usable"), "dimensions": dims},
		middle: map[string]any{"probes": verdicts("bare"), "dimensions": dims}}}
	data, _ = json.Marshal(file)
	if err := os.WriteFile(filepath.Join(out, "round", "grades", "g1-tau-bench-2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "", "eval", "--grade", out)
	if code != 0 || !strings.Contains(stdout, "usable as given        100.0% of 4") || !strings.Contains(stdout, "tau-bench-2   4/0/0   0/4/0") {
		t.Fatalf("--grade DIR: exit %d:\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "round", "grades.json")); err != nil {
		t.Errorf("--grade DIR writes the grades it collected: %v", err)
	}
}

// sharedDir is ../shared from this package: the shared histories and the
// project's yardsticks.
const sharedDir = "../../../shared"

// yardstick returns python3 and the absolute path of ../shared/tools, or
// skips the test.
func yardstick(t *testing.T) (python, tools string) {
	t.Helper()
	tools, err := filepath.Abs(filepath.Join(sharedDir, "tools"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tools, "eval_quality.py")); err != nil {
		t.Skip("../shared/tools absent")
	}
	python, err = exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 absent")
	}
	return python, tools
}

// buildWorker builds this command into a temporary directory.
func buildWorker(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go absent: cannot build the worker for the yardstick")
	}
	bin := filepath.Join(t.TempDir(), "worker")
	cmd := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// sharedHistories copies the named shared histories into a new directory.
func sharedHistories(t *testing.T, ids ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(sharedDir, "data", "histories", id+".json"))
		if err != nil {
			t.Skip("shared histories absent: ", err)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// compareRows reports every value of the Python's rows that the Go rows
// do not hold exactly, matching rows by id, and returns the number of
// values compared.
func compareRows(t *testing.T, what string, py, golang []map[string]any) int {
	t.Helper()
	byID := map[string]map[string]any{}
	for _, r := range golang {
		byID[fmt.Sprint(r["id"])] = r
	}
	if len(py) != len(golang) {
		t.Errorf("%s: python has %d rows, worker eval %d", what, len(py), len(golang))
	}
	n := 0
	for _, p := range py {
		id := fmt.Sprint(p["id"])
		g, ok := byID[id]
		if !ok {
			t.Errorf("%s: %s scored by python only", what, id)
			continue
		}
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n++
			if fmt.Sprint(p[k]) != fmt.Sprint(g[k]) {
				t.Errorf("%s: %s %s: python %v, worker eval %v", what, id, k, p[k], g[k])
			}
		}
	}
	return n
}

// pythonFailures are the conversation ids of the "  FAIL id why" lines.
func pythonFailures(stdout string) []string {
	var ids []string
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "  FAIL "); ok {
			ids = append(ids, strings.Fields(rest)[0])
		}
	}
	sort.Strings(ids)
	return ids
}

// section is text from the line starting with from to the first line
// starting with to, both included.
func section(text, from, to string) string {
	i := strings.Index(text, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(text[i:], "\n"+to)
	if j < 0 {
		return text[i:]
	}
	end := strings.IndexByte(text[i+j+1:], '\n')
	return text[i : i+j+1+end]
}

// `worker eval` reports what eval_quality.py reports with the freshly
// built worker as its compactor, conversation by conversation.
func TestEvalAgreesWithEvalQuality(t *testing.T) {
	python, tools := yardstick(t)
	// Customer service, coding agents of three harnesses, and two that
	// the compactor fails on (nothing to compact): the failures must agree too.
	dir := sharedHistories(t, "tau-bench-2", "tau-bench-16", "tau-bench-22", "swe-agent-5", "swe-agent-8",
		"openhands-2", "mini-swe-agent-10", "mini-swe-agent-33")
	bin := buildWorker(t)
	pyJSON, goJSON := filepath.Join(t.TempDir(), "py.json"), filepath.Join(t.TempDir(), "go.json")
	cmd := exec.CommandContext(t.Context(), python, filepath.Join(tools, "eval_quality.py"),
		"--compactor", bin+" compact --force", "--json", pyJSON, dir)
	pyOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("eval_quality.py: %v", err)
	}
	code, goOut, stderr := run(t, "", "eval", "--json", goJSON, dir)
	if code != 0 {
		t.Fatalf("worker eval: exit %d: %s", code, stderr)
	}
	var py map[string][]map[string]any
	var golang map[string]json.RawMessage
	readJSON(t, pyJSON, &py)
	readJSON(t, goJSON, &golang)
	n := 0
	for _, m := range []string{"ours", "drop", "trunc512", "headtail", "recency"} {
		var rows []map[string]any
		if err := json.Unmarshal(golang[m], &rows); err != nil {
			t.Fatal(err)
		}
		n += compareRows(t, m, py[m], rows)
	}
	var fails []struct{ ID string }
	if err := json.Unmarshal(golang["failures"], &fails); err != nil {
		t.Fatal(err)
	}
	var goFails []string
	for _, f := range fails {
		goFails = append(goFails, f.ID)
	}
	sort.Strings(goFails)
	if got, want := strings.Join(goFails, ","), strings.Join(pythonFailures(string(pyOut)), ","); got != want {
		t.Errorf("failures: worker eval %s, python %s", got, want)
	}
	// The summary prints the same digits.
	if got, want := section(goOut, "== ours", "conversations:"), section(string(pyOut), "== ours", "conversations:"); got != want || got == "" {
		t.Errorf("summary differs:\n--- worker eval\n%s\n--- eval_quality.py\n%s", got, want)
	}
	if n == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d values of %d conversations agree", n, len(py["ours"]))
}

// `worker eval --chain` reports what eval_chain.py reports.
func TestEvalChainAgreesWithEvalChain(t *testing.T) {
	python, tools := yardstick(t)
	// Two long enough to replay, one below --min-messages (skipped by both).
	dir := sharedHistories(t, "tau-bench-2", "openhands-2", "mini-swe-agent-33")
	bin := buildWorker(t)
	pyJSON, goJSON := filepath.Join(t.TempDir(), "py.json"), filepath.Join(t.TempDir(), "go.json")
	cmd := exec.CommandContext(t.Context(), python, filepath.Join(tools, "eval_chain.py"),
		"--compactor", bin+" compact --force", "--json", pyJSON, dir)
	pyOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("eval_chain.py: %v", err)
	}
	code, goOut, stderr := run(t, "", "eval", "--chain", "--json", goJSON, dir)
	if code != 0 {
		t.Fatalf("worker eval --chain: exit %d: %s", code, stderr)
	}
	var py []map[string]any
	var golang struct{ Rows []map[string]any }
	readJSON(t, pyJSON, &py)
	readJSON(t, goJSON, &golang)
	n := compareRows(t, "chain", py, golang.Rows)
	if got, want := section(goOut, "  cycles:", "  pairs_ok:"), section(string(pyOut), "  cycles:", "  pairs_ok:"); got != want || got == "" {
		t.Errorf("summary differs:\n--- worker eval --chain\n%s\n--- eval_chain.py\n%s", got, want)
	}
	if n == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d values of %d conversations agree", n, len(py))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// With --llm-models, eval measures the cascade's briefings, as the
// yardstick does when `worker compact` is configured with a model.
func TestEvalWithLLM(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetDefault(openaitest.Reply("TASK:\nThe customer wants to change a flight reservation.\nCURRENT STATE:\nYou compared flights with the customer; nothing was changed yet: IN-PROGRESS.\nNEXT:\nWait for the customer's choice."))
	srv.SetRecord(true)
	dir := t.TempDir()
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tau-bench-2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	det, llm := filepath.Join(t.TempDir(), "det.json"), filepath.Join(t.TempDir(), "llm.json")
	if code, _, stderr := run(t, "", "eval", "--json", det, "--min-briefing-tokens", "1500", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model requests without --llm-models", n)
	}
	code, _, stderr := run(t, "", "eval", "--json", llm, "--min-briefing-tokens", "1500",
		"--llm-base-url", srv.URL, "--llm-api-key", "k", "--llm-models", "m1", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(srv.Requests()) == 0 {
		t.Fatal("no model request with --llm-models")
	}
	var a, b struct{ Ours []map[string]any }
	readJSON(t, det, &a)
	readJSON(t, llm, &b)
	if len(a.Ours) != 1 || len(b.Ours) != 1 || a.Ours[0]["ratio"] == b.Ours[0]["ratio"] {
		t.Errorf("deterministic %v, with the model %v", a.Ours, b.Ours)
	}
}
