package compact

// OWNER: deterministic-briefing helper. This file is a stub with the agreed
// signature; replace its body.

import (
	"encoding/json"

	"github.com/briefd/briefd"
)

// BriefInput is the input of the deterministic evidence briefing.
type BriefInput struct {
	// Span is the messages to compact, in order, pinned messages excluded.
	// It may begin with an earlier briefing message (see briefd.Message.IsBriefing).
	Span []briefd.Message
	// Previous is the earlier briefing the span's first message carries,
	// when the store still has it (its Structured ledger is merged).
	Previous *briefd.Briefing
	// BudgetTokens is the most tokens the rendered text may use.
	BudgetTokens int
	// CountTokens counts the tokens of a text.
	CountTokens func(string) int
}

// Draft is a deterministic briefing: the rendered text and its structure.
type Draft struct {
	Text       string
	Structured json.RawMessage
	Depth      int
}

// Brief builds the deterministic evidence briefing of a span.
func Brief(in BriefInput) (*Draft, error) {
	panic("not implemented")
}
