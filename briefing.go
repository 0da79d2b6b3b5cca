package briefd

import (
	"encoding/json"
	"time"
)

// Tier names the level of the compaction pipeline that produced a briefing.
// Deterministic is the built-in evidence briefing; the LLM tiers are named
// "llm:<prompt>" (for example "llm:normal", "llm:aggressive").
type Tier string

// TierDeterministic is the evidence briefing computed without any model.
const TierDeterministic Tier = "deterministic"

// Briefing is the result of one compaction: the text that replaces every
// non-pinned message before BoundaryID, and how it was made.
type Briefing struct {
	ConversationID string `json:"conversation_id"`
	// Tenant owns the conversation; empty in single-tenant use.
	Tenant string `json:"tenant,omitempty"`
	// BoundaryID is the id of the first message kept verbatim.
	BoundaryID string `json:"boundary_id"`
	// Position counts the conversation's original messages the briefing
	// covers, cumulative across chained compactions. Stores keep the
	// briefing with the highest Position as the latest.
	Position int64 `json:"position"`
	// Text is the briefing the agent reads, before escaping and wrapping.
	Text string `json:"text"`
	// Structured is the briefing's structured form (JSON object).
	Structured json.RawMessage `json:"structured,omitempty"`
	Tier       Tier            `json:"tier"`
	// Model and PromptVersion are set for LLM tiers.
	Model         string `json:"model,omitempty"`
	PromptVersion string `json:"prompt_version,omitempty"`
	EngineVersion string `json:"engine_version"`
	// InputHash is a hex SHA-256 of the compacted span, so that a replay
	// can check it saw the same input.
	InputHash string `json:"input_hash"`
	// Depth is 0 for a briefing of raw messages, and one more than the
	// deepest earlier briefing it folded in.
	Depth int `json:"depth"`
	// CompactedIDs are the ids of the messages the briefing replaces, in
	// order (an earlier briefing message included).
	CompactedIDs []string `json:"compacted_ids"`
	// PinnedIDs are messages before the boundary that stay verbatim
	// because the snapshot's [Control] pinned them by id (messages pinned
	// by the usual rule, see [Pinned], are not listed): [Splice] keeps
	// them before the briefing, with the pinned head.
	PinnedIDs []string `json:"pinned_ids,omitempty"`
	// TokensBefore and TokensAfter count the whole history before and
	// after the splice.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// SpanTokens and BriefingTokens count the compacted span and the
	// wrapped briefing message.
	SpanTokens     int       `json:"span_tokens"`
	BriefingTokens int       `json:"briefing_tokens"`
	CreatedAt      time.Time `json:"created_at"`
	// SnapshotSeq is the snapshot stream's sequence of the snapshot the
	// briefing was computed from, and SnapshotTime when the stream stored
	// it. Stores order briefings by SnapshotTime: the briefing of the
	// newest snapshot is the latest, whatever its Position, so a forged or
	// buggy Position cannot pin a conversation. Zero when the briefing did
	// not come from the stream (Position then orders).
	SnapshotSeq  uint64    `json:"snapshot_seq,omitempty"`
	SnapshotTime time.Time `json:"snapshot_time,omitzero"`
}
