package client_test

import (
	"errors"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/internal/queue"
)

// The client's, the conversation's and the publish's controls are laid
// over one another in each snapshot's manifest; a "compact now" is one
// snapshot's only.
func TestPublishControl(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithTenant("t1"), client.WithControl(briefd.Control{TriggerFraction: 0.5, Pin: []string{"task"}}))
	if err := c.SetControl("conv", briefd.Control{KeepTokens: 2000, Pin: []string{"a0"}}); err != nil {
		t.Fatal(err)
	}
	h := conversation(4)
	if err := c.Publish(t.Context(), "conv", h[:4]); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "conv", h[:6], client.CompactNow("the ls output")); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "conv", h); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "other", h); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	base := briefd.Control{TriggerFraction: 0.5, KeepTokens: 2000, Pin: []string{"task", "a0"}}
	now := base
	now.Mode, now.Focus = briefd.ModeNow, "the ls output"
	want := map[int]briefd.Control{4: base, 6: now, len(h): base}
	snaps := loadAll(t, b, "t1", "conv")
	if len(snaps) != 3 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	for _, s := range snaps {
		if w := want[len(s.Messages)]; !s.Control.Equal(w) {
			t.Errorf("snapshot of %d messages: control %+v, want %+v", len(s.Messages), s.Control, w)
		}
	}
	if s := loadAll(t, b, "t1", "other"); len(s) != 1 || !s[0].Control.Equal(briefd.Control{TriggerFraction: 0.5, Pin: []string{"task"}}) {
		t.Errorf("another conversation got %+v", s[0].Control)
	}

	if err := c.SetControl("conv", briefd.Control{Mode: "sometimes"}); !errors.Is(err, briefd.ErrInvalidControl) {
		t.Errorf("SetControl with an invalid mode: %v", err)
	}
	if err := c.Publish(t.Context(), "conv", h, client.SnapshotControl(briefd.Control{TriggerFraction: 3})); !errors.Is(err, briefd.ErrInvalidControl) {
		t.Errorf("Publish with an invalid control: %v", err)
	}
	if _, err := client.New(b.nc, client.WithControl(briefd.Control{KeepTokens: -1})); !errors.Is(err, briefd.ErrInvalidControl) {
		t.Errorf("New with an invalid control: %v", err)
	}
}

// loadAll returns every snapshot of a conversation, oldest first.
func loadAll(t *testing.T, b *bundle, tenant, conv string) []*queue.Snapshot {
	t.Helper()
	last, err := queue.LoadSnapshot(t.Context(), b.js, queue.Config{}, tenant, conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []*queue.Snapshot
	for seq := last.Seq; ; seq-- {
		s, err := queue.LoadSnapshot(t.Context(), b.js, queue.Config{}, tenant, conv, seq)
		if errors.Is(err, queue.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append([]*queue.Snapshot{s}, out...)
	}
	return out
}
