package compact

import (
	"fmt"

	"github.com/briefd/briefd"
)

// trigger decides whether a history of tokens tokens should be compacted,
// and says why either way. The checks, in order: force; token pressure
// (tokens > TriggerTokens with at least MinMessages messages); the steps
// trigger (StepsTrigger assistant messages since the last spliced briefing);
// the character threshold.
func (c Config) trigger(msgs []briefd.Message, tokens int, force bool) (bool, string) {
	if force {
		return true, fmt.Sprintf("forced at %d tokens", tokens)
	}
	limit := c.TriggerTokens()
	over := tokens > limit
	enoughMessages := c.MinMessages <= 0 || len(msgs) >= c.MinMessages
	if over && enoughMessages {
		return true, fmt.Sprintf("token pressure: %d tokens > %d (%s)", tokens, limit, c.triggerFormula())
	}
	if c.StepsTrigger > 0 {
		if steps := stepsSinceBriefing(msgs); steps >= c.StepsTrigger {
			return true, fmt.Sprintf("steps: %d assistant steps since the last compaction (every %d)", steps, c.StepsTrigger)
		}
	}
	if c.CharThreshold > 0 {
		if chars := historyChars(msgs); chars > c.CharThreshold {
			return true, fmt.Sprintf("size: %d characters > %d", chars, c.CharThreshold)
		}
	}
	if over {
		return false, fmt.Sprintf("below trigger: %d tokens > %d (%s) but only %d messages (token pressure needs %d)",
			tokens, limit, c.triggerFormula(), len(msgs), c.MinMessages)
	}
	return false, fmt.Sprintf("below trigger: %d tokens <= %d (%s)", tokens, limit, c.triggerFormula())
}

// triggerFormula spells out where TriggerTokens comes from.
func (c Config) triggerFormula() string {
	if frac := int(c.TriggerFraction * float64(c.ContextWindow)); frac > c.HardCapTokens {
		return fmt.Sprintf("hard cap %d", c.HardCapTokens)
	}
	return fmt.Sprintf("%g x %d", c.TriggerFraction, c.ContextWindow)
}

// stepsSinceBriefing counts the assistant messages after the last spliced
// briefing message, or in the whole history when there is none.
func stepsSinceBriefing(msgs []briefd.Message) int {
	steps := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].IsBriefing() {
			break
		}
		if msgs[i].Role == briefd.RoleAssistant {
			steps++
		}
	}
	return steps
}

// historyChars is the history's size in bytes of text.
func historyChars(msgs []briefd.Message) int {
	n := 0
	for i := range msgs {
		n += msgs[i].Size()
	}
	return n
}
