package natsembed_test

import (
	"testing"

	"github.com/briefd/briefd/internal/natsembed"
	"github.com/nats-io/nats.go"
)

func TestStart(t *testing.T) {
	s, err := natsembed.Start(t.Context(), natsembed.Options{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !s.JetStreamEnabled() {
		t.Fatal("JetStream is off")
	}
	if _, err := natsembed.Start(t.Context(), natsembed.Options{}); err == nil {
		t.Fatal("Start without StoreDir succeeded")
	}
}
