package compact

import (
	"reflect"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// windowFor returns a context window whose trigger the history just
// passes: each conversation is compacted as if it had reached the trigger
// at the point where it is frozen.
func windowFor(c *TokenCounter, msgs []briefd.Message) int {
	total := 0
	for i := range msgs {
		total += c.CountMessage(&msgs[i])
	}
	return int(float64(total)/DefaultTriggerFraction) - 1
}

// TestCompactSharedHistories compacts the first 70% of every shared
// conversation with the real deterministic briefing, forced, then keeps
// going: the agent's next turns are appended to the spliced history and
// the whole conversation is compacted again, folding the first briefing.
func TestCompactSharedHistories(t *testing.T) {
	t.Parallel()
	hs := loadHistories(t, false)
	counter, err := NewTokenCounter("", EncodingCL100K, DefaultPerMessageOverhead)
	if err != nil {
		t.Fatal(err)
	}
	compacted := 0
	for _, h := range hs {
		t.Run(h.ID, func(t *testing.T) {
			if err := briefd.Validate(h.Messages, briefd.Limits{}); err != nil {
				t.Fatalf("shared history invalid: %v", err)
			}
			cut := len(h.Messages) * 7 / 10
			req := Request{ConversationID: h.ID, Messages: h.Messages[:cut], Force: true}
			e, err := New(Config{ContextWindow: windowFor(counter, req.Messages), MinKeepMessages: 5}, WithTokenCounter(counter))
			if err != nil {
				t.Fatal(err)
			}
			orig := cloneMessages(req.Messages)
			res, err := e.Compact(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(req.Messages, orig) {
				t.Fatal("Compact modified its input")
			}
			if !res.Compacted {
				// Two reasons are legitimate: a conversation no longer
				// than its pinned head and the floor, and a span too small
				// for any briefing (under twice the smallest budget).
				counts, _, _ := e.countMessages(t.Context(), req.Messages, nil)
				pinned := defaultPinned(req.Messages)
				short, small := false, false
				if at, err := e.cfg.boundary(req.Messages, counts, pinned, req.Force); err != nil {
					n := 0
					for _, p := range pinned {
						if !p {
							n++
						}
					}
					short = n <= e.cfg.keepFloor()
				} else {
					_, _, spanTokens, _ := splitSpan(req.Messages, counts, pinned, at.index)
					small = spanTokens < 2*e.cfg.MinBriefingTokens && strings.Contains(res.Reason, "would not shrink")
				}
				if !short && !small {
					t.Fatalf("not compacted: %s", res.Reason)
				}
				t.Logf("not compacted (%d messages, %d tokens): %s", cut, res.TokensBefore, res.Reason)
				return
			}
			compacted++
			checkResult(t, e, req, res)
			b := res.Briefing
			t.Logf("%d messages, window %d: %d -> %d tokens, span %d tokens, briefing %d", cut, e.cfg.ContextWindow, b.TokensBefore, b.TokensAfter, b.SpanTokens, b.BriefingTokens)
			if b.SpanTokens <= 0 || b.BriefingTokens <= 0 || b.TokensAfter >= b.TokensBefore {
				t.Fatalf("tokens: span %d briefing %d, %d -> %d", b.SpanTokens, b.BriefingTokens, b.TokensBefore, b.TokensAfter)
			}
			// The agent splices the stored briefing itself: same history.
			again, err := briefd.Splice(req.Messages, b)
			if err != nil || !reflect.DeepEqual(again, res.Messages) {
				t.Fatalf("agent-side splice differs: %v", err)
			}
			if text, ok := briefd.UnwrapBriefing(again[len(again)-(cut-res.Boundary)-1].Content.Text); !ok || text != b.Text {
				t.Fatal("the spliced message does not carry the briefing text")
			}

			// Chained: the rest of the conversation arrives, compact again.
			grown := append(append([]briefd.Message(nil), res.Messages...), h.Messages[cut:]...)
			req2 := Request{ConversationID: h.ID, Messages: grown, Previous: b, Force: true}
			res2, err := e.Compact(t.Context(), req2)
			if err != nil {
				t.Fatal(err)
			}
			if !res2.Compacted {
				t.Logf("second compaction: %s", res2.Reason)
				return
			}
			checkResult(t, e, req2, res2)
			b2 := res2.Briefing
			if b2.CompactedIDs[0] == "briefing:"+b.BoundaryID {
				if b2.Depth < 1 || b2.Position <= b.Position {
					t.Fatalf("chained briefing: depth %d position %d (first %d)", b2.Depth, b2.Position, b.Position)
				}
			}
		})
	}
	if len(hs) > 0 && compacted < len(hs)*3/4 {
		t.Fatalf("only %d of %d conversations compacted", compacted, len(hs))
	}
}
