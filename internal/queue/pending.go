package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Pending is an asynchronously published snapshot. One goroutine owns its
// acks: it alone reads the futures nats.go returned (whose channels
// deliver once), re-sends what failed, waits for the earlier snapshots
// whose bodies this one names, and then settles the Pending once. Every
// other reader (Wait, Done, OnDone, the publisher's next snapshot) reads
// the settled result, never a future.
type Pending struct {
	sent   PublishResult // as published; never changes
	bodies []*sentBody   // bodies this snapshot sent (new and re-sent)
	man    *nats.Msg     // the manifest (nil for a duplicate, which sends nothing)
	manF   jetstream.PubAckFuture
	list   []pubEntry // the snapshot's list, read only when a dependency failed
	// A full manifest is sent after PublishAsync returns (see
	// convState.deferred): unsent until then, its data lacking the list,
	// fullList. Both guarded by st.mu.
	unsent   bool
	fullList []byte
	deps     []*Pending // the conversation's earlier snapshots still in flight at publish
	st       *convState // its conversation, to re-send the manifest in order
	gen      uint64     // st.gen when published (see convState.record)

	done chan struct{} // closed once settled
	// bodiesDone is closed once the bodies this snapshot sent are stored
	// or failed for good; a later snapshot naming them waits for it, then
	// reads stored, which no one writes after: the owner goes on to append
	// the bodies it adopts to bodies, and to re-send them, while later
	// snapshots read (a torn read of bodies crashed a publisher under
	// faults).
	bodiesDone chan struct{}
	stored     []*sentBody
	// prev is the conversation's snapshot published before this one;
	// manSent is closed once this one's manifest was sent, or will not be:
	// the next snapshot's manifest waits for it.
	prev    *Pending
	manSent chan struct{}
	// Written by the owner only; read by others only after done.
	res        PublishResult // sent plus the manifest's ack
	err        error
	manifestOK bool
	superseded bool // the manifest failed and a newer snapshot was published since

	mu        sync.Mutex // guards callbacks and settled
	settled   bool
	callbacks []func(PublishResult, error)
}

// sentBody is one body a snapshot sent: enough to send it again, chunked
// for the limits of the moment.
type sentBody struct {
	hash, subject, msgID string
	payload              []byte // after compression: what is stored
	encoding             string
	futures              []jetstream.PubAckFuture // of the attempt in flight
	err                  error                    // set by the owner: nil once stored
}

func settledPending(res PublishResult) *Pending {
	p := &Pending{sent: res, res: res, done: make(chan struct{}), bodiesDone: make(chan struct{}), manSent: make(chan struct{}),
		manifestOK: true, settled: true}
	close(p.done)
	close(p.bodiesDone)
	close(p.manSent)
	return p
}

// Result returns what was published; StreamSeq is 0 until the snapshot is
// settled (see Done).
func (p *Pending) Result() PublishResult {
	select {
	case <-p.done:
		return p.res
	default:
		return p.sent
	}
}

// Done is closed once the snapshot is settled: every body it names is
// stored and its manifest acked, or something failed for good.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait waits until the snapshot is settled and returns its result and
// error, or ctx's error first. The error is nil only if the manifest is
// stored and every body the snapshot names is stored too (bodies that an
// earlier, still unacknowledged snapshot sent included), so a worker can
// resolve it.
func (p *Pending) Wait(ctx context.Context) (PublishResult, error) {
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return p.Result(), fmt.Errorf("queue: wait for publish ack: %w", ctx.Err())
	}
}

