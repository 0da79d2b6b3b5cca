package cascade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/openaitest"
)

var _ compact.Summarizer = (*Cascade)(nil)

func TestSummarizeAccepted(t *testing.T) {
	b := setup(t, nil, openaitest.Reply(goodReply))
	in := testInput()
	sum, err := b.c.Summarize(t.Context(), in)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if sum.Tier != "llm:normal" || sum.Model != "model-a" || sum.PromptVersion != NormalVersion {
		t.Errorf("tier %q model %q prompt %q", sum.Tier, sum.Model, sum.PromptVersion)
	}
	if !strings.HasPrefix(sum.Text, goodReply) || !strings.HasSuffix(sum.Text, LedgerHeading+"\n"+testLedger) {
		t.Errorf("text is not narrative + ledger:\n%s", sum.Text)
	}
	if string(sum.Structured) != string(in.Draft.Structured) {
		t.Errorf("structured = %s, want the draft's ledger", sum.Structured)
	}
	if got := outcomes(sum.Attempts); got != "model-a/normal.v2=accepted" {
		t.Errorf("attempts %s", got)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "model-a" || r.MaxTokens == 0 || r.MaxCompletionTokens != 0 || r.Temperature == nil || *r.Temperature < 0.09 || r.ResponseFormat != nil {
		t.Errorf("request model %q max_tokens %d max_completion_tokens %d temperature %v response_format %s",
			r.Model, r.MaxTokens, r.MaxCompletionTokens, r.Temperature, r.ResponseFormat)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-secret" {
		t.Errorf("authorization %q", got)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].Content, "untrusted data") {
		t.Fatalf("messages %+v", r.Messages)
	}
	user := r.Messages[1].Content
	for _, want := range []string{`<message id="m01" role="user">`, `<message id="m03" role="tool" call="bash">`, `[call bash {"command":"go test ./..."}]`, "<evidence-ledger>", "chars clipped", testLedger} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q", want)
		}
	}
}

