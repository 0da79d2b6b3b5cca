package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/briefd/briefd/internal/worker"
)

// With Redis down at start the worker is not ready and takes nothing (it
// would only nak); once Redis answers it pulls and stores.
func TestNotReadyDoesNotPull(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	rs := redistest.Start(t)
	rs.Kill()
	b := &bundle{nats: srv, js: js, qcfg: queue.Config{Concurrency: 4, AckWait: 5 * time.Second,
		Backoff: []time.Duration{50 * time.Millisecond}}, store: cache.NewRedisStore(rs.Client(t), cache.RedisConfig{})}
	if err := queue.EnsureStreams(t.Context(), js, b.qcfg); err != nil {
		t.Fatal(err)
	}
	b.pub = queue.NewPublisher(js, b.qcfg)
	w := b.startWorker(t)
	h := loadExample(t, "tau-bench-2.json")
	if _, err := b.pub.Publish(t.Context(), "acme", "c1", h.Messages); err != nil {
		t.Fatal(err)
	}
	ready := httptest.NewServer(worker.Handler(w, nil, nil))
	defer ready.Close()
	time.Sleep(1500 * time.Millisecond)
	resp, err := http.Get(ready.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d with Redis down, want 503", resp.StatusCode)
	}
	c, err := js.Consumer(t.Context(), b.qcfg.WithDefaults().Streams().Snapshots, b.qcfg.WithDefaults().Consumer)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != 0 || info.NumPending != 1 {
		t.Fatalf("not ready, yet %d deliveries (%d pending): the worker pulled", info.Delivered.Consumer, info.NumPending)
	}
	rs.Start(t)
	waitFor(t, 30*time.Second, "the briefing once Redis is up", func() bool {
		_, err := b.store.Latest(t.Context(), "acme", "c1")
		return err == nil
	})
	waitFor(t, 10*time.Second, "ready", w.Ready)
}

// A snapshot below the trigger is recorded as COMPACTION_SKIPPED with a
// short reason and its detail; events name the snapshot's stream sequence.
func TestAuditSkipsAndSequences(t *testing.T) {
	b := setup(t, false)
	b.startWorker(t)
	h := loadExample(t, "tau-bench-2.json")
	short, err := b.pub.Publish(t.Context(), "acme", "short", h.Messages[:4])
	if err != nil {
		t.Fatal(err)
	}
	long, err := b.pub.Publish(t.Context(), "acme", "long", h.Messages)
	if err != nil {
		t.Fatal(err)
	}
	var evs []audit.Event
	waitFor(t, 30*time.Second, "a skip and a compaction on the audit stream", func() bool {
		evs, err = audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{})
		return err == nil && len(evs) >= 2
	})
	for _, ev := range evs {
		switch ev.ConversationID {
		case "short":
			if ev.Type != audit.TypeSkipped || ev.Reason != audit.SkipBelowTrigger || ev.Error == "" ||
				ev.SnapshotSeq != short.StreamSeq || ev.Seq != short.Seq {
				t.Errorf("skip event %+v, want below_trigger of stream seq %d", ev, short.StreamSeq)
			}
		case "long":
			if ev.Type != audit.TypeCompacted || ev.SnapshotSeq != long.StreamSeq || ev.Seq != long.Seq {
				t.Errorf("compacted event %+v, want stream seq %d", ev, long.StreamSeq)
			}
		}
	}
}

// A forged snapshot that reaches far (a high Position) does not pin the
// conversation: the victim's next snapshot's briefing is the latest.
func TestForgedPositionDoesNotPin(t *testing.T) {
	b := setup(t, true)
	b.startWorker(t)
	victim := loadExample(t, "tau-bench-2.json").Messages
	forged := loadExample(t, "openhands-2.json").Messages
	publishAndWait := func(msgs []briefd.Message) *briefd.Briefing {
		t.Helper()
		r, err := b.pub.Publish(t.Context(), "acme", "victim", msgs)
		if err != nil {
			t.Fatal(err)
		}
		var got *briefd.Briefing
		waitFor(t, 30*time.Second, fmt.Sprintf("the briefing of stream seq %d", r.StreamSeq), func() bool {
			evs, err := audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: "victim"})
			if err != nil {
				return false
			}
			for _, ev := range evs {
				if ev.SnapshotSeq == r.StreamSeq {
					got, err = b.store.Latest(t.Context(), "acme", "victim")
					return err == nil
				}
			}
			return false
		})
		return got
	}
	first := publishAndWait(victim[:len(victim)-2])
	pinned := publishAndWait(forged)
	if pinned.Position <= first.Position {
		t.Fatalf("the forged history should reach further: %d <= %d", pinned.Position, first.Position)
	}
	next := publishAndWait(victim)
	if next.Position >= pinned.Position || next.SnapshotSeq <= pinned.SnapshotSeq {
		t.Fatalf("latest after the victim's next turn: %+v", next)
	}
	if _, err := briefd.Splice(victim, next); err != nil {
		t.Fatalf("the latest briefing is not the victim's: %v", err)
	}
}

// Two deployments on one NATS account, told apart by --prefix, share no
// stream: each has its own audit stream.
func TestPrefixIsolatesAudit(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	kv, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"one", "two"} {
		w, err := worker.New(js, kv, worker.Config{Queue: queue.Config{Prefix: prefix}, Engine: engineConfig, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			w.Stop(ctx)
		})
	}
	for _, name := range []string{"ONE_AUDIT", "TWO_AUDIT"} {
		if _, err := js.Stream(t.Context(), name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
	if _, err := js.Stream(t.Context(), "BRIEFD_AUDIT"); err == nil {
		t.Error("a prefixed deployment created BRIEFD_AUDIT")
	}
}
