package worker_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
			// Acked once: the audit stream has exactly one compaction at attempt 1
			// (published after the briefing is stored: waited for).
			var evs []audit.Event
			var err error
			waitFor(t, 10*time.Second, "the compaction's audit event", func() bool {
				evs, err = audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: "llm", Types: []audit.Type{audit.TypeCompacted}})
				return err == nil && len(evs) > 0
			})
			if len(evs) != 1 || evs[0].Attempt != 1 || evs[0].Tier != tt.wantTier || evs[0].SummarizerAttempts == 0 {
				t.Fatalf("audit events %+v (err %v)", evs, err)
			}
		})
	}
}

var _ compact.Summarizer = (*cascade.Cascade)(nil)

// Defect 11: the handler's deadline (MaxHandleTime) fires while a model is
// still thinking. The cascade is stopped short of it, and the
// deterministic briefing already built is stored on the first delivery:
// the snapshot is neither retried from scratch nor dead-lettered.
func TestSlowModelKeepsTheDeterministicBriefing(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetDefault(openaitest.Hang())
	b := setup(t, false)
	b.qcfg.MaxHandleTime = 3 * time.Second
	start := time.Now()
	w := b.startWorker(t, func(c *worker.Config) {
		c.Queue.MaxHandleTime = 3 * time.Second
		cfg := cascade.Config{BaseURL: srv.URL, APIKey: "test-key",
			// Each model would wait far longer than the handler may.
			Models: []cascade.ModelConfig{{Name: "slow", Timeout: time.Minute}}}
		cas, err := cascade.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.Summarizer = cas
		c.Engine.MinBriefingTokens = 1500
	})
	h := loadExample(t, "tau-bench-2.json")
	if _, err := b.pub.Publish(t.Context(), "acme", "slow", h.Messages); err != nil {
		t.Fatal(err)
	}
	var got *briefd.Briefing
	waitFor(t, 30*time.Second, "the briefing", func() bool {
		bf, err := b.store.Latest(t.Context(), "acme", "slow")
		got = bf
		return err == nil
	})
	if got.Tier != briefd.TierDeterministic || len(got.Text) < 100 {
		t.Fatalf("stored tier %q (%d chars), want the deterministic briefing", got.Tier, len(got.Text))
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("stored after %v: the cascade was not stopped before the handler's deadline", took)
	}
	// The audit event is published after the briefing is stored: wait for it
	// rather than read once (a loaded machine publishes it a moment later).
	var evs []audit.Event
	var err error
	waitFor(t, 10*time.Second, "the compaction's audit event", func() bool {
		evs, err = audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: "slow", Types: []audit.Type{audit.TypeCompacted}})
		return err == nil && len(evs) > 0
	})
	if len(evs) != 1 {
		t.Fatalf("audit events %+v (err %v), want one compaction", evs, err)
	}
	ev := evs[0]
	if ev.Attempt != 1 || ev.LLM == nil || ev.LLM.Outcome != "fallback" || ev.LLM.Fallback == "" || len(ev.LLM.Attempts) == 0 {
		t.Fatalf("audit event: attempt %d, llm %+v; want the first delivery, a fallback with its reason and the attempt", ev.Attempt, ev.LLM)
	}
	if n := testutil.ToFloat64(w.Metrics().DeadLetters); n != 0 {
		t.Errorf("%v dead letters", n)
	}
	// The counter moves after the audit event is published: wait for it
	// too (a loaded clean-clone run read it at 0).
	waitFor(t, 10*time.Second, "briefd_llm_fallbacks_total = 1", func() bool {
		return testutil.ToFloat64(w.Metrics().LLMFallbacks) == 1
	})
	if n := testutil.ToFloat64(w.Metrics().LLMFallbacks); n != 1 {
		t.Errorf("briefd_llm_fallbacks_total = %v, want 1", n)
	}
}

// The gate's verdicts reach the audit event and the rejection metrics:
// an operator sees which rule a model broke.
func TestVerdictsInAuditAndMetrics(t *testing.T) {
	lie := narrative + "\nPROGRESS: The flight change was booked and paid: COMPLETED [m0008]."
	srv := openaitest.NewServer(t, openaitest.Reply(lie), openaitest.Reply(narrative))
	b := setup(t, false)
	w := b.startWorker(t, func(c *worker.Config) {
		c.Summarizer = newCascade(t, srv, "cheap")
		c.Engine.MinBriefingTokens = 1500
	})
	h := loadExample(t, "tau-bench-2.json")
	if _, err := b.pub.Publish(t.Context(), "acme", "verdicts", h.Messages); err != nil {
		t.Fatal(err)
	}
	var evs []audit.Event
	waitFor(t, 30*time.Second, "the audit event", func() bool {
		evs, _ = audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: "verdicts", Types: []audit.Type{audit.TypeCompacted}})
		return len(evs) == 1
	})
	r := evs[0].LLM
	if r == nil || r.Outcome != "accepted" || len(r.Attempts) != 2 {
		t.Fatalf("llm report %+v, want two attempts, the second accepted", r)
	}
	first, second := r.Attempts[0], r.Attempts[1]
	var failed []string
	for _, v := range first.Verdicts {
		if !v.Passed {
			failed = append(failed, v.Rule)
			if len(v.Failures) == 0 || !contains(v.Failures[0], "booked") {
				t.Errorf("verdict %+v does not name the claim", v)
			}
		}
	}
	if first.Outcome != "rejected" || len(failed) != 1 || failed[0] != cascade.RuleCompletion || len(first.Verdicts) != len(cascade.Rules) {
		t.Errorf("first attempt %+v: want rejected by completion alone, every rule judged", first)
	}
	if second.Outcome != "accepted" || !second.Feedback {
		t.Errorf("second attempt %+v: want accepted after feedback", second)
	}
	if n := testutil.ToFloat64(w.Metrics().LLMRejections.WithLabelValues("cheap", cascade.RuleCompletion)); n != 1 {
		t.Errorf("briefd_llm_gate_rejections_total{model=cheap,rule=completion} = %v, want 1", n)
	}
}
