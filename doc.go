// Package briefd holds the agent-side types of briefd, the asynchronous
// compaction service for LLM agents: the chat [Message] in OpenAI form, the
// [Briefing] a worker computes, and [Splice], which an agent uses on its next
// turn to replace the messages before a briefing's boundary with one
// <compacted-history> block.
//
// The package imports only the standard library so that any agent can import
// it. The client package publishes snapshots and fetches briefings; the
// worker (cmd/worker) computes them.
//
// # Data path
//
//	agent ── Publish ──▶ JetStream ──▶ worker: validate → count → trigger → boundary → brief
//	  ▲                                                                     │
//	  └── Splice ◀── Latest ◀── Redis / KV (briefing by conversation and boundary)
package briefd
