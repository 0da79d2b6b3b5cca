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
	"time"
	"unsafe"

	"github.com/briefd/briefd"
	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher publishes conversation snapshots the way docs/protocol.md
// describes, as an agent does. It remembers, per conversation, the list it
// published last, so a turn costs the new messages (marshal, hash, send)
// plus one pointer comparison per unchanged message, not a re-hash of the
// history. It keeps references to the strings of the messages it published
// last (no copies), so an agent that keeps its history pays no extra
// memory for them. It is safe for concurrent use; publishes of one
// conversation are serialized. Treat the strings of a published message as
// immutable (Go strings are, unless changed through unsafe).
type Publisher struct {
	js    jetstream.JetStream
	cfg   Config
	subj  Subjects
	enc   *zstd.Encoder
	convs *lru[string, *convState]
}

// NewPublisher returns a publisher on js. cfg is completed with
// WithDefaults; the streams must exist (see EnsureStreams).
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
}

// WithModel sets the manifest's model (the agent's model: encoding and
// context hints for the worker).
func WithModel(model string) PublishOption { return func(o *publishOpts) { o.model = model } }

// WithContextWindow sets the manifest's context window in tokens.
func WithContextWindow(n int) PublishOption { return func(o *publishOpts) { o.contextWindow = n } }

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
	// compression).
	Bodies, BodyBytes int
}

// Pending is an asynchronously published snapshot.
type Pending struct {
	mu      sync.Mutex // guards futures; never held while blocking
	res     PublishResult
	futures []jetstream.PubAckFuture // bodies, then the manifest last
}

// Result returns what was published; StreamSeq is 0 until Wait returns.
func (p *Pending) Result() PublishResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// Wait waits for every ack of the snapshot (bodies and manifest).
func (p *Pending) Wait(ctx context.Context) (PublishResult, error) {
	p.mu.Lock()
	n := len(p.futures)
	p.mu.Unlock()
	for i := range n {
		p.mu.Lock()
		f := p.futures[i]
		p.mu.Unlock()
		var ack *jetstream.PubAck
		var err error
		select {
		case ack = <-f.Ok():
		case err = <-f.Err():
		case <-ctx.Done():
			return p.Result(), fmt.Errorf("queue: wait for publish ack: %w", ctx.Err())
		}
		p.mu.Lock()
		// Put it back settled: a nats.go future's channels deliver once.
		p.futures[i] = doneFuture{f.Msg(), ack, err}
		if err == nil && i == n-1 {
			p.res.StreamSeq = ack.Sequence
			p.res.Duplicate = p.res.Duplicate || ack.Duplicate
		}
		res := p.res
		p.mu.Unlock()
		if err != nil {
			return res, fmt.Errorf("queue: publish %s: %w", f.Msg().Subject, err)
		}
	}
	return p.Result(), nil
}

// poll reports, without blocking, whether every ack arrived (done), the
// manifest's stream sequence, and the first error seen.
func (p *Pending) poll() (done bool, streamSeq uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done = true
	for i, f := range p.futures {
		select {
		case ack := <-f.Ok():
			p.futures[i] = doneFuture{f.Msg(), ack, nil}
			if i == len(p.futures)-1 {
				streamSeq = ack.Sequence
			}
		case e := <-f.Err():
			p.futures[i] = doneFuture{f.Msg(), nil, e}
			return true, 0, e
		default:
			done = false
		}
	}
	return done, streamSeq, nil
}

// doneFuture replays a settled future: the channels of nats.go futures
// deliver once.
type doneFuture struct {
	msg *nats.Msg
	ack *jetstream.PubAck
	err error
}

func (d doneFuture) Ok() <-chan *jetstream.PubAck {
	c := make(chan *jetstream.PubAck, 1)
	if d.ack != nil {
		c <- d.ack
	}
	return c
}

func (d doneFuture) Err() <-chan error {
	c := make(chan error, 1)
	if d.err != nil {
		c <- d.err
	}
	return c
}

func (d doneFuture) Msg() *nats.Msg { return d.msg }

// Publish publishes a snapshot of conversation conv of tenant tenant and
// waits for the server's acks. Only bodies this publisher has not sent for
// the conversation travel; the manifest is a delta on the last acked
// snapshot. If nothing changed since the last snapshot, nothing is
// published and the result has Duplicate set. Errors: ErrInvalidToken,
// ErrBodyTooLarge (nothing published), or a wrapped NATS error (the
// conversation's state is reset, so the next call re-sends everything).
func (p *Publisher) Publish(ctx context.Context, tenant, conv string, msgs []briefd.Message, opts ...PublishOption) (PublishResult, error) {
	pend, err := p.PublishAsync(ctx, tenant, conv, msgs, opts...)
	if err != nil {
		return PublishResult{}, err
	}
	res, err := pend.Wait(ctx)
	if err != nil {
		p.convs.remove(tenant + "." + conv)
		return res, err
	}
	return res, nil
}

