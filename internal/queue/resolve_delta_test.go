package queue_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/queue"
	"github.com/nats-io/nats.go/jetstream"
)

// deltaRig publishes bodies and manifests by hand, so a test controls
// every base, keep and append.
type deltaRig struct {
	t      *testing.T
	b      *bundle
	res    *queue.Resolver
	msgs   map[string]briefd.Message
	bodies map[string]string // hash by message id
	seqs   map[uint64]uint64 // stream seq by snapshot seq
}

func newDeltaRig(t *testing.T, mutate func(*queue.Config)) *deltaRig {
	b := setup(t)
	// No body cache: a body the resolver needs again comes from the
	// stream, so removing it there shows whether it is needed.
	b.cfg.BodyCacheBytes = 1
	if mutate != nil {
		mutate(&b.cfg)
	}
	return &deltaRig{t: t, b: b, res: queue.NewResolver(b.js, b.cfg), msgs: map[string]briefd.Message{},
		bodies: map[string]string{}, seqs: map[uint64]uint64{}}
}

// body stores the body of a user message with id and returns its entry.
func (r *deltaRig) body(id string) queue.Entry {
	r.t.Helper()
	if h, ok := r.bodies[id]; ok {
		return queue.Entry{ID: id, Hash: h}
	}
	m := briefd.Message{ID: id, Role: briefd.RoleUser, Content: briefd.Text("message " + id + " of the conversation")}
	data := mustJSON(r.t, m)
	h := queue.BodyHash(data)
	if _, err := r.b.js.Publish(r.t.Context(), "briefd.body.acme.c1."+h, data); err != nil {
		r.t.Fatal(err)
	}
	r.msgs[id], r.bodies[id] = m, h
	return queue.Entry{ID: id, Hash: h}
}

func (r *deltaRig) entries(ids ...string) []queue.Entry {
	out := make([]queue.Entry, len(ids))
	for i, id := range ids {
		out[i] = r.body(id)
	}
	return out
}

// snapshot stores manifest seq (a delta on base when base > 0) and
// returns its stream sequence.
func (r *deltaRig) snapshot(seq, base uint64, keep int, ids ...string) uint64 {
	r.t.Helper()
	m := queue.Manifest{V: queue.Version, Tenant: "acme", ConversationID: "c1", Seq: seq, Base: base,
		BaseStreamSeq: r.seqs[base], Keep: keep, Append: r.entries(ids...), CreatedAt: time.Now()}
	ack, err := r.b.js.Publish(r.t.Context(), "briefd.snap.acme.c1", mustJSON(r.t, m))
	if err != nil {
		r.t.Fatal(err)
	}
	r.seqs[seq] = ack.Sequence
	return ack.Sequence
}

// resolve resolves snapshot seq and checks it names ids, in order, with
// their messages.
func (r *deltaRig) resolve(seq uint64, ids ...string) *queue.Snapshot {
	r.t.Helper()
	s, err := r.try(seq)
	if err != nil {
		r.t.Fatalf("snapshot %d: %v", seq, err)
	}
	want := make([]briefd.Message, len(ids))
	for i, id := range ids {
		want[i] = r.msgs[id]
		if s.Entries[i].ID != id {
			r.t.Fatalf("snapshot %d: entry %d is %s, want %s", seq, i, s.Entries[i].ID, id)
		}
	}
	assertMessages(r.t, s.Messages, want)
	return s
}

func (r *deltaRig) try(seq uint64) (*queue.Snapshot, error) {
	st, err := r.b.js.Stream(r.t.Context(), "BRIEFD_SNAPSHOTS")
	if err != nil {
		r.t.Fatal(err)
	}
	raw, err := st.GetMsg(r.t.Context(), r.seqs[seq])
	if err != nil {
		r.t.Fatal(err)
	}
	return r.res.Resolve(r.t.Context(), raw.Subject, raw.Sequence, raw.Data)
}

// drop removes the bodies of ids from the stream.
func (r *deltaRig) drop(ids ...string) {
	r.t.Helper()
	st, err := r.b.js.Stream(r.t.Context(), "BRIEFD_BODIES")
	if err != nil {
		r.t.Fatal(err)
	}
	for _, id := range ids {
		if err := st.Purge(r.t.Context(), jetstream.WithPurgeSubject("briefd.body.acme.c1."+r.bodies[id])); err != nil {
			r.t.Fatal(err)
		}
	}
}

