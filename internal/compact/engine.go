package compact

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
)

// EngineVersion names the engine's rules (trigger, boundary, briefing
// format). It is stored in every briefing so a replay can tell whether the
// rules changed since.
const EngineVersion = "briefd-compact/2"

// LedgerShare is the share of the briefing budget given to the evidence
// ledger when a Summarizer writes the briefing; the model's narrative gets
// the rest.
const LedgerShare = 0.6

// Engine decides whether and where to compact a history, and builds the
// briefing and the spliced history. It is safe for concurrent use; its
// token counter's caches are shared by all calls.
type Engine struct {
	cfg        Config
	counter    *TokenCounter
	summarizer Summarizer
	logger     *slog.Logger
	now        func() time.Time
	// steps caches the briefing writer's reading of tool calls.
	steps *brief.Cache
	// brief writes the deterministic briefing; brief.Write except in tests.
	brief func(context.Context, brief.Input) (*brief.Draft, error)
	// memo remembers the conversations compacted (see WithMemo);
	// memoKey tells this engine's entries from others' sharing it.
	memo    *Memo
	memoKey string
}

// Option configures an Engine.
type Option func(*Engine)

// WithSummarizer makes the engine ask s for a model-written briefing after
// building the deterministic one, which stays the fallback.
func WithSummarizer(s Summarizer) Option { return func(e *Engine) { e.summarizer = s } }

// WithLogger sets the engine's logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.logger = l } }

// WithClock sets the clock that stamps briefings. Default: time.Now.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithMemo makes the engine remember the conversations it compacts in m
// (nil: remember nothing), which engines may share (an engine's entries
// are its own unless the other engine has the same encoding, per-message
// overhead and limits). Without it an engine has a Memo of its own of
// DefaultMemoMessages.
func WithMemo(m *Memo) Option { return func(e *Engine) { e.memo = m } }

// WithTokenCounter makes the engine use c (and its caches), for example
// to share one counter between engines with the same encoding. c must use
// the config's encoding and overhead.
func WithTokenCounter(c *TokenCounter) Option { return func(e *Engine) { e.counter = c } }

// New returns an engine for cfg, with defaults applied. It returns a
// *ConfigError when cfg is invalid.
func New(cfg Config, opts ...Option) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg.WithDefaults(), now: time.Now, brief: brief.Write, steps: brief.NewCache(0, 0), memo: NewMemo(DefaultMemoMessages)}
	for _, o := range opts {
		o(e)
	}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	if e.counter == nil {
		c, err := NewTokenCounter(e.cfg.Model, e.cfg.Encoding, e.cfg.overhead())
		if err != nil {
			return nil, err
		}
		e.counter = c
	}
	if e.counter.Encoding() != e.cfg.Encoding {
		return nil, &ConfigError{Field: "Encoding", Value: e.cfg.Encoding,
			Err: fmt.Errorf("the token counter given uses %s", e.counter.Encoding())}
	}
	// What a remembered conversation's counts and validation depend on.
	e.memoKey = fmt.Sprintf("%s/%d/%+v", e.cfg.Encoding, e.cfg.overhead(), e.cfg.Limits)
	return e, nil
}

// Config returns the engine's configuration, with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// CountTokens counts the tokens of s with the engine's encoding.
func (e *Engine) CountTokens(s string) int { return e.counter.Count(s) }

// Counter returns the engine's token counter.
func (e *Engine) Counter() *TokenCounter { return e.counter }

// Request is one history to compact.
type Request struct {
	ConversationID string
	Tenant         string
	// Messages is the agent's history. Compact does not modify it.
	Messages []briefd.Message
	// Previous is the briefing spliced earlier into Messages, when the
	// caller has it: its position and ledger carry over into the new one.
	// It is used only when the compacted span begins with its message.
	Previous *briefd.Briefing
	// Force compacts even when no trigger fires, as a user's /compact
	// does: the kept tail is then at most Config.ForceKeepFraction of the
	// non-pinned history, so that a meaningful part is compacted.
	Force bool
	// IgnoreTrigger compacts even when no trigger fires, with the usual
	// boundary rules (Force also bounds the kept tail): replay uses it to
	// re-run a compaction the service made.
	IgnoreTrigger bool
	// Focus is free text naming what the briefing must keep above all
	// ("everything about the migration"); what it names ranks higher.
	Focus string
	// Control is what the snapshot asks (see briefd.Control): mode now
	// forces, as Force does; mode never answers "not compacted" (Skip
	// SkipDisabled); TriggerFraction and KeepTokens replace the
	// configuration's for this request; Pin pins messages by id; Focus
	// adds to Focus. A control the engine cannot honour (the kept budget
	// not below the trigger, a tool message pinned) is an error matching
	// briefd.ErrInvalidControl.
	Control briefd.Control
}

