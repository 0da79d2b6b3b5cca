package queue_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/briefd/briefd/internal/queue"
)

// A manifest may name as its base only a snapshot of its own subject, also
// when the base's list is in the resolver's cache: otherwise one tenant
// could resolve another tenant's message list (ids and body hashes).
func TestBaseOfAnotherConversationIsRefusedFromCache(t *testing.T) {
	b := setup(t)
	victim := genHistory(3, 50)
	r, err := b.pub.Publish(t.Context(), "victim", "c1", victim)
	if err != nil {
		t.Fatal(err)
	}
	res := queue.NewResolver(b.js, b.cfg)
	// The victim's list is now cached by its stream sequence.
	if _, err := res.Load(t.Context(), "victim", "c1", 0); err != nil {
		t.Fatal(err)
	}
	evil := fmt.Sprintf(`{"v":1,"tenant":"evil","conversation_id":"c1","seq":%d,"base":%d,"base_stream_seq":%d,"keep":%d,"append":[]}`,
		r.Seq+1, r.Seq, r.StreamSeq, len(victim))
	if _, err := b.js.Publish(t.Context(), "briefd.snap.evil.c1", []byte(evil)); err != nil {
		t.Fatal(err)
	}
	_, err = res.Load(t.Context(), "evil", "c1", 0)
	if err == nil {
		t.Fatal("a base of another tenant's conversation was accepted")
	}
	if strings.Contains(err.Error(), victim[0].ID) || !strings.Contains(err.Error(), "belongs to") {
		t.Fatalf("want a refusal of the foreign base without its content, got: %v", err)
	}
}
