package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/envflag"
	"github.com/briefd/briefd/internal/ident"
	"github.com/briefd/briefd/internal/progress"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/replay"
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

// runReplay re-runs stored compactions and compares them with what the
// workers stored. With --conversation alone it re-runs one snapshot (the
// newest, or --seq) and compares it with the stored briefing of its
// boundary; with --all, --since, --until, --html, or --tenant without
// --conversation, it replays every compaction of the audit stream the
// filters select and writes the replay.Report as JSON, and as HTML with
// --html.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.bind(fs)
	tenant := fs.String("tenant", "default", "tenant of the conversation; without --conversation, replay this tenant's conversations")
	conv := fs.String("conversation", "", "conversation id")
	seq := fs.Uint64("seq", 0, "with --conversation alone: the snapshot number to replay; 0 = the newest stored")
	text := fs.Bool("text", false, "include the briefings' text in the JSON report")
	all := fs.Bool("all", false, "replay every compaction of the audit stream (with --since/--until: of that time range)")
	since := fs.String("since", "", "replay compactions recorded since this time: RFC 3339 (2026-11-22T10:00:00Z) or a duration ago (24h)")
	until := fs.String("until", "", "replay compactions recorded until this time: RFC 3339 or a duration ago")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report with plots to this file")
	show := fs.String("show", "", "conversation (tenant/conversation or conversation) shown before/after in the HTML report (default: the one that changed most)")
	var engineCfg compact.Config
	bindEngineFlags(fs, &engineCfg)
	llm := bindLLMFlags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", summaryReplay,
		"worker replay --all | --tenant T | --since T [--until T] | --conversation C [--seq N] [--html report.html] [engine and llm flags]")
	if err := envflag.Parse(fs, args, "BRIEFD_", nil); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	scan := *all || *since != "" || *until != "" || *htmlOut != "" || (set["tenant"] && *conv == "")
	if !scan && *conv == "" {
		return usageErrorf("say what to replay: --conversation C, --tenant T, --since T or --all")
	}
	logger, summarizer, err := f.logging(stderr, llm)
	if err != nil {
		return err
	}
	// A one-shot tool: the embedded server's start-up lines are noise.
	serverLog, _ := newLogger(stderr, "warn", f.logFormat)
	nc, closeNATS, err := f.connect(ctx, logger, serverLog)
	if err != nil {
		return err
	}
	defer closeNATS()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	store, closeStore, err := openStore(ctx, &f, js, false) // a diagnostic never writes
	if err != nil {
		return err
	}
	defer closeStore()
	if scan {
		filter := replay.Filter{ConversationID: *conv}
		if set["tenant"] || *conv != "" {
			filter.Tenant = *tenant
		}
		now := time.Now()
		if filter.Since, err = parseWhen(*since, now); err != nil {
			return usageErrorf("--since: %v", err)
		}
		if filter.Until, err = parseWhen(*until, now); err != nil {
			return usageErrorf("--until: %v", err)
		}
		return replayScan(ctx, js, store, replay.Config{Queue: f.queue, Audit: audit.Config{Prefix: f.queue.Prefix, Stream: queue.StreamBase(f.queue.Prefix) + "_AUDIT"},
			Engine: engineCfg, Summarizer: summarizer, Filter: filter, Show: *show, Texts: *text, Logger: logger},
			*htmlOut, stdout, stderr)
	}
	snap, err := queue.LoadSnapshot(ctx, js, f.queue, *tenant, *conv, *seq)
	if err != nil {
		return err
	}
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

// replayScan runs a replay.Report, drawing progress on a terminal, writes
// it as JSON on stdout and, with htmlOut, as HTML.
func replayScan(ctx context.Context, js jetstream.JetStream, store replay.Store, cfg replay.Config, htmlOut string, stdout, stderr io.Writer) error {
	bar := progress.New(stderr, "replay: compactions", 0)
	cfg.Progress = func(done, total int) {
		if done == 1 {
			bar.SetTotal(total)
		}
		bar.Add(1)
	}
	rep, err := replay.Run(ctx, js, store, cfg)
	bar.Finish()
	if err != nil {
		return err
	}
	if htmlOut != "" {
		if err := writeHTMLFile(htmlOut, rep); err != nil {
			return err
		}
		s := rep.Summary
		fmt.Fprintf(stderr, "replay: %d conversations, %d compactions (%d re-run, %d missing, %d with the same boundary); report in %s\n",
			s.Conversations, s.Compactions, s.Rerun, s.Missing, s.SameBoundary, htmlOut)
	}
	if !cfg.Texts {
		// The shown conversation's texts fed the HTML; the JSON carries
		// them only with --text.
		for i := range rep.Conversations {
			for j := range rep.Conversations[i].Compactions {
				cp := &rep.Conversations[i].Compactions[j]
				cp.Stored.Text, cp.DiffLines = "", nil
				if cp.Replayed != nil {
					cp.Replayed.Text = ""
				}
			}
		}
	}
	return writeJSON(stdout, rep)
}

func writeHTMLFile(path string, rep *replay.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := replay.WriteHTML(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("html report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("html report %s: %w", path, err)
	}
	return nil
}

// parseWhen reads a time: RFC 3339, or a duration before now ("24h").
// Empty is the zero time (no bound).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration ago must not be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor a duration", s)
	}
	return t, nil
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
