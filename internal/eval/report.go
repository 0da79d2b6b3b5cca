package eval

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints the per-conversation table and the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\tmsgs\tfrozen\tspan msgs\tspan tok\tbrief tok\tratio\tfuture ids\trecall\tsurvival\tusers\tfabricated\tpairs\ttrunc recall\tmiddle recall\t")
	var skipped []Conversation
	for _, c := range r.Conversations {
		if !c.Compacted {
			skipped = append(skipped, c)
			continue
		}
		pairs := "ok"
		if !c.ToolPairsIntact {
			pairs = "BROKEN"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%d\t%.3f\t%.3f\t%d/%d\t%d\t%s\t%.3f\t%.3f\t\n",
			c.ID, c.Messages, c.Frozen, c.SpanMessages, c.SpanTokens, c.BriefingTokens, c.Ratio,
			c.FutureIdentifiers, c.FutureRecall, c.SpanSurvival, c.UserVerbatim, c.UserMessages,
			len(c.Fabricated), pairs, c.TailRecall, c.MiddleRecall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "\nNot compacted (%d):\n", len(skipped))
		for _, c := range skipped {
			fmt.Fprintf(w, "  %s (%d messages, frozen at %d): %s\n", c.ID, c.Messages, c.Frozen, c.Reason)
		}
	}
	s := r.Summary
	_, err := fmt.Fprintf(w, `
Summary (freeze at %.0f%% of each conversation; %d of %d compacted)
  identifier future recall   median %.3f  mean %.3f  pooled %.3f   (target >= 0.98)
  same, bare numbers excluded median %.3f  mean %.3f  pooled %.3f   (sizes, line numbers, years left out)
  span identifier survival   median %.3f
  size ratio briefing/span   median %.3f  mean %.3f               (target median <= 0.10)
  user messages verbatim     %d of %d (%d shortened with a marker)  (target all)
  fabricated identifiers     %d                                    (target 0)
  tool pairs intact          %.0f%%                                  (target 100%%)
  baselines, same size: plain truncation recall median %.3f; middle truncation recall median %.3f
`, r.At*100, s.Compacted, s.Conversations, s.MedianFutureRecall, s.MeanFutureRecall, s.PooledFutureRecall,
		s.MedianNamedRecall, s.MeanNamedRecall, s.PooledNamedRecall, s.MedianSpanSurvival, s.MedianRatio, s.MeanRatio, s.UserVerbatim, s.UserMessages, s.UserShortened,
		s.Fabricated, s.ToolPairsIntact*100, s.MedianTailRecall, s.MedianMiddleRecall)
	return err
}
