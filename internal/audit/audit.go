// Package audit publishes what the workers did to a JetStream stream, the
// service's audit trail, and reads it back.
//
// Every compaction publishes a HISTORY_COMPACTED [Event]; a snapshot that
// needs no compaction publishes COMPACTION_SKIPPED, a malformed one
// SNAPSHOT_REJECTED, and one that exhausted its deliveries DEAD_LETTERED.
// The JSON form is documented by docs/schema/audit-event.v1.json.
//
// # Subjects
//
// Events go to
//
//	<prefix>.audit.<type lowercased>.<tenant>.<conversation>
//
// for example briefd.audit.history_compacted.acme.c-42, so that NATS
// permissions can confine a tenant to its own events and a reader can filter
// by type, tenant or conversation. Tenant and conversation ids become subject
// tokens with [SubjectToken]: ids made of letters, digits, '-' and '_' are
// kept as they are, anything else is "~" plus its base64url encoding, and the
// empty id is "~".
//
// # Stream
//
// [EnsureStream] creates the stream (default BRIEFD_AUDIT) with limits
// retention, so that events stay readable after they are read, for MaxAge
// (default 30 days). Publishing waits for the stream's ack. Events with a
// natural identity carry a Nats-Msg-Id, so a worker that publishes again
// after a crash does not record an event twice within the stream's
// duplicate window (see [MsgID]).
package audit

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/jsensure"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [Config].
const (
	DefaultPrefix           = "briefd"
	DefaultStream           = "BRIEFD_AUDIT"
	DefaultMaxAge           = 30 * 24 * time.Hour
	DefaultDuplicatesWindow = 2 * time.Minute
)

// Config names and sizes the audit stream. The zero value is ready to use.
type Config struct {
	// Prefix starts every subject. Defaults to "briefd".
	Prefix string
	// Stream names the stream. Defaults to "BRIEFD_AUDIT".
	Stream string
	// MaxAge is how long events are kept. Defaults to 30 days; -1 keeps
	// them until the stream is purged.
	MaxAge time.Duration
	// Replicas is the stream's replica count in a cluster. Defaults to 1.
	Replicas int
	// Storage is file (the zero value, the default) or memory.
	Storage jetstream.StorageType
	// DuplicatesWindow is how long a Nats-Msg-Id is remembered. Defaults
	// to 2 minutes.
	DuplicatesWindow time.Duration
}

// WithDefaults returns the configuration with zero fields set to their
// defaults.
func (c Config) WithDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.Stream = cmp.Or(c.Stream, DefaultStream)
	c.MaxAge = cmp.Or(c.MaxAge, DefaultMaxAge)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.DuplicatesWindow = cmp.Or(c.DuplicatesWindow, DefaultDuplicatesWindow)
	return c
}

// subject returns the subject of an event, or a filter when tokens are "*".
func (c Config) subject(typ, tenant, conv string) string {
	return c.Prefix + ".audit." + typ + "." + tenant + "." + conv
}

// EnsureStream creates the audit stream, or updates its configuration if it
// exists: limits retention on subjects <prefix>.audit.>.
func EnsureStream(ctx context.Context, js jsensure.Streams, cfg Config) error {
	cfg = cfg.WithDefaults()
	maxAge := cfg.MaxAge
	if maxAge < 0 {
		maxAge = 0 // unlimited
	}
	_, err := jsensure.Stream(ctx, js, jetstream.StreamConfig{
		Name:        cfg.Stream,
		Description: "briefd audit trail: one event per compaction, skip, rejection and dead letter",
		Subjects:    []string{cfg.Prefix + ".audit.>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      maxAge,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicatesWindow,
	})
	if err != nil {
		return fmt.Errorf("audit: ensure stream %s: %w", cfg.Stream, err)
	}
	return nil
}

// Type is the kind of an audit event.
type Type string

// The event types.
const (
	// TypeCompacted: a briefing was computed and stored.
	TypeCompacted Type = "HISTORY_COMPACTED"
	// TypeSkipped: the snapshot needed no compaction; Reason says why.
	TypeSkipped Type = "COMPACTION_SKIPPED"
	// TypeRejected: the snapshot was malformed, oversized or badly paired
	// and was terminated; Reason says why.
	TypeRejected Type = "SNAPSHOT_REJECTED"
	// TypeDeadLettered: the snapshot failed MaxDeliver times.
	TypeDeadLettered Type = "DEAD_LETTERED"
)

// LLMReport is what the LLM cascade did for one compaction.
type LLMReport struct {
	// Outcome is "accepted" (the briefing is the model's) or "fallback"
	// (the deterministic briefing was kept).
	Outcome string `json:"outcome"`
	// Fallback says why the deterministic briefing was kept.
	Fallback string `json:"fallback,omitempty"`
	// Attempts lists the cascade's calls in order, at most MaxLLMAttempts.
	Attempts []LLMAttempt `json:"attempts,omitempty"`
}

// MaxLLMAttempts bounds the attempts an event carries.
const MaxLLMAttempts = 16

// LLMAttempt is one call of the cascade to one model.
type LLMAttempt struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	// Outcome is accepted, rejected (by the gate), error or skipped.
	Outcome    string  `json:"outcome"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// Feedback marks a reply written after the gate sent its verdicts back.
	Feedback bool `json:"feedback,omitempty"`
	// Verdicts is the gate's judgement per rule, for accepted and rejected
	// replies.
	Verdicts []Verdict `json:"verdicts,omitempty"`
}

// Verdict is the gate's judgement of one reply by one rule.
type Verdict struct {
	Rule     string   `json:"rule"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
}

