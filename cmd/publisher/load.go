package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/progress"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// loadCmd plays N concurrent agents.
type loadCmd struct {
	conn           connFlags
	agents         int
	dir            string
	turnsPerSecond float64
	duration       time.Duration
	maxTurns       int
	drain          time.Duration
	embedded       bool
	workers        int
	contextWindow  int
	buffer         int
}

// Summary says what the command does.
func (c *loadCmd) Summary() string {
	return "Play N concurrent agents from a folder of histories and summarize throughput and latencies."
}

func (c *loadCmd) Synopsis() string { return "--agents N [--dir DIR] [flags]" }

func (c *loadCmd) Flags(fs *flag.FlagSet) {
	c.conn.register(fs)
	fs.IntVar(&c.agents, "agents", 10, "concurrent agents, each one conversation")
	fs.StringVar(&c.dir, "dir", "", "folder of history files (default ../shared/data/histories if present, else the embedded examples)")
	fs.Float64Var(&c.turnsPerSecond, "turns-per-second", 2, "turns per second of each agent; 0: as fast as possible")
	fs.DurationVar(&c.duration, "duration", time.Minute, "stop publishing after this long")
	fs.IntVar(&c.maxTurns, "max-turns", 0, "turns per agent (0: its whole history)")
	fs.DurationVar(&c.drain, "drain", 30*time.Second, "after publishing, wait up to this long for the workers to catch up")
	fs.BoolVar(&c.embedded, "embedded", false, "run NATS, the key-value store and --workers workers in this process")
	fs.IntVar(&c.workers, "workers", 2, "in-process workers with --embedded")
	fs.IntVar(&c.contextWindow, "context-window", 10000, "context window named in the snapshots (tokens; 0: the worker's default)")
	fs.IntVar(&c.buffer, "buffer", 0, "client publish buffer (default 4 per agent, at least 1024)")
}

// agentRun is what one agent records.
type agentRun struct {
	conv  string
	msgs  []briefd.Message
	cuts  []int       // prefix lengths published
	at    []time.Time // publish time of each cut; zero if not published
	index map[string]int
}

