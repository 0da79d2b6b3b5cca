package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/envflag"
)

// compactOutput is the JSON the compact command prints: a stable contract
// that automated checks read. Fields after Messages are extras.
type compactOutput struct {
	ConversationID string      `json:"conversation_id"`
	Compacted      bool        `json:"compacted"`
	Reason         string      `json:"reason"`
	BoundaryID     string      `json:"boundary_id"`
	Tier           briefd.Tier `json:"tier"`
	TokensBefore   int         `json:"tokens_before"`
	TokensAfter    int         `json:"tokens_after"`
	// Briefing is exactly what the agent reads: the content of the
	// spliced briefing message (framing line, escaped text, tags).
	Briefing      string           `json:"briefing"`
	Structured    json.RawMessage  `json:"structured"`
	Messages      []briefd.Message `json:"messages"`
	Model         string           `json:"model,omitempty"`
	PromptVersion string           `json:"prompt_version,omitempty"`
	// Attempts lists the LLM cascade's calls with the gate's verdicts
	// per rule; Fallback says why the deterministic briefing was kept.
	Attempts []compact.Attempt `json:"attempts,omitempty"`
	Fallback string            `json:"fallback,omitempty"`
	Encoding string            `json:"encoding"`
	// Record is the briefing as a store keeps it.
	Record *briefd.Briefing `json:"record,omitempty"`
	// Coverage is the briefing's report on itself: what of the span it
	// carries and what it left out for size.
	Coverage *brief.Coverage `json:"coverage,omitempty"`
	// BudgetTokens is the briefing budget that applied.
	BudgetTokens int `json:"budget_tokens,omitempty"`
}

// runCompact implements `worker compact [flags] FILE`: it compacts one
// history file (or stdin for "-") and prints a compactOutput. Exit status
// 0 means compacted, 3 that the result on stdout did not compact (its
// reason says why); an unreadable or invalid history is an error (1). When ctx ends (Ctrl-C, SIGTERM) it stops
// within stopGrace, whatever step it is in.
func runCompact(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "compact now, as a user's /compact: no trigger needed, and the kept tail is at most --force-keep-fraction of the history")
	focus := fs.String("focus", "", "what the briefing must keep above all, in words (\"everything about the migration\")")
	pin := fs.String("pin", "", "message ids never compacted, comma-separated (as a snapshot's control.pin)")
	conv := fs.String("conversation", "", "conversation id (default: the history's id, else the file name)")
	tenant := fs.String("tenant", "", "tenant of the conversation")
	var cfg compact.Config
	bindEngineFlags(fs, &cfg)
	llm := bindLLMFlags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", summaryCompact, "worker compact [flags] FILE (- for stdin)")
	if err := envflag.Parse(fs, args, "BRIEFD_", nil); err != nil {
		return err
	}
	// Accept flags after the file too: compact FILE --force.
	var files []string
	for rest := fs.Args(); len(rest) > 0; rest = fs.Args() {
		files = append(files, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			return err
		}
	}
	if len(files) != 1 {
		return usageErrorf("compact takes one FILE (or - for stdin), got %d", len(files))
	}
	file := files[0]
	job := compactJob{file: file, conversation: *conv, tenant: *tenant, force: *force, focus: *focus, pin: splitList(*pin), cfg: cfg, llm: llm}
	return untilDone(ctx, stopGrace, func() error { return job.run(ctx, stdin, stdout, stderr) })
}

// stopGrace is how long a one-shot command may take to return its own
// error once its context ends, before it is abandoned.
const stopGrace = 250 * time.Millisecond

// untilDone runs f and returns its error; once ctx ends, it waits at most
// grace for f and then returns an error naming the cause without waiting
// further. The counting and the LLM calls stop with ctx on their own; this
// covers the steps that cannot (reading a stdin that never ends, decoding
// a large file), so that Ctrl-C always stops the command: Main returns and
// the process exits, taking f's goroutine with it.
func untilDone(ctx context.Context, grace time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
}

// compactJob is one run of `worker compact`, its flags parsed.
type compactJob struct {
	file, conversation, tenant string
	force                      bool
	focus                      string
	pin                        []string
	cfg                        compact.Config
	llm                        func(*slog.Logger) (compact.Summarizer, error)
}

func (j compactJob) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	file := j.file
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	id := cmp.Or(j.conversation, h.ID)
	if id == "" {
		id = "stdin"
		if file != "-" {
			id = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		}
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	summarizer, err := j.llm(logger)
	if err != nil {
		return fmt.Errorf("llm cascade: %w", err)
	}
	opts := []compact.Option{compact.WithLogger(logger)}
	if summarizer != nil {
		opts = append(opts, compact.WithSummarizer(summarizer))
	}
	eng, err := compact.New(j.cfg, opts...)
	if err != nil {
		return usageErrorf("%v", err)
	}
	res, err := eng.Compact(ctx, compact.Request{ConversationID: id, Tenant: j.tenant, Messages: h.Messages, Force: j.force, Focus: j.focus,
		Control: briefd.Control{Pin: j.pin}})
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}

	out := compactOutput{
		ConversationID: id,
		Compacted:      res.Compacted,
		Reason:         res.Reason,
		TokensBefore:   res.TokensBefore,
		TokensAfter:    res.TokensBefore,
		Structured:     json.RawMessage("{}"),
		Messages:       res.Messages,
		Attempts:       res.Attempts,
		Fallback:       res.SummarizerError,
		Encoding:       eng.Config().Encoding,
		Coverage:       res.Coverage,
		BudgetTokens:   res.BudgetTokens,
	}
	if b := res.Briefing; b != nil {
		out.BoundaryID, out.Tier, out.TokensAfter = b.BoundaryID, b.Tier, b.TokensAfter
		out.Briefing = briefd.WrapBriefing(b.Text)
		if len(b.Structured) > 0 {
			out.Structured = b.Structured
		}
		out.Model, out.PromptVersion, out.Record = b.Model, b.PromptVersion, b
	}
	if out.Messages == nil {
		out.Messages = []briefd.Message{}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if !res.Compacted {
		return errNotCompacted
	}
	return nil
}
