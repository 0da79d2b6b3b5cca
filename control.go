package briefd

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// Mode says when a snapshot may be compacted.
type Mode string

// The compaction modes of a [Control].
const (
	// ModeAuto (or the empty Mode) compacts when a trigger fires: the
	// worker's settings, or the Control's TriggerFraction.
	ModeAuto Mode = "auto"
	// ModeNow compacts this snapshot whatever the triggers say, as a
	// user's /compact: the kept tail is then a bounded share of the
	// history, so that a meaningful part is compacted.
	ModeNow Mode = "now"
	// ModeNever does not compact this snapshot; the worker records why.
	ModeNever Mode = "never"
)

// Limits of a [Control], checked by [Control.Validate].
const (
	// MaxPins is the most message ids a Control may pin.
	MaxPins = 1024
	// MaxFocusBytes is the longest Focus.
	MaxFocusBytes = 4096
)

// ErrInvalidControl is matched (with errors.Is) by every error
// [Control.Validate] returns.
var ErrInvalidControl = errors.New("invalid control")

// Control is what an agent asks of the compaction of one snapshot, per
// conversation: when to compact and what to keep. It travels in the
// snapshot's manifest (the "control" object of docs/schema/snapshot.v1.json);
// the zero Control leaves every decision to the workers' settings.
//
// A Control applies to the snapshot that carries it only: it is not
// inherited from earlier snapshots, so an agent sends it with every
// snapshot it should govern (the Go client does, for the settings given to
// it once).
type Control struct {
	// Mode is auto (the default), now or never.
	Mode Mode `json:"mode,omitempty"`
	// TriggerFraction replaces the workers' trigger fraction: compact
	// once the history is over this fraction of the context window. In
	// (0, 1]; zero keeps the workers' setting.
	TriggerFraction float64 `json:"trigger_fraction,omitempty"`
	// KeepTokens is the kept tail's budget in tokens (the recent messages
	// kept verbatim after the boundary), instead of the workers' share of
	// the context window. It must stay below the trigger. Zero keeps the
	// workers' setting.
	KeepTokens int `json:"keep_tokens,omitempty"`
	// Pin names messages that are never compacted, as if they carried
	// "pinned": true: they stay before the briefing, in order. Only
	// system, user and plain assistant messages (without tool calls) can
	// be pinned; ids the history does not hold are ignored.
	Pin []string `json:"pin,omitempty"`
	// Focus is free text naming what the briefing must keep above all
	// ("everything about the database migration"): what it names ranks
	// higher when the briefing's budget is short.
	Focus string `json:"focus,omitempty"`
}

// IsZero reports whether c asks for nothing.
func (c Control) IsZero() bool {
	return (c.Mode == "" || c.Mode == ModeAuto) && c.TriggerFraction == 0 && c.KeepTokens == 0 &&
		len(c.Pin) == 0 && c.Focus == ""
}

// Validate checks what can be checked without the workers' settings:
// a known mode, a trigger fraction in (0, 1], a non-negative kept budget,
// at most [MaxPins] non-empty ids, and a focus of valid UTF-8 of at most
// [MaxFocusBytes]. Whether KeepTokens stays below the trigger depends on
// the context window; the worker checks it. Errors match
// [ErrInvalidControl].
func (c Control) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidControl, fmt.Sprintf(format, args...))
	}
	switch c.Mode {
	case "", ModeAuto, ModeNow, ModeNever:
	default:
		return bad("mode %q (want auto, now or never)", c.Mode)
	}
	if math.IsNaN(c.TriggerFraction) || c.TriggerFraction < 0 || c.TriggerFraction > 1 {
		return bad("trigger_fraction %v is not in (0, 1]", c.TriggerFraction)
	}
	if c.KeepTokens < 0 {
		return bad("keep_tokens %d < 0", c.KeepTokens)
	}
	if len(c.Pin) > MaxPins {
		return bad("%d pinned ids, more than %d", len(c.Pin), MaxPins)
	}
	for i, id := range c.Pin {
		if id == "" {
			return bad("pin[%d] is empty", i)
		}
		if len(id) > DefaultMaxIDLength || !utf8.ValidString(id) {
			return bad("pin[%d] is not a valid message id", i)
		}
	}
	if len(c.Focus) > MaxFocusBytes {
		return bad("focus is %d bytes, more than %d", len(c.Focus), MaxFocusBytes)
	}
	if !utf8.ValidString(c.Focus) {
		return bad("focus is not valid UTF-8")
	}
	return nil
}

// Merge returns c with the settings of over laid on top: each field over
// sets wins, and pins add up (in order, without repeats). The Go client
// merges its default Control, a conversation's, and a publish's this way.
func (c Control) Merge(over Control) Control {
	out := c
	if over.Mode != "" {
		out.Mode = over.Mode
	}
	if over.TriggerFraction != 0 {
		out.TriggerFraction = over.TriggerFraction
	}
	if over.KeepTokens != 0 {
		out.KeepTokens = over.KeepTokens
	}
	if over.Focus != "" {
		out.Focus = over.Focus
	}
	if len(over.Pin) > 0 {
		out.Pin = slices.Clone(c.Pin)
		for _, id := range over.Pin {
			if !slices.Contains(out.Pin, id) {
				out.Pin = append(out.Pin, id)
			}
		}
	}
	return out
}

// Equal reports whether c and d ask for the same.
func (c Control) Equal(d Control) bool {
	norm := func(m Mode) Mode {
		if m == "" {
			return ModeAuto
		}
		return m
	}
	return norm(c.Mode) == norm(d.Mode) && c.TriggerFraction == d.TriggerFraction && c.KeepTokens == d.KeepTokens &&
		c.Focus == d.Focus && slices.Equal(c.Pin, d.Pin)
}