// A snapshot that extends the conversation's last resolved list (a delta
// on it or on an earlier snapshot, or a full manifest repeating it)
// fetches and decodes only the messages it adds (issue 12): the bodies of
// the shared prefix may even be gone from the stream. Lists that diverge
// (an edit, an older snapshot delivered again) resolve right.
func TestResolveDecodesOnlyTheDelta(t *testing.T) {
	r := newDeltaRig(t, nil)
	r.snapshot(1, 0, 0, "m0", "m1", "m2", "m3", "m4")
	s1 := r.resolve(1, "m0", "m1", "m2", "m3", "m4")
	r.drop("m0", "m1", "m2")

	r.snapshot(2, 1, 5, "m5")
	s2 := r.resolve(2, "m0", "m1", "m2", "m3", "m4", "m5")
	// Snapshots share memory but not their ends: appending to an older
	// one leaves the newer one as it is.
	grown := append(s1.Messages, briefd.Message{ID: "x"})
	if s2.Messages[5].ID != "m5" || grown[5].ID != "x" {
		t.Fatalf("appending to snapshot 1 changed snapshot 2: %s", s2.Messages[5].ID)
	}

	// A full manifest that repeats the list, then adds to it.
	r.snapshot(3, 0, 0, "m0", "m1", "m2", "m3", "m4", "m5", "m6")
	r.resolve(3, "m0", "m1", "m2", "m3", "m4", "m5", "m6")
	// A chain of two deltas, the middle one never resolved (coalesced).
	r.snapshot(4, 3, 7, "m7")
	r.snapshot(5, 4, 8, "m8")
	r.resolve(5, "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")
	// Delivered again: the same list.
	r.resolve(2, "m0", "m1", "m2", "m3", "m4", "m5")
	r.resolve(5, "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")

	// An edit: the agent rewrote the history from the fourth message on.
	r.snapshot(6, 5, 3, "e3", "e4")
	r.resolve(6, "m0", "m1", "m2", "e3", "e4")
	// A delta on an older snapshot (its publisher had no ack for the
	// newer ones), whose own list is no longer cached.
	r.snapshot(7, 5, 9, "m9")
	r.resolve(7, "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9")
	r.snapshot(8, 6, 5, "e5")
	r.resolve(8, "m0", "m1", "m2", "e3", "e4", "e5")

	// What was dropped is still needed by a cold resolver: the error
	// names the body.
	r.res = queue.NewResolver(r.b.js, r.b.cfg)
	if _, err := r.try(8); !errors.Is(err, queue.ErrMalformed) {
		t.Fatalf("a cold resolver found the dropped bodies: %v", err)
	}
}

// The snapshot limits count the messages and bytes of the whole list,
// the shared prefix included, not only what a delta adds.
func TestResolveDeltaLimitsCountTheWholeList(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		size := len(mustJSON(t, briefd.Message{ID: "m0", Role: briefd.RoleUser, Content: briefd.Text("message m0 of the conversation")}))
		r := newDeltaRig(t, func(c *queue.Config) { c.MaxSnapshotBytes = 3*size + size/2 })
		r.snapshot(1, 0, 0, "m0", "m1", "m2")
		r.resolve(1, "m0", "m1", "m2")
		r.snapshot(2, 1, 3, "m3")
		if _, err := r.try(2); !errors.Is(err, queue.ErrMalformed) {
			t.Fatalf("a delta over the byte limit with its prefix: %v", err)
		}
	})
	t.Run("messages", func(t *testing.T) {
		r := newDeltaRig(t, func(c *queue.Config) { c.MaxMessages = 3 })
		r.snapshot(1, 0, 0, "m0", "m1", "m2")
		r.resolve(1, "m0", "m1", "m2")
		r.snapshot(2, 1, 3, "m3")
		if _, err := r.try(2); !errors.Is(err, queue.ErrMalformed) {
			t.Fatalf("a delta over the message limit with its prefix: %v", err)
		}
	})
}

// Deltas on one base resolved at once each get their own list (run with
// -race: the cached arrays grow in place under readers).
func TestResolveConcurrentDeltas(t *testing.T) {
	r := newDeltaRig(t, func(c *queue.Config) { c.BodyCacheBytes = 64 << 20 })
	var base []string
	for i := range 50 {
		base = append(base, fmt.Sprintf("m%d", i))
	}
	r.snapshot(1, 0, 0, base...)
	r.resolve(1, base...)
	const n = 16
	for k := range n {
		r.snapshot(uint64(k+2), 1, 50-k%3, fmt.Sprintf("x%d", k), fmt.Sprintf("y%d", k))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := r.try(uint64(k + 2))
			if err != nil {
				errs <- err
				return
			}
			want := append(base[:50-k%3:50-k%3], fmt.Sprintf("x%d", k), fmt.Sprintf("y%d", k))
			got := make([]string, len(s.Messages))
			for i := range s.Messages {
				got[i] = s.Messages[i].ID
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); string(g) != string(w) {
				errs <- fmt.Errorf("snapshot %d: %s, want %s", k+2, g, w)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
