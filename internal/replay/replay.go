// Package replay audits compactions at scale. It reads the audit stream
// for a conversation, a tenant, a time range or everything, re-runs each
// recorded compaction from its snapshot (the snapshot stream is the audit
// trail) with today's engine, or another model or prompt, and compares the
// two: tokens, tier, the identifiers the conversation's future needed,
// the acceptance gate's verdicts, publish-to-briefing latency, and the
// briefing's text line by line. [Run] builds the [Report]; [WriteHTML]
// renders it as one self-contained HTML file with its plots drawn as
// inline SVG.
package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/audit"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/eval"
	"github.com/briefd/briefd/internal/queue"
)

// Store is what replay reads of the briefing store: the stored briefing of
// a boundary, for its text and for the earlier briefing a chained
// compaction folds in.
type Store interface {
	Get(ctx context.Context, tenant, conv, boundaryID string) (*briefd.Briefing, error)
}

// Filter selects the compactions to replay. The zero Filter selects every
// conversation of the audit stream.
type Filter struct {
	// Tenant selects one tenant's conversations; with ConversationID, one
	// conversation.
	Tenant, ConversationID string
	// Since and Until bound the audit events' times; zero is unbounded.
	Since, Until time.Time
}

func (f Filter) String() string {
	var parts []string
	switch {
	case f.ConversationID != "":
		parts = append(parts, "conversation "+key(f.Tenant, f.ConversationID))
	case f.Tenant != "":
		parts = append(parts, "tenant "+f.Tenant)
	default:
		parts = append(parts, "every conversation")
	}
	if !f.Since.IsZero() {
		parts = append(parts, "since "+f.Since.UTC().Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "until "+f.Until.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}

// Config configures a Run.
type Config struct {
	Queue queue.Config
	Audit audit.Config
	// Engine is the configuration the compactions are re-run with. A zero
	// ContextWindow or Model takes the snapshot's, as the workers do.
	Engine compact.Config
	// Summarizer re-runs the LLM tier (another model or prompt); nil
	// re-runs the deterministic briefing.
	Summarizer compact.Summarizer
	Filter     Filter
	// Show names the conversation ("tenant/conversation", or the
	// conversation alone) whose briefings the report keeps in full, for
	// the before/after view. Empty: the one whose briefings changed most.
	Show string
	// Texts keeps every briefing's text in the report, not only the shown
	// conversation's.
	Texts bool
	// Progress, if set, is called after each compaction re-run.
	Progress func(done, total int)
	Logger   *slog.Logger
}

// Report is the outcome of a Run.
type Report struct {
	GeneratedAt   time.Time `json:"generated_at"`
	Filter        string    `json:"filter"`
	EngineVersion string    `json:"engine_version"`
	// Replay says what the compactions were re-run with.
	Replay        string         `json:"replay"`
	Summary       Summary        `json:"summary"`
	Conversations []Conversation `json:"conversations"`
	// Shown is the conversation whose briefings are kept in full.
	Shown string `json:"shown,omitempty"`
}

// Summary aggregates the report.
type Summary struct {
	Conversations int `json:"conversations"`
	Snapshots     int `json:"snapshots"`
	Compactions   int `json:"compactions"`
	// Rerun compactions were re-run and compacted.
	Rerun int `json:"rerun"`
	// Missing compactions could not be re-run: their snapshot left the
	// stream (older than its MaxAge) or no longer resolves.
	Missing      int `json:"missing"`
	SameBoundary int `json:"same_boundary"`
	SameInput    int `json:"same_input"`
	// Skips counts COMPACTION_SKIPPED events by reason; Rejected and
	// DeadLettered the other outcomes.
	Skips        map[string]int `json:"skips,omitempty"`
	Rejected     int            `json:"rejected"`
	DeadLettered int            `json:"dead_lettered"`
	Stored       SideSummary    `json:"stored"`
	Replayed     SideSummary    `json:"replayed"`
	// LatencyMS are the publish-to-briefing latencies of the stored
	// compactions (snapshot stored → briefing created), in milliseconds,
	// with their quantiles.
	LatencyMS  []float64 `json:"latency_ms,omitempty"`
	LatencyP50 float64   `json:"latency_p50_ms"`
	LatencyP90 float64   `json:"latency_p90_ms"`
	LatencyP99 float64   `json:"latency_p99_ms"`
}

// SideSummary aggregates one side (stored or replayed) of the compactions.
type SideSummary struct {
	TokensSaved int64          `json:"tokens_saved"`
	Tiers       map[string]int `json:"tiers,omitempty"`
	Fallbacks   int            `json:"fallbacks"`
	// GateRejections counts, per gate rule, the replies it rejected.
	GateRejections map[string]int `json:"gate_rejections,omitempty"`
	// Recall is the mean, over compactions whose future needed
	// identifiers, of the share the briefing carries; RecallN how many.
	Recall  float64 `json:"future_recall"`
	RecallN int     `json:"future_recall_n"`
}

// Conversation is one conversation's turns and compactions.
type Conversation struct {
	Tenant         string         `json:"tenant"`
	ConversationID string         `json:"conversation_id"`
	Turns          []Turn         `json:"turns"`
	Compactions    []Compaction   `json:"compactions"`
	Skips          map[string]int `json:"skips,omitempty"`
	Rejected       int            `json:"rejected,omitempty"`
	DeadLettered   int            `json:"dead_lettered,omitempty"`
	// TriggerTokens is the trigger the workers reported (skips below it).
	TriggerTokens int `json:"trigger_tokens,omitempty"`
	// Error says why the conversation's snapshots could not be read.
	Error string `json:"error,omitempty"`
}

// Key is "tenant/conversation".
func (c *Conversation) Key() string { return key(c.Tenant, c.ConversationID) }

func key(tenant, conv string) string { return tenant + "/" + conv }

// Turn is one snapshot of the conversation still in the stream.
type Turn struct {
	Seq       uint64    `json:"seq"`
	StreamSeq uint64    `json:"stream_seq"`
	At        time.Time `json:"at"`
	Messages  int       `json:"messages"`
	Tokens    int       `json:"tokens"`
}

// Compaction compares a stored compaction with its re-run.
type Compaction struct {
	SnapshotSeq uint64    `json:"snapshot_seq"`
	Seq         uint64    `json:"seq"`
	At          time.Time `json:"at"`
	// Turn is the index in Conversation.Turns of its snapshot, -1 when the
	// snapshot left the stream.
	Turn      int     `json:"turn"`
	LatencyMS float64 `json:"latency_ms,omitempty"`
	Stored    Side    `json:"stored"`
	Replayed  *Side   `json:"replayed,omitempty"`
	// SameBoundary and SameInput compare the two (set when replayed).
	SameBoundary bool `json:"same_boundary"`
	SameInput    bool `json:"same_input"`
	// Needed are the identifiers of the span that the conversation's
	// later snapshots use again and the kept messages lack (see
	// eval.FutureNeeded), by the stored boundary; nil when no later
	// snapshot is in the stream.
	Needed []string `json:"future_needed,omitempty"`
	// Diff compares the two briefings line by line, when both texts are
	// known; DiffLines holds the lines for the shown conversation.
	Diff      *DiffStats `json:"diff,omitempty"`
	DiffLines []DiffLine `json:"diff_lines,omitempty"`
	// Error says why it was not re-run.
	Error string `json:"error,omitempty"`
}

// Side is one briefing of a compaction: the stored one or the re-run.
type Side struct {
	BoundaryID     string      `json:"boundary_id"`
	Tier           briefd.Tier `json:"tier"`
	Model          string      `json:"model,omitempty"`
	PromptVersion  string      `json:"prompt_version,omitempty"`
	EngineVersion  string      `json:"engine_version,omitempty"`
	InputHash      string      `json:"input_hash,omitempty"`
	TokensBefore   int         `json:"tokens_before"`
	TokensAfter    int         `json:"tokens_after"`
	BriefingTokens int         `json:"briefing_tokens"`
	// Fallback: an LLM tier was configured and the deterministic briefing
	// was kept.
	Fallback bool `json:"fallback,omitempty"`
	// GateRejections counts the gate's failed rules over the attempts.
	GateRejections map[string]int `json:"gate_rejections,omitempty"`
	// Recall is the share of Compaction.Needed the text carries; -1 when
	// unknown (no text, or nothing needed).
	Recall float64 `json:"future_recall"`
	// Missed are the needed identifiers the text lacks.
	Missed []string `json:"future_missed,omitempty"`
	Text   string   `json:"text,omitempty"`
	// HasText says whether the text was known (it may be dropped from the
	// report for size).
	HasText bool `json:"has_text"`
}

// Run reads the audit stream, re-runs the compactions it selects and
// returns the report. It needs the snapshot and body streams (for the
// snapshots) and the store (for the stored texts and earlier briefings);
// compactions whose snapshot is gone are reported as missing, not errors.
func Run(ctx context.Context, js jetstream.JetStream, store Store, cfg Config) (*Report, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	f := cfg.Filter
	convs, order, err := readAudit(ctx, js, cfg.Audit, f)
	if err != nil {
		return nil, err
	}
	rep := &Report{GeneratedAt: time.Now().UTC(), Filter: f.String(), EngineVersion: compact.EngineVersion,
		Replay: describe(cfg)}
	total := 0
	for _, c := range convs {
		total += len(c.compacted)
	}
	r := &runner{cfg: cfg, js: js, store: store, resolver: queue.NewResolver(js, cfg.Queue), engines: map[engineKey]*compact.Engine{}, total: total}
	shown, best := -1, -1
	for _, k := range order {
		c, err := r.conversation(ctx, convs[k])
		if err != nil {
			return nil, err
		}
		keep := cfg.Texts
		switch {
		case cfg.Show != "":
			if matchShow(cfg.Show, c) {
				keep, shown = true, len(rep.Conversations)
			}
		case changed(c) > best:
			// Without a choice, show the conversation whose briefings
			// changed most, keeping only its texts.
			if shown >= 0 && !cfg.Texts {
				dropTexts(&rep.Conversations[shown])
			}
			keep, shown, best = true, len(rep.Conversations), changed(c)
		}
		if !keep {
			dropTexts(c)
		}
		rep.Conversations = append(rep.Conversations, *c)
	}
	if shown >= 0 {
		rep.Shown = rep.Conversations[shown].Key()
	}
	rep.Summary = summarize(rep.Conversations)
	return rep, nil
}

func matchShow(show string, c *Conversation) bool {
	return show != "" && (show == c.Key() || show == c.ConversationID)
}

// changed scores how much a conversation's briefings changed on replay.
func changed(c *Conversation) int {
	n := 0
	for _, cp := range c.Compactions {
		if cp.Diff != nil {
			n += cp.Diff.Added + cp.Diff.Removed + 1
		}
	}
	return n
}

func dropTexts(c *Conversation) {
	for i := range c.Compactions {
		cp := &c.Compactions[i]
		cp.Stored.Text, cp.DiffLines = "", nil
		if cp.Replayed != nil {
			cp.Replayed.Text = ""
		}
	}
}

func describe(cfg Config) string {
	s := "engine " + compact.EngineVersion + " (deterministic briefing)"
	if cfg.Summarizer != nil {
		s = "engine " + compact.EngineVersion + " with the LLM cascade given"
	}
	if cfg.Engine.ContextWindow > 0 {
		s += fmt.Sprintf(", context window %d", cfg.Engine.ContextWindow)
	} else {
		s += ", each snapshot's context window"
	}
	return s
}

// auditConv is what the audit stream says of one conversation.
type auditConv struct {
	tenant, conv string
	compacted    []audit.Event
	skips        map[string]int
	rejected     int
	dead         int
	trigger      int
}

// readAudit groups the selected events by conversation, in the order the
// conversations first appear.
func readAudit(ctx context.Context, js jetstream.StreamManager, acfg audit.Config, f Filter) (map[string]*auditConv, []string, error) {
	convs := map[string]*auditConv{}
	var order []string
	err := audit.Scan(ctx, js, acfg, audit.Filter{Tenant: f.Tenant, ConversationID: f.ConversationID, Since: f.Since}, func(ev audit.Event) error {
		if !f.Until.IsZero() && ev.Time.After(f.Until) {
			return nil
		}
		k := key(ev.Tenant, ev.ConversationID)
		c := convs[k]
		if c == nil {
			c = &auditConv{tenant: ev.Tenant, conv: ev.ConversationID, skips: map[string]int{}}
			convs[k] = c
			order = append(order, k)
		}
		switch ev.Type {
		case audit.TypeCompacted:
			c.compacted = append(c.compacted, ev)
		case audit.TypeSkipped:
			c.skips[ev.Reason]++
			if ev.TriggerTokens > 0 {
				c.trigger = ev.TriggerTokens
			}
		case audit.TypeRejected:
			c.rejected++
		case audit.TypeDeadLettered:
			c.dead++
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("replay: read the audit stream: %w", err)
	}
	return convs, order, nil
}

type engineKey struct {
	model  string
	window int
}

type runner struct {
	cfg      Config
	js       jetstream.JetStream
	store    Store
	resolver *queue.Resolver
	engines  map[engineKey]*compact.Engine
	done     int
	total    int
}

// engine returns the engine for a snapshot's model and window.
func (r *runner) engine(model string, window int) (*compact.Engine, error) {
	cfg := r.cfg.Engine
	if cfg.ContextWindow == 0 {
		cfg.ContextWindow = window
	}
	if cfg.Model == "" && cfg.Encoding == "" {
		cfg.Model = model
	}
	k := engineKey{cfg.Model, cfg.ContextWindow}
	if e, ok := r.engines[k]; ok {
		return e, nil
	}
	var opts []compact.Option
	if r.cfg.Summarizer != nil {
		opts = append(opts, compact.WithSummarizer(r.cfg.Summarizer))
	}
	e, err := compact.New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	r.engines[k] = e
	return e, nil
}

func (r *runner) progress() {
	r.done++
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.done, r.total)
	}
}

// conversation walks a conversation's snapshots and re-runs its
// compactions.
func (r *runner) conversation(ctx context.Context, ac *auditConv) (*Conversation, error) {
	c := &Conversation{Tenant: ac.tenant, ConversationID: ac.conv, Skips: ac.skips, Rejected: ac.rejected,
		DeadLettered: ac.dead, TriggerTokens: ac.trigger}
	if len(c.Skips) == 0 {
		c.Skips = nil
	}
	want := map[uint64]bool{}
	for _, ev := range ac.compacted {
		want[ev.SnapshotSeq] = true
	}
	sources := map[uint64]*queue.Snapshot{}
	turnOf := map[uint64]int{}
	var last *queue.Snapshot
	err := r.resolver.Walk(ctx, ac.tenant, ac.conv, func(s *queue.Snapshot, rerr error) error {
		t := Turn{Seq: s.Seq, StreamSeq: s.StreamSeq, At: s.Delivery.Timestamp, Messages: len(s.Messages)}
		if rerr == nil {
			eng, err := r.engine(s.Model, s.ContextWindow)
			if err != nil {
				return err
			}
			for i := range s.Messages {
				t.Tokens += eng.Counter().CountMessage(&s.Messages[i])
			}
			if want[s.StreamSeq] {
				sources[s.StreamSeq] = s
			}
			last = s
		}
		turnOf[s.StreamSeq] = len(c.Turns)
		c.Turns = append(c.Turns, t)
		return nil
	})
	switch {
	case errors.Is(err, queue.ErrInvalidToken):
		// Not a queue conversation id (an audit placeholder): no snapshots.
		c.Error = err.Error()
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		c.Error = err.Error()
	}
	for _, ev := range ac.compacted {
		cp := r.compaction(ctx, c, ev, sources[ev.SnapshotSeq], last)
		if i, ok := turnOf[ev.SnapshotSeq]; ok {
			cp.Turn = i
			if at := c.Turns[i].At; !at.IsZero() && ev.Time.After(at) {
				cp.LatencyMS = float64(ev.Time.Sub(at).Microseconds()) / 1000
			}
		}
		c.Compactions = append(c.Compactions, cp)
		r.progress()
	}
	return c, nil
}

// compaction compares one stored compaction with its re-run.
func (r *runner) compaction(ctx context.Context, c *Conversation, ev audit.Event, snap, last *queue.Snapshot) Compaction {
	cp := Compaction{SnapshotSeq: ev.SnapshotSeq, Seq: ev.Seq, At: ev.Time, Turn: -1, Stored: storedSide(ev)}
	var storedPins []string
	if b, err := r.store.Get(ctx, c.Tenant, c.ConversationID, ev.BoundaryID); err == nil {
		cp.Stored.Text, cp.Stored.HasText, storedPins = b.Text, true, b.PinnedIDs
	} else if !errors.Is(err, cache.ErrNotFound) {
		r.cfg.Logger.Warn("replay: read the stored briefing", "conversation", c.Key(), "boundary", ev.BoundaryID, "error", err)
	}
	if snap == nil {
		cp.Error = "the snapshot is no longer in the stream (older than its MaxAge) or does not resolve"
		return cp
	}
	msgs := snap.Messages
	var future []briefd.Message
	if last != nil && last.StreamSeq > snap.StreamSeq {
		have := make(map[string]bool, len(msgs))
		for i := range msgs {
			have[msgs[i].ID] = true
		}
		for i := range last.Messages {
			if m := &last.Messages[i]; !have[m.ID] && !m.IsBriefing() {
				future = append(future, *m)
			}
		}
	}
	if at := indexOf(msgs, ev.BoundaryID); at > 0 && len(future) > 0 {
		head, span, tail := split(msgs, at, append(storedPins, snap.Control.Pin...))
		cp.Needed = eval.FutureNeeded(head, span, tail, future)
		if cp.Needed == nil {
			cp.Needed = []string{}
		}
	}
	cp.Stored.Recall, cp.Stored.Missed = recall(cp.Needed, cp.Stored.Text, cp.Stored.HasText)

	eng, err := r.engine(snap.Model, snap.ContextWindow)
	if err != nil {
		cp.Error = "engine: " + err.Error()
		return cp
	}
	var prev *briefd.Briefing
	for i := range msgs {
		if msgs[i].IsBriefing() {
			if b, err := r.store.Get(ctx, c.Tenant, c.ConversationID, msgs[i].Metadata[briefd.MetaBoundary]); err == nil {
				prev = b
			}
		}
	}
	res, err := eng.Compact(ctx, compact.Request{ConversationID: c.ConversationID, Tenant: c.Tenant, Messages: msgs,
		Previous: prev, IgnoreTrigger: true, Control: snap.Control})
	if err != nil {
		cp.Error = "re-run: " + err.Error()
		return cp
	}
	if !res.Compacted {
		cp.Replayed = &Side{Recall: -1}
		cp.Error = "the re-run did not compact: " + res.Reason
		return cp
	}
	b := res.Briefing
	rs := &Side{BoundaryID: b.BoundaryID, Tier: b.Tier, Model: b.Model, PromptVersion: b.PromptVersion,
		EngineVersion: b.EngineVersion, InputHash: b.InputHash, TokensBefore: b.TokensBefore, TokensAfter: b.TokensAfter,
		BriefingTokens: b.BriefingTokens, Text: b.Text, HasText: true,
		Fallback: r.cfg.Summarizer != nil && b.Tier == briefd.TierDeterministic}
	for _, a := range res.Attempts {
		for _, v := range a.Verdicts {
			if !v.Passed {
				if rs.GateRejections == nil {
					rs.GateRejections = map[string]int{}
				}
				rs.GateRejections[v.Rule]++
			}
		}
	}
	// The re-run's own boundary decides what it had to carry.
	var needed []string
	if len(future) > 0 {
		head, span, tail := split(msgs, res.Boundary, b.PinnedIDs)
		needed = eval.FutureNeeded(head, span, tail, future)
	}
	if cp.Needed == nil && len(future) > 0 {
		cp.Needed = needed
		if cp.Needed == nil {
			cp.Needed = []string{}
		}
		cp.Stored.Recall, cp.Stored.Missed = recall(cp.Needed, cp.Stored.Text, cp.Stored.HasText)
	}
	if len(future) > 0 {
		rs.Recall, rs.Missed = recall(needed, rs.Text, true)
	} else {
		rs.Recall = -1
	}
	cp.Replayed = rs
	cp.SameBoundary = rs.BoundaryID == cp.Stored.BoundaryID
	cp.SameInput = rs.InputHash == cp.Stored.InputHash
	if cp.Stored.HasText {
		lines := Diff(cp.Stored.Text, rs.Text)
		st := stats(lines)
		cp.Diff, cp.DiffLines = &st, lines
	}
	return cp
}

func storedSide(ev audit.Event) Side {
	s := Side{BoundaryID: ev.BoundaryID, Tier: ev.Tier, Model: ev.Model, PromptVersion: ev.PromptVersion,
		EngineVersion: ev.EngineVersion, InputHash: ev.InputHash, TokensBefore: ev.TokensBefore, TokensAfter: ev.TokensAfter,
		BriefingTokens: ev.BriefingTokens, Recall: -1}
	if ev.LLM != nil {
		s.Fallback = ev.LLM.Outcome == "fallback"
		for _, a := range ev.LLM.Attempts {
			for _, v := range a.Verdicts {
				if !v.Passed {
					if s.GateRejections == nil {
						s.GateRejections = map[string]int{}
					}
					s.GateRejections[v.Rule]++
				}
			}
		}
	}
	return s
}

func indexOf(msgs []briefd.Message, id string) int {
	for i := range msgs {
		if msgs[i].ID == id {
			return i
		}
	}
	return -1
}

// split divides msgs at boundary as the engine does: the pinned messages
// before it (briefd.Pinned, or named by pins) are the head, the others the
// span, and the messages from the boundary on the tail.
func split(msgs []briefd.Message, boundary int, pins []string) (head, span, tail []briefd.Message) {
	firstUser := -1
	for i := range msgs {
		if msgs[i].Role == briefd.RoleUser && !msgs[i].IsBriefing() {
			firstUser = i
			break
		}
	}
	for i := 0; i < boundary; i++ {
		m := &msgs[i]
		pinned := !m.IsBriefing() && (m.Role == briefd.RoleSystem || m.Pinned || i == firstUser || slices.Contains(pins, m.ID))
		if pinned {
			head = append(head, *m)
		} else {
			span = append(span, *m)
		}
	}
	return head, span, msgs[boundary:]
}

// recall is the share of needed that text holds, and the missed ones; -1
// when unknown.
func recall(needed []string, text string, hasText bool) (float64, []string) {
	if !hasText || len(needed) == 0 {
		return -1, nil
	}
	var missed []string
	for _, id := range needed {
		if !strings.Contains(text, id) {
			missed = append(missed, id)
		}
	}
	return float64(len(needed)-len(missed)) / float64(len(needed)), missed
}

// summarize aggregates the conversations.
func summarize(convs []Conversation) Summary {
	s := Summary{Conversations: len(convs), Skips: map[string]int{}}
	s.Stored.Tiers, s.Replayed.Tiers = map[string]int{}, map[string]int{}
	var recallS, recallR float64
	for _, c := range convs {
		s.Snapshots += len(c.Turns)
		s.Rejected += c.Rejected
		s.DeadLettered += c.DeadLettered
		for k, v := range c.Skips {
			s.Skips[k] += v
		}
		for _, cp := range c.Compactions {
			s.Compactions++
			addSide(&s.Stored, &cp.Stored, &recallS)
			if cp.LatencyMS > 0 {
				s.LatencyMS = append(s.LatencyMS, cp.LatencyMS)
			}
			if cp.Replayed == nil || cp.Replayed.BoundaryID == "" {
				s.Missing++
				continue
			}
			s.Rerun++
			addSide(&s.Replayed, cp.Replayed, &recallR)
			if cp.SameBoundary {
				s.SameBoundary++
			}
			if cp.SameInput {
				s.SameInput++
			}
		}
	}
	if s.Stored.RecallN > 0 {
		s.Stored.Recall = recallS / float64(s.Stored.RecallN)
	}
	if s.Replayed.RecallN > 0 {
		s.Replayed.Recall = recallR / float64(s.Replayed.RecallN)
	}
	sort.Float64s(s.LatencyMS)
	s.LatencyP50, s.LatencyP90, s.LatencyP99 = quantile(s.LatencyMS, 0.5), quantile(s.LatencyMS, 0.9), quantile(s.LatencyMS, 0.99)
	if len(s.Skips) == 0 {
		s.Skips = nil
	}
	return s
}

func addSide(sum *SideSummary, s *Side, recall *float64) {
	sum.TokensSaved += int64(s.TokensBefore - s.TokensAfter)
	sum.Tiers[string(s.Tier)]++
	if s.Fallback {
		sum.Fallbacks++
	}
	for rule, n := range s.GateRejections {
		if sum.GateRejections == nil {
			sum.GateRejections = map[string]int{}
		}
		sum.GateRejections[rule] += n
	}
	if s.Recall >= 0 {
		sum.RecallN++
		*recall += s.Recall
	}
}

// quantile of sorted values (nearest rank); 0 for none.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
