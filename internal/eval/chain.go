package eval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/briefd/briefd"
)

// ChainOptions tune [RunChain]. The zero value takes eval_chain.py's
// defaults.
type ChainOptions struct {
	Options
	// Cycles sizes the window: max(2000, chars(prefix)/4/Cycles) tokens,
	// so that compaction fires about that many times. Default 4.
	Cycles int
	// MinMessages skips shorter conversations. Default 60.
	MinMessages int
}

// ChainRow is one conversation of the chained replay: a row of
// eval_chain.py's --json output, with the same keys.
type ChainRow struct {
	ID string `json:"id"`
	// Cycles counts the compactions of the replay.
	Cycles int `json:"cycles"`
	// Size is chars(final history) / chars(prefix).
	Size float64 `json:"size"`
	// Recall is the share of the prefix's named identifiers that the
	// future uses again and the pinned head lacks, found anywhere in the
	// final history; FirstRecall the same for those of the oldest third.
	Recall      *float64 `json:"recall"`
	FirstRecall *float64 `json:"first_recall"`
	// RecencyRecall and RecencyFirstRecall score the newest part of the
	// serialized prefix (head left out) at the final history's size.
	RecencyRecall      *float64 `json:"recency_recall"`
	RecencyFirstRecall *float64 `json:"recency_first_recall"`
	Need               int      `json:"need"`
	NeedFirst          int      `json:"need_first"`
	PairsOK            bool     `json:"pairs_ok"`
	// Extras, not in the Python's rows.
	Messages int `json:"messages"`
	Cut      int `json:"cut"`
	Window   int `json:"window"`
}

// ChainReport is the result of [RunChain].
type ChainReport struct {
	Frac        float64 `json:"frac"`
	Cycles      int     `json:"cycles_option"`
	MinMessages int     `json:"min_messages"`
	Files       int     `json:"files"`
	// Skipped counts the conversations shorter than MinMessages.
	Skipped  int        `json:"skipped"`
	Rows     []ChainRow `json:"rows"`
	Failures []Failure  `json:"failures"`
}

// RunChain mirrors eval_chain.py --compactor 'worker compact --force'
// (or without --force when opts.NoForce) over files.
func RunChain(ctx context.Context, files []string, opts ChainOptions) (*ChainReport, error) {
	var err error
	if opts.Options, err = opts.Options.withDefaults(); err != nil {
		return nil, err
	}
	if opts.Cycles == 0 {
		opts.Cycles = 4
	}
	if opts.Cycles < 0 {
		return nil, fmt.Errorf("eval: cycles %d must be positive", opts.Cycles)
	}
	if opts.MinMessages == 0 {
		opts.MinMessages = 60
	}
	comp, err := newCompactor(opts.Options, !opts.NoForce)
	if err != nil {
		return nil, err
	}
	rep := &ChainReport{Frac: opts.Frac, Cycles: opts.Cycles, MinMessages: opts.MinMessages, Files: len(files),
		Rows: []ChainRow{}, Failures: []Failure{}}
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
		if len(h.Messages) < opts.MinMessages {
			rep.Skipped++
			continue
		}
		row, fail, err := chainOne(ctx, comp, h, opts)
		switch {
		case err != nil:
			return nil, fmt.Errorf("eval: %s: %w", f, err)
		case fail != "":
			rep.Failures = append(rep.Failures, Failure{h.ID, fail})
		default:
			rep.Rows = append(rep.Rows, *row)
		}
	}
	return rep, nil
}

