package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
)

// latestCmd prints a conversation's latest briefing.
type latestCmd struct {
	conn         connFlags
	conversation string
	format       string
}

// Summary says what the command does.
func (c *latestCmd) Summary() string {
	return "Print a conversation's latest briefing."
}

func (c *latestCmd) Synopsis() string { return "--conversation C [flags]" }

func (c *latestCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (required)")
	fs.StringVar(&c.format, "format", "text", "output: text (summary and the spliced message) or json (the briefing)")
}

func (c *latestCmd) Run(ctx context.Context, args []string, e *env) error {
	if c.conversation == "" || len(args) != 0 {
		return usageErrorf("--conversation is required and no arguments are taken")
	}
	if c.format != "text" && c.format != "json" {
		return usageErrorf("--format must be text or json, not %q", c.format)
	}
	s, err := c.conn.open(ctx, e)
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))
	b, err := s.c.Latest(ctx, c.conversation)
	if err != nil {
		return err
	}
	if c.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(b)
	}
	printBriefingSummary(e, b)
	fmt.Fprintf(e.stdout, "created %s, engine %s, depth %d, position %d\n\n%s\n",
		b.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), b.EngineVersion, b.Depth, b.Position,
		briefd.BriefingMessage(b).Content.Text)
	return nil
}

// spliceCmd prints a history spliced with the latest briefing.
type spliceCmd struct {
	conn         connFlags
	conversation string
}

// Summary says what the command does.
func (c *spliceCmd) Summary() string {
	return "Print a history file spliced with the conversation's latest briefing, as the agent's next turn would send it."
}

func (c *spliceCmd) Synopsis() string { return "--conversation C [flags] FILE" }

func (c *spliceCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (default: the history's id)")
}

func (c *spliceCmd) Run(ctx context.Context, args []string, e *env) error {
	if len(args) != 1 {
		return usageErrorf("want one history file (or - for stdin)")
	}
	h, err := readHistory(e, args[0])
	if err != nil {
		return err
	}
	conv := c.conversation
	if conv == "" {
		conv = convID(h.ID)
	}
	s, err := c.conn.open(ctx, e)
	if err != nil {
		return err
	}
	defer s.close(context.WithoutCancel(ctx))
	b, err := s.c.Latest(ctx, conv)
	if errors.Is(err, client.ErrNoBriefing) {
		fmt.Fprintf(e.stderr, "publisher splice: %s has no briefing yet; the history is printed unchanged\n", conv)
	} else if err != nil {
		return err
	}
	out := h.Messages
	if b != nil {
		out, err = briefd.Splice(h.Messages, b)
		switch {
		case errors.Is(err, briefd.ErrBoundaryMissing), errors.Is(err, briefd.ErrNothingToSplice):
			fmt.Fprintf(e.stderr, "publisher splice: briefing %s does not apply (%v); the history is printed unchanged\n", b.BoundaryID, err)
		case err != nil:
			return err
		default:
			fmt.Fprintf(e.stderr, "publisher splice: %d messages -> %d (boundary %s, tokens %d -> %d)\n",
				len(h.Messages), len(out), b.BoundaryID, b.TokensBefore, b.TokensAfter)
		}
	}
	h.Messages = out
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(h)
}
