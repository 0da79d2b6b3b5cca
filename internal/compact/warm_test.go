package compact

import (
	"reflect"
	"testing"

	"github.com/briefd/briefd"
)

// TestWarmBriefingMatchesFresh grows every third shared conversation turn
// by turn, forced (the boundary moves with the history, as a user's
// /compact moves it) and under the trigger, and compacts each snapshot
// with an engine that remembers the conversation (the briefing writer's
// model of the span kept in the Memo) and with one that remembers
// nothing: the briefings must be the same bytes. Past 60% the history is
// spliced, as the agent does, and grows on from the briefing (chained).
func TestWarmBriefingMatchesFresh(t *testing.T) {
	t.Parallel()
	hs := loadHistories(t, false)
	counter, err := NewTokenCounter("", EncodingCL100K, DefaultPerMessageOverhead)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if i%3 != 0 || testing.Short() && i%9 != 0 {
			continue
		}
		t.Run(h.ID, func(t *testing.T) {
			for _, force := range []bool{true, false} {
				cfg := Config{ContextWindow: windowFor(counter, h.Messages) / 2, MinKeepMessages: 5}
				warm, err := New(cfg, WithTokenCounter(counter))
				if err != nil {
					t.Fatal(err)
				}
				cold, err := New(cfg, WithTokenCounter(counter), WithMemo(nil))
				if err != nil {
					t.Fatal(err)
				}
				compacted, resumed := 0, 0
				var hist []briefd.Message
				var prev *briefd.Briefing
				spliced := false
				for k, m := range h.Messages {
					hist = append(hist, m)
					if k+1 < len(h.Messages) && h.Messages[k+1].Role == briefd.RoleTool {
						continue // a turn ends before a message that is not a result
					}
					req := Request{ConversationID: h.ID, Messages: hist, Force: force, Previous: prev}
					if m := warm.memo.get(warm.memoKey, "", h.ID); m.warm.Load().Len() > 0 {
						resumed++
					}
					a, err := warm.Compact(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					b, err := cold.Compact(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					if a.Compacted != b.Compacted || a.Reason != b.Reason || a.BudgetTokens != b.BudgetTokens || !reflect.DeepEqual(a.Coverage, b.Coverage) {
						t.Fatalf("force %v, at %s: warm %v %q %d %+v, fresh %v %q %d %+v", force, m.ID,
							a.Compacted, a.Reason, a.BudgetTokens, a.Coverage, b.Compacted, b.Reason, b.BudgetTokens, b.Coverage)
					}
					if !a.Compacted {
						continue
					}
					if a.Briefing.Text != b.Briefing.Text || string(a.Briefing.Structured) != string(b.Briefing.Structured) ||
						a.Briefing.BoundaryID != b.Briefing.BoundaryID || a.Briefing.InputHash != b.Briefing.InputHash {
						t.Fatalf("force %v, at %s: the warm briefing differs:\n%s\nfresh:\n%s", force, m.ID, a.Briefing.Text, b.Briefing.Text)
					}
					compacted++
					if !spliced && k > len(h.Messages)*6/10 {
						// The agent splices and goes on from the briefing.
						spliced, prev = true, a.Briefing
						hist = append([]briefd.Message(nil), a.Messages...)
					}
				}
				if compacted >= 3 && resumed == 0 {
					t.Fatalf("force %v: %d snapshots compacted, %d with a warm model", force, compacted, resumed)
				}
				t.Logf("force %v: %d snapshots compacted, %d with a warm model", force, compacted, resumed)
			}
		})
	}
}