func (c *loadCmd) Run(ctx context.Context, args []string, e *env) error {
	if len(args) != 0 {
		return usageErrorf("load takes no arguments")
	}
	if c.agents <= 0 {
		return usageErrorf("--agents must be > 0")
	}
	hs, src, err := c.histories()
	if err != nil {
		return err
	}
	log := logger(e, c.conn.verbose)

	var nc *nats.Conn
	var sys *system
	var cl *client.Client
	opts := []client.Option{client.WithBuffer(max(1024, 4*c.agents))}
	if c.buffer > 0 {
		opts[0] = client.WithBuffer(c.buffer)
	}
	if c.contextWindow > 0 {
		opts = append(opts, client.WithContextWindow(c.contextWindow))
	}
	if c.embedded {
		sys, err = startSystem(ctx, systemConfig{Ephemeral: true, Workers: c.workers,
			Engine: compact.Config{ContextWindow: c.contextWindow}, Logger: log})
		if err != nil {
			return fmt.Errorf("start the embedded system: %w", err)
		}
		defer sys.close(context.WithoutCancel(ctx))
		nc = sys.nc
		cl, err = client.New(nc, append(opts, client.WithLogger(log), client.WithTenant(c.conn.tenant))...)
		if err != nil {
			return err
		}
		defer cl.Close(context.WithoutCancel(ctx))
	} else {
		s, err := c.conn.open(ctx, e, opts...)
		if err != nil {
			return err
		}
		defer s.close(context.WithoutCancel(ctx))
		nc, cl = s.nc, s.c
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}

	run := make([]byte, 3)
	_, _ = rand.Read(run)
	agents := make([]*agentRun, c.agents)
	byConv := map[string]*agentRun{}
	total := 0
	for i := range agents {
		h := hs[i%len(hs)]
		cuts := steps(h.Messages)
		if c.maxTurns > 0 && len(cuts) > c.maxTurns {
			cuts = cuts[:c.maxTurns]
		}
		a := &agentRun{conv: fmt.Sprintf("load-%s-%d", hex.EncodeToString(run), i), msgs: h.Messages, cuts: cuts,
			at: make([]time.Time, len(cuts)), index: map[string]int{}}
		for j := range h.Messages {
			a.index[h.Messages[j].ID] = j
		}
		agents[i], byConv[a.conv] = a, a
		total += len(cuts)
	}

	// Briefings are watched as they are stored.
	var bmu sync.Mutex
	type seen struct {
		a  *agentRun
		b  *briefd.Briefing
		at time.Time
	}
	var got []seen
	keys := map[string]bool{}
	onBriefing := func(b *briefd.Briefing) {
		a := byConv[b.ConversationID]
		if a == nil || b.Tenant != cl.Tenant() && b.Tenant != "" {
			return
		}
		bmu.Lock()
		defer bmu.Unlock()
		k := b.ConversationID + "@" + b.BoundaryID
		if !keys[k] {
			keys[k] = true
			got = append(got, seen{a, b, time.Now()})
		}
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := c.watch(wctx, js, cl, agents, onBriefing); err != nil {
		return err
	}

	fmt.Fprintf(e.stderr, "load: %d agents over %d histories from %s, %d turns to publish, %s\n",
		c.agents, len(hs), src, total, map[bool]string{true: fmt.Sprintf("embedded system with %d workers", c.workers), false: "NATS at " + c.conn.natsURL}[c.embedded])

	var (
		published, refused, failed atomic.Int64
		lmu                        sync.Mutex
		lats                       = make([]time.Duration, 0, total)
		firsts                     []time.Duration
		errMu                      sync.Mutex
		firstErr                   error
	)
	pctx, stopPub := context.WithTimeout(ctx, c.duration)
	defer stopPub()
	start := time.Now()
	prog := progress.New(e.stderr, "load: snapshots", total)
	prog.SetNote(func() string {
		bmu.Lock()
		n := len(got)
		bmu.Unlock()
		st := cl.Stats()
		return fmt.Sprintf("briefings %d  superseded %d  errors %d", n, st.Superseded, refused.Load()+failed.Load()+int64(st.Failed))
	})
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tick *time.Ticker
			if c.turnsPerSecond > 0 {
				tick = time.NewTicker(time.Duration(float64(time.Second) / c.turnsPerSecond))
				defer tick.Stop()
			}
			for j, k := range a.cuts {
				if tick != nil && j > 0 {
					select {
					case <-tick.C:
					case <-pctx.Done():
						return
					}
				}
				if pctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := cl.Publish(pctx, a.conv, a.msgs[:k])
				took := time.Since(t0)
				switch {
				case errors.Is(err, client.ErrBufferFull):
					// The agent's newest snapshot was not sent: an error,
					// unlike a superseded one the client dropped for it.
					refused.Add(1)
					errMu.Lock()
					firstErr = cmpErr(firstErr, err)
					errMu.Unlock()
				case err != nil:
					failed.Add(1)
					errMu.Lock()
					firstErr = cmpErr(firstErr, err)
					errMu.Unlock()
				default:
					a.at[j] = t0
					published.Add(1)
					lmu.Lock()
					if j == 0 {
						firsts = append(firsts, took)
					} else {
						lats = append(lats, took)
					}
					lmu.Unlock()
				}
				prog.Add(1)
			}
		}()
	}
	wg.Wait()
	pubTime := time.Since(start)
	prog.Finish()

	fctx, cancel := context.WithTimeout(ctx, c.drain)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		// An ack error is counted in the client's stats; snapshots still
		// unacknowledged after --drain count as not stored.
		firstErr = cmpErr(firstErr, err)
		if errors.Is(err, context.DeadlineExceeded) {
			failed.Add(int64(cl.Pending()))
		}
	}
	if sys != nil {
		if err := sys.waitIdle(fctx); err != nil {
			fmt.Fprintf(e.stderr, "load: workers still busy after --drain %s\n", c.drain)
		}
	} else {
		waitConsumerIdle(fctx, js, c.conn.prefix)
	}
	// The watch delivers a moment after the store write that precedes
	// the ack: give it until it has been quiet for a short while.
	quiet(fctx, func() int { bmu.Lock(); defer bmu.Unlock(); return len(got) })
	elapsed := time.Since(start)
	stopWatch()

	// Publish-to-briefing latency, bounded on both sides: from the newest
	// publish holding the boundary that preceded the briefing (lower bound:
	// the worker compacts the newest pending snapshot), and from the first
	// (upper bound).
	var lo, hi []time.Duration
	bmu.Lock()
	for _, s := range got {
		bi, ok := s.a.index[s.b.BoundaryID]
		if !ok {
			continue
		}
		var first, last time.Time
		for j, k := range s.a.cuts {
			t := s.a.at[j]
			if k <= bi || t.IsZero() || t.After(s.at) {
				continue
			}
			if first.IsZero() {
				first = t
			}
			last = t
		}
		if !first.IsZero() {
			lo = append(lo, s.at.Sub(last))
			hi = append(hi, s.at.Sub(first))
		}
	}
	nb := len(got)
	bmu.Unlock()

	q, qf, ql, qh := quantiles(lats), quantiles(firsts), quantiles(lo), quantiles(hi)
	w := e.stdout
	fmt.Fprintf(w, "agents               %d (%s), turns per agent per second %g\n", c.agents, map[bool]string{true: fmt.Sprintf("embedded, %d workers", c.workers), false: "remote"}[c.embedded], c.turnsPerSecond)
	t := loadTally{published: published.Load(), total: total, refused: refused.Load(), failed: failed.Load() + int64(cl.Stats().Failed), superseded: int64(cl.Stats().Superseded)}
	fmt.Fprintf(w, "snapshots published  %s in %s\n", t, fmtDur(pubTime))
	fmt.Fprintf(w, "publish latency      p50 %s  p99 %s  max %s  (a conversation's first publish, which sends every body: p50 %s  p99 %s)\n",
		fmtDur(q.p50), fmtDur(q.p99), fmtDur(q.max), fmtDur(qf.p50), fmtDur(qf.p99))
	fmt.Fprintf(w, "throughput           %.0f snapshots/s published; %.1f briefings/s end to end (%s)\n",
		float64(published.Load())/pubTime.Seconds(), float64(nb)/elapsed.Seconds(), fmtDur(elapsed))
	fmt.Fprintf(w, "briefings produced   %d, for %d conversations\n", nb, countConvs(got, func(s seen) string { return s.a.conv }))
	fmt.Fprintf(w, "publish→briefing     p50 %s  p99 %s  (from the newest publish holding the boundary; from the first: p50 %s  p99 %s)\n",
		fmtDur(ql.p50), fmtDur(ql.p99), fmtDur(qh.p50), fmtDur(qh.p99))
	if firstErr != nil || t.errors() > 0 {
		fmt.Fprintf(w, "first error          %v\n", firstErr)
		return fmt.Errorf("%d publish errors", t.errors())
	}
	return nil
}