// Skip says why a Result is not compacted.
type Skip string

// The reasons for not compacting, as a short code (Result.Reason has the
// detail).
const (
	// SkipBelowTrigger: no trigger fired.
	SkipBelowTrigger Skip = "below_trigger"
	// SkipNothingToCompact: a trigger fired, but the span would be empty
	// or the briefing would not shrink the history.
	SkipNothingToCompact Skip = "nothing_to_compact"
	// SkipDisabled: the request's control says never.
	SkipDisabled Skip = "disabled"
)

// Result is the outcome of Compact. When Compacted is false, Reason says
// why and Messages is the input.
type Result struct {
	Compacted bool
	// Reason says why the history was or was not compacted.
	Reason string
	// Boundary is the index in Request.Messages of the first kept
	// message, -1 when the history was not compacted.
	Boundary int
	// Briefing is the briefing to store; nil when not compacted.
	Briefing *briefd.Briefing
	// Messages is the spliced history (the input when not compacted).
	Messages []briefd.Message
	// Attempts lists the summarizer's calls, if any.
	Attempts []Attempt
	// SummarizerError says why the summarizer's briefing was not used,
	// when a summarizer was asked and failed: the deterministic one was kept.
	SummarizerError string
	// TokensBefore counts the input history.
	TokensBefore int
	// BudgetTokens is the briefing budget that applied: the configured
	// one (a share of the span, clamped), or more when the span's user
	// messages alone need more, since they are always carried (up to the
	// user-message cap). The briefing text never exceeds it.
	BudgetTokens int
	// Coverage is the deterministic briefing's report on itself: what of
	// the span it carries and what it left out for size.
	Coverage *brief.Coverage
	// Skip is why the history was not compacted; empty when it was.
	Skip Skip
	// TriggerTokens is the token count above which token pressure
	// triggers for this request (Config.TriggerTokens with the request's
	// control applied), so that a caller can say "N tokens now, trigger
	// at M".
	TriggerTokens int
}

