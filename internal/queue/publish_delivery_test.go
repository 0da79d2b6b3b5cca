package queue_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
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

// faultJS is a JetStream context that passes everything through, except
// the async publishes its intercept claims: a test plays a server that
// drops a message, refuses it, or answers late.
type faultJS struct {
	jetstream.JetStream
	mu        sync.Mutex
	intercept func(m *nats.Msg) (f jetstream.PubAckFuture, err error, handled bool)
}

func (f *faultJS) setIntercept(fn func(m *nats.Msg) (jetstream.PubAckFuture, error, bool)) {
	f.mu.Lock()
	f.intercept = fn
	f.mu.Unlock()
}

func (f *faultJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f.mu.Lock()
	fn := f.intercept
	f.mu.Unlock()
	if fn != nil {
		if fut, err, ok := fn(m); ok {
			return fut, err
		}
	}
	return f.JetStream.PublishMsgAsync(m, opts...)
}

// heldFuture is the future of a publish the "server" never answered; the
// test settles it when it likes.
type heldFuture struct {
	msg *nats.Msg
	ok  chan *jetstream.PubAck
	err chan error
}

func newHeldFuture(m *nats.Msg) *heldFuture {
	return &heldFuture{msg: m, ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
}

func (h *heldFuture) Ok() <-chan *jetstream.PubAck { return h.ok }
func (h *heldFuture) Err() <-chan error            { return h.err }
func (h *heldFuture) Msg() *nats.Msg               { return h.msg }

// incompressible returns n characters of random base64: zstd keeps about
// 3/4 of them.
func incompressible(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)[:n]
}

func waitAll(t *testing.T, pends []*queue.Pending) []queue.PublishResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out []queue.PublishResult
	for i, p := range pends {
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatalf("snapshot %d of %d: %v", i+1, len(pends), err)
		}
		out = append(out, r)
	}
	return out
}

// assertResolves loads each snapshot by its number, as a worker would,
// and compares it with the history it was published from.
func assertResolves(t *testing.T, b *bundle, seqs []uint64, want [][]briefd.Message) {
	t.Helper()
	for i, seq := range seqs {
		s, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c1", seq)
		if err != nil {
			t.Fatalf("snapshot %d of %d (seq %d) does not resolve: %v", i+1, len(seqs), seq, err)
		}
		assertMessages(t, s.Messages, want[i])
	}
}

// TestLostBodyAckIsResent (issue 10, D1): the server never acks one body
// of snapshot k (the message is lost); three more snapshots go out while
// that ack is outstanding, then the publish times out, then seven more.
// Every snapshot after k must resolve: the body is re-sent, and no delta
// is built on a snapshot whose bodies are not known stored.
func TestLostBodyAckIsResent(t *testing.T) {
	b := setup(t)
	fj := &faultJS{JetStream: b.js}
	cfg := b.cfg
	cfg.PublishRetryWait = 10 * time.Millisecond
	pub := queue.NewPublisher(fj, cfg)
	msgs := genHistory(12, 200)
	ends := turnEnds(msgs) // 14 prefixes
	for _, end := range ends[:2] {
		if _, err := pub.Publish(t.Context(), "acme", "c1", msgs[:end]); err != nil {
			t.Fatal(err)
		}
	}

	var lost *heldFuture
	fj.setIntercept(func(m *nats.Msg) (jetstream.PubAckFuture, error, bool) {
		if lost == nil && strings.HasPrefix(m.Subject, "briefd.body.") {
			lost = newHeldFuture(m) // dropped: never reaches the stream
			return lost, nil, true
		}
		return nil, nil, false
	})
	pk, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:ends[2]])
	if err != nil {
		t.Fatal(err)
	}
	fj.setIntercept(nil)
	if lost == nil {
		t.Fatal("snapshot k sent no body")
	}
	var later []*queue.Pending
	var want [][]briefd.Message
	publish := func(ends []int) {
		for _, end := range ends {
			p, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:end])
			if err != nil {
				t.Fatal(err)
			}
			later = append(later, p)
			want = append(want, msgs[:end])
		}
	}
	publish(ends[3:6])
	lost.err <- jetstream.ErrAsyncPublishTimeout // as nats.go reports a lost ack
	publish(ends[6:13])

	var seqs []uint64
	for _, r := range waitAll(t, later) {
		seqs = append(seqs, r.Seq)
	}
	assertResolves(t, b, seqs, want)
	// And k itself, once its body was re-sent.
	waitAll(t, []*queue.Pending{pk})
}

