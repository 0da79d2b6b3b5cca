package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/compact"
)

// demoCmd runs the whole system in one process on the example histories.
type demoCmd struct {
	dataDir       string
	ephemeral     bool
	contextWindow int
	workers       int
	timeout       time.Duration
	turnDelay     time.Duration
	verbose       bool
}

// Summary says what the command does.
func (c *demoCmd) Summary() string {
	return "Run NATS, the briefing store and a worker in this process, publish the example histories and print their briefings."
}

func (c *demoCmd) Synopsis() string { return "[flags]" }

func (c *demoCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", ".briefd-data", "folder of the embedded JetStream store (kept between runs)")
	fs.BoolVar(&c.ephemeral, "ephemeral", false, "keep the store in a temporary folder removed on exit")
	fs.IntVar(&c.contextWindow, "context-window", 10000, "context window of the demo model in tokens; small, so that every example history (8k-15k tokens) compacts")
	fs.IntVar(&c.workers, "workers", 1, "in-process workers")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "fail if the briefings are not all there within this time")
	fs.DurationVar(&c.turnDelay, "turn-delay", 25*time.Millisecond, "pause between the agents' turns (a model's answer, shortened); 0 publishes every turn at once")
	fs.BoolVar(&c.verbose, "verbose", false, "show the server's and workers' logs")
}

func (c *demoCmd) Run(ctx context.Context, args []string, e *env) error {
	if len(args) != 0 {
		return usageErrorf("demo takes no arguments")
	}
	hs, err := examples.Histories()
	if err != nil {
		return err
	}
	log := logger(e, c.verbose)
	start := time.Now()
	sys, err := startSystem(ctx, systemConfig{
		DataDir: c.dataDir, Ephemeral: c.ephemeral, Workers: c.workers,
		Engine: compact.Config{ContextWindow: c.contextWindow}, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("start the embedded system: %w", err)
	}
	defer sys.close(context.WithoutCancel(ctx))
	where := sys.dir
	if c.ephemeral {
		where += " (ephemeral)"
	}
	fmt.Fprintf(e.stdout, "briefd demo: embedded NATS %s with JetStream in %s, key-value briefing store, %d worker(s), context window %d tokens (started in %s)\n",
		sys.srv.ClientURL(), where, len(sys.workers), c.contextWindow, fmtDur(time.Since(start)))

	cl, err := client.New(sys.nc, client.WithContextWindow(c.contextWindow), client.WithLogger(log))
	if err != nil {
		return err
	}
	defer cl.Close(context.WithoutCancel(ctx))

	// A fresh suffix per run: a kept data folder already holds the
	// briefings of earlier runs.
	run := make([]byte, 3)
	_, _ = rand.Read(run)
	convs := make([]string, len(hs))
	cuts := make([][]int, len(hs))
	rounds := 0
	for i, h := range hs {
		convs[i] = convID(h.ID) + "-" + hex.EncodeToString(run)
		cuts[i] = steps(h.Messages)
		rounds = max(rounds, len(cuts[i]))
	}
	// The agents take turns, as they would: one turn of each conversation,
	// then a pause standing in for the model's answer, so that the worker
	// keeps up and the audit trail records the compactions of many turns
	// (worker replay plots them).
	var lats []time.Duration
	for r := range rounds {
		if r > 0 && c.turnDelay > 0 {
			select {
			case <-time.After(c.turnDelay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for i, h := range hs {
			if r >= len(cuts[i]) {
				continue
			}
			t0 := time.Now()
			if err := cl.Publish(ctx, convs[i], h.Messages[:cuts[i][r]]); err != nil {
				return err
			}
			lats = append(lats, time.Since(t0))
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	published := time.Now()
	q := quantiles(lats)
	fmt.Fprintf(e.stdout, "published %d conversations turn by turn: %d snapshots, publish p50 %s p99 %s\n",
		len(hs), q.n, fmtDur(q.p50), fmtDur(q.p99))

	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := sys.waitIdle(wctx); err != nil {
		return fmt.Errorf("the worker did not finish within %s: %w", c.timeout, err)
	}
	briefings := make([]*briefd.Briefing, len(hs))
	var missing []string
	for i, conv := range convs {
		b, err := cl.Latest(ctx, conv)
		if errors.Is(err, client.ErrNoBriefing) {
			missing = append(missing, conv)
			continue
		}
		if err != nil {
			return err
		}
		briefings[i] = b
	}
	fmt.Fprintf(e.stdout, "briefings ready %s after the last publish\n\n", fmtDur(time.Since(published)))

	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\tmessages\ttokens before\ttokens after\tsaved\tboundary\tcompacted\ttier\t")
	for i, h := range hs {
		b := briefings[i]
		if b == nil {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t(none)\t-\t-\t\n", convs[i], len(h.Messages))
			continue
		}
		saved := 0.0
		if b.TokensBefore > 0 {
			saved = 100 * float64(b.TokensBefore-b.TokensAfter) / float64(b.TokensBefore)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f%%\t%s\t%d\t%s\t\n", convs[i], len(h.Messages),
			b.TokensBefore, b.TokensAfter, saved, b.BoundaryID, len(b.CompactedIDs), b.Tier)
	}
	tw.Flush()
	if len(missing) > 0 {
		var why []string
		for _, conv := range missing {
			reason := "no verdict from the worker"
			if st, err := cl.Status(ctx, conv); err == nil {
				reason = st.String()
			}
			why = append(why, conv+": "+reason)
		}
		return fmt.Errorf("no briefing for %d conversations (try a smaller --context-window):\n  %s", len(missing), strings.Join(why, "\n  "))
	}

	// One briefing in full, as the agent's next turn would see it.
	i := 0
	for j := range briefings {
		if len(briefings[j].Text) < len(briefings[i].Text) {
			i = j // the shortest, to keep the output readable
		}
	}
	spliced, err := client.Splice(hs[i].Messages, briefings[i])
	if err != nil {
		return fmt.Errorf("splice %s: %w", convs[i], err)
	}
	fmt.Fprintf(e.stdout, "\nThe history of %s spliced: %d messages -> %d. Its briefing message, in full:\n\n", convs[i], len(hs[i].Messages), len(spliced))
	for _, m := range spliced {
		if m.IsBriefing() {
			fmt.Fprintln(e.stdout, m.Content.Text)
		}
	}
	return nil
}
