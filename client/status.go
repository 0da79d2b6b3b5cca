package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
)

// ErrNoStatus is returned by Status when no worker has handled a snapshot
// of the conversation yet (or its status expired).
var ErrNoStatus = errors.New("client: no status")

// Status returns the workers' verdict on the newest snapshot of conv they
// handled (see [briefd.Status]): compacted, or why not, for example "not
// compacted yet: 8213 tokens now, trigger at 83200". It is one read of
// the store. Errors: ErrInvalidID, ErrNoStatus, ErrClosed, or a wrapped
// store error.
func (c *Client) Status(ctx context.Context, conv string) (*briefd.Status, error) {
	if err := checkConv(conv); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	st, err := c.store.Status(ctx, c.tenant, conv)
	if errors.Is(err, cache.ErrNotFound) {
		return nil, fmt.Errorf("client: status %s: %w", conv, ErrNoStatus)
	}
	if err != nil {
		return nil, fmt.Errorf("client: status %s: %w", conv, err)
	}
	return st, nil
}

// Poll intervals of AwaitStatus: it starts fast, since a deterministic
// compaction takes milliseconds, and backs off.
const (
	awaitFirstPoll = 20 * time.Millisecond
	awaitMaxPoll   = time.Second
)

// AwaitStatus waits until the workers have handled the newest snapshot of
// conv that this client published (or a newer one: a superseded snapshot's
// verdict is its successor's) and returns their verdict. Without such a
// snapshot it returns the first status it finds. It polls the store,
// backing off from 20 ms to 1 s, until ctx ends: give it a deadline, since
// no worker running means no verdict. When ctx ends first it returns the
// last status it saw, if any, with an error wrapping ctx's.
func (c *Client) AwaitStatus(ctx context.Context, conv string) (*briefd.Status, error) {
	if err := checkConv(conv); err != nil {
		return nil, err
	}
	want := c.pub.LastSeq(c.tenant, conv)
	var last *briefd.Status
	wait := awaitFirstPoll
	for {
		st, err := c.Status(ctx, conv)
		switch {
		case err == nil:
			last = st
			if st.Seq >= want {
				return st, nil
			}
		case errors.Is(err, ErrNoStatus):
		case ctx.Err() != nil:
		default:
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("client: await status of %s (snapshot %d): %w", conv, want, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, awaitMaxPoll)
	}
}
