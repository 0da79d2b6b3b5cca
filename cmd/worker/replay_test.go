package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/worker"
)

// The stream is the audit trail: a stored compaction is re-run from its
// snapshot and compared with the stored briefing.
func TestReplay(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	ctx := t.Context()
	store, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, store, worker.Config{Engine: compact.Config{ContextWindow: 12000}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Stop(stop)
	})
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.NewPublisher(js, queue.Config{}).Publish(ctx, "acme", "r1", h.Messages); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := store.Latest(ctx, "acme", "r1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no briefing stored")
		}
	}

	var out, errb bytes.Buffer
	code := Main(ctx, []string{"replay", "--nats-url", srv.URL(), "--tenant", "acme", "--conversation", "r1",
		"--context-window", "12000"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("replay exit %d: %s", code, errb.String())
	}
	var rep struct {
		SnapshotSeq  uint64 `json:"snapshot_seq"`
		SameInput    *bool  `json:"same_input"`
		SameBoundary *bool  `json:"same_boundary"`
		Stored       *struct {
			Tier string `json:"tier"`
		} `json:"stored"`
		Identifiers *struct {
			OnlyStored []string `json:"only_in_stored"`
		} `json:"identifiers"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.SnapshotSeq == 0 || rep.Stored == nil || rep.SameInput == nil || !*rep.SameInput || !*rep.SameBoundary {
		t.Fatalf("report %s", out.String())
	}
	// Same engine, same input: the same identifiers.
	if len(rep.Identifiers.OnlyStored) != 0 {
		t.Fatalf("replay lost identifiers %v", rep.Identifiers.OnlyStored)
	}
	// Another window moves the boundary, and the report says so.
	out.Reset()
	if code := Main(ctx, []string{"replay", "--nats-url", srv.URL(), "--tenant", "acme", "--conversation", "r1",
		"--context-window", "9000"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("replay exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"same_boundary": false`) && !strings.Contains(out.String(), `"same_input": false`) {
		t.Fatalf("a different window should give a different compaction: %s", out.String())
	}
}
