// Package eval measures the quality of briefings over a folder of real
// histories: each conversation is frozen at a fraction of its messages,
// compacted (forced), and the briefing is scored against what the
// conversation did afterwards, beside two truncation baselines of the same
// token size.
package eval

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/ident"
)

// Options tune a run. The zero value takes the defaults.
type Options struct {
	// At is the fraction of each conversation's messages before the
	// freeze point. Default 0.7.
	At float64
	// ContextWindow is the engine's context window. Zero sizes it per
	// conversation to the frozen history's tokens, so that the kept tail
	// is 20% of it (the engine's KeepFraction) and the span the rest.
	ContextWindow int
	// Model picks the token encoding. Default gpt-4o (o200k_base).
	Model string
}

// Conversation is the score of one history.
type Conversation struct {
	ID             string  `json:"id"`
	Messages       int     `json:"messages"`
	Frozen         int     `json:"frozen"`
	Compacted      bool    `json:"compacted"`
	Reason         string  `json:"reason,omitempty"`
	SpanMessages   int     `json:"span_messages"`
	SpanTokens     int     `json:"span_tokens"`
	BriefingTokens int     `json:"briefing_tokens"`
	Ratio          float64 `json:"size_ratio"`
	// FutureIdentifiers are the span's identifiers that reappear after the
	// freeze point and are in neither the kept tail nor the pinned head.
	FutureIdentifiers int      `json:"future_identifiers"`
	FutureFound       int      `json:"future_found"`
	FutureRecall      float64  `json:"future_recall"`
	FutureMissed      []string `json:"future_missed,omitempty"`
	// NamedRecall is FutureRecall without the bare numbers (file sizes,
	// line numbers, years), which recur in repeated listings.
	NamedIdentifiers int      `json:"named_future_identifiers"`
	NamedFound       int      `json:"named_future_found"`
	NamedRecall      float64  `json:"named_future_recall"`
	SpanIdentifiers  int      `json:"span_identifiers"`
	SpanSurvival     float64  `json:"span_survival"`
	UserMessages     int      `json:"user_messages"`
	UserVerbatim     int      `json:"user_verbatim"`
	UserShortened    int      `json:"user_shortened"`
	Fabricated       []string `json:"fabricated,omitempty"`
	ToolPairsIntact  bool     `json:"tool_pairs_intact"`
	TailRecall       float64  `json:"baseline_truncation_recall"`
	MiddleRecall     float64  `json:"baseline_middle_recall"`
	// Briefing is the briefing text, for inspection (not in the JSON report).
	Briefing string `json:"-"`
}

// Summary aggregates the conversations that were compacted.
type Summary struct {
	Conversations      int     `json:"conversations"`
	Compacted          int     `json:"compacted"`
	MedianFutureRecall float64 `json:"median_future_recall"`
	MeanFutureRecall   float64 `json:"mean_future_recall"`
	PooledFutureRecall float64 `json:"pooled_future_recall"`
	MedianNamedRecall  float64 `json:"median_named_future_recall"`
	MeanNamedRecall    float64 `json:"mean_named_future_recall"`
	PooledNamedRecall  float64 `json:"pooled_named_future_recall"`
	MedianSpanSurvival float64 `json:"median_span_survival"`
	MedianRatio        float64 `json:"median_size_ratio"`
	MeanRatio          float64 `json:"mean_size_ratio"`
	UserMessages       int     `json:"user_messages"`
	UserVerbatim       int     `json:"user_verbatim"`
	UserShortened      int     `json:"user_shortened"`
	Fabricated         int     `json:"fabricated"`
	ToolPairsIntact    float64 `json:"tool_pairs_intact"`
	MedianTailRecall   float64 `json:"median_baseline_truncation_recall"`
	MedianMiddleRecall float64 `json:"median_baseline_middle_recall"`
}

// Report is the result of Run.
type Report struct {
	At            float64        `json:"at"`
	Conversations []Conversation `json:"conversations"`
	Summary       Summary        `json:"summary"`
}

