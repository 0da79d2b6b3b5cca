package queue_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
)

// logBuffer is a logger whose output a test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// latest resolves the conversation's newest snapshot.
func latest(t *testing.T, b *bundle, conv string) []briefd.Message {
	t.Helper()
	s, err := queue.LoadSnapshot(t.Context(), b.js, b.cfg, "acme", conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s.Messages
}

// An agent's slice grown by append is published at the cost of its new
// messages (issue 12); what is not an append on that slice (a truncation
// followed by appends, an edit published before appending, an edited
// copy) is found at once; an edit in place followed by an append is found
// by the rotating check, with a warning.
func TestPublishGrownSlice(t *testing.T) {
	b := setup(t)
	var logs logBuffer
	b.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	pub := queue.NewPublisher(b.js, b.cfg)
	ctx := t.Context()
	gen := genHistory(60, 40)
	h := make([]briefd.Message, 0, 1024) // room: every append keeps the array
	h = append(h, gen[:20]...)
	publish := func(msgs []briefd.Message) queue.PublishResult {
		t.Helper()
		r, err := pub.Publish(ctx, "acme", "c1", msgs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	publish(h)
	for i := 20; i < 40; i += 2 {
		h = append(h, gen[i:i+2]...)
		if r := publish(h); r.Bodies != 2 {
			t.Fatalf("a turn of 2 new messages sent %d bodies", r.Bodies)
		}
		assertMessages(t, latest(t, b, "c1"), h)
	}

	// Undo the last turn and take another: the same array, rewritten.
	h = append(h[:len(h)-2], briefd.Message{ID: "u1", Role: briefd.RoleUser, Content: briefd.Text("no, do it differently")})
	h = append(h, briefd.Message{ID: "a-new", Role: briefd.RoleAssistant, Content: briefd.Text("ok")})
	h = append(h, briefd.Message{ID: "u2", Role: briefd.RoleUser, Content: briefd.Text("go on")})
	publish(h)
	assertMessages(t, latest(t, b, "c1"), h)

	// An edit in place published before anything is appended.
	h[5].Content = briefd.Text("edited in place, then published")
	if r := publish(h); r.Duplicate {
		t.Fatal("an edit in place of the slice published last was taken for no change")
	}
	assertMessages(t, latest(t, b, "c1"), h)

	// An edit of a copy.
	c := append([]briefd.Message(nil), h...)
	c[7].Content = briefd.Text("edited in a copy")
	publish(c)
	assertMessages(t, latest(t, b, "c1"), c)

	// An edit in place followed by appends, on the slice published last:
	// found within one round of the check.
	h = append(make([]briefd.Message, 0, 2*len(c)), c...) // room to grow
	publish(h)
	h = append(h, briefd.Message{ID: "grown", Role: briefd.RoleUser, Content: briefd.Text("grown")})
	publish(h)
	h[9].Content = briefd.Text("edited in place, then appended to")
	found := false
	for turn := 0; turn <= len(h)/16+1 && !found; turn++ {
		h = append(h, briefd.Message{ID: "more" + string(rune('a'+turn)), Role: briefd.RoleUser, Content: briefd.Text("more")})
		publish(h)
		found = latest(t, b, "c1")[9].Content.Text == h[9].Content.Text
	}
	if !found {
		t.Fatal("an edit in place followed by appends was never found")
	}
	assertMessages(t, latest(t, b, "c1"), h)
	if !strings.Contains(logs.String(), "changed in place") {
		t.Fatalf("no warning about the edit in place; logs:\n%s", logs.String())
	}
}

// Full manifests are written and sent after PublishAsync returns, yet
// before anything newer of the conversation: snapshots are stored in the
// order they were published, each resolvable.
func TestDeferredFullManifestsKeepOrder(t *testing.T) {
	b := setup(t)
	b.cfg.FullEvery = 1 // a full manifest as often as the byte rule allows
	pub := queue.NewPublisher(b.js, b.cfg)
	ctx := t.Context()
	gen := genHistory(80, 30)
	var pends []*queue.Pending
	fulls := 0
	for end := 4; end <= len(gen); end += 2 {
		p, err := pub.PublishAsync(ctx, "acme", "c1", gen[:end])
		if err != nil {
			t.Fatal(err)
		}
		pends = append(pends, p)
	}
	var last queue.PublishResult
	for _, p := range pends {
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Full {
			fulls++
		}
		last = r
	}
	if fulls < 3 {
		t.Fatalf("only %d full manifests", fulls)
	}
	st, err := b.js.Stream(ctx, "BRIEFD_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	res := queue.NewResolver(b.js, b.cfg)
	var prev uint64
	for seq := uint64(1); ; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if err != nil {
			break
		}
		var m queue.Manifest
		if err := json.Unmarshal(raw.Data, &m); err != nil {
			t.Fatal(err)
		}
		if m.Seq <= prev {
			t.Fatalf("snapshot %d stored after snapshot %d", m.Seq, prev)
		}
		prev = m.Seq
		if _, err := res.Resolve(ctx, raw.Subject, raw.Sequence, raw.Data); err != nil {
			t.Fatalf("snapshot %d: %v", m.Seq, err)
		}
	}
	if prev != last.Seq {
		t.Fatalf("the stream ends with snapshot %d, the last published is %d", prev, last.Seq)
	}
	assertMessages(t, latest(t, b, "c1"), gen)
}
