package cascade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	openai "github.com/sashabaranov/go-openai"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
)

// Sentinel errors, wrapped in the *compact.AttemptsError Summarize returns.
var (
	// ErrAllFailed: every model and prompt failed or was rejected.
	ErrAllFailed = errors.New("cascade: every model failed or was rejected")
	// ErrSpendExhausted: the conversation's or tenant's request allowance is used up.
	ErrSpendExhausted = errors.New("cascade: spend limit reached")
	// ErrNoRoom: the evidence ledger leaves the narrative too little budget.
	ErrNoRoom = errors.New("cascade: the evidence ledger leaves no room for a narrative")
	// ErrNoDraft: the input has no deterministic draft to carry.
	ErrNoDraft = errors.New("cascade: no deterministic draft in the input")
	// ErrCircuitOpen: a model's circuit breaker refused the call.
	ErrCircuitOpen = errors.New("cascade: circuit breaker open")
)

// Attempt outcomes.
const (
	OutcomeAccepted = "accepted"
	OutcomeError    = "error"
	OutcomeRejected = "rejected"
	OutcomeSkipped  = "skipped"
)

// LedgerHeading introduces the deterministic evidence ledger that follows
// the model's narrative in every LLM briefing.
const LedgerHeading = "EVIDENCE LEDGER (extracted verbatim from the messages):"

// Cascade writes briefings with an ordered list of models, each tried with
// the normal (or structured) prompt and then the aggressive one, behind
// retries, per-model circuit breakers, a spend guard and a fail-closed
// acceptance gate. It implements compact.Summarizer and is safe for
// concurrent use.
type Cascade struct {
	cfg    Config
	client *openai.Client
	models []*model
	levels []Prompt
	spend  *SpendGuard
	log    *slog.Logger
}

type model struct {
	ModelConfig
	breaker *Breaker
	// format is the response_format level for JSON prompts: 0 json_schema,
	// 1 json_object, 2 none. It only goes up, when the endpoint rejects one.
	format atomic.Int32
	// completionTokens is the reply-limit parameter the endpoint takes:
	// 0 as configured, 1 max_completion_tokens, 2 max_tokens. It changes
	// when the endpoint refuses the one sent.
	completionTokens atomic.Int32
}

// useCompletionTokens reports whether the reply limit goes as
// max_completion_tokens.
func (m *model) useCompletionTokens() bool {
	switch m.completionTokens.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	return isReasoningModel(m.Name) || m.MaxCompletionTokens
}

// New returns a Cascade for cfg (defaults applied, then validated).
func New(cfg Config) (*Cascade, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	oc := openai.DefaultConfig(string(cfg.APIKey))
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = withCapture(cfg.HTTPClient)
	c := &Cascade{
		cfg:    cfg,
		client: openai.NewClientWithConfig(oc),
		spend:  NewSpendGuard(cfg.Spend.PerConversation, cfg.Spend.PerTenant, cfg.Spend.Window, cfg.Clock.Now),
		log:    cfg.Logger.WithGroup("cascade"),
	}
	for _, mc := range cfg.Models {
		m := &model{ModelConfig: mc, breaker: NewBreaker(cfg.Breaker.Failures, cfg.Breaker.CoolDown, cfg.Clock.Now)}
		if !cfg.JSONSchema {
			m.format.Store(1)
		}
		c.models = append(c.models, m)
	}
	ps := Prompts()
	first := ps["normal"]
	if cfg.Structured {
		first = ps["structured"]
	}
	c.levels = []Prompt{first, ps["aggressive"]}
	return c, nil
}

// BreakerState returns the breaker state of the named model ("closed",
// "open", "half-open"), or "" for an unknown model.
func (c *Cascade) BreakerState(name string) string {
	for _, m := range c.models {
		if m.Name == name {
			return m.breaker.State()
		}
	}
	return ""
}

// run is the state of one Summarize call.
type run struct {
	c        *Cascade
	in       compact.SummaryInput
	log      *slog.Logger
	count    func(string) int
	src      *source
	prevText string
	hint     string
	// ledgerLines is the deterministic draft, appended to every narrative
	// under LedgerHeading; lines may be left out to fit (fitLedger).
	ledgerLines []string
	protected   []bool  // ledger lines never left out
	narr        int     // token budget of the narrative
	cpt         float64 // characters per token of the span's text
	attempts    []compact.Attempt
	lastErr     error
}

