package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/openaitest"
)

const example = "../../examples/histories/tau-bench-2.json"

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(t.Context(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// The JSON contract of `worker compact`, which automated checks drive.
func TestCompactContract(t *testing.T) {
	code, out, stderr := run(t, "", "compact", "--force", "--context-window", "12000", example)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v", err)
	}
	for _, k := range []string{"conversation_id", "compacted", "reason", "boundary_id", "tier", "tokens_before", "tokens_after", "briefing", "structured", "messages"} {
		if _, ok := got[k]; !ok {
			t.Errorf("missing field %q", k)
		}
	}
	var res struct {
		ConversationID string           `json:"conversation_id"`
		Compacted      bool             `json:"compacted"`
		BoundaryID     string           `json:"boundary_id"`
		Tier           string           `json:"tier"`
		Before, After  int              `json:"-"`
		TokensBefore   int              `json:"tokens_before"`
		TokensAfter    int              `json:"tokens_after"`
		Briefing       string           `json:"briefing"`
		Messages       []briefd.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.ConversationID != "tau-bench-2" || res.Tier != "deterministic" || res.TokensAfter >= res.TokensBefore {
		t.Fatalf("result %+v", res)
	}
	if err := briefd.Validate(res.Messages, briefd.Limits{}); err != nil {
		t.Fatalf("spliced history invalid: %v", err)
	}
	// "briefing" is exactly what the agent sees: the spliced message's content.
	var seen bool
	for i, m := range res.Messages {
		if m.IsBriefing() {
			seen = true
			if m.Content.String() != res.Briefing || !strings.Contains(res.Briefing, briefd.OpenTag) {
				t.Fatal("briefing field differs from the spliced message")
			}
			if res.Messages[i+1].ID != res.BoundaryID {
				t.Fatalf("boundary %s does not follow the briefing (next is %s)", res.BoundaryID, res.Messages[i+1].ID)
			}
		}
	}
	if !seen {
		t.Fatal("no briefing message in the spliced history")
	}
	// A hand-off, not a bag of identifiers: the user's words, what was
	// found, the state and the next step, even when the span's user
	// messages fill most of the budget.
	for _, section := range []string{"USER (verbatim", "RECORDS:", "STATE:", "NEXT:"} {
		if !strings.Contains(res.Briefing, section) {
			t.Errorf("briefing lacks %q", section)
		}
	}
}

func TestCompactNothingToCompact(t *testing.T) {
	// Below the trigger without --force: exit 3, compacted false, a reason.
	code, out, stderr := run(t, "", "compact", example)
	if code != 3 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Compacted bool             `json:"compacted"`
		Reason    string           `json:"reason"`
		Messages  []briefd.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Compacted || !strings.Contains(res.Reason, "below trigger") || len(res.Messages) != 62 {
		t.Fatalf("got compacted=%v reason %q, %d messages", res.Compacted, res.Reason, len(res.Messages))
	}
}

func TestCompactInvalidInput(t *testing.T) {
	tests := []struct {
		name, stdin, want string
	}{
		{"not json", "hello", "history"},
		{"orphan tool result", `[{"id":"a","role":"user","content":"hi"},{"id":"b","role":"tool","tool_call_id":"x","content":"r"}]`, `"b"`},
		{"duplicate id", `[{"id":"a","role":"user","content":"hi"},{"id":"a","role":"assistant","content":"yo"}]`, "duplicate id"},
		{"unknown role", `[{"id":"a","role":"robot","content":"hi"}]`, "unknown role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := run(t, tt.stdin, "compact", "--force", "-")
			if code == 0 || out != "" {
				t.Fatalf("exit %d with stdout %q, want a failure", code, out)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Fatalf("stderr %q does not say %q", stderr, tt.want)
			}
		})
	}
	if code, _, _ := run(t, "", "compact", "/no/such/file.json"); code == 0 {
		t.Fatal("a missing file exits 0")
	}
}

// With a model configured, the JSON names the level used, the model, the
// prompt version and each attempt.
func TestCompactWithLLM(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Status(http.StatusServiceUnavailable, "overloaded"),
		openaitest.Reply("TASK:\nThe customer wants to change a flight reservation.\nCURRENT STATE:\nYou compared flights with the customer; nothing was changed yet: IN-PROGRESS.\nNEXT:\nWait for the customer's choice."))
	code, out, stderr := run(t, "", "compact", "--force", "--context-window", "12000", "--min-briefing-tokens", "1500",
		"--llm-base-url", srv.URL, "--llm-api-key", "k", "--llm-models", "m1", example)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Tier          string `json:"tier"`
		Model         string `json:"model"`
		PromptVersion string `json:"prompt_version"`
		Attempts      []struct {
			Model, Outcome, Error string
		} `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Tier, "llm:") || res.Model != "m1" || res.PromptVersion == "" || len(res.Attempts) < 2 {
		t.Fatalf("got %+v", res)
	}
	if res.Attempts[0].Outcome != "error" || res.Attempts[len(res.Attempts)-1].Outcome != "accepted" {
		t.Fatalf("attempts %+v", res.Attempts)
	}
}

// When the gate rejects every reply, the JSON says which rule each reply
// broke and why the deterministic briefing was kept.
func TestCompactPrintsVerdicts(t *testing.T) {
	lie := "TASK:\nChange a flight reservation.\nCURRENT STATE:\nThe new flight was booked and paid: COMPLETED [m0008]."
	srv := openaitest.NewServer(t)
	srv.SetDefault(openaitest.Reply(lie))
	code, out, stderr := run(t, "", "compact", "--force", "--context-window", "12000", "--min-briefing-tokens", "1500",
		"--llm-base-url", srv.URL, "--llm-api-key", "k", "--llm-models", "m1", "--llm-max-completion-tokens", example)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Tier     string            `json:"tier"`
		Fallback string            `json:"fallback"`
		Attempts []compact.Attempt `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Tier != "deterministic" || !strings.Contains(res.Fallback, "rejected") || len(res.Attempts) != 4 {
		t.Fatalf("tier %q fallback %q, %d attempts; want the deterministic briefing after 4 rejections", res.Tier, res.Fallback, len(res.Attempts))
	}
	for _, a := range res.Attempts {
		failed := ""
		for _, v := range a.Verdicts {
			if !v.Passed {
				failed += v.Rule + " " + strings.Join(v.Failures, " ")
			}
		}
		if a.Outcome != "rejected" || !strings.Contains(failed, "completion") || !strings.Contains(failed, "booked") {
			t.Errorf("attempt %s: %s, failed %q; want rejected by completion naming the claim", a.Prompt, a.Outcome, failed)
		}
	}
	if !res.Attempts[1].Feedback {
		t.Errorf("the second attempt is not marked as the feedback round")
	}
	if r := srv.Requests()[0]; r.MaxCompletionTokens == 0 || r.MaxTokens != 0 {
		t.Errorf("--llm-max-completion-tokens sent max_tokens %d, max_completion_tokens %d", r.MaxTokens, r.MaxCompletionTokens)
	}
}

