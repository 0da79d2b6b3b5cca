package nemesis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
)

// conversation is what an agent published of one conversation: the
// checker compares it with the stream, the audit trail and the store.
type conversation struct {
	tenant, id string
	msgs       []briefd.Message
	// accepted is the length of the newest history Publish accepted (0:
	// none); the stream's newest snapshot of the conversation must name
	// exactly these messages.
	accepted  int
	publishes int
	refused   int // ErrBufferFull: the client kept an older snapshot instead
}

// agents play histories turn by turn through one client per tenant, the
// way an agent publishes: the history so far after each turn.
type agents struct {
	cfg     *Config
	log     *slog.Logger
	runID   string
	clients map[string]*client.Client

	mu    sync.Mutex
	convs []*conversation

	published, refused, errs atomic.Int64
	firstErr                 atomic.Pointer[error]
}

func newAgents(cfg *Config, nc *nats.Conn, rdb redis.UniversalClient, runID string, log *slog.Logger) (*agents, error) {
	a := &agents{cfg: cfg, log: log, runID: runID, clients: map[string]*client.Client{}}
	perTenant := (cfg.Agents + cfg.Tenants - 1) / cfg.Tenants
	for t := range cfg.Tenants {
		opts := []client.Option{
			client.WithTenant(tenantName(t)), client.WithPrefix(cfg.Prefix),
			client.WithContextWindow(cfg.ContextWindow), client.WithBuffer(max(1024, 8*perTenant)),
			client.WithAckTimeout(cfg.AckTimeout), client.WithLogger(log),
			client.WithErrorHandler(a.onError),
		}
		if rdb != nil {
			opts = append(opts, client.WithRedis(rdb))
		} else {
			opts = append(opts, client.WithKVBucket(cfg.kvBucket()))
		}
		c, err := client.New(nc, opts...)
		if err != nil {
			a.close(context.Background())
			return nil, fmt.Errorf("agents: client of tenant %s: %w", tenantName(t), err)
		}
		a.clients[tenantName(t)] = c
	}
	return a, nil
}

func tenantName(i int) string { return fmt.Sprintf("t%d", i) }

func (a *agents) onError(err error) {
	a.errs.Add(1)
	a.firstErr.CompareAndSwap(nil, &err)
}

// run plays cfg.Agents agents until ctx ends. Each agent plays one
// history after another, each as a new conversation, at TurnsPerSecond
// with 20% jitter, starting at a random moment of its first turn.
func (a *agents) run(ctx context.Context, seed uint64) {
	var wg sync.WaitGroup
	for i := range a.cfg.Agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.agent(ctx, i, rand.New(rand.NewPCG(seed, uint64(i))))
		}()
	}
	wg.Wait()
}

func (a *agents) agent(ctx context.Context, i int, rng *rand.Rand) {
	tenant := tenantName(i % a.cfg.Tenants)
	cl := a.clients[tenant]
	period := time.Duration(float64(time.Second) / a.cfg.TurnsPerSecond)
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	if !wait(time.Duration(rng.Float64() * float64(period))) {
		return
	}
	for k := 0; ; k++ {
		h := a.cfg.Histories[(i+k*a.cfg.Agents)%len(a.cfg.Histories)]
		c := &conversation{tenant: tenant, id: fmt.Sprintf("%s-a%d-%d", a.runID, i, k), msgs: h.Messages}
		a.mu.Lock()
		a.convs = append(a.convs, c)
		a.mu.Unlock()
		for j, n := range turns(h.Messages) {
			if j > 0 && !wait(time.Duration(float64(period)*(0.8+0.4*rng.Float64()))) {
				return
			}
			err := cl.Publish(ctx, c.id, h.Messages[:n])
			a.mu.Lock()
			c.publishes++
			switch {
			case err == nil:
				c.accepted = n
				a.published.Add(1)
			case errors.Is(err, client.ErrBufferFull):
				c.refused++
				a.refused.Add(1)
			case ctx.Err() != nil:
				// The run's publishing time ended during the call.
			default:
				a.onError(err)
			}
			a.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// turns returns the history lengths at which an agent publishes: before
// each assistant message (the previous turn and its tool results are
// complete), and the whole history.
func turns(msgs []briefd.Message) []int {
	var out []int
	for k := 1; k < len(msgs); k++ {
		if msgs[k].Role == briefd.RoleAssistant {
			out = append(out, k)
		}
	}
	if len(msgs) > 0 {
		out = append(out, len(msgs))
	}
	return out
}

// flush waits until every snapshot is acked or failed (re-sends
// included), or ctx ends.
func (a *agents) flush(ctx context.Context) error {
	var errs []error
	for t, c := range a.clients {
		if err := c.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", t, err))
		}
	}
	return errors.Join(errs...)
}

func (a *agents) close(ctx context.Context) {
	for _, c := range a.clients {
		_ = c.Close(ctx)
	}
}

// conversations returns the conversations played, once run returned.
func (a *agents) conversations() []*conversation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*conversation(nil), a.convs...)
}
