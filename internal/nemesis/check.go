package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/queue"
)

// latestReader is what the checker reads of the briefing store.
type latestReader interface {
	Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error)
}

// checker reads the stream, the audit trail, the dead letters and the
// store after a run and holds every conversation to the guarantees.
type checker struct {
	js    jetstream.JetStream
	qcfg  queue.Config
	acfg  audit.Config
	store latestReader
}

// snapOutcomes are the audit events of one conversation, by snapshot
// stream sequence.
type snapOutcomes map[uint64][]audit.Event

// check fills r's verdicts from the servers' state.
func (c *checker) check(ctx context.Context, convs []*conversation, poison []poisonSnapshot, poisonTenant string,
	consumer *jetstream.ConsumerInfo, r *Report) error {
	events := map[convKey]snapOutcomes{}
	settled := map[uint64]bool{} // stream sequences with an outcome
	err := audit.Scan(ctx, c.js, c.acfg, audit.Filter{}, func(ev audit.Event) error {
		settled[ev.SnapshotSeq] = true
		k := convKey{ev.Tenant, ev.ConversationID}
		if events[k] == nil {
			events[k] = snapOutcomes{}
		}
		events[k][ev.SnapshotSeq] = append(events[k][ev.SnapshotSeq], ev)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the audit trail: %w", err)
	}
	dead, err := c.deadLetters(ctx)
	if err != nil {
		return fmt.Errorf("read the dead letters: %w", err)
	}

	snaps, err := c.js.Stream(ctx, c.qcfg.Streams().Snapshots)
	if err != nil {
		return err
	}
	res := queue.NewResolver(c.js, c.qcfg)
	subj := queue.Subjects{Prefix: c.qcfg.Prefix}
	agentTenants := map[string]bool{}
	for _, cv := range convs {
		agentTenants[cv.tenant] = true
		if cv.accepted == 0 {
			continue
		}
		r.Conversations++
		k := convKey{cv.tenant, cv.id}
		c.checkConversation(ctx, snaps, res, subj, cv, events[k], r)
	}

	for _, d := range dead {
		if !agentTenants[d.Tenant] {
			continue
		}
		r.DeadLettered++
		if d.Permanent {
			r.Poisoned++
		}
		r.violation("dead letter of a valid snapshot: %s/%s stream seq %d after %d deliveries: %s",
			d.Tenant, d.ConversationID, d.StreamSeq, d.Deliveries, d.Reason)
	}

	if len(poison) > 0 {
		c.checkPoison(poison, poisonTenant, dead, events, r)
	}
	if consumer != nil && consumer.NumAckPending > 0 {
		for _, d := range dead {
			settled[d.StreamSeq] = true
		}
		c.unsettled(ctx, snaps, consumer, settled, r)
	}
	return nil
}

// unsettled names the snapshots the consumer still counts as
// unacknowledged after the drain: those it delivered past its ack floor
// that have no outcome in the audit trail or the dead letters.
func (c *checker) unsettled(ctx context.Context, snaps jetstream.Stream, info *jetstream.ConsumerInfo, settled map[uint64]bool, r *Report) {
	n := 0
	for seq := info.AckFloor.Stream + 1; seq <= info.Delivered.Stream && n < 10; seq++ {
		if settled[seq] {
			continue
		}
		m, err := snaps.GetMsg(ctx, seq)
		if err != nil {
			continue // not a snapshot of the filter, or gone
		}
		n++
		r.violation("stream seq %d (%s, stored %s) has no outcome: unacknowledged after the drain", seq, m.Subject, m.Time.Format(time.TimeOnly))
	}
}

// checkConversation holds one conversation to the guarantees: its newest
// history is the stream's newest snapshot, that snapshot was handled (a
// briefing stored, or a skip), and the store's latest is the briefing of
// the newest snapshot briefed.
func (c *checker) checkConversation(ctx context.Context, snaps jetstream.Stream, res *queue.Resolver, subj queue.Subjects,
	cv *conversation, outcomes snapOutcomes, r *Report) {
	name := cv.tenant + "/" + cv.id
	last, err := queue.LastMsg(ctx, c.js, snaps, subj.Snapshot(cv.tenant, cv.id))
	if err != nil {
		r.LostPublish++
		r.violation("%s: no snapshot in the stream (%v); the agent published %d messages", name, err, cv.accepted)
		return
	}
	snap, err := res.Resolve(ctx, last.Subject, last.Sequence, last.Data)
	if err != nil {
		r.LostPublish++
		r.violation("%s: the newest snapshot (stream seq %d) does not resolve: %v", name, last.Sequence, err)
		return
	}
	want := cv.msgs[cv.accepted-1].ID
	if len(snap.Messages) != cv.accepted || snap.Messages[len(snap.Messages)-1].ID != want {
		r.LostPublish++
		r.violation("%s: the newest snapshot in the stream names %d messages, the agent's newest history %d (ending %s)",
			name, len(snap.Messages), cv.accepted, want)
		return
	}

	var maxBriefed uint64
	for seq, evs := range outcomes {
		for _, ev := range evs {
			if ev.Type == audit.TypeCompacted && seq > maxBriefed {
				maxBriefed = seq
			}
		}
	}
	latest, err := c.store.Latest(ctx, cv.tenant, cv.id)
	var latestSeq uint64
	switch {
	case err == nil:
		latestSeq = latest.SnapshotSeq
	case errors.Is(err, cache.ErrNotFound):
	default:
		r.Unchecked++
		r.violation("%s: read the store: %v", name, err)
		return
	}
	o := outcome(outcomes[last.Sequence])
	switch {
	case o == outcomeCompacted && latestSeq != last.Sequence:
		r.LostStored++
		r.violation("%s: the newest snapshot (stream seq %d) was briefed, the store's latest is from stream seq %d", name, last.Sequence, latestSeq)
	case o != outcomeCompacted && latestSeq < maxBriefed:
		r.RegressedStore++
		r.violation("%s: the store's latest briefing is from stream seq %d, older than seq %d, which was briefed", name, latestSeq, maxBriefed)
	}
	switch o {
	case outcomeCompacted:
		r.Newest.Compacted++
	case outcomeSkipped:
		r.Newest.Skipped++
	case outcomeRejected:
		r.Newest.Rejected++
		r.violation("%s: the newest snapshot (stream seq %d) of a valid history was rejected", name, last.Sequence)
	default:
		r.LostUnhandled++
		r.violation("%s: the newest snapshot (stream seq %d) has no outcome in the audit trail", name, last.Sequence)
	}
}

type snapOutcome int

const (
	outcomeNone snapOutcome = iota
	outcomeSkipped
	outcomeCompacted
	outcomeRejected
)

// outcome is what the audit trail says became of one snapshot. A skip
// only counts if it is not "superseded": the newest snapshot of a
// conversation cannot be superseded.
func outcome(evs []audit.Event) snapOutcome {
	o := outcomeNone
	for _, ev := range evs {
		switch ev.Type {
		case audit.TypeCompacted:
			return outcomeCompacted
		case audit.TypeSkipped:
			if ev.Reason != audit.SkipSuperseded {
				o = max(o, outcomeSkipped)
			}
		case audit.TypeRejected, audit.TypeDeadLettered:
			o = outcomeRejected
		}
	}
	return o
}

// checkPoison checks that each invalid snapshot was dead-lettered once,
// as bad input, with a reason that names what is wrong with it.
func (c *checker) checkPoison(poison []poisonSnapshot, tenant string, dead []queue.DeadLetter, events map[convKey]snapOutcomes, r *Report) {
	byConv := map[string][]queue.DeadLetter{}
	for _, d := range dead {
		if d.Tenant == tenant {
			byConv[d.ConversationID] = append(byConv[d.ConversationID], d)
		}
	}
	p := &r.Poison
	p.Published = len(poison)
	for _, s := range poison {
		ds := byConv[s.conv]
		audited := 0
		for _, evs := range events[convKey{tenant, s.conv}] {
			for _, ev := range evs {
				if ev.Type == audit.TypeDeadLettered {
					audited++
				}
			}
		}
		switch {
		case len(ds) == 0:
			p.NotDeadLettered++
			r.violation("invalid snapshot %s/%s (%s) was not dead-lettered", tenant, s.conv, s.kind.name)
			continue
		case len(ds) > 1 || audited > 1:
			p.DeadLetteredTwice++
			r.violation("invalid snapshot %s/%s (%s): %d dead-letter records, %d audit events", tenant, s.conv, s.kind.name, len(ds), audited)
		default:
			p.DeadLetteredOnce++
		}
		d := ds[0]
		switch {
		case !d.Permanent:
			p.ForAFault++
			r.violation("invalid snapshot %s/%s (%s) dead-lettered as a fault after %d deliveries: %s", tenant, s.conv, s.kind.name, d.Deliveries, d.Reason)
		case !strings.Contains(d.Reason, s.kind.reason):
			p.VagueReason++
			r.violation("invalid snapshot %s/%s (%s): reason %q does not say %q", tenant, s.conv, s.kind.name, d.Reason, s.kind.reason)
		default:
			p.ReasonNamesInput++
		}
	}
}

// deadLetters reads every dead-letter record.
func (c *checker) deadLetters(ctx context.Context) ([]queue.DeadLetter, error) {
	st, err := c.js.Stream(ctx, c.qcfg.Streams().Dead)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{InactiveThreshold: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	var out []queue.DeadLetter
	for {
		msgs, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		var last uint64
		for m := range msgs.Messages() {
			n++
			var d queue.DeadLetter
			if err := json.Unmarshal(m.Data(), &d); err != nil {
				return nil, fmt.Errorf("dead letter on %s: %w", m.Subject(), err)
			}
			out = append(out, d)
			if md, err := m.Metadata(); err == nil {
				last = md.Sequence.Stream
			}
		}
		if err := msgs.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
		if n == 0 || last >= info.State.LastSeq {
			return out, nil
		}
	}
}
