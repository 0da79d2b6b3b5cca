package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

	// At scale: every compaction of the audit stream, JSON on stdout and
	// the HTML report in a file.
	html := filepath.Join(t.TempDir(), "report.html")
	out.Reset()
	errb.Reset()
	if code := Main(ctx, []string{"replay", "--nats-url", srv.URL(), "--all", "--html", html, "--since", "1h", "--context-window", "12000"},
		strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("replay --all exit %d: %s", code, errb.String())
	}
	var scan struct {
		Summary struct {
			Conversations, Compactions, Rerun int
			SameBoundary                      int `json:"same_boundary"`
		}
		Conversations []struct {
			Compactions []struct {
				Stored struct {
					Text string `json:"text"`
				} `json:"stored"`
			} `json:"compactions"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(out.Bytes(), &scan); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if s := scan.Summary; s.Conversations != 1 || s.Compactions == 0 || s.Rerun != s.Compactions || s.SameBoundary != s.Compactions {
		t.Fatalf("replay --all: %+v", s)
	}
	if scan.Conversations[0].Compactions[0].Stored.Text != "" {
		t.Fatal("briefing texts in the JSON without --text")
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !strings.Contains(errb.String(), "report in "+html) {
		t.Fatalf("html report: %v, %d bytes; stderr %s", err, len(page), errb.String())
	}
	if code := Main(ctx, []string{"replay", "--nats-url", srv.URL()}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Fatalf("replay without a scope: exit %d", code)
	}
}

// replay is a diagnostic: it leaves the bucket's settings as the service
// set them (it used to reset its TTL to its own flag's default).
func TestReplayDoesNotWrite(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	ctx := t.Context()
	store, err := cache.NewKVStore(ctx, js, cache.KVConfig{TTL: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := queue.EnsureStreams(ctx, js, queue.Config{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(example)
	h, _ := briefd.ParseHistory(data)
	if _, err := queue.NewPublisher(js, queue.Config{}).Publish(ctx, "acme", "r1", h.Messages); err != nil {
		t.Fatal(err)
	}
	_ = store
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"replay", "--nats-url", srv.URL(), "--tenant", "acme", "--conversation", "r1",
		"--context-window", "12000"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("replay exit %d: %s", code, errb.String())
	}
	kv, err := js.KeyValue(ctx, cache.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != 48*time.Hour {
		t.Fatalf("bucket TTL %v after replay, want the service's 48h", st.TTL())
	}
}

// After the store loses everything, rebuild restores each conversation's
// latest briefing from the stream.
func TestRebuild(t *testing.T) {
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
	data, _ := os.ReadFile(example)
	h, _ := briefd.ParseHistory(data)
	pub := queue.NewPublisher(js, queue.Config{})
	want := map[string]string{}
	for _, conv := range []string{"a", "b", "c"} {
		if _, err := pub.Publish(ctx, "acme", conv, h.Messages); err != nil {
			t.Fatal(err)
		}
	}
	for _, conv := range []string{"a", "b", "c"} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if b, err := store.Latest(ctx, "acme", conv); err == nil {
				want[conv] = b.BoundaryID
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no briefing stored")
			}
		}
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.Stop(stop)
	// The store is lost: the bucket is purged of every key.
	kv, _ := js.KeyValue(ctx, cache.DefaultBucket)
	keys, _ := kv.Keys(ctx)
	for _, k := range keys {
		kv.Purge(ctx, k)
	}
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"rebuild", "--nats-url", srv.URL(), "--context-window", "12000"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("rebuild exit %d: %s", code, errb.String())
	}
	var rep worker.RebuildReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Conversations != 3 || rep.Rebuilt != 3 {
		t.Fatalf("report %s (%v)", out.String(), err)
	}
	for conv, boundary := range want {
		b, err := store.Latest(ctx, "acme", conv)
		if err != nil || b.BoundaryID != boundary {
			t.Fatalf("%s: latest %v, %v; want boundary %s", conv, b, err, boundary)
		}
	}
	// Run again: everything is current.
	out.Reset()
	if code := Main(ctx, []string{"rebuild", "--nats-url", srv.URL(), "--context-window", "12000"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("second rebuild exit %d: %s", code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Current != 3 {
		t.Fatalf("second report %s", out.String())
	}
}
