package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
)

// publishCmd publishes a history file as an agent would.
type publishCmd struct {
	conn          connFlags
	control       controlFlags
	conversation  string
	turnByTurn    bool
	delay         time.Duration
	wait          time.Duration
	model         string
	contextWindow int
	number        bool
}

// Summary says what the command does.
func (c *publishCmd) Summary() string {
	return "Publish a history file turn by turn, as an agent would, and print the workers' verdict on it."
}

func (c *publishCmd) Synopsis() string { return "[flags] FILE" }

func (c *publishCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	c.control.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (default: the history's id, else the file name)")
	fs.BoolVar(&c.turnByTurn, "turn-by-turn", true, "publish one snapshot per assistant turn; false: only the whole history")
	fs.DurationVar(&c.delay, "delay", 0, "pause between turns")
	fs.DurationVar(&c.wait, "wait", 30*time.Second, "after publishing, wait up to this long for the workers' verdict on the last snapshot (compacted, or why not); 0: do not wait")
	fs.StringVar(&c.model, "model", "", "model named in the snapshots (token encoding)")
	fs.IntVar(&c.contextWindow, "context-window", 0, "context window named in the snapshots (tokens; 0: the worker's default, 128000 unless configured)")
	fs.BoolVar(&c.number, "number-ids", true, "give messages without an id their position id (m0001, m0002, ...), as client.WithNumbering does")
}

func (c *publishCmd) Run(ctx context.Context, args []string, e *env) error {
	if len(args) != 1 {
		return usageErrorf("want one history file (or - for stdin), got %d arguments", len(args))
	}
	h, err := readHistory(e, args[0])
	if err != nil {
		return err
	}
	conv := c.conversation
	switch {
	case conv != "":
	case h.ID != "":
		conv = convID(h.ID)
	case args[0] != "-":
		conv = convID(strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0])))
	default:
		return usageErrorf("the history on stdin has no id: name the conversation with --conversation")
	}
	ctl, now, err := c.control.control()
	if err != nil {
		return usageErrorf("%v", err)
	}
	// Check locally what the workers would reject, before sending anything.
	if c.number {
		var n int
		if h.Messages, n, err = briefd.NumberMessages(h.Messages); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if n > 0 {
			fmt.Fprintf(e.stderr, "publisher publish: gave %d messages without an id their position id (m0001, m0002, ...)\n", n)
		}
	}
	if err := briefd.Validate(h.Messages, briefd.Limits{}); err != nil {
		return fmt.Errorf("%s: not published: %w", args[0], err)
	}
	if len(h.Messages) == 0 {
		return fmt.Errorf("%s: not published: the history has no messages", args[0])
	}

	opts := []client.Option{client.WithControl(ctl)}
	if c.model != "" {
		opts = append(opts, client.WithModel(c.model))
	}
	if c.contextWindow > 0 {
		opts = append(opts, client.WithContextWindow(c.contextWindow))
	}
	s, err := c.conn.open(ctx, e, opts...)
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))

	cuts := []int{len(h.Messages)}
	if c.turnByTurn {
		cuts = steps(h.Messages)
	}
	var lats []time.Duration
	for i, k := range cuts {
		if i > 0 && c.delay > 0 {
			select {
			case <-time.After(c.delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var popts []client.PublishOption
		if now && i == len(cuts)-1 {
			// "Compact now" is the last snapshot's: the earlier turns
			// are the history it grew from.
			popts = append(popts, client.CompactNow(c.control.focus))
		}
		t0 := time.Now()
		err := s.c.Publish(ctx, conv, h.Messages[:k], popts...)
		took := time.Since(t0)
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		lats = append(lats, took)
		fmt.Fprintf(e.stdout, "step %3d/%d  messages %4d  publish %s\n", i+1, len(cuts), k, fmtDur(took))
	}
	t0 := time.Now()
	if err := s.c.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	q := quantiles(lats)
	fmt.Fprintf(e.stdout, "published %d snapshots of %s (tenant %s): publish p50 %s p99 %s max %s; all acked %s later\n",
		len(lats), conv, s.c.Tenant(), fmtDur(q.p50), fmtDur(q.p99), fmtDur(q.max), fmtDur(time.Since(t0)))
	if c.wait <= 0 {
		return nil
	}
	return awaitVerdict(ctx, e, s.c, conv, c.wait)
}

// awaitVerdict waits for the workers' verdict on the newest snapshot of
// conv the client published and prints it: the briefing's summary when
// compacted, else why not (errNotCompacted, or an error).
func awaitVerdict(ctx context.Context, e *env, c *client.Client, conv string, wait time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	st, err := c.AwaitStatus(wctx, conv)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return fmt.Errorf("no verdict from the workers within --wait %s: is a worker running ('worker run') on the same NATS server and prefix?", wait)
		}
		return err
	}
	switch st.Outcome {
	case briefd.OutcomeCompacted:
		b, err := c.Latest(ctx, conv)
		if err != nil {
			return err
		}
		printBriefingSummary(e, b)
		return nil
	case briefd.OutcomeSkipped:
		fmt.Fprintf(e.stdout, "%s\n", st)
		if st.Reason == "below_trigger" {
			fmt.Fprintf(e.stdout, "  the history compacts once it is over the trigger: publish with a smaller --context-window (the snapshot's window), --trigger-fraction, or --compact-now\n")
		}
		return fmt.Errorf("%w: %s", errNotCompacted, st.Reason)
	default:
		return fmt.Errorf("the workers %s the snapshot (%s): %s", st.Outcome, st.Reason, st.Detail)
	}
}

