package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
// publishes unanswered: the second snapshot finds the one-slot buffer full
// and Publish returns at once; once the held publishes are acked, Flush
// returns and the buffer is free again.
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
	if err := c.Publish(t.Context(), "conv", h); !errors.Is(err, client.ErrBufferFull) {
		t.Fatalf("Publish with a full buffer = %v, want ErrBufferFull", err)
	}
	// Two bodies and one manifest are held; ack them as a stream would.
	for range 3 {
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

// TestAsyncErrors deletes the snapshot stream after a first publish: the
// next snapshot fails at ack time, and the error reaches the handler, Err
// and Flush.
func TestAsyncErrors(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	var got []error
	c := newClient(t, b.nc, client.WithErrorHandler(func(err error) {
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
