package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
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

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// turn returns the messages of one agent turn: an assistant message with a
// tool call and its result, about 150 tokens, with fresh ids.
func turn(i int) []briefd.Message {
	id := "turn" + strconv.Itoa(i)
	return []briefd.Message{
		{ID: id + "-a", Role: briefd.RoleAssistant, Content: briefd.Text("Let me look at the failing test output again before changing the parser."),
			ToolCalls: []briefd.ToolCall{{ID: id + "-c", Type: "function", Function: briefd.FunctionCall{Name: "bash", Arguments: `{"command":"go test ./parser -run TestNested -v"}`}}}},
		{ID: id + "-t", Role: briefd.RoleTool, ToolCallID: id + "-c", Content: briefd.Text("=== RUN   TestNested\n    parser_test.go:88: got 3 nodes, want 4\n--- FAIL: TestNested (0.00s)\nFAIL\nexit status 1\nFAIL\texample.com/parser\t0.012s")},
	}
}

// report adds the p50 and p99 of lats (nanoseconds) to the benchmark and
// returns the p50.
func report(b *testing.B, lats []time.Duration) float64 {
	if len(lats) == 0 {
		return 0
	}
	p50 := float64(quantile(lats, 0.50).Nanoseconds())
	b.ReportMetric(p50, "p50-ns")
	b.ReportMetric(float64(quantile(lats, 0.99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(lats[len(lats)-1].Nanoseconds()), "max-ns")
	return p50
}

func newClient(b *testing.B, nc *nats.Conn, opts ...client.Option) *client.Client {
	c, err := client.New(nc, append([]client.Option{client.WithLogger(quiet), client.WithBuffer(1 << 14)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// turnsPerConversation is how many timed turns each conversation gets
// before a fresh one starts from the base history again: enough to include
// the publisher's periodic full manifests (queue.DefaultFullEvery = 64),
// few enough that the history stays near its nominal size.
const turnsPerConversation = 128

// BenchmarkPublishTurn measures client.Publish on the agent's hot path:
// one turn (an assistant message and its tool result) appended to a history
// of about 1k, 100k and 1M tokens that was published before. Each
// conversation's first publish (all bodies) is not timed, nor the wait for
// each turn's acks (an agent's turns are seconds apart). p50-ns and p99-ns
// are per-turn latencies.
//
// raw is the floor: the same turn's bytes (its two bodies, marshalled
// beforehand, and a delta manifest of the usual size) handed to
// JetStream's asynchronous publish, with nothing else done.
func BenchmarkPublishTurn(b *testing.B) {
	for _, size := range []int{1_000, 100_000, 1_000_000} {
		for _, mode := range []string{"client", "raw"} {
			b.Run(fmt.Sprintf("tokens=%d/%s", size, mode), func(b *testing.B) {
				base := history(b, size)
				srv := natstest.Start(b)
				nc, js := srv.Connect(b)
				if err := queue.EnsureStreams(b.Context(), js, queue.Config{}); err != nil {
					b.Fatal(err)
				}
				c := newClient(b, nc)
				ctx := b.Context()
				var lats []time.Duration
				var h []briefd.Message
				conv, i := 0, 0
				b.ReportAllocs()
				for b.Loop() {
					if i%turnsPerConversation == 0 {
						b.StopTimer()
						if err := c.Flush(ctx); err != nil {
							b.Fatal(err)
						}
						conv++
						// Room to grow, as an agent's slice has between two
						// reallocations by append (one every ~n/4 appends).
						h = append(make([]briefd.Message, 0, len(base)+2*turnsPerConversation), base...)
						if err := c.Publish(ctx, "bench-"+strconv.Itoa(conv), h); err != nil {
							b.Fatal(err)
						}
						if err := c.Flush(ctx); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					t := turn(i)
					h = append(h, t...)
					if mode == "raw" {
						b.StopTimer()
						msgs := rawTurn(b, "bench-"+strconv.Itoa(conv), i, t)
						b.StartTimer()
						t0 := time.Now()
						for _, m := range msgs {
							if _, err := js.PublishMsgAsync(m); err != nil {
								b.Fatal(err)
							}
						}
						lats = append(lats, time.Since(t0))
						b.StopTimer()
						select {
						case <-js.PublishAsyncComplete():
						case <-time.After(10 * time.Second):
							b.Fatal("acks not in within 10s")
						}
						b.StartTimer()
						i++
						continue
					}
					t0 := time.Now()
					err := c.Publish(ctx, "bench-"+strconv.Itoa(conv), h)
					lats = append(lats, time.Since(t0))
					if err != nil {
						b.Fatal(err)
					}
					// Untimed: an agent's turns are seconds apart, so the
					// acks are in before its next publish.
					b.StopTimer()
					if err := c.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					i++
				}
				b.StopTimer()
				if err := c.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				report(b, lats)
				b.ReportMetric(float64(len(base)), "base-msgs")
			})
		}
	}
}

// rawTurn returns the messages a client publishes for one turn of conv:
// the bodies of msgs and a delta manifest naming them.
func rawTurn(b *testing.B, conv string, i int, msgs []briefd.Message) []*nats.Msg {
	var out []*nats.Msg
	man := queue.Manifest{V: queue.Version, Tenant: client.DefaultTenant, ConversationID: conv, Seq: uint64(1e15) + uint64(i) + 1,
		Base: uint64(1e15) + uint64(i), BaseStreamSeq: 1, Keep: 1000, CreatedAt: time.Now()}
	for _, m := range msgs {
		body, err := json.Marshal(&m)
		if err != nil {
			b.Fatal(err)
		}
		hash := queue.BodyHash(body)
		subj := queue.Subjects{Prefix: queue.DefaultPrefix}.Body(client.DefaultTenant, conv, hash)
		msg := &nats.Msg{Subject: subj, Data: body, Header: nats.Header{}}
		msg.Header.Set(queue.HeaderVersion, "1")
		msg.Header.Set(queue.HeaderContentType, queue.ContentTypeJSON)
		msg.Header.Set(queue.HeaderMsgID, client.DefaultTenant+"."+conv+"."+hash)
		out = append(out, msg)
		man.Append = append(man.Append, queue.Entry{ID: m.ID, Hash: hash})
	}
	data, err := json.Marshal(&man)
	if err != nil {
		b.Fatal(err)
	}
	msg := &nats.Msg{Subject: queue.Subjects{Prefix: queue.DefaultPrefix}.Snapshot(client.DefaultTenant, conv), Data: data, Header: nats.Header{}}
	msg.Header.Set(queue.HeaderVersion, "1")
	msg.Header.Set(queue.HeaderContentType, queue.ContentTypeJSON)
	msg.Header.Set(queue.HeaderMsgID, client.DefaultTenant+"."+conv+"."+strconv.FormatUint(man.Seq, 10))
	return append(out, msg)
}

// BenchmarkLatestSplice measures the agent's next turn on a 1000-message
// history, on the key-value store and on Redis:
//
//   - get: a raw read of the latest briefing's bytes (the floor: one
//     round trip);
//   - latest-splice: Client.Latest (the round trip and decoding) plus
//     client.Splice, which validates the whole spliced history;
//   - prepare: Client.Prepare without a watch, which is Latest plus a
//     splice that checks only its seam, the history having been validated
//     by the conversation's earlier Prepare (see briefd.Validator);
//   - prepare-into: Client.PrepareInto, handed back the previous turn's
//     result (the agent is done with it once the model has answered), so
//     the kept messages are not copied again;
//   - watch: Prepare with WithWatch, which reads the watched copy instead
//     of the store.
//
// latest-splice, prepare and prepare-into also time a raw read of the
// same bytes in the same loop, before the call on even iterations and
// after it on odd ones, and report its p50 (get-p50-ns) and the ratio of
// the two p50s (x-get): the goal compares them, and on a shared machine
// the load moves between two sub-benchmarks more than the cost does.
func BenchmarkLatestSplice(b *testing.B) {
	h := historyOf(b, 1000)
	at := 800
	for h[at].Role == briefd.RoleTool {
		at++
	}
	if err := briefd.Validate(h, briefd.Limits{}); err != nil {
		b.Fatal(err)
	}
	brief := &briefd.Briefing{Tenant: client.DefaultTenant, ConversationID: "conv", BoundaryID: h[at].ID,
		Position: int64(at), Text: briefText, Tier: briefd.TierDeterministic}

	stores := []struct {
		name string
		make func(b *testing.B, srv *natstest.Server) (putter, []client.Option, rawGet)
	}{
		{"kv", kvStore},
		{"redis", redisStore},
	}
	for _, st := range stores {
		for _, mode := range []string{"get", "latest-splice", "prepare", "prepare-into", "watch"} {
			b.Run(st.name+"/"+mode, func(b *testing.B) {
				srv := natstest.Start(b)
				nc, _ := srv.Connect(b)
				store, opts, get := st.make(b, srv)
				if _, err := store.Put(b.Context(), brief); err != nil {
					b.Fatal(err)
				}
				if mode == "watch" {
					opts = append(opts, client.WithWatch())
				}
				c := newClient(b, nc, opts...)
				ctx := b.Context()
				// Warm up: the watch delivers the briefing; Prepare has
				// seen the history.
				deadline := time.Now().Add(10 * time.Second)
				for {
					_, got, err := c.Prepare(ctx, "conv", h)
					if err != nil {
						b.Fatal(err)
					}
					if got != nil {
						break
					}
					if time.Now().After(deadline) {
						b.Fatal("no briefing within 10s")
					}
					time.Sleep(time.Millisecond) // polling external state
				}
				raw, err := get(ctx)
				if err != nil {
					b.Fatal(err)
				}
				// h grows by a turn per iteration, as an agent's history
				// does between two Prepares; a fresh conversation every
				// turnsPerConversation turns keeps it near 1000 messages.
				var hist, prev []briefd.Message
				var lats, getLats []time.Duration
				paired := mode == "latest-splice" || mode == "prepare" || mode == "prepare-into"
				timedGet := func() {
					t0 := time.Now()
					data, err := get(ctx)
					getLats = append(getLats, time.Since(t0))
					if err != nil || len(data) != len(raw) {
						b.Fatalf("read %d bytes, want %d: %v", len(data), len(raw), err)
					}
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if i%turnsPerConversation == 0 {
						b.StopTimer()
						// Room to grow, as an agent's slice has between
						// two reallocations by append.
						hist = append(make([]briefd.Message, 0, len(h)+2*turnsPerConversation), h...)
						if _, _, err := c.Prepare(ctx, "conv", hist); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					hist = append(hist, turn(i)...)
					if paired && i%2 == 0 {
						timedGet()
					}
					t0 := time.Now()
					var out []briefd.Message
					var err error
					switch mode {
					case "get":
						var data []byte
						data, err = get(ctx)
						if len(data) != len(raw) {
							b.Fatalf("read %d bytes, want %d", len(data), len(raw))
						}
						out = hist[:1]
					case "latest-splice":
						var lb *briefd.Briefing
						if lb, err = c.Latest(ctx, "conv"); err == nil {
							out, err = client.Splice(hist, lb)
						}
					case "prepare-into":
						out, _, err = c.PrepareInto(ctx, prev, "conv", hist)
						prev = out
					default:
						out, _, err = c.Prepare(ctx, "conv", hist)
					}
					lats = append(lats, time.Since(t0))
					if err != nil || len(out) >= len(hist) {
						b.Fatalf("splice: %v (%d messages)", err, len(out))
					}
					if paired && i%2 == 1 {
						timedGet()
					}
				}
				p50 := report(b, lats)
				if paired {
					g := float64(quantile(getLats, 0.50).Nanoseconds())
					b.ReportMetric(g, "get-p50-ns")
					b.ReportMetric(p50/g, "x-get")
				}
				b.ReportMetric(float64(len(raw)), "briefing-bytes")
			})
		}
	}
}

// putter is the store method the benchmarks use to plant a briefing.
type putter interface {
	Put(ctx context.Context, b *briefd.Briefing) (bool, error)
}

// rawGet reads the bytes of the conversation's latest briefing without the
// client: one store round trip.
type rawGet func(ctx context.Context) ([]byte, error)

func kvStore(b *testing.B, srv *natstest.Server) (putter, []client.Option, rawGet) {
	_, js := srv.Connect(b)
	s, err := cache.NewKVStore(b.Context(), js, cache.KVConfig{})
	if err != nil {
		b.Fatal(err)
	}
	var (
		key string
		kv  jetstream.KeyValue
	)
	get := func(ctx context.Context) ([]byte, error) {
		if kv == nil {
			if kv, err = js.KeyValue(ctx, "briefd_briefings"); err != nil {
				return nil, err
			}
		}
		if key == "" {
			keys, err := kv.Keys(ctx)
			if err != nil {
				return nil, err
			}
			for _, k := range keys {
				if strings.HasSuffix(k, ".latest") {
					key = k
				}
			}
		}
		e, err := kv.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		return e.Value(), nil
	}
	return s, []client.Option{client.WithKV()}, get
}

func redisStore(b *testing.B, _ *natstest.Server) (putter, []client.Option, rawGet) {
	rdb := redistest.Start(b).Client(b)
	var key string
	get := func(ctx context.Context) ([]byte, error) {
		if key == "" {
			keys, err := rdb.Keys(ctx, "*:latest").Result()
			if err != nil || len(keys) != 1 {
				return nil, fmt.Errorf("latest keys %v: %v", keys, err)
			}
			key = keys[0]
		}
		return rdb.HGet(ctx, key, "briefing").Bytes()
	}
	return cache.NewRedisStore(rdb, cache.RedisConfig{}), []client.Option{client.WithRedis(rdb)}, get
}

// briefText is a briefing of a realistic size (about 6 KB).
var briefText = func() string {
	s := "## User messages (verbatim, oldest first)\n[m0004] Fix the nested parser bug.\n## Identifiers\n"
	for i := range 120 {
		s += fmt.Sprintf("m%04d: parser/nested_%d.go, TestNested%d, 0x%x\n", i, i, i, i*7919)
	}
	return s
}()
