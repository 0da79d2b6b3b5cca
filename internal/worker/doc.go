// Package worker is the briefd service: it consumes snapshots from the
// JetStream queue, compacts them with the engine, stores the briefings and
// records every outcome on the audit stream.
//
// One snapshot's path, in handle (worker.go):
//
//	queue.Consumer ─▶ handle: engine for the snapshot's model/window
//	                         ─▶ earlier briefing from the store (chained compaction)
//	                         ─▶ compact.Engine.Compact
//	                         ─▶ Store.Put (latest moves only forward)
//	                         ─▶ audit HISTORY_COMPACTED
//	                  ◀─ nil: ack │ permanent: term + dead letter │ other: nak with backoff
//
// Acknowledgement, redelivery, coalescing of stale snapshots and dead
// letters are the queue's; the worker only classifies errors.
package worker
