package natstest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/natstest"
)

func TestProcess29(t *testing.T) {
	p := natstest.StartProcess(t, natstest.Binary(t), natstest.ProcessOptions{})
	nc, js := p.Connect(t)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(t.Context(), "s.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s", nc.ConnectedServerVersion())
}

// A 3-node cluster keeps an R3 stream writable while one node is killed
// under load, and the node rejoins.
func TestClusterKillNodeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.StartCluster(t, natstest.Binary(t), 3, natstest.ProcessOptions{})
	_, js := c.Connect(t)
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := js.Publish(pctx, fmt.Sprintf("s.%d", i), []byte("payload"))
			cancel()
			if err == nil {
				acked.Add(1)
			}
		}
	}()
	waitAcked := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for acked.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d publishes acked", acked.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitAcked(200)
	c.Nodes[0].Kill()
	before := acked.Load()
	waitAcked(before + 200) // the two others keep taking writes
	c.Nodes[0].Start(t)
	waitAcked(acked.Load() + 200)
	close(stop)
	<-done
	s, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if int64(info.State.Msgs) < acked.Load() {
		t.Fatalf("stream holds %d messages, %d were acked: acknowledged writes lost", info.State.Msgs, acked.Load())
	}
	if !strings.Contains(c.Nodes[0].Version(), "nats-server") {
		t.Fatalf("version %q", c.Nodes[0].Version())
	}
}
