package eval

import (
	"strings"

	"github.com/briefd/briefd"
)

// Score is one briefing's (or baseline's) score on one conversation: a row
// of eval_quality.py's --json output, with the same keys. A nil metric is
// Python's None: nothing to measure (no identifier needed, no user
// message in the span).
type Score struct {
	ID string `json:"id"`
	// Need counts the identifiers of the compacted span that reappear in
	// the future and are in neither the pinned head nor the kept tail.
	Need int `json:"need"`
	// FutureRecall is the share of them found verbatim in the briefing.
	FutureRecall *float64 `json:"future_recall"`
	// FutureRecallNamed is FutureRecall without bare numbers.
	FutureRecallNamed *float64 `json:"future_recall_named"`
	// SpanSurvival is the share of all the span's identifiers in the briefing.
	SpanSurvival *float64 `json:"span_survival"`
	// UserCoverage is the share of the span's user messages whose first
	// 120 characters (stripped) are in the briefing.
	UserCoverage *float64 `json:"user_coverage"`
	// Fabricated counts identifiers of the briefing found nowhere in the
	// frozen history, bare numbers left out.
	Fabricated int `json:"fabricated"`
	// Ratio is chars(briefing) / chars(span).
	Ratio float64 `json:"ratio"`
	// SpanChars is chars(span), at least 1.
	SpanChars int `json:"span_chars"`
	// PairsOK says whether the spliced history pairs every tool call with
	// its result; set on the compactor's rows only.
	PairsOK *bool `json:"pairs_ok,omitempty"`
}

// score mirrors score(briefing, span, head, tail, future, prefix_text):
//
//	span_ids = set().union(*[identifiers(msg_text(m)) for m in span]) if span else set()
//	keep_ids = set().union(*[identifiers(msg_text(m)) for m in head + tail]) if head + tail else set()
//	fut_ids = set().union(*[identifiers(msg_text(m)) for m in future]) if future else set()
//	need = (span_ids & fut_ids) - keep_ids
//	named = {i for i in need if not re.fullmatch(r"[\d.]+", i)}
//	bid = identifiers(briefing)
//	users = [m for m in span if m.get("role") == "user" and (m.get("content") or "").strip()]
//	span_chars = sum(len(msg_text(m)) for m in span) or 1
//	"future_recall": (sum(1 for i in need if i in briefing) / len(need)) if need else None,
//	"future_recall_named": (sum(1 for i in named if i in briefing) / len(named)) if named else None,
//	"span_survival": (sum(1 for i in span_ids if i in briefing) / len(span_ids)) if span_ids else None,
//	"user_coverage": (sum(1 for m in users if m["content"].strip()[:120] in briefing) / len(users)) if users else None,
//	"fabricated": len([i for i in bid if i not in prefix_text and not re.fullmatch(r"[\d.]+", i)]),
//	"ratio": len(briefing) / span_chars,
//
// The identifier sets of span, kept messages and future are the same for
// every text scored on one conversation, so they are computed once
// (newScorer) and each text is scored against them.
func (s *scorer) score(briefing string) Score {
	found := func(ids []string) *float64 {
		if len(ids) == 0 {
			return nil
		}
		n := 0
		for _, id := range ids {
			if strings.Contains(briefing, id) {
				n++
			}
		}
		return ptr(float64(n) / float64(len(ids)))
	}
	r := Score{
		Need:              len(s.need),
		FutureRecall:      found(s.need),
		FutureRecallNamed: found(s.named),
		SpanSurvival:      found(s.spanIDs),
		SpanChars:         s.spanChars,
	}
	if len(s.users) > 0 {
		n := 0
		for _, u := range s.users {
			if strings.Contains(briefing, u) {
				n++
			}
		}
		r.UserCoverage = ptr(float64(n) / float64(len(s.users)))
	}
	for id := range identifiers(briefing) {
		if !strings.Contains(s.prefixText, id) && !isNumber(id) {
			r.Fabricated++
		}
	}
	r.Ratio = float64(pyLen(briefing)) / float64(s.spanChars)
	return r
}

// scorer holds what score needs of one conversation.
type scorer struct {
	spanIDs, need, named []string
	// users are the stripped first 120 characters of the span's non-empty
	// user messages.
	users      []string
	spanChars  int
	prefixText string
}

func newScorer(span, head, tail, future []briefd.Message, prefixText string) *scorer {
	s := &scorer{prefixText: prefixText}
	spanIDs := idsOf(span)
	keep := idsOf(head)
	keep.add(idsOf(tail))
	fut := idsOf(future)
	for id := range spanIDs {
		s.spanIDs = append(s.spanIDs, id)
		if _, ok := fut[id]; !ok {
			continue
		}
		if _, ok := keep[id]; ok {
			continue
		}
		s.need = append(s.need, id)
		if !isNumber(id) {
			s.named = append(s.named, id)
		}
	}
	for i := range span {
		m := &span[i]
		if m.Role != briefd.RoleUser {
			continue
		}
		if c := pyStrip(m.Content.String()); c != "" {
			s.users = append(s.users, pyHead(c, 120))
		}
	}
	s.spanChars = max(sumChars(span), 1)
	return s
}

func ptr[T any](v T) *T { return &v }
