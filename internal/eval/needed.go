package eval

import (
	"slices"

	"github.com/briefd/briefd"
)

// FutureNeeded returns, sorted, the identifiers of a compaction's span that
// the conversation's future uses again and that neither the pinned head
// nor the kept tail carries: what only the briefing can hand on, by the
// yardstick's rule (eval_quality.py's need). Recall is the share of them
// a briefing holds verbatim. worker replay measures stored compactions
// with it.
func FutureNeeded(head, span, tail, future []briefd.Message) []string {
	need := newScorer(span, head, tail, future, "").need
	slices.Sort(need)
	return need
}
