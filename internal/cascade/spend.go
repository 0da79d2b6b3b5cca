package cascade

import (
	"sync"
	"time"
)

// SpendGuard bounds model requests per conversation and per tenant over a
// sliding window, so a conversation that keeps failing (or a tenant that
// floods) cannot run up calls. Memory is bounded by the keys active in the
// last window: expired keys are swept as the map grows. Safe for
// concurrent use.
type SpendGuard struct {
	perConv, perTenant int // <= 0: unlimited
	window             time.Duration
	now                func() time.Time

	mu      sync.Mutex
	conv    map[string][]time.Time
	tenant  map[string][]time.Time
	sweepAt int
}

// NewSpendGuard returns a guard allowing perConversation and perTenant
// requests per window; a limit <= 0 is unlimited.
func NewSpendGuard(perConversation, perTenant int, window time.Duration, now func() time.Time) *SpendGuard {
	return &SpendGuard{
		perConv: perConversation, perTenant: perTenant, window: window, now: now,
		conv: map[string][]time.Time{}, tenant: map[string][]time.Time{}, sweepAt: 1024,
	}
}

// Reserve takes one request from both the conversation's and the tenant's
// allowance, or neither, and reports whether it could.
func (g *SpendGuard) Reserve(tenant, conversation string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	convKey := tenant + "\x00" + conversation
	c := g.live(g.conv, convKey, now)
	t := g.live(g.tenant, tenant, now)
	if (g.perConv > 0 && len(c) >= g.perConv) || (g.perTenant > 0 && len(t) >= g.perTenant) {
		return false
	}
	if g.perConv > 0 {
		g.conv[convKey] = append(c, now)
	}
	if g.perTenant > 0 {
		g.tenant[tenant] = append(t, now)
	}
	if len(g.conv)+len(g.tenant) > g.sweepAt {
		g.sweep(now)
	}
	return true
}

// live drops the expired times of key and returns the rest.
func (g *SpendGuard) live(m map[string][]time.Time, key string, now time.Time) []time.Time {
	ts := m[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= g.window {
		i++
	}
	if i > 0 {
		ts = append(ts[:0], ts[i:]...)
		if len(ts) == 0 {
			delete(m, key)
			return nil
		}
		m[key] = ts
	}
	return ts
}

func (g *SpendGuard) sweep(now time.Time) {
	for _, m := range []map[string][]time.Time{g.conv, g.tenant} {
		for k := range m {
			g.live(m, k, now)
		}
	}
	// Sweep again only when the live keys have doubled, so the cost stays
	// amortised O(1) per call.
	g.sweepAt = max(1024, 2*(len(g.conv)+len(g.tenant)))
}
