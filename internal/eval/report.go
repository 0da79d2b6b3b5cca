package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// MarshalJSON writes the report in the shape of eval_quality.py's --json
// file (one key per method, each a list of rows) plus the keys frac,
// files, conversations and failures.
func (r *Report) MarshalJSON() ([]byte, error) {
	out := map[string]any{"frac": r.Frac, "files": r.Files, "conversations": r.Conversations, "failures": r.Failures}
	for _, m := range Methods {
		rows := r.Rows[m]
		if rows == nil {
			rows = []Score{}
		}
		out[m] = rows
	}
	return json.Marshal(out)
}

// Summaries returns each method's summary.
func (r *Report) Summaries() map[string]Summary {
	s := map[string]Summary{}
	for _, m := range Methods {
		s[m] = Summarize(r.Rows[m])
	}
	return s
}

func f3(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}

// WriteTable prints a row per compacted conversation, then the summary as
// eval_quality.py prints it, then the targets.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\tmsgs\tcut\twindow\tspan msgs\tspan chars\tbrief chars\tratio\tneed\trecall\tnamed\tsurvival\tusers\tfabricated\tpairs\tnamed: headtail\trecency\t")
	ours := r.Rows[MethodOurs]
	for i, c := range r.Conversations {
		o := ours[i]
		pairs := "-"
		if o.PairsOK != nil {
			pairs = map[bool]string{true: "ok", false: "BROKEN"}[*o.PairsOK]
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n",
			c.ID, c.Messages, c.Cut, c.Window, c.SpanMessages, o.SpanChars, c.BriefingChars, o.Ratio, o.Need,
			f3(o.FutureRecall), f3(o.FutureRecallNamed), f3(o.SpanSurvival), f3(o.UserCoverage), o.Fabricated, pairs,
			f3(r.Rows[MethodHeadTail][i].FutureRecallNamed), f3(r.Rows[MethodRecency][i].FutureRecallNamed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	sums := r.Summaries()
	for _, m := range Methods {
		if len(r.Rows[m]) == 0 {
			continue
		}
		s := sums[m]
		fmt.Fprintf(w, "== %s\n", m)
		for _, k := range Metrics {
			fmt.Fprintf(w, "  %s: %s\n", k, s.Stats[k])
		}
		if s.PairsN > 0 {
			fmt.Fprintf(w, "  pairs_ok: %d/%d\n", s.PairsOK, s.PairsN)
		}
	}
	fmt.Fprintf(w, "conversations: %d, compactor failures: %d\n", r.Files, len(r.Failures))
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  FAIL %s %s\n", f.ID, f.Reason)
	}
	if len(ours) > 0 {
		writeTargets(w, sums)
	}
	return nil
}

// writeTargets prints the figures issue 8 sets targets for ("Done when").
func writeTargets(w io.Writer, sums map[string]Summary) {
	o, rec := sums[MethodOurs].Stats, sums[MethodRecency].Stats
	mark := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	named, ratio := o["future_recall_named"], o["ratio"]
	recNamed := rec["future_recall_named"]
	times := "n/a"
	if recNamed.N > 0 && recNamed.Mean > 0 {
		times = fmt.Sprintf("%.2fx", named.Mean/recNamed.Mean)
	}
	users, fab := o["user_coverage"], o["fabricated"]
	p := sums[MethodOurs]
	fmt.Fprintf(w, `
Targets (issue 8):
  named future recall mean    %.3f  (>= 0.90)   %s
  size ratio median           %.3f  (<= 0.10)   %s
  vs recency at equal size    %.3f vs %.3f = %s  (>= 2x)   %s
  user messages verbatim      mean %.3f  (all)   %s
  fabricated identifiers      %.0f  (0)   %s
  broken tool pairs           %d  (0)   %s
`, named.Mean, mark(named.N > 0 && named.Mean >= 0.90),
		ratio.Median, mark(ratio.Median <= 0.10),
		named.Mean, recNamed.Mean, times, mark(named.Mean >= 2*recNamed.Mean && named.N > 0),
		users.Mean, mark(users.N == 0 || users.Mean == 1),
		fab.Mean*float64(fab.N), mark(fab.Mean == 0),
		p.PairsN-p.PairsOK, mark(p.PairsN == p.PairsOK))
}

// ChainMetrics lists the metrics of eval_chain.py's summary, in its order.
var ChainMetrics = []string{"cycles", "size", "recall", "recency_recall", "first_recall", "recency_first_recall"}

func (r ChainRow) metric(name string) (float64, bool) {
	switch name {
	case "cycles":
		return float64(r.Cycles), true
	case "size":
		return r.Size, true
	case "recall":
		return optional(r.Recall)
	case "recency_recall":
		return optional(r.RecencyRecall)
	case "first_recall":
		return optional(r.FirstRecall)
	case "recency_first_recall":
		return optional(r.RecencyFirstRecall)
	}
	panic("eval: unknown chain metric " + name)
}

// Stats returns a Stat per metric of ChainMetrics.
func (r *ChainReport) Stats() map[string]Stat {
	out := map[string]Stat{}
	for _, k := range ChainMetrics {
		var vals []float64
		for _, row := range r.Rows {
			if v, ok := row.metric(k); ok {
				vals = append(vals, v)
			}
		}
		out[k] = stat(vals)
	}
	return out
}

// WriteTable prints a row per replayed conversation, then the summary as
// eval_chain.py prints it, then the target.
func (r *ChainReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\tmsgs\tcut\twindow\tcycles\tsize\tneed\trecall\trecency\tneed first\tfirst recall\trecency\tpairs\t")
	for _, c := range r.Rows {
		pairs := map[bool]string{true: "ok", false: "BROKEN"}[c.PairsOK]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t\n",
			c.ID, c.Messages, c.Cut, c.Window, c.Cycles, c.Size, c.Need, f3(c.Recall), f3(c.RecencyRecall),
			c.NeedFirst, f3(c.FirstRecall), f3(c.RecencyFirstRecall), pairs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	st := r.Stats()
	for _, k := range ChainMetrics {
		fmt.Fprintf(w, "  %s: %s\n", k, st[k])
	}
	ok := 0
	for _, c := range r.Rows {
		if c.PairsOK {
			ok++
		}
	}
	fmt.Fprintf(w, "  pairs_ok: %d/%d\n", ok, len(r.Rows))
	fmt.Fprintf(w, "conversations: %d, failures: %d (%d of %d files shorter than %d messages skipped)\n",
		len(r.Rows), len(r.Failures), r.Skipped, r.Files, r.MinMessages)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  FAIL %s %s\n", f.ID, f.Reason)
	}
	if first := st["first_recall"]; first.N > 0 {
		mark := "MISSED"
		if first.Mean >= 0.90 {
			mark = "ok"
		}
		fmt.Fprintf(w, "\nTarget (issue 8): oldest third kept, first_recall mean %.3f (>= 0.90)   %s\n", first.Mean, mark)
	}
	return nil
}
