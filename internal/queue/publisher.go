package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/briefd/briefd"
	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher publishes conversation snapshots the way docs/protocol.md
// describes, as an agent does. It remembers, per conversation, the list it
// published last, so a turn costs the new messages (marshal, hash, send),
// not a re-hash of the history. It keeps references to the strings of the
// messages it published last (no copies), so an agent that keeps its
// history pays no extra memory for them. It is safe for concurrent use;
// publishes of one conversation are serialized. Treat the strings of a
// published message as immutable (Go strings are, unless changed through
// unsafe).
//
// A history that is the slice published last grown by append costs only
// its new messages: its earlier messages are not read again (but for a
// few, in turn, as a check). Any other history (a copy, a spliced one, the
// same slice truncated or not longer) is compared with the list published
// last message by message, one pointer comparison each, so edits, undo
// and reordering are found. So change a published message in a copy of
// the history (slices.Clone), not in place in the slice you keep
// appending to: an edit in place followed by an append is found only when
// the check reaches it (a warning is logged), and the snapshots until then
// name the old text.
//
// It knows, per conversation, which bodies the server has stored (acked),
// not only which it sent: a delta extends only a snapshot whose manifest
// and bodies are all stored, a body whose publish failed is re-sent (by
// the goroutine that owns its ack, then with the next snapshot), and it
// follows the streams' MaxAge and message size as the server reports them
// (see Limits).
type Publisher struct {
	js    jetstream.JetStream
	cfg   Config
	subj  Subjects
	enc   *zstd.Encoder
	convs *lru[string, *convState]

	limits      atomic.Pointer[Limits] // nil until the first successful read
	lastRefresh atomic.Int64           // unix nanoseconds of the last read attempt
	refreshing  atomic.Bool
}

// NewPublisher returns a publisher on js. cfg is completed with
// WithDefaults; the streams must exist (see EnsureStreams). Call
// RefreshLimits once the streams exist to follow their settings from the
// first publish; the publisher otherwise reads them in the background on
// its first publish.
func NewPublisher(js jetstream.JetStream, cfg Config) *Publisher {
	cfg = cfg.WithDefaults()
	// Fastest level: bodies are small and the agent's turn is the hot path.
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
	return &Publisher{js: js, cfg: cfg, subj: cfg.subjects(), enc: enc, convs: newLRU[string, *convState](cfg.Conversations, nil)}
}

// PublishOption sets optional manifest fields.
type PublishOption func(*publishOpts)

type publishOpts struct {
	model         string
	contextWindow int
	control       briefd.Control
}

func (o publishOpts) equal(p publishOpts) bool {
	return o.model == p.model && o.contextWindow == p.contextWindow && o.control.Equal(p.control)
}

// WithModel sets the manifest's model (the agent's model: encoding and
// context hints for the worker).
func WithModel(model string) PublishOption { return func(o *publishOpts) { o.model = model } }

// WithContextWindow sets the manifest's context window in tokens.
func WithContextWindow(n int) PublishOption { return func(o *publishOpts) { o.contextWindow = n } }

// WithControl sets the manifest's control: when to compact this snapshot
// and what to keep. PublishAsync checks it with [briefd.Control.Validate]
// before anything is sent; the zero Control sends none.
func WithControl(c briefd.Control) PublishOption { return func(o *publishOpts) { o.control = c } }

// PublishResult describes one published snapshot.
type PublishResult struct {
	// Seq is the snapshot's number in its conversation.
	Seq uint64
	// StreamSeq is its sequence in the snapshot stream; 0 until acked.
	StreamSeq uint64
	// Duplicate is true when nothing changed since the last snapshot, so
	// none was published (Seq and StreamSeq are the earlier snapshot's),
	// or when the server de-duplicated it by Nats-Msg-Id.
	Duplicate bool
	// Full is true for a full manifest (base 0).
	Full bool
	// Bodies and BodyBytes count the bodies sent (payload bytes, after
	// compression); Resent counts those among them sent again because an
	// earlier publish of theirs failed.
	Bodies, BodyBytes, Resent int
}

