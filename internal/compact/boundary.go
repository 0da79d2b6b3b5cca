package compact

import (
	"errors"
	"fmt"
	"slices"

	"github.com/briefd/briefd"
)

// ErrNoBoundary is wrapped by the boundary stage when there is nothing to
// compact; the engine reports it as a Result's Reason, not as an error.
var ErrNoBoundary = errors.New("nothing to compact")

// cut is where the boundary stage cuts a history.
type cut struct {
	// index of the first kept message.
	index int
	// keptTokens counts the messages from index on.
	keptTokens int
	// notes explain choices worth reporting (an exception to a rule).
	notes []string
}

// pinnedFlags returns briefd.Pinned for every message in one pass (calling
// Pinned per message would be quadratic on long histories), also true for
// the messages whose ids are in pin (a snapshot's control). Ids the history
// lacks are ignored; pinning a message that cannot be pinned (a tool
// message, an assistant message with tool calls, a spliced briefing) is
// an error matching briefd.ErrInvalidControl.
func pinnedFlags(msgs []briefd.Message, pin []string) ([]bool, error) {
	flags, _, err := pinnedFlagsFrom(msgs, pin, make([]bool, 0, len(msgs)), 0)
	return flags, err
}

// pinnedFlagsFrom appends to flags, pinnedFlags of msgs[:len(flags)],
// those of the messages after them; user is one more than the index of the
// first user message among msgs[:len(flags)] that is not a briefing (0:
// none), and it returns that of all msgs.
func pinnedFlagsFrom(msgs []briefd.Message, pin []string, flags []bool, user int) ([]bool, int, error) {
	var byID map[string]bool
	if len(pin) > 0 {
		byID = make(map[string]bool, len(pin))
		for _, id := range pin {
			byID[id] = true
		}
	}
	for i := len(flags); i < len(msgs); i++ {
		m := &msgs[i]
		flag := false
		if byID[m.ID] {
			switch {
			case m.IsBriefing():
				return nil, 0, fmt.Errorf("%w: pin %q: a spliced briefing is folded into the next one, never pinned", briefd.ErrInvalidControl, m.ID)
			case m.Role == briefd.RoleTool:
				return nil, 0, fmt.Errorf("%w: pin %q: a tool message cannot be pinned (its call would be compacted without it)", briefd.ErrInvalidControl, m.ID)
			case len(m.ToolCalls) > 0:
				return nil, 0, fmt.Errorf("%w: pin %q: an assistant message with tool calls cannot be pinned (its results would be compacted without it)", briefd.ErrInvalidControl, m.ID)
			}
			flag = true
		}
		if !m.IsBriefing() {
			switch {
			case m.Role == briefd.RoleSystem || m.Pinned:
				flag = true
			case m.Role == briefd.RoleUser && user == 0:
				flag = true
			}
			if m.Role == briefd.RoleUser && user == 0 {
				user = i + 1
			}
		}
		flags = append(flags, flag)
	}
	return flags, user, nil
}

// pinnedByID returns the ids of the messages of head that are pinned only
// because pin names them (briefd.Pinned would not keep them): the
// briefing lists them so that Splice keeps them too.
func pinnedByID(head []briefd.Message, pin []string) []string {
	if len(pin) == 0 {
		return nil
	}
	var out []string
	for i := range head {
		if !briefd.Pinned(head, i) && slices.Contains(pin, head[i].ID) {
			out = append(out, head[i].ID)
		}
	}
	return out
}