// TestRefusedBodyIsResent (issue 10, D1, as reported): the body stream
// starts refusing bodies over 4 KB (an operator lowered max_msg_size) just
// before snapshot k carries a 6 KB body; ten more snapshots follow at
// once. Every one of them must resolve: the refused body is sent again,
// chunked for the limit the server reports now.
func TestRefusedBodyIsResent(t *testing.T) {
	b := setup(t)
	cfg := b.cfg
	cfg.PublishRetryWait = 10 * time.Millisecond
	pub := queue.NewPublisher(b.js, cfg)
	msgs := genHistory(12, 100)
	ends := turnEnds(msgs)
	msgs[ends[2]-1].Content = briefd.Text(incompressible(8000))
	for _, end := range ends[:2] {
		if _, err := pub.Publish(t.Context(), "acme", "c1", msgs[:end]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := b.js.Stream(t.Context(), "BRIEFD_BODIES")
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgSize = 4096
	if _, err := b.js.UpdateStream(t.Context(), sc); err != nil {
		t.Fatal(err)
	}

	var pends []*queue.Pending
	var want [][]briefd.Message
	for _, end := range ends[2:13] {
		p, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:end])
		if err != nil {
			t.Fatal(err)
		}
		pends = append(pends, p)
		want = append(want, msgs[:end])
	}
	// The ten after k first, then k.
	var seqs []uint64
	for _, r := range waitAll(t, pends[1:]) {
		seqs = append(seqs, r.Seq)
	}
	assertResolves(t, b, seqs, want[1:])
	assertResolves(t, b, []uint64{waitAll(t, pends[:1])[0].Seq}, want[:1])
}

// TestFailedBodyGoesWithNextSnapshot: a body whose every re-send fails
// settles its snapshot with an error; the conversation's next snapshot
// sends it again, although the message is in the unchanged part of the
// history, and resolves.
func TestFailedBodyGoesWithNextSnapshot(t *testing.T) {
	b := setup(t)
	fj := &faultJS{JetStream: b.js}
	cfg := b.cfg
	// One re-send, and none more for the newest snapshot.
	cfg.PublishRetries, cfg.PublishRetryWait, cfg.PublishRetryFor = 1, 5*time.Millisecond, -1
	pub := queue.NewPublisher(fj, cfg)
	msgs := genHistory(3, 100)
	ends := turnEnds(msgs)
	if _, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[1]]); err != nil {
		t.Fatal(err)
	}
	victim := ""
	fj.setIntercept(func(m *nats.Msg) (jetstream.PubAckFuture, error, bool) {
		if !strings.HasPrefix(m.Subject, "briefd.body.") || (victim != "" && m.Subject != victim) {
			return nil, nil, false
		}
		victim = m.Subject
		f := newHeldFuture(m)
		f.err <- errors.New("stream refused the body")
		return f, nil, true
	})
	_, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[2]])
	if err == nil {
		t.Fatal("Publish succeeded although every publish of a body failed")
	}
	fj.setIntercept(nil)
	r, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[3]])
	if err != nil {
		t.Fatal(err)
	}
	if r.Resent != 1 {
		t.Errorf("next snapshot re-sent %d bodies, want 1", r.Resent)
	}
	assertResolves(t, b, []uint64{r.Seq}, [][]briefd.Message{msgs[:ends[3]]})
}

// hookFuture wraps a real future: the first call of Ok waits for the real
// ack, puts it in its own channel and runs hook before returning, so the
// hook runs with the ack there for whoever reads the channel first.
type hookFuture struct {
	jetstream.PubAckFuture
	called atomic.Bool
	ok     chan *jetstream.PubAck
	hook   func()
}