// Compact runs the pipeline on one history: validate, count, trigger,
// boundary, brief (and summarize), splice. It returns an error only for an
// invalid history (matching briefd.ErrInvalidHistory) or when ctx ends;
// "nothing to compact" is a Result with Compacted false and a Reason.
func (e *Engine) Compact(ctx context.Context, req Request) (*Result, error) {
	msgs := req.Messages
	log := e.logger.With("conversation", req.ConversationID)
	kn, err := e.prepare(ctx, req)
	switch {
	case errors.Is(err, briefd.ErrInvalidHistory):
		return nil, fmt.Errorf("compact: conversation %q: %w", req.ConversationID, err)
	case err != nil:
		return nil, fmt.Errorf("compact: conversation %q: count tokens: %w", req.ConversationID, err)
	}
	cfg, err := e.cfg.withControl(req.Control)
	if err != nil {
		return nil, fmt.Errorf("compact: conversation %q: %w", req.ConversationID, err)
	}
	pinned, err := kn.pinnedFlags(msgs, req.Control.Pin)
	if err != nil {
		return nil, fmt.Errorf("compact: conversation %q: %w", req.ConversationID, err)
	}
	force := req.Force || req.Control.Mode == briefd.ModeNow
	focus := strings.TrimSpace(strings.Join([]string{req.Focus, req.Control.Focus}, "\n"))

	counts, total := kn.counts, kn.total
	res := &Result{Boundary: -1, Messages: msgs, TokensBefore: total, TriggerTokens: cfg.TriggerTokens()}
	notCompacted := func(skip Skip, reason string) (*Result, error) {
		res.Skip, res.Reason = skip, reason
		log.Debug("not compacted", "reason", reason, "tokens", total)
		return res, nil
	}
	if req.Control.Mode == briefd.ModeNever {
		return notCompacted(SkipDisabled, fmt.Sprintf("compaction disabled by the snapshot's control (mode never) at %d tokens", total))
	}

	fire, why := cfg.trigger(msgs, total, force || req.IgnoreTrigger)
	if !fire {
		return notCompacted(SkipBelowTrigger, why)
	}

	at, err := cfg.boundary(msgs, counts, pinned, force)
	if err != nil {
		return notCompacted(SkipNothingToCompact, err.Error())
	}
	reason := strings.Join(append([]string{why}, at.notes...), "; ")

	head, span, spanTokens, pinnedTokens := kn.splitSpan(msgs, counts, pinned, at.index)
	prev := matchPrevious(req.Previous, span)
	folded := 0
	if len(span) > 0 && span[0].IsBriefing() {
		folded = e.counter.CountMessage(&span[0])
	}
	budget := cfg.briefingBudget(spanTokens, folded)
	in := brief.Input{Head: head, Span: span, Previous: prev, BudgetTokens: budget, CountTokens: e.counter.Count, CountSplits: true,
		Cache: e.steps, UserCapTokens: cfg.UserCapTokens, Focus: focus, Warm: kn.takeWarm()}
	draft, err := e.brief(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("compact: conversation %q: %w", req.ConversationID, context.Cause(ctx))
		}
		return nil, fmt.Errorf("compact: conversation %q: deterministic briefing: %w", req.ConversationID, err)
	}
	res.BudgetTokens = max(budget, draft.BudgetTokens)
	res.Coverage = &draft.Coverage

	b := &briefd.Briefing{
		ConversationID: req.ConversationID,
		Tenant:         req.Tenant,
		BoundaryID:     msgs[at.index].ID,
		Position:       position(span, prev),
		Text:           draft.Text,
		Structured:     draft.Structured,
		Tier:           briefd.TierDeterministic,
		EngineVersion:  EngineVersion,
		InputHash:      kn.spanHash(msgs, pinned, req.Control.Pin, at.index),
		Depth:          depth(draft.Depth, span, prev),
		CompactedIDs:   ids(span),
		PinnedIDs:      pinnedByID(head, req.Control.Pin),
		TokensBefore:   total,
		SpanTokens:     spanTokens,
	}

	if e.summarizer != nil {
		// The model's briefing is its narrative plus the evidence ledger
		// verbatim, within the same budget: the ledger it gets is built to
		// LedgerShare of the budget, leaving the rest for the narrative.
		// The full-budget draft stays the fallback.
		lin := in
		lin.BudgetTokens = int(float64(budget) * LedgerShare)
		ledger, err := e.brief(ctx, lin)
		if err != nil {
			return nil, fmt.Errorf("compact: conversation %q: evidence ledger: %w", req.ConversationID, err)
		}
		sctx, cancel := summarizeContext(ctx)
		sum, attempts, err := e.summarize(sctx, SummaryInput{
			ConversationID: req.ConversationID, Tenant: req.Tenant,
			Span: span, Pinned: head, Previous: prev, Draft: ledger,
			BudgetTokens: max(budget, draft.BudgetTokens, ledger.BudgetTokens), CountTokens: e.counter.Count,
		})
		cancel()
		res.Attempts = attempts
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("compact: conversation %q: summarize: %w", req.ConversationID, context.Cause(ctx))
		case err != nil:
			log.Warn("summarizer failed; keeping the deterministic briefing", "err", err, "attempts", len(attempts))
			reason += "; summarizer failed, deterministic briefing kept: " + err.Error()
			res.SummarizerError = err.Error()
		default:
			b.Text, b.Structured, b.Tier = sum.Text, sum.Structured, sum.Tier
			b.Model, b.PromptVersion = sum.Model, sum.PromptVersion
		}
	}

	kn.putWarm(in.Warm, at.index)

	bm := briefd.BriefingMessage(b)
	b.BriefingTokens = e.counter.CountMessage(&bm)
	b.TokensAfter = pinnedTokens + b.BriefingTokens + at.keptTokens
	b.CreatedAt = e.now().UTC()
	if b.TokensAfter >= total {
		return notCompacted(SkipNothingToCompact, fmt.Sprintf("%s: the briefing would not shrink the history (%d tokens after >= %d before; span %d tokens, briefing %d)",
			ErrNoBoundary, b.TokensAfter, total, spanTokens, b.BriefingTokens))
	}

	spliced, err := kn.splice(msgs, b)
	if err != nil {
		// The boundary rules make this unreachable on a valid history.
		return nil, fmt.Errorf("compact: conversation %q: splice at %s: %w", req.ConversationID, b.BoundaryID, err)
	}
	res.Compacted, res.Reason, res.Boundary = true, reason, at.index
	res.Briefing, res.Messages = b, spliced
	log.Info("compacted", "boundary", b.BoundaryID, "tier", b.Tier, "tokens_before", total,
		"tokens_after", b.TokensAfter, "span_messages", len(span), "depth", b.Depth)
	return res, nil
}