// Files lists the *.json histories of dir (README and others skipped), sorted.
func Files(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("eval: list %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("eval: no *.json history in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

// Run scores every file. It stops at the first unreadable or invalid
// history, or when ctx ends.
func Run(ctx context.Context, files []string, opts Options) (*Report, error) {
	if opts.At == 0 {
		opts.At = 0.7
	}
	if opts.At <= 0 || opts.At >= 1 {
		return nil, fmt.Errorf("eval: --at %v must be in (0, 1)", opts.At)
	}
	if opts.Model == "" {
		opts.Model = "gpt-4o"
	}
	counter, err := compact.NewTokenCounter(opts.Model, "", compact.DefaultPerMessageOverhead)
	if err != nil {
		return nil, fmt.Errorf("eval: token counter: %w", err)
	}
	rep := &Report{At: opts.At}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			return nil, fmt.Errorf("eval: %s: %w", f, err)
		}
		if h.ID == "" {
			h.ID = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		c, err := scoreOne(ctx, h, opts, counter)
		if err != nil {
			return nil, fmt.Errorf("eval: %s: %w", f, err)
		}
		rep.Conversations = append(rep.Conversations, *c)
	}
	rep.Summary = summarize(rep.Conversations)
	return rep, nil
}

// freezeAt is the number of messages kept at the freeze point: at x len,
// moved forward past tool results so no call is cut from its results.
func freezeAt(msgs []briefd.Message, at float64) int {
	cut := int(math.Round(at * float64(len(msgs))))
	for cut < len(msgs) && msgs[cut].Role == briefd.RoleTool {
		cut++
	}
	return cut
}

func scoreOne(ctx context.Context, h *briefd.History, opts Options, counter *compact.TokenCounter) (*Conversation, error) {
	msgs := h.Messages
	cut := freezeAt(msgs, opts.At)
	frozen, future := msgs[:cut], msgs[cut:]
	c := &Conversation{ID: h.ID, Messages: len(msgs), Frozen: cut}
	window := opts.ContextWindow
	if window == 0 {
		for i := range frozen {
			window += counter.CountMessage(&frozen[i])
		}
	}
	eng, err := compact.New(compact.Config{Model: opts.Model, ContextWindow: max(window, 100)}, compact.WithTokenCounter(counter))
	if err != nil {
		return nil, err
	}
	res, err := eng.Compact(ctx, compact.Request{ConversationID: h.ID, Messages: frozen, Force: true})
	if err != nil {
		return nil, err
	}
	c.Reason = res.Reason
	if !res.Compacted {
		return c, nil
	}
	c.Compacted = true
	b := res.Briefing
	inSpan := map[string]bool{}
	for _, id := range b.CompactedIDs {
		inSpan[id] = true
	}
	var span, head []briefd.Message
	for i := 0; i < res.Boundary; i++ {
		if inSpan[frozen[i].ID] {
			span = append(span, frozen[i])
		} else {
			head = append(head, frozen[i])
		}
	}
	tail := frozen[res.Boundary:]
	c.SpanMessages, c.SpanTokens, c.BriefingTokens = len(span), b.SpanTokens, b.BriefingTokens
	if b.SpanTokens > 0 {
		c.Ratio = float64(b.BriefingTokens) / float64(b.SpanTokens)
	}

	spanIDs := identSet(span)
	tailIDs, headIDs, futureIDs := identSet(tail), identSet(head), identSet(future)
	var target []string
	for _, id := range orderedKeys(spanIDs) {
		if futureIDs[id] && !tailIDs[id] && !headIDs[id] {
			target = append(target, id)
		}
	}
	text := b.Text
	c.Briefing = text
	found := 0
	for _, id := range target {
		in := strings.Contains(text, id)
		if in {
			found++
		} else {
			c.FutureMissed = append(c.FutureMissed, id)
		}
		if !bareNumber(id) {
			c.NamedIdentifiers++
			if in {
				c.NamedFound++
			}
		}
	}
	c.NamedRecall = ratio(c.NamedFound, c.NamedIdentifiers)
	c.FutureIdentifiers, c.FutureFound = len(target), found
	c.FutureRecall = ratio(found, len(target))
	surv := 0
	for id := range spanIDs {
		if strings.Contains(text, id) {
			surv++
		}
	}
	c.SpanIdentifiers, c.SpanSurvival = len(spanIDs), ratio(surv, len(spanIDs))

	for i := range span {
		m := &span[i]
		if m.Role != briefd.RoleUser || m.IsBriefing() {
			continue
		}
		c.UserMessages++
		switch {
		case strings.Contains(text, m.Content.String()):
			c.UserVerbatim++
		case strings.Contains(text, "["+m.ID) && (strings.Contains(text, "shortened for size") || strings.Contains(text, "omitted for size")):
			c.UserShortened++
		}
	}

	// Fabrication: an identifier of the briefing that is not verbatim in
	// the source (span, pinned head, message ids).
	var src strings.Builder
	for _, part := range [][]briefd.Message{head, span} {
		for i := range part {
			m := &part[i]
			src.WriteString(m.ID)
			src.WriteByte('\n')
			src.WriteString(m.Content.String())
			src.WriteByte('\n')
			for _, tc := range m.ToolCalls {
				src.WriteString(tc.Function.Name)
				src.WriteByte(' ')
				src.WriteString(tc.Function.Arguments)
				src.WriteByte('\n')
			}
		}
	}
	source := src.String()
	for _, id := range ident.Identifiers(text) {
		if !strings.Contains(source, id) {
			c.Fabricated = append(c.Fabricated, id)
		}
	}
	c.ToolPairsIntact = briefd.Validate(res.Messages, briefd.Limits{}) == nil

	// Baselines of the same size, over the serialized span.
	ser := serialize(span)
	n := counter.Count(text)
	tailText := lastTokens(ser, n, counter.Count)
	headText := firstTokens(ser, n/2, counter.Count)
	midText := headText + "\n…\n" + lastTokens(ser, n-n/2, counter.Count)
	c.TailRecall = recallIn(target, tailText)
	c.MiddleRecall = recallIn(target, midText)
	return c, nil
}

// bareNumber reports whether id is digits and dots only.
func bareNumber(id string) bool {
	for i := 0; i < len(id); i++ {
		if (id[i] < '0' || id[i] > '9') && id[i] != '.' {
			return false
		}
	}
	return true
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func recallIn(target []string, text string) float64 {
	f := 0
	for _, id := range target {
		if strings.Contains(text, id) {
			f++
		}
	}
	return ratio(f, len(target))
}

// identSet is the set of identifiers of messages' content and tool-call
// arguments.
func identSet(msgs []briefd.Message) map[string]bool {
	set := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		text := m.Content.String()
		if m.IsBriefing() {
			text, _ = briefd.UnwrapBriefing(text)
		}
		for _, id := range ident.Identifiers(text) {
			set[id] = true
		}
		for _, tc := range m.ToolCalls {
			for _, id := range ident.Identifiers(tc.Function.Arguments) {
				set[id] = true
			}
		}
	}
	return set
}

func orderedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// serialize writes the span as a plain transcript, the input of the
// truncation baselines.
func serialize(msgs []briefd.Message) string {
	var b strings.Builder
	for i := range msgs {
		m := &msgs[i]
		b.WriteString(string(m.Role))
		b.WriteString(": ")
		b.WriteString(m.Content.String())
		for _, tc := range m.ToolCalls {
			b.WriteString("\n")
			b.WriteString(tc.Function.Name)
			b.WriteString("(")
			b.WriteString(tc.Function.Arguments)
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// lastTokens returns the longest suffix of s with at most n tokens.
func lastTokens(s string, n int, count func(string) int) string {
	lo, hi := 0, len(s) // suffix start: find the smallest start that fits
	for lo < hi {
		mid := (lo + hi) / 2
		if count(s[mid:]) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return s[lo:]
}

// firstTokens returns the longest prefix of s with at most n tokens.
func firstTokens(s string, n int, count func(string) int) string {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if count(s[:mid]) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return s[:lo]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func summarize(cs []Conversation) Summary {
	s := Summary{Conversations: len(cs)}
	var rec, named, surv, rat, tr, mr []float64
	found, total, intact, nfound, ntotal := 0, 0, 0, 0, 0
	for _, c := range cs {
		if !c.Compacted {
			continue
		}
		s.Compacted++
		rec = append(rec, c.FutureRecall)
		named = append(named, c.NamedRecall)
		nfound += c.NamedFound
		ntotal += c.NamedIdentifiers
		surv = append(surv, c.SpanSurvival)
		rat = append(rat, c.Ratio)
		tr = append(tr, c.TailRecall)
		mr = append(mr, c.MiddleRecall)
		found += c.FutureFound
		total += c.FutureIdentifiers
		s.UserMessages += c.UserMessages
		s.UserVerbatim += c.UserVerbatim
		s.UserShortened += c.UserShortened
		s.Fabricated += len(c.Fabricated)
		if c.ToolPairsIntact {
			intact++
		}
	}
	s.MedianFutureRecall, s.MeanFutureRecall, s.PooledFutureRecall = median(rec), mean(rec), ratio(found, total)
	s.MedianNamedRecall, s.MeanNamedRecall, s.PooledNamedRecall = median(named), mean(named), ratio(nfound, ntotal)
	s.MedianSpanSurvival = median(surv)
	s.MedianRatio, s.MeanRatio = median(rat), mean(rat)
	s.ToolPairsIntact = ratio(intact, s.Compacted)
	s.MedianTailRecall, s.MedianMiddleRecall = median(tr), median(mr)
	return s
}