// Publish publishes a snapshot of conversation conv of tenant tenant and
// waits until it is settled (see Pending.Wait). Only bodies not stored
// for the conversation travel; the manifest is a delta on the newest
// snapshot known to be stored. If nothing changed since the last snapshot,
// nothing is published and the result has Duplicate set. Errors:
// ErrInvalidToken, ErrBodyTooLarge, ErrMaxPayloadTooSmall (nothing
// published), or a wrapped NATS error once re-sends are exhausted (the
// conversation's next snapshot sends what is still missing).
func (p *Publisher) Publish(ctx context.Context, tenant, conv string, msgs []briefd.Message, opts ...PublishOption) (PublishResult, error) {
	pend, err := p.PublishAsync(ctx, tenant, conv, msgs, opts...)
	if err != nil {
		return PublishResult{}, err
	}
	return pend.Wait(ctx)
}

// newBody is a body to send with a snapshot.
type newBody struct {
	hash string
	body []byte // canonical JSON; nil for a re-send, which keeps its payload
	sent *sentBody
}

// PublishAsync is Publish without waiting for acks: it returns once the
// messages are handed to the connection. A goroutine owns the acks: it
// re-sends a failed body or manifest (Config.PublishRetries), and the
// conversation's next snapshot re-sends any body still not stored; call
// Pending.Wait or OnDone to see the outcome.
func (p *Publisher) PublishAsync(ctx context.Context, tenant, conv string, msgs []briefd.Message, opts ...PublishOption) (*Pending, error) {
	if err := checkIDs(tenant, conv); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("queue: publish %s.%s: %w", tenant, conv, err)
	}
	var o publishOpts
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.control.Validate(); err != nil {
		return nil, fmt.Errorf("queue: publish %s.%s: %w", tenant, conv, err)
	}
	key := tenant + "." + conv
	st := p.convs.getOrAdd(key, func() *convState { return &convState{} })
	st.mu.Lock()
	defer st.mu.Unlock()
	// A full manifest published last is sent before anything of this one.
	st.sendDeferred(p, key)
	// A conversation older than the limits it would be checked against
	// (one resumed after a pause, say) waits for a fresh read: the streams'
	// MaxAge may have changed meanwhile. Others read in the background.
	p.maybeRefreshLimits(ctx, st.bodies != nil && time.Since(st.since) > p.cfg.LimitsRefresh)
	st.refresh(p)

	// Unchanged messages (same string pointers) keep their hash; the rest
	// are marshalled and hashed.
	prev := st.entries
	same := st.unchanged(p, key, msgs)
	var bodies []newBody
	added := make([]pubEntry, 0, len(msgs)-same)
	var seen map[string]bool
	for i := same; i < len(msgs); i++ {
		m := &msgs[i]
		body, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("queue: marshal message %q: %w", m.ID, err)
		}
		if len(body) > p.cfg.MaxBodyBytes {
			return nil, fmt.Errorf("queue: message %q is %d bytes, limit %d: %w", m.ID, len(body), p.cfg.MaxBodyBytes, ErrBodyTooLarge)
		}
		h := BodyHash(body)
		added = append(added, pubEntry{Entry: Entry{ID: m.ID, Hash: h}, fp: fingerprint(m)})
		if _, known := st.bodies[h]; !known && !seen[h] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[h] = true
			bodies = append(bodies, newBody{hash: h, body: body})
		}
	}
	var next []pubEntry
	switch {
	case same == len(prev) && cap(prev)-len(prev) >= len(added):
		next = append(prev, added...) // prev is the longest list on its array
	default:
		// A new array, with room to grow: appending copies the list once
		// per doubling, not on every turn.
		next = make([]pubEntry, 0, 2*(same+len(added))+16)
		next = append(append(next, prev[:same]...), added...)
	}
	// Bodies whose publish failed for good are sent again if the list
	// still names them (unchanged messages are not walked above).
	resent := 0
	if len(st.resend) > 0 {
		for _, e := range next {
			if b, ok := st.resend[e.Hash]; ok && !seen[e.Hash] {
				if seen == nil {
					seen = map[string]bool{}
				}
				seen[e.Hash] = true
				bodies = append(bodies, newBody{hash: e.Hash, sent: b})
				resent++
			}
		}
	}
	if resent == 0 && same == len(msgs) && len(msgs) == len(prev) && st.last != nil && o.equal(st.lastOpts) && !st.last.pend.settledWithError() {
		// Nothing changed: re-publishing would only add a manifest.
		st.array = uintptr(unsafe.Pointer(unsafe.SliceData(msgs)))
		res := st.last.pend.Result()
		res.Duplicate, res.Bodies, res.BodyBytes, res.Resent = true, 0, 0, 0
		return settledPending(res), nil
	}

	// Encode every body and check that it can be sent before sending any.
	limit := p.payloadLimit()
	pend := &Pending{sent: PublishResult{Seq: st.seq + 1, Resent: resent}, list: next, st: st, gen: st.gen,
		done: make(chan struct{}), bodiesDone: make(chan struct{}), manSent: make(chan struct{})}
	if st.last != nil {
		pend.prev = st.last.pend
	}
	for _, nb := range bodies {
		var b *sentBody
		if nb.sent == nil {
			b = p.newSentBody(tenant, conv, nb.hash, nb.body)
		} else {
			// A copy: the failed snapshot's record stays as it settled.
			b = &sentBody{hash: nb.hash, subject: nb.sent.subject, msgID: nb.sent.msgID, payload: nb.sent.payload, encoding: nb.sent.encoding}
		}
		if _, err := b.chunkSize(limit); err != nil {
			return nil, err
		}
		pend.bodies = append(pend.bodies, b)
		pend.sent.BodyBytes += len(b.payload)
	}
	pend.sent.Bodies = len(pend.bodies)

	// Choose the base: the newest snapshot known to be stored, bodies
	// included, unless a full manifest is due.
	man := Manifest{V: Version, Tenant: tenant, ConversationID: conv, Seq: st.seq + 1,
		Model: o.model, ContextWindow: o.contextWindow, CreatedAt: time.Now().UTC()}
	if !o.control.IsZero() {
		ctl := o.control
		man.Control = &ctl
	}
	base := st.acked
	full := base == nil || st.fullDue(p.cfg.FullEvery)
	if !full {
		keep := same
		if base != st.last {
			// The newest snapshot is not known stored: extend an older one.
			keep = commonPrefix(base.list, next)
		}
		man.Base, man.BaseStreamSeq, man.Keep = base.seq, base.streamSeq, keep
		man.Append = entriesOf(next[keep:])
	}
	pend.sent.Full = full
	data, err := json.Marshal(&man)
	if err != nil {
		return nil, fmt.Errorf("queue: marshal manifest: %w", err)
	}
	st.syncListJSON(next, same)
	if full && !bytes.Contains(data, []byte(`"append":null`)) {
		st.reset()
		return nil, fmt.Errorf("queue: manifest encoding has no append field")
	}

	for _, b := range pend.bodies {
		if err := b.send(p.js, limit); err != nil {
			// Some bodies may be on their way: start the conversation over
			// (numbering kept), so the next snapshot sends them all.
			st.reset()
			return nil, err
		}
	}
	pend.man = &nats.Msg{Subject: p.subj.Snapshot(tenant, conv), Header: nats.Header{}, Data: data}
	pend.man.Header.Set(HeaderVersion, "1")
	pend.man.Header.Set(HeaderContentType, ContentTypeJSON)
	pend.man.Header.Set(HeaderMsgID, key+"."+strconv.FormatUint(man.Seq, 10))
	if full {
		// A full manifest lists every message (~45 bytes each): its list
		// is written into it by its owner when it sends it, or by the
		// conversation's next snapshot first thing, whichever comes
		// first; either holds st.mu, so it reads the list JSON before it
		// changes.
		pend.fullList, pend.unsent = st.listJSON, true
		st.deferred = pend
	}
	// The owner sends the manifest once the bodies it names are stored.
	pend.res = pend.sent

	for _, b := range pend.bodies {
		st.bodies[b.hash] = pend
	}
	// Bodies to re-send that this list does not name are forgotten: a
	// later list naming them again walks them as new messages.
	clear(st.resend)
	pend.deps = slices.Clone(st.inflight)
	st.inflight = append(st.inflight, pend)
	st.seq, st.published = man.Seq, man.Seq
	st.entries = next
	st.array = uintptr(unsafe.Pointer(unsafe.SliceData(msgs)))
	st.lastOpts = o
	st.last = &sentSnap{seq: man.Seq, list: next, pend: pend}
	st.unsettled = append(st.unsettled, st.last)
	if full {
		st.sinceFull, st.deltaBytes = 0, 0
	} else {
		st.sinceFull++
		st.deltaBytes += len(data)
	}
	go pend.own(p, key)
	return pend, nil
}