// countMessages returns the counts of msgs and their total: known counts
// the first messages already (it is appended to), the rest are counted;
// a long one stops counting as soon as ctx ends.
func (e *Engine) countMessages(ctx context.Context, msgs []briefd.Message, known []int) ([]int, int, error) {
	counts := known
	total := 0
	for _, n := range known {
		total += n
	}
	for i := len(known); i < len(msgs); i++ {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, context.Cause(ctx)
			}
		}
		n, err := e.counter.CountMessageContext(ctx, &msgs[i])
		if err != nil {
			return nil, 0, err
		}
		counts = append(counts, n)
		total += n
	}
	return counts, total, nil
}

// summarize calls the summarizer and unpacks its attempts, recovering a
// panic into an error so that a bad summarizer costs only the LLM tier.
func (e *Engine) summarize(ctx context.Context, in SummaryInput) (sum *Summary, attempts []Attempt, err error) {
	defer func() {
		if p := recover(); p != nil {
			sum, err = nil, fmt.Errorf("summarizer panicked: %v", p)
		}
	}()
	sum, err = e.summarizer.Summarize(ctx, in)
	if err != nil {
		var ae *AttemptsError
		if errors.As(err, &ae) {
			attempts = ae.Attempts
		}
		return nil, attempts, err
	}
	if sum == nil || strings.TrimSpace(sum.Text) == "" {
		return nil, nil, errors.New("summarizer returned an empty briefing")
	}
	if sum.Tier == "" {
		sum.Tier = "llm"
	}
	return sum, sum.Attempts, nil
}

// summarizeContext bounds the summarizer by the caller's deadline less a
// reserve, so that when a slow model runs the handler's time out the
// deterministic briefing already built is still stored: the reserve (a
// tenth of the time left, between 1 and 30 seconds) is for the store and
// the audit event. Without a deadline it only adds cancellation.
func summarizeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := min(max(time.Until(dl)/10, time.Second), 30*time.Second)
	return context.WithDeadline(ctx, dl.Add(-reserve))
}

// splitSpan returns the pinned messages before the boundary (which stay,
// and give the briefing its context), the non-pinned ones (the span to
// compact), the span's tokens, and the pinned messages' tokens. When the
// pinned messages all come first (the usual system prompt and task), both
// are slices of msgs (clipped: nobody appends into the caller's array);
// else copies, allocated once.
func splitSpan(msgs []briefd.Message, counts []int, pinned []bool, boundary int) (head, span []briefd.Message, spanTokens, pinnedTokens int) {
	nPinned, lead, spanTokens, pinnedTokens := splitCounts(counts, pinned, boundary)
	if nPinned == lead {
		return msgs[:lead:lead], msgs[lead:boundary:boundary], spanTokens, pinnedTokens
	}
	head, span = splitCopy(msgs, pinned, boundary, nPinned)
	return head, span, spanTokens, pinnedTokens
}