func TestUsage(t *testing.T) {
	if code, _, _ := run(t, "", "nonsense"); code != 2 {
		t.Fatalf("unknown command exits %d, want 2", code)
	}
	// A bare worker lists the commands; it never starts a service.
	if code, _, stderr := run(t, ""); code != 2 || !strings.Contains(stderr, "commands:") || !strings.Contains(stderr, "worker run") {
		t.Fatalf("bare worker: exit %d, %q", code, stderr)
	}
	if code, stdout, _ := run(t, "", "-h"); code != 0 || !strings.Contains(stdout, "replay ") {
		t.Fatalf("worker -h: exit %d, %q", code, stdout)
	}
	// Every command's -h says what it does in its first line.
	for _, c := range commands {
		if c.name == "version" {
			continue
		}
		code, _, stderr := run(t, "", c.name, "-h")
		if first, _, _ := strings.Cut(stderr, "\n"); code != 0 || first != c.summary {
			t.Errorf("worker %s -h: exit %d, first line %q, want %q", c.name, code, first, c.summary)
		}
	}
	if code, out, _ := run(t, "", "version"); code != 0 || !strings.Contains(out, "briefd engine") {
		t.Fatalf("version: %d %q", code, out)
	}
	// A configuration whose kept budget is not below its trigger is refused.
	code, _, stderr := run(t, "", "compact", "--keep-fraction", "0.7", "--keep-cap-tokens", "100000", "--trigger-fraction", "0.3", example)
	if code == 0 || !strings.Contains(stderr, "trigger") {
		t.Fatalf("bad config: exit %d, %q", code, stderr)
	}
}

// `worker run --embedded` serves readiness, then shuts down cleanly on
// cancellation (SIGTERM in production).
func TestRunEmbedded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- Main(ctx, []string{"run", "--embedded", "--data-dir", filepath.Join(t.TempDir(), "js"),
			"--embedded-addr", "127.0.0.1:0", "--http-addr", addr, "--shutdown-timeout", "5s"}, strings.NewReader(""), &bytes.Buffer{}, &errb)
	}()
	url := fmt.Sprintf("http://%s/readyz", addr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 30s: %v\n%s", err, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/metrics", addr))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "briefd_consumer_pending") {
		t.Fatal("metrics lack the consumer lag")
	}
	if !strings.Contains(body.String(), "briefd_worker_ready 1") {
		t.Fatal("metrics lack the worker's readiness")
	}
	var hc bytes.Buffer
	if code := Main(t.Context(), []string{"healthcheck", "--url", url}, nil, &hc, &hc); code != 0 {
		t.Fatalf("healthcheck exit %d: %s", code, hc.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("run exited %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
}

var _ = os.Stdout

// Ctrl-C stops `worker compact` even in a step that cannot watch the
// context: here, reading a stdin that never ends.
func TestCompactInterruptedWhileReading(t *testing.T) {
	stdin, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"compact", "-"}, stdin, &out, &errb); code != 1 || !strings.Contains(errb.String(), "interrupted: context canceled") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// A signal while a long message is counted stops the command (the
// engine's own stop is tested in internal/compact).
func TestCompactInterruptedWhileCounting(t *testing.T) {
	h := briefd.History{ID: "big", Messages: []briefd.Message{
		{ID: "u", Role: briefd.RoleUser, Content: briefd.Text(strings.Repeat("x", 8<<20))},
	}}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"compact", "--force", file}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), "context canceled") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
