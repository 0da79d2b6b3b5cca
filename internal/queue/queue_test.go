package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const sharedDir = "../../../shared/data/histories"

type bundle struct {
	srv *natstest.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg queue.Config
	pub *queue.Publisher
}

func setup(t testing.TB) *bundle {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.Connect(t)
	cfg := queue.Config{
		AckWait:    2 * time.Second,
		Backoff:    []time.Duration{20 * time.Millisecond},
		MaxDeliver: 3,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if err := queue.EnsureStreams(t.Context(), js, cfg); err != nil {
		t.Fatal(err)
	}
	// Idempotent: a second worker starting up does the same.
	if err := queue.EnsureStreams(t.Context(), js, cfg); err != nil {
		t.Fatalf("second EnsureStreams: %v", err)
	}
	return &bundle{srv: srv, nc: nc, js: js, cfg: cfg, pub: queue.NewPublisher(js, cfg)}
}

// genHistory makes a tool-using conversation of n turns.
func genHistory(n, textBytes int) []briefd.Message {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		b := make([]byte, textBytes)
		for i := range b {
			b[i] = "abcdefgh ijklmnop\n"[r.IntN(18)]
		}
		return string(b)
	}
	msgs := []briefd.Message{
		{ID: "m0", Role: briefd.RoleSystem, Content: briefd.Text("You are an agent.")},
		{ID: "m1", Role: briefd.RoleUser, Content: briefd.Text("Fix the bug. " + text())},
	}
	for i := range n {
		call := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			briefd.Message{ID: fmt.Sprintf("a%d", i), Role: briefd.RoleAssistant, Content: briefd.Text(text()),
				ToolCalls: []briefd.ToolCall{{ID: call, Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}}}},
			briefd.Message{ID: fmt.Sprintf("t%d", i), Role: briefd.RoleTool, ToolCallID: call, Content: briefd.Text(text())},
		)
	}
	return msgs
}

// turnEnds returns the lengths of the prefixes an agent publishes turn by
// turn: after every message not followed by a tool result.
func turnEnds(msgs []briefd.Message) []int {
	var ends []int
	for i := range msgs {
		if i+1 == len(msgs) || msgs[i+1].Role != briefd.RoleTool {
			ends = append(ends, i+1)
		}
	}
	return ends
}

func loadShared(t testing.TB, name string) []briefd.Message {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedDir, name))
	if err != nil {
		t.Skipf("shared histories not available: %v", err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		t.Fatal(err)
	}
	return h.Messages
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertMessages(t testing.TB, got, want []briefd.Message) {
	t.Helper()
	if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
		t.Fatalf("resolved %d messages, want %d; JSON differs", len(got), len(want))
	}
}

func TestPublishTurnByTurnResolves(t *testing.T) {
	histories := map[string]func(t *testing.T) []briefd.Message{
		"generated": func(*testing.T) []briefd.Message { return genHistory(40, 300) },
		"shared":    func(t *testing.T) []briefd.Message { return loadShared(t, "mini-swe-agent-30.json") },
	}
	for name, load := range histories {
		t.Run(name, func(t *testing.T) {
			msgs := load(t)
			b := setup(t)
			b.cfg.FullEvery = 8 // exercise full manifests and chains
			pub := queue.NewPublisher(b.js, b.cfg)
			res := queue.NewResolver(b.js, b.cfg)
			var seqs []uint64
			for i, end := range turnEnds(msgs) {
				r, err := pub.Publish(t.Context(), "acme", "c1", msgs[:end])
				if err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
				seqs = append(seqs, r.Seq)
				if i > 0 && r.Seq != seqs[i-1]+1 {
					t.Fatalf("turn %d: seq %d after %d", i, r.Seq, seqs[i-1])
				}
				if r.Duplicate {
					t.Fatalf("turn %d: unexpected duplicate", i)
				}
				// A fresh resolver each few turns walks chains without caches.
				rr := res
				if i%3 == 0 {
					rr = queue.NewResolver(b.js, b.cfg)
				}
				s, err := rr.Load(t.Context(), "acme", "c1", 0)
				if err != nil {
					t.Fatalf("turn %d: load: %v", i, err)
				}
				if s.Seq != r.Seq || s.StreamSeq != r.StreamSeq {
					t.Fatalf("turn %d: loaded seq %d/%d, published %d/%d", i, s.Seq, s.StreamSeq, r.Seq, r.StreamSeq)
				}
				assertMessages(t, s.Messages, msgs[:end])
			}
			// An older snapshot is still loadable by its number (replay).
			s, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c1", seqs[1])
			if err != nil {
				t.Fatal(err)
			}
			assertMessages(t, s.Messages, msgs[:turnEnds(msgs)[1]])
		})
	}
}

