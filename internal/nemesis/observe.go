package nemesis

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
)

// convKey names a conversation of a tenant.
type convKey struct{ tenant, conv string }

// sighting is one latest briefing of a conversation as the store
// announced it.
type sighting struct {
	snapshotSeq  uint64
	snapshotTime time.Time
	position     int64
	boundary     string
	at           time.Time
}

// latency is one briefing's time from its snapshot's store in the stream
// to its announcement by the store.
type latency struct {
	stored time.Time
	took   time.Duration
}

// regression is a latest briefing that replaced a newer one: from an
// older snapshot, or with a boundary before its predecessor's.
type regression struct {
	key         convKey
	what        string
	before, now sighting
}

// observer records every change of a conversation's latest briefing the
// store announces while the run goes on (Redis: the events channels; the
// key-value store: a watch of the latest keys), and flags the changes
// that go backwards. A change missed while the store was down cannot flag
// a false regression: each sighting is compared with the last one seen.
type observer struct {
	mu         sync.Mutex
	last       map[convKey]sighting
	sightings  int
	latencies  map[string][]latency // publish to briefing, by tenant
	snapBack   []regression         // an older snapshot's briefing became the latest
	boundBack  []regression         // the boundary moved before the previous one
	watchError error
}

func newObserver() *observer {
	return &observer{last: map[convKey]sighting{}, latencies: map[string][]latency{}}
}

// see records one announced briefing.
func (o *observer) see(b *briefd.Briefing, at time.Time) {
	if b == nil || b.SnapshotSeq == 0 {
		return
	}
	k := convKey{b.Tenant, b.ConversationID}
	s := sighting{snapshotSeq: b.SnapshotSeq, snapshotTime: b.SnapshotTime, position: b.Position, boundary: b.BoundaryID, at: at}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sightings++
	prev, seen := o.last[k]
	switch {
	case seen && s.snapshotSeq < prev.snapshotSeq:
		o.snapBack = append(o.snapBack, regression{k, "older snapshot", prev, s})
		return // keep comparing with the newest
	case seen && s.snapshotSeq == prev.snapshotSeq:
		return // the same briefing announced again (a redelivery)
	case seen && s.position < prev.position:
		o.boundBack = append(o.boundBack, regression{k, "boundary moved back", prev, s})
	}
	o.last[k] = s
	if !b.SnapshotTime.IsZero() {
		o.latencies[b.Tenant] = append(o.latencies[b.Tenant], latency{stored: b.SnapshotTime, took: at.Sub(b.SnapshotTime)})
	}
}

// watchRedis follows every conversation's events channel with one pattern
// subscription until ctx ends; go-redis resubscribes after a restart.
func (o *observer) watchRedis(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	ps := rdb.PSubscribe(ctx, prefix+":{*}:events")
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return err
	}
	go func() {
		defer ps.Close()
		ch := ps.Channel(redis.WithChannelSize(4096))
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				var b briefd.Briefing
				if json.Unmarshal([]byte(m.Payload), &b) == nil {
					o.see(&b, time.Now())
				}
			}
		}
	}()
	return nil
}

// watchKV follows the latest keys of the bucket until ctx ends.
func (o *observer) watchKV(ctx context.Context, js jetstream.JetStream, bucket string) error {
	return cache.FollowPuts(ctx, js, bucket, "*.*.latest", func(b *briefd.Briefing) { o.see(b, time.Now()) })
}

// count returns how many briefings were announced so far.
func (o *observer) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sightings
}
