package compact

import (
	"context"
	"encoding/json"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
)

// Summarizer writes a briefing with a language model. The engine calls it
// after the deterministic evidence briefing is built, and falls back to that
// briefing when Summarize returns an error. internal/cascade provides the
// production implementation.
type Summarizer interface {
	Summarize(ctx context.Context, in SummaryInput) (*Summary, error)
}

// SummarizerFunc adapts a function to the Summarizer interface.
type SummarizerFunc func(ctx context.Context, in SummaryInput) (*Summary, error)

// Summarize calls f(ctx, in).
func (f SummarizerFunc) Summarize(ctx context.Context, in SummaryInput) (*Summary, error) {
	return f(ctx, in)
}

// SummaryInput is what a Summarizer gets: the span to compact and what the
// deterministic tier already extracted from it.
type SummaryInput struct {
	ConversationID string
	Tenant         string
	// Span holds the messages being replaced, in order. When it begins
	// with an earlier briefing message, Previous holds that briefing.
	// Span and Pinned may share memory with the request's messages: read
	// them, never write to them.
	Span []briefd.Message
	// Pinned holds the messages kept verbatim before the briefing (system
	// prompts, the first user message, pinned messages): they state the
	// task and its rules, and are never part of the briefing.
	Pinned   []briefd.Message
	Previous *briefd.Briefing
	// Draft is the deterministic evidence briefing of the span: its ledger
	// must be carried into the model's briefing verbatim, and it is the
	// fallback when the model fails.
	Draft *brief.Draft
	// BudgetTokens is the most tokens the briefing text may use.
	BudgetTokens int
	// CountTokens counts tokens with the engine's encoding.
	CountTokens func(string) int
}

// Summary is a model-written briefing that passed the Summarizer's checks.
type Summary struct {
	Text          string
	Structured    json.RawMessage
	Tier          briefd.Tier
	Model         string
	PromptVersion string
	Attempts      []Attempt
}

// Attempt records one call to one model, successful or not.
type Attempt struct {
	Model   string        `json:"model"`
	Prompt  string        `json:"prompt"`
	Outcome string        `json:"outcome"` // "accepted", "error", "rejected", "skipped"
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"duration_ns"`
	// Feedback marks a reply written after the Summarizer sent the model
	// its verdicts on the previous reply.
	Feedback bool `json:"feedback,omitempty"`
	// Verdicts is the acceptance gate's judgement of the reply, one per
	// rule checked, for an accepted or rejected attempt.
	Verdicts []Verdict `json:"verdicts,omitempty"`
}

// Verdict is the judgement of one reply by one rule of a Summarizer's
// acceptance gate.
type Verdict struct {
	// Rule names the rule ("completion", "user_instruction", ...).
	Rule string `json:"rule"`
	// Passed is false when the reply broke the rule.
	Passed bool `json:"passed"`
	// Failures says what broke it: the claim, the identifier, the
	// instruction (a few, clipped).
	Failures []string `json:"failures,omitempty"`
}

// AttemptsError is returned by a Summarizer that tried and failed: the
// engine falls back to the deterministic briefing and keeps the attempts.
type AttemptsError struct {
	Attempts []Attempt
	Err      error
}

func (e *AttemptsError) Error() string { return "summarizer: " + e.Err.Error() }
func (e *AttemptsError) Unwrap() error { return e.Err }
