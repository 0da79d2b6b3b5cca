package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/briefd/briefd"
	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// Snapshot is a resolved snapshot: the manifest's fields and the ordered
// messages it names.
type Snapshot struct {
	Tenant         string
	ConversationID string
	// Seq is the agent's snapshot number; StreamSeq its sequence in the
	// snapshot stream.
	Seq, StreamSeq uint64
	Model          string
	ContextWindow  int
	CreatedAt      time.Time
	Messages       []briefd.Message
	// Entries are the message ids and body hashes, in order.
	Entries  []Entry
	Delivery Delivery
}

// Delivery describes the delivery of a consumed snapshot (zero for
// LoadSnapshot).
type Delivery struct {
	// NumDelivered counts deliveries, this one included (1 the first time).
	NumDelivered uint64
	// Attempt counts the deliveries that were attempts: NumDelivered less
	// the times the snapshot was handed back at a shutdown or deferred.
	Attempt uint64
	// NumPending is the consumer's count of undelivered snapshots.
	NumPending uint64
	// Timestamp is when the snapshot was stored.
	Timestamp time.Time
}

// Resolver turns manifests into message lists, with bounded caches of
// resolved lists and bodies. It is safe for concurrent use.
type Resolver struct {
	js     jetstream.JetStream
	cfg    Config
	subj   Subjects
	dec    *zstd.Decoder
	lists  *lru[uint64, cachedList] // by snapshot stream sequence; bounded by bytes
	bodies *lru[string, []byte]     // canonical bytes by body subject

	mu            sync.Mutex
	snaps, bodySt jetstream.Stream
}

// NewResolver returns a resolver reading the streams of cfg.
func NewResolver(js jetstream.JetStream, cfg Config) *Resolver {
	cfg = cfg.WithDefaults()
	// DecodeAll writes at most the capacity of the buffer it is given (the
	// body's declared size); windows are bounded by the body limit.
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(uint64(cfg.MaxBodyBytes)), zstd.WithDecoderMaxWindow(uint64(max(cfg.MaxBodyBytes, zstd.MinWindowSize))))
	return &Resolver{
		js: js, cfg: cfg, subj: cfg.subjects(), dec: dec,
		lists:  newLRU[uint64, cachedList](cfg.ResolvedCacheBytes, cachedList.cost),
		bodies: newLRU[string, []byte](cfg.BodyCacheBytes, func(b []byte) int { return len(b) }),
	}
}

func (r *Resolver) streams(ctx context.Context) (snaps, bodies jetstream.Stream, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snaps == nil {
		names := r.cfg.Streams()
		if r.snaps, err = r.js.Stream(ctx, names.Snapshots); err != nil {
			r.snaps = nil
			return nil, nil, fmt.Errorf("queue: open stream %s: %w", names.Snapshots, err)
		}
		if r.bodySt, err = r.js.Stream(ctx, names.Bodies); err != nil {
			r.snaps = nil
			return nil, nil, fmt.Errorf("queue: open stream %s: %w", names.Bodies, err)
		}
	}
	return r.snaps, r.bodySt, nil
}

// parseSnapSubject returns the tenant and conversation of a snapshot
// subject.
func (r *Resolver) parseSnapSubject(subject string) (tenant, conv string, ok bool) {
	rest, found := strings.CutPrefix(subject, r.cfg.Prefix+".snap.")
	if !found {
		return "", "", false
	}
	tenant, conv, found = strings.Cut(rest, ".")
	return tenant, conv, found && ValidToken(tenant) && ValidToken(conv)
}

// Resolve decodes the manifest data stored at streamSeq on subject and
// loads the messages it names. Protocol violations wrap ErrMalformed;
// other errors (NATS unreachable) are transient.
func (r *Resolver) Resolve(ctx context.Context, subject string, streamSeq uint64, data []byte) (*Snapshot, error) {
	tenant, conv, ok := r.parseSnapSubject(subject)
	if !ok {
		return nil, malformed("subject %q is not %s.snap.<tenant>.<conversation>", subject, r.cfg.Prefix)
	}
	man, err := DecodeManifest(data)
	if err != nil {
		return nil, err
	}
	if man.Tenant != tenant || man.ConversationID != conv {
		return nil, malformed("manifest names %s.%s but was published on %s", man.Tenant, man.ConversationID, subject)
	}
	list, err := r.list(ctx, subject, streamSeq, man)
	if err != nil {
		return nil, err
	}
	msgs, err := r.messages(ctx, tenant, conv, list)
	if err != nil {
		return nil, err
	}
	return &Snapshot{
		Tenant: tenant, ConversationID: conv, Seq: man.Seq, StreamSeq: streamSeq,
		Model: man.Model, ContextWindow: man.ContextWindow, CreatedAt: man.CreatedAt,
		Messages: msgs, Entries: list,
	}, nil
}