func (h *hookFuture) Ok() <-chan *jetstream.PubAck {
	if h.called.CompareAndSwap(false, true) {
		select {
		case a := <-h.PubAckFuture.Ok():
			h.ok <- a
		case <-time.After(10 * time.Second):
		}
		h.hook()
	}
	return h.ok
}

// TestAckReadOnce (issue 10, D10): the ack of a snapshot's manifest lands
// while the conversation's next snapshot is being published. Whatever
// reads it, Wait must return at once, not after the ack timeout: nats.go
// delivers an ack once, so only one reader may ever take it.
func TestAckReadOnce(t *testing.T) {
	b := setup(t)
	fj := &faultJS{JetStream: b.js}
	pub := queue.NewPublisher(fj, b.cfg)
	msgs := genHistory(3, 100)
	ends := turnEnds(msgs)
	var next *queue.Pending
	var nextErr error
	var hooked atomic.Bool
	fj.setIntercept(func(m *nats.Msg) (jetstream.PubAckFuture, error, bool) {
		if !strings.HasPrefix(m.Subject, "briefd.snap.") || !hooked.CompareAndSwap(false, true) {
			return nil, nil, false
		}
		f, err := b.js.PublishMsgAsync(m)
		if err != nil {
			return nil, err, true
		}
		return &hookFuture{PubAckFuture: f, ok: make(chan *jetstream.PubAck, 1), hook: func() {
			next, nextErr = pub.PublishAsync(context.Background(), "acme", "c1", msgs[:ends[3]])
		}}, nil, true
	})
	p, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:ends[2]])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v (the ack was taken by another reader)", err)
	}
	if nextErr != nil {
		t.Fatal(nextErr)
	}
	if next == nil {
		t.Fatal("the hook did not run")
	}
	if _, err := next.Wait(ctx); err != nil {
		t.Fatalf("Wait of the next snapshot: %v", err)
	}
}

