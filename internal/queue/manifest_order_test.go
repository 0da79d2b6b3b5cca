package queue_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
)

// A manifest reaches the stream only once every body it names is stored,
// and manifests keep the order of their snapshots (issue 10, found by the
// nemesis run on a 3-node cluster: bodies and manifests have different
// stream leaders, so a manifest was stored while its body's publish
// failed, and workers dead-lettered it as malformed before the body's
// re-send arrived). Here the server holds one body's ack while two more
// snapshots are published: no manifest of the three may be stored until
// the body is.
func TestManifestWaitsForItsBodies(t *testing.T) {
	b := setup(t)
	fj := &faultJS{JetStream: b.js}
	cfg := b.cfg
	cfg.PublishRetryWait = 10 * time.Millisecond
	pub := queue.NewPublisher(fj, cfg)
	msgs := genHistory(8, 200)
	ends := turnEnds(msgs)
	first, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[0]])
	if err != nil {
		t.Fatal(err)
	}

	var held *heldFuture
	fj.setIntercept(func(m *nats.Msg) (jetstream.PubAckFuture, error, bool) {
		if held == nil && strings.HasPrefix(m.Subject, "briefd.body.") {
			held = newHeldFuture(m)
			return held, nil, true
		}
		return nil, nil, false
	})
	var pends []*queue.Pending
	for _, end := range ends[1:4] {
		p, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:end])
		if err != nil {
			t.Fatal(err)
		}
		pends = append(pends, p)
	}
	fj.setIntercept(nil)
	if held == nil {
		t.Fatal("no body held")
	}
	snaps, err := b.js.Stream(t.Context(), "BRIEFD_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // what was sent has landed
	last, err := snaps.GetLastMsgForSubject(t.Context(), "briefd.snap.acme.c1")
	if err != nil {
		t.Fatal(err)
	}
	if last.Sequence != first.StreamSeq {
		t.Fatalf("a manifest was stored (stream seq %d) while a body it names was not", last.Sequence)
	}

	held.err <- jetstream.ErrAsyncPublishTimeout // the ack is lost: the body goes again
	var seqs []uint64
	for _, r := range waitAll(t, pends) {
		seqs = append(seqs, r.Seq)
	}
	assertResolves(t, b, seqs, [][]briefd.Message{msgs[:ends[1]], msgs[:ends[2]], msgs[:ends[3]]})

	// In the stream, the manifests are in the order of their snapshots.
	var prev uint64
	for seq := first.StreamSeq; ; seq++ {
		m, err := snaps.GetMsg(t.Context(), seq, jetstream.WithGetMsgSubject("briefd.snap.acme.c1"))
		if err != nil {
			break
		}
		var man queue.Manifest
		if err := json.Unmarshal(m.Data, &man); err != nil {
			t.Fatal(err)
		}
		if man.Seq <= prev {
			t.Fatalf("manifest of snapshot %d stored after that of %d", man.Seq, prev)
		}
		prev, seq = man.Seq, m.Sequence
	}
	if prev != seqs[len(seqs)-1] {
		t.Fatalf("newest manifest in the stream is %d, want %d", prev, seqs[len(seqs)-1])
	}
}

// The conversation's newest snapshot outlasts an outage longer than the
// quick re-sends (a leader election, a restart): it keeps being re-sent,
// with the bodies an earlier snapshot gave up on, until it is stored. The
// nemesis run on a 3-node cluster lost the last state of conversations
// whose last snapshot's bodies failed three times within two seconds.
func TestNewestOutlastsAnOutage(t *testing.T) {
	b := setup(t)
	fj := &faultJS{JetStream: b.js}
	cfg := b.cfg
	cfg.PublishRetryWait = 10 * time.Millisecond // three quick re-sends: ~70 ms
	pub := queue.NewPublisher(fj, cfg)
	msgs := genHistory(6, 200)
	ends := turnEnds(msgs)
	if _, err := pub.Publish(t.Context(), "acme", "c1", msgs[:ends[0]]); err != nil {
		t.Fatal(err)
	}
	outage := time.Now().Add(time.Second)
	fj.setIntercept(func(m *nats.Msg) (jetstream.PubAckFuture, error, bool) {
		if time.Now().After(outage) || !strings.HasPrefix(m.Subject, "briefd.body.") {
			return nil, nil, false
		}
		f := newHeldFuture(m)
		f.err <- jetstream.ErrNoStreamResponse // the stream has no leader: nats.go says "no response from stream"
		return f, nil, true
	})
	older, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:ends[1]])
	if err != nil {
		t.Fatal(err)
	}
	newest, err := pub.PublishAsync(t.Context(), "acme", "c1", msgs[:ends[2]])
	if err != nil {
		t.Fatal(err)
	}
	r := waitAll(t, []*queue.Pending{newest})[0]
	if time.Now().Before(outage) {
		t.Fatal("stored during the outage")
	}
	assertResolves(t, b, []uint64{r.Seq}, [][]briefd.Message{msgs[:ends[2]]})
	// The older one gave up, as superseded: the newest carries it.
	if _, err := older.Wait(t.Context()); !errors.Is(err, queue.ErrSuperseded) {
		t.Fatalf("older snapshot: %v, want ErrSuperseded", err)
	}
}