// Summarize writes a briefing of in.Span. It returns a Summary only when
// one passed every acceptance check; otherwise a *compact.AttemptsError
// listing every attempt, and the engine keeps the deterministic draft.
func (c *Cascade) Summarize(ctx context.Context, in compact.SummaryInput) (*compact.Summary, error) {
	r := &run{c: c, in: in, count: in.CountTokens,
		log: c.log.With("conversation", in.ConversationID, "tenant", in.Tenant)}
	if r.count == nil {
		r.count = func(s string) int { return (len(s) + 3) / 4 }
	}
	if in.Draft == nil {
		return nil, &compact.AttemptsError{Err: ErrNoDraft}
	}
	prevDepth := 0
	if in.Previous != nil {
		r.prevText, prevDepth = in.Previous.Text, in.Previous.Depth
	} else if len(in.Span) > 0 && in.Span[0].IsBriefing() {
		r.prevText, _ = briefd.UnwrapBriefing(in.Span[0].Content.String())
	}
	r.src = newSource(in, r.prevText)
	r.ledgerLines = strings.Split(strings.TrimSpace(in.Draft.Text), "\n")
	r.protected = r.protectedLedgerLines()
	// The narrative gets what the ledger leaves, counted as the agent reads
	// the briefing (wrapped), plus what fitLedger may leave out of the
	// ledger: the two share the budget.
	r.narr = in.BudgetTokens - r.count(briefd.WrapBriefing(ledgerText(r.ledgerLines, nil, ""))) + r.trimmable()/2
	if r.narr < c.cfg.MinNarrativeTokens {
		r.skip("", "", fmt.Sprintf("the ledger leaves %d of %d tokens for the narrative", r.narr, in.BudgetTokens))
		return nil, r.fail(ErrNoRoom)
	}
	r.hint = c.budgetHint(r.count(r.prevText), in.BudgetTokens, max(in.Draft.Depth, prevDepth+1), r.prevText != "")
	r.cpt = charsPerToken(in.Span, r.count)

	// The cascade's own budget: when it runs out, the engine keeps the
	// deterministic briefing it already built (the engine also stops the
	// cascade short of the caller's deadline).
	ctx, cancel := context.WithTimeout(ctx, c.cfg.MaxDuration)
	defer cancel()
	for _, m := range c.models {
	levels:
		for _, p := range c.levels {
			sum, next := r.level(ctx, m, p)
			if sum != nil {
				return sum, nil
			}
			switch next {
			case stopAll:
				return nil, r.fail(r.lastErr)
			case nextModel:
				break levels
			}
		}
	}
	return nil, r.fail(fmt.Errorf("%w (last: %v)", ErrAllFailed, r.lastErr))
}

// budgetHint is the chained-compaction hint by the size of the earlier
// briefing relative to the budget (Stagewise): < 60% keep it verbatim,
// 60-85% condense its oldest sections lightly, >= 85% (or a deep chain)
// condense its oldest resolved sections.
func (c *Cascade) budgetHint(prevTokens, budget, depth int, hasPrev bool) string {
	if !hasPrev || budget <= 0 {
		return ""
	}
	pct := prevTokens * 100 / budget
	switch {
	case pct >= 85 || depth >= c.cfg.CondenseDepth:
		return fmt.Sprintf(hintCondense, pct, depth)
	case pct >= 60:
		return fmt.Sprintf(hintLight, pct)
	default:
		return hintVerbatim
	}
}

type next int

const (
	nextLevel next = iota
	nextModel
	stopAll
)

