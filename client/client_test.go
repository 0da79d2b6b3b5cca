package client_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/redistest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type bundle struct {
	srv *natstest.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

func setup(t *testing.T) *bundle {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.Connect(t)
	if err := queue.EnsureStreams(t.Context(), js, queue.Config{}); err != nil {
		t.Fatal(err)
	}
	return &bundle{srv: srv, nc: nc, js: js}
}

func newClient(t *testing.T, nc *nats.Conn, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(nc, append([]client.Option{client.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// conversation returns a valid history of n assistant turns with tool calls.
func conversation(n int) []briefd.Message {
	h := []briefd.Message{msg("sys", briefd.RoleSystem, "system"), msg("task", briefd.RoleUser, "task")}
	for i := range n {
		call := fmt.Sprintf("c%d", i)
		h = append(h,
			briefd.Message{ID: fmt.Sprintf("a%d", i), Role: briefd.RoleAssistant, Content: briefd.Text("step"),
				ToolCalls: []briefd.ToolCall{{ID: call, Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}}}},
			briefd.Message{ID: fmt.Sprintf("t%d", i), Role: briefd.RoleTool, ToolCallID: call, Content: briefd.Text("file.go")})
	}
	return h
}

func TestPublishStoresSnapshots(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithTenant("t1"))
	h := conversation(5)
	for k := 3; k <= len(h); k += 2 {
		if err := c.Publish(t.Context(), "conv", h[:k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, err := b.js.Stream(t.Context(), queue.Config{}.Streams().Snapshots)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 5 {
		t.Errorf("snapshot stream holds %d messages, want 5", info.State.Msgs)
	}
	if c.Pending() != 0 || c.Err() != nil {
		t.Errorf("after Flush: pending %d, err %v", c.Pending(), c.Err())
	}
}

func TestPublishInvalid(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc)
	tests := []struct {
		name    string
		conv    string
		history []briefd.Message
		want    error
	}{
		{"bad conversation id", "a.b", conversation(1), client.ErrInvalidID},
		{"empty conversation id", "", conversation(1), client.ErrInvalidID},
		{"empty history", "conv", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Publish(t.Context(), tt.conv, tt.history)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Publish = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := client.New(b.nc, client.WithTenant("bad tenant")); !errors.Is(err, client.ErrInvalidID) {
		t.Errorf("New with a bad tenant = %v, want ErrInvalidID", err)
	}
}

// TestBufferFull replaces the streams by a plain subscriber that holds the
// publishes unanswered: with a one-slot buffer, a snapshot of another
// conversation finds the buffer full and Publish returns at once, while a
// newer snapshot of the same conversation takes the slot of the one it
// supersedes. Once the held publishes are acked, Flush returns and the
// buffer is free again.
func TestBufferFull(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithBuffer(1))
	h := conversation(3)
	if err := c.Publish(t.Context(), "conv", h[:4]); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{queue.Config{}.Streams().Bodies, queue.Config{}.Streams().Snapshots} {
		if err := b.js.DeleteStream(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	held := make(chan *nats.Msg, 64)
	sub, err := b.nc.ChanSubscribe("briefd.>", held)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	if err := c.Publish(t.Context(), "conv", h[:6]); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "other", h[:2]); !errors.Is(err, client.ErrBufferFull) {
		t.Fatalf("Publish of another conversation with a full buffer = %v, want ErrBufferFull", err)
	}
	if err := c.Publish(t.Context(), "conv", h); err != nil {
		t.Fatalf("Publish of a newer snapshot with a full buffer = %v, want it to replace the older one", err)
	}
	if st := c.Stats(); st.Pending != 1 || st.Superseded != 1 || st.Refused != 1 {
		t.Fatalf("stats %+v, want 1 pending, 1 superseded, 1 refused", st)
	}
	// Held: two bodies and a manifest, then two bodies and a manifest;
	// ack them as a stream would.
	for range 6 {
		select {
		case m := <-held:
			if err := m.Respond([]byte(`{"stream":"HELD","seq":7}`)); err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("publish not seen by the subscriber within 10s")
		}
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending %d after Flush", c.Pending())
	}
}

// TestBufferKeepsNewest (issue 10, F6): NATS is down while two agents
// publish ten turns each into a four-slot buffer. Superseded snapshots
// make room; the newest snapshot of each conversation is never refused,
// and once NATS is back it is stored and resolves to the whole history.
func TestBufferKeepsNewest(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc, client.WithBuffer(4))
	h := conversation(12)
	convs := []string{"agent-a", "agent-b"}
	for _, conv := range convs {
		if err := c.Publish(t.Context(), conv, h[:4]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.srv.Shutdown()
	for k := 6; k <= len(h); k += 2 {
		for _, conv := range convs {
			if err := c.Publish(t.Context(), conv, h[:k]); err != nil {
				t.Fatalf("Publish of %s, %d messages, during the outage: %v", conv, k, err)
			}
		}
	}
	time.Sleep(time.Second) // the outage
	b.srv.Restart(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush after the outage: %v", err)
	}
	if st := c.Stats(); st.Superseded == 0 || st.Refused != 0 {
		t.Errorf("stats %+v, want superseded snapshots dropped and none refused", st)
	}
	for _, conv := range convs {
		s, err := queue.LoadSnapshot(t.Context(), b.js, queue.Config{}, client.DefaultTenant, conv, 0)
		if err != nil {
			t.Fatalf("%s: newest snapshot: %v", conv, err)
		}
		if len(s.Messages) != len(h) {
			t.Fatalf("%s: newest stored snapshot has %d messages, want %d", conv, len(s.Messages), len(h))
		}
	}
}

// TestShortMaxAge (issue 10, D2): the workers run the streams at a MaxAge
// of 1s; the client, given nothing, reads it. After a pause longer than
// MaxAge the next snapshot resolves.
func TestShortMaxAge(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := srv.Connect(t)
	if err := queue.EnsureStreams(t.Context(), js, queue.Config{MaxAge: time.Second, DuplicateWindow: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, nc, client.WithKV())
	h := conversation(4)
	for k := 4; k <= 8; k += 2 {
		if err := c.Publish(t.Context(), "conv", h[:k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // longer than MaxAge
	if err := c.Publish(t.Context(), "conv", h); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, err := queue.LoadSnapshot(t.Context(), js, queue.Config{}, client.DefaultTenant, "conv", 0)
	if err != nil {
		t.Fatalf("snapshot after the pause: %v", err)
	}
	if len(s.Messages) != len(h) {
		t.Fatalf("snapshot after the pause has %d messages, want %d", len(s.Messages), len(h))
	}
}

// TestAsyncErrors deletes the snapshot stream after a first publish: the
// next snapshot fails at ack time, and the error reaches the handler, Err
// and Flush.
func TestAsyncErrors(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	var got []error
	// The stream is gone for good: three re-sends, not two minutes of them.
	c := newClient(t, b.nc, client.WithRetryFor(-1), client.WithErrorHandler(func(err error) {
		mu.Lock()
		got = append(got, err)
		mu.Unlock()
	}))
	h := conversation(2)
	if err := c.Publish(t.Context(), "conv", h[:4]); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.js.DeleteStream(t.Context(), queue.Config{}.Streams().Snapshots); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "conv", h); err != nil {
		t.Fatalf("Publish returned %v; the failure should come asynchronously", err)
	}
	if err := c.Flush(t.Context()); err == nil {
		t.Fatal("Flush = nil, want the ack error")
	}
	if c.Err() != nil {
		t.Errorf("Err after Flush = %v, want nil (Flush clears it)", c.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Errorf("error handler called %d times, want 1: %v", len(got), got)
	}
}

func TestClosed(t *testing.T) {
	b := setup(t)
	c := newClient(t, b.nc)
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), "conv", conversation(1)); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	if _, err := c.Latest(t.Context(), "conv"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Latest after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

type putter interface {
	Put(ctx context.Context, b *briefd.Briefing) (bool, error)
}

// TestPrepare runs the read side against both stores, with and without
// the watch.
func TestPrepare(t *testing.T) {
	stores := []struct {
		name string
		make func(t *testing.T, b *bundle) (putter, []client.Option)
	}{
		{"kv", func(t *testing.T, b *bundle) (putter, []client.Option) {
			s, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
			if err != nil {
				t.Fatal(err)
			}
			return s, []client.Option{client.WithKV()}
		}},
		{"redis", func(t *testing.T, b *bundle) (putter, []client.Option) {
			rdb := redistest.Start(t).Client(t)
			return cache.NewRedisStore(rdb, cache.RedisConfig{}), []client.Option{client.WithRedis(rdb)}
		}},
	}
	for _, st := range stores {
		for _, watch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/watch=%v", st.name, watch), func(t *testing.T) {
				b := setup(t)
				store, opts := st.make(t, b)
				if watch {
					opts = append(opts, client.WithWatch())
				}
				c := newClient(t, b.nc, append(opts, client.WithTenant("t1"))...)
				h := conversation(6)

				got, br, err := c.Prepare(t.Context(), "conv", h)
				if err != nil || br != nil || len(got) != len(h) {
					t.Fatalf("Prepare with no briefing = %d messages, %v, %v; want history unchanged", len(got), br, err)
				}
				if _, err := c.Latest(t.Context(), "conv"); !errors.Is(err, client.ErrNoBriefing) {
					t.Fatalf("Latest = %v, want ErrNoBriefing", err)
				}

				put := func(boundary string, pos int64) {
					t.Helper()
					if _, err := store.Put(t.Context(), &briefd.Briefing{Tenant: "t1", ConversationID: "conv",
						BoundaryID: boundary, Position: pos, Text: "brief " + boundary}); err != nil {
						t.Fatal(err)
					}
				}
				// waitSplice polls Prepare (the watch is asynchronous) until
				// it splices at boundary.
				waitSplice := func(boundary string, wantLen int) {
					t.Helper()
					deadline := time.Now().Add(10 * time.Second)
					for {
						got, br, err := c.Prepare(t.Context(), "conv", h)
						if err != nil {
							t.Fatal(err)
						}
						if br != nil && br.BoundaryID == boundary {
							if len(got) != wantLen || !got[2].IsBriefing() {
								t.Fatalf("spliced history has %d messages (want %d), third %q", len(got), wantLen, got[2].ID)
							}
							if err := briefd.Validate(got, briefd.Limits{}); err != nil {
								t.Fatal(err)
							}
							return
						}
						if time.Now().After(deadline) {
							t.Fatalf("no splice at %s within 10s (last briefing %v)", boundary, br)
						}
						time.Sleep(5 * time.Millisecond) // polling external state
					}
				}
				put("a2", 6)
				waitSplice("a2", 2+1+(len(h)-6))
				put("a4", 10)
				waitSplice("a4", 2+1+(len(h)-10))

				// A history that lost the boundary (undo) is sent unchanged.
				got, br, err = c.Prepare(t.Context(), "conv", h[:8])
				if err != nil || br != nil || len(got) != 8 {
					t.Fatalf("Prepare without the boundary = %d messages, %v, %v", len(got), br, err)
				}
				latest, err := c.Latest(t.Context(), "conv")
				if err != nil || latest.BoundaryID != "a4" {
					t.Fatalf("Latest = %v, %v; want a4", latest, err)
				}
			})
		}
	}
}

func TestWatch(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := c.Watch(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(t.Context(), &briefd.Briefing{Tenant: client.DefaultTenant, ConversationID: "conv", BoundaryID: "a1", Position: 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ch:
		if got.BoundaryID != "a1" {
			t.Fatalf("watched %s, want a1", got.BoundaryID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no briefing on the watch within 10s")
	}
	cancel()
	for range ch { // closed once ctx ends
	}
}

// briefingFor is a briefing of conversation(6) at boundary a2.
func briefingFor(tenant, conv string, pos int64) *briefd.Briefing {
	return &briefd.Briefing{Tenant: tenant, ConversationID: conv, BoundaryID: "a2", Position: pos, Text: "brief " + conv}
}

// TestPrepareWatchStoreDown (issue 10, D4): with WithWatch, Prepare
// returns the store's error when Redis is down, as the plain client does:
// when it is down before the conversation's first Prepare, and when it
// goes down while the conversation is watched. Once Redis is back,
// Prepare splices again.
func TestPrepareWatchStoreDown(t *testing.T) {
	for _, when := range []string{"before the first Prepare", "while watched"} {
		t.Run(when, func(t *testing.T) {
			b := setup(t)
			srv := redistest.Start(t)
			rdb := srv.Client(t)
			store := cache.NewRedisStore(rdb, cache.RedisConfig{})
			c := newClient(t, b.nc, client.WithRedis(rdb), client.WithWatch(), client.WithTenant("t1"))
			h := conversation(6)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()

			if when == "while watched" {
				if _, err := store.Put(ctx, briefingFor("t1", "conv", 6)); err != nil {
					t.Fatal(err)
				}
				if _, br, err := c.Prepare(ctx, "conv", h); err != nil || br == nil {
					t.Fatalf("Prepare = %v, %v; want the briefing", br, err)
				}
			}
			srv.Kill()
			// The watch notices the outage asynchronously.
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, br, err := c.Prepare(ctx, "conv", h)
				if err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Prepare with Redis down = nil error (briefing %v), want the store's error", br != nil)
				}
				time.Sleep(10 * time.Millisecond) // polling external state
			}

			srv.Start(t) // empty
			if _, err := store.Put(ctx, briefingFor("t1", "conv", 7)); err != nil {
				t.Fatal(err)
			}
			for {
				_, br, err := c.Prepare(ctx, "conv", h)
				if err == nil && br != nil && br.Position == 7 {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("no splice after Redis came back: %v", err)
				}
				time.Sleep(10 * time.Millisecond) // polling external state
			}
		})
	}
}

// TestWatchSharesOneConnection (issue 10, D4): a client watching 200
// conversations holds one Redis Pub/Sub connection (it held one each),
// and each conversation still gets its own briefings.
func TestWatchSharesOneConnection(t *testing.T) {
	b := setup(t)
	rdb := redistest.Start(t).Client(t)
	store := cache.NewRedisStore(rdb, cache.RedisConfig{})
	c := newClient(t, b.nc, client.WithRedis(rdb), client.WithWatch(), client.WithTenant("t1"))
	h := conversation(6)
	const n = 200
	for i := range n {
		if _, _, err := c.Prepare(t.Context(), fmt.Sprintf("c%d", i), h); err != nil {
			t.Fatal(err)
		}
	}
	list, err := rdb.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	subscribers, channels := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "sub="); ok && v != "0" {
				subscribers++
				k, _ := strconv.Atoi(v)
				channels += k
			}
		}
	}
	if subscribers != 1 || channels != n {
		t.Fatalf("%d Redis connections subscribed to %d channels for %d watched conversations, want 1 to %d", subscribers, channels, n, n)
	}
	for _, i := range []int{0, 57, 199} {
		conv := fmt.Sprintf("c%d", i)
		if _, err := store.Put(t.Context(), briefingFor("t1", conv, int64(6+i))); err != nil {
			t.Fatal(err)
		}
		waitBriefing(t, c, conv, h, int64(6+i))
	}
}

// TestWatchSharesOneConsumer (issue 10, D4): with the key-value store, 200
// watched conversations share one bucket consumer (they had one each).
func TestWatchSharesOneConsumer(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithKV(), client.WithWatch(), client.WithTenant("t1"))
	h := conversation(6)
	const n = 200
	for i := range n {
		if _, _, err := c.Prepare(t.Context(), fmt.Sprintf("c%d", i), h); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.js.Stream(t.Context(), "KV_"+cache.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Consumers; got != 1 {
		t.Fatalf("%d consumers on the bucket for %d watched conversations, want 1", got, n)
	}
	for _, i := range []int{0, 57, 199} {
		conv := fmt.Sprintf("c%d", i)
		if _, err := store.Put(t.Context(), briefingFor("t1", conv, int64(6+i))); err != nil {
			t.Fatal(err)
		}
		waitBriefing(t, c, conv, h, int64(6+i))
	}
}

// waitBriefing polls Prepare (the watch is asynchronous) until it splices
// the briefing at position pos.
func waitBriefing(t *testing.T, c *client.Client, conv string, h []briefd.Message, pos int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, br, err := c.Prepare(t.Context(), conv, h)
		if err != nil {
			t.Fatal(err)
		}
		if br != nil && br.Position == pos {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no briefing at position %d within 10s (last %v)", conv, pos, br)
		}
		time.Sleep(5 * time.Millisecond) // polling external state
	}
}

// TestWatchFollowsNewestSnapshot: the briefing kept by the watch follows
// the stores' rule for the latest, the newest snapshot's, even when its
// Position is lower (the history was undone, say).
func TestWatchFollowsNewestSnapshot(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithKV(), client.WithWatch(), client.WithTenant("t1"))
	h := conversation(6)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first := &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a4", Position: 10, SnapshotSeq: 7, SnapshotTime: at}
	if _, err := store.Put(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	waitBriefing(t, c, "conv", h, 10)
	undo := &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a2", Position: 6, SnapshotSeq: 8, SnapshotTime: at.Add(time.Second)}
	if _, err := store.Put(t.Context(), undo); err != nil {
		t.Fatal(err)
	}
	waitBriefing(t, c, "conv", h, 6)
}

// Prepare validates a history as it grows (issue 12): turn after turn on
// one slice it splices as briefd.Splice does; a bad turn is refused; a
// truncation followed by new turns on the same slice, an edited copy, and
// a history gone bad in the compacted part are all handled as
// briefd.Splice handles them.
func TestPrepareValidatesTheTurn(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithKV(), client.WithTenant("t1"))
	if _, err := store.Put(t.Context(), &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a3", Position: 8, Text: "brief"}); err != nil {
		t.Fatal(err)
	}
	full := conversation(30)
	h := make([]briefd.Message, 0, len(full)+8) // appends keep the array
	h = append(h, full[:10]...)
	prepare := func(h []briefd.Message) ([]briefd.Message, error) {
		t.Helper()
		got, br, err := c.Prepare(t.Context(), "conv", h)
		want, werr := briefd.Splice(h, &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a3", Position: 8, Text: "brief"})
		if (err == nil) != (werr == nil) {
			t.Fatalf("Prepare: %v; briefd.Splice: %v", err, werr)
		}
		if err == nil && (br == nil || len(got) != len(want)) {
			t.Fatalf("Prepare gave %d messages (briefing %v), briefd.Splice %d", len(got), br, len(want))
		}
		return got, err
	}
	for end := 10; end <= 40; end += 2 {
		h = append(h, full[len(h):end]...)
		if _, err := prepare(h); err != nil {
			t.Fatal(err)
		}
	}

	// Undo the last turn and write a bad one over it, on the same slice.
	h = append(h[:len(h)-2], briefd.Message{ID: "stray", Role: briefd.RoleTool, ToolCallID: "nope", Content: briefd.Text("x")},
		briefd.Message{ID: "fine", Role: briefd.RoleUser, Content: briefd.Text("fine")},
		briefd.Message{ID: "fine too", Role: briefd.RoleUser, Content: briefd.Text("fine")})
	if _, err := prepare(h); err == nil {
		t.Fatal("a bad turn written over an undone one was spliced")
	}
	h = h[:len(h)-3]
	if _, err := prepare(h); err != nil {
		t.Fatal(err)
	}
	// A turn whose tool result answers no call.
	h = append(h, briefd.Message{ID: "orphan", Role: briefd.RoleTool, ToolCallID: "nope", Content: briefd.Text("x")})
	if _, err := prepare(h); err == nil {
		t.Fatal("a bad turn was spliced")
	}
	// Undo it and the turn before, then take other turns on the same slice.
	h = h[:len(h)-3]
	h = append(h, briefd.Message{ID: "u-new", Role: briefd.RoleUser, Content: briefd.Text("again")},
		briefd.Message{ID: "a-new", Role: briefd.RoleAssistant, Content: briefd.Text("ok")},
		briefd.Message{ID: "t-dup", Role: briefd.RoleUser, Content: briefd.Text("dup")})
	if _, err := prepare(h); err != nil {
		t.Fatal(err)
	}
	// The same id again, on the same slice: refused.
	h = append(h, briefd.Message{ID: "u-new", Role: briefd.RoleUser, Content: briefd.Text("dup")})
	if _, err := prepare(h); err == nil {
		t.Fatal("a duplicate id was spliced")
	}
	// An edited copy, bad in the compacted part only: spliced away, as
	// briefd.Splice does.
	cp := slices.Clone(h[:len(h)-1])
	cp[3].ToolCallID = "c-other"
	if _, err := prepare(cp); err != nil {
		t.Fatal(err)
	}
}

// Latest decodes a briefing once, and sees the next one: each call gets
// its own copy.
func TestLatestDecodesOnce(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithKV(), client.WithTenant("t1"))
	put := func(boundary string, pos int64) {
		t.Helper()
		if _, err := store.Put(t.Context(), &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: boundary,
			Position: pos, Text: "brief " + boundary, CompactedIDs: []string{"m1", "m2"}}); err != nil {
			t.Fatal(err)
		}
	}
	put("a2", 6)
	first, err := c.Latest(t.Context(), "conv")
	if err != nil || first.BoundaryID != "a2" {
		t.Fatalf("Latest = %v, %v", first, err)
	}
	first.CompactedIDs[0] = "changed by the caller"
	again, err := c.Latest(t.Context(), "conv")
	if err != nil || again == first || again.CompactedIDs[0] != "m1" || again.Text != "brief a2" {
		t.Fatalf("Latest again = %+v, %v", again, err)
	}
	put("a4", 10)
	next, err := c.Latest(t.Context(), "conv")
	if err != nil || next.BoundaryID != "a4" || next.Text != "brief a4" {
		t.Fatalf("Latest after a new briefing = %+v, %v", next, err)
	}
}

// PrepareInto gives what Prepare gives, written into the array of the
// result handed back (issue 12: a turn costs its new messages), also when
// the agent changed that result; with no briefing it returns the history
// itself and leaves dst alone, and it never writes into the history.
func TestPrepareInto(t *testing.T) {
	b := setup(t)
	store, err := cache.NewKVStore(t.Context(), b.js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b.nc, client.WithKV(), client.WithTenant("t1"))
	full := conversation(30)
	h := make([]briefd.Message, 0, len(full)+8) // appends keep the array
	h = append(h, full[:10]...)
	got, br, err := c.PrepareInto(t.Context(), nil, "conv", h)
	if err != nil || br != nil || unsafe.SliceData(got) != unsafe.SliceData(h) || len(got) != len(h) {
		t.Fatalf("PrepareInto with no briefing = %d messages, %v, %v; want the history itself", len(got), br, err)
	}
	brief := &briefd.Briefing{Tenant: "t1", ConversationID: "conv", BoundaryID: "a3", Position: 8, Text: "brief"}
	if _, err := store.Put(t.Context(), brief); err != nil {
		t.Fatal(err)
	}
	var prev []briefd.Message
	for end := 12; end <= 40; end += 2 {
		h = append(h, full[len(h):end]...)
		want, err := briefd.Splice(h, brief)
		if err != nil {
			t.Fatal(err)
		}
		before := slices.Clone(h)
		got, br, err := c.PrepareInto(t.Context(), prev, "conv", h)
		if err != nil || br == nil || br.BoundaryID != "a3" {
			t.Fatalf("PrepareInto = %v, %v", br, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d messages: PrepareInto differs from briefd.Splice", end)
		}
		if !reflect.DeepEqual(h, before) {
			t.Fatal("PrepareInto changed the history")
		}
		if prev != nil && cap(prev) >= len(got) && unsafe.SliceData(got) != unsafe.SliceData(prev) {
			t.Errorf("%d messages: a new array although the result handed back had room", end)
		}
		if end%6 == 0 {
			got[len(got)-1].Content = briefd.Text("changed by the agent")
		}
		prev = got
	}
	// The history's own array, handed back, is not written.
	before := slices.Clone(h)
	got, _, err = c.PrepareInto(t.Context(), h[:0], "conv", h)
	if err != nil || !reflect.DeepEqual(h, before) || unsafe.SliceData(got) == unsafe.SliceData(h) {
		t.Fatalf("PrepareInto into the history's array: %v; history kept %v", err, reflect.DeepEqual(h, before))
	}
}
