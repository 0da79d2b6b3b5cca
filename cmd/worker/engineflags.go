package main

import (
	"flag"

	"github.com/briefd/briefd/internal/compact"
)

// bindEngineFlags binds the compaction engine's settings to fs. Every flag
// defaults to cfg's current value (zero: the engine's default, applied by
// compact.Config.WithDefaults), and envflag.Parse also reads it from
// BRIEFD_<NAME> (for example BRIEFD_CONTEXT_WINDOW); a flag on the command
// line wins.
func bindEngineFlags(fs *flag.FlagSet, cfg *compact.Config) {
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model the agent runs; picks the token encoding")
	fs.StringVar(&cfg.Encoding, "encoding", cfg.Encoding, "token encoding, o200k_base or cl100k_base (default: from --model)")
	fs.IntVar(&cfg.ContextWindow, "context-window", cfg.ContextWindow, "model context window in tokens (0 = 128000)")
	fs.Float64Var(&cfg.TriggerFraction, "trigger-fraction", cfg.TriggerFraction, "compact above this fraction of the context window (0 = 0.65)")
	fs.IntVar(&cfg.HardCapTokens, "hard-cap-tokens", cfg.HardCapTokens, "trigger at most at this many tokens (0 = 200000)")
	fs.Float64Var(&cfg.KeepFraction, "keep-fraction", cfg.KeepFraction, "fraction of the context window kept verbatim (0 = 0.2)")
	fs.IntVar(&cfg.KeepCapTokens, "keep-cap-tokens", cfg.KeepCapTokens, "keep at most this many tokens verbatim (0 = 40000)")
	fs.IntVar(&cfg.KeepTokens, "keep-tokens", cfg.KeepTokens, "kept tail budget in tokens, replacing --keep-fraction and --keep-cap-tokens (0 = off)")
	fs.IntVar(&cfg.MinKeepMessages, "min-keep-messages", cfg.MinKeepMessages, "keep at least max(5, this) messages verbatim (0 = 10)")
	fs.IntVar(&cfg.MinMessages, "min-messages", cfg.MinMessages, "messages needed before token pressure alone triggers (0 = 20, -1 = none)")
	fs.IntVar(&cfg.StepsTrigger, "steps-trigger", cfg.StepsTrigger, "also compact every N assistant steps (0 = off)")
	fs.IntVar(&cfg.CharThreshold, "char-threshold", cfg.CharThreshold, "also compact above this many characters (0 = off)")
	fs.Float64Var(&cfg.BriefingRatio, "briefing-ratio", cfg.BriefingRatio, "briefing budget as a fraction of the compacted span's tokens (0 = 0.10)")
	fs.IntVar(&cfg.MinBriefingTokens, "min-briefing-tokens", cfg.MinBriefingTokens, "smallest briefing budget (0 = 600)")
	fs.IntVar(&cfg.MaxBriefingTokens, "max-briefing-tokens", cfg.MaxBriefingTokens, "largest briefing budget (0 = 8192)")
	fs.Float64Var(&cfg.MaxBriefingFraction, "max-briefing-fraction", cfg.MaxBriefingFraction, "largest briefing budget as a fraction of the context window; bounds chained briefings (0 = 0.15)")
	fs.Float64Var(&cfg.ForceKeepFraction, "force-keep-fraction", cfg.ForceKeepFraction, "a forced compaction keeps at most this fraction of the non-pinned history verbatim (0 = 0.25)")
	fs.IntVar(&cfg.PerMessageOverhead, "per-message-overhead", cfg.PerMessageOverhead, "tokens added per message for chat framing (0 = 4, -1 = none)")
	fs.IntVar(&cfg.Limits.MaxMessages, "max-messages", cfg.Limits.MaxMessages, "reject histories with more messages (0 = 100000)")
	fs.IntVar(&cfg.Limits.MaxMessageBytes, "max-message-bytes", cfg.Limits.MaxMessageBytes, "reject larger messages (0 = 16 MiB)")
	fs.IntVar(&cfg.Limits.MaxTotalBytes, "max-total-bytes", cfg.Limits.MaxTotalBytes, "reject larger histories (0 = 256 MiB)")
}