// OnDone arranges for f to be called once with Wait's result when the
// snapshot is settled: on the goroutine that owns the acks, or at once on
// the caller's if it is settled already. f must not block.
func (p *Pending) OnDone(f func(PublishResult, error)) {
	p.mu.Lock()
	if !p.settled {
		p.callbacks = append(p.callbacks, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	f(p.res, p.err)
}

func (p *Pending) isDone() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// own is the goroutine that owns the snapshot's acks. The bodies go
// first, and the manifest only once every body it names is stored (its
// own, re-sent while they fail, and those earlier snapshots sent): a
// manifest in the stream then always names stored bodies, so no worker
// finds one missing. Bodies and manifests live in two streams, which in a
// cluster have two leaders: sent together, a manifest could be stored
// while its body's publish failed, and its snapshot was dead-lettered
// before the body's re-send arrived.
func (p *Pending) own(pub *Publisher, key string) {
	err := p.storeBodies(pub, key)
	p.stored = slices.Clip(p.bodies)
	close(p.bodiesDone)
	// Bodies this snapshot names that an earlier one failed to store are
	// this one's to send now.
	var adopted []*sentBody
	for _, d := range p.deps {
		<-d.bodiesDone
		adopted = append(adopted, d.failedBodiesOf(p.list, p.bodies, adopted)...)
	}
	if err == nil && len(adopted) > 0 {
		p.bodies = append(p.bodies, adopted...)
		err = p.storeBodies(pub, key)
	}
	// Manifests go out in the order the snapshots were published.
	if p.prev != nil {
		<-p.prev.manSent
		p.prev = nil
	}
	if err != nil {
		close(p.manSent)
	} else {
		p.sendManifest(pub, key)
		close(p.manSent)
		pub.await(p)
		retry := pub.newRetrier()
		for attempt := 1; p.man != nil && !p.manifestOK && !p.superseded; attempt++ {
			wait, ok := retry.next(p.isNewest(pub, key), p.err)
			if !ok {
				break
			}
			pub.cfg.Logger.Debug("queue: manifest not stored; re-sending", "conversation", key, "seq", p.res.Seq, "attempt", attempt, "in", wait, "err", p.err)
			time.Sleep(wait)
			p.sendManifest(pub, key)
			pub.await(p)
		}
		switch {
		case p.manifestOK:
		case p.superseded && p.err == nil:
			err = fmt.Errorf("queue: snapshot %s seq %d not sent: %w", key, p.res.Seq, ErrSuperseded)
		case p.superseded:
			err = fmt.Errorf("queue: snapshot %s seq %d not stored (%w), and not re-sent: %w", key, p.res.Seq, p.err, ErrSuperseded)
		default:
			err = p.err
		}
	}
	if err != nil && !errors.Is(err, ErrSuperseded) && !p.isNewest(pub, key) {
		// A newer snapshot was published while this one was in flight: it
		// sends the bodies this one could not, and names every message.
		err = fmt.Errorf("%w (a newer snapshot carries its messages: %w)", err, ErrSuperseded)
	}
	if err != nil {
		// The caller hears of it (Wait, OnDone); the client logs it once.
		pub.cfg.Logger.Debug("queue: snapshot not stored", "conversation", key, "seq", p.res.Seq, "err", err)
	}
	// What became of the bodies is the conversation's to know before the
	// snapshot counts as settled (its next publish relies on it).
	p.st.mu.Lock()
	p.st.record(p)
	p.st.mu.Unlock()
	// Drop the references to earlier snapshots, so that a conversation
	// publishing faster than its acks does not chain them all in memory.
	p.deps, p.list, p.st = nil, nil, nil
	p.settle(err)
}

// storeBodies waits for the acks of the bodies the snapshot sent and
// re-sends those that fail (Config.PublishRetries), and returns the first
// error of a body still not stored.
func (p *Pending) storeBodies(pub *Publisher, key string) error {
	pub.await(p)
	retry := pub.newRetrier()
	for attempt := 1; p.bodyErr() != nil; attempt++ {
		err := p.bodyErr()
		wait, ok := retry.next(p.isNewest(pub, key), err)
		if !ok {
			break
		}
		pub.cfg.Logger.Debug("queue: publish failed; re-sending", "conversation", key, "seq", p.res.Seq, "attempt", attempt, "in", wait, "err", err)
		time.Sleep(wait)
		var api *jetstream.APIError
		if errors.As(err, &api) {
			// The server refused: its limits may have changed (a smaller
			// max_msg_size, say); send by the ones it has now.
			ctx, cancel := context.WithTimeout(context.Background(), pub.cfg.AckTimeout)
			if err := pub.RefreshLimits(ctx); err != nil {
				pub.cfg.Logger.Warn("queue: cannot read the stream limits", "err", err)
			}
			cancel()
		}
		limit := pub.payloadLimit()
		for _, b := range p.bodies {
			if b.err != nil {
				if b.err = b.send(pub.js, limit); b.err != nil {
					b.futures = nil
				}
			}
		}
		pub.await(p)
	}
	return p.bodyErr()
}

// writeFull writes the list into a full manifest's data, once (the owner
// and the conversation's next snapshot both may call it); the caller holds
// p.st.mu.
func (p *Pending) writeFull() {
	if !p.unsent {
		return
	}
	p.unsent = false
	const null = `"append":null`
	data := p.man.Data
	i := bytes.Index(data, []byte(null))
	out := make([]byte, 0, len(data)+len(p.fullList)+2)
	out = append(out, data[:i]...)
	out = append(out, `"append":[`...)
	out = append(out, p.fullList...)
	out = append(out, ']')
	p.man.Data, p.fullList = append(out, data[i+len(null):]...), nil
}

// sendManifest publishes the manifest, unless a newer snapshot's manifest
// of the conversation was sent already: stored after it, the older one
// would pass for the conversation's newest (the newer one names every
// message this one does). Holding the conversation's lock keeps the
// manifests of one conversation in order on the connection.
func (p *Pending) sendManifest(pub *Publisher, key string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if p.st.deferred == p {
		p.st.deferred = nil
	}
	if cur, ok := pub.convs.get(key); !ok || cur != p.st || p.st.manifestSeq > p.res.Seq {
		p.superseded = true
		return
	}
	p.writeFull()
	// No retry inside nats.go: it re-sends a publish that found no
	// responder (a stream without a leader for a moment) 250 ms later,
	// which lands after a newer manifest sent meanwhile. Re-sends are
	// this owner's, under the check above.
	f, err := pub.js.PublishMsgAsync(p.man, jetstream.WithRetryAttempts(0))
	if err != nil {
		p.err = fmt.Errorf("queue: publish snapshot %s seq %d: %w", key, p.res.Seq, err)
		return
	}
	p.manF = f
	p.st.manifestSeq = p.res.Seq
}

// await collects the acks of the attempt in flight, for at most
// Config.AckTimeout.
func (pub *Publisher) await(p *Pending) {
	timer := time.NewTimer(pub.cfg.AckTimeout)
	defer timer.Stop()
	wait := func(f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
		select {
		case ack := <-f.Ok():
			return ack, nil
		case err := <-f.Err():
			if errors.Is(err, jetstream.ErrNoStreamResponse) {
				// No stream on the subject: say who creates them.
				err = fmt.Errorf("%w: %w", ErrNoStream, err)
			}
			return nil, err
		case <-timer.C:
			// Fired once; later waits of this attempt fail at once.
			timer.Reset(0)
			return nil, jetstream.ErrAsyncPublishTimeout
		}
	}
	for _, b := range p.bodies {
		if b.futures == nil {
			continue // failed to send: b.err is set
		}
		b.err = nil
		for _, f := range b.futures {
			if _, err := wait(f); err != nil && b.err == nil {
				b.err = fmt.Errorf("queue: publish %s: %w", f.Msg().Subject, err)
			}
		}
		b.futures = nil
	}
	if p.manF != nil {
		ack, err := wait(p.manF)
		p.manF = nil
		if err != nil {
			p.err = fmt.Errorf("queue: publish %s seq %d: %w", p.man.Subject, p.res.Seq, err)
		} else {
			p.err, p.manifestOK = nil, true
			p.res.StreamSeq = ack.Sequence
			p.res.Duplicate = ack.Duplicate
		}
	}
}

// bodyErr returns the error of a body the last attempt failed to store,
// or nil.
func (p *Pending) bodyErr() error {
	for _, b := range p.bodies {
		if b.err != nil {
			return b.err
		}
	}
	return nil
}

// failedBodiesOf returns copies of the bodies p failed to store that
// list names and neither have nor more hold already, to be sent again.
// p's bodies must be done (bodiesDone closed).
func (p *Pending) failedBodiesOf(list []pubEntry, have, more []*sentBody) []*sentBody {
	var failed map[string]*sentBody
	for _, b := range p.stored {
		if b.err != nil {
			if failed == nil {
				failed = map[string]*sentBody{}
			}
			failed[b.hash] = b
		}
	}
	if failed == nil {
		return nil
	}
	held := map[string]bool{}
	for _, b := range append(slices.Clip(have), more...) {
		held[b.hash] = true
	}
	var out []*sentBody
	for _, e := range list {
		if b, ok := failed[e.Hash]; ok && !held[e.Hash] {
			held[e.Hash] = true
			out = append(out, &sentBody{hash: b.hash, subject: b.subject, msgID: b.msgID, payload: b.payload,
				encoding: b.encoding, err: fmt.Errorf("sent with snapshot %d: %w", p.res.Seq, b.err)})
		}
	}
	return out
}

// isNewest reports whether p is its conversation's newest snapshot.
func (p *Pending) isNewest(pub *Publisher, key string) bool {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	cur, ok := pub.convs.get(key)
	return ok && cur == p.st && p.st.seq == p.res.Seq
}

// settle records the outcome, closes done and runs the callbacks.
func (p *Pending) settle(err error) {
	p.err = err
	p.mu.Lock()
	p.settled = true
	cbs := p.callbacks
	p.callbacks = nil
	p.mu.Unlock()
	close(p.done)
	for _, f := range cbs {
		f(p.res, p.err)
	}
}

// retrier schedules the re-sends of one snapshot's failed publishes:
// Config.PublishRetries of them, waiting from Config.PublishRetryWait and
// doubling up to 8 times it, with jitter; then, while the snapshot is its
// conversation's newest, more until Config.PublishRetryFor has passed.
type retrier struct {
	pub   *Publisher
	cfg   *Config
	bo    *backoff.ExponentialBackOff
	n     int
	start time.Time
}

func (pub *Publisher) newRetrier() *retrier {
	return &retrier{pub: pub, cfg: &pub.cfg, start: time.Now(), bo: backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(pub.cfg.PublishRetryWait),
		backoff.WithMaxInterval(8*pub.cfg.PublishRetryWait),
		backoff.WithMaxElapsedTime(0),
	)}
}

// next returns the wait before the next re-send after err, or false to
// give up. Streams that do not exist are not waited for: no stream
// answering is also what a stream without a leader looks like for a
// moment, so that is asked of the server.
func (r *retrier) next(newest bool, err error) (time.Duration, bool) {
	r.n++
	switch {
	case r.n <= r.cfg.PublishRetries:
	case newest && r.cfg.PublishRetryFor > 0 && time.Since(r.start) < r.cfg.PublishRetryFor && !r.streamsMissing(err):
	default:
		return 0, false
	}
	return r.bo.NextBackOff(), true
}

// streamsMissing reports whether err says no stream answered and the
// streams indeed do not exist.
func (r *retrier) streamsMissing(err error) bool {
	if !errors.Is(err, ErrNoStream) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return errors.Is(r.pub.RefreshLimits(ctx), ErrNoStream)
}
