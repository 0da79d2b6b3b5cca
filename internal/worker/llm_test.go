package worker_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cascade"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/openaitest"
	"github.com/briefd/briefd/internal/worker"
)

// narrative is a model reply that passes the cascade's checks: long
// enough, no tags, no identifier absent from the source.
const narrative = `TASK:
The customer wants to change a flight reservation.
CURRENT STATE:
You looked up the profile and the reservations and compared the options with the customer.
Nothing was booked or modified yet: IN-PROGRESS.
NEXT:
Wait for the customer to confirm the change.`

func newCascade(t *testing.T, srv *openaitest.Server, models ...string) *cascade.Cascade {
	t.Helper()
	cfg := cascade.Config{BaseURL: srv.URL, APIKey: "test-key", InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	for _, m := range models {
		cfg.Models = append(cfg.Models, cascade.ModelConfig{Name: m, Timeout: 5 * time.Second})
	}
	c, err := cascade.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Through the service: what the cascade decides is what gets stored, and
// the queue acks in both cases (a failed model is not a failed snapshot).
func TestLLMThroughService(t *testing.T) {
	tests := []struct {
		name      string
		script    []openaitest.Step
		wantTier  briefd.Tier
		wantModel string
	}{
		{
			name:      "first model answers",
			script:    []openaitest.Step{openaitest.Reply(narrative)},
			wantTier:  "llm:normal",
			wantModel: "cheap",
		},
		{
			name: "first model down, second answers",
			script: []openaitest.Step{
				openaitest.Status(http.StatusUnauthorized, "bad key"),
				openaitest.Reply(narrative),
			},
			wantTier:  "llm:normal",
			wantModel: "strong",
		},
		{
			name: "every model fails: deterministic briefing stored",
			script: []openaitest.Step{
				openaitest.Status(http.StatusInternalServerError, "boom"), openaitest.Status(http.StatusInternalServerError, "boom"),
				openaitest.Status(http.StatusInternalServerError, "boom"),
				openaitest.Reply(""), openaitest.Reply(""), openaitest.Reply(""), openaitest.Reply(""),
			},
			wantTier: briefd.TierDeterministic,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, tt.script...)
			srv.SetDefault(openaitest.Status(http.StatusInternalServerError, "still failing"))
			b := setup(t, false)
			b.startWorker(t, func(c *worker.Config) {
				c.Summarizer = newCascade(t, srv, "cheap", "strong")
				// Room for a narrative beside the evidence ledger in a small span.
				c.Engine.MinBriefingTokens = 1500
			})
			h := loadExample(t, "tau-bench-2.json")
			if _, err := b.pub.Publish(t.Context(), "acme", "llm", h.Messages); err != nil {
				t.Fatal(err)
			}
			var got *briefd.Briefing
			waitFor(t, 30*time.Second, "the briefing", func() bool {
				bf, err := b.store.Latest(t.Context(), "acme", "llm")
				got = bf
				return err == nil
			})
			if got.Tier != tt.wantTier || got.Model != tt.wantModel {
				t.Fatalf("stored tier %q model %q, want %q %q", got.Tier, got.Model, tt.wantTier, tt.wantModel)
			}
			if got.Tier != briefd.TierDeterministic && got.PromptVersion == "" {
				t.Error("LLM briefing without a prompt version")
			}
			if len(got.Text) < 30 {
				t.Fatalf("stored briefing too short: %q", got.Text)
			}
			// Acked once: the audit stream has exactly one compaction at attempt 1.
			evs, err := audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: "llm", Types: []audit.Type{audit.TypeCompacted}})
			if err != nil || len(evs) != 1 || evs[0].Attempt != 1 || evs[0].Tier != tt.wantTier || evs[0].SummarizerAttempts == 0 {
				t.Fatalf("audit events %+v (err %v)", evs, err)
			}
		})
	}
}

var _ compact.Summarizer = (*cascade.Cascade)(nil)