// level runs one prompt on one model: the request (retried), a shrink on
// a context-length error, and one feedback round on a rejected reply.
func (r *run) level(ctx context.Context, m *model, p Prompt) (*compact.Summary, next) {
	maxChars := r.c.cfg.MaxMessageChars
	shrinks := 0
	build := func() []openai.ChatCompletionMessage {
		history := r.serialize(maxChars)
		pinned := serializePinned(r.in.Pinned, maxChars)
		return []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: p.Text},
			{Role: openai.ChatMessageRoleUser, Content: userMessage(pinned, history, strings.TrimSpace(r.in.Draft.Text), r.hint, r.narr, r.cpt, p.JSON)},
		}
	}
	msgs := build()
	label := p.Version
	feedback := false
	for {
		reply, finish, idx, err := r.request(ctx, m, p, label, msgs)
		if err != nil {
			r.lastErr = err
			switch classOf(err) {
			case classContextLength:
				if shrinks < r.c.cfg.MaxShrinks && maxChars/2 >= 200 {
					shrinks++
					maxChars /= 2
					msgs, feedback, label = build(), false, fmt.Sprintf("%s+shrink%d", p.Version, shrinks)
					continue
				}
				return nil, nextModel
			case classBadResponse:
				return nil, nextLevel
			case classCanceled, classSpend:
				return nil, stopAll
			case classOpen:
				return nil, nextModel
			default:
				return nil, nextModel
			}
		}
		text, st, j := r.accept(reply, finish, p)
		a := &r.attempts[idx]
		a.Verdicts, a.Feedback = j.verdicts(), feedback
		if j.ok() {
			a.Outcome = OutcomeAccepted
			return r.summary(m, p, text, st), nextLevel
		}
		a.Outcome = OutcomeRejected
		a.Error = clip(strings.Join(j.order, "; "), 1000)
		r.lastErr = fmt.Errorf("%s rejected: %s", m.Name, j.order[0])
		r.log.Warn("briefing rejected", "model", m.Name, "prompt", label, "violations", len(j.order), "first", clip(j.order[0], 300))
		if feedback {
			return nil, nextLevel
		}
		feedback = true
		label = p.Version + "+feedback"
		msgs = append(msgs[:2:2],
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: feedbackMessage(j, r.narr, r.cpt, p.JSON)})
	}
}

// serialize renders the span with per-message clipping at maxChars, clipped
// harder until the whole fits MaxInputChars.
func (r *run) serialize(maxChars int) string {
	prevDepth := 0
	if r.in.Previous != nil {
		prevDepth = r.in.Previous.Depth
	}
	for {
		s := serializeSpan(r.in.Span, r.prevText, prevDepth, maxChars)
		if len(s) <= r.c.cfg.MaxInputChars || maxChars <= 200 {
			return s
		}
		maxChars /= 2
	}
}

// request sends msgs to m, retrying retryable failures with exponential
// backoff and jitter (backoff/v4) and honouring Retry-After. Every request
// is recorded as an attempt; on success the attempt's index is returned so
// the caller can mark it accepted or rejected.
func (r *run) request(ctx context.Context, m *model, p Prompt, label string, msgs []openai.ChatCompletionMessage) (reply, finish string, idx int, err error) {
	cfg := &r.c.cfg
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = cfg.InitialBackoff
	eb.MaxInterval = cfg.MaxBackoff
	eb.Multiplier = 2
	eb.RandomizationFactor = 0.5
	eb.MaxElapsedTime = 0 // bounded by MaxRetries and the caller's context
	eb.Clock = cfg.Clock
	eb.Reset()
	limitSwitched := false
	retries := uint64(0)
	if cfg.MaxRetries > 0 {
		retries = uint64(cfg.MaxRetries)
	}
	bo := backoff.WithContext(backoff.WithMaxRetries(eb, retries), ctx)
	for {
		// The breaker gates every request, retries included: with many
		// compactions in flight, a failing endpoint must stop getting
		// calls as soon as it opens, not after each caller's retries.
		if !m.breaker.Allow() {
			r.skip(m.Name, label, "circuit breaker open")
			return "", "", 0, &callError{classOpen, fmt.Errorf("%s: %w", m.Name, ErrCircuitOpen)}
		}
		if !r.c.spend.Reserve(r.in.Tenant, r.in.ConversationID) {
			r.skip(m.Name, label, "spend limit reached")
			return "", "", 0, &callError{classSpend, ErrSpendExhausted}
		}
		info := &respInfo{}
		rctx, cancel := context.WithTimeout(context.WithValue(ctx, respInfoKey{}, info), m.Timeout)
		start := cfg.Clock.Now()
		resp, err := r.c.client.CreateChatCompletion(rctx, r.buildRequest(m, p, msgs))
		cancel()
		elapsed := cfg.Clock.Now().Sub(start)
		if err == nil {
			m.breaker.Success()
			r.attempts = append(r.attempts, compact.Attempt{Model: m.Name, Prompt: label, Elapsed: elapsed})
			idx := len(r.attempts) - 1
			if len(resp.Choices) == 0 {
				r.attempts[idx].Outcome, r.attempts[idx].Error = OutcomeRejected, "the reply has no choices"
				return "", "", 0, &callError{classBadResponse, errors.New("no choices in the reply")}
			}
			ch := resp.Choices[0]
			return ch.Message.Content, string(ch.FinishReason), idx, nil
		}
		cls := classify(err, ctx, info)
		r.attempts = append(r.attempts, compact.Attempt{Model: m.Name, Prompt: label, Outcome: OutcomeError, Error: describe(cls, err), Elapsed: elapsed})
		r.log.Warn("model request failed", "model", m.Name, "prompt", label, "class", cls.String(), "status", info.status, "err", clip(err.Error(), 300))
		ce := &callError{cls, fmt.Errorf("%s: %w", m.Name, err)}
		switch cls {
		case classLimit:
			// Send the other parameter once; reasoning models take only
			// max_completion_tokens (go-openai refuses max_tokens for them).
			sent := int32(2)
			if m.useCompletionTokens() {
				sent = 1
			}
			if !limitSwitched && !(sent == 1 && isReasoningModel(m.Name)) {
				limitSwitched = true
				m.completionTokens.Store(3 - sent)
				m.breaker.Success() // the endpoint answered; it only refused the parameter
				continue
			}
			m.breaker.Failure()
			return "", "", 0, &callError{classPermanent, ce.err}
		case classFormat:
			if p.JSON && m.format.Load() < 2 {
				m.format.Add(1)
				m.breaker.Success() // the endpoint answered; it only refused the format
				continue
			}
			m.breaker.Failure()
			return "", "", 0, &callError{classPermanent, ce.err}
		case classRetryable:
			m.breaker.Failure()
			d := bo.NextBackOff()
			if d == backoff.Stop {
				return "", "", 0, ce
			}
			if ra := parseRetryAfter(info.retryAfter, cfg.Clock.Now()); ra > 0 {
				if ra > cfg.MaxRetryAfter {
					return "", "", 0, &callError{classRetryable, fmt.Errorf("%w (Retry-After %s exceeds %s)", ce.err, ra, cfg.MaxRetryAfter)}
				}
				d = ra
			}
			if err := cfg.Clock.Sleep(ctx, d); err != nil {
				return "", "", 0, &callError{classCanceled, err}
			}
		case classTimeout, classPermanent:
			m.breaker.Failure()
			return "", "", 0, ce
		default:
			return "", "", 0, ce
		}
	}
}