// cachedList is a resolved list with what identifies its snapshot: a
// cache hit must pass the checks a stream read does (same subject, same
// snapshot number), or a manifest could borrow another tenant's list.
type cachedList struct {
	subject string
	seq     uint64
	entries []Entry
}

// cost is what a cached list holds in memory: its entries' headers and
// the bytes of their ids and hashes (counted in full, though lists of one
// conversation share most of them, so the bound is an upper one).
func (l cachedList) cost() int {
	n := 64 + len(l.subject) + cap(l.entries)*int(unsafe.Sizeof(Entry{}))
	for _, e := range l.entries {
		n += len(e.ID) + len(e.Hash)
	}
	return n
}

// cached returns the list cached for the snapshot at streamSeq if it is
// snapshot seq of subject.
func (r *Resolver) cached(streamSeq uint64, subject string, seq uint64) ([]Entry, bool) {
	l, ok := r.lists.get(streamSeq)
	if !ok || streamSeq == 0 || l.subject != subject || l.seq != seq {
		return nil, false
	}
	return l.entries, true
}

// list resolves the base chain of man into its entry list. The chain is
// applied in one buffer, oldest link first, and only the snapshot's own
// list is cached: the next snapshot of the conversation names it as its
// base, while the lists in between are never asked for again, so a long
// chain costs one list, not one per link.
func (r *Resolver) list(ctx context.Context, subject string, streamSeq uint64, man *Manifest) ([]Entry, error) {
	if l, ok := r.cached(streamSeq, subject, man.Seq); ok {
		return l, nil
	}
	snaps, _, err := r.streams(ctx)
	if err != nil {
		return nil, err
	}
	chain := []*Manifest{man}
	var base []Entry
	for cur := man; cur.Base != 0; {
		if len(chain) > r.cfg.MaxChain {
			return nil, malformed("base chain of snapshot %d is longer than %d", man.Seq, r.cfg.MaxChain)
		}
		if l, ok := r.cached(cur.BaseStreamSeq, subject, cur.Base); ok {
			base = l
			break
		}
		raw, err := snaps.GetMsg(ctx, cur.BaseStreamSeq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, malformed("snapshot %d: base %d (stream seq %d) is not in the stream (expired or never stored)", cur.Seq, cur.Base, cur.BaseStreamSeq)
		}
		if err != nil {
			return nil, fmt.Errorf("queue: load base snapshot %d: %w", cur.BaseStreamSeq, err)
		}
		if raw.Subject != subject {
			return nil, malformed("snapshot %d: base stream seq %d belongs to %s, not %s", cur.Seq, cur.BaseStreamSeq, raw.Subject, subject)
		}
		bm, err := DecodeManifest(raw.Data)
		if err != nil {
			return nil, fmt.Errorf("base snapshot at stream seq %d: %w", cur.BaseStreamSeq, err)
		}
		if bm.Seq != cur.Base {
			return nil, malformed("snapshot %d: base stream seq %d holds snapshot %d, want %d", cur.Seq, cur.BaseStreamSeq, bm.Seq, cur.Base)
		}
		chain = append(chain, bm)
		cur = bm
	}
	// A cached base is shared: copy it before the links change it.
	list := slices.Clone(base)
	for i := len(chain) - 1; i >= 0; i-- {
		m := chain[i]
		if m.Keep > len(list) {
			return nil, malformed("snapshot %d keeps %d entries of a base of %d", m.Seq, m.Keep, len(list))
		}
		list = append(list[:m.Keep], m.Append...)
	}
	list = slices.Clip(list)
	if streamSeq != 0 {
		r.lists.add(streamSeq, cachedList{subject: subject, seq: man.Seq, entries: list})
	}
	return list, nil
}

// rawBody is a body as fetched, before decoding: its payload, encoding and
// declared canonical size.
type rawBody struct {
	payload  []byte
	encoding string
	size     int
	sized    bool   // size is declared, not estimated from the payload
	canon    []byte // set when the canonical bytes came from the cache
}