// PublishAsync is Publish without waiting for acks: it returns once the
// messages are handed to the connection. A failed async publish is noticed
// on the conversation's next publish, which then re-sends everything; call
// Pending.Wait to see the error yourself.
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
	key := tenant + "." + conv
	st := p.convs.getOrAdd(key, func() *convState { return &convState{} })
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.refresh(ctx, p, tenant, conv); err != nil {
		return nil, err
	}

	// Walk the agent's list against the last one: unchanged messages (same
	// string pointers) keep their hash; the rest are marshalled and hashed.
	prev := st.entries
	same := 0
	for same < len(msgs) && same < len(prev) && prev[same].fp.matches(&msgs[same]) {
		same++
	}
	type newBody struct {
		subject, hash string
		body          []byte
	}
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
		if _, sent := st.bodies[h]; !sent && !seen[h] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[h] = true
			bodies = append(bodies, newBody{p.subj.Body(tenant, conv, h), h, body})
		}
	}
	var next []pubEntry
	if same == len(prev) {
		next = append(prev, added...) // prev is the longest list on its array
	} else {
		next = append(slices.Clip(prev[:same]), added...)
	}
	if same == len(msgs) && len(msgs) == len(prev) && st.last != nil && o == st.lastOpts {
		// Nothing changed: re-publishing would only add a manifest.
		res := st.last.res
		res.Duplicate, res.Bodies, res.BodyBytes = true, 0, 0
		return &Pending{res: res, futures: nil}, nil
	}

	// Choose the base: the newest acked snapshot, unless a full manifest
	// is due.
	man := Manifest{V: Version, Tenant: tenant, ConversationID: conv, Seq: st.seq + 1,
		Model: o.model, ContextWindow: o.contextWindow, CreatedAt: time.Now().UTC()}
	base := st.acked
	full := base == nil || st.fullDue(p.cfg.FullEvery)
	if !full {
		keep := same
		if base != st.last {
			// The newest snapshot is not acked yet: extend an older one.
			keep = commonPrefix(base.list, next)
		}
		man.Base, man.BaseStreamSeq, man.Keep = base.seq, base.streamSeq, keep
		man.Append = entriesOf(next[keep:])
	}
	data, err := json.Marshal(&man)
	if err != nil {
		return nil, fmt.Errorf("queue: marshal manifest: %w", err)
	}
	st.syncListJSON(next, same)
	if full {
		// Splice the kept list JSON in place of "append":null.
		i := bytes.Index(data, []byte(`"append":null`))
		if i < 0 {
			return nil, fmt.Errorf("queue: manifest encoding has no append field")
		}
		out := make([]byte, 0, len(data)+len(st.listJSON)+2)
		out = append(out, data[:i]...)
		out = append(out, `"append":[`...)
		out = append(out, st.listJSON...)
		out = append(out, ']')
		data = append(out, data[i+len(`"append":null`):]...)
	}

	pend := &Pending{res: PublishResult{Seq: man.Seq, Full: full}}
	maxPayload := int(p.js.Conn().MaxPayload())
	for _, b := range bodies {
		fs, n, err := p.publishBody(tenant, conv, b.subject, b.hash, b.body, maxPayload)
		pend.futures = append(pend.futures, fs...)
		pend.res.BodyBytes += n
		if err != nil {
			p.convs.remove(key)
			return nil, err
		}
		pend.res.Bodies++
	}
	sm := nats.NewMsg(p.subj.Snapshot(tenant, conv))
	sm.Header.Set(HeaderVersion, "1")
	sm.Header.Set(HeaderContentType, ContentTypeJSON)
	sm.Header.Set(HeaderMsgID, key+"."+strconv.FormatUint(man.Seq, 10))
	sm.Data = data
	f, err := p.js.PublishMsgAsync(sm)
	if err != nil {
		p.convs.remove(key)
		return nil, fmt.Errorf("queue: publish snapshot %s seq %d: %w", key, man.Seq, err)
	}
	pend.futures = append(pend.futures, f)

	for _, b := range bodies {
		st.bodies[b.hash] = struct{}{}
	}
	st.seq = man.Seq
	st.entries = next
	st.lastOpts = o
	st.last = &sentSnap{seq: man.Seq, list: next, pend: pend, res: pend.res}
	if full {
		st.sinceFull, st.deltaBytes = 0, 0
	} else {
		st.sinceFull++
		st.deltaBytes += len(data)
	}
	return pend, nil
}