// controlFlags are the flags of a snapshot's control (briefd.Control).
type controlFlags struct {
	triggerFraction float64
	keepTokens      int
	pin             string
	focus           string
	now, never      bool
}

func (f *controlFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&f.triggerFraction, "trigger-fraction", 0, "compact once the history is over this fraction of the context window (0: the workers' setting)")
	fs.IntVar(&f.keepTokens, "keep-tokens", 0, "tokens kept verbatim after the boundary (0: the workers' setting)")
	fs.StringVar(&f.pin, "pin", "", "message ids never compacted, comma-separated")
	fs.StringVar(&f.focus, "focus", "", "what the briefing must keep above all, in words")
	fs.BoolVar(&f.now, "compact-now", false, "compact the last snapshot now, whatever the trigger (a user's /compact)")
	fs.BoolVar(&f.never, "never", false, "ask the workers not to compact these snapshots")
}

// control returns the control every snapshot carries, and whether the
// last one asks for compaction now (with the focus).
func (f *controlFlags) control() (briefd.Control, bool, error) {
	if f.now && f.never {
		return briefd.Control{}, false, errors.New("--compact-now and --never contradict each other")
	}
	ctl := briefd.Control{TriggerFraction: f.triggerFraction, KeepTokens: f.keepTokens, Focus: f.focus}
	for id := range strings.SplitSeq(f.pin, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ctl.Pin = append(ctl.Pin, id)
		}
	}
	if f.never {
		ctl.Mode = briefd.ModeNever
	}
	return ctl, f.now, ctl.Validate()
}

func printBriefingSummary(e *env, b *briefd.Briefing) {
	fmt.Fprintf(e.stdout, "briefing %s@%s: tokens %d -> %d, %d messages compacted, tier %s\n",
		b.ConversationID, b.BoundaryID, b.TokensBefore, b.TokensAfter, len(b.CompactedIDs), b.Tier)
}

// statusCmd prints the workers' verdict on a conversation's newest
// snapshot.
type statusCmd struct {
	conn         connFlags
	conversation string
}

// Summary says what the command does.
func (c *statusCmd) Summary() string {
	return "Print the workers' verdict on a conversation's newest snapshot: compacted, or why not."
}

func (c *statusCmd) Synopsis() string { return "--conversation C [flags]" }

func (c *statusCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (required)")
}

func (c *statusCmd) Run(ctx context.Context, args []string, e *env) error {
	if c.conversation == "" || len(args) != 0 {
		return usageErrorf("--conversation is required and no arguments are taken")
	}
	s, err := c.conn.open(ctx, e)
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))
	st, err := s.c.Status(ctx, c.conversation)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "snapshot %d (stream %d), %d messages, at %s: %s\n", st.Seq, st.SnapshotSeq, st.Messages,
		st.At.Format(time.RFC3339), st)
	return nil
}
