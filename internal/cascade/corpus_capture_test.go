package cascade

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/openaitest"
)

// The corpus is captured, not written by hand: run
//
//	go test ./internal/cascade -run TestCaptureCorpus -corpus.capture ../../../shared/data/histories \
//	    -corpus.ids tau-bench-16,mini-swe-agent-8
//
// For each conversation it freezes the history at about 70% (cut_index of
// ../shared/tools/eval_quality.py), compacts the prefix as
// `worker compact --force --context-window N` does (N = prefix characters / 4
// + 1), and writes testdata/corpus/<id>/input.json (the span, the
// deterministic draft and the budget the cascade got) and request.json (the
// exact request body the cascade sent). The replies beside them are written
// by hand; see testdata/corpus/README.md.
var (
	captureDir = flag.String("corpus.capture", "", "capture the corpus inputs from the histories in this directory")
	captureIDs = flag.String("corpus.ids", "", "comma-separated conversation ids to capture")
	captureMin = flag.String("corpus.min-briefing-tokens", "", "per-conversation --min-briefing-tokens, id=N,id=N (short spans need room for a narrative)")
	captureOut = flag.String("corpus.out", filepath.Join("testdata", "corpus"), "directory the captured inputs are written to")
)

// cutIndex ports eval_quality.py's cut_index: the largest n <= frac*len
// such that msgs[:n] leaves no tool call unanswered and does not end on a
// user message.
func cutIndex(msgs []briefd.Message, frac float64) int {
	n := max(4, int(float64(len(msgs))*frac))
	for n > 2 {
		pending := map[string]bool{}
		for _, m := range msgs[:n] {
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
			if m.Role == briefd.RoleTool {
				delete(pending, m.ToolCallID)
			}
		}
		if len(pending) == 0 && msgs[n-1].Role != briefd.RoleUser {
			return n
		}
		n--
	}
	return n
}

// evalChars ports eval_quality.py's len(prefix_text): content plus each
// call's name and arguments, newline-joined, in code points.
func evalChars(msgs []briefd.Message) int {
	var parts []string
	for _, m := range msgs {
		p := []string{m.Content.String()}
		for _, c := range m.ToolCalls {
			p = append(p, c.Function.Name+" "+c.Function.Arguments)
		}
		parts = append(parts, strings.Join(p, "\n"))
	}
	return utf8.RuneCountInString(strings.Join(parts, "\n"))
}

func TestCaptureCorpus(t *testing.T) {
	if *captureDir == "" {
		t.Skip("-corpus.capture DIR not given")
	}
	mins := map[string]int{}
	for _, kv := range splitComma(*captureMin) {
		var id string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(kv, "=", " ", 1), "%s %d", &id, &n); err != nil {
			t.Fatalf("-corpus.min-briefing-tokens %q: %v", kv, err)
		}
		mins[id] = n
	}
	for _, id := range splitComma(*captureIDs) {
		t.Run(id, func(t *testing.T) { captureOne(t, id, mins[id]) })
	}
}

func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func captureOne(t *testing.T, id string, minBriefing int) {
	data, err := os.ReadFile(filepath.Join(*captureDir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		t.Fatal(err)
	}
	cut := cutIndex(h.Messages, 0.7)
	prefix := h.Messages[:cut]
	window := evalChars(prefix)/4 + 1
	command := fmt.Sprintf("worker compact --force --context-window %d", window)
	cfg := compact.Config{ContextWindow: window}
	if minBriefing > 0 {
		cfg.MinBriefingTokens = minBriefing
		command += fmt.Sprintf(" --min-briefing-tokens %d", minBriefing)
	}

	srv := openaitest.NewServer(t)
	srv.SetDefault(openaitest.Reply("capture only"))
	c, err := New(Config{BaseURL: srv.URL, Models: []ModelConfig{{Name: "capture"}}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var in *compact.SummaryInput
	rec := compact.SummarizerFunc(func(ctx context.Context, s compact.SummaryInput) (*compact.Summary, error) {
		in = &s
		return c.Summarize(ctx, s)
	})
	eng, err := compact.New(cfg, compact.WithSummarizer(rec))
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Compact(t.Context(), compact.Request{ConversationID: id, Messages: prefix, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || in == nil {
		t.Fatalf("not compacted: %s", res.Reason)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		var ae *compact.AttemptsError
		_ = errors.As(err, &ae)
		t.Fatalf("the cascade sent no request (%s); give -corpus.min-briefing-tokens %s=N", res.Reason, id)
	}
	ci := corpusInput{
		Conversation: id, Source: h.Source, SourceCommit: h.SourceCommit, SourceItem: h.SourceItem, License: h.License,
		Messages: len(h.Messages), Cut: cut, Command: command, PromptVersion: Prompts()["normal"].Version,
		Encoding: eng.Config().Encoding, BoundaryID: res.Briefing.BoundaryID, BudgetTokens: in.BudgetTokens,
		Pinned: in.Pinned, Span: in.Span, Previous: in.Previous,
		Draft: corpusDraft{Text: in.Draft.Text, Structured: in.Draft.Structured, Depth: in.Draft.Depth, BudgetTokens: in.Draft.BudgetTokens},
	}
	dir := filepath.Join(*captureOut, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(ci, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "input.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "request.json"), reqs[0].Raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: cut %d/%d, window %d, span %d messages, budget %d, boundary %s", id, cut, len(h.Messages), window, len(in.Span), in.BudgetTokens, ci.BoundaryID)
}