func TestRepublishIsIdempotent(t *testing.T) {
	b := setup(t)
	msgs := genHistory(3, 100)
	r1, err := b.pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Duplicate || r2.Seq != r1.Seq || r2.StreamSeq != r1.StreamSeq {
		t.Fatalf("republish = %+v, want duplicate of %+v", r2, r1)
	}
	// A raw re-send of the same manifest (same Nats-Msg-Id) is de-duplicated
	// by the server: a retry after a lost ack stores nothing.
	st, _ := b.js.Stream(t.Context(), b.cfg.WithDefaults().Streams().Snapshots)
	raw, err := st.GetMsg(t.Context(), r1.StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(raw.Subject)
	m.Header = raw.Header
	m.Data = raw.Data
	ack, err := b.js.PublishMsg(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Duplicate || ack.Sequence != r1.StreamSeq {
		t.Fatalf("raw re-send ack = %+v, want duplicate of seq %d", ack, r1.StreamSeq)
	}
	// A new publisher (agent restarted) numbers above the earlier one, so
	// de-duplication does not drop its snapshot.
	r3, err := queue.NewPublisher(b.js, b.cfg).Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Seq <= r1.Seq || !r3.Full || r3.Duplicate || r3.StreamSeq == r1.StreamSeq {
		t.Fatalf("after restart: %+v, want a new full snapshot above seq %d", r3, r1.Seq)
	}
}

func TestEditsAndUndo(t *testing.T) {
	b := setup(t)
	msgs := genHistory(6, 50)
	steps := []struct {
		name string
		msgs func() []briefd.Message
	}{
		{"full", func() []briefd.Message { return msgs }},
		{"undo two", func() []briefd.Message { return msgs[:len(msgs)-2] }},
		{"edit middle", func() []briefd.Message {
			e := append([]briefd.Message(nil), msgs...)
			e[5].Content = briefd.Text("edited " + e[5].Content.Text)
			return e
		}},
		{"edit in place (same slice, new string)", func() []briefd.Message {
			msgs[3].Content = briefd.Text(strings.ToUpper(msgs[3].Content.Text))
			return msgs
		}},
		{"splice a briefing", func() []briefd.Message {
			br := briefd.Message{ID: "brief-1", Role: briefd.RoleUser, Content: briefd.Text("<compacted-history>x</compacted-history>"),
				Metadata: map[string]string{briefd.MetaKind: briefd.KindBriefing}}
			return append([]briefd.Message{msgs[0], msgs[1], br}, msgs[8:]...)
		}},
		{"back to full", func() []briefd.Message { return msgs }},
		{"metadata edit in place", func() []briefd.Message {
			msgs[1].Metadata = map[string]string{"k": "v"}
			return msgs
		}},
		{"tool call edit in place", func() []briefd.Message {
			msgs[2].ToolCalls[0].Function.Arguments = `{"command":"pwd"}`
			return msgs
		}},
	}
	for _, step := range steps {
		want := step.msgs()
		want = append([]briefd.Message(nil), want...) // snapshot the expectation
		r, err := b.pub.Publish(t.Context(), "acme", "c1", want)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if r.Duplicate {
			t.Fatalf("%s: change not detected", step.name)
		}
		s, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c1", 0)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		assertMessages(t, s.Messages, want)
	}
}

func TestLargeBodies(t *testing.T) {
	b := setup(t)
	r := rand.New(rand.NewPCG(3, 4))
	big := func(n int) string { // incompressible, so chunking is exercised
		const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = alpha[r.IntN(64)]
		}
		return string(buf)
	}
	tests := []struct {
		name    string
		size    int
		wantErr error
	}{
		{"5MB", 5 << 20, nil},
		{"16MB", 16<<20 - 200, nil}, // the JSON envelope takes the rest of 16 MiB
		{"17MB", 17 << 20, queue.ErrBodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := []briefd.Message{{ID: "u1", Role: briefd.RoleUser, Content: briefd.Text(big(tt.size))}}
			_, err := b.pub.Publish(t.Context(), "acme", tt.name, msgs)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			s, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", tt.name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if s.Messages[0].Content.Text != msgs[0].Content.Text {
				t.Fatal("large body differs after the round trip")
			}
		})
	}
}