// Forget drops what the publisher keeps of a conversation (the fingerprints
// of the messages it sent, about 300 bytes a message): its next publish
// sends a full snapshot. Snapshots in flight are still acknowledged and
// their full manifests still sent.
func (p *Publisher) Forget(tenant, conv string) {
	p.convs.remove(tenant + "." + conv)
}

// LastSeq returns the number of the newest snapshot of a conversation
// this publisher published, or 0 when it published none (or forgot the
// conversation, past Config.Conversations).
func (p *Publisher) LastSeq(tenant, conv string) uint64 {
	st, ok := p.convs.get(tenant + "." + conv)
	if !ok {
		return 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.published
}

// newSentBody encodes a body for sending: zstd when that saves at least
// 10% on a body of 512 bytes or more.
func (p *Publisher) newSentBody(tenant, conv, hash string, body []byte) *sentBody {
	b := &sentBody{hash: hash, subject: p.subj.Body(tenant, conv, hash), payload: body}
	b.msgID = b.subject[len(p.cfg.Prefix)+len(".body."):]
	if !p.cfg.NoCompression && len(body) >= 512 {
		if z := p.enc.EncodeAll(body, make([]byte, 0, len(body)/2)); len(z) < len(body)*9/10 {
			b.payload, b.encoding = z, EncodingZstd
		}
	}
	return b
}

// convState is what a Publisher remembers of one conversation.
type convState struct {
	mu        sync.Mutex
	seq       uint64 // last snapshot number used
	published uint64 // the newest snapshot handed to the connection (kept by reset)
	// manifestSeq is the newest snapshot whose manifest was sent: an older
	// one is not sent after it.
	manifestSeq uint64
	since       time.Time // when bodies were last all re-sent
	// bodies holds the hashes of the bodies sent: nil once stored, else
	// the snapshot whose publish carries it. A body whose publish failed
	// is not here; it is in resend until a snapshot sends it again.
	bodies     map[string]*Pending
	resend     map[string]*sentBody
	inflight   []*Pending  // snapshots not settled yet, oldest first
	unsettled  []*sentSnap // the same, as candidate bases
	entries    []pubEntry  // the list published last
	sinceFull  int         // deltas since the last full manifest
	deltaBytes int         // their bytes
	last       *sentSnap   // the snapshot published last
	acked      *sentSnap   // the newest snapshot known stored, bodies included
	lastOpts   publishOpts
	// listJSON is the JSON of entries' list items, comma-separated, kept
	// incrementally so that a full manifest costs a copy, not an encode;
	// ends[i] is the offset just after item i.
	listJSON []byte
	ends     []int
	// array is the address of the agent's slice published last: the same
	// slice grown is the list published last plus new messages.
	array uintptr
	// audit is where the next check of earlier messages starts (see
	// unchanged); edited is set once an edit in place was reported.
	audit  int
	edited bool
	// deferred is a full manifest whose list is not written yet (see
	// sendDeferred).
	deferred *Pending
	// gen counts resets; a snapshot records its bodies' outcome only in
	// the generation it was published in (see record).
	gen uint64
}

// auditWindow is how many earlier messages a publish of a grown slice
// checks, in turn, besides the last ones.
const auditWindow = 16

// unchanged returns how many leading messages of msgs are, string for
// string, those of the list published last. When msgs is the slice
// published last grown by append (same array, longer), the earlier
// messages are taken as they were: the last few are checked (a
// truncation followed by appends rewrites them) and a window of
// auditWindow others, in turn, so a turn costs the new messages only.
// Anything else (another slice: a copy, an edited copy, a spliced
// history; or the same slice not longer, which an agent publishes again
// only after changing it) is walked message by message, a pointer
// comparison per message. The caller holds st.mu.
func (st *convState) unchanged(p *Publisher, key string, msgs []briefd.Message) int {
	prev := st.entries
	n := len(prev)
	if n > 0 && len(msgs) > n && st.array == uintptr(unsafe.Pointer(unsafe.SliceData(msgs))) {
		ok := true
		const last = 4
		for i := max(0, n-last); i < n && ok; i++ {
			ok = prev[i].fp.matches(&msgs[i])
		}
		if rest := n - last; rest > 0 {
			for k := 0; k < min(auditWindow, rest) && ok; k++ {
				i := st.audit % rest
				st.audit++
				ok = prev[i].fp.matches(&msgs[i])
			}
		}
		if ok {
			return n
		}
		if !st.edited {
			st.edited = true
			p.cfg.Logger.Warn("queue: a published message was changed in place; earlier snapshots may name its old text: publish an edited copy of the history instead (see Publisher)",
				"conversation", key)
		}
	}
	same := 0
	for same < len(msgs) && same < n && prev[same].fp.matches(&msgs[same]) {
		same++
	}
	return same
}

// sendDeferred writes the list into the conversation's full manifest that
// does not have it yet, if any, before the list JSON changes; the caller
// holds st.mu. Its owner sends it.
func (st *convState) sendDeferred(p *Publisher, key string) {
	if d := st.deferred; d != nil {
		st.deferred = nil
		d.writeFull()
	}
}

// syncListJSON brings listJSON in line with next, of which the first same
// entries are unchanged.
func (st *convState) syncListJSON(next []pubEntry, same int) {
	if same < len(st.ends) {
		end := 0
		if same > 0 {
			end = st.ends[same-1]
		}
		st.listJSON, st.ends = st.listJSON[:end], st.ends[:same]
	}
	for i := len(st.ends); i < len(next); i++ {
		st.listJSON = appendEntryJSON(st.listJSON, len(st.ends) > 0, next[i].Entry)
		st.ends = append(st.ends, len(st.listJSON))
	}
}

func appendEntryJSON(b []byte, comma bool, e Entry) []byte {
	if comma {
		b = append(b, ',')
	}
	id, _ := json.Marshal(e.ID)
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"h":"`...)
	b = append(b, e.Hash...)
	return append(b, `"}`...)
}

type sentSnap struct {
	seq, streamSeq uint64
	list           []pubEntry
	pend           *Pending
}

// settledWithError reports whether the snapshot is settled with an error
// (one in flight may still be stored: its owner re-sends what fails).
func (p *Pending) settledWithError() bool { return p.isDone() && p.err != nil }

// refresh takes in what the owners of earlier snapshots settled, and
// starts the conversation over when its bodies are old enough that the
// streams may drop them (half their MaxAge, as the server reports it).
// The caller holds st.mu.
func (st *convState) refresh(p *Publisher) {
	if len(st.inflight) > 0 {
		// A settled snapshot's owner recorded what became of its bodies
		// (see record) before settling it.
		keep := st.inflight[:0]
		for _, d := range st.inflight {
			if !d.isDone() {
				keep = append(keep, d)
			}
		}
		clear(st.inflight[len(keep):])
		st.inflight = keep
	}
	if len(st.unsettled) > 0 {
		keep := st.unsettled[:0]
		for _, s := range st.unsettled {
			if !s.pend.isDone() {
				keep = append(keep, s)
				continue
			}
			// Settled without error: the manifest and every body it names
			// are stored, so later deltas may extend it.
			if s.pend.err == nil && (st.acked == nil || s.seq > st.acked.seq) {
				s.streamSeq = s.pend.res.StreamSeq
				st.acked = s
			}
		}
		clear(st.unsettled[len(keep):])
		st.unsettled = keep
	}
	if maxAge := p.Limits().MaxAge; st.bodies != nil && maxAge > 0 && time.Since(st.since) > maxAge/2 {
		st.reset()
	}
	if st.bodies == nil {
		st.bodies = map[string]*Pending{}
		st.since = time.Now()
		if st.seq == 0 {
			// Number above any earlier process's snapshots, so that
			// Nats-Msg-Id de-duplication never drops ours, without a round
			// trip on the agent's first publish: start from the clock in
			// microseconds (below 2^53, so exact in any JSON reader).
			st.seq = uint64(time.Now().UnixMicro())
		}
	}
}

// record takes in what became of the bodies d sent, once they are all
// stored or failed for good: stored ones are known to the conversation,
// failed ones are sent again with its next snapshot. d's owner calls it,
// holding st.mu, just before it settles d, so that the agent's next
// publish does not pay for it: a conversation's first snapshot sends every
// body (thousands in a long history) and its bookkeeping would otherwise
// fall on the turn after it. A snapshot published before the
// conversation's last reset records nothing: the reset forgot what was
// sent, so that everything is sent again.
func (st *convState) record(d *Pending) {
	if d.gen != st.gen || st.bodies == nil {
		return
	}
	for _, b := range d.bodies {
		if b.err == nil {
			// Stored, whichever snapshot sent it (a later one
			// sends what an earlier one failed to).
			st.bodies[b.hash] = nil
			delete(st.resend, b.hash)
			continue
		}
		if st.bodies[b.hash] != d {
			continue
		}
		delete(st.bodies, b.hash)
		if st.resend == nil {
			st.resend = map[string]*sentBody{}
		}
		st.resend[b.hash] = b
	}
}

// reset forgets everything but the numbering, so the next snapshot is a
// full manifest that sends every body again; the caller holds st.mu.
// Snapshots still in flight settle on their own; none depends on them.
func (st *convState) reset() {
	st.since, st.entries, st.bodies, st.resend, st.sinceFull, st.deltaBytes = time.Time{}, nil, nil, nil, 0, 0
	st.inflight, st.unsettled = nil, nil
	st.last, st.acked, st.lastOpts = nil, nil, publishOpts{}
	st.listJSON, st.ends, st.array = nil, nil, 0
	st.gen++
}

// pubEntry is a list entry plus the fingerprint of the message it came from.
type pubEntry struct {
	Entry
	fp msgPrint
}

func entriesOf(list []pubEntry) []Entry {
	out := make([]Entry, len(list))
	for i := range list {
		out[i] = list[i].Entry
	}
	return out
}

// commonPrefix returns the length of the longest common prefix of two
// lists. A list on the same array as a longer one is its prefix: a
// conversation's lists grow in place, each slot written once (a change
// other than an append makes a new array).
func commonPrefix(a, b []pubEntry) int {
	if len(a) > 0 && len(a) <= len(b) && &a[0] == &b[0] {
		return len(a)
	}
	n := 0
	for n < len(a) && n < len(b) && a[n].Entry == b[n].Entry {
		n++
	}
	return n
}

// msgPrint identifies a message's content without reading its bytes: Go
// strings are immutable, so a string with the same data pointer and length
// as one we kept (and keep alive by holding it) has the same content. The
// common fields are inline so the per-turn walk reads memory in sequence.
type msgPrint struct {
	id, role, text, name, toolCallID string
	shape                            [4]int   // parts (-1 for a plain string), tool calls, metadata, flags
	extra                            []string // parts, tool calls, then sorted metadata, in order
}

func fingerprint(m *briefd.Message) msgPrint {
	fp := msgPrint{id: m.ID, role: string(m.Role), text: m.Content.Text, name: m.Name, toolCallID: m.ToolCallID}
	for _, pt := range m.Content.Parts {
		fp.extra = append(fp.extra, pt.Type, pt.Text)
		if pt.ImageURL != nil {
			fp.extra = append(fp.extra, pt.ImageURL.URL, pt.ImageURL.Detail)
		}
	}
	for _, tc := range m.ToolCalls {
		fp.extra = append(fp.extra, tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments)
	}
	if len(m.Metadata) > 0 {
		keys := make([]string, 0, len(m.Metadata))
		for k := range m.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fp.extra = append(fp.extra, k, m.Metadata[k])
		}
	}
	parts := -1
	if m.Content.Parts != nil {
		parts = len(m.Content.Parts)
	}
	fp.shape = [4]int{parts, len(m.ToolCalls), len(m.Metadata), fingerprintFlags(m)}
	return fp
}