// unsizedLimit bounds a zstd frame that does not declare its content size
// (encoders omit it for small bodies, klauspost/compress below 256 bytes).
const unsizedLimit = 64 << 10

// messages loads and checks the bodies of list. Limits hold while bodies
// are loaded, not after: the count of messages before anything is
// fetched, and the running total of their declared sizes (the payload's,
// or a zstd frame's content size) as each is fetched, before any is
// decompressed. A decompression then yields at most the declared size.
// So a snapshot over its limits costs the worker its compressed bytes,
// never their expansion.
func (r *Resolver) messages(ctx context.Context, tenant, conv string, list []Entry) ([]briefd.Message, error) {
	if len(list) > r.cfg.MaxMessages {
		return nil, malformed("snapshot names %d messages, more than the limit of %d", len(list), r.cfg.MaxMessages)
	}
	_, bodySt, err := r.streams(ctx)
	if err != nil {
		return nil, err
	}
	uses := make(map[string]int, len(list)) // a list may name one body many times
	for _, e := range list {
		uses[e.Hash]++
	}
	var (
		mu    sync.Mutex
		total int
		raws  = make(map[string]*rawBody, len(uses))
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for hash, n := range uses {
		g.Go(func() error {
			rb, err := r.fetch(gctx, bodySt, tenant, conv, hash)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			total += rb.size * n
			if total > r.cfg.MaxSnapshotBytes {
				return malformed("snapshot's bodies add up to more than the limit of %d bytes", r.cfg.MaxSnapshotBytes)
			}
			raws[hash] = rb
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(8)
	for hash, rb := range raws {
		if rb.canon != nil {
			continue
		}
		g.Go(func() error {
			body, err := r.decode(tenant, conv, hash, rb)
			if err != nil {
				return err
			}
			rb.canon, rb.payload = body, nil
			if !rb.sized {
				mu.Lock()
				defer mu.Unlock()
				total += (len(body) - rb.size) * uses[hash]
				if total > r.cfg.MaxSnapshotBytes {
					return malformed("snapshot's bodies add up to more than the limit of %d bytes", r.cfg.MaxSnapshotBytes)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	msgs := make([]briefd.Message, len(list))
	g, _ = errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, e := range list {
		g.Go(func() error {
			if err := json.Unmarshal(raws[e.Hash].canon, &msgs[i]); err != nil {
				return malformed("body of message %q is not a message: %v", e.ID, err)
			}
			if msgs[i].ID != e.ID {
				return malformed("body %s holds message %q, the manifest says %q", e.Hash, msgs[i].ID, e.ID)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// fetch returns one body as stored (chunks reassembled), with its declared
// size checked against the per-body limit, or its canonical bytes from the
// cache.
func (r *Resolver) fetch(ctx context.Context, st jetstream.Stream, tenant, conv, hash string) (*rawBody, error) {
	subject := r.subj.Body(tenant, conv, hash)
	if b, ok := r.bodies.get(subject); ok {
		return &rawBody{canon: b, size: len(b)}, nil
	}
	raw, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, &missingBodyError{malformedError{reason: "body " + subject + " is not in the stream"}}
	}
	if err != nil {
		return nil, fmt.Errorf("queue: get body %s: %w", subject, err)
	}
	rb := &rawBody{payload: raw.Data, encoding: raw.Header.Get(HeaderContentEncoding)}
	if n := raw.Header.Get(HeaderChunks); n != "" {
		chunks, err1 := strconv.Atoi(n)
		size, err2 := strconv.Atoi(raw.Header.Get(HeaderSize))
		if err1 != nil || err2 != nil || chunks <= 0 || size < 0 || size > 2*r.cfg.MaxBodyBytes {
			return nil, malformed("body %s has bad chunk headers %s=%q %s=%q", subject, HeaderChunks, n, HeaderSize, raw.Header.Get(HeaderSize))
		}
		buf := bytes.NewBuffer(make([]byte, 0, size))
		for i := range chunks {
			c, err := st.GetLastMsgForSubject(ctx, subject+"."+strconv.Itoa(i))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil, &missingBodyError{malformedError{reason: fmt.Sprintf("chunk %d of body %s is not in the stream", i, subject)}}
			}
			if err != nil {
				return nil, fmt.Errorf("queue: get chunk %d of %s: %w", i, subject, err)
			}
			if buf.Len()+len(c.Data) > size {
				return nil, malformed("body %s: chunks hold more than the %d bytes %s says", subject, size, HeaderSize)
			}
			buf.Write(c.Data)
		}
		if buf.Len() != size {
			return nil, malformed("body %s: chunks hold %d bytes, %s says %d", subject, buf.Len(), HeaderSize, size)
		}
		rb.payload = buf.Bytes()
	}
	switch rb.encoding {
	case "":
		rb.size, rb.sized = len(rb.payload), true
	case EncodingZstd:
		// The frame header declares the content size, so no body is
		// decompressed blind; one that does not may hold unsizedLimit.
		var h zstd.Header
		if err := h.Decode(rb.payload); err != nil {
			return nil, malformed("body %s: zstd frame header: %v", subject, err)
		}
		if h.Skippable {
			return nil, malformed("body %s: skippable zstd frame", subject)
		}
		if h.FrameContentSize > uint64(r.cfg.MaxBodyBytes) {
			return nil, malformed("body %s is %d bytes, limit %d", subject, h.FrameContentSize, r.cfg.MaxBodyBytes)
		}
		rb.size, rb.sized = int(h.FrameContentSize), h.HasFCS
		if !h.HasFCS {
			rb.size = len(rb.payload) // an estimate; corrected after decoding
		}
	default:
		return nil, malformed("body %s: unknown %s %q", subject, HeaderContentEncoding, rb.encoding)
	}
	if rb.size > r.cfg.MaxBodyBytes {
		return nil, malformed("body %s is %d bytes, limit %d", subject, rb.size, r.cfg.MaxBodyBytes)
	}
	return rb, nil
}

// decode returns a fetched body's canonical bytes, checked against its
// hash, and caches them. A zstd payload decodes into a buffer of its
// declared size and no more (the decoder is limited to the buffer's
// capacity), whatever frames follow the first.
func (r *Resolver) decode(tenant, conv, hash string, rb *rawBody) ([]byte, error) {
	subject := r.subj.Body(tenant, conv, hash)
	payload := rb.payload
	if rb.encoding == EncodingZstd {
		limit := rb.size
		if !rb.sized {
			limit = min(unsizedLimit, r.cfg.MaxBodyBytes)
		}
		d, err := r.dec.DecodeAll(payload, make([]byte, 0, limit))
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) && !rb.sized {
			return nil, malformed("body %s: zstd frame without a declared content size holds more than %d bytes", subject, limit)
		}
		if err != nil {
			return nil, malformed("body %s: zstd: %v", subject, err)
		}
		if rb.sized && len(d) != rb.size {
			return nil, malformed("body %s: zstd frame holds %d bytes, its header says %d", subject, len(d), rb.size)
		}
		payload = d
	}
	if got := BodyHash(payload); got != hash {
		return nil, malformed("body %s hashes to %s", subject, got)
	}
	r.bodies.add(subject, payload)
	return payload, nil
}

// Load resolves snapshot seq of a conversation (0 = the newest) from the
// streams without consuming it. Finding a given seq scans the
// conversation's snapshots forward, which is fine for replay.
func (r *Resolver) Load(ctx context.Context, tenant, conv string, seq uint64) (*Snapshot, error) {
	if err := checkIDs(tenant, conv); err != nil {
		return nil, err
	}
	snaps, _, err := r.streams(ctx)
	if err != nil {
		return nil, err
	}
	subject := r.subj.Snapshot(tenant, conv)
	var raw *jetstream.RawStreamMsg
	if seq == 0 {
		raw, err = snaps.GetLastMsgForSubject(ctx, subject)
	} else {
		for next := uint64(1); ; next = raw.Sequence + 1 {
			raw, err = snaps.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subject))
			if err != nil {
				break
			}
			var m struct {
				Seq uint64 `json:"seq"`
			}
			if json.Unmarshal(raw.Data, &m) == nil && m.Seq == seq {
				break
			}
		}
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("queue: %s.%s seq %d: %w", tenant, conv, seq, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: load %s.%s seq %d: %w", tenant, conv, seq, err)
	}
	s, err := r.Resolve(ctx, raw.Subject, raw.Sequence, raw.Data)
	if err != nil {
		return nil, err
	}
	s.Delivery.Timestamp = raw.Time
	return s, nil
}

// LoadSnapshot resolves snapshot seq (0 = newest) of a conversation without
// consuming it; see Resolver.Load.
func LoadSnapshot(ctx context.Context, js jetstream.JetStream, cfg Config, tenant, conv string, seq uint64) (*Snapshot, error) {
	return NewResolver(js, cfg).Load(ctx, tenant, conv, seq)
}
