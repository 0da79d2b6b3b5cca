package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/envflag"
	"github.com/briefd/briefd/internal/ident"
	"github.com/briefd/briefd/internal/queue"
)

// replayReport compares a stored briefing with a fresh compaction of the
// snapshot it came from, run with the engine and cascade flags given now.
type replayReport struct {
	Tenant         string            `json:"tenant"`
	ConversationID string            `json:"conversation_id"`
	SnapshotSeq    uint64            `json:"snapshot_seq"`
	Messages       int               `json:"messages"`
	Stored         *replaySide       `json:"stored,omitempty"`
	Replayed       *replaySide       `json:"replayed"`
	SameInput      *bool             `json:"same_input,omitempty"`
	SameBoundary   *bool             `json:"same_boundary,omitempty"`
	Identifiers    *replayIdentifier `json:"identifiers,omitempty"`
	Reason         string            `json:"reason,omitempty"`
	Attempts       []compact.Attempt `json:"attempts,omitempty"`
}

type replaySide struct {
	BoundaryID    string      `json:"boundary_id"`
	Tier          briefd.Tier `json:"tier"`
	Model         string      `json:"model,omitempty"`
	PromptVersion string      `json:"prompt_version,omitempty"`
	EngineVersion string      `json:"engine_version"`
	InputHash     string      `json:"input_hash"`
	TokensBefore  int         `json:"tokens_before"`
	TokensAfter   int         `json:"tokens_after"`
	Chars         int         `json:"briefing_chars"`
	Text          string      `json:"briefing,omitempty"`
}

// replayIdentifier says which identifiers of one briefing the other lacks:
// the quick signal of a regression between two models or prompts.
type replayIdentifier struct {
	Stored       int      `json:"stored"`
	Replayed     int      `json:"replayed"`
	OnlyStored   []string `json:"only_in_stored,omitempty"`
	OnlyReplayed []string `json:"only_in_replayed,omitempty"`
}

func side(b *briefd.Briefing, withText bool) *replaySide {
	s := &replaySide{BoundaryID: b.BoundaryID, Tier: b.Tier, Model: b.Model, PromptVersion: b.PromptVersion,
		EngineVersion: b.EngineVersion, InputHash: b.InputHash, TokensBefore: b.TokensBefore,
		TokensAfter: b.TokensAfter, Chars: len(b.Text)}
	if withText {
		s.Text = b.Text
	}
	return s
}

// runReplay re-runs the compaction of a stored snapshot (the stream is the
// audit trail) and compares the result with the briefing the store holds
// for the same boundary, or with the conversation's latest briefing.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.bind(fs)
	tenant := fs.String("tenant", "default", "tenant of the conversation")
	conv := fs.String("conversation", "", "conversation id (required)")
	seq := fs.Uint64("seq", 0, "snapshot number to replay; 0 = the newest stored")
	text := fs.Bool("text", false, "include both briefings' text in the report")
	var engineCfg compact.Config
	bindEngineFlags(fs, &engineCfg)
	llm := bindLLMFlags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", summaryReplay, "worker replay --conversation C [--seq N] [engine and llm flags]")
	if err := envflag.Parse(fs, args, "BRIEFD_", nil); err != nil {
		return err
	}
	if *conv == "" {
		return usageErrorf("--conversation is required")
	}
	logger, summarizer, err := f.logging(stderr, llm)
	if err != nil {
		return err
	}
	nc, err := connectNATS(&f, logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	snap, err := queue.LoadSnapshot(ctx, js, f.queue, *tenant, *conv, *seq)
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(ctx, &f, js, false) // a diagnostic never writes
	if err != nil {
		return err
	}
	defer closeStore()

	var opts []compact.Option
	if summarizer != nil {
		opts = append(opts, compact.WithSummarizer(summarizer))
	}
	if snap.ContextWindow > 0 && engineCfg.ContextWindow == 0 {
		engineCfg.ContextWindow = snap.ContextWindow
	}
	if snap.Model != "" && engineCfg.Model == "" {
		engineCfg.Model = snap.Model
	}
	eng, err := compact.New(engineCfg, opts...)
	if err != nil {
		return err
	}
	var prev *briefd.Briefing
	for i := range snap.Messages {
		if snap.Messages[i].IsBriefing() {
			if b, err := store.Get(ctx, *tenant, *conv, snap.Messages[i].Metadata[briefd.MetaBoundary]); err == nil {
				prev = b
			}
		}
	}
	res, err := eng.Compact(ctx, compact.Request{ConversationID: *conv, Tenant: *tenant, Messages: snap.Messages, Previous: prev, IgnoreTrigger: true, Control: snap.Control})
	if err != nil {
		return err
	}
	rep := replayReport{Tenant: *tenant, ConversationID: *conv, SnapshotSeq: snap.Seq, Messages: len(snap.Messages),
		Reason: res.Reason, Attempts: res.Attempts}
	if !res.Compacted {
		return writeJSON(stdout, rep)
	}
	rep.Replayed = side(res.Briefing, *text)

	stored, err := store.Get(ctx, *tenant, *conv, res.Briefing.BoundaryID)
	if errors.Is(err, cache.ErrNotFound) {
		stored, err = store.Latest(ctx, *tenant, *conv)
	}
	switch {
	case errors.Is(err, cache.ErrNotFound):
		rep.Reason = "no stored briefing to compare with"
	case err != nil:
		return err
	default:
		rep.Stored = side(stored, *text)
		sameIn := stored.InputHash == res.Briefing.InputHash
		sameB := stored.BoundaryID == res.Briefing.BoundaryID
		rep.SameInput, rep.SameBoundary = &sameIn, &sameB
		a, b := ident.Identifiers(stored.Text), ident.Identifiers(res.Briefing.Text)
		rep.Identifiers = &replayIdentifier{Stored: len(a), Replayed: len(b), OnlyStored: minus(a, b), OnlyReplayed: minus(b, a)}
	}
	return writeJSON(stdout, rep)
}

// minus returns the elements of a not in b, in a's order.
func minus(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
