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
	"sync/atomic"
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
	// Control is the manifest's control; the zero Control when it has
	// none.
	Control  briefd.Control
	Messages []briefd.Message
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
//
// It keeps, per conversation, the newest list it resolved with its
// messages decoded (Config.ResolvedCacheBytes bounds them all), so a
// snapshot that extends it (a delta on it or on one of the snapshots
// before it, or a full manifest that repeats it) decodes only the
// messages it adds: bodies are content-addressed, so an entry with the
// same id and hash at the same place is the same message.
type Resolver struct {
	js     jetstream.JetStream
	cfg    Config
	subj   Subjects
	dec    *zstd.Decoder
	lists  *lru[string, *convList] // by snapshot subject; bounded by bytes
	bodies *lru[string, []byte]    // canonical bytes by body subject

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
		lists:  newLRU[string, *convList](cfg.ResolvedCacheBytes, func(l *convList) int { return int(l.cost.Load()) }),
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
//
// The snapshot's Messages and Entries share memory with the resolver's
// cache and with the other snapshots of the conversation: read them,
// never write to them (appending to them is safe).
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
	entries, msgs, err := r.resolve(ctx, tenant, conv, subject, streamSeq, man)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{
		Tenant: tenant, ConversationID: conv, Seq: man.Seq, StreamSeq: streamSeq,
		Model: man.Model, ContextWindow: man.ContextWindow, CreatedAt: man.CreatedAt,
		Messages: msgs, Entries: entries,
	}
	if man.Control != nil {
		snap.Control = *man.Control
	}
	return snap, nil
}

// convList is the newest resolved list of one conversation, with its
// messages decoded. Its arrays only ever grow in place past their length
// (a list that diverges gets new arrays), so every slice of them handed
// out stays valid and unchanged: snapshots share them.
type convList struct {
	mu      sync.Mutex
	entries []Entry
	msgs    []briefd.Message
	sums    []listSums // sums[i] adds up entries[:i+1]
	snaps   []listSnap // snapshots whose lists are prefixes, oldest first
	newest  uint64     // the highest snapshot seq resolved into it
	cost    atomic.Int64
}

// listSums are running totals over a list: canonical body bytes (the
// snapshot limit) and the memory the decoded messages hold.
type listSums struct{ size, mem int }

// listSnap is a snapshot whose list is the first n entries of a convList.
type listSnap struct {
	streamSeq, seq uint64
	n              int
}

// maxListSnaps bounds the snapshots a convList remembers: a delta names
// the newest stored snapshot of its publisher, rarely more than a few
// back.
const maxListSnaps = 16

// listView is a convList as read at one moment: the prefixes of its
// arrays up to the lengths read never change.
type listView struct {
	entries []Entry
	msgs    []briefd.Message
	sums    []listSums
	snaps   []listSnap
}