// TestScriptedFailures runs the cascade against each failure the fake
// endpoint can script and asserts the path it took.
func TestScriptedFailures(t *testing.T) {
	tooLongOutput := "TASK: x\nCURRENT STATE: " + strings.Repeat("still working on it. ", 600)
	tests := []struct {
		name     string
		mod      func(*Config)
		script   []openaitest.Step
		tier     string // "" expects an AttemptsError
		model    string
		attempts string
		sleeps   []time.Duration
		check    func(t *testing.T, reqs []openaitest.Request, err error)
	}{
		{
			name:     "latency then success",
			script:   []openaitest.Step{openaitest.Reply(goodReply).WithLatency(30 * time.Millisecond)},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=accepted",
		},
		{
			name:     "429 with Retry-After is honoured",
			script:   []openaitest.Step{openaitest.Status(429, "rate limited").WithRetryAfter("2"), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=error model-a/normal.v2=accepted",
			sleeps:   []time.Duration{2 * time.Second},
		},
		{
			name: "500s are retried, then the next model",
			script: []openaitest.Step{
				openaitest.Status(500, "boom"), openaitest.Status(500, "boom"), openaitest.Status(503, "overloaded"),
				openaitest.Reply(goodReply),
			},
			tier:     "llm:normal",
			model:    "model-b",
			attempts: "model-a/normal.v2=error model-a/normal.v2=error model-a/normal.v2=error model-b/normal.v2=accepted",
		},
		{
			name:     "502 HTML page is retried",
			script:   []openaitest.Step{openaitest.RawBody(502, "text/html", "<html><body>Bad Gateway</body></html>"), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=error model-a/normal.v2=accepted",
		},
		{
			name: "timeout moves to the next model",
			mod: func(c *Config) {
				c.Models[0].Timeout = 50 * time.Millisecond
			},
			script:   []openaitest.Step{openaitest.Hang(), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-b",
			attempts: "model-a/normal.v2=error model-b/normal.v2=accepted",
			check:    func(t *testing.T, _ []openaitest.Request, _ error) {},
		},
		{
			name:     "401 goes straight to the next model",
			script:   []openaitest.Step{openaitest.Status(401, "invalid api key"), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-b",
			attempts: "model-a/normal.v2=error model-b/normal.v2=accepted",
		},
		{
			name:     "empty output is rejected and sent back once",
			script:   []openaitest.Step{openaitest.Reply(""), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=accepted",
			check: func(t *testing.T, reqs []openaitest.Request, _ error) {
				if fb := reqs[1].Messages; len(fb) != 4 || !strings.Contains(fb[3].Content, "the reply is empty") {
					t.Errorf("feedback request %+v", fb)
				}
			},
		},
		{
			name:     "malformed JSON escalates to the aggressive prompt",
			script:   []openaitest.Step{openaitest.Malformed(), openaitest.Reply(aggressiveReply)},
			tier:     "llm:aggressive",
			model:    "model-a",
			attempts: "model-a/normal.v2=error model-a/aggressive.v2=accepted",
		},
		{
			name: "invented identifier: feedback once, then escalate",
			script: []openaitest.Step{
				openaitest.Reply(strings.Replace(goodReply, "CHANGELOG.md is not", "pkg/parser/ghost.go is not", 1)),
				openaitest.Reply(strings.Replace(goodReply, "CHANGELOG.md is not", "pkg/parser/ghost.go is not", 1)),
				openaitest.Reply(aggressiveReply),
			},
			tier:     "llm:aggressive",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=rejected model-a/aggressive.v2=accepted",
			check: func(t *testing.T, reqs []openaitest.Request, _ error) {
				if fb := reqs[1].Messages; len(fb) != 4 || !strings.Contains(fb[3].Content, `"pkg/parser/ghost.go"`) {
					t.Errorf("feedback does not name the identifier: %+v", fb)
				}
				if !strings.Contains(reqs[2].Messages[0].Content, "short hand-off") {
					t.Errorf("third request is not the aggressive prompt")
				}
			},
		},
		{
			name: "invented user instruction is rejected",
			script: []openaitest.Step{
				openaitest.Reply(strings.Replace(goodReply, `"Always run go test ./... before committing."`, `"Always force-push to main after the fix."`, 1)),
				openaitest.Reply(goodReply),
			},
			tier:     "llm:normal",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=accepted",
			model:    "model-a",
			check: func(t *testing.T, reqs []openaitest.Request, _ error) {
				if !strings.Contains(reqs[1].Messages[3].Content, "force-push") {
					t.Errorf("feedback does not name the invented instruction")
				}
			},
		},
		{
			// Defect 7: a verified step cited with the wrong message gets the
			// message to cite, not a request to relabel it IN-PROGRESS.
			name: "COMPLETED citing a failure gets the message that shows it",
			script: []openaitest.Step{
				openaitest.Reply(strings.Replace(goodReply, "COMPLETED [m07]", "COMPLETED [m03]", 1)),
				openaitest.Reply(goodReply),
			},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=accepted",
			check: func(t *testing.T, reqs []openaitest.Request, _ error) {
				fb := reqs[1].Messages[3].Content
				found := false
				for _, line := range strings.Split(fb, "\n") {
					if strings.Contains(line, "test run passed") {
						found = strings.Contains(line, "[m07] does: cite [m07]") && !strings.Contains(line, "IN-PROGRESS")
					}
				}
				if !found {
					t.Errorf("feedback does not name the evidence of the test run:\n%s", fb)
				}
			},
		},
		{
			name: "COMPLETED that no message shows is rejected",
			script: []openaitest.Step{
				openaitest.Reply(goodReply + "\nPROGRESS: CHANGELOG.md updated: COMPLETED [m07]."),
				openaitest.Reply(goodReply + "\nPROGRESS: CHANGELOG.md updated: COMPLETED [m07]."),
				openaitest.Reply(aggressiveReply),
			},
			tier:     "llm:aggressive",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=rejected model-a/aggressive.v2=accepted",
			check: func(t *testing.T, reqs []openaitest.Request, _ error) {
				fb := reqs[1].Messages[3].Content
				if !strings.Contains(fb, `"CHANGELOG.md updated:`) || !strings.Contains(fb, "no message shows it") {
					t.Errorf("feedback does not name the claim:\n%s", fb)
				}
			},
		},
		{
			name: "prose completion without evidence is rejected",
			script: []openaitest.Step{
				openaitest.Reply(strings.Replace(goodReply, "CHANGELOG.md is not updated yet", "you already updated CHANGELOG.md", 1)),
				openaitest.Reply(goodReply),
			},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=accepted",
		},
		{
			name:     "leaked wrapper tag is rejected",
			script:   []openaitest.Step{openaitest.Reply("<compacted-history>\n" + goodReply), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=accepted",
		},
		{
			name:     "over budget is rejected",
			script:   []openaitest.Step{openaitest.Reply(tooLongOutput), openaitest.Reply(tooLongOutput), openaitest.Reply(aggressiveReply)},
			tier:     "llm:aggressive",
			model:    "model-a",
			attempts: "model-a/normal.v2=rejected model-a/normal.v2+feedback=rejected model-a/aggressive.v2=accepted",
		},
		{
			name:     "prompt too long shrinks the input and retries",
			script:   []openaitest.Step{openaitest.TooLong(), openaitest.Reply(goodReply)},
			tier:     "llm:normal",
			model:    "model-a",
			attempts: "model-a/normal.v2=error model-a/normal.v2+shrink1=accepted",
			check: func(t *testing.T, reqs []openaitest.Request, _ error) {
				a, b := len(reqs[0].Messages[1].Content), len(reqs[1].Messages[1].Content)
				if b >= a {
					t.Errorf("shrunk request is %d bytes, the first %d", b, a)
				}
			},
		},
		{
			name: "every model failing returns all attempts",
			mod:  func(c *Config) { c.MaxRetries = -1 },
			script: []openaitest.Step{
				openaitest.Status(500, "down"),
				openaitest.Reply("too short"), openaitest.Reply("TASK: ok\nCURRENT STATE: see https://example.invalid/x"),
				openaitest.Reply(""), openaitest.Reply(""),
			},
			attempts: "model-a/normal.v2=error model-b/normal.v2=rejected model-b/normal.v2+feedback=rejected model-b/aggressive.v2=rejected model-b/aggressive.v2+feedback=rejected",
			check: func(t *testing.T, _ []openaitest.Request, err error) {
				if !errors.Is(err, ErrAllFailed) {
					t.Errorf("err = %v, want ErrAllFailed", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, tt.mod, tt.script...)
			sum, err := b.c.Summarize(t.Context(), testInput())
			var attempts []compact.Attempt
			if tt.tier == "" {
				var ae *compact.AttemptsError
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v (summary %v), want *AttemptsError", err, sum)
				}
				attempts = ae.Attempts
			} else {
				if err != nil {
					t.Fatalf("Summarize: %v", err)
				}
				if string(sum.Tier) != tt.tier || sum.Model != tt.model {
					t.Errorf("tier %q model %q, want %q %q", sum.Tier, sum.Model, tt.tier, tt.model)
				}
				attempts = sum.Attempts
				if len(sum.Text) < 30 || !strings.Contains(sum.Text, testLedger) {
					t.Errorf("accepted text lacks the ledger: %q", sum.Text)
				}
			}
			if got := outcomes(attempts); got != tt.attempts {
				t.Errorf("attempts\n got %s\nwant %s", got, tt.attempts)
			}
			for _, a := range attempts {
				if a.Outcome != OutcomeAccepted && a.Outcome != OutcomeSkipped && a.Error == "" {
					t.Errorf("attempt %+v has no reason", a)
				}
			}
			if tt.sleeps != nil {
				if got := b.clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(tt.sleeps) {
					t.Errorf("sleeps %v, want %v", got, tt.sleeps)
				}
			}
			if tt.check != nil {
				tt.check(t, b.srv.Requests(), err)
			}
		})
	}
}

func TestBackoffBetweenRetries(t *testing.T) {
	b := setup(t, func(c *Config) { c.MaxRetries = 3 },
		openaitest.Status(500, "x"), openaitest.Status(500, "x"), openaitest.Status(500, "x"), openaitest.Reply(goodReply))
	if _, err := b.c.Summarize(t.Context(), testInput()); err != nil {
		t.Fatal(err)
	}
	s := b.clock.Sleeps()
	if len(s) != 3 {
		t.Fatalf("sleeps %v", s)
	}
	// Exponential with ±50% jitter around 500ms, 1s, 2s.
	for i, base := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if s[i] < base/2 || s[i] > base*3/2 {
			t.Errorf("sleep %d = %v, want within 50%% of %v", i, s[i], base)
		}
	}
}

func TestRetryAfterTooLongMovesOn(t *testing.T) {
	b := setup(t, nil, openaitest.Status(429, "quota").WithRetryAfter("3600"), openaitest.Reply(goodReply))
	sum, err := b.c.Summarize(t.Context(), testInput())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Model != "model-b" || len(b.clock.Sleeps()) != 0 {
		t.Errorf("model %s sleeps %v", sum.Model, b.clock.Sleeps())
	}
}

func TestBreakerOpensAcrossCalls(t *testing.T) {
	b := setup(t, func(c *Config) {
		c.Breaker.CoolDown = time.Minute
		c.Spend.PerConversation = -1
	})
	// Three calls whose model-a request fails with a 401, answered by model-b.
	for range 3 {
		b.srv.Push(openaitest.Status(401, "bad key"), openaitest.Reply(goodReply))
	}
	for i := range 3 {
		if _, err := b.c.Summarize(t.Context(), testInput()); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if got := b.c.BreakerState("model-a"); got != "open" {
		t.Fatalf("breaker %s after 3 failures", got)
	}
	b.srv.Push(openaitest.Reply(goodReply))
	sum, err := b.c.Summarize(t.Context(), testInput())
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(sum.Attempts); got != "model-a/normal.v2=skipped model-b/normal.v2=accepted" {
		t.Errorf("attempts with an open breaker: %s", got)
	}
	// After the cool-down one probe goes to model-a; its success closes the breaker.
	b.clock.Advance(time.Minute)
	b.srv.Push(openaitest.Reply(goodReply))
	if sum, err = b.c.Summarize(t.Context(), testInput()); err != nil || sum.Model != "model-a" {
		t.Fatalf("probe: %v %v", sum, err)
	}
	if got := b.c.BreakerState("model-a"); got != "closed" {
		t.Errorf("breaker %s after a successful probe", got)
	}
}

func TestBreakerStates(t *testing.T) {
	clock := newFakeClock()
	br := NewBreaker(3, 30*time.Second, clock.Now)
	for i := range 3 {
		if !br.Allow() {
			t.Fatalf("closed breaker refused call %d", i)
		}
		br.Failure()
	}
	if br.Allow() || br.State() != "open" {
		t.Fatalf("breaker allows after 3 failures (%s)", br.State())
	}
	clock.Advance(29 * time.Second)
	if br.Allow() {
		t.Fatal("breaker allows before the cool-down")
	}
	clock.Advance(time.Second)
	if !br.Allow() {
		t.Fatal("no probe after the cool-down")
	}
	if br.Allow() {
		t.Fatal("a second probe while half-open")
	}
	br.Failure() // the probe failed: open again
	if br.Allow() {
		t.Fatal("breaker allows right after a failed probe")
	}
	clock.Advance(30 * time.Second)
	if !br.Allow() {
		t.Fatal("no probe after the second cool-down")
	}
	br.Success()
	if !br.Allow() || !br.Allow() || br.State() != "closed" {
		t.Fatalf("breaker not closed after a successful probe (%s)", br.State())
	}
	// A success resets the count: two failures do not open it.
	br.Failure()
	br.Failure()
	if !br.Allow() {
		t.Fatal("opened after 2 failures")
	}
	if off := NewBreaker(-1, time.Second, clock.Now); func() bool { off.Failure(); off.Failure(); off.Failure(); off.Failure(); return !off.Allow() }() {
		t.Fatal("disabled breaker refused")
	}
}

func TestSpendGuard(t *testing.T) {
	clock := newFakeClock()
	g := NewSpendGuard(3, 5, 10*time.Minute, clock.Now)
	for i := range 3 {
		if !g.Reserve("t1", "c1") {
			t.Fatalf("call %d refused", i)
		}
	}
	if g.Reserve("t1", "c1") {
		t.Fatal("4th call for c1 allowed")
	}
	if !g.Reserve("t1", "c2") || !g.Reserve("t1", "c2") {
		t.Fatal("another conversation refused")
	}
	if g.Reserve("t1", "c3") {
		t.Fatal("6th call for the tenant allowed")
	}
	if !g.Reserve("t2", "c1") {
		t.Fatal("another tenant's conversation refused")
	}
	clock.Advance(10 * time.Minute)
	if !g.Reserve("t1", "c1") {
		t.Fatal("refused after the window")
	}
	// Many one-off conversations do not grow the maps without bound.
	for i := range 5000 {
		clock.Advance(time.Second)
		g.Reserve(fmt.Sprint("t", i), fmt.Sprint("c", i))
	}
	g.mu.Lock()
	n := len(g.conv) + len(g.tenant)
	g.mu.Unlock()
	if n > 2*1200+2048 {
		t.Errorf("%d keys live after a sweep", n)
	}
}

func TestSpendGuardSkipsTheModel(t *testing.T) {
	b := setup(t, func(c *Config) { c.Spend.PerConversation = 2 },
		openaitest.Status(500, "x"), openaitest.Status(500, "x"))
	_, err := b.c.Summarize(t.Context(), testInput())
	var ae *compact.AttemptsError
	if !errors.As(err, &ae) || !errors.Is(err, ErrSpendExhausted) {
		t.Fatalf("err = %v", err)
	}
	if got := outcomes(ae.Attempts); got != "model-a/normal.v2=error model-a/normal.v2=error model-a/normal.v2=skipped" {
		t.Errorf("attempts %s", got)
	}
	// The next call of the conversation sends nothing at all.
	_, err = b.c.Summarize(t.Context(), testInput())
	if !errors.As(err, &ae) || len(ae.Attempts) != 1 || ae.Attempts[0].Outcome != OutcomeSkipped {
		t.Errorf("second call: %v", err)
	}
	if n := len(b.srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestStructured(t *testing.T) {
	b := setup(t, func(c *Config) { c.Structured, c.JSONSchema = true, true },
		openaitest.Status(400, "response_format of type json_schema is not supported by this model"),
		openaitest.Reply("```json\n"+goodJSON+"\n```"))
	sum, err := b.c.Summarize(t.Context(), testInput())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Tier != "llm:structured" || sum.PromptVersion != StructuredVersion {
		t.Errorf("tier %s prompt %s", sum.Tier, sum.PromptVersion)
	}
	reqs := b.srv.Requests()
	var f0, f1 struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	json.Unmarshal(reqs[0].ResponseFormat, &f0)
	json.Unmarshal(reqs[1].ResponseFormat, &f1)
	if f0.Type != "json_schema" || !bytes.Contains(f0.JSONSchema, []byte(`"strict":true`)) || f1.Type != "json_object" {
		t.Errorf("response formats %s then %s", reqs[0].ResponseFormat, reqs[1].ResponseFormat)
	}
	for _, want := range []string{"TASK: Fix the failing test", `"Always run go test ./... before committing." [m01]`, "run the full test suite after the fix: COMPLETED [m07]", "CURRENT STATE: All tests pass", LedgerHeading} {
		if !strings.Contains(sum.Text, want) {
			t.Errorf("rendered briefing lacks %q:\n%s", want, sum.Text)
		}
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(sum.Structured, &st); err != nil || st["files"] == nil || st["llm"] == nil {
		t.Errorf("structured %s (%v): want the draft's keys plus llm", sum.Structured, err)
	}
	// The model's format fallback sticks: the next call starts at json_object.
	b.srv.Push(openaitest.Reply(goodJSON))
	if _, err := b.c.Summarize(t.Context(), testInput()); err != nil {
		t.Fatal(err)
	}
	if r := b.srv.Requests()[2]; !strings.Contains(string(r.ResponseFormat), "json_object") {
		t.Errorf("third request format %s", r.ResponseFormat)
	}
}

func TestStructuredRejections(t *testing.T) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(goodJSON), &obj); err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(map[string]any)) string {
		cp := map[string]any{}
		b, _ := json.Marshal(obj)
		json.Unmarshal(b, &cp)
		f(cp)
		out, _ := json.Marshal(cp)
		return string(out)
	}
	tests := []struct{ name, reply, want string }{
		{"missing field", mutate(func(m map[string]any) { delete(m, "pending_actions") }), `"pending_actions" is missing`},
		{"empty goal", mutate(func(m map[string]any) { m["task_goal"] = "" }), "task_goal is empty"},
		{"invented instruction", mutate(func(m map[string]any) {
			m["user_instructions"] = []any{map[string]any{"quote": "Deploy to production when done.", "source_ids": []any{"m01"}}}
		}), "is not in any user message"},
		{"unknown source id", mutate(func(m map[string]any) {
			m["decisions"] = []any{map[string]any{"decision": "d", "reason": "r", "source_ids": []any{"m99"}}}
		}), `cites "m99"`},
		{"completed on a failure", mutate(func(m map[string]any) {
			m["progress"] = []any{map[string]any{"step": "tests", "status": "completed", "source_ids": []any{"m03"}}}
		}), "no message shows it"},
		{"not JSON", "I cannot do that.", "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, func(c *Config) { c.Structured = true; c.Models = c.Models[:1] },
				openaitest.Reply(tt.reply), openaitest.Reply(goodJSON))
			sum, err := b.c.Summarize(t.Context(), testInput())
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(sum.Attempts); got != "model-a/structured.v2=rejected model-a/structured.v2+feedback=accepted" {
				t.Errorf("attempts %s", got)
			}
			if !strings.Contains(sum.Attempts[0].Error, tt.want) {
				t.Errorf("rejection %q lacks %q", sum.Attempts[0].Error, tt.want)
			}
		})
	}
}

func TestReasoningModelRequest(t *testing.T) {
	b := setup(t, func(c *Config) { c.Models = []ModelConfig{{Name: "gpt-5-mini"}} }, openaitest.Reply(goodReply))
	if _, err := b.c.Summarize(t.Context(), testInput()); err != nil {
		t.Fatal(err)
	}
	r := b.srv.Requests()[0]
	if r.MaxTokens != 0 || r.MaxCompletionTokens != DefaultMaxOutputTokens || r.Temperature != nil {
		t.Errorf("max_tokens %d max_completion_tokens %d temperature %v", r.MaxTokens, r.MaxCompletionTokens, r.Temperature)
	}
}

func TestChainedBriefing(t *testing.T) {
	prev := &briefd.Briefing{BoundaryID: "m01", Text: "TASK: earlier work on pkg/parser/lexer.go.\nUser said: use tabs.", Depth: 1}
	in := testInput()
	in.Previous = prev
	in.Span = append([]briefd.Message{briefd.BriefingMessage(prev)}, in.Span...)
	in.Draft.Depth = 2
	b := setup(t, nil, openaitest.Reply(goodReply))
	if _, err := b.c.Summarize(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	user := b.srv.Requests()[0].Messages[1].Content
	if !strings.Contains(user, `<previous-chat-history id="briefing:m01" depth="1">`) || !strings.Contains(user, "User said: use tabs.") || !strings.Contains(user, hintVerbatim) {
		t.Errorf("chained request lacks the earlier briefing or the hint:\n%s", clip(user, 3000))
	}
	if strings.Contains(user, "&lt;") || strings.Count(user, "<compacted-history>") > 0 {
		t.Errorf("the earlier briefing was not unwrapped")
	}
}

func TestBudgetHint(t *testing.T) {
	c := &Cascade{cfg: Config{CondenseDepth: 4}}
	tests := []struct {
		prev, depth int
		want        string
	}{
		{100, 1, hintVerbatim},
		{650, 1, "condense its oldest sections lightly"},
		{900, 1, "oldest fully resolved sections"},
		{100, 4, "depth 4"},
	}
	for _, tt := range tests {
		if got := c.budgetHint(tt.prev, 1000, tt.depth, true); !strings.Contains(got, tt.want) {
			t.Errorf("hint(%d, depth %d) = %q, want %q", tt.prev, tt.depth, got, tt.want)
		}
	}
	if c.budgetHint(100, 1000, 1, false) != "" {
		t.Error("hint without an earlier briefing")
	}
}

func TestNoRoomForNarrative(t *testing.T) {
	b := setup(t, nil)
	in := testInput()
	in.BudgetTokens = 150
	_, err := b.c.Summarize(t.Context(), in)
	if !errors.Is(err, ErrNoRoom) || len(b.srv.Requests()) != 0 {
		t.Errorf("err %v, %d requests", err, len(b.srv.Requests()))
	}
}

func TestCancelledContext(t *testing.T) {
	b := setup(t, nil, openaitest.Hang())
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// Cancel once the request is in: wait on the server, not on time.
		for len(b.srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := b.c.Summarize(ctx, testInput())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if len(b.srv.Requests()) != 1 {
		t.Errorf("%d requests after cancel", len(b.srv.Requests()))
	}
}

func TestAPIKeyRedacted(t *testing.T) {
	cfg := Config{APIKey: "sk-live-123", Models: []ModelConfig{{Name: "m"}}}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "key", cfg.APIKey, "cfg", fmt.Sprintf("%+v %#v", cfg, cfg))
	if strings.Contains(buf.String(), "sk-live") {
		t.Errorf("key leaked: %s", buf.String())
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("no models accepted")
	}
	var ce *ConfigError
	if _, err := New(Config{Models: []ModelConfig{{Name: " "}}}); !errors.As(err, &ce) || ce.Field != "Models[0].Name" {
		t.Errorf("err %v", err)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		text   string
		want   errClass
	}{
		{429, "rate", classRetryable},
		{500, "x", classRetryable},
		{502, "<html>", classRetryable},
		{400, "This model's maximum context length is 8192 tokens", classContextLength},
		{400, "context_length_exceeded", classContextLength},
		{413, "", classContextLength},
		{400, "Invalid parameter: response_format", classFormat},
		{400, "bad", classPermanent},
		{401, "key", classPermanent},
		{403, "no", classPermanent},
		{404, "model not found", classPermanent},
	}
	for _, tt := range tests {
		if got := statusClass(tt.status, tt.text); got != tt.want {
			t.Errorf("statusClass(%d, %q) = %v, want %v", tt.status, tt.text, got, tt.want)
		}
	}
	now := time.Now()
	for v, want := range map[string]time.Duration{"2": 2 * time.Second, "0.5": 500 * time.Millisecond, "": 0, "soon": 0,
		now.Add(90 * time.Second).UTC().Format(http.TimeFormat): 89 * time.Second} {
		if got := parseRetryAfter(v, now); got < want || got > want+time.Second {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}
