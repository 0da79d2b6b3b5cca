package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrMaxPayloadTooSmall is returned, before anything is published, when a
// body must be chunked and the server's max_payload (or the body stream's
// maximum message size) leaves too little room for a chunk beside its
// headers.
var ErrMaxPayloadTooSmall = errors.New("max payload too small for a body chunk")

// MinChunkBytes is the smallest chunk a publisher splits a body into; a
// payload limit that leaves less is ErrMaxPayloadTooSmall.
const MinChunkBytes = 256

// headerSlack is kept free in every body message beside its exact header
// size: nats-server and nats.go count the same bytes, but a margin costs
// nothing and survives a header added by a future nats.go.
const headerSlack = 64

// Limits are the settings of the streams a publisher follows: read from
// the server, never assumed.
type Limits struct {
	// MaxAge is the shorter MaxAge of the body and snapshot streams; 0 means
	// they keep messages forever.
	MaxAge time.Duration
	// BodyMaxMsgSize is the body stream's maximum message size (headers
	// included); 0 means none beyond the server's max_payload.
	BodyMaxMsgSize int
	// ReadAt is when they were read; zero until the first successful read,
	// in which case MaxAge is Config.MaxAge.
	ReadAt time.Time
}

// Limits returns the stream settings the publisher follows now.
func (p *Publisher) Limits() Limits {
	if l := p.limits.Load(); l != nil {
		return *l
	}
	return Limits{MaxAge: p.cfg.MaxAge}
}

// RefreshLimits reads the streams' MaxAge and the body stream's maximum
// message size from the server (two STREAM.INFO requests, which the agent
// needs permission for: $JS.API.STREAM.INFO.<stream>). A publisher also
// calls it on its own every Config.LimitsRefresh, in the background, and
// after a publish the server refused, so a change of the streams'
// configuration reaches running agents.
func (p *Publisher) RefreshLimits(ctx context.Context) error {
	p.lastRefresh.Store(time.Now().UnixNano())
	names := p.cfg.Streams()
	l := Limits{ReadAt: time.Now()}
	for _, name := range []string{names.Bodies, names.Snapshots} {
		s, err := p.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("queue: read the limits of stream %s: %w: %w", name, ErrNoStream, err)
		}
		if err != nil {
			return fmt.Errorf("queue: read the limits of stream %s: %w", name, err)
		}
		sc := s.CachedInfo().Config
		if sc.MaxAge > 0 && (l.MaxAge == 0 || sc.MaxAge < l.MaxAge) {
			l.MaxAge = sc.MaxAge
		}
		if name == names.Bodies && sc.MaxMsgSize > 0 {
			l.BodyMaxMsgSize = int(sc.MaxMsgSize)
		}
	}
	if old := p.limits.Swap(&l); old == nil || old.MaxAge != l.MaxAge || old.BodyMaxMsgSize != l.BodyMaxMsgSize {
		p.cfg.Logger.Debug("queue: stream limits", "max_age", l.MaxAge, "body_max_msg_size", l.BodyMaxMsgSize)
	}
	return nil
}

// syncLimitsTimeout bounds a read of the limits that a publish waits for:
// one round trip to a connected server.
const syncLimitsTimeout = 2 * time.Second

// maybeRefreshLimits re-reads the limits when the last read is older than
// Config.LimitsRefresh: in the background, or, when wait is set and the
// connection is up, before returning (bounded by ctx and 2 seconds, so a
// publish never waits long). A failed read keeps the last known limits.
func (p *Publisher) maybeRefreshLimits(ctx context.Context, wait bool) {
	if time.Since(time.Unix(0, p.lastRefresh.Load())) < p.cfg.LimitsRefresh || !p.refreshing.CompareAndSwap(false, true) {
		return
	}
	p.lastRefresh.Store(time.Now().UnixNano())
	timeout := p.cfg.AckTimeout
	if wait = wait && p.js.Conn().IsConnected(); wait {
		timeout = min(timeout, syncLimitsTimeout)
	}
	read := func(ctx context.Context) {
		defer p.refreshing.Store(false)
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := p.RefreshLimits(ctx); err != nil {
			p.cfg.Logger.Warn("queue: cannot read the stream limits; keeping the last known", "max_age", p.Limits().MaxAge, "err", err)
		}
	}
	if wait {
		read(ctx)
		return
	}
	go read(context.Background())
}

