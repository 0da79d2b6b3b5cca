package client

import (
	"fmt"

	"github.com/briefd/briefd"
)

// WithControl sets the compaction control every snapshot of the client
// carries (see [briefd.Control]): a trigger fraction, a kept-tail budget,
// pinned message ids, a focus, or a mode. A conversation's control
// ([Client.SetControl]) and a publish's options are laid over it. New
// returns an error wrapping briefd.ErrInvalidControl for an invalid one.
func WithControl(c briefd.Control) Option { return func(o *options) { o.control = c } }

// WithNumbering makes Publish and Prepare give every message without an id
// its position id (m0001, m0002, ...; see [briefd.NumberMessages]), so
// that histories in plain OpenAI form, whose messages have none, can be
// published. Prepare returns the history with those ids. It suits an
// agent that keeps its whole history and appends to it; an agent that
// keeps the spliced history, or edits earlier messages, must give its
// messages stable ids itself, since positions shift.
func WithNumbering() Option { return func(o *options) { o.numbering = true } }

// PublishOption adjusts the control of one snapshot: it is laid over the
// client's and the conversation's controls for this Publish only.
type PublishOption func(*briefd.Control)

// CompactNow asks the workers to compact this snapshot whatever the
// triggers say, as a user's /compact does (control mode "now"); focus, if
// not empty, names what the briefing must keep above all. The snapshot is
// never superseded by a newer one of the conversation, so the request is
// not lost to the agent's next turn; its briefing applies to later
// histories as usual.
func CompactNow(focus string) PublishOption {
	return func(c *briefd.Control) {
		c.Mode = briefd.ModeNow
		if focus != "" {
			c.Focus = focus
		}
	}
}

// SnapshotControl lays ctl over the snapshot's control: the fields ctl
// sets win, and its pins add to the others (see [briefd.Control.Merge]).
func SnapshotControl(ctl briefd.Control) PublishOption {
	return func(c *briefd.Control) { *c = c.Merge(ctl) }
}

// SetControl sets the control every later snapshot of conversation conv
// carries, laid over the client's ([WithControl]); the zero Control clears
// it. Use it for per-conversation settings: never compact
// (Mode briefd.ModeNever), a trigger fraction, a kept budget, pins, a
// focus. Forget clears it too. Errors: ErrInvalidID, ErrClosed, or an
// error wrapping briefd.ErrInvalidControl.
func (c *Client) SetControl(conv string, ctl briefd.Control) error {
	if err := checkConv(conv); err != nil {
		return err
	}
	if err := ctl.Validate(); err != nil {
		return fmt.Errorf("client: control of %s: %w", conv, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if ctl.IsZero() {
		delete(c.controls, conv)
	} else {
		c.controls[conv] = ctl
	}
	return nil
}

// control returns the control of a snapshot of conv: the client's, the
// conversation's, then opts. The caller holds c.mu.
func (c *Client) controlLocked(conv string, opts []PublishOption) briefd.Control {
	ctl := c.control.Merge(c.controls[conv])
	for _, o := range opts {
		o(&ctl)
	}
	return ctl
}