// Reasons of COMPACTION_SKIPPED events.
const (
	// SkipBelowTrigger: the history is below the compaction trigger.
	SkipBelowTrigger = "below_trigger"
	// SkipNothingToCompact: no boundary leaves anything to compact.
	SkipNothingToCompact = "nothing_to_compact"
	// SkipSuperseded: a newer snapshot of the conversation is pending or
	// already compacted.
	SkipSuperseded = "superseded"
	// SkipDisabled: the snapshot's control says never.
	SkipDisabled = "disabled"
)

// Reasons of SNAPSHOT_REJECTED and DEAD_LETTERED events; Error holds the
// detail.
const (
	// ReasonInvalidHistory: the messages break the history rules (a tool
	// result without its call, a message over the limits, ...).
	ReasonInvalidHistory = "invalid_history"
	// ReasonInvalidControl: the snapshot's control cannot be honoured (a
	// kept budget not below the trigger, a tool message pinned).
	ReasonInvalidControl = "invalid_control"
	// ReasonMalformed: the snapshot breaks the protocol (manifest, body,
	// hash, limits while loading) or its handler panicked.
	ReasonMalformed = "malformed"
	// ReasonMaxDeliveries: every attempt failed (transient errors).
	ReasonMaxDeliveries = "max_deliveries"
)

func (t Type) valid() bool {
	switch t {
	case TypeCompacted, TypeSkipped, TypeRejected, TypeDeadLettered:
		return true
	}
	return false
}

// token is the type's subject token.
func (t Type) token() string { return strings.ToLower(string(t)) }

// Event is one audit record. Type, Time and ConversationID are always set;
// the other fields are set by the types that name them and omitted from the
// JSON when zero.
type Event struct {
	Type Type `json:"type"`
	// Time is when the event happened; Publish sets it to the current time
	// when zero.
	Time time.Time `json:"time"`
	// Tenant owns the conversation; empty in single-tenant use.
	Tenant         string `json:"tenant,omitempty"`
	ConversationID string `json:"conversation_id"`
	// SnapshotSeq is the snapshot stream's sequence number of the
	// snapshot the event is about, when there is one; Seq is the agent's
	// number of that snapshot (the manifest's seq).
	SnapshotSeq uint64 `json:"snapshot_seq,omitempty"`
	Seq         uint64 `json:"seq,omitempty"`

	// HISTORY_COMPACTED. BoundaryID is the first message kept verbatim,
	// Position the messages covered (see briefd.Briefing).
	BoundaryID     string `json:"boundary_id,omitempty"`
	Position       int64  `json:"position,omitempty"`
	MessagesBefore int    `json:"messages_before,omitempty"`
	MessagesAfter  int    `json:"messages_after,omitempty"`
	TokensBefore   int    `json:"tokens_before,omitempty"`
	TokensAfter    int    `json:"tokens_after,omitempty"`
	TokensSaved    int    `json:"tokens_saved,omitempty"`
	// BriefingChars counts the briefing text in Unicode code points;
	// BriefingTokens counts the wrapped briefing message.
	BriefingChars  int         `json:"briefing_chars,omitempty"`
	BriefingTokens int         `json:"briefing_tokens,omitempty"`
	Tier           briefd.Tier `json:"tier,omitempty"`
	Model          string      `json:"model,omitempty"`
	PromptVersion  string      `json:"prompt_version,omitempty"`
	EngineVersion  string      `json:"engine_version,omitempty"`
	InputHash      string      `json:"input_hash,omitempty"`
	Depth          int         `json:"depth,omitempty"`
	// DurationMS is the compaction's wall time in milliseconds.
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Attempt is the snapshot message's delivery count (1 on first
	// delivery).
	Attempt int `json:"attempt,omitempty"`
	// SummarizerAttempts counts calls to the LLM cascade, retries included.
	SummarizerAttempts int `json:"summarizer_attempts,omitempty"`
	// LLM says what the LLM cascade did, when one is configured: each
	// attempt with the acceptance gate's verdicts, and why the
	// deterministic briefing was kept when it was.
	LLM *LLMReport `json:"llm,omitempty"`
	// Coverage is the briefing's report on itself, so that an operator
	// sees the quality of each compaction, not only an offline eval's.
	Coverage *Coverage `json:"coverage,omitempty"`

	// TriggerTokens is, on COMPACTION_SKIPPED for a history below the
	// trigger, the token count above which it would compact (with
	// TokensBefore, the tokens it has now).
	TriggerTokens int `json:"trigger_tokens,omitempty"`

	// COMPACTION_SKIPPED, SNAPSHOT_REJECTED and DEAD_LETTERED: a short
	// machine-readable reason, one of the Skip or Reason constants.
	Reason string `json:"reason,omitempty"`
	// Error is the human-readable detail of a skip, rejection or dead
	// letter.
	Error string `json:"error,omitempty"`
	// MessageID names the offending message of a rejected snapshot, if
	// any.
	MessageID string `json:"message_id,omitempty"`
	// Deliveries is how often a dead-lettered snapshot was delivered.
	Deliveries int `json:"deliveries,omitempty"`
}

