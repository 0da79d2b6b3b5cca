// Package eval measures the briefing the way the project's yardsticks do,
// with the engine in process: ../shared/tools/eval_quality.py (one forced
// compaction at the freeze point, scored against what the conversation did
// afterwards, beside truncation baselines of the same size) is [Run], and
// eval_chain.py (the conversation replayed message by message in a small
// window, so that compaction fires again and again) is [RunChain]. Both
// report the figures the Python reports, conversation by conversation; the
// definitions are ported with the Python they mirror beside them.
//
// The probe set (questions whose answers are facts of the compacted span
// that the conversation's future needed) is read by people or agents
// outside the program: [WritePackets] writes what they read, and
// [Aggregate] sums up their grades. docs/probes.md is the protocol.
package eval

import (
	"context"
	"fmt"

	"github.com/briefd/briefd"
)

// Methods of the single compaction report, in the yardstick's order:
// the compactor ("ours") and the baselines computed on the same span.
const (
	MethodOurs     = "ours"
	MethodDrop     = "drop"     // nothing kept of the span
	MethodTrunc512 = "trunc512" // the serialized span's first 2048 characters (~512 tokens)
	MethodHeadTail = "headtail" // middle truncation to the briefing's size
	MethodRecency  = "recency"  // the newest part of the serialized span at the briefing's size
)

// Methods lists the methods in report order.
var Methods = []string{MethodOurs, MethodDrop, MethodTrunc512, MethodHeadTail, MethodRecency}

// Conversation is what the report shows of one compacted conversation
// beside its scores.
type Conversation struct {
	ID       string `json:"id"`
	Messages int    `json:"messages"`
	// Cut is the freeze point: the compactor sees Messages[:Cut].
	Cut int `json:"cut"`
	// Window is the context window the compaction got: chars(prefix)/4+1.
	Window     int    `json:"window"`
	BoundaryID string `json:"boundary_id"`
	// SpanMessages counts the compacted span as the yardstick reads it
	// (the boundary's prefix less the first system and first user message).
	SpanMessages int `json:"span_messages"`
	// BriefingChars is the length of the briefing the agent reads (framing
	// line and tags included), in characters.
	BriefingChars int `json:"briefing_chars"`
}

// Report is the result of [Run]: eval_quality.py's rows, per method.
type Report struct {
	Frac float64 `json:"frac"`
	// Files counts the histories read.
	Files int `json:"files"`
	// Conversations describes the compacted conversations, in the order of
	// the rows.
	Conversations []Conversation `json:"conversations"`
	// Rows holds each method's rows, one per compacted conversation, in
	// file order (eval_quality.py's --json output).
	Rows     map[string][]Score `json:"rows"`
	Failures []Failure          `json:"failures"`
}

// Run mirrors eval_quality.py --compactor 'worker compact --force' over
// files: each history is cut at cut_index, compacted with the window
// chars(prefix)/4+1, and the briefing and the baselines are scored. A
// conversation the compactor fails on is a Failure, as in the Python; an
// unreadable file is an error.
func Run(ctx context.Context, files []string, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	comp, err := newCompactor(opts, true)
	if err != nil {
		return nil, err
	}
	rep := &Report{Frac: opts.Frac, Files: len(files), Rows: map[string][]Score{}, Failures: []Failure{}}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(i, len(files), f)
		}
		h, err := readHistory(f)
		if err != nil {
			return nil, err
		}
		if err := rep.add(ctx, comp, h, opts.Frac); err != nil {
			return nil, fmt.Errorf("eval: %s: %w", f, err)
		}
	}
	return rep, nil
}

// add scores one conversation, mirroring the loop body of main() in
// eval_quality.py:
//
//	n = cut_index(msgs, a.frac)
//	prefix, future = msgs[:n], msgs[n:]
//	prefix_text = "\n".join(msg_text(m) for m in prefix)
//	approx_tokens = len(prefix_text) // 4 + 1
//	... run the compactor with --context-window approx_tokens ...
//	if not out.get("compacted"): failure "not compacted: " + reason
//	b = out.get("briefing") or ""
//	bi = ids.index(out.get("boundary_id"))   (failure when absent)
//	head, span, tail = ...                     (see pinnedSplit)
//	row = score(b, span, head, tail, future, prefix_text)
//	row["pairs_ok"] = pairs_ok(spliced) if spliced else None
//	ser = serialize(span)
//	drop: "", trunc512: ser[:2048],
//	headtail: ser[: len(b) // 2] + ser[-(len(b) // 2):] if b else "",
//	recency: ser[-len(b):] if b else ""
//
// It returns an error only when ctx ends.
func (r *Report) add(ctx context.Context, comp *compactor, h *briefd.History, frac float64) error {
	msgs := h.Messages
	n, ok := cutIndex(msgs, frac)
	if !ok {
		r.Failures = append(r.Failures, Failure{h.ID, fmt.Sprintf("%d messages: too short to freeze", len(msgs))})
		return nil
	}
	prefix, future := msgs[:n], msgs[n:]
	prefixText := joinText(prefix)
	window := pyLen(prefixText)/4 + 1
	res, err := comp.compact(ctx, h.ID, prefix, window)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		r.Failures = append(r.Failures, Failure{h.ID, err.Error()})
		return nil
	}
	if !res.Compacted {
		r.Failures = append(r.Failures, Failure{h.ID, "not compacted: " + res.Reason})
		return nil
	}
	b := briefd.WrapBriefing(res.Briefing.Text)
	bi := -1
	for i := range prefix {
		if prefix[i].ID == res.Briefing.BoundaryID {
			bi = i
			break
		}
	}
	if bi < 0 {
		r.Failures = append(r.Failures, Failure{h.ID, fmt.Sprintf("boundary %q not in history", res.Briefing.BoundaryID)})
		return nil
	}
	head, span, tail := pinnedSplit(prefix, bi)
	sc := newScorer(span, head, tail, future, prefixText)
	ours := sc.score(b)
	if len(res.Messages) > 0 {
		ours.PairsOK = ptr(pairsOK(res.Messages))
	}
	r.push(MethodOurs, h.ID, ours)
	ser := serialize(span)
	half := pyLen(b) / 2
	var headtail, recency string
	if b != "" {
		headtail = pyHead(ser, half) + pySuffix(ser, half)
		recency = pySuffix(ser, pyLen(b))
	}
	r.push(MethodDrop, h.ID, sc.score(""))
	r.push(MethodTrunc512, h.ID, sc.score(pyHead(ser, 2048)))
	r.push(MethodHeadTail, h.ID, sc.score(headtail))
	r.push(MethodRecency, h.ID, sc.score(recency))
	r.Conversations = append(r.Conversations, Conversation{
		ID: h.ID, Messages: len(msgs), Cut: n, Window: window, BoundaryID: res.Briefing.BoundaryID,
		SpanMessages: len(span), BriefingChars: pyLen(b),
	})
	return nil
}

func (r *Report) push(method, id string, s Score) {
	s.ID = id
	r.Rows[method] = append(r.Rows[method], s)
}
