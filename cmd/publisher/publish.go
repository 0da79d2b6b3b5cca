package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
)

// publishCmd publishes a history file as an agent would.
type publishCmd struct {
	conn          connFlags
	conversation  string
	turnByTurn    bool
	delay         time.Duration
	wait          time.Duration
	model         string
	contextWindow int
}

func (c *publishCmd) Synopsis() string { return "[flags] FILE" }

func (c *publishCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.StringVar(&c.conversation, "conversation", "", "conversation id (default: the history's id)")
	fs.BoolVar(&c.turnByTurn, "turn-by-turn", true, "publish one snapshot per assistant turn; false: only the whole history")
	fs.DurationVar(&c.delay, "delay", 0, "pause between turns")
	fs.DurationVar(&c.wait, "wait", 0, "after publishing, wait up to this long for a briefing and print it")
	fs.StringVar(&c.model, "model", "", "model named in the snapshots (token encoding)")
	fs.IntVar(&c.contextWindow, "context-window", 0, "context window named in the snapshots (tokens; 0: the worker's default)")
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
	if conv == "" {
		conv = convID(h.ID)
	}
	var opts []client.Option
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

	var watch <-chan *briefd.Briefing
	if c.wait > 0 {
		// Watch before publishing, so that a fast briefing is not missed.
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if watch, err = s.c.Watch(wctx, conv); err != nil {
			return err
		}
	}

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
		t0 := time.Now()
		err := s.c.Publish(ctx, conv, h.Messages[:k])
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

	if watch == nil {
		return nil
	}
	timer := time.NewTimer(c.wait)
	defer timer.Stop()
	for {
		select {
		case b, ok := <-watch:
			if !ok {
				return ctx.Err()
			}
			// The first briefing the watch delivers is the current latest;
			// a newer one may follow as the workers catch up.
			printBriefingSummary(e, b)
			return nil
		case <-timer.C:
			return errors.New("no briefing within --wait; is a worker running, and is the history long enough to compact?")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func printBriefingSummary(e *env, b *briefd.Briefing) {
	fmt.Fprintf(e.stdout, "briefing %s@%s: tokens %d -> %d, %d messages compacted, tier %s\n",
		b.ConversationID, b.BoundaryID, b.TokensBefore, b.TokensAfter, len(b.CompactedIDs), b.Tier)
}