// Coverage is what a deterministic briefing carries of its span and what
// it left out for size (schema audit-event.v1.json, "coverage").
type Coverage struct {
	// UserMessages counts the span's user messages; UserVerbatim those
	// the briefing carries whole.
	UserMessages int `json:"user_messages"`
	UserVerbatim int `json:"user_verbatim"`
	// SpanIdentifiers counts the identifiers of the span (bare numbers
	// left out); IdentifiersKept those the briefing carries.
	SpanIdentifiers int `json:"span_identifiers"`
	IdentifiersKept int `json:"identifiers_kept"`
	// Files, Records and Errors count the objects with a line of their
	// own: files touched, other objects (tickets, orders, ...), errors.
	Files   int `json:"files"`
	Records int `json:"records"`
	Errors  int `json:"errors"`
	// Steps counts the span's tool calls; StepsShown those with a line,
	// StepsLeftOut those left out for size, whose messages LeftOutIDs
	// names (at most 64).
	Steps        int      `json:"steps"`
	StepsShown   int      `json:"steps_shown"`
	StepsLeftOut int      `json:"steps_left_out"`
	LeftOutIDs   []string `json:"left_out_ids,omitempty"`
}

// Compacted returns a HISTORY_COMPACTED event filled from a briefing. The
// caller adds SnapshotSeq, message counts, DurationMS, Attempt and
// SummarizerAttempts.
func Compacted(b *briefd.Briefing) Event {
	return Event{
		Type:           TypeCompacted,
		Time:           b.CreatedAt,
		Tenant:         b.Tenant,
		ConversationID: b.ConversationID,
		BoundaryID:     b.BoundaryID,
		Position:       b.Position,
		TokensBefore:   b.TokensBefore,
		TokensAfter:    b.TokensAfter,
		TokensSaved:    b.TokensBefore - b.TokensAfter,
		BriefingChars:  utf8.RuneCountInString(b.Text),
		BriefingTokens: b.BriefingTokens,
		Tier:           b.Tier,
		Model:          b.Model,
		PromptVersion:  b.PromptVersion,
		EngineVersion:  b.EngineVersion,
		InputHash:      b.InputHash,
		Depth:          b.Depth,
	}
}

// Subject returns the subject ev is published on.
func (c Config) Subject(ev Event) string {
	c = c.WithDefaults()
	return c.subject(ev.Type.token(), SubjectToken(ev.Tenant), SubjectToken(ev.ConversationID))
}

// SubjectToken encodes an id as one NATS subject token: ids of letters,
// digits, '-' and '_' are kept; others become "~" followed by their
// base64url encoding without padding; the empty id is "~". The encoding is
// injective, and its output never holds '.', '*', '>' or whitespace.
func SubjectToken(id string) string {
	if id == "" {
		return "~"
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "~" + base64.RawURLEncoding.EncodeToString([]byte(id))
		}
	}
	return id
}

// MsgID returns the event's Nats-Msg-Id, or "" when it has no natural
// identity (no SnapshotSeq). HISTORY_COMPACTED and COMPACTION_SKIPPED are
// identified by snapshot and attempt, because a redelivered snapshot is
// compacted anew; SNAPSHOT_REJECTED and DEAD_LETTERED by snapshot alone.
// For example compacted:acme.c-42.17.1.
func MsgID(ev Event) string {
	if ev.SnapshotSeq == 0 {
		return ""
	}
	var kind string
	attempt := false
	switch ev.Type {
	case TypeCompacted:
		kind, attempt = "compacted", true
	case TypeSkipped:
		kind, attempt = "skipped", true
	case TypeRejected:
		kind = "rejected"
	case TypeDeadLettered:
		kind = "dead_lettered"
	default:
		return ""
	}
	id := kind + ":" + SubjectToken(ev.Tenant) + "." + SubjectToken(ev.ConversationID) + "." + strconv.FormatUint(ev.SnapshotSeq, 10)
	if attempt {
		id += "." + strconv.Itoa(ev.Attempt)
	}
	return id
}

