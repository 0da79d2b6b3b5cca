package natstest_test

import (
	"testing"
	"time"

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
	// The client reconnects and JetStream recovers the stream in the
	// background: poll with a deadline rather than assume it is instant.
	var st jetstream.Stream
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; {
		if st, err = js.Stream(ctx, "T"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not back after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("messages after restart = %d, want 1", n)
	}
}