// publishBody sends one body, chunked when its payload exceeds the
// connection's max payload (minus room for headers). It returns the
// futures and the payload size.
func (p *Publisher) publishBody(tenant, conv, subject, hash string, body []byte, maxPayload int) ([]jetstream.PubAckFuture, int, error) {
	payload, encoding := body, ""
	if !p.cfg.NoCompression && len(body) >= 512 {
		if z := p.enc.EncodeAll(body, make([]byte, 0, len(body)/2)); len(z) < len(body)*9/10 {
			payload, encoding = z, EncodingZstd
		}
	}
	msgID := subject[len(p.cfg.Prefix)+len(".body."):]
	head := nats.NewMsg(subject)
	head.Header.Set(HeaderVersion, "1")
	head.Header.Set(HeaderContentType, ContentTypeJSON)
	if encoding != "" {
		head.Header.Set(HeaderContentEncoding, encoding)
	}
	head.Header.Set(HeaderMsgID, msgID)
	var futures []jetstream.PubAckFuture
	chunk := maxPayload - 4096 // room for subject and headers
	if len(payload) > chunk {
		n := (len(payload) + chunk - 1) / chunk
		for i := range n {
			cm := nats.NewMsg(subject + "." + strconv.Itoa(i))
			cm.Header.Set(HeaderMsgID, msgID+"."+strconv.Itoa(i))
			cm.Data = payload[i*chunk : min((i+1)*chunk, len(payload))]
			f, err := p.js.PublishMsgAsync(cm)
			if err != nil {
				return futures, len(payload), fmt.Errorf("queue: publish body chunk %s.%d: %w", subject, i, err)
			}
			futures = append(futures, f)
		}
		head.Header.Set(HeaderChunks, strconv.Itoa(n))
		head.Header.Set(HeaderSize, strconv.Itoa(len(payload)))
	} else {
		head.Data = payload
	}
	f, err := p.js.PublishMsgAsync(head)
	if err != nil {
		return futures, len(payload), fmt.Errorf("queue: publish body %s: %w", subject, err)
	}
	return append(futures, f), len(payload), nil
}

// convState is what a Publisher remembers of one conversation.
type convState struct {
	mu         sync.Mutex
	seq        uint64              // last snapshot number used
	since      time.Time           // when bodies were last all re-sent
	entries    []pubEntry          // the list published last
	bodies     map[string]struct{} // hashes of bodies sent
	sinceFull  int                 // deltas since the last full manifest
	deltaBytes int                 // their bytes
	last       *sentSnap           // the snapshot published last
	acked      *sentSnap           // the newest snapshot known to be stored
	lastOpts   publishOpts
	// listJSON is the JSON of entries' list items, comma-separated, kept
	// incrementally so that a full manifest costs a copy, not an encode;
	// ends[i] is the offset just after item i.
	listJSON []byte
	ends     []int
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
	res            PublishResult
}

// refresh settles what is known of earlier async publishes and resets the
// state when it can no longer be trusted: an async publish failed, or the
// bodies are old enough that the stream may drop them (MaxAge).
func (st *convState) refresh(ctx context.Context, p *Publisher, tenant, conv string) error {
	if st.last != nil && st.last.streamSeq == 0 {
		done, seq, err := st.last.pend.poll()
		switch {
		case err != nil:
			p.cfg.Logger.Warn("queue: async publish failed; re-sending the conversation", "tenant", tenant, "conversation", conv, "err", err)
			st.reset()
		case done:
			st.last.streamSeq = seq
			st.last.res.StreamSeq = seq
			st.acked = st.last
		}
	}
	if st.bodies != nil && time.Since(st.since) > p.cfg.MaxAge/2 {
		st.reset()
	}
	if st.bodies == nil {
		st.bodies = map[string]struct{}{}
		st.since = time.Now()
		if st.seq == 0 {
			// Number above any earlier process's snapshots, so that
			// Nats-Msg-Id de-duplication never drops ours, without a round
			// trip on the agent's first publish: start from the clock in
			// microseconds (below 2^53, so exact in any JSON reader).
			st.seq = uint64(time.Now().UnixMicro())
		}
	}
	return nil
}

// reset forgets everything but the numbering; the caller holds st.mu.
func (st *convState) reset() {
	st.since, st.entries, st.bodies, st.sinceFull, st.deltaBytes = time.Time{}, nil, nil, 0, 0
	st.last, st.acked, st.lastOpts = nil, nil, publishOpts{}
	st.listJSON, st.ends = nil, nil
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

func commonPrefix(a, b []pubEntry) int {
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
