package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/worker"
)

// publish says what the workers made of the history: not compacted yet
// (tokens now, trigger at; exit 3), or the briefing; it refuses an invalid
// history before sending anything, and numbers a history without ids.
func TestPublishVerdict(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	store, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, store, worker.Config{Engine: compact.Config{}})
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
	url := srv.URL()
	file := filepath.Join("..", "..", "examples", "histories", "tau-bench-2.json")

	code, out, errOut := run(t, "publish", "--nats-url", url, "--turn-by-turn=false", file)
	if code != 3 || !strings.Contains(out, "not compacted yet: ") || !strings.Contains(out, "trigger at 83200") ||
		!strings.Contains(out, "--compact-now") || !strings.Contains(errOut, "not compacted") {
		t.Fatalf("below the trigger: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "status", "--nats-url", url, "--conversation", "tau-bench-2")
	if code != 0 || !strings.Contains(out, "not compacted yet") {
		t.Fatalf("status: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "publish", "--nats-url", url, "--compact-now", "--focus", "the refund", "--pin", "m0004", file)
	if code != 0 || !strings.Contains(out, "briefing tau-bench-2@") {
		t.Fatalf("--compact-now: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	b, err := store.Latest(t.Context(), "default", "tau-bench-2")
	if err != nil || len(b.PinnedIDs) != 1 || b.PinnedIDs[0] != "m0004" {
		t.Fatalf("briefing after --compact-now --pin m0004: %+v, %v", b, err)
	}
	code, _, errOut = run(t, "publish", "--nats-url", url, file, "--never", "--compact-now") // flags after the file too
	if code != 2 || !strings.Contains(errOut, "contradict") {
		t.Fatalf("--never --compact-now: exit %d, %s", code, errOut)
	}

	// Plain OpenAI messages, no ids, no conversation id: numbered, and
	// named after the file.
	h, err := briefd.ParseHistory(mustRead(t, file))
	if err != nil {
		t.Fatal(err)
	}
	var plain []map[string]any
	for _, m := range h.Messages {
		data, _ := json.Marshal(m)
		var v map[string]any
		json.Unmarshal(data, &v)
		delete(v, "id")
		plain = append(plain, v)
	}
	dir := t.TempDir()
	plainFile := filepath.Join(dir, "openai-run.json")
	data, _ := json.Marshal(plain)
	if err := os.WriteFile(plainFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "publish", "--nats-url", url, "--context-window", "8000", plainFile)
	if code != 0 || !strings.Contains(errOut, "gave "+itoa(len(plain))+" messages without an id their position id") ||
		!strings.Contains(out, "briefing openai-run@m") {
		t.Fatalf("a history without ids: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// An invalid history is refused before anything is sent.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[{"id":"m1","role":"user","content":"hi"},{"id":"m2","role":"tool","tool_call_id":"x","content":"?"}]`), 0o644)
	code, out, errOut = run(t, "publish", "--nats-url", url, "--wait", "0", bad)
	if code != 1 || !strings.Contains(errOut, "not published: invalid history") || strings.Contains(out, "published") {
		t.Fatalf("invalid history: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := store.Status(t.Context(), "default", "bad"); err == nil {
		t.Fatal("the invalid history reached a worker")
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func itoa(n int) string { return strconv.Itoa(n) }