func (r *run) buildRequest(m *model, p Prompt, msgs []openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: m.Name, Messages: msgs}
	reasoning := isReasoningModel(m.Name)
	maxOut := m.MaxOutputTokens
	if !reasoning {
		// Room for the narrative (JSON costs more tokens than its rendering),
		// not the model's whole allowance: a runaway reply stops early.
		maxOut = min(maxOut, max(2*r.narr, 256))
	}
	if m.useCompletionTokens() {
		req.MaxCompletionTokens = maxOut
	} else {
		req.MaxTokens = maxOut
	}
	if !reasoning && m.Temperature > 0 {
		req.Temperature = m.Temperature
	}
	if p.JSON {
		switch m.format.Load() {
		case 0:
			req.ResponseFormat = &openai.ChatCompletionResponseFormat{
				Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
					Name: "briefing", Schema: schemaJSON, Strict: true,
				},
			}
		case 1:
			req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		}
	}
	return req
}

// accept applies every rule of the gate to a reply and returns the final
// briefing (the narrative and the ledger, fitted to the budget), the
// structured form when the reply is JSON, and the judgement; the reply is
// accepted only if no rule failed.
func (r *run) accept(reply, finish string, p Prompt) (string, *Structured, *judgement) {
	j := newJudgement()
	j.check(RuleFormat)
	reply = strings.TrimSpace(reply)
	if reply == "" {
		j.fail(RuleFormat, "the reply is empty")
		return "", nil, j
	}
	if finish == string(openai.FinishReasonLength) {
		j.fail(RuleFormat, "the reply was cut off at the output token limit; write a shorter one")
	}
	idents := r.c.cfg.Identifiers
	var st *Structured
	narrative := reply
	// A JSON hand-off is read as such even from the plain-text prompt:
	// models answer in the format they like.
	if p.JSON || looksStructured(reply) {
		if st = parseStructured(reply, r.src, j); st == nil {
			return "", nil, j
		}
		narrative = st.render()
	} else if strings.Contains(reply, "```") {
		j.fail(RuleFormat, "the hand-off must be plain text: no code fences")
	}
	if len([]rune(narrative)) < 30 {
		j.fail(RuleFormat, "the hand-off is shorter than 30 characters")
	}
	secs := splitSections(narrative)
	j.check(RuleLabels)
	if !hasSection(secs, secTask) {
		j.fail(RuleLabels, "the hand-off has no TASK paragraph; start with TASK: and the user's task")
	}
	if !hasSection(secs, secState, secProgress, secNext) {
		j.fail(RuleLabels, "the hand-off says nothing of where the work stands; add CURRENT STATE: (or PROGRESS: and NEXT:)")
	}
	checkLeaks(reply, j)
	r.src.checkIdentifiers(narrative, idents, j)
	var other []section
	for _, sec := range secs {
		if sec.name != secInstructions {
			other = append(other, sec)
		}
	}
	r.src.checkQuotes(sectionsText(other), j)
	j.check(RuleUserInstruction, RuleCompletion)
	var claims []claim
	if st != nil {
		r.src.checkInstructions(other, j) // the quotes themselves were checked by parseStructured
		claims = r.src.structuredClaims(st)
	} else {
		r.src.checkInstructions(secs, j)
		claims = r.src.textClaims(secs)
	}
	r.src.checkClaims(claims, idents, j)
	final, n, dropped := r.fitLedger(narrative)
	j.check(RuleLength)
	if n > r.in.BudgetTokens {
		j.fail(RuleLength, "the hand-off is %d tokens with the evidence ledger, over the budget of %d even with %d ledger lines left out: write at most %d tokens (about %d characters)",
			n, r.in.BudgetTokens, dropped, r.narr, lengthChars(r.narr, r.cpt))
	}
	return final, st, j
}

