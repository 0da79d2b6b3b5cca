package cascade

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/openaitest"
)

// fakeClock is a Clock whose Sleep returns at once, advancing Now and
// recording the duration, so backoff and Retry-After are asserted exactly.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// testIdentifiers stands in for compact.Identifiers (another package's
// work): paths and file names, URLs, message ids.
var testIdentRe = regexp.MustCompile(`https?://[^\s"\]]+|[\w./-]*\w\.(?:go|md|py|txt)\b|\bm\d{2,}\b`)

func testIdentifiers(text string) []string { return testIdentRe.FindAllString(text, -1) }

const longOutput = "building...\n"

func testSpan() []briefd.Message {
	call := func(id, name, args string) []briefd.ToolCall {
		return []briefd.ToolCall{{ID: id, Type: "function", Function: briefd.FunctionCall{Name: name, Arguments: args}}}
	}
	return []briefd.Message{
		{ID: "m01", Role: briefd.RoleUser, Content: briefd.Text("Fix the failing test in pkg/parser/lexer.go. Always run go test ./... before committing.")},
		{ID: "m02", Role: briefd.RoleAssistant, Content: briefd.Text("Running the parser tests."), ToolCalls: call("c1", "bash", `{"command":"go test ./pkg/parser/"}`)},
		{ID: "m03", Role: briefd.RoleTool, ToolCallID: "c1", Content: briefd.Text("--- FAIL: TestLex (0.00s)\n    lexer_test.go:42: unexpected token\nFAIL\n" + strings.Repeat(longOutput, 800))},
		{ID: "m04", Role: briefd.RoleAssistant, Content: briefd.Text("The lexer drops the last rune; fixing it."), ToolCalls: call("c2", "edit", `{"path":"pkg/parser/lexer.go"}`)},
		{ID: "m05", Role: briefd.RoleTool, ToolCallID: "c2", Content: briefd.Text("edited pkg/parser/lexer.go")},
		{ID: "m06", Role: briefd.RoleAssistant, Content: briefd.Text("Running all tests."), ToolCalls: call("c3", "bash", `{"command":"go test ./..."}`)},
		{ID: "m07", Role: briefd.RoleTool, ToolCallID: "c3", Content: briefd.Text("ok  \tgithub.com/x/parser\t0.012s\nPASS")},
		{ID: "m08", Role: briefd.RoleUser, Content: briefd.Text("Thanks. Please also update CHANGELOG.md with a line for the fix.")},
	}
}

const testLedger = "User instructions:\n- [m01] Fix the failing test in pkg/parser/lexer.go. Always run go test ./... before committing.\n- [m08] Please also update CHANGELOG.md with a line for the fix.\nFiles: pkg/parser/lexer.go, CHANGELOG.md"

func testInput() compact.SummaryInput {
	return compact.SummaryInput{
		ConversationID: "conv-1",
		Tenant:         "acme",
		Span:           testSpan(),
		Draft:          &brief.Draft{Text: testLedger, Structured: []byte(`{"files":["pkg/parser/lexer.go","CHANGELOG.md"]}`)},
		BudgetTokens:   2000,
		CountTokens:    func(s string) int { return (len(s) + 3) / 4 },
	}
}

const goodReply = `TASK: Fix the failing test in pkg/parser/lexer.go, then update CHANGELOG.md.
USER INSTRUCTIONS: "Always run go test ./... before committing."
PROGRESS: You fixed the lexer and the full test run passed: COMPLETED [m07]. Updating CHANGELOG.md: IN-PROGRESS.
DECISIONS: You fixed pkg/parser/lexer.go rather than the test, because the lexer dropped the last rune.
ERRORS: TestLex failed at lexer_test.go:42 before the fix; resolved.
CURRENT STATE: All tests pass; CHANGELOG.md is not updated yet.
NEXT: Add a line for the fix to CHANGELOG.md.`

const aggressiveReply = `TASK: Fix the failing test in pkg/parser/lexer.go and update CHANGELOG.md.
PROGRESS: Lexer fix COMPLETED [m07].
CURRENT STATE: Tests pass.
NEXT: Update CHANGELOG.md.`

const goodJSON = `{"task_goal":"Fix the failing test in pkg/parser/lexer.go, then update CHANGELOG.md.",
"user_instructions":[{"quote":"Always run go test ./... before committing.","source_ids":["m01"]}],
"findings":[{"finding":"TestLex failed before the fix","result":"lexer_test.go:42: unexpected token","source_ids":["m03"]}],
"objects":[{"name":"pkg/parser/lexer.go","state":"edited: the lexer keeps the last rune","source_ids":["m05"]}],
"decisions":[{"decision":"Fix pkg/parser/lexer.go rather than the test","reason":"the lexer dropped the last rune","source_ids":["m04"]}],
"errors":[{"error":"TestLex failed at lexer_test.go:42","resolution":"the full run passes after the fix","source_ids":["m03","m07"]}],
"progress":[{"step":"run the full test suite after the fix","status":"completed","source_ids":["m07"]}],
"pending_actions":[{"action":"update CHANGELOG.md","source_ids":["m08"]}],
"current_state":"All tests pass; CHANGELOG.md is not updated yet."}`

type bundle struct {
	srv   *openaitest.Server
	clock *fakeClock
	c     *Cascade
}

// setup starts a scripted server and a cascade of models a and b against it.
func setup(t *testing.T, mod func(*Config), script ...openaitest.Step) *bundle {
	t.Helper()
	srv := openaitest.NewServer(t, script...)
	clock := newFakeClock()
	cfg := Config{
		BaseURL:     srv.URL,
		APIKey:      "sk-test-secret",
		Models:      []ModelConfig{{Name: "model-a", Timeout: 5 * time.Second}, {Name: "model-b", Timeout: 5 * time.Second}},
		Identifiers: testIdentifiers,
		Clock:       clock,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &bundle{srv: srv, clock: clock, c: c}
}

func outcomes(as []compact.Attempt) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, a.Model+"/"+a.Prompt+"="+a.Outcome)
	}
	return strings.Join(parts, " ")
}
