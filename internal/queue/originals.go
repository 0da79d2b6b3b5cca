package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/briefd/briefd"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrBodyMissing is matched by the error of a body (or one of its chunks)
// that is not in the body stream: it expired (the stream's MaxAge) or was
// never stored.
var ErrBodyMissing = errors.New("body not in the stream")

// Originals returns the messages conversation conv of tenant has published,
// as the snapshots still in the snapshot stream name them, in conversation
// order, each with the hash of its newest body. It is what an agent's
// expand tool reads: the originals behind any briefing, whether the agent
// publishes its full history (the newest snapshot names everything) or the
// spliced one (older snapshots name what later ones replaced). It is
// NewOriginalsScan and one UpdateOriginals; keep the scan to read only
// newer snapshots next time.
func (r *Resolver) Originals(ctx context.Context, tenant, conv string) ([]Entry, error) {
	s, err := NewOriginalsScan(tenant, conv)
	if err != nil {
		return nil, err
	}
	if err := r.UpdateOriginals(ctx, s); err != nil {
		return nil, err
	}
	return s.Entries(), nil
}

// OriginalsScan is the merged order of one conversation's snapshots, and
// where the scan of the snapshot stream stopped. It is not safe for
// concurrent use.
//
// The order is built from the snapshots in stream order: a message not
// named before goes right after the message before it in that snapshot's
// list (first if nothing is). Briefing messages (ids starting with
// briefd.BriefingIDPrefix) are skipped, so a spliced list adds nothing
// but its new tail. A message that an edit or an undo removed keeps its
// place, and so does one whose snapshots expired since it was scanned (its
// body expires with them: Body then says so). Snapshots that cannot be
// resolved (a delta whose base expired, a malformed manifest) are skipped:
// the next full manifest names their messages again.
type OriginalsScan struct {
	tenant, conv string
	next         uint64 // the stream sequence to scan from
	order        originalOrder
}

// NewOriginalsScan returns an empty scan of a conversation.
func NewOriginalsScan(tenant, conv string) (*OriginalsScan, error) {
	if err := checkIDs(tenant, conv); err != nil {
		return nil, err
	}
	return &OriginalsScan{tenant: tenant, conv: conv, next: 1}, nil
}

// Entries returns the conversation's originals in order.
func (s *OriginalsScan) Entries() []Entry { return s.order.entries() }

// UpdateOriginals merges the conversation's snapshots stored since s last
// read into s: one direct get per snapshot (the scan follows the subject
// with next_by_subj), plus the reads of bases that are not cached; bodies
// are not read (see Body).
func (r *Resolver) UpdateOriginals(ctx context.Context, s *OriginalsScan) error {
	snaps, _, err := r.streams(ctx)
	if err != nil {
		return err
	}
	subject := r.subj.Snapshot(s.tenant, s.conv)
	// The list resolved last: the next snapshot is most often a delta on
	// it, resolved then from the manifest alone.
	var last listView
	for {
		raw, err := snaps.GetMsg(ctx, s.next, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("queue: scan %s from stream seq %d: %w", subject, s.next, err)
		}
		next := raw.Sequence + 1
		man, err := DecodeManifest(raw.Data)
		if err != nil || man.Tenant != s.tenant || man.ConversationID != s.conv {
			s.next = next
			continue // dead-lettered by the workers; names nothing usable
		}
		list, err := r.list(ctx, subject, raw.Sequence, man, last)
		if err != nil && !errors.Is(err, ErrMalformed) {
			return err // transient: this snapshot is read again next time
		}
		if err == nil {
			s.order.merge(list)
			last = listView{entries: list, snaps: []listSnap{{streamSeq: raw.Sequence, seq: man.Seq, n: len(list)}}}
		}
		s.next = next
	}
}

// originalOrder merges snapshot lists into one conversation order: a
// singly linked list (inserts after a known node are O(1)) and an index by
// id.
type originalOrder struct {
	head  *orderNode
	index map[string]*orderNode
}

type orderNode struct {
	e    Entry
	next *orderNode
}

func (o *originalOrder) merge(list []Entry) {
	if o.index == nil {
		o.index = make(map[string]*orderNode, len(list))
	}
	var prev *orderNode
	for _, e := range list {
		if briefd.IsBriefingID(e.ID) {
			continue
		}
		if n, ok := o.index[e.ID]; ok {
			n.e.Hash = e.Hash // an edited message: its newest body
			prev = n
			continue
		}
		n := &orderNode{e: e}
		if prev == nil {
			n.next, o.head = o.head, n
		} else {
			n.next, prev.next = prev.next, n
		}
		o.index[e.ID] = n
		prev = n
	}
}

func (o *originalOrder) entries() []Entry {
	out := make([]Entry, 0, len(o.index))
	for n := o.head; n != nil; n = n.next {
		out = append(out, n.e)
	}
	return out
}

// Body returns the canonical bytes of one body of a conversation (chunks
// reassembled, zstd decoded, the hash checked), from the cache or the body
// stream. A body that is not in the stream gives an error matching
// ErrBodyMissing; one that breaks the protocol (a hash mismatch, a bad
// frame), ErrMalformed; others are transient.
func (r *Resolver) Body(ctx context.Context, tenant, conv, hash string) ([]byte, error) {
	if err := checkIDs(tenant, conv); err != nil {
		return nil, err
	}
	if !validHash(hash) {
		return nil, fmt.Errorf("queue: body hash %q: %w", hash, ErrMalformed)
	}
	_, bodySt, err := r.streams(ctx)
	if err != nil {
		return nil, err
	}
	rb, err := r.fetch(ctx, bodySt, tenant, conv, hash)
	if err != nil {
		return nil, err
	}
	if rb.canon != nil {
		return rb.canon, nil
	}
	return r.decode(tenant, conv, hash, rb)
}
