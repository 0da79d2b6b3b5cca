package queue

import (
	"fmt"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/natstest"
)

// A snapshot's owner records what became of its bodies before it settles
// it (issue 12): a conversation's first snapshot sends every body, and the
// agent's next publish must not pay for that bookkeeping. Once Wait
// returns, the conversation knows every body stored, and nothing is left
// for the next publish to take in but the settled snapshot itself; a
// snapshot published before a reset records nothing.
func TestOwnerRecordsBodies(t *testing.T) {
	pub := newTestPublisher(t)
	msgs := make([]briefd.Message, 0, 64)
	for i := range 40 {
		msgs = append(msgs, briefd.Message{ID: fmt.Sprintf("m%d", i), Role: briefd.RoleUser, Content: briefd.Text(fmt.Sprintf("message %d", i))})
	}
	state := func() *convState {
		st, ok := pub.convs.get("acme.c1")
		if !ok {
			t.Fatal("conversation not kept")
		}
		return st
	}
	pend, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pend.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := state()
	st.mu.Lock()
	if len(st.bodies) != len(msgs) {
		t.Errorf("%d bodies known, want %d", len(st.bodies), len(msgs))
	}
	for h, by := range st.bodies {
		if by != nil {
			t.Errorf("body %s still names its snapshot after it settled", h)
		}
	}
	st.mu.Unlock()

	// A snapshot published before a reset records nothing in the
	// conversation that starts over.
	msgs = append(msgs, briefd.Message{ID: "m40", Role: briefd.RoleUser, Content: briefd.Text("one more")})
	st.mu.Lock()
	before := st.gen
	st.mu.Unlock()
	pend, err = pub.PublishAsync(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	st.reset()
	st.bodies = map[string]*Pending{}
	if st.gen == before {
		t.Error("reset kept the generation")
	}
	st.mu.Unlock()
	if _, err := pend.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	if len(st.bodies) != 0 {
		t.Errorf("a snapshot published before the reset recorded %d bodies after it", len(st.bodies))
	}
	st.mu.Unlock()
	// The conversation starts over: every body is sent again.
	r, err := pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Full || r.Bodies != len(msgs) {
		t.Errorf("after a reset: full %v, %d bodies sent, want a full manifest and %d", r.Full, r.Bodies, len(msgs))
	}
}

// Forget drops a conversation's fingerprints: the next publish is a full
// snapshot that sends every body again, numbered above the forgotten ones.
func TestPublisherForget(t *testing.T) {
	pub := newTestPublisher(t)
	msgs := []briefd.Message{{ID: "m1", Role: briefd.RoleUser, Content: briefd.Text("hello")}, {ID: "m2", Role: briefd.RoleAssistant, Content: briefd.Text("hi")}}
	first, err := pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	pub.Forget("acme", "c1")
	if _, ok := pub.convs.get("acme.c1"); ok || pub.LastSeq("acme", "c1") != 0 {
		t.Fatal("the conversation is still kept after Forget")
	}
	again, err := pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Full || again.Duplicate || again.Bodies != len(msgs) || again.Seq <= first.Seq {
		t.Errorf("after Forget: %+v (before: %+v), want a full snapshot sending every body, numbered above", again, first)
	}
}

// newTestPublisher is a publisher on a fresh embedded server's streams.
func newTestPublisher(t *testing.T) *Publisher {
	t.Helper()
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	cfg := Config{}
	if err := EnsureStreams(t.Context(), js, cfg); err != nil {
		t.Fatal(err)
	}
	return NewPublisher(js, cfg)
}
