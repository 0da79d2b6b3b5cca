package queue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
)

// A snapshot's control travels in its manifest and comes back resolved; it
// is not inherited by the next snapshot; an invalid one is refused before
// anything is published.
func TestControlRoundTrip(t *testing.T) {
	b := setup(t)
	msgs := genHistory(4, 40)
	ctl := briefd.Control{Mode: briefd.ModeNow, TriggerFraction: 0.5, KeepTokens: 3000, Pin: []string{"a1"}, Focus: "the ls output"}
	r1, err := b.pub.Publish(t.Context(), "acme", "c1", msgs[:4], queue.WithControl(ctl))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c1", r1.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !s1.Control.Equal(ctl) {
		t.Fatalf("control %+v, want %+v", s1.Control, ctl)
	}
	s2, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c1", r2.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Control.IsZero() {
		t.Fatalf("the next snapshot inherited the control: %+v", s2.Control)
	}
	// The same history with a new control is a new snapshot, not a
	// duplicate: "compact now" on an unchanged history must reach a worker.
	r3, err := b.pub.Publish(t.Context(), "acme", "c1", msgs, queue.WithControl(briefd.Control{Mode: briefd.ModeNow}))
	if err != nil || r3.Duplicate || r3.Seq != r2.Seq+1 {
		t.Fatalf("publish with a new control on the same history: %+v, %v", r3, err)
	}
	r4, err := b.pub.Publish(t.Context(), "acme", "c1", msgs, queue.WithControl(briefd.Control{Mode: briefd.ModeNow}))
	if err != nil || !r4.Duplicate {
		t.Fatalf("the same snapshot again should be a duplicate: %+v, %v", r4, err)
	}

	_, err = b.pub.Publish(t.Context(), "acme", "c2", msgs, queue.WithControl(briefd.Control{Mode: "later"}))
	if !errors.Is(err, briefd.ErrInvalidControl) {
		t.Fatalf("invalid control: %v", err)
	}
	if _, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c2", 0); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("an invalid control published something: %v", err)
	}
}

// A manifest whose control breaks the rules is malformed; DecodeManifest
// says which rule.
func TestDecodeManifestControl(t *testing.T) {
	base := `{"v":1,"tenant":"acme","conversation_id":"c","seq":1,"base":0,"keep":0,"append":[],"control":`
	for ctl, want := range map[string]string{
		`{"mode":"sometimes"}`:    "mode",
		`{"trigger_fraction":2}`:  "trigger_fraction",
		`{"keep_tokens":-5}`:      "keep_tokens",
		`{"pin":[""]}`:            "pin[0]",
		`{"mode":"now","pin":[]}`: "",
	} {
		_, err := queue.DecodeManifest([]byte(base + ctl + `}`))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", ctl, err)
		case want != "" && (!errors.Is(err, queue.ErrMalformed) || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want a malformed error naming %s", ctl, err, want)
		}
	}
}

// A snapshot that asks for compaction now is handled even when a newer
// snapshot of the conversation is already in the stream; the others are
// superseded as usual.
func TestNowIsNeverSuperseded(t *testing.T) {
	b := setup(t)
	msgs := genHistory(10, 50)
	ends := turnEnds(msgs)
	for i, end := range ends {
		var opts []queue.PublishOption
		if i == 2 {
			opts = append(opts, queue.WithControl(briefd.Control{Mode: briefd.ModeNow, Focus: "call_1"}))
		}
		if _, err := b.pub.Publish(t.Context(), "acme", "c1", msgs[:end], opts...); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder()
	var mu sync.Mutex
	var handled []*queue.Snapshot
	startConsumer(t, b, func(_ context.Context, s *queue.Snapshot) error {
		mu.Lock()
		handled = append(handled, s)
		mu.Unlock()
		return nil
	}, rec)
	rec.waitFor(t, "all settled", func() bool {
		return rec.count(queue.OutcomeAcked)+rec.count(queue.OutcomeSuperseded) == len(ends)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 2 {
		t.Fatalf("handled %d snapshots, want the forced one and the newest", len(handled))
	}
	var forced *queue.Snapshot
	for _, s := range handled {
		if s.Control.Mode == briefd.ModeNow {
			forced = s
		}
	}
	if forced == nil || len(forced.Messages) != ends[2] || forced.Control.Focus != "call_1" {
		t.Fatalf("the forced snapshot was not handled: %+v", handled)
	}
}

// Walk resolves every stored snapshot of a conversation in order.
func TestWalk(t *testing.T) {
	b := setup(t)
	msgs := genHistory(6, 30)
	ends := turnEnds(msgs)
	for _, end := range ends {
		if _, err := b.pub.Publish(t.Context(), "acme", "w1", msgs[:end]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.pub.Publish(t.Context(), "acme", "other", msgs); err != nil {
		t.Fatal(err)
	}
	var got []int
	var last uint64
	err := queue.NewResolver(b.js, b.cfg).Walk(t.Context(), "acme", "w1", func(s *queue.Snapshot, err error) error {
		if err != nil {
			return err
		}
		if s.StreamSeq <= last || s.Delivery.Timestamp.IsZero() {
			t.Errorf("snapshot %d after %d, stored at %v", s.StreamSeq, last, s.Delivery.Timestamp)
		}
		last = s.StreamSeq
		got = append(got, len(s.Messages))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ends) {
		t.Fatalf("walked %v, want %v", got, ends)
	}
	if err := queue.NewResolver(b.js, b.cfg).Walk(t.Context(), "acme", "none", func(*queue.Snapshot, error) error {
		t.Fatal("a snapshot of a conversation that has none")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
