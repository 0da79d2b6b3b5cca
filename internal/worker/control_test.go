package worker_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/queue"
)

// A snapshot's control reaches the engine: never skips with its own
// reason, now compacts a history far below the trigger, a control the
// engine cannot honour is rejected with a reason, and every compaction's
// audit event carries the briefing's coverage.
func TestSnapshotControl(t *testing.T) {
	b := setup(t, false)
	w := b.startWorker(t)
	h := loadExample(t, "tau-bench-2.json")
	publish := func(conv string, opts ...queue.PublishOption) {
		t.Helper()
		if _, err := b.pub.Publish(t.Context(), "acme", conv, h.Messages, opts...); err != nil {
			t.Fatal(err)
		}
	}
	publish("never", queue.WithControl(briefd.Control{Mode: briefd.ModeNever}))
	publish("below", queue.WithContextWindow(128000))
	publish("now", queue.WithContextWindow(128000), queue.WithControl(briefd.Control{Mode: briefd.ModeNow, Focus: "the reservation", Pin: []string{h.Messages[3].ID}}))
	publish("badkeep", queue.WithControl(briefd.Control{KeepTokens: 100000}))
	publish("badpin", queue.WithControl(briefd.Control{Pin: []string{toolMessage(h.Messages)}}))

	events := func(conv string) []audit.Event {
		evs, err := audit.Read(t.Context(), b.js, audit.Config{}, audit.Filter{Tenant: "acme", ConversationID: conv})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	one := func(conv string) audit.Event {
		t.Helper()
		var evs []audit.Event
		waitFor(t, 30*time.Second, "the audit event of "+conv, func() bool { evs = events(conv); return len(evs) > 0 })
		return evs[0]
	}

	if ev := one("never"); ev.Type != audit.TypeSkipped || ev.Reason != audit.SkipDisabled || ev.TokensBefore == 0 {
		t.Errorf("never: %+v", ev)
	}
	if ev := one("below"); ev.Type != audit.TypeSkipped || ev.Reason != audit.SkipBelowTrigger || ev.TriggerTokens != 83200 || ev.TokensBefore >= ev.TriggerTokens {
		t.Errorf("below: %+v", ev)
	}
	ev := one("now")
	if ev.Type != audit.TypeCompacted || ev.Coverage == nil || ev.Coverage.UserMessages == 0 || ev.Coverage.UserVerbatim == 0 {
		t.Fatalf("now: %+v", ev)
	}
	bf, err := b.store.Latest(t.Context(), "acme", "now")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(bf.CompactedIDs, h.Messages[3].ID) || !slices.Equal(bf.PinnedIDs, []string{h.Messages[3].ID}) {
		t.Errorf("the pinned message %s: compacted %v, pinned ids %v", h.Messages[3].ID, bf.CompactedIDs, bf.PinnedIDs)
	}
	if ev := one("badkeep"); ev.Type != audit.TypeRejected || ev.Reason != audit.ReasonInvalidControl || !strings.Contains(ev.Error, "not below the trigger") {
		t.Errorf("badkeep: %+v", ev)
	}
	if ev := one("badpin"); ev.Type != audit.TypeRejected || ev.Reason != audit.ReasonInvalidControl || !strings.Contains(ev.Error, "cannot be pinned") {
		t.Errorf("badpin: %+v", ev)
	}

	for reason, want := range map[string]float64{"disabled": 1, "below_trigger": 1} {
		if n := testutil.ToFloat64(w.Metrics().Skipped.WithLabelValues(reason)); n != want {
			t.Errorf("briefd_snapshots_skipped_total{reason=%q} = %v, want %v", reason, n, want)
		}
	}

	// The agent reads the same verdicts from the store.
	status := func(conv string) *briefd.Status {
		t.Helper()
		var st *briefd.Status
		waitFor(t, 10*time.Second, "the status of "+conv, func() bool {
			var err error
			st, err = b.store.Status(t.Context(), "acme", conv)
			return err == nil
		})
		return st
	}
	if st := status("never"); st.Outcome != briefd.OutcomeSkipped || st.Reason != "disabled" || st.Seq == 0 {
		t.Errorf("never: %+v", st)
	}
	st := status("below")
	if st.Outcome != briefd.OutcomeSkipped || st.Reason != "below_trigger" || st.TriggerTokens != 83200 || st.Tokens == 0 || st.Messages != len(h.Messages) {
		t.Errorf("below: %+v", st)
	}
	if !strings.Contains(st.String(), "not compacted yet: ") || !strings.Contains(st.String(), "trigger at 83200") {
		t.Errorf("below, in words: %s", st)
	}
	if st := status("now"); st.Outcome != briefd.OutcomeCompacted || st.BoundaryID != bf.BoundaryID || st.TokensAfter != bf.TokensAfter {
		t.Errorf("now: %+v", st)
	}
	for _, conv := range []string{"badkeep", "badpin"} {
		if st := status(conv); st.Outcome != briefd.OutcomeRejected || st.Reason != audit.ReasonInvalidControl {
			t.Errorf("%s: %+v", conv, st)
		}
	}
	// A manifest the queue refuses (its control breaks the protocol's
	// rules) reaches the agent as a rejection too.
	if _, err := b.js.Publish(t.Context(), "briefd.snap.acme.malformed",
		[]byte(`{"v":1,"tenant":"acme","conversation_id":"malformed","seq":7,"base":0,"keep":0,"append":[],"control":{"mode":"soon"}}`)); err != nil {
		t.Fatal(err)
	}
	if st := status("malformed"); st.Outcome != briefd.OutcomeRejected || st.Reason != audit.ReasonMalformed || st.Seq != 7 || !strings.Contains(st.Detail, "mode") {
		t.Errorf("malformed: %+v", st)
	}
}

func toolMessage(msgs []briefd.Message) string {
	for _, m := range msgs {
		if m.Role == briefd.RoleTool {
			return m.ID
		}
	}
	return ""
}