// payloadLimit is the largest message (headers and data) the server takes
// on the body stream now: the connection's max payload (from the server's
// INFO, current after every reconnect) or the body stream's maximum
// message size, whichever is smaller.
func (p *Publisher) payloadLimit() int {
	limit := int(p.js.Conn().MaxPayload())
	if l := p.limits.Load(); l != nil && l.BodyMaxMsgSize > 0 && l.BodyMaxMsgSize < limit {
		limit = l.BodyMaxMsgSize
	}
	return limit
}

// headerBytes is the size of h as NATS sends it: "NATS/1.0\r\n", a
// "Key: value\r\n" line per value, and a closing "\r\n".
func headerBytes(h nats.Header) int {
	n := len("NATS/1.0\r\n") + 2
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n
}

// chunkSize returns 0 when b's payload fits one message of limit bytes,
// else the size of the chunks to split it into, or ErrMaxPayloadTooSmall.
func (b *sentBody) chunkSize(limit int) (int, error) {
	if len(b.payload)+headerBytes(b.header(0, 0))+headerSlack <= limit {
		return 0, nil
	}
	// A chunk's only header is its message id; count its longest form.
	over := headerBytes(nats.Header{HeaderMsgID: {b.msgID + ".99999999999/99999999999"}})
	chunk := limit - over - headerSlack
	if chunk < MinChunkBytes || headerBytes(b.header(len(b.payload)/max(chunk, 1)+1, chunk))+headerSlack > limit {
		return 0, fmt.Errorf("queue: body %s is %d bytes and a payload limit of %d bytes leaves %d for a chunk, at least %d needed (raise the server's max_payload or the body stream's max_msg_size): %w",
			b.subject, len(b.payload), limit, max(chunk, 0), MinChunkBytes, ErrMaxPayloadTooSmall)
	}
	return chunk, nil
}

// header is the header of b's head message: of a single message when
// chunks is 0, else of a head naming chunks chunks of chunk bytes.
func (b *sentBody) header(chunks, chunk int) nats.Header {
	h := nats.Header{}
	h.Set(HeaderVersion, "1")
	h.Set(HeaderContentType, ContentTypeJSON)
	if b.encoding != "" {
		h.Set(HeaderContentEncoding, b.encoding)
	}
	if chunks == 0 {
		h.Set(HeaderMsgID, b.msgID)
		return h
	}
	// The chunk size is part of the ids of a chunked body's messages, so
	// that a body re-chunked after the server's limits changed is never
	// de-duplicated against messages of the other layout.
	h.Set(HeaderMsgID, b.msgID+"/"+strconv.Itoa(chunk))
	h.Set(HeaderChunks, strconv.Itoa(chunks))
	h.Set(HeaderSize, strconv.Itoa(len(b.payload)))
	return h
}

// send hands b to the connection, chunked when it does not fit limit:
// chunks first, so that a stored head implies its chunks. It replaces b's
// futures with this attempt's.
func (b *sentBody) send(js jetstream.JetStream, limit int) error {
	b.futures = b.futures[:0]
	chunk, err := b.chunkSize(limit)
	if err != nil {
		return err
	}
	head := &nats.Msg{Subject: b.subject}
	if chunk == 0 {
		head.Header, head.Data = b.header(0, 0), b.payload
	} else {
		n := (len(b.payload) + chunk - 1) / chunk
		for i := range n {
			cm := &nats.Msg{Subject: b.subject + "." + strconv.Itoa(i), Header: nats.Header{}}
			cm.Header.Set(HeaderMsgID, b.msgID+"."+strconv.Itoa(i)+"/"+strconv.Itoa(chunk))
			cm.Data = b.payload[i*chunk : min((i+1)*chunk, len(b.payload))]
			f, err := js.PublishMsgAsync(cm)
			if err != nil {
				return fmt.Errorf("queue: publish body chunk %s.%d: %w", b.subject, i, err)
			}
			b.futures = append(b.futures, f)
		}
		head.Header = b.header(n, chunk)
	}
	f, err := js.PublishMsgAsync(head)
	if err != nil {
		return fmt.Errorf("queue: publish body %s: %w", b.subject, err)
	}
	b.futures = append(b.futures, f)
	return nil
}