// chainOne replays one conversation, mirroring the loop body of main() in
// eval_chain.py:
//
//	n = cut_index(msgs)
//	prefix, future = msgs[:n], msgs[n:]
//	prefix_chars = sum(len(msg_text(m)) for m in prefix)
//	window = max(2000, prefix_chars // 4 // a.cycles)
//	hist, cycles, bad = [], 0, None
//	for m in prefix:
//	    hist.append(m)
//	    if not pairs_ok(hist) or sum(len(msg_text(x)) for x in hist) // 4 < 0.6 * window:
//	        continue
//	    out, err = compact(cmd, conv["id"], hist, window)
//	    if out is None: bad = err[-200:]; break
//	    if out.get("compacted"):
//	        cycles += 1
//	        hist = out["messages"]
//	head = [m for m in prefix if m["role"] == "system"][:1] + [m for m in prefix if m["role"] == "user"][:1]
//	head_ids = set().union(*[identifiers(msg_text(m)) for m in head]) if head else set()
//	fut_ids = set().union(*[identifiers(msg_text(m)) for m in future]) if future else set()
//	body = prefix[len(head):]
//	first = body[: max(1, len(body) // 3)]
//	need = named(set().union(*[identifiers(msg_text(m)) for m in body]) & fut_ids) - head_ids
//	need_first = named(set().union(*[identifiers(msg_text(m)) for m in first]) & fut_ids) - head_ids
//	final_text = "\n".join(msg_text(m) for m in hist)
//	ser = serialize(body)
//	budget = max(0, len(final_text) - sum(len(msg_text(m)) for m in head))
//	rec_text = ser[-budget:] if budget else ""
//	size = len(final_text) / max(1, prefix_chars)
//
// Note that body is the prefix less as many messages as the head holds,
// from the front (not the head's own messages), as in the Python. fail is
// the reason the replay stopped (the compactor failed); err is set only
// when ctx ends.
func chainOne(ctx context.Context, comp *compactor, h *briefd.History, opts ChainOptions) (row *ChainRow, fail string, err error) {
	msgs := h.Messages
	n, ok := cutIndex(msgs, opts.Frac)
	if !ok {
		return nil, fmt.Sprintf("%d messages: too short to freeze", len(msgs)), nil
	}
	prefix, future := msgs[:n], msgs[n:]
	prefixChars := sumChars(prefix)
	window := max(2000, prefixChars/4/opts.Cycles)
	var hist []briefd.Message
	histChars, cycles := 0, 0
	for _, m := range prefix {
		hist = append(hist, m)
		histChars += msgChars(&m)
		if !pairsOK(hist) || float64(histChars/4) < 0.6*float64(window) {
			continue
		}
		res, err := comp.compact(ctx, h.ID, hist, window)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", context.Cause(ctx)
			}
			return nil, err.Error(), nil
		}
		if res.Compacted {
			cycles++
			// A copy: the next append must not write into the engine's array.
			hist = slices.Clone(res.Messages)
			histChars = sumChars(hist)
		}
	}

	head := firstOfRoles(prefix)
	headIDs := idsOf(head)
	futIDs := idsOf(future)
	body := prefix[len(head):]
	first := body[:max(1, len(body)/3)]
	needOf := func(part []briefd.Message) []string {
		var out []string
		for id := range idsOf(part) {
			if _, inFuture := futIDs[id]; !inFuture || isNumber(id) {
				continue
			}
			if _, inHead := headIDs[id]; !inHead {
				out = append(out, id)
			}
		}
		return out
	}
	need, needFirst := needOf(body), needOf(first)
	finalText := joinText(hist)
	ser := serialize(body)
	budget := max(0, pyLen(finalText)-sumChars(head))
	recText := ""
	if budget > 0 {
		recText = pySuffix(ser, budget)
	}
	return &ChainRow{
		ID: h.ID, Cycles: cycles, Size: float64(pyLen(finalText)) / float64(max(1, prefixChars)),
		Recall: recall(finalText, need), FirstRecall: recall(finalText, needFirst),
		RecencyRecall: recall(recText, need), RecencyFirstRecall: recall(recText, needFirst),
		Need: len(need), NeedFirst: len(needFirst), PairsOK: pairsOK(hist),
		Messages: len(msgs), Cut: n, Window: window,
	}, "", nil
}

// recall mirrors rec(text, ids): the share of ids found verbatim in text,
// None (nil) when there are none.
func recall(text string, ids []string) *float64 {
	if len(ids) == 0 {
		return nil
	}
	n := 0
	for _, id := range ids {
		if strings.Contains(text, id) {
			n++
		}
	}
	return ptr(float64(n) / float64(len(ids)))
}