// loadTally is what became of the turns a load published.
type loadTally struct {
	published, refused, failed, superseded int64 // refused: ErrBufferFull; failed: not stored
	total                                  int
}

// errors counts the turns whose snapshot was lost: refused on a full
// buffer (the client drops superseded snapshots first, so a refused one
// was a conversation's newest) or not stored. Superseded snapshots are
// not errors: a newer snapshot of the conversation carries them.
func (t loadTally) errors() int64 { return t.refused + t.failed }

func (t loadTally) String() string {
	return fmt.Sprintf("%d of %d (superseded in the buffer %d; errors %d: refused on a full buffer %d, not stored %d)",
		t.published, t.total, t.superseded, t.errors(), t.refused, t.failed)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func countConvs[T any](xs []T, key func(T) string) int {
	m := map[string]bool{}
	for _, x := range xs {
		m[key(x)] = true
	}
	return len(m)
}

// watch feeds onBriefing with the briefings of the agents' conversations.
// With the key-value store one watch on the whole bucket serves every
// agent (a watch per conversation would be an ordered consumer each);
// with Redis each conversation is watched through the client.
func (c *loadCmd) watch(ctx context.Context, js jetstream.JetStream, cl *client.Client, agents []*agentRun, on func(*briefd.Briefing)) error {
	if c.conn.redisURL != "" && !c.embedded {
		for _, a := range agents {
			ch, err := cl.Watch(ctx, a.conv)
			if err != nil {
				return err
			}
			go func() {
				for b := range ch {
					on(b)
				}
			}()
		}
		return nil
	}
	return cache.FollowPuts(ctx, js, cache.DefaultBucket, ">", on)
}

// waitConsumerIdle polls the shared consumer of a remote system until it
// has nothing pending or ctx ends.
func waitConsumerIdle(ctx context.Context, js jetstream.JetStream, prefix string) {
	s := &system{js: js}
	s.queue.Prefix = prefix
	s.queue = s.queue.WithDefaults()
	_ = s.waitIdle(ctx)
}

// quiet waits until count has not changed for 300ms, or ctx ends.
func quiet(ctx context.Context, count func() int) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, same := count(), 0
	for same < 3 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n := count(); n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
}

// histories loads the load's histories: --dir, else ../shared/data/histories
// when present, else the embedded examples.
func (c *loadCmd) histories() ([]*briefd.History, string, error) {
	dir := c.dir
	if dir == "" {
		for _, d := range []string{"../shared/data/histories", "../../shared/data/histories"} {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				dir = d
				break
			}
		}
	}
	if dir == "" {
		hs, err := examples.Histories()
		return hs, "the embedded examples", err
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, "", err
	}
	sort.Strings(names)
	var hs []*briefd.History
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, "", err
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		if err := briefd.Validate(h.Messages, briefd.Limits{}); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		return nil, "", fmt.Errorf("no *.json histories in %s", dir)
	}
	return hs, dir, nil
}
