package queue

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/natstest"
)

// The resolver's cache of lists is bounded by bytes (issue 10, D3): 300
// snapshots of one 10,300-message conversation, each a delta on the one
// before, grew the heap by 85.7 MiB at 8a1d3ba (one cached list of 10,300
// entries per snapshot, up to 1,024 lists: ~300 MiB per long
// conversation). Now the heap grows by at most the cache's budget, and a
// chain resolved cold builds one list, not one per link.
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
	entry := func(i int) Entry {
		return Entry{ID: fmt.Sprintf("m%05d", i), Hash: BodyHash(fmt.Appendf(nil, "body %d", i))}
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

	r := NewResolver(js, cfg)
	resolve := func(r *Resolver, s snap) {
		t.Helper()
		l, err := r.list(ctx, subject, s.seq, s.man)
		if err != nil {
			t.Fatal(err)
		}
		if want := s.man.Keep + len(s.man.Append); len(l) != want || l[len(l)-1] != s.man.Append[len(s.man.Append)-1] {
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
	t.Logf("%d snapshots of %d-%d messages: heap grew %.1f MiB (budget %d MiB), %d lists cached",
		deltas, first+1, first+deltas, float64(grew)/(1<<20), cfg.ResolvedCacheBytes>>20, r.lists.len())
	if limit := int64(cfg.ResolvedCacheBytes); grew > limit {
		t.Fatalf("heap grew %.1f MiB, more than the cache's budget of %d MiB", float64(grew)/(1<<20), cfg.ResolvedCacheBytes>>20)
	}

	cold := NewResolver(js, cfg)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc
	resolve(cold, snaps[len(snaps)-1])
	runtime.ReadMemStats(&ms)
	t.Logf("cold resolve of a chain of %d links: %.1f MiB allocated", deltas+1, float64(ms.TotalAlloc-alloc)/(1<<20))
	if got := ms.TotalAlloc - alloc; got > 32<<20 {
		t.Fatalf("a cold chain allocated %.1f MiB: lists built per link", float64(got)/(1<<20))
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