func sectionsText(secs []section) string {
	var b strings.Builder
	for _, s := range secs {
		b.WriteString(s.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// looksStructured reports a reply that is a JSON hand-off, possibly in a
// code fence.
func looksStructured(reply string) bool {
	t := strings.TrimSpace(reply)
	t = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "```json"), "```"))
	return strings.HasPrefix(t, "{") && strings.Contains(t, `"task_goal"`)
}

func (r *run) summary(m *model, p Prompt, text string, st *Structured) *compact.Summary {
	structured := r.in.Draft.Structured
	if st != nil {
		structured = mergeStructured(structured, st)
	}
	return &compact.Summary{
		Text:          text,
		Structured:    structured,
		Tier:          briefd.Tier("llm:" + p.Name),
		Model:         m.Name,
		PromptVersion: p.Version,
		Attempts:      r.attempts,
	}
}

// mergeStructured adds the model's structure under "llm" to the draft's
// structured ledger, which stays as it is so the next cycle's deterministic
// briefing can merge it.
func mergeStructured(draft json.RawMessage, st *Structured) json.RawMessage {
	obj := map[string]json.RawMessage{}
	if len(draft) > 0 {
		if err := json.Unmarshal(draft, &obj); err != nil {
			return draft // not an object: keep the ledger untouched
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return draft
	}
	obj["llm"] = b
	out, err := json.Marshal(obj)
	if err != nil {
		return draft
	}
	return out
}

func (r *run) skip(modelName, prompt, reason string) {
	r.attempts = append(r.attempts, compact.Attempt{Model: modelName, Prompt: prompt, Outcome: OutcomeSkipped, Error: reason})
}

func (r *run) fail(err error) error {
	r.log.Warn("cascade fell back to the deterministic briefing", "attempts", len(r.attempts), "err", err)
	return &compact.AttemptsError{Attempts: r.attempts, Err: err}
}

// charsPerToken measures the span's characters per token on up to
// sampleChars of its text, clamped to [2, 5]: real agent spans run 3.3 to
// 3.5 (code, JSON, paths), far from the 4 of English prose.
func charsPerToken(span []briefd.Message, count func(string) int) float64 {
	const sampleChars = 200_000
	var b strings.Builder
	for i := range span {
		if b.Len() >= sampleChars {
			break
		}
		if span[i].IsBriefing() {
			continue
		}
		b.WriteString(span[i].Content.String())
		b.WriteByte('\n')
		for _, tc := range span[i].ToolCalls {
			b.WriteString(tc.Function.Arguments)
			b.WriteByte('\n')
		}
	}
	text := b.String()
	if len(text) > sampleChars {
		text = strings.ToValidUTF8(text[:sampleChars], "")
	}
	n := count(text)
	if n <= 0 {
		return 4
	}
	return min(max(float64(utf8.RuneCountInString(text))/float64(n), 2), 5)
}