func TestInvalidTokens(t *testing.T) {
	b := setup(t)
	for _, id := range []string{"", "a.b", "a*", "a>", "a b", strings.Repeat("x", 129), "é"} {
		_, err := b.pub.Publish(t.Context(), id, "c", genHistory(1, 10))
		if !errors.Is(err, queue.ErrInvalidToken) {
			t.Errorf("tenant %q: err = %v, want ErrInvalidToken", id, err)
		}
	}
}

// recorder collects settle outcomes and dead letters.
type recorder struct {
	mu       sync.Mutex
	outcomes map[queue.Outcome]int
	dead     []queue.DeadLetter
	signal   chan struct{}
}

func newRecorder() *recorder {
	return &recorder{outcomes: map[queue.Outcome]int{}, signal: make(chan struct{}, 1000)}
}

func (r *recorder) hooks() queue.Hooks {
	return queue.Hooks{
		OnSettled: func(_ queue.Ref, o queue.Outcome, _ error, _ time.Duration) {
			r.mu.Lock()
			r.outcomes[o]++
			r.mu.Unlock()
			r.signal <- struct{}{}
		},
		OnDeadLetter: func(d queue.DeadLetter) {
			r.mu.Lock()
			r.dead = append(r.dead, d)
			r.mu.Unlock()
		},
	}
}

func (r *recorder) count(o queue.Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[o]
}

// waitFor polls cond after each settle, failing after 10s.
func (r *recorder) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-r.signal:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s; outcomes %v", what, r.outcomes)
		}
	}
}

