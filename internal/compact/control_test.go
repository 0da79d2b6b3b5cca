package compact

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// A snapshot's control decides when and what: never skips, now forces,
// trigger_fraction and keep_tokens replace the configuration, pins keep
// messages out of the span and the briefing names them for Splice.
func TestCompactControl(t *testing.T) {
	msgs := bigHistory(30) // about 2,000 tokens, 62 messages
	e := newTestEngine(t, Config{ContextWindow: 20000})

	t.Run("below trigger says where the trigger is", func(t *testing.T) {
		res, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		if res.Compacted || res.Skip != SkipBelowTrigger || res.TriggerTokens != 13000 || res.TokensBefore == 0 {
			t.Fatalf("got compacted %v skip %q trigger %d tokens %d", res.Compacted, res.Skip, res.TriggerTokens, res.TokensBefore)
		}
	})
	t.Run("trigger fraction", func(t *testing.T) {
		res, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs,
			Control: briefd.Control{TriggerFraction: 0.05, KeepTokens: 400}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Compacted || res.TriggerTokens != 1000 || !strings.Contains(res.Reason, "0.05 x 20000") {
			t.Fatalf("compacted %v trigger %d reason %q", res.Compacted, res.TriggerTokens, res.Reason)
		}
		if kept := res.Briefing.TokensAfter - res.Briefing.BriefingTokens; kept > 500 {
			t.Fatalf("%d tokens kept besides the briefing: the kept budget of 400 was not applied", kept)
		}
	})
	t.Run("never", func(t *testing.T) {
		res, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs, Force: true,
			Control: briefd.Control{Mode: briefd.ModeNever}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Compacted || res.Skip != SkipDisabled || !strings.Contains(res.Reason, "mode never") {
			t.Fatalf("compacted %v skip %q reason %q", res.Compacted, res.Skip, res.Reason)
		}
	})
	t.Run("now", func(t *testing.T) {
		req := Request{ConversationID: "c", Messages: msgs, Control: briefd.Control{Mode: briefd.ModeNow, Focus: "file7"}}
		res, err := e.Compact(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Compacted || !strings.HasPrefix(res.Reason, "forced") {
			t.Fatalf("compacted %v reason %q", res.Compacted, res.Reason)
		}
		checkResult(t, e, Request{Messages: msgs, Force: true}, res)
	})
	t.Run("pin", func(t *testing.T) {
		pinned := append(slices.Clone(msgs[:4]),
			briefd.Message{ID: "aside", Role: briefd.RoleAssistant, Content: briefd.Text("I will keep the schema at v3.")},
			briefd.Message{ID: "note", Role: briefd.RoleUser, Content: briefd.Text("the schema is v3")})
		pinned = append(pinned, msgs[4:]...)
		res, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: pinned,
			Control: briefd.Control{Mode: briefd.ModeNow, Pin: []string{"note", "aside", "not-there"}}})
		if err != nil {
			t.Fatal(err)
		}
		b := res.Briefing
		if !res.Compacted || !slices.Equal(b.PinnedIDs, []string{"aside", "note"}) {
			t.Fatalf("compacted %v pinned ids %v", res.Compacted, b.PinnedIDs)
		}
		if slices.Contains(b.CompactedIDs, "note") || slices.Contains(b.CompactedIDs, "aside") {
			t.Fatalf("a pinned message was compacted: %v", b.CompactedIDs)
		}
		// The agent's own splice (a history without "pinned": true on
		// them) keeps them too, and gets the engine's result.
		spliced, err := briefd.Splice(pinned, b)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(spliced), ids(res.Messages); !slices.Equal(got, want) {
			t.Fatalf("agent's splice %v, engine's %v", got, want)
		}
		if got := ids(spliced)[:5]; !slices.Equal(got, []string{"sys", "task", "aside", "note", "briefing:" + b.BoundaryID}) {
			t.Fatalf("spliced head %v", got)
		}
	})
	t.Run("pin of a tool step", func(t *testing.T) {
		_, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs, Control: briefd.Control{Pin: []string{"t3"}}})
		if !errors.Is(err, briefd.ErrInvalidControl) || !strings.Contains(err.Error(), `pin "t3": a tool message`) {
			t.Fatalf("got %v", err)
		}
		_, err = e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs, Control: briefd.Control{Pin: []string{"a3"}}})
		if !errors.Is(err, briefd.ErrInvalidControl) || !strings.Contains(err.Error(), "with tool calls") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("kept budget not below the trigger", func(t *testing.T) {
		_, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs, Control: briefd.Control{KeepTokens: 15000}})
		if !errors.Is(err, briefd.ErrInvalidControl) || !errors.Is(err, ErrInvalidConfig) ||
			!strings.Contains(err.Error(), "KeepTokens = 15000: kept budget 15000 tokens is not below the trigger 13000") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("invalid control", func(t *testing.T) {
		_, err := e.Compact(t.Context(), Request{ConversationID: "c", Messages: msgs, Control: briefd.Control{Mode: "soon"}})
		if !errors.Is(err, briefd.ErrInvalidControl) {
			t.Fatalf("got %v", err)
		}
	})
}
