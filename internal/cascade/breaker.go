package cascade

import (
	"sync"
	"time"
)

// breakerState is the state of a [Breaker].
type breakerState int

const (
	stateClosed breakerState = iota
	stateOpen
	stateHalfOpen
)

func (s breakerState) String() string {
	switch s {
	case stateOpen:
		return "open"
	case stateHalfOpen:
		return "half-open"
	default:
		return "closed"
	}
}

// Breaker is a per-model circuit breaker: after Failures consecutive failed
// calls it opens and refuses calls for CoolDown; then it lets one probe
// through (half-open). The probe's success closes it, its failure opens it
// again. A probe that never reports (its caller was cancelled) is replaced
// after another CoolDown. Safe for concurrent use.
type Breaker struct {
	failures int // threshold; <= 0 disables
	coolDown time.Duration
	now      func() time.Time

	mu          sync.Mutex
	state       breakerState
	consecutive int
	openedAt    time.Time
	probeAt     time.Time
}

// NewBreaker returns a closed breaker. failures <= 0 disables it.
func NewBreaker(failures int, coolDown time.Duration, now func() time.Time) *Breaker {
	return &Breaker{failures: failures, coolDown: coolDown, now: now}
}

// Allow reports whether a call may go out now. In the half-open state only
// one caller at a time gets true.
func (b *Breaker) Allow() bool {
	if b.failures <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switch b.state {
	case stateOpen:
		if now.Sub(b.openedAt) < b.coolDown {
			return false
		}
		b.state, b.probeAt = stateHalfOpen, now
		return true
	case stateHalfOpen:
		if now.Sub(b.probeAt) < b.coolDown {
			return false
		}
		b.probeAt = now
		return true
	default:
		return true
	}
}

// Success records a call the model answered.
func (b *Breaker) Success() {
	b.mu.Lock()
	b.state, b.consecutive = stateClosed, 0
	b.mu.Unlock()
}

// Failure records a failed call (after its retries).
func (b *Breaker) Failure() {
	if b.failures <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive++
	if b.state == stateHalfOpen || b.consecutive >= b.failures {
		b.state, b.openedAt = stateOpen, b.now()
	}
}

// State returns "closed", "open" or "half-open" (for logs and tests).
func (b *Breaker) State() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == stateOpen && b.now().Sub(b.openedAt) >= b.coolDown {
		return stateHalfOpen.String() // the next Allow lets a probe through
	}
	return b.state.String()
}