func startConsumer(t *testing.T, b *bundle, h queue.Handler, rec *recorder) *queue.Consumer {
	t.Helper()
	c, err := queue.NewConsumer(b.js, b.cfg, h, rec.hooks())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

func TestCoalescing(t *testing.T) {
	b := setup(t)
	msgs := genHistory(10, 50)
	ends := turnEnds(msgs)
	for _, end := range ends {
		if _, err := b.pub.Publish(t.Context(), "acme", "c1", msgs[:end]); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder()
	var mu sync.Mutex
	var handled []*queue.Snapshot
	startConsumer(t, b, func(_ context.Context, s *queue.Snapshot) error {
		mu.Lock()
		handled = append(handled, s)
		mu.Unlock()
		return nil
	}, rec)
	rec.waitFor(t, "all settled", func() bool {
		return rec.count(queue.OutcomeAcked)+rec.count(queue.OutcomeSuperseded) == len(ends)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 {
		t.Fatalf("handled %d snapshots, want only the newest", len(handled))
	}
	assertMessages(t, handled[0].Messages, msgs)
	if got := rec.count(queue.OutcomeSuperseded); got != len(ends)-1 {
		t.Fatalf("superseded = %d, want %d", got, len(ends)-1)
	}
}

func TestSettlePaths(t *testing.T) {
	tests := []struct {
		name        string
		handler     func(attempt int) error
		wantOutcome queue.Outcome
		wantCalls   int
		wantDead    bool
	}{
		{"ack", func(int) error { return nil }, queue.OutcomeAcked, 1, false},
		{"permanent", func(int) error { return queue.Permanent(errors.New("boom")) }, queue.OutcomeTerminated, 1, true},
		{"invalid history", func(int) error { return fmt.Errorf("x: %w", briefd.ErrInvalidHistory) }, queue.OutcomeTerminated, 1, true},
		{"transient then ok", func(n int) error {
			if n < 2 {
				return errors.New("redis down")
			}
			return nil
		}, queue.OutcomeAcked, 2, false},
		{"max deliver", func(int) error { return errors.New("redis down") }, queue.OutcomeDeadLettered, 3, true},
		{"panic", func(int) error { panic("kaboom") }, queue.OutcomeTerminated, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			rec := newRecorder()
			var mu sync.Mutex
			calls := 0
			startConsumer(t, b, func(context.Context, *queue.Snapshot) error {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				return tt.handler(n)
			}, rec)
			pr, err := b.pub.Publish(t.Context(), "acme", "c1", genHistory(2, 20))
			if err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, string(tt.wantOutcome), func() bool { return rec.count(tt.wantOutcome) == 1 })
			mu.Lock()
			if calls != tt.wantCalls {
				t.Errorf("handler calls = %d, want %d", calls, tt.wantCalls)
			}
			mu.Unlock()
			rec.mu.Lock()
			dead := rec.dead
			rec.mu.Unlock()
			if (len(dead) == 1) != tt.wantDead {
				t.Fatalf("dead letters = %v, want %v", dead, tt.wantDead)
			}
			if tt.wantDead {
				st, err := b.js.Stream(t.Context(), b.cfg.WithDefaults().Streams().Dead)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := st.GetLastMsgForSubject(t.Context(), "briefd.dead.acme.c1")
				if err != nil {
					t.Fatalf("dead letter record: %v", err)
				}
				var d queue.DeadLetter
				if err := json.Unmarshal(raw.Data, &d); err != nil || d.Reason == "" || d.Seq != pr.Seq || d.Deliveries == 0 {
					t.Fatalf("dead letter record %s (err %v)", raw.Data, err)
				}
			}
		})
	}
}

func TestMalformedSnapshots(t *testing.T) {
	b := setup(t)
	rec := newRecorder()
	startConsumer(t, b, func(context.Context, *queue.Snapshot) error { return nil }, rec)
	hash := queue.BodyHash([]byte("{}"))
	manifests := map[string]string{
		"notjson":     `{"v":1,`,
		"version":     `{"v":2,"tenant":"acme","conversation_id":"version","seq":1,"base":0,"keep":0,"append":[]}`,
		"othertenant": `{"v":1,"tenant":"evil","conversation_id":"othertenant","seq":1,"base":0,"keep":0,"append":[]}`,
		"missingbody": `{"v":1,"tenant":"acme","conversation_id":"missingbody","seq":1,"base":0,"keep":0,"append":[{"id":"m1","h":"` + hash + `"}]}`,
		"badbase":     `{"v":1,"tenant":"acme","conversation_id":"badbase","seq":2,"base":1,"base_stream_seq":999,"keep":0,"append":[]}`,
	}
	for conv, m := range manifests {
		if _, err := b.js.Publish(t.Context(), "briefd.snap.acme."+conv, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// A body whose bytes do not match its hash.
	if _, err := b.js.Publish(t.Context(), "briefd.body.acme.badhash."+hash, []byte(`{"id":"m1","role":"user","content":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(t.Context(), "briefd.snap.acme.badhash", []byte(`{"v":1,"tenant":"acme","conversation_id":"badhash","seq":1,"base":0,"keep":0,"append":[{"id":"m1","h":"`+hash+`"}]}`)); err != nil {
		t.Fatal(err)
	}
	// And a good one after them: poison never blocks the queue.
	if _, err := b.pub.Publish(t.Context(), "acme", "good", genHistory(1, 10)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "all settled", func() bool {
		return rec.count(queue.OutcomeTerminated) == len(manifests)+1 && rec.count(queue.OutcomeAcked) == 1
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, d := range rec.dead {
		if !d.Permanent || !strings.Contains(d.Reason, "malformed") {
			t.Errorf("dead letter %+v: want a permanent malformed reason", d)
		}
	}
}

func TestServerRestart(t *testing.T) {
	b := setup(t)
	rec := newRecorder()
	var mu sync.Mutex
	latest := map[string]int{}
	startConsumer(t, b, func(_ context.Context, s *queue.Snapshot) error {
		mu.Lock()
		// Handlers run concurrently: an older snapshot may finish last.
		latest[s.ConversationID] = max(latest[s.ConversationID], len(s.Messages))
		mu.Unlock()
		return nil
	}, rec)
	msgs := genHistory(6, 50)
	publishAll := func(convs ...string) {
		for _, c := range convs {
			for _, end := range turnEnds(msgs) {
				if _, err := b.pub.Publish(t.Context(), "acme", c, msgs[:end]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	done := func(convs ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range convs {
				if latest[c] != len(msgs) {
					return false
				}
			}
			return true
		}
	}
	publishAll("before")
	rec.waitFor(t, "before restart", done("before"))
	b.srv.Restart(t)
	// The client may not have noticed the restart yet, then reconnects:
	// like an agent, retry the first publish until the server takes it
	// (polling external state with a deadline).
	first := msgs[:turnEnds(msgs)[0]]
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := b.pub.Publish(t.Context(), "acme", "after", first)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no publish accepted after the restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	publishAll("after")
	rec.waitFor(t, "after restart", done("after"))
}

func TestTwoWorkersShareTheWork(t *testing.T) {
	b := setup(t)
	rec := newRecorder()
	var mu sync.Mutex
	byWorker := map[int]int{}
	for w := range 2 {
		startConsumer(t, b, func(context.Context, *queue.Snapshot) error {
			mu.Lock()
			byWorker[w]++
			mu.Unlock()
			return nil
		}, rec)
	}
	const convs = 40
	for i := range convs {
		if _, err := b.pub.PublishAsync(t.Context(), "acme", fmt.Sprintf("c%d", i), genHistory(1, 10)); err != nil {
			t.Fatal(err)
		}
	}
	rec.waitFor(t, "all handled", func() bool { return rec.count(queue.OutcomeAcked) == convs })
	mu.Lock()
	defer mu.Unlock()
	if byWorker[0]+byWorker[1] != convs || byWorker[0] == 0 || byWorker[1] == 0 {
		t.Fatalf("work split %v, want both workers busy and %d in all", byWorker, convs)
	}
}

func TestSoftStopRequeues(t *testing.T) {
	b := setup(t)
	rec := newRecorder()
	started := make(chan struct{})
	c := startConsumer(t, b, func(ctx context.Context, _ *queue.Snapshot) error {
		close(started)
		<-ctx.Done() // a long compaction that honours cancellation
		return ctx.Err()
	}, rec)
	if _, err := b.pub.Publish(t.Context(), "acme", "c1", genHistory(1, 10)); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := c.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want deadline exceeded", err)
	}
	if rec.count(queue.OutcomeRequeued) != 1 {
		t.Fatalf("outcomes %v, want one requeued", rec.outcomes)
	}
	// The next worker gets it at once.
	rec2 := newRecorder()
	startConsumer(t, b, func(context.Context, *queue.Snapshot) error { return nil }, rec2)
	rec2.waitFor(t, "redelivered", func() bool { return rec2.count(queue.OutcomeAcked) == 1 })
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  queue.Config
		ok   bool
	}{
		{"defaults", queue.Config{}, true},
		{"dotted prefix", queue.Config{Prefix: "acme.briefd"}, true},
		{"bad prefix", queue.Config{Prefix: "a.>"}, false},
		{"both pull bounds", queue.Config{PullMaxMessages: 2, PullMaxBytes: 1 << 20}, false},
		{"negative backoff", queue.Config{Backoff: []time.Duration{-1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.WithDefaults().Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// A handler that never returns is cut off at MaxHandleTime and retried;
// the second attempt succeeds.
func TestMaxHandleTime(t *testing.T) {
	b := setup(t)
	b.cfg.MaxHandleTime = 200 * time.Millisecond
	rec := newRecorder()
	var calls atomic.Int32
	startConsumer(t, b, func(ctx context.Context, _ *queue.Snapshot) error {
		if calls.Add(1) == 1 {
			<-ctx.Done() // stuck until cut off
			return ctx.Err()
		}
		return nil
	}, rec)
	if _, err := b.pub.Publish(t.Context(), "acme", "stuck", genHistory(1, 10)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "retried then acked", func() bool {
		return rec.count(queue.OutcomeRetried) == 1 && rec.count(queue.OutcomeAcked) == 1
	})
}