func (l *convList) view() listView {
	if l == nil {
		return listView{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return listView{entries: l.entries, msgs: l.msgs, sums: l.sums, snaps: slices.Clone(l.snaps)}
}

// find returns the length of the list of snapshot seq stored at
// streamSeq, if the view holds it.
func (v listView) find(streamSeq, seq uint64) (int, bool) {
	for _, s := range v.snaps {
		if s.streamSeq == streamSeq && s.seq == seq && streamSeq != 0 {
			return s.n, true
		}
	}
	return 0, false
}

func (v listView) sumsAt(n int) listSums {
	if n == 0 {
		return listSums{}
	}
	return v.sums[n-1]
}

// Memory a cached list holds beside its strings.
var (
	entrySize   = int(unsafe.Sizeof(Entry{}))
	messageSize = int(unsafe.Sizeof(briefd.Message{}))
	sumsSize    = int(unsafe.Sizeof(listSums{}))
)

// messageMem estimates the memory of a decoded message beyond its struct:
// its strings, tool calls, parts and metadata.
func messageMem(m *briefd.Message, e Entry) int {
	n := len(e.ID) + len(e.Hash) + len(m.ID) + len(m.Role) + len(m.Content.Text) + len(m.Name) + len(m.ToolCallID)
	for _, p := range m.Content.Parts {
		n += int(unsafe.Sizeof(p)) + len(p.Type) + len(p.Text)
		if p.ImageURL != nil {
			n += int(unsafe.Sizeof(*p.ImageURL)) + len(p.ImageURL.URL) + len(p.ImageURL.Detail)
		}
	}
	for _, tc := range m.ToolCalls {
		n += int(unsafe.Sizeof(tc)) + len(tc.ID) + len(tc.Type) + len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	if len(m.Metadata) > 0 {
		n += 64 + 48*len(m.Metadata) // a small map's buckets
		for k, v := range m.Metadata {
			n += len(k) + len(v)
		}
	}
	return n
}

// setCost records what l holds; the caller holds l.mu.
func (l *convList) setCost() {
	n := 128 + cap(l.entries)*entrySize + cap(l.msgs)*messageSize + cap(l.sums)*sumsSize +
		len(l.snaps)*int(unsafe.Sizeof(listSnap{}))
	if len(l.sums) > 0 {
		n += l.sums[len(l.sums)-1].mem
	}
	l.cost.Store(int64(n))
}

// resolve returns the entries and messages of man, stored at streamSeq on
// subject. It walks the base chain back to a snapshot whose list is
// cached (or to a full manifest), applies the links in one buffer, and
// decodes only the entries past the prefix the result shares with the
// conversation's cached list.
func (r *Resolver) resolve(ctx context.Context, tenant, conv, subject string, streamSeq uint64, man *Manifest) ([]Entry, []briefd.Message, error) {
	cl, _ := r.lists.get(subject)
	base := cl.view()
	if n, ok := base.find(streamSeq, man.Seq); ok {
		return base.entries[:n:n], base.msgs[:n:n], nil
	}
	// known is how many entries of base the list being built starts with;
	// tail follows them.
	known, tail, err := r.chain(ctx, subject, man, base)
	if err != nil {
		return nil, nil, err
	}
	for len(tail) > 0 && known < len(base.entries) && tail[0] == base.entries[known] {
		known, tail = known+1, tail[1:]
	}
	if n := known + len(tail); n > r.cfg.MaxMessages {
		return nil, nil, malformed("snapshot names %d messages, more than the limit of %d", n, r.cfg.MaxMessages)
	}
	have := base.sumsAt(known)
	msgs, sizes, err := r.messages(ctx, tenant, conv, tail, have.size)
	if err != nil {
		return nil, nil, err
	}
	sums := make([]listSums, len(tail))
	for i := range tail {
		have.size += sizes[i]
		have.mem += messageMem(&msgs[i], tail[i])
		sums[i] = have
	}
	return r.commit(subject, cl, base, known, tail, msgs, sums, streamSeq, man.Seq)
}

// list resolves the entry list of man, stored at streamSeq on subject,
// without its bodies: from base when its chain reaches a snapshot of
// base, else from the streams.
func (r *Resolver) list(ctx context.Context, subject string, streamSeq uint64, man *Manifest, base listView) ([]Entry, error) {
	if n, ok := base.find(streamSeq, man.Seq); ok {
		return base.entries[:n:n], nil
	}
	known, tail, err := r.chain(ctx, subject, man, base)
	if err != nil {
		return nil, err
	}
	return append(base.entries[:known:known], tail...), nil
}

// chain walks the base chain of man back to a snapshot of base (or to a
// full manifest) and applies its links, oldest first: the list is the
// first known entries of base followed by tail.
func (r *Resolver) chain(ctx context.Context, subject string, man *Manifest, base listView) (known int, tail []Entry, err error) {
	chain := []*Manifest{man}
	for cur := man; cur.Base != 0; {
		if len(chain) > r.cfg.MaxChain {
			return 0, nil, malformed("base chain of snapshot %d is longer than %d", man.Seq, r.cfg.MaxChain)
		}
		if n, ok := base.find(cur.BaseStreamSeq, cur.Base); ok {
			known = n
			break
		}
		snaps, _, err := r.streams(ctx)
		if err != nil {
			return 0, nil, err
		}
		raw, err := getMsg(ctx, r.js, snaps, getRequest{Seq: cur.BaseStreamSeq})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, nil, malformed("snapshot %d: base %d (stream seq %d) is not in the stream (expired or never stored)", cur.Seq, cur.Base, cur.BaseStreamSeq)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("queue: load base snapshot %d: %w", cur.BaseStreamSeq, err)
		}
		if raw.Subject != subject {
			return 0, nil, malformed("snapshot %d: base stream seq %d belongs to %s, not %s", cur.Seq, cur.BaseStreamSeq, raw.Subject, subject)
		}
		bm, err := DecodeManifest(raw.Data)
		if err != nil {
			return 0, nil, fmt.Errorf("base snapshot at stream seq %d: %w", cur.BaseStreamSeq, err)
		}
		if bm.Seq != cur.Base {
			return 0, nil, malformed("snapshot %d: base stream seq %d holds snapshot %d, want %d", cur.Seq, cur.BaseStreamSeq, bm.Seq, cur.Base)
		}
		chain = append(chain, bm)
		cur = bm
	}
	for i := len(chain) - 1; i >= 0; i-- {
		m := chain[i]
		if m.Keep > known+len(tail) {
			return 0, nil, malformed("snapshot %d keeps %d entries of a base of %d", m.Seq, m.Keep, known+len(tail))
		}
		if m.Keep <= known {
			known, tail = m.Keep, tail[:0]
		} else {
			tail = tail[:m.Keep-known]
		}
		tail = append(tail, m.Append...)
	}
	return known, slices.Clip(tail), nil
}

// commit makes the resolved list (known entries of base, then tail) the
// conversation's cached list, when it is at least as new as the one
// there, and returns it. A list that extends the cached one's whole
// length grows its arrays in place; one that diverges gets new arrays
// that share the prefix's messages (a copy of their headers).
func (r *Resolver) commit(subject string, cl *convList, base listView, known int, tail []Entry, msgs []briefd.Message, sums []listSums, streamSeq, seq uint64) ([]Entry, []briefd.Message, error) {
	n := known + len(tail)
	if cl != nil {
		cl.mu.Lock()
		if len(cl.entries) == known && (known == 0 || len(base.entries) > 0 && &cl.entries[0] == &base.entries[0]) {
			cl.entries = append(cl.entries, tail...)
			cl.msgs = append(cl.msgs, msgs...)
			cl.sums = append(cl.sums, sums...)
			cl.remember(streamSeq, seq, n)
			entries, out := cl.entries[:n:n], cl.msgs[:n:n]
			cl.mu.Unlock()
			r.lists.add(subject, cl)
			return entries, out, nil
		}
		cl.mu.Unlock()
	}
	fresh := &convList{
		entries: append(append(make([]Entry, 0, n+n/4+8), base.entries[:known]...), tail...),
		msgs:    append(append(make([]briefd.Message, 0, n+n/4+8), base.msgs[:known]...), msgs...),
		sums:    append(append(make([]listSums, 0, n+n/4+8), base.sums[:known]...), sums...),
	}
	for _, s := range base.snaps {
		if s.n <= known {
			fresh.snaps = append(fresh.snaps, s)
		}
	}
	entries, out := fresh.entries[:n:n], fresh.msgs[:n:n]
	if streamSeq == 0 {
		return entries, out, nil // not in the stream: nothing will name it as a base
	}
	if cl != nil {
		cl.mu.Lock()
		if seq < cl.newest {
			// An older snapshot (a redelivery, say): the conversation's
			// next one extends the newer list, which stays.
			cl.mu.Unlock()
			return entries, out, nil
		}
		cl.entries, cl.msgs, cl.sums, cl.snaps = fresh.entries, fresh.msgs, fresh.sums, fresh.snaps
		cl.remember(streamSeq, seq, n)
		cl.mu.Unlock()
		r.lists.add(subject, cl)
		return entries, out, nil
	}
	fresh.remember(streamSeq, seq, n)
	r.lists.add(subject, fresh)
	return entries, out, nil
}

// remember records that snapshot seq at streamSeq is the first n entries;
// the caller holds l.mu (or owns l).
func (l *convList) remember(streamSeq, seq uint64, n int) {
	if streamSeq != 0 {
		if len(l.snaps) == maxListSnaps {
			l.snaps = append(l.snaps[:0], l.snaps[1:]...)
		}
		l.snaps = append(l.snaps, listSnap{streamSeq: streamSeq, seq: seq, n: n})
	}
	l.newest = max(l.newest, seq)
	l.setCost()
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

// messages loads and checks the bodies of list, and returns its messages
// and their canonical sizes. Limits hold while bodies are loaded, not
// after: the running total of their declared sizes (the payload's, or a
// zstd frame's content size), from have (the bytes of the entries before
// list), is checked as each is fetched, before any is decompressed. A
// decompression then yields at most the declared size. So a snapshot over
// its limits costs the worker its compressed bytes, never their
// expansion.
func (r *Resolver) messages(ctx context.Context, tenant, conv string, list []Entry, have int) ([]briefd.Message, []int, error) {
	if len(list) == 0 {
		return nil, nil, nil
	}
	_, bodySt, err := r.streams(ctx)
	if err != nil {
		return nil, nil, err
	}
	uses := make(map[string]int, len(list)) // a list may name one body many times
	for _, e := range list {
		uses[e.Hash]++
	}
	var (
		mu    sync.Mutex
		total = have
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
		return nil, nil, err
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
		return nil, nil, err
	}
	msgs := make([]briefd.Message, len(list))
	sizes := make([]int, len(list))
	decode := func(i int) error {
		e := list[i]
		canon := raws[e.Hash].canon
		sizes[i] = len(canon)
		if err := json.Unmarshal(canon, &msgs[i]); err != nil {
			return malformed("body of message %q is not a message: %v", e.ID, err)
		}
		if msgs[i].ID != e.ID {
			return malformed("body %s holds message %q, the manifest says %q", e.Hash, msgs[i].ID, e.ID)
		}
		return nil
	}
	if len(list) == 1 {
		// A turn's usual delta: no goroutine to start.
		if err := decode(0); err != nil {
			return nil, nil, err
		}
		return msgs, sizes, nil
	}
	g, _ = errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range list {
		g.Go(func() error { return decode(i) })
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return msgs, sizes, nil
}

// fetch returns one body as stored (chunks reassembled), with its declared
// size checked against the per-body limit, or its canonical bytes from the
// cache.
func (r *Resolver) fetch(ctx context.Context, st jetstream.Stream, tenant, conv, hash string) (*rawBody, error) {
	subject := r.subj.Body(tenant, conv, hash)
	if b, ok := r.bodies.get(subject); ok {
		return &rawBody{canon: b, size: len(b)}, nil
	}
	raw, err := getMsg(ctx, r.js, st, getRequest{LastBySubject: subject})
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
			c, err := getMsg(ctx, r.js, st, getRequest{LastBySubject: subject + "." + strconv.Itoa(i)})
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
		// The leader's last, not a replica's, which may lag.
		raw, err = LastMsg(ctx, r.js, snaps, subject)
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

// Walk resolves every snapshot of a conversation still in the snapshot
// stream, oldest first, and calls fn with each; Delivery.Timestamp is when
// the stream stored it. A snapshot that does not resolve (its base or a
// body past the streams' MaxAge, a malformed manifest) comes with the
// error and a Snapshot holding only what the message itself says (seq,
// stream sequence, time). It reads with an ordered consumer, so it needs
// no durable state and takes no work from the workers. It stops at the
// last snapshot stored when it started, or when fn returns an error, which
// it returns.
func (r *Resolver) Walk(ctx context.Context, tenant, conv string, fn func(*Snapshot, error) error) error {
	if err := checkIDs(tenant, conv); err != nil {
		return err
	}
	snaps, _, err := r.streams(ctx)
	if err != nil {
		return err
	}
	subject := r.subj.Snapshot(tenant, conv)
	cons, err := snaps.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("queue: walk %s: %w", subject, err)
	}
	if cons.CachedInfo().NumPending == 0 {
		return nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(64))
	if err != nil {
		return fmt.Errorf("queue: walk %s: %w", subject, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("queue: walk %s: %w", subject, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("queue: walk %s: metadata: %w", subject, err)
		}
		s, rerr := r.Resolve(ctx, msg.Subject(), md.Sequence.Stream, msg.Data())
		if rerr != nil {
			s = &Snapshot{Tenant: tenant, ConversationID: conv, StreamSeq: md.Sequence.Stream}
			if m, err := DecodeManifest(msg.Data()); err == nil {
				s.Seq, s.Model, s.ContextWindow, s.CreatedAt = m.Seq, m.Model, m.ContextWindow, m.CreatedAt
			}
		}
		s.Delivery.Timestamp = md.Timestamp
		if err := fn(s, rerr); err != nil {
			return err
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// LoadSnapshot resolves snapshot seq (0 = newest) of a conversation without
// consuming it; see Resolver.Load.
func LoadSnapshot(ctx context.Context, js jetstream.JetStream, cfg Config, tenant, conv string, seq uint64) (*Snapshot, error) {
	return NewResolver(js, cfg).Load(ctx, tenant, conv, seq)
}
