package nemesis

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Report is what a run found. The guarantees hold when Violations is
// empty: every count below named "Lost…", "Regressed…", Poisoned and
// DeadLettered is then 0, and every invalid snapshot was dead-lettered
// once with a reason that names it.
type Report struct {
	// Setup.
	NATSVersion string
	Nodes       int
	Replicas    int
	Store       string
	Workers     int
	LLM         bool
	Agents      int
	Tenants     int
	Duration    time.Duration
	Schedule    Schedule
	Dir         string

	// What the agents did.
	Conversations    int    // conversations with at least one snapshot accepted
	Published        int64  // snapshots Publish accepted
	Refused          int64  // Publish refused: the client's buffer was full of newer snapshots
	ClientErrors     int64  // publishes that failed for good after the client's re-sends
	FirstClientError string `json:",omitempty"`

	// Faults carried out.
	Faults []Fault

	// Verdicts per conversation (see Violations for each one's detail).
	LostPublish    int // the agent's newest history is not the stream's newest snapshot
	LostUnhandled  int // the newest snapshot has no outcome (compacted, skipped) in the audit trail
	LostStored     int // the newest snapshot was briefed, the store's latest is another
	RegressedStore int // the store's latest is older than a snapshot briefed
	RegressedSeen  int // a briefing of an older snapshot replaced a newer one while the run watched
	BoundaryBack   int // a newer snapshot's briefing cut before the one it replaced
	Poisoned       int // valid snapshots rejected as bad input
	DeadLettered   int // valid snapshots dead-lettered, for any reason
	Unchecked      int // conversations the checker could not read

	// Newest counts the outcomes of each conversation's newest snapshot.
	Newest struct{ Compacted, Skipped, Rejected int }

	// Poison is the verdict on the invalid snapshots of a flood.
	Poison struct {
		Published, DeadLetteredOnce, DeadLetteredTwice, NotDeadLettered int
		ForAFault, VagueReason, ReasonNamesInput                        int
	}

	// Latency from a snapshot's store in the stream to its briefing's
	// announcement by the store, for the agents' tenants.
	Briefings                          int
	LatencyP50, LatencyP99, LatencyMax time.Duration
	// The same for the snapshots stored in the FloodWindow from the
	// flood's start (PoisonAt of the way in, flood or not).
	WindowBriefings                 int
	WindowP50, WindowP99, WindowMax time.Duration

	// Left at the end: snapshots not acknowledged after the drain.
	PendingAtEnd, AckPendingAtEnd uint64
	// Exits of processes nobody asked for (a worker crashing by itself).
	UnplannedExits []string

	Violations []string
}

// maxViolations bounds the details kept; the counts stay exact.
const maxViolations = 200

func (r *Report) violation(format string, args ...any) {
	if len(r.Violations) < maxViolations {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	}
}

// Lost is every conversation whose newest history was not briefed and
// stored.
func (r *Report) Lost() int { return r.LostPublish + r.LostUnhandled + r.LostStored }

// Regressed is every way the store went backwards.
func (r *Report) Regressed() int { return r.RegressedStore + r.RegressedSeen + r.BoundaryBack }

// FaultsByKind counts the faults carried out, by kind.
func (r *Report) FaultsByKind() map[Kind]int {
	m := map[Kind]int{}
	for _, f := range r.Faults {
		m[f.Kind]++
	}
	return m
}

// OK reports whether the run found nothing wrong.
func (r *Report) OK() bool {
	return r.Lost() == 0 && r.Regressed() == 0 && r.Poisoned == 0 && r.DeadLettered == 0 && r.Unchecked == 0 &&
		r.Poison.Published == r.Poison.DeadLetteredOnce && r.Poison.ReasonNamesInput == r.Poison.Published &&
		r.PendingAtEnd == 0 && r.AckPendingAtEnd == 0 && len(r.UnplannedExits) == 0 && len(r.Violations) == 0
}

