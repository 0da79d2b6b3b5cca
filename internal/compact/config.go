package compact

import (
	"errors"
	"fmt"
	"math"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
)

// Defaults of [Config], applied by [Config.WithDefaults]. They come from the
// seeds: the trigger and kept budget from Stagewise, the message minimum
// from seahorse.
const (
	DefaultContextWindow       = 128_000
	DefaultTriggerFraction     = 0.65
	DefaultHardCapTokens       = 200_000
	DefaultKeepFraction        = 0.2
	DefaultKeepCapTokens       = 40_000
	DefaultMinKeepMessages     = 10
	DefaultMinMessages         = 20
	DefaultBriefingRatio       = 0.10
	DefaultMinBriefingTokens   = 600
	DefaultMaxBriefingTokens   = 8192
	DefaultPerMessageOverhead  = 4
	DefaultForceKeepFraction   = 0.25
	DefaultMaxBriefingFraction = 0.15

	// KeepFloor is the fewest messages a kept tail holds, whatever
	// MinKeepMessages says (except when one last message alone is over the
	// kept budget: then the tail is just that message).
	KeepFloor = 5
)

// Config tunes the engine. The zero value of every field means its default;
// for the optional triggers zero (or -1) means off. Use [Config.WithDefaults]
// to see the effective values, and [Config.Validate] to check them; [New]
// does both.
type Config struct {
	// Model is the model the agent runs. It picks the token encoding:
	// o200k_base for the gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and o-series
	// families, cl100k_base otherwise (see [EncodingForModel]).
	Model string
	// Encoding overrides the encoding chosen from Model: "o200k_base" or
	// "cl100k_base".
	Encoding string
	// ContextWindow is the model's context window in tokens. Default 128,000.
	ContextWindow int
	// TriggerFraction of ContextWindow above which token pressure triggers
	// a compaction. Default 0.65.
	TriggerFraction float64
	// HardCapTokens caps the trigger: a 1M-token model triggers at the same
	// absolute count as a 200k one near its end. Default 200,000.
	HardCapTokens int
	// KeepFraction of ContextWindow kept verbatim after the boundary.
	// Default 0.2.
	KeepFraction float64
	// KeepCapTokens caps the kept budget. Default 40,000.
	KeepCapTokens int
	// KeepTokens, when positive, is the kept budget in tokens, replacing
	// KeepFraction and KeepCapTokens (a snapshot's control sets it per
	// conversation). Zero: off, the default.
	KeepTokens int
	// MinKeepMessages is the fewest messages the kept tail holds
	// (min_uncompressed); the floor used is max(KeepFloor, MinKeepMessages).
	// Default 10.
	MinKeepMessages int
	// MinMessages is the fewest messages a history needs before token
	// pressure alone triggers. The other triggers and Force ignore it.
	// Default 20; -1 means no minimum.
	MinMessages int
	// StepsTrigger, when positive, triggers a compaction once there are
	// that many assistant messages since the last spliced briefing (or
	// since the start). Zero or -1: off (the default). Pilo uses 25.
	StepsTrigger int
	// CharThreshold, when positive, triggers a compaction once the
	// history carries more than that many bytes of text (see
	// [briefd.Message.Size]). Zero or -1: off (the default). Pilo uses 40,000.
	CharThreshold int
	// BriefingRatio is the briefing's token budget as a fraction of the
	// compacted span's tokens, clamped to [MinBriefingTokens,
	// MaxBriefingTokens]. Default 0.10.
	BriefingRatio float64
	// MinBriefingTokens is the smallest budget. Default 600.
	MinBriefingTokens int
	// MaxBriefingTokens is the largest budget. Default 8192 (about the
	// 30,000 characters Stagewise aims at).
	MaxBriefingTokens int
	// MaxBriefingFraction caps the budget at a fraction of ContextWindow,
	// which bounds a chained briefing that folds earlier ones in. Default
	// 0.15.
	MaxBriefingFraction float64
	// ForceKeepFraction bounds the kept tail of a forced compaction (a
	// user's /compact): at most this fraction of the non-pinned history's
	// tokens and messages stays verbatim, so that the history shrinks
	// whatever the context window. Default 0.25.
	ForceKeepFraction float64
	// UserCapTokens bounds one user message the briefing carries verbatim
	// when its budget is short; over it the oldest are cut first, with a
	// marker. Default brief.DefaultUserCapTokens.
	UserCapTokens int
	// PerMessageOverhead is added to every message's count for the chat
	// framing: OpenAI counts 3 tokens per message plus 1 for the role.
	// Default 4; -1 means none.
	PerMessageOverhead int
	// Limits bound the histories the engine accepts (see [briefd.Validate]).
	Limits briefd.Limits
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Encoding == "" {
		c.Encoding = EncodingForModel(c.Model)
	}
	setInt := func(p *int, def int) {
		if *p == 0 {
			*p = def
		}
	}
	setFloat := func(p *float64, def float64) {
		if *p == 0 {
			*p = def
		}
	}
	setInt(&c.ContextWindow, DefaultContextWindow)
	setFloat(&c.TriggerFraction, DefaultTriggerFraction)
	setInt(&c.HardCapTokens, DefaultHardCapTokens)
	setFloat(&c.KeepFraction, DefaultKeepFraction)
	setInt(&c.KeepCapTokens, DefaultKeepCapTokens)
	setInt(&c.MinKeepMessages, DefaultMinKeepMessages)
	setInt(&c.MinMessages, DefaultMinMessages)
	setFloat(&c.BriefingRatio, DefaultBriefingRatio)
	setInt(&c.MinBriefingTokens, DefaultMinBriefingTokens)
	setInt(&c.MaxBriefingTokens, DefaultMaxBriefingTokens)
	setInt(&c.PerMessageOverhead, DefaultPerMessageOverhead)
	setFloat(&c.ForceKeepFraction, DefaultForceKeepFraction)
	setFloat(&c.MaxBriefingFraction, DefaultMaxBriefingFraction)
	setInt(&c.UserCapTokens, brief.DefaultUserCapTokens)
	return c
}