// splitCounts returns, of the messages before boundary, how many are
// pinned, how many lead (all pinned), and the tokens of the others and of
// the pinned ones.
func splitCounts(counts []int, pinned []bool, boundary int) (nPinned, lead, spanTokens, pinnedTokens int) {
	for i := range boundary {
		if pinned[i] {
			pinnedTokens += counts[i]
			nPinned++
		} else {
			spanTokens += counts[i]
		}
		if nPinned == i+1 {
			lead = i + 1
		}
	}
	return nPinned, lead, spanTokens, pinnedTokens
}

// splitCopy copies the pinned messages before boundary (nPinned of them)
// and the others, each into an array of its own.
func splitCopy(msgs []briefd.Message, pinned []bool, boundary, nPinned int) (head, span []briefd.Message) {
	head = make([]briefd.Message, 0, nPinned)
	span = make([]briefd.Message, 0, boundary-nPinned)
	for i := range boundary {
		if pinned[i] {
			head = append(head, msgs[i])
		} else {
			span = append(span, msgs[i])
		}
	}
	return head, span
}

// matchPrevious returns prev when the span begins with its briefing
// message, nil otherwise (a stale or unrelated briefing is ignored).
func matchPrevious(prev *briefd.Briefing, span []briefd.Message) *briefd.Briefing {
	if prev == nil || len(span) == 0 || !span[0].IsBriefing() {
		return nil
	}
	if span[0].Metadata[briefd.MetaBoundary] != prev.BoundaryID {
		return nil
	}
	return prev
}

// position counts the original messages a briefing of span covers: the
// previous briefing's position plus the span's other messages. Without
// the previous briefing, the position its spliced message records is
// used; failing that, it counts as one.
func position(span []briefd.Message, prev *briefd.Briefing) int64 {
	var n int64
	for i := range span {
		if !span[i].IsBriefing() {
			n++
		}
	}
	if prev != nil {
		return prev.Position + n
	}
	if len(span) > 0 && span[0].IsBriefing() {
		p, err := strconv.ParseInt(span[0].Metadata[briefd.MetaPosition], 10, 64)
		if err != nil || p < 1 {
			p = 1
		}
		n += p
	}
	return n
}

// depth is the draft's depth, raised to one more than a folded briefing's.
func depth(d int, span []briefd.Message, prev *briefd.Briefing) int {
	switch {
	case prev != nil:
		return max(d, prev.Depth+1)
	case slices.ContainsFunc(span, func(m briefd.Message) bool { return m.IsBriefing() }):
		return max(d, 1)
	}
	return d
}

func ids(span []briefd.Message) []string {
	out := make([]string, len(span))
	for i := range span {
		out[i] = span[i].ID
	}
	return out
}

// SpanHash returns the hex SHA-256 of a canonical encoding of msgs: every
// field of every message, length-prefixed, metadata in key order. Two
// spans hash alike exactly when they hold the same messages.
func SpanHash(msgs []briefd.Message) string {
	h := sha256.New()
	for i := range msgs {
		writeMessage(h, &msgs[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeMessage(h hash.Hash, m *briefd.Message) {
	var buf [binary.MaxVarintLen64]byte
	num := func(n int) { h.Write(buf[:binary.PutUvarint(buf[:], uint64(n))]) }
	str := func(s string) {
		num(len(s))
		io.WriteString(h, s)
	}
	str("msg")
	str(m.ID)
	str(string(m.Role))
	str(m.Name)
	if m.Content.Parts == nil {
		num(0)
		str(m.Content.Text)
	} else {
		num(1 + len(m.Content.Parts))
		for _, p := range m.Content.Parts {
			str(p.Type)
			str(p.Text)
			if p.ImageURL == nil {
				num(0)
			} else {
				num(1)
				str(p.ImageURL.URL)
				str(p.ImageURL.Detail)
			}
		}
	}
	num(len(m.ToolCalls))
	for _, tc := range m.ToolCalls {
		str(tc.ID)
		str(tc.Type)
		str(tc.Function.Name)
		str(tc.Function.Arguments)
	}
	str(m.ToolCallID)
	if m.Pinned {
		num(1)
	} else {
		num(0)
	}
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	num(len(keys))
	for _, k := range keys {
		str(k)
		str(m.Metadata[k])
	}
}