// Print writes the figures, then up to 20 violations.
func (r *Report) Print(w io.Writer) {
	llm := "off"
	if r.LLM {
		llm = "fake endpoint"
	}
	fmt.Fprintf(w, "setup            %s, %d node(s), R%d streams; store %s; %d worker processes; LLM %s\n",
		r.NATSVersion, r.Nodes, r.Replicas, r.Store, r.Workers, llm)
	fmt.Fprintf(w, "agents           %d over %d tenants for %s: %d conversations, %d snapshots published (refused on a full buffer %d, client errors %d)\n",
		r.Agents, r.Tenants, r.Duration, r.Conversations, r.Published, r.Refused, r.ClientErrors)
	if r.FirstClientError != "" {
		fmt.Fprintf(w, "                 first client error: %s\n", r.FirstClientError)
	}
	byKind := r.FaultsByKind()
	var parts []string
	failed := 0
	for _, k := range Kinds {
		if byKind[k] > 0 || r.Schedule[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, byKind[k]))
		}
	}
	for _, f := range r.Faults {
		if f.Err != "" {
			failed++
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	fmt.Fprintf(w, "faults injected  %d: %s (heal failed %d)\n", len(r.Faults), strings.Join(parts, ", "), failed)
	fmt.Fprintf(w, "newest snapshots compacted %d, skipped (below the trigger) %d, rejected %d\n", r.Newest.Compacted, r.Newest.Skipped, r.Newest.Rejected)
	fmt.Fprintf(w, "lost             %d (not the stream's newest %d, no outcome %d, briefed but not the store's latest %d)\n",
		r.Lost(), r.LostPublish, r.LostUnhandled, r.LostStored)
	fmt.Fprintf(w, "regressed        %d (store older than a snapshot briefed %d, older snapshot seen replacing a newer %d, boundary moved back %d)\n",
		r.Regressed(), r.RegressedStore, r.RegressedSeen, r.BoundaryBack)
	fmt.Fprintf(w, "poisoned         %d\n", r.Poisoned)
	fmt.Fprintf(w, "dead-lettered    %d (valid snapshots)\n", r.DeadLettered)
	if r.Poison.Published > 0 {
		p := r.Poison
		fmt.Fprintf(w, "invalid          %d published: dead-lettered once %d, more than once %d, never %d; as a fault %d; reason names the input %d\n",
			p.Published, p.DeadLetteredOnce, p.DeadLetteredTwice, p.NotDeadLettered, p.ForAFault, p.ReasonNamesInput)
	}
	fmt.Fprintf(w, "publish→briefing p50 %s  p99 %s  max %s  (%d briefings announced)\n",
		round(r.LatencyP50), round(r.LatencyP99), round(r.LatencyMax), r.Briefings)
	fmt.Fprintf(w, "  in the %s from the flood's start: p50 %s  p99 %s  max %s  (%d briefings)\n",
		FloodWindow, round(r.WindowP50), round(r.WindowP99), round(r.WindowMax), r.WindowBriefings)
	fmt.Fprintf(w, "left pending     %d undelivered, %d unacknowledged\n", r.PendingAtEnd, r.AckPendingAtEnd)
	if len(r.UnplannedExits) > 0 {
		fmt.Fprintf(w, "unplanned exits  %d: %s\n", len(r.UnplannedExits), strings.Join(r.UnplannedExits, "; "))
	}
	if r.Dir != "" {
		fmt.Fprintf(w, "run folder       %s (server data and every process's log)\n", r.Dir)
	}
	verdict := "OK: every guarantee held"
	if !r.OK() {
		verdict = fmt.Sprintf("FAILED: %d violations", len(r.Violations))
	}
	fmt.Fprintf(w, "verdict          %s\n", verdict)
	for i, v := range r.Violations {
		if i == 20 {
			fmt.Fprintf(w, "  … %d more\n", len(r.Violations)-20)
			break
		}
		fmt.Fprintf(w, "  - %s\n", v)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d
}

// quantile returns the nearest-rank q-quantile of sorted xs.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func latencyFigures(xs []time.Duration) (p50, p99, maxv time.Duration) {
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0, 0, 0
	}
	return quantile(xs, 0.5), quantile(xs, 0.99), xs[len(xs)-1]
}