// ErrInvalidConfig is matched (with errors.Is) by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid compaction config")

// ConfigError names the field of a [Config] that is wrong, and why.
type ConfigError struct {
	Field string
	Value any
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("compact: config %s = %v: %v", e.Field, e.Value, e.Err)
}

// Unwrap returns the underlying reason.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate checks c after applying defaults, and returns the first problem
// as a *ConfigError. Above all it rejects a kept budget that is not below
// the trigger: such an engine would never find anything to compact.
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(field string, v any, format string, args ...any) error {
		return &ConfigError{Field: field, Value: v, Err: fmt.Errorf(format, args...)}
	}
	switch c.Encoding {
	case EncodingO200K, EncodingCL100K:
	default:
		return bad("Encoding", c.Encoding, "unknown encoding (want %s or %s)", EncodingO200K, EncodingCL100K)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"ContextWindow", c.ContextWindow},
		{"HardCapTokens", c.HardCapTokens},
		{"KeepCapTokens", c.KeepCapTokens},
		{"MinKeepMessages", c.MinKeepMessages},
		{"MinBriefingTokens", c.MinBriefingTokens},
		{"MaxBriefingTokens", c.MaxBriefingTokens},
		{"UserCapTokens", c.UserCapTokens},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return bad(p.name, p.v, "must be positive")
		}
	}
	fractions := []struct {
		name    string
		v       float64
		openTop bool
	}{
		{"TriggerFraction", c.TriggerFraction, false},
		{"KeepFraction", c.KeepFraction, true},
		{"BriefingRatio", c.BriefingRatio, false},
		{"ForceKeepFraction", c.ForceKeepFraction, true},
		{"MaxBriefingFraction", c.MaxBriefingFraction, false},
	}
	for _, f := range fractions {
		if math.IsNaN(f.v) || f.v <= 0 || f.v > 1 || (f.openTop && f.v == 1) {
			return bad(f.name, f.v, "must be a fraction in (0, 1)")
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"MinMessages", c.MinMessages}, {"StepsTrigger", c.StepsTrigger}, {"CharThreshold", c.CharThreshold}, {"PerMessageOverhead", c.PerMessageOverhead}} {
		if f.v < -1 {
			return bad(f.name, f.v, "must be positive, 0 (default) or -1 (off)")
		}
	}
	if c.MinBriefingTokens > c.MaxBriefingTokens {
		return bad("MinBriefingTokens", c.MinBriefingTokens, "above MaxBriefingTokens %d", c.MaxBriefingTokens)
	}
	if c.KeepTokens < 0 {
		return bad("KeepTokens", c.KeepTokens, "must be positive or 0 (off)")
	}
	if keep, trig := c.KeepBudget(), c.TriggerTokens(); keep >= trig {
		field, v := "KeepFraction", any(c.KeepFraction)
		if c.KeepTokens > 0 {
			field, v = "KeepTokens", c.KeepTokens
		}
		return bad(field, v,
			"kept budget %d tokens is not below the trigger %d tokens: nothing would ever compact", keep, trig)
	}
	return nil
}