// boundary chooses the first kept message of a valid history whose message
// token counts are counts. The rules, in order:
//
//  1. Walk back from the end while the tail stays within KeepBudget tokens.
//  2. Keep at least max(KeepFloor, MinKeepMessages) messages, even over
//     the budget, unless one of them is over the budget by itself: the
//     tail then starts with the newest such message (just the last
//     message, if it is the one). So the boundary never moves back as the
//     history grows by turns.
//  3. The tail holds the newest user message (a spliced briefing is not
//     one) unless it is pinned, and so kept anyway. Two exceptions, noted
//     in the result: when keeping it would leave nothing to compact, or
//     when the compacted history (pinned head, briefing budget, tail) would
//     not be below the trigger, so the compaction would not relieve the
//     pressure. The briefing then carries that message verbatim.
//  4. The boundary never falls between an assistant's tool calls and their
//     results: a tail that would begin with a tool result begins with the
//     assistant message that made the call.
//
// A forced compaction (a user's /compact) keeps at most ForceKeepFraction
// of the non-pinned history, in tokens and in messages, whatever the
// context window says: otherwise a history far below the window would keep
// everything and compact nothing.
//
// It returns an error wrapping ErrNoBoundary, saying why, when no
// non-pinned message other than an earlier briefing precedes the boundary.
func (c Config) boundary(msgs []briefd.Message, counts []int, pinned []bool, force bool) (cut, error) {
	n := len(msgs)
	if n == 0 {
		return cut{}, fmt.Errorf("%w: the history is empty", ErrNoBoundary)
	}
	// suffix[i] is the token count of msgs[i:]; raw[i] counts the
	// compactable messages (not pinned, not a briefing) in msgs[:i].
	suffix := make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + counts[i]
	}
	raw := make([]int, n+1)
	head := make([]int, n+1) // head[i] is the tokens of the pinned messages in msgs[:i]
	for i := range msgs {
		raw[i+1], head[i+1] = raw[i], head[i]
		if !pinned[i] && !msgs[i].IsBriefing() {
			raw[i+1]++
		}
		if pinned[i] {
			head[i+1] += counts[i]
		}
	}
	if raw[n] == 0 {
		return cut{}, fmt.Errorf("%w: every message is pinned or an earlier briefing", ErrNoBoundary)
	}

	var notes []string
	budget, floor, note := c.keepLimits(counts, pinned, force)
	if note != "" {
		notes = append(notes, note)
	}
	b := n
	for b > 0 && suffix[b-1] <= budget {
		b--
	}
	if n-b < floor {
		// The floor extends the tail, but not past a message that is over
		// the budget by itself: the tail then starts with the newest such
		// message. As the history grows the boundary so never moves back
		// (with the floor alone, a tail that began with a large last
		// message would begin earlier one turn later).
		big := -1
		for j := b - 1; j >= max(0, n-floor); j-- {
			if counts[j] > budget {
				big = j
				break
			}
		}
		switch {
		case big == n-1:
			notes = append(notes, fmt.Sprintf("the last message alone (%d tokens) is over the kept budget of %d: keeping just it", counts[big], budget))
			b = big
		case big >= 0:
			notes = append(notes, fmt.Sprintf("message %s (%d tokens) is over the kept budget of %d: the kept tail starts with it, with %d messages", msgs[big].ID, counts[big], budget, n-big))
			b = big
		default:
			b = max(0, n-floor)
		}
	}

	if u := newestUserMessage(msgs); u >= 0 && u < b && !pinned[u] {
		// What the history would weigh after a cut at u: pinned head,
		// briefing budget, tail.
		after := head[u] + c.briefingBudget(suffix[0]-suffix[u]-head[u], 0) + suffix[u]
		switch trig := c.TriggerTokens(); {
		case raw[u] == 0:
			notes = append(notes, fmt.Sprintf("newest user message %s is compacted (the briefing quotes it): keeping it would leave nothing to compact", msgs[u].ID))
		case force && suffix[u] > 2*budget:
			notes = append(notes, fmt.Sprintf("newest user message %s is compacted (the briefing quotes it): keeping it would keep %d tokens, over twice the forced tail of %d", msgs[u].ID, suffix[u], budget))
		case after >= trig && !force:
			notes = append(notes, fmt.Sprintf("newest user message %s is compacted (the briefing quotes it): keeping it would leave about %d tokens after compaction, not below the trigger of %d", msgs[u].ID, after, trig))
		default:
			b = u
		}
	}

	for b > 0 && msgs[b].Role == briefd.RoleTool {
		b--
	}

	if raw[b] == 0 {
		first := -1
		for i := range msgs {
			if !pinned[i] {
				first = i
				break
			}
		}
		if first < b {
			return cut{}, fmt.Errorf("%w: only the earlier briefing %s precedes the kept tail, which starts at %s (#%d)", ErrNoBoundary, msgs[first].ID, msgs[b].ID, b)
		}
		return cut{}, fmt.Errorf("%w: the kept tail starts at or before the first non-pinned message %s (#%d): %d messages, %d tokens kept (budget %d, floor %d messages)",
			ErrNoBoundary, msgs[first].ID, first, n-b, suffix[b], budget, floor)
	}
	return cut{index: b, keptTokens: suffix[b], notes: notes}, nil
}

// keepLimits returns the kept tail's token budget and message floor. A
// forced compaction keeps at most ForceKeepFraction of the non-pinned
// history's tokens and messages (at least one message), and says so.
func (c Config) keepLimits(counts []int, pinned []bool, force bool) (budget, floor int, note string) {
	budget, floor = c.KeepBudget(), c.keepFloor()
	if !force {
		return budget, floor, ""
	}
	free, freeMsgs := 0, 0
	for i := range counts {
		if !pinned[i] {
			free += counts[i]
			freeMsgs++
		}
	}
	if b := int(c.ForceKeepFraction * float64(free)); b < budget {
		budget = b
		note = fmt.Sprintf("forced: the kept tail is at most %g of the non-pinned history (%d tokens)", c.ForceKeepFraction, budget)
	}
	floor = min(floor, max(1, int(c.ForceKeepFraction*float64(freeMsgs))))
	return budget, floor, note
}

// newestUserMessage returns the index of the last user message that is not
// a spliced briefing, or -1.
func newestUserMessage(msgs []briefd.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == briefd.RoleUser && !msgs[i].IsBriefing() {
			return i
		}
	}
	return -1
}
