package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/briefd/briefd"
)

// ErrNotFound is returned by Latest and Get when the conversation has no
// briefing, or none for that boundary (or it has expired).
var ErrNotFound = errors.New("cache: briefing not found")

// DefaultTTL is how long briefings are kept after their last Put unless the
// configuration says otherwise.
const DefaultTTL = 30 * 24 * time.Hour

// DefaultPrefix starts every Redis key and channel.
const DefaultPrefix = "briefd"

// DefaultBucket is the JetStream key-value bucket of the embedded mode.
const DefaultBucket = "briefd_briefings"

// validate checks what a store needs from a briefing before writing it.
func validate(b *briefd.Briefing) error {
	switch {
	case b == nil:
		return errors.New("nil briefing")
	case b.ConversationID == "":
		return errors.New("briefing has no conversation id")
	case b.BoundaryID == "":
		return errors.New("briefing has no boundary id")
	case b.Position < 0:
		return fmt.Errorf("briefing has negative position %d", b.Position)
	case b.Position >= 1<<53:
		return fmt.Errorf("briefing position %d is not below 2^53", b.Position)
	}
	return nil
}

// DefaultMaxBoundaries is how many boundaries of one conversation a
// store keeps by default; older ones are deleted as newer ones are put.
const DefaultMaxBoundaries = 16

// order is the key that decides which briefing is the latest: the time the
// snapshot stream stored its snapshot, in microseconds (below 2^53, so
// exact in Lua), or 0 for a briefing made outside the stream.
func order(b *briefd.Briefing) int64 {
	if b.SnapshotTime.IsZero() {
		return 0
	}
	return b.SnapshotTime.UnixMicro()
}

// Newer reports whether b should replace cur as a conversation's latest
// briefing. The stores decide the latest by it, and agents keeping a copy
// of the latest (the client's watch) must too.
func Newer(b, cur *briefd.Briefing) bool { return newer(b, cur) }

// newer reports whether b should replace cur as the latest briefing: a
// newer snapshot wins; for briefings of no snapshot, a higher Position.
// (Equal keys are the callers' tie rules.)
func newer(b, cur *briefd.Briefing) bool {
	ob, oc := order(b), order(cur)
	if ob != oc {
		return ob > oc
	}
	return ob == 0 && b.Position > cur.Position
}

// ref names a briefing in error messages: tenant/conv@boundary.
func ref(tenant, conv, boundary string) string {
	var s strings.Builder
	if tenant != "" {
		s.WriteString(tenant)
		s.WriteByte('/')
	}
	s.WriteString(conv)
	if boundary != "" {
		s.WriteByte('@')
		s.WriteString(boundary)
	}
	return s.String()
}

// Decode parses a briefing's JSON as a store holds it.
func Decode(data []byte) (*briefd.Briefing, error) { return decode(data) }

func decode(data []byte) (*briefd.Briefing, error) {
	b := new(briefd.Briefing)
	if err := json.Unmarshal(data, b); err != nil {
		return nil, fmt.Errorf("decode briefing: %w", err)
	}
	return b, nil
}

// coalescer is the state of one Watch: it keeps the briefings delivered
// strictly newer (see newer) and holds only the newest undelivered briefing, so a
// slow reader never stalls the subscription that feeds it.
type coalescer struct {
	last    *briefd.Briefing // the last delivered
	pending *briefd.Briefing
}

// offer considers b for delivery.
func (c *coalescer) offer(b *briefd.Briefing) {
	if b == nil || (c.last != nil && !newer(b, c.last)) || (c.pending != nil && !newer(b, c.pending)) {
		return
	}
	c.pending = b
}

// markSent records that b, the pending briefing when it was taken, was
// delivered; a newer one offered meanwhile stays pending.
func (c *coalescer) markSent(b *briefd.Briefing) {
	c.last = b
	if c.pending != nil && !newer(c.pending, b) {
		c.pending = nil
	}
}
