package audit_test

import (
	"testing"

	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/natstest"
)

// BenchmarkPublish measures a synchronous, acked publish of a
// HISTORY_COMPACTED event to a file-backed stream.
func BenchmarkPublish(b *testing.B) {
	_, js := natstest.Start(b).Connect(b)
	ctx := b.Context()
	if err := audit.EnsureStream(ctx, js, audit.Config{}); err != nil {
		b.Fatal(err)
	}
	pub := audit.NewPublisher(js, audit.Config{})
	ev := audit.Event{Type: audit.TypeCompacted, Tenant: "acme", ConversationID: "c-42", BoundaryID: "m118",
		Position: 117, TokensBefore: 148211, TokensAfter: 31077, TokensSaved: 117134, Tier: "deterministic",
		EngineVersion: "0.1.0", InputHash: "9f2c1e0b7d5a4c3b", DurationMS: 41.7, Attempt: 1}
	for b.Loop() {
		ev.SnapshotSeq++
		if err := pub.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}
