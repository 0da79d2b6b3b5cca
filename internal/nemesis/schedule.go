package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The kinds of faults a run injects.
const (
	// KillWorker kills a worker process with SIGKILL and starts it again
	// a moment later.
	KillWorker Kind = "worker-kill"
	// PauseWorker stops a worker with SIGSTOP for half to twice the
	// consumer's AckWait, then continues it with SIGCONT: its snapshots
	// are redelivered to another worker while it sleeps, and it wakes up
	// holding work it no longer owns.
	PauseWorker Kind = "worker-pause"
	// RestartNATS stops a nats-server node with SIGTERM (an orderly
	// restart, e.g. an upgrade) and starts it again; KillNATS with SIGKILL
	// (a crash). In a cluster one node at a time, in turn.
	RestartNATS Kind = "nats-restart"
	KillNATS    Kind = "nats-kill"
	// RestartRedis stops redis-server with SIGTERM and starts it again;
	// KillRedis with SIGKILL. It runs with appendfsync always, so an
	// acknowledged briefing survives either.
	RestartRedis Kind = "redis-restart"
	KillRedis    Kind = "redis-kill"
	// LLMOutage takes the fake model endpoint down (connections refused,
	// requests in flight cut) for 2-10 seconds.
	LLMOutage Kind = "llm-outage"
)

// Kinds lists every kind, in the order reports print them.
var Kinds = []Kind{KillWorker, PauseWorker, RestartNATS, KillNATS, RestartRedis, KillRedis, LLMOutage}

// DefaultKinds are the kinds of issue 10's nemesis run, which a schedule
// given as a bare count ("10") injects.
var DefaultKinds = []Kind{KillWorker, PauseWorker, RestartNATS, RestartRedis, LLMOutage}

// Schedule says how many faults of each kind a run injects, spread over
// its publishing time.
type Schedule map[Kind]int

// ParseSchedule reads a schedule: "none" (or ""), a count N (N faults of
// each default kind), or a comma-separated list of kind=N, where kind
// "default" stands for every default kind, e.g.
// "default=10,nats-kill=10".
func ParseSchedule(s string) (Schedule, error) {
	s = strings.TrimSpace(s)
	out := Schedule{}
	if s == "" || s == "none" {
		return out, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		s = "default=" + strconv.Itoa(n)
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("fault schedule: %q is not kind=count", part)
		}
		switch kind := Kind(k); {
		case k == "default":
			for _, d := range DefaultKinds {
				out[d] = n
			}
		case slices.Contains(Kinds, kind):
			out[kind] = n
		default:
			return nil, fmt.Errorf("fault schedule: unknown kind %q (kinds: %s, or default)", k, kindList())
		}
	}
	return out, nil
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// String is the schedule in ParseSchedule's form.
func (s Schedule) String() string {
	var parts []string
	for _, k := range Kinds {
		if s[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, s[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// Total is the number of faults of the schedule.
func (s Schedule) Total() int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// plannedFault is one fault of a plan: its kind and when it starts,
// from the start of publishing.
type plannedFault struct {
	kind Kind
	at   time.Duration
}

// plan spreads each kind's faults over window: the i-th of n falls at a
// random point of the i-th n-th of the window, so faults of one kind are
// evenly spaced and faults of different kinds overlap at random.
func (s Schedule) plan(window time.Duration, rng *rand.Rand) []plannedFault {
	var out []plannedFault
	for _, k := range Kinds {
		n := s[k]
		for i := range n {
			f := (float64(i) + 0.05 + 0.9*rng.Float64()) / float64(n)
			out = append(out, plannedFault{kind: k, at: time.Duration(f * float64(window))})
		}
	}
	slices.SortFunc(out, func(a, b plannedFault) int { return int(a.at - b.at) })
	return out
}

// between returns a random duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Float64()*float64(hi-lo))
}
