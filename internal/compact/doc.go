// Package compact is briefd's compaction engine: given one agent's history
// it decides whether and where to cut, builds the briefing that replaces the
// old part, and splices it in.
//
// # Pipeline
//
// [Engine.Compact] runs one stage per file, top to bottom:
//
//	validate  briefd.Validate with Config.Limits             (engine.go)
//	count     exact tiktoken counts, cached per message      (tokens.go)
//	trigger   token pressure, steps, size, or Force          (trigger.go)
//	boundary  keep a recent tail; never split a tool pair    (boundary.go)
//	brief     the deterministic evidence briefing            (brief.go)
//	summarize an optional LLM Summarizer; the draft is the fallback
//	splice    briefd.Splice, checked, and only if it shrinks the history
//
// Every outcome that is not a compaction is a [Result] whose Reason says
// why ("below trigger: 41234 tokens <= 83200 (0.65 x 128000)"); errors are
// kept for invalid input and cancelled contexts.
//
// # Defaults
//
// The trigger is min(0.65 x context window, 200,000) tokens with at least
// 20 messages; the kept tail aims at min(0.2 x window, 40,000) tokens and at
// least max(5, 10) messages; the briefing's budget is 10% of the compacted
// span, clamped to [600, 8192] tokens. See [Config].
//
// # Token counts
//
// [TokenCounter] counts with the model's encoding (o200k_base or
// cl100k_base), offline, exactly as tiktoken does (package tokenize).
// Tokenizing costs about 0.1 microsecond per token, so counts are cached by
// content hash, per message and per chunk of long text: re-compacting a
// history that grew by one turn tokenizes about one turn.
package compact
