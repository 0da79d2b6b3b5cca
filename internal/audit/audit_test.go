package audit_test

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

type testBundle struct {
	js  jetstream.JetStream
	cfg audit.Config
	pub *audit.Publisher
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	_, js := natstest.Start(t).Connect(t)
	cfg := audit.Config{}
	if err := audit.EnsureStream(t.Context(), js, cfg); err != nil {
		t.Fatal(err)
	}
	return &testBundle{js: js, cfg: cfg, pub: audit.NewPublisher(js, cfg)}
}

func (tb *testBundle) publish(t *testing.T, evs ...audit.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := tb.pub.Publish(t.Context(), ev); err != nil {
			t.Fatalf("Publish(%s): %v", ev.Type, err)
		}
	}
}

func (tb *testBundle) read(t *testing.T, f audit.Filter) []audit.Event {
	t.Helper()
	evs, err := audit.Read(t.Context(), tb.js, tb.cfg, f)
	if err != nil {
		t.Fatalf("Read(%+v): %v", f, err)
	}
	return evs
}

func TestEnsureStream(t *testing.T) {
	tb := setup(t)
	ctx := t.Context()
	// Idempotent, and applies a changed configuration.
	if err := audit.EnsureStream(ctx, tb.js, audit.Config{MaxAge: time.Hour}); err != nil {
		t.Fatalf("second EnsureStream: %v", err)
	}
	st, err := tb.js.Stream(ctx, audit.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	c := st.CachedInfo().Config
	if c.Retention != jetstream.LimitsPolicy || c.MaxAge != time.Hour || c.Storage != jetstream.FileStorage ||
		!reflect.DeepEqual(c.Subjects, []string{"briefd.audit.>"}) || c.Duplicates != audit.DefaultDuplicatesWindow {
		t.Fatalf("stream config = %+v", c)
	}
}

func TestPublishRead(t *testing.T) {
	tb := setup(t)
	b := &briefd.Briefing{
		ConversationID: "c.1 ünï", Tenant: "acme", BoundaryID: "m9", Position: 8, Text: "héllo",
		Tier: "llm:normal", Model: "m", PromptVersion: "p1", EngineVersion: "0.1", InputHash: "ab",
		Depth: 1, TokensBefore: 1000, TokensAfter: 400, BriefingTokens: 50,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	compacted := audit.Compacted(b)
	compacted.SnapshotSeq, compacted.Attempt, compacted.MessagesBefore, compacted.MessagesAfter = 7, 1, 20, 12
	compacted.DurationMS, compacted.SummarizerAttempts = 12.5, 2
	at := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	skipped := audit.Event{Type: audit.TypeSkipped, Time: at, Tenant: "acme", ConversationID: "c.1 ünï", SnapshotSeq: 8, Attempt: 1, Reason: audit.SkipBelowTrigger}
	rejected := audit.Event{Type: audit.TypeRejected, Time: at, Tenant: "acme", ConversationID: "other", SnapshotSeq: 9, Reason: "unpaired_tool_call", MessageID: "m3", Error: "tool call t1 has no result"}
	dead := audit.Event{Type: audit.TypeDeadLettered, Time: at, ConversationID: "c.1 ünï", SnapshotSeq: 10, Reason: "redis unavailable", Deliveries: 5}
	tb.publish(t, compacted, skipped, rejected, dead)

	tests := []struct {
		name   string
		filter audit.Filter
		want   []audit.Event
	}{
		{"all", audit.Filter{}, []audit.Event{compacted, skipped, rejected, dead}},
		{"one conversation", audit.Filter{Tenant: "acme", ConversationID: "c.1 ünï"}, []audit.Event{compacted, skipped}},
		{"tenant matters", audit.Filter{ConversationID: "c.1 ünï"}, []audit.Event{dead}},
		{"one tenant", audit.Filter{Tenant: "acme"}, []audit.Event{compacted, skipped, rejected}},
		{"by type", audit.Filter{Types: []audit.Type{audit.TypeRejected, audit.TypeDeadLettered}}, []audit.Event{rejected, dead}},
		{"conversation and type", audit.Filter{Tenant: "acme", ConversationID: "c.1 ünï", Types: []audit.Type{audit.TypeCompacted}}, []audit.Event{compacted}},
		{"nothing", audit.Filter{Tenant: "acme", ConversationID: "none"}, nil},
		{"since the future", audit.Filter{Since: time.Now().Add(time.Hour)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tb.read(t, tt.filter); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Read =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestPublishDedupe(t *testing.T) {
	tb := setup(t)
	ev := audit.Event{Type: audit.TypeCompacted, Tenant: "t", ConversationID: "c", SnapshotSeq: 3, Attempt: 1, BoundaryID: "m2"}
	tb.publish(t, ev, ev) // a worker retrying after a lost ack
	ev.Attempt = 2        // a redelivery compacts anew: a new event
	tb.publish(t, ev)
	noID := audit.Event{Type: audit.TypeSkipped, ConversationID: "c", Reason: audit.SkipSuperseded}
	tb.publish(t, noID, noID) // no snapshot, no natural id: both kept
	evs := tb.read(t, audit.Filter{Tenant: "t", ConversationID: "c"})
	if len(evs) != 2 || evs[0].Attempt != 1 || evs[1].Attempt != 2 {
		t.Fatalf("events = %+v, want attempts 1 and 2 once each", evs)
	}
	if evs := tb.read(t, audit.Filter{ConversationID: "c"}); len(evs) != 2 {
		t.Fatalf("events without id = %d, want 2", len(evs))
	}
	if evs[0].Time.IsZero() {
		t.Fatal("Publish did not set Time")
	}
}

func TestPublishErrors(t *testing.T) {
	tb := setup(t)
	ctx := t.Context()
	for name, ev := range map[string]audit.Event{
		"unknown type":    {Type: "EXPLODED", ConversationID: "c"},
		"no conversation": {Type: audit.TypeSkipped},
	} {
		if err := tb.pub.Publish(ctx, ev); err == nil {
			t.Errorf("Publish(%s) succeeded", name)
		}
	}
	noStream := audit.NewPublisher(tb.js, audit.Config{Prefix: "elsewhere", Stream: "NONE"})
	if err := noStream.Publish(ctx, audit.Event{Type: audit.TypeSkipped, ConversationID: "c"}); err == nil {
		t.Error("Publish without a stream succeeded")
	}
	if _, err := audit.Read(ctx, tb.js, audit.Config{Stream: "NONE"}, audit.Filter{}); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("Read of a missing stream = %v, want ErrStreamNotFound", err)
	}
}

func TestScanStop(t *testing.T) {
	tb := setup(t)
	for range 5 {
		tb.publish(t, audit.Event{Type: audit.TypeSkipped, ConversationID: "c", Reason: audit.SkipBelowTrigger})
	}
	n := 0
	err := audit.Scan(t.Context(), tb.js, tb.cfg, audit.Filter{}, func(audit.Event) error {
		if n++; n == 2 {
			return audit.ErrStop
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("Scan = %v after %d events, want nil after 2", err, n)
	}
}

func TestSubject(t *testing.T) {
	tests := []struct {
		ev   audit.Event
		want string
	}{
		{audit.Event{Type: audit.TypeCompacted, Tenant: "acme", ConversationID: "c-42"}, "briefd.audit.history_compacted.acme.c-42"},
		{audit.Event{Type: audit.TypeDeadLettered, ConversationID: "a.b"}, "briefd.audit.dead_lettered.~.~YS5i"},
	}
	for _, tt := range tests {
		if got := (audit.Config{}).Subject(tt.ev); got != tt.want {
			t.Errorf("Subject(%+v) = %q, want %q", tt.ev, got, tt.want)
		}
	}
}

func TestMsgID(t *testing.T) {
	tests := []struct {
		ev   audit.Event
		want string
	}{
		{audit.Event{Type: audit.TypeCompacted, Tenant: "acme", ConversationID: "c-42", SnapshotSeq: 17, Attempt: 1}, "compacted:acme.c-42.17.1"},
		{audit.Event{Type: audit.TypeSkipped, ConversationID: "c", SnapshotSeq: 2, Attempt: 3}, "skipped:~.c.2.3"},
		{audit.Event{Type: audit.TypeRejected, Tenant: "t", ConversationID: "c", SnapshotSeq: 2, Attempt: 3}, "rejected:t.c.2"},
		{audit.Event{Type: audit.TypeDeadLettered, Tenant: "t", ConversationID: "c", SnapshotSeq: 2}, "dead_lettered:t.c.2"},
		{audit.Event{Type: audit.TypeCompacted, ConversationID: "c"}, ""},
	}
	for _, tt := range tests {
		if got := audit.MsgID(tt.ev); got != tt.want {
			t.Errorf("MsgID(%+v) = %q, want %q", tt.ev, got, tt.want)
		}
	}
}

func TestCompacted(t *testing.T) {
	b := &briefd.Briefing{ConversationID: "c", Text: "ünï", TokensBefore: 10, TokensAfter: 4, Tier: briefd.TierDeterministic}
	ev := audit.Compacted(b)
	if ev.Type != audit.TypeCompacted || ev.TokensSaved != 6 || ev.BriefingChars != 3 || ev.Tier != briefd.TierDeterministic {
		t.Fatalf("Compacted = %+v", ev)
	}
}

func FuzzSubjectToken(f *testing.F) {
	for _, s := range []string{"", "~", "acme", "a.b", "a b", "*", ">", "ünï", "c-42_x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		tok := audit.SubjectToken(id)
		if tok == "" || strings.ContainsAny(tok, ". \t\r\n*>") {
			t.Fatalf("SubjectToken(%q) = %q is not a valid token", id, tok)
		}
		// Injective: decoding gives the id back.
		got := tok
		if strings.HasPrefix(tok, "~") {
			raw, err := base64.RawURLEncoding.DecodeString(tok[1:])
			if err != nil {
				t.Fatalf("SubjectToken(%q) = %q does not decode: %v", id, tok, err)
			}
			got = string(raw)
		}
		if got != id {
			t.Fatalf("SubjectToken(%q) = %q decodes to %q", id, tok, got)
		}
	})
}