// TriggerTokens is the token count above which token pressure triggers:
// min(TriggerFraction x ContextWindow, HardCapTokens). Call it on a config
// with defaults applied.
func (c Config) TriggerTokens() int {
	return min(int(c.TriggerFraction*float64(c.ContextWindow)), c.HardCapTokens)
}

// KeepBudget is the most tokens the kept tail aims at: KeepTokens when
// set, else min(KeepFraction x ContextWindow, KeepCapTokens). Call it on a
// config with defaults applied.
func (c Config) KeepBudget() int {
	if c.KeepTokens > 0 {
		return c.KeepTokens
	}
	return min(int(c.KeepFraction*float64(c.ContextWindow)), c.KeepCapTokens)
}

// keepFloor is the fewest messages the kept tail holds.
func (c Config) keepFloor() int { return max(KeepFloor, c.MinKeepMessages) }

// briefingBudget is the briefing's token budget for a span of spanTokens
// of which foldedTokens are an earlier briefing at its head: BriefingRatio
// of the new messages, plus room for what the earlier briefing carried
// (already condensed, it is not condensed again by the ratio), within
// MaxBriefingFraction of the context window and [MinBriefingTokens,
// MaxBriefingTokens]. Chained briefings so reach a steady size: old
// findings give way to new ones gradually, not all at once.
func (c Config) briefingBudget(spanTokens, foldedTokens int) int {
	b := int(c.BriefingRatio*float64(spanTokens-foldedTokens)) + foldedTokens
	b = min(b, int(c.MaxBriefingFraction*float64(c.ContextWindow)))
	b = min(max(b, c.MinBriefingTokens), c.MaxBriefingTokens)
	// A briefing of a small span must still shrink it: at most the folded
	// briefing and three quarters of the new messages (the writer grows it
	// only for what it must carry, and the engine then says the history
	// would not shrink).
	return max(min(b, foldedTokens+(spanTokens-foldedTokens)*3/4), min(b, 256))
}

// withControl returns c with a snapshot's control applied: its trigger
// fraction and kept budget replace c's. The result is checked as a Config
// is; a problem is an error matching briefd.ErrInvalidControl (and
// ErrInvalidConfig) that names the setting and the limit it broke.
func (c Config) withControl(ctl briefd.Control) (Config, error) {
	if err := ctl.Validate(); err != nil {
		return c, err
	}
	if ctl.TriggerFraction == 0 && ctl.KeepTokens == 0 {
		return c, nil
	}
	if ctl.TriggerFraction > 0 {
		c.TriggerFraction = ctl.TriggerFraction
	}
	if ctl.KeepTokens > 0 {
		c.KeepTokens = ctl.KeepTokens
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%w: %w", briefd.ErrInvalidControl, err)
	}
	return c, nil
}

// overhead returns the per-message overhead with -1 meaning none.
func (c Config) overhead() int { return max(c.PerMessageOverhead, 0) }
