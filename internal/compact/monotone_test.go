package compact

import (
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/examples"
)

// TestBoundaryMonotone plays every example history (and the shared ones,
// when present) turn by turn, as an agent publishes it, and checks that
// no turn's boundary falls before the previous turn's (issue 10, F8): the
// stored briefing's boundary then never moves back as a conversation
// grows. At 8a1d3ba 10.3% of the compacted prefixes of the shared
// histories cut earlier than the turn before; the floor of kept messages
// overrode the rule that keeps a message over the budget alone.
func TestBoundaryMonotone(t *testing.T) {
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	if !testing.Short() {
		hs = append(hs, loadHistories(t, true)...)
	}
	e, err := New(Config{ContextWindow: 10000})
	if err != nil {
		t.Fatal(err)
	}
	cuts := 0
	for _, h := range hs {
		counts, _, err := e.countMessages(t.Context(), h.Messages, nil)
		if err != nil {
			t.Fatal(err)
		}
		prev, prevN := -1, 0
		for n := 1; n <= len(h.Messages); n++ {
			if n < len(h.Messages) && h.Messages[n].Role != briefd.RoleAssistant {
				continue // an agent publishes before each assistant turn
			}
			msgs := h.Messages[:n]
			total := 0
			for _, c := range counts[:n] {
				total += c
			}
			if fire, _ := e.cfg.trigger(msgs, total, false); !fire {
				continue
			}
			at, err := e.cfg.boundary(msgs, counts[:n], defaultPinned(msgs), false)
			if err != nil {
				continue
			}
			cuts++
			if at.index < prev {
				t.Errorf("%s: %d messages cut at #%d (%s), %d messages at #%d: the boundary moved back (notes %q)",
					h.ID, n, at.index, msgs[at.index].ID, prevN, prev, at.notes)
			}
			prev, prevN = at.index, n
		}
	}
	if cuts == 0 {
		t.Fatal("no history compacted: the test proves nothing")
	}
	t.Logf("%d histories, %d compacted turns, none cut before the turn before", len(hs), cuts)
}
