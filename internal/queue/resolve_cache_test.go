package queue

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// The resolver's cache of lists is bounded by bytes (issue 10, D3): 300
// snapshots of one 10,300-message conversation, each a delta on the one
// before, grew the heap by 85.7 MiB at 8a1d3ba (one cached list of 10,300
// entries per snapshot, up to 1,024 lists: ~300 MiB per long
// conversation). Now a conversation's snapshots share one list, grown in
// place with the messages each adds (issue 12), so the heap grows by about
// one list and never past the cache's budget, and a chain resolved cold
// builds one list, not one per link.
func TestResolverListCacheBoundedByBytes(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	cfg := Config{}.WithDefaults()
	if err := EnsureStreams(t.Context(), js, cfg); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	subject := cfg.subjects().Snapshot("acme", "long")
	const first, deltas = 10300, 300
	// The bodies are stored, as a publisher would: each snapshot is
	// resolved with its messages.
	var bodies []jetstream.PubAckFuture
	entry := func(i int) Entry {
		body := fmt.Appendf(nil, `{"id":"m%05d","role":"user","content":"body %d"}`, i, i)
		e := Entry{ID: fmt.Sprintf("m%05d", i), Hash: BodyHash(body)}
		f, err := js.PublishAsync(cfg.subjects().Body("acme", "long", e.Hash), body)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, f)
		return e
	}
	type snap struct {
		seq uint64
		man *Manifest
	}
	var snaps []snap
	publish := func(m Manifest) uint64 {
		m.V, m.Tenant, m.ConversationID, m.CreatedAt = Version, "acme", "long", time.Now()
		data, _ := json.Marshal(m)
		ack, err := js.Publish(ctx, subject, data)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap{ack.Sequence, &m})
		return ack.Sequence
	}
	full := make([]Entry, first)
	for i := range full {
		full[i] = entry(i)
	}
	base := publish(Manifest{Seq: 1, Append: full})
	for i := range deltas {
		base = publish(Manifest{Seq: uint64(i + 2), Base: uint64(i + 1), BaseStreamSeq: base, Keep: first + i, Append: []Entry{entry(first + i)}})
	}

	// The same list again as one full manifest: resolved cold, it fetches
	// the same bodies as the chain, so it measures what the chain adds.
	last := slices.Clone(full)
	for i := range deltas {
		last = append(last, snaps[i+1].man.Append...)
	}
	publish(Manifest{Seq: deltas + 2, Append: last})
	whole := snaps[len(snaps)-1]
	snaps = snaps[:len(snaps)-1]

	for _, f := range bodies {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		}
	}

	r := NewResolver(js, cfg)
	resolve := func(r *Resolver, s snap) {
		t.Helper()
		data, _ := json.Marshal(s.man)
		snap, err := r.Resolve(ctx, subject, s.seq, data)
		if err != nil {
			t.Fatal(err)
		}
		l, last := snap.Entries, s.man.Append[len(s.man.Append)-1]
		if want := s.man.Keep + len(s.man.Append); len(l) != want || l[len(l)-1] != last || snap.Messages[len(l)-1].ID != last.ID {
			t.Fatalf("snapshot %d resolves to %d entries, want %d", s.man.Seq, len(l), want)
		}
	}
	resolve(r, snaps[0])
	before := liveHeap()
	for _, s := range snaps[1:] {
		resolve(r, s)
	}
	grew := int64(liveHeap()) - int64(before)
	runtime.KeepAlive(r)
	l, _ := r.lists.get(subject)
	one := l.cost.Load()
	t.Logf("%d snapshots of %d-%d messages: heap grew %.1f MiB (budget %d MiB; the list costs %.1f MiB), %d lists cached",
		deltas, first+1, first+deltas, float64(grew)/(1<<20), cfg.ResolvedCacheBytes>>20, float64(one)/(1<<20), r.lists.len())
	if limit := min(int64(cfg.ResolvedCacheBytes), 2*one+1<<20); grew > limit {
		t.Fatalf("heap grew %.1f MiB, more than %.1f MiB (one list costs %.1f MiB)", float64(grew)/(1<<20), float64(limit)/(1<<20), float64(one)/(1<<20))
	}

	allocated := func(s snap) uint64 {
		cold := NewResolver(js, cfg)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc := ms.TotalAlloc
		resolve(cold, s)
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc - alloc
	}
	chain, flat := allocated(snaps[len(snaps)-1]), allocated(whole)
	t.Logf("cold resolve of a chain of %d links: %.1f MiB allocated; of the same list in one manifest: %.1f MiB", deltas+1, float64(chain)/(1<<20), float64(flat)/(1<<20))
	if chain > flat+8<<20 {
		t.Fatalf("a cold chain allocated %.1f MiB more than its list alone: lists built per link", float64(chain-flat)/(1<<20))
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
