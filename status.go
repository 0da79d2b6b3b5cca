package briefd

import (
	"fmt"
	"time"
)

// Outcome is what the workers did with a snapshot.
type Outcome string

// The outcomes of a [Status].
const (
	// OutcomeCompacted: a briefing was stored (BoundaryID names it).
	OutcomeCompacted Outcome = "compacted"
	// OutcomeSkipped: the snapshot was not compacted, and that is not an
	// error: below the trigger (Tokens and TriggerTokens say how far),
	// nothing to compact, or compaction disabled by its control.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeRejected: the snapshot was refused (an invalid history or
	// control, a malformed manifest); Detail says why. Later snapshots
	// repeating the mistake are refused too.
	OutcomeRejected Outcome = "rejected"
	// OutcomeFailed: every attempt failed on a transient error (a store
	// down); the conversation's next snapshot is tried afresh.
	OutcomeFailed Outcome = "failed"
)

// Status is the workers' verdict on the newest snapshot of a conversation
// they handled: compacted, or why not. Workers store it beside the
// briefings (schema docs/schema/status.v1.json); an agent reads it (the Go
// client's Status and AwaitStatus) to learn, for example, that its history
// of 8,213 tokens is below the trigger of 83,200 and will not be compacted
// yet. A superseded snapshot gets none: the newer one's verdict stands for
// it.
type Status struct {
	Tenant         string `json:"tenant,omitempty"`
	ConversationID string `json:"conversation_id"`
	// Seq is the agent's number of the snapshot (the manifest's seq);
	// SnapshotSeq its sequence in the snapshot stream.
	Seq         uint64  `json:"seq"`
	SnapshotSeq uint64  `json:"snapshot_seq,omitempty"`
	Outcome     Outcome `json:"outcome"`
	// Reason is a short code, the audit event's: below_trigger,
	// nothing_to_compact, disabled; invalid_history, invalid_control,
	// malformed; max_deliveries. Empty when compacted.
	Reason string `json:"reason,omitempty"`
	// Detail is the human-readable explanation.
	Detail string `json:"detail,omitempty"`
	// Messages and Tokens measure the snapshot's history; TriggerTokens
	// is the token count above which it compacts (when known).
	Messages      int `json:"messages,omitempty"`
	Tokens        int `json:"tokens,omitempty"`
	TriggerTokens int `json:"trigger_tokens,omitempty"`
	// BoundaryID and TokensAfter describe the briefing of a compacted
	// snapshot.
	BoundaryID  string `json:"boundary_id,omitempty"`
	TokensAfter int    `json:"tokens_after,omitempty"`
	// At is when the verdict was reached.
	At time.Time `json:"at"`
}

// String says the verdict in one line, for logs and command lines.
func (s *Status) String() string {
	switch s.Outcome {
	case OutcomeCompacted:
		return fmt.Sprintf("compacted at %s: %d -> %d tokens", s.BoundaryID, s.Tokens, s.TokensAfter)
	case OutcomeSkipped:
		if s.Reason == "below_trigger" && s.TriggerTokens > 0 {
			return fmt.Sprintf("not compacted yet: %d tokens now, trigger at %d (%s)", s.Tokens, s.TriggerTokens, s.Detail)
		}
		return fmt.Sprintf("not compacted (%s): %s", s.Reason, s.Detail)
	default:
		return fmt.Sprintf("%s (%s): %s", s.Outcome, s.Reason, s.Detail)
	}
}