// fingerprintFlags packs the pinned mark and which parts have an image.
func fingerprintFlags(m *briefd.Message) int {
	flags := 0
	if m.Pinned {
		flags |= 1
	}
	for i, pt := range m.Content.Parts {
		if pt.ImageURL != nil {
			flags |= 2 << min(i, 60)
		}
	}
	return flags
}

func sameString(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// matches reports whether m is, field for field, the very strings fp was
// taken from. It reads no string bytes.
func (fp *msgPrint) matches(m *briefd.Message) bool {
	parts := -1
	if m.Content.Parts != nil {
		parts = len(m.Content.Parts)
	}
	if fp.shape[0] != parts || fp.shape[1] != len(m.ToolCalls) || fp.shape[2] != len(m.Metadata) || (fp.shape[3]&1 == 1) != m.Pinned {
		return false
	}
	if !sameString(fp.id, m.ID) || !sameString(fp.text, m.Content.Text) || !sameString(fp.role, string(m.Role)) ||
		!sameString(fp.name, m.Name) || !sameString(fp.toolCallID, m.ToolCallID) {
		return false
	}
	if parts <= 0 && len(m.ToolCalls) == 0 && len(m.Metadata) == 0 {
		return true
	}
	s, j := fp.extra, 0
	for _, pt := range m.Content.Parts {
		if j+1 >= len(s) || !sameString(s[j], pt.Type) || !sameString(s[j+1], pt.Text) {
			return false
		}
		j += 2
		if pt.ImageURL != nil {
			if j+1 >= len(s) || !sameString(s[j], pt.ImageURL.URL) || !sameString(s[j+1], pt.ImageURL.Detail) {
				return false
			}
			j += 2
		}
	}
	if parts > 0 && fingerprintFlags(m) != fp.shape[3] {
		return false
	}
	for _, tc := range m.ToolCalls {
		if j+3 >= len(s) || !sameString(s[j], tc.ID) || !sameString(s[j+1], tc.Type) ||
			!sameString(s[j+2], tc.Function.Name) || !sameString(s[j+3], tc.Function.Arguments) {
			return false
		}
		j += 4
	}
	if len(m.Metadata) > 0 {
		f2 := fingerprint(m)
		if len(f2.extra) != len(s) {
			return false
		}
		for i := j; i < len(s); i++ {
			if !sameString(f2.extra[i], s[i]) {
				return false
			}
		}
	}
	return true
}

// fullDue says whether the next snapshot should be a full manifest. A full
// manifest bounds the chain a cold reader walks, but costs the whole list:
// write one after every FullEvery deltas once those deltas add up to an
// eighth of a full list, so that a long history (where a full list is
// hundreds of kilobytes and a turn's delta a few hundred bytes) does not
// pay for its whole list every FullEvery turns; and always after
// 8 x FullEvery deltas, which keeps chains well below MaxChain.
func (st *convState) fullDue(every int) bool {
	n := st.sinceFull + 1
	return n >= 8*every || (n >= every && st.deltaBytes >= len(st.listJSON)/8)
}