// Publisher publishes events to the audit stream. It is safe for concurrent
// use.
type Publisher struct {
	js  jetstream.Publisher
	cfg Config
	now func() time.Time
}

// NewPublisher returns a publisher; the stream must exist (see
// [EnsureStream]), or Publish fails with jetstream.ErrNoStreamResponse.
func NewPublisher(js jetstream.Publisher, cfg Config) *Publisher {
	return &Publisher{js: js, cfg: cfg.WithDefaults(), now: time.Now}
}

// Publish validates ev, sets its Time if zero, publishes it and waits for
// the stream's ack. A duplicate (same [MsgID] within the duplicate window)
// is acknowledged and not stored again; Publish returns nil for it.
func (p *Publisher) Publish(ctx context.Context, ev Event) error {
	if !ev.Type.valid() {
		return fmt.Errorf("audit: publish: unknown event type %q", ev.Type)
	}
	if ev.ConversationID == "" {
		return fmt.Errorf("audit: publish %s: no conversation id", ev.Type)
	}
	if ev.Time.IsZero() {
		ev.Time = p.now()
	}
	ev.Time = ev.Time.UTC()
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("audit: publish %s of %s: encode: %w", ev.Type, ev.ConversationID, err)
	}
	msg := &nats.Msg{Subject: p.cfg.Subject(ev), Data: data, Header: nats.Header{}}
	msg.Header.Set("Content-Type", "application/json")
	var opts []jetstream.PublishOpt
	if id := MsgID(ev); id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	opts = append(opts, jetstream.WithExpectStream(p.cfg.Stream))
	if _, err := p.js.PublishMsg(ctx, msg, opts...); err != nil {
		return fmt.Errorf("audit: publish %s of %s: %w", ev.Type, ev.ConversationID, err)
	}
	return nil
}

// Filter selects events to read. The zero Filter selects every event.
type Filter struct {
	// ConversationID selects one conversation of Tenant. When it is
	// empty, Tenant (if not empty) selects every conversation of that
	// tenant, else every conversation of every tenant is read.
	ConversationID string
	Tenant         string
	// Types selects event types; empty means all.
	Types []Type
	// Since skips events stored before this time; zero reads from the
	// start of the stream.
	Since time.Time
}

func (f Filter) subjects(cfg Config) []string {
	tenant, conv := "*", "*"
	switch {
	case f.ConversationID != "":
		tenant, conv = SubjectToken(f.Tenant), SubjectToken(f.ConversationID)
	case f.Tenant != "":
		tenant = SubjectToken(f.Tenant)
	}
	if len(f.Types) == 0 {
		return []string{cfg.subject("*", tenant, conv)}
	}
	subjects := make([]string, 0, len(f.Types))
	for _, t := range f.Types {
		subjects = append(subjects, cfg.subject(t.token(), tenant, conv))
	}
	return subjects
}

// ErrStop may be returned by the function passed to [Scan] to stop early;
// Scan then returns nil.
var ErrStop = errors.New("audit: stop scan")

// Scan calls fn with each event matching filter, in stream order, up to the
// last event stored when Scan started. It reads with an ordered consumer, so
// it needs no durable state and works on a limits stream while workers keep
// publishing.
func Scan(ctx context.Context, js jetstream.StreamManager, cfg Config, filter Filter, fn func(Event) error) error {
	cfg = cfg.WithDefaults()
	stream, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", cfg.Stream, err)
	}
	occ := jetstream.OrderedConsumerConfig{
		FilterSubjects:    filter.subjects(cfg),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: 30 * time.Second,
	}
	if !filter.Since.IsZero() {
		since := filter.Since
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := stream.OrderedConsumer(ctx, occ)
	if err != nil {
		return fmt.Errorf("audit: read %s: consumer: %w", cfg.Stream, err)
	}
	if cons.CachedInfo().NumPending == 0 {
		return nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", cfg.Stream, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", cfg.Stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("audit: read %s: metadata: %w", cfg.Stream, err)
		}
		var ev Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil {
			return fmt.Errorf("audit: read %s: decode event %d on %s: %w", cfg.Stream, md.Sequence.Stream, msg.Subject(), err)
		}
		if err := fn(ev); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// Read returns the events matching filter, in stream order; see [Scan].
func Read(ctx context.Context, js jetstream.StreamManager, cfg Config, filter Filter) ([]Event, error) {
	var events []Event
	err := Scan(ctx, js, cfg, filter, func(ev Event) error {
		events = append(events, ev)
		return nil
	})
	return events, err
}