// TestMaxPayload4096 (issue 10, D9): with the server's max_payload at
// 4096 bytes a large body is chunked to fit (it panicked with a division
// by zero).
func TestMaxPayload4096(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxPayload(4096))
	_, js := srv.Connect(t)
	b := &bundle{srv: srv, js: js, cfg: queue.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	if err := queue.EnsureStreams(t.Context(), js, b.cfg); err != nil {
		t.Fatal(err)
	}
	pub := queue.NewPublisher(js, b.cfg)
	msgs := []briefd.Message{{ID: "u1", Role: briefd.RoleUser, Content: briefd.Text(incompressible(20000))}}
	r, err := pub.Publish(t.Context(), "acme", "c1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	assertResolves(t, b, []uint64{r.Seq}, [][]briefd.Message{msgs})
}

// TestMaxPayloadTooSmall: a payload limit that leaves no room for a chunk
// (here the body stream's max_msg_size) is a clear error, and nothing of
// the snapshot is published.
func TestMaxPayloadTooSmall(t *testing.T) {
	b := setup(t)
	st, err := b.js.Stream(t.Context(), "BRIEFD_BODIES")
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgSize = 300
	if _, err := b.js.UpdateStream(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	pub := queue.NewPublisher(b.js, b.cfg)
	if err := pub.RefreshLimits(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := pub.Limits().BodyMaxMsgSize; got != 300 {
		t.Fatalf("BodyMaxMsgSize = %d, want 300", got)
	}
	msgs := []briefd.Message{{ID: "u1", Role: briefd.RoleUser, Content: briefd.Text(incompressible(2000))}}
	_, err = pub.Publish(t.Context(), "acme", "c1", msgs)
	if !errors.Is(err, queue.ErrMaxPayloadTooSmall) {
		t.Fatalf("Publish = %v, want ErrMaxPayloadTooSmall", err)
	}
	for _, name := range []string{"BRIEFD_BODIES", "BRIEFD_SNAPSHOTS"} {
		s, err := b.js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.CachedInfo().State.Msgs; n != 0 {
			t.Errorf("%s holds %d messages after the refused publish, want 0", name, n)
		}
	}
}

// TestShortMaxAge (issue 10, D2): the workers run the streams at a MaxAge
// of 1s; the publisher is given none. After a pause longer than MaxAge,
// which expires every body and manifest, the next snapshot resolves.
func TestShortMaxAge(t *testing.T) {
	b := setup(t)
	short := b.cfg
	short.MaxAge, short.DuplicateWindow = time.Second, 500*time.Millisecond
	if err := queue.EnsureStreams(t.Context(), b.js, short); err != nil {
		t.Fatal(err)
	}
	pub := queue.NewPublisher(b.js, b.cfg) // no MaxAge: read from the streams
	msgs := genHistory(4, 100)
	ends := turnEnds(msgs)
	for _, end := range ends[:3] {
		if _, err := pub.Publish(t.Context(), "acme", "c1", msgs[:end]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the pause: longer than MaxAge
	r, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[3]])
	if err != nil {
		t.Fatal(err)
	}
	assertResolves(t, b, []uint64{r.Seq}, [][]briefd.Message{msgs[:ends[3]]})
}

// TestMaxAgeChange: the streams' MaxAge is lowered while a publisher
// runs; after a pause, its next snapshot follows the new MaxAge.
func TestMaxAgeChange(t *testing.T) {
	b := setup(t)
	cfg := b.cfg
	cfg.LimitsRefresh = 200 * time.Millisecond
	pub := queue.NewPublisher(b.js, cfg)
	if err := pub.RefreshLimits(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := pub.Limits().MaxAge; got != queue.DefaultMaxAge {
		t.Fatalf("MaxAge read %v, want %v", got, queue.DefaultMaxAge)
	}
	msgs := genHistory(4, 100)
	ends := turnEnds(msgs)
	for _, end := range ends[:3] {
		if _, err := pub.Publish(t.Context(), "acme", "c1", msgs[:end]); err != nil {
			t.Fatal(err)
		}
	}
	short := b.cfg
	short.MaxAge, short.DuplicateWindow = time.Second, 500*time.Millisecond
	if err := queue.EnsureStreams(t.Context(), b.js, short); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	r, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[3]])
	if err != nil {
		t.Fatal(err)
	}
	if !r.Full {
		t.Error("snapshot after the pause is a delta on expired snapshots, want a full one")
	}
	assertResolves(t, b, []uint64{r.Seq}, [][]briefd.Message{msgs[:ends[3]]})
	if got := pub.Limits().MaxAge; got != time.Second {
		t.Errorf("MaxAge after the change %v, want 1s", got)
	}
}

// TestSupersededManifestNotResent: the manifest of snapshot k fails and a
// newer snapshot is published before k's re-send is due. k is not sent
// again (stored after k+1 it would pass for the conversation's newest);
// its error says so, and the stream's newest snapshot is k+1.
func TestSupersededManifestNotResent(t *testing.T) {
	b := setup(t)
	fj := &faultJS{JetStream: b.js}
	cfg := b.cfg
	cfg.PublishRetryWait = 300 * time.Millisecond
	pub := queue.NewPublisher(fj, cfg)
	msgs := genHistory(3, 100)
	ends := turnEnds(msgs)
	var failed atomic.Bool
	fj.setIntercept(func(m *nats.Msg) (jetstream.PubAckFuture, error, bool) {
		if !strings.HasPrefix(m.Subject, "briefd.snap.") || !failed.CompareAndSwap(false, true) {
			return nil, nil, false
		}
		f := newHeldFuture(m)
		f.err <- errors.New("stream unavailable")
		return f, nil, true
	})
	pk, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:ends[2]])
	if err != nil {
		t.Fatal(err)
	}
	pn, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:ends[3]])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := pk.Wait(ctx); !errors.Is(err, queue.ErrSuperseded) {
		t.Fatalf("Wait of the superseded snapshot = %v, want ErrSuperseded", err)
	}
	rn, err := pn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Seq != rn.Seq {
		t.Fatalf("newest snapshot in the stream is seq %d, want the newer one, %d", s.Seq, rn.Seq)
	}
	assertMessages(t, s.Messages, msgs[:ends[3]])
}
