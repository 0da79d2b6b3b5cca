package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
)

// Fault is one fault injected: what, on which process, when and for how
// long, and whether healing it failed.
type Fault struct {
	Kind   Kind
	Target string
	At     time.Duration // from the start of publishing
	Held   time.Duration // until healed
	Err    string        `json:",omitempty"`
}

// system is what a run started: the processes faults act on.
type system struct {
	nats    *natsServers
	redis   *redisServer // nil with the key-value store
	llm     *fakeLLM     // nil without the LLM cascade
	workers []*workerProc
	ackWait time.Duration
}

// injector carries out a plan of faults. Faults of different kinds
// overlap; faults of one server kind wait for each other (one NATS node,
// Redis or the LLM is down at a time, so a 3-node cluster keeps its
// quorum), and a worker fault takes a worker no other fault holds.
type injector struct {
	sys *system
	log *slog.Logger

	rngMu sync.Mutex
	rng   *rand.Rand

	natsMu, redisMu, llmMu sync.Mutex
	nextNode               int

	mu     sync.Mutex
	held   map[*workerProc]bool
	faults []Fault
}

func (in *injector) between(lo, hi time.Duration) time.Duration {
	in.rngMu.Lock()
	defer in.rngMu.Unlock()
	return between(in.rng, lo, hi)
}

// run injects every fault of plan, each at its time from start, and
// returns once every fault is healed. Faults not begun when ctx ends are
// not injected.
func (in *injector) run(ctx context.Context, start time.Time, plan []plannedFault) {
	var wg sync.WaitGroup
	for _, p := range plan {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(time.Until(start.Add(p.at)))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			f, ok := in.inject(ctx, p.kind, start)
			if !ok {
				return
			}
			in.mu.Lock()
			in.faults = append(in.faults, f)
			in.mu.Unlock()
		}()
	}
	wg.Wait()
}

// inject carries out one fault and heals it. It reports false when no
// target could be had before ctx ended.
func (in *injector) inject(ctx context.Context, kind Kind, start time.Time) (Fault, bool) {
	f := Fault{Kind: kind}
	var heal func() error
	switch kind {
	case KillWorker, PauseWorker:
		w := in.takeWorker(ctx)
		if w == nil {
			return f, false
		}
		defer in.releaseWorker(w)
		f.Target = w.name
		if kind == KillWorker {
			w.kill()
			down := in.between(200*time.Millisecond, 2*time.Second)
			heal = func() error { time.Sleep(down); return w.start() }
		} else {
			if err := w.pause(); err != nil {
				f.Err = err.Error()
				return f, true
			}
			pause := in.between(in.sys.ackWait/2, 2*in.sys.ackWait)
			heal = func() error { time.Sleep(pause); return w.resume() }
		}
	case RestartNATS, KillNATS:
		in.natsMu.Lock()
		defer in.natsMu.Unlock()
		if ctx.Err() != nil {
			return f, false
		}
		node := in.sys.nats.nodes[in.nextNode%len(in.sys.nats.nodes)]
		in.nextNode++
		f.Target = node.name
		stopProc(node.proc, kind == KillNATS)
		down := in.between(200*time.Millisecond, 2*time.Second)
		heal = func() error {
			time.Sleep(down)
			if err := node.start(); err != nil {
				return err
			}
			return node.waitListening(loopback(node.port), startTimeout)
		}
	case RestartRedis, KillRedis:
		if in.sys.redis == nil {
			return f, false
		}
		in.redisMu.Lock()
		defer in.redisMu.Unlock()
		if ctx.Err() != nil {
			return f, false
		}
		r := in.sys.redis
		f.Target = r.name
		stopProc(r.proc, kind == KillRedis)
		down := in.between(200*time.Millisecond, 2*time.Second)
		heal = func() error {
			time.Sleep(down)
			if err := r.start(); err != nil {
				return err
			}
			return r.waitReady(context.WithoutCancel(ctx))
		}
	case LLMOutage:
		if in.sys.llm == nil {
			return f, false
		}
		in.llmMu.Lock()
		defer in.llmMu.Unlock()
		if ctx.Err() != nil {
			return f, false
		}
		f.Target = "llm"
		in.sys.llm.down()
		down := in.between(2*time.Second, 10*time.Second)
		heal = func() error { time.Sleep(down); return in.sys.llm.up() }
	default:
		return f, false
	}
	t0 := time.Now()
	f.At = t0.Sub(start)
	in.log.Info("nemesis: fault", "kind", kind, "target", f.Target, "at", f.At.Round(time.Millisecond))
	if err := heal(); err != nil {
		f.Err = err.Error()
		in.log.Error("nemesis: heal failed", "kind", kind, "target", f.Target, "error", err)
	}
	f.Held = time.Since(t0)
	return f, true
}

// stopProc stops a server for a restart (SIGTERM) or a crash (SIGKILL).
func stopProc(p *proc, crash bool) {
	if crash {
		p.kill()
		return
	}
	p.stop(syscall.SIGTERM, 30*time.Second)
}

// takeWorker returns a worker no other fault holds, waiting for one, or
// nil when ctx ends first.
func (in *injector) takeWorker(ctx context.Context) *workerProc {
	for {
		in.mu.Lock()
		var free []*workerProc
		for _, w := range in.sys.workers {
			if !in.held[w] {
				free = append(free, w)
			}
		}
		if len(free) > 0 {
			in.rngMu.Lock()
			w := free[in.rng.IntN(len(free))]
			in.rngMu.Unlock()
			in.held[w] = true
			in.mu.Unlock()
			return w
		}
		in.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (in *injector) releaseWorker(w *workerProc) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.held, w)
}

// injected returns the faults carried out so far.
func (in *injector) injected() []Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Fault(nil), in.faults...)
}

// healAll makes sure every process runs and nothing is paused or down,
// whatever a failed heal left behind.
func (sys *system) healAll(ctx context.Context) error {
	var errs []error
	for _, n := range sys.nats.nodes {
		if !n.running() {
			if err := n.start(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if sys.redis != nil && !sys.redis.running() {
		if err := sys.redis.start(); err != nil {
			errs = append(errs, err)
		} else if err := sys.redis.waitReady(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if sys.llm != nil && !sys.llm.isUp() {
		if err := sys.llm.up(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, w := range sys.workers {
		if w.isPaused() {
			if err := w.resume(); err != nil {
				errs = append(errs, err)
			}
		}
		if !w.running() {
			if err := w.start(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %v", errs)
	}
	return nil
}
