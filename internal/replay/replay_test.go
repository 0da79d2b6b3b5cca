package replay_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/replay"
	"github.com/briefd/briefd/internal/worker"
)

// fixture runs the demo's traffic against a worker: the example histories
// published turn by turn with a 10k window, every snapshot handled.
type fixture struct {
	js    jetstream.JetStream
	store *cache.KVStore
	convs []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	store, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, store, worker.Config{Engine: compact.Config{ContextWindow: 10000}, Logger: slog.New(slog.DiscardHandler)})
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
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	pub := queue.NewPublisher(js, queue.Config{})
	f := &fixture{js: js, store: store}
	for _, h := range hs {
		conv := strings.ReplaceAll(h.ID, ".", "-")
		f.convs = append(f.convs, conv)
		for k := 1; k <= len(h.Messages); k++ {
			if k < len(h.Messages) && h.Messages[k].Role != briefd.RoleAssistant {
				continue
			}
			if _, err := pub.Publish(t.Context(), "demo", conv, h.Messages[:k], queue.WithContextWindow(10000)); err != nil {
				t.Fatal(err)
			}
			// Like an agent between turns: the worker keeps up, so the
			// stream records compactions at several turns.
			time.Sleep(2 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := js.Consumer(t.Context(), "BRIEFD_SNAPSHOTS", "briefd-workers")
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not finish: %+v", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f
}

func TestRunAndHTMLReport(t *testing.T) {
	f := newFixture(t)
	var calls int
	rep, err := replay.Run(t.Context(), f.js, f.store, replay.Config{Progress: func(done, total int) {
		calls++
		if done > total {
			t.Errorf("progress %d of %d", done, total)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s.Conversations != 3 || s.Compactions < 3 || s.Rerun != s.Compactions || s.Missing != 0 || calls != s.Compactions {
		t.Fatalf("summary %+v (progress calls %d)", s, calls)
	}
	// Today's engine re-runs its own compactions: same input, same
	// boundary, the same text.
	if s.SameBoundary != s.Compactions || s.SameInput != s.Compactions {
		t.Errorf("same boundary %d, same input %d of %d", s.SameBoundary, s.SameInput, s.Compactions)
	}
	withFuture := 0
	for _, c := range rep.Conversations {
		if len(c.Turns) == 0 || len(c.Compactions) == 0 {
			t.Errorf("%s: %d turns, %d compactions", c.Key(), len(c.Turns), len(c.Compactions))
		}
		for _, cp := range c.Compactions {
			if cp.Turn < 0 || cp.LatencyMS <= 0 || cp.Diff == nil || cp.Diff.Added+cp.Diff.Removed != 0 {
				t.Errorf("%s@%d: turn %d latency %v diff %+v", c.Key(), cp.SnapshotSeq, cp.Turn, cp.LatencyMS, cp.Diff)
			}
			if cp.Needed != nil {
				withFuture++
				if cp.Stored.Recall != cp.Replayed.Recall && len(cp.Needed) > 0 {
					t.Errorf("%s@%d: recall %v stored, %v re-run", c.Key(), cp.SnapshotSeq, cp.Stored.Recall, cp.Replayed.Recall)
				}
			}
		}
	}
	if withFuture == 0 || s.Stored.RecallN == 0 {
		t.Errorf("no compaction had a future in the stream (recall over %d)", s.Stored.RecallN)
	}
	if rep.Shown == "" || len(s.LatencyMS) != s.Compactions {
		t.Errorf("shown %q, %d latencies", rep.Shown, len(s.LatencyMS))
	}

	var buf bytes.Buffer
	if err := replay.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes(), rep)

	// A filter by conversation, and a time range after everything.
	one, err := replay.Run(t.Context(), f.js, f.store, replay.Config{Filter: replay.Filter{Tenant: "demo", ConversationID: f.convs[0]}})
	if err != nil || one.Summary.Conversations != 1 {
		t.Fatalf("one conversation: %+v, %v", one.Summary, err)
	}
	none, err := replay.Run(t.Context(), f.js, f.store, replay.Config{Filter: replay.Filter{Since: time.Now().Add(time.Hour)}})
	if err != nil || none.Summary.Conversations != 0 {
		t.Fatalf("the future: %+v, %v", none.Summary, err)
	}
	buf.Reset()
	if err := replay.WriteHTML(&buf, none); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes(), none)
}

// checkHTML checks the report's structure: well-formed markup, every
// section with its plot, the shown conversation side by side, and nothing
// that a browser would fetch from the network.
func checkHTML(t *testing.T, page []byte, rep *replay.Report) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	var stack []string
	sections := map[string]int{} // section id -> svg count
	section := ""
	texts := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the report is not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			stack = append(stack, el.Name.Local)
			for _, a := range el.Attr {
				if (a.Name.Local == "src" || a.Name.Local == "href") && a.Value != "" {
					t.Errorf("<%s %s=%q>: the report must not load anything", el.Name.Local, a.Name.Local, a.Value)
				}
				if el.Name.Local == "section" && a.Name.Local == "id" {
					section = a.Value
					sections[section] += 0
				}
			}
			switch el.Name.Local {
			case "script", "link", "iframe", "img", "object":
				t.Errorf("<%s> in a self-contained report", el.Name.Local)
			case "svg":
				sections[section]++
			case "pre":
				texts++
			}
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "style" && regexp.MustCompile(`(?i)url\(|@import`).Match(el) {
				t.Error("the report's style loads something")
			}
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != el.Name.Local {
				t.Fatalf("</%s> closes %v", el.Name.Local, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
	plots := map[string]int{"tokens-over-turns": rep.Summary.Conversations, "tokens-saved": 1, "tiers": 1, "gate": 1, "latency": 1}
	for id, n := range plots {
		if sections[id] != n {
			t.Errorf("section %s has %d plots, want %d", id, sections[id], n)
		}
	}
	for _, id := range []string{"summary", "before-after", "compactions"} {
		if _, ok := sections[id]; !ok {
			t.Errorf("no section %s", id)
		}
	}
	if rep.Shown != "" && texts < 2 {
		t.Errorf("before/after shows %d briefings, want both sides", texts)
	}
}

// The audit events name the conversations; a filter by tenant keeps
// another tenant's out.
func TestRunTenantFilter(t *testing.T) {
	f := newFixture(t)
	rep, err := replay.Run(t.Context(), f.js, f.store, replay.Config{Filter: replay.Filter{Tenant: "other"}})
	if err != nil || rep.Summary.Conversations != 0 {
		t.Fatalf("another tenant: %+v, %v", rep.Summary, err)
	}
	evs, err := audit.Read(t.Context(), f.js, audit.Config{}, audit.Filter{Tenant: "demo", Types: []audit.Type{audit.TypeCompacted}})
	if err != nil || len(evs) == 0 {
		t.Fatalf("audit: %d events, %v", len(evs), err)
	}
}
