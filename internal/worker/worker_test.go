package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/briefd/briefd/internal/worker"
)

// store is the briefing store as the tests use it.
type store interface {
	worker.Store
	Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error)
	Status(ctx context.Context, tenant, conv string) (*briefd.Status, error)
}

type bundle struct {
	nats  *natstest.Server
	js    jetstream.JetStream
	store store
	qcfg  queue.Config
	pub   *queue.Publisher
}

// engineConfig compacts the example histories (8-20k tokens): a small window.
var engineConfig = compact.Config{ContextWindow: 8000}

func setup(t testing.TB, redisStore bool) *bundle {
	t.Helper()
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	b := &bundle{nats: srv, js: js, qcfg: queue.Config{Concurrency: 4, AckWait: 5 * time.Second,
		Backoff: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}}}
	if redisStore {
		rs := redistest.Start(t)
		b.store = cache.NewRedisStore(rs.Client(t), cache.RedisConfig{Prefix: "t"})
	} else {
		kv, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{})
		if err != nil {
			t.Fatal(err)
		}
		b.store = kv
	}
	if err := queue.EnsureStreams(t.Context(), js, b.qcfg); err != nil {
		t.Fatal(err)
	}
	b.pub = queue.NewPublisher(js, b.qcfg)
	return b
}

func (b *bundle) startWorker(t *testing.T, mutate ...func(*worker.Config)) *worker.Worker {
	t.Helper()
	cfg := worker.Config{Queue: b.qcfg, Engine: engineConfig, Logger: testLogger(t)}
	for _, m := range mutate {
		m(&cfg)
	}
	w, err := worker.New(b.js, b.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Stop(ctx)
	})
	return w
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func loadExample(t testing.TB, name string) *briefd.History {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "histories", name))
	if err != nil {
		t.Fatal(err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// turns splits a history into the prefixes an agent would publish: one per
// assistant turn, with its tool results.
func turns(msgs []briefd.Message) [][]briefd.Message {
	var out [][]briefd.Message
	for i := 1; i <= len(msgs); i++ {
		if i == len(msgs) || msgs[i].Role != briefd.RoleTool {
			out = append(out, msgs[:i])
		}
	}
	return out
}

func TestEndToEnd(t *testing.T) {
	for _, redisStore := range []bool{false, true} {
		name := "kv"
		if redisStore {
			name = "redis"
		}
		t.Run(name, func(t *testing.T) {
			b := setup(t, redisStore)
			b.startWorker(t)
			h := loadExample(t, "tau-bench-2.json")
			for _, prefix := range turns(h.Messages) {
				if _, err := b.pub.Publish(t.Context(), "acme", "conv-1", prefix); err != nil {
					t.Fatal(err)
				}
			}
			var got *briefd.Briefing
			waitFor(t, 30*time.Second, "a briefing", func() bool {
				bf, err := b.store.Latest(t.Context(), "acme", "conv-1")
				got = bf
				return err == nil && bf.Position > 0
			})
			// The agent splices the latest briefing into its current history.
			spliced, err := briefd.Splice(h.Messages, got)
			if err != nil {
				t.Fatal(err)
			}
			if err := briefd.Validate(spliced, briefd.Limits{}); err != nil {
				t.Fatalf("spliced history invalid: %v", err)
			}
			if len(spliced) >= len(h.Messages) {
				t.Fatalf("splice did not shorten the history: %d -> %d", len(h.Messages), len(spliced))
			}
			if got.TokensAfter >= got.TokensBefore || got.Tenant != "acme" || got.Tier != briefd.TierDeterministic {
				t.Fatalf("briefing: %+v", got)
			}
			// The audit stream holds the compaction.
			waitFor(t, 10*time.Second, "a HISTORY_COMPACTED event", func() bool {
				evs, err := audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: "conv-1", Types: []audit.Type{audit.TypeCompacted}})
				return err == nil && len(evs) > 0 && evs[0].TokensSaved > 0 && evs[0].InputHash != ""
			})
		})
	}
}

