package natstest_test

import (
	"testing"

	"github.com/briefd/briefd/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

func TestRestartKeepsStreams(t *testing.T) {
	s := natstest.Start(t)
	_, js := s.Connect(t)
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	url := s.URL()
	s.Restart(t)
	if s.URL() != url {
		t.Fatalf("URL changed across restart: %s -> %s", url, s.URL())
	}
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("messages after restart = %d, want 1", n)
	}
}
