package cascade

import (
	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/compact"
)

// The glue between the corpus replay and this version of the cascade;
// testdata/corpus/baseline holds the glue for 8a1d3ba.

// enforceCorpusTargets makes TestCorpus fail below the targets.
const enforceCorpusTargets = true

func withPinned(in *compact.SummaryInput, pinned []briefd.Message) { in.Pinned = pinned }

// newDraft is the corpus draft as this version's SummaryInput takes it.
func newDraft(d corpusDraft) *brief.Draft {
	return &brief.Draft{Text: d.Text, Structured: d.Structured, Depth: d.Depth, BudgetTokens: d.BudgetTokens}
}

// adaptReply returns the reply as this version's prompt asks for it.
func adaptReply(text string) string { return text }

// attemptRules returns the rules a gated attempt failed and its rejection.
func attemptRules(a compact.Attempt) ([]string, string) {
	var rules []string
	for _, v := range a.Verdicts {
		if !v.Passed {
			rules = append(rules, v.Rule)
		}
	}
	return rules, a.Error
}