// The agent keeps going after splicing: its next snapshots carry the
// briefing message, and the next compaction folds it (chained).
func TestChainedCompaction(t *testing.T) {
	b := setup(t, false)
	b.startWorker(t)
	h := loadExample(t, "openhands-2.json")
	ts := turns(h.Messages)
	half := len(ts) / 2
	for _, prefix := range ts[:half] {
		if _, err := b.pub.Publish(t.Context(), "acme", "chain", prefix); err != nil {
			t.Fatal(err)
		}
	}
	var first *briefd.Briefing
	waitFor(t, 30*time.Second, "the first briefing", func() bool {
		bf, err := b.store.Latest(t.Context(), "acme", "chain")
		first = bf
		return err == nil
	})
	// Like an agent: splice it in, and keep publishing the spliced history
	// as the conversation goes on.
	seen := len(ts[half-1])
	history, err := briefd.Splice(ts[half-1], first)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range ts[half:] {
		history = append(history, prefix[seen:]...)
		seen = len(prefix)
		if _, err := b.pub.Publish(t.Context(), "acme", "chain", history); err != nil {
			t.Fatal(err)
		}
	}
	var second *briefd.Briefing
	waitFor(t, 30*time.Second, "a chained briefing", func() bool {
		bf, err := b.store.Latest(t.Context(), "acme", "chain")
		second = bf
		return err == nil && len(bf.CompactedIDs) > 0 && bf.CompactedIDs[0] == "briefing:"+first.BoundaryID
	})
	if second.Depth < 1 || second.Position <= first.Position {
		t.Fatalf("chained briefing: depth %d, position %d (first %d)", second.Depth, second.Position, first.Position)
	}
	spliced, err := briefd.Splice(history, second)
	if err != nil {
		t.Fatal(err)
	}
	if err := briefd.Validate(spliced, briefd.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// Two workers on one conversation: the latest pointer only moves forward.
func TestTwoWorkersRace(t *testing.T) {
	b := setup(t, true)
	b.startWorker(t)
	b.startWorker(t)
	h := loadExample(t, "swe-agent-8.json")
	var (
		mu        sync.Mutex
		positions []int64
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() { // an observer sampling the latest pointer
		defer close(done)
		for ctx.Err() == nil {
			if bf, err := b.store.Latest(ctx, "acme", "race"); err == nil {
				mu.Lock()
				positions = append(positions, bf.Position)
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	ts := turns(h.Messages)
	for _, prefix := range ts {
		if _, err := b.pub.Publish(t.Context(), "acme", "race", prefix); err != nil {
			t.Fatal(err)
		}
	}
	// The final snapshot's compaction must win whatever the order of work.
	var want *briefd.Briefing
	eng, err := compact.New(engineConfig)
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Compact(t.Context(), compact.Request{ConversationID: "race", Messages: h.Messages})
	if err != nil || !res.Compacted {
		t.Fatalf("reference compaction: %v %+v", err, res)
	}
	want = res.Briefing
	waitFor(t, 30*time.Second, "the final briefing", func() bool {
		bf, err := b.store.Latest(t.Context(), "acme", "race")
		return err == nil && bf.Position == want.Position
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(positions); i++ {
		if positions[i] < positions[i-1] {
			t.Fatalf("latest moved back from position %d to %d", positions[i-1], positions[i])
		}
	}
}

// A worker stopped in the middle of a compaction hands the snapshot back;
// another worker completes it and nothing is lost.
func TestWorkerKilledMidCompaction(t *testing.T) {
	b := setup(t, false)
	started := make(chan struct{})
	var once sync.Once
	blocking := compact.SummarizerFunc(func(ctx context.Context, in compact.SummaryInput) (*compact.Summary, error) {
		once.Do(func() { close(started) })
		<-ctx.Done() // a model that never answers
		return nil, ctx.Err()
	})
	w1, err := worker.New(b.js, b.store, worker.Config{Queue: b.qcfg, Engine: engineConfig, Summarizer: blocking, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := loadExample(t, "tau-bench-2.json")
	if _, err := b.pub.Publish(t.Context(), "acme", "killed", h.Messages); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("worker 1 never started compacting")
	}
	// Stop with an expired deadline: work is cancelled and handed back.
	expired, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	w1.Stop(expired)
	if _, err := b.store.Latest(t.Context(), "acme", "killed"); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("worker 1 stored something: %v", err)
	}
	b.startWorker(t)
	waitFor(t, 30*time.Second, "worker 2 to store the briefing", func() bool {
		_, err := b.store.Latest(t.Context(), "acme", "killed")
		return err == nil
	})
}

// Malformed, oversized and badly paired snapshots are rejected with their
// reason on the audit stream, and the worker goes on.
func TestRejectsBadSnapshots(t *testing.T) {
	b := setup(t, false)
	b.startWorker(t, func(c *worker.Config) {
		c.Engine.Limits = briefd.Limits{MaxMessageBytes: 64 << 10}
	})
	good := loadExample(t, "tau-bench-2.json").Messages

	orphan := append([]briefd.Message{}, good[:30]...)
	orphan = append(orphan, briefd.Message{ID: "x1", Role: briefd.RoleTool, ToolCallID: "nope", Content: briefd.Text("{}")})
	big := append([]briefd.Message{}, good[:30]...)
	big = append(big, briefd.Message{ID: "x2", Role: briefd.RoleUser, Content: briefd.Text(string(make([]byte, 100<<10)))})
	for conv, msgs := range map[string][]briefd.Message{"orphan": orphan, "big": big} {
		if _, err := b.pub.Publish(t.Context(), "acme", conv, msgs); err != nil {
			t.Fatal(err)
		}
	}
	// A manifest no publisher would write: garbage on the snapshot subject.
	nc := b.js.Conn()
	if err := nc.Publish(queue.Subjects{Prefix: "briefd"}.Snapshot("acme", "garbage"), []byte(`{"v":1,"append":[{"id":"m1","h":"not-a-hash"}]`)); err != nil {
		t.Fatal(err)
	}
	// A subject no publisher would use: no conversation token.
	if err := nc.Publish("briefd.snap.lonely", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pub.Publish(t.Context(), "acme", "good", good); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the good conversation's briefing", func() bool {
		_, err := b.store.Latest(t.Context(), "acme", "good")
		return err == nil
	})
	reasons := map[string]string{}
	waitFor(t, 30*time.Second, "three rejections on the audit stream", func() bool {
		evs, err := audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme",
			Types: []audit.Type{audit.TypeRejected, audit.TypeDeadLettered}})
		if err != nil {
			return false
		}
		for _, ev := range evs {
			if ev.Reason == "" || ev.Error == "" || len(ev.Reason) > 32 {
				t.Errorf("event %+v: want a short reason and the detail in error", ev)
			}
			reasons[ev.ConversationID] = ev.Error
		}
		return reasons["orphan"] != "" && reasons["big"] != "" && reasons["garbage"] != ""
	})
	waitFor(t, 30*time.Second, "the bad subject's dead letter on the audit stream", func() bool {
		evs, err := audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Types: []audit.Type{audit.TypeDeadLettered}})
		if err != nil {
			return false
		}
		for _, ev := range evs {
			if ev.ConversationID == "_" && strings.Contains(ev.Error, "briefd.snap.lonely") {
				return true
			}
		}
		return false
	})
	for conv, want := range map[string]string{"orphan": `"nope"`, "big": "limit", "garbage": "malformed"} {
		if !contains(reasons[conv], want) {
			t.Errorf("%s: reason %q does not mention %s", conv, reasons[conv], want)
		}
	}
}

// NATS and Redis restart while agents publish: every conversation still
// ends with its briefing.
func TestServersRestartUnderLoad(t *testing.T) {
	srv := natstest.Start(t)
	rs := redistest.Start(t)
	_, js := srv.Connect(t)
	b := &bundle{nats: srv, js: js, qcfg: queue.Config{Concurrency: 4, AckWait: 3 * time.Second,
		Backoff: []time.Duration{50 * time.Millisecond, 200 * time.Millisecond}, MaxDeliver: 20},
		store: cache.NewRedisStore(rs.Client(t), cache.RedisConfig{})}
	if err := queue.EnsureStreams(t.Context(), js, b.qcfg); err != nil {
		t.Fatal(err)
	}
	b.pub = queue.NewPublisher(js, b.qcfg)
	b.startWorker(t)
	h := loadExample(t, "tau-bench-2.json")
	ts := turns(h.Messages)
	const convs = 4
	var published atomic.Int64
	publishAll := func(from, to int) {
		for _, prefix := range ts[from:to] {
			for c := range convs {
				conv := fmt.Sprintf("load-%d", c)
				// Publishing may fail while NATS is down; an agent retries on its next turn.
				if _, err := b.pub.Publish(t.Context(), "acme", conv, prefix); err == nil {
					published.Add(1)
				}
			}
		}
	}
	third := len(ts) / 3
	publishAll(0, third)
	srv.Restart(t)
	publishAll(third, 2*third)
	rs.Restart(t)
	publishAll(2*third, len(ts))
	// The last turn again, after both restarts, as the agent's next turn would.
	for c := range convs {
		conv := fmt.Sprintf("load-%d", c)
		waitFor(t, 30*time.Second, "publish after restarts", func() bool {
			_, err := b.pub.Publish(t.Context(), "acme", conv, h.Messages)
			return err == nil
		})
	}
	for c := range convs {
		conv := fmt.Sprintf("load-%d", c)
		waitFor(t, 60*time.Second, conv+"'s final briefing", func() bool {
			bf, err := b.store.Latest(t.Context(), "acme", conv)
			return err == nil && bf.Position > 0
		})
	}
	t.Logf("%d snapshots published", published.Load())
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (func() bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})())
}

var _ = json.Marshal
