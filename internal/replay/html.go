package replay

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Caps of the HTML report, so that a replay of every conversation stays a
// page a browser opens at once; the JSON report has everything.
const (
	maxTokenPlots = 24
	maxSavedRows  = 30
	maxTableRows  = 300
)

// WriteHTML writes the report as one self-contained HTML page: styles
// inline, plots drawn as inline SVG, no script and nothing fetched from
// the network, so it opens from a file anywhere.
func WriteHTML(w io.Writer, rep *Report) error {
	return page.Execute(w, newView(rep))
}

type card struct{ Label, Value, Note string }

type row struct {
	Conversation, Snapshot, Boundary, Tier, Tokens, Saved, Recall, Diff, Note string
	Changed                                                                   bool
}

type lineView struct{ Class, Text string }

type metric struct{ Label, Stored, Replayed string }

type shownCompaction struct {
	Title       string
	Open        bool
	Metrics     []metric
	Left, Right []lineView
	DiffNote    string
	Error       string
}

type shownView struct {
	Key         string
	Compactions []shownCompaction
}

type view struct {
	R              *Report
	Generated      string
	Cards          []card
	TokenPlots     []template.HTML
	MoreTokenPlots int
	Saved          template.HTML
	MoreSaved      int
	Tiers          template.HTML
	Gate           template.HTML
	Latency        template.HTML
	Shown          *shownView
	Rows           []row
	MoreRows       int
}

func pct(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func newView(rep *Report) *view {
	s := &rep.Summary
	v := &view{R: rep, Generated: rep.GeneratedAt.Format(time.RFC1123)}
	recall := func(ss SideSummary) string {
		if ss.RecallN == 0 {
			return "–"
		}
		return pct(ss.Recall)
	}
	v.Cards = []card{
		{"conversations", fmt.Sprint(s.Conversations), fmt.Sprintf("%d snapshots in the stream", s.Snapshots)},
		{"compactions", fmt.Sprint(s.Compactions), fmt.Sprintf("%d re-run, %d missing", s.Rerun, s.Missing)},
		{"same boundary", fmt.Sprintf("%d / %d", s.SameBoundary, s.Rerun), fmt.Sprintf("same input %d", s.SameInput)},
		{"tokens saved", human(float64(s.Stored.TokensSaved)) + " → " + human(float64(s.Replayed.TokensSaved)), "stored → re-run"},
		{"future recall", recall(s.Stored) + " → " + recall(s.Replayed),
			fmt.Sprintf("identifiers the future needed, kept; over %d compactions", max(s.Stored.RecallN, s.Replayed.RecallN))},
		{"fallbacks", fmt.Sprintf("%d → %d", s.Stored.Fallbacks, s.Replayed.Fallbacks), "deterministic kept although an LLM ran"},
		{"publish → briefing", fmtMS(s.LatencyP50), fmt.Sprintf("p50; p99 %s", fmtMS(s.LatencyP99))},
		{"not compacted", fmt.Sprint(sumMap(s.Skips)), skipNote(s)},
	}

	convs := make([]*Conversation, 0, len(rep.Conversations))
	for i := range rep.Conversations {
		convs = append(convs, &rep.Conversations[i])
	}
	byCompactions := slices.Clone(convs)
	sort.SliceStable(byCompactions, func(i, j int) bool {
		return len(byCompactions[i].Compactions) > len(byCompactions[j].Compactions)
	})
	for i, c := range byCompactions {
		if i == maxTokenPlots {
			v.MoreTokenPlots = len(byCompactions) - i
			break
		}
		v.TokenPlots = append(v.TokenPlots, tokensPlot(c))
	}

	var saved []barRow
	for _, c := range convs {
		var st, rp float64
		for _, cp := range c.Compactions {
			st += float64(cp.Stored.TokensBefore - cp.Stored.TokensAfter)
			if cp.Replayed != nil && cp.Replayed.BoundaryID != "" {
				rp += float64(cp.Replayed.TokensBefore - cp.Replayed.TokensAfter)
			}
		}
		if len(c.Compactions) > 0 {
			saved = append(saved, barRow{label: c.Key(), values: []float64{st, rp}})
		}
	}
	sort.SliceStable(saved, func(i, j int) bool { return saved[i].values[0] > saved[j].values[0] })
	if len(saved) > maxSavedRows {
		v.MoreSaved, saved = len(saved)-maxSavedRows, saved[:maxSavedRows]
	}
	v.Saved = barsPlot("tokens saved per conversation", saved, []string{"stored", "re-run"}, []string{colorStored, colorReplayed}, "")

	tiers := func(ss SideSummary) map[string]int {
		m := map[string]int{}
		for t, n := range ss.Tiers {
			if t == "" {
				t = "none"
			}
			m[t] += n
		}
		if ss.Fallbacks > 0 {
			m["deterministic"] -= ss.Fallbacks
			m["fallback (deterministic kept)"] += ss.Fallbacks
		}
		return m
	}
	v.Tiers = stackPlot("tier and fallback rates", []string{"stored", "re-run"}, []map[string]int{tiers(s.Stored), tiers(s.Replayed)})

	rules := map[string]bool{}
	for r := range s.Stored.GateRejections {
		rules[r] = true
	}
	for r := range s.Replayed.GateRejections {
		rules[r] = true
	}
	var gate []barRow
	for _, r := range sortedKeys(rules) {
		gate = append(gate, barRow{label: r, values: []float64{float64(s.Stored.GateRejections[r]), float64(s.Replayed.GateRejections[r])}})
	}
	if len(gate) == 0 {
		v.Gate = notePlot("gate rejections per rule", "No reply was rejected: no LLM tier ran in this range, or every reply passed the gate.")
	} else {
		v.Gate = barsPlot("gate rejections per rule", gate, []string{"stored", "re-run"}, []string{colorStored, colorReplayed}, "")
	}
	v.Latency = latencyPlot(s)

	for _, c := range convs {
		if c.Key() == rep.Shown {
			v.Shown = shown(c)
		}
		for _, cp := range c.Compactions {
			if len(v.Rows) == maxTableRows {
				v.MoreRows++
				continue
			}
			v.Rows = append(v.Rows, tableRow(c, &cp))
		}
	}
	return v
}

func skipNote(s *Summary) string {
	var parts []string
	for _, k := range sortedKeys(s.Skips) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Skips[k]))
	}
	if s.Rejected > 0 {
		parts = append(parts, fmt.Sprintf("rejected %d", s.Rejected))
	}
	if s.DeadLettered > 0 {
		parts = append(parts, fmt.Sprintf("dead-lettered %d", s.DeadLettered))
	}
	if len(parts) == 0 {
		return "every handled snapshot compacted"
	}
	return strings.Join(parts, ", ")
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tableRow(c *Conversation, cp *Compaction) row {
	r := row{Conversation: c.Key(), Snapshot: fmt.Sprint(cp.SnapshotSeq), Boundary: cp.Stored.BoundaryID, Tier: string(cp.Stored.Tier),
		Tokens: fmt.Sprintf("%d → %d", cp.Stored.TokensBefore, cp.Stored.TokensAfter),
		Saved:  human(float64(cp.Stored.TokensBefore - cp.Stored.TokensAfter)), Recall: pct(cp.Stored.Recall), Note: cp.Error}
	if rp := cp.Replayed; rp != nil && rp.BoundaryID != "" {
		if rp.BoundaryID != cp.Stored.BoundaryID {
			r.Boundary += " → " + rp.BoundaryID
			r.Changed = true
		}
		if rp.Tier != cp.Stored.Tier {
			r.Tier += " → " + string(rp.Tier)
			r.Changed = true
		}
		r.Saved += " → " + human(float64(rp.TokensBefore-rp.TokensAfter))
		r.Recall += " → " + pct(rp.Recall)
	}
	if d := cp.Diff; d != nil {
		r.Diff = fmt.Sprintf("+%d −%d", d.Added, d.Removed)
		r.Changed = r.Changed || d.Added+d.Removed > 0
	} else {
		r.Diff = "–"
	}
	return r
}

func shown(c *Conversation) *shownView {
	sv := &shownView{Key: c.Key()}
	first := true
	for _, cp := range c.Compactions {
		sc := shownCompaction{Title: fmt.Sprintf("snapshot %d, %s", cp.SnapshotSeq, cp.At.Format(time.RFC3339)), Error: cp.Error}
		rp := cp.Replayed
		if rp == nil {
			rp = &Side{Recall: -1}
		}
		gate := func(s *Side) string {
			if len(s.GateRejections) == 0 {
				return "–"
			}
			var parts []string
			for _, k := range sortedKeys(s.GateRejections) {
				parts = append(parts, fmt.Sprintf("%s %d", k, s.GateRejections[k]))
			}
			return strings.Join(parts, ", ")
		}
		st := &cp.Stored
		sc.Metrics = []metric{
			{"boundary", st.BoundaryID, rp.BoundaryID},
			{"tier", string(st.Tier) + model(st), string(rp.Tier) + model(rp)},
			{"tokens before → after", fmt.Sprintf("%d → %d", st.TokensBefore, st.TokensAfter), fmt.Sprintf("%d → %d", rp.TokensBefore, rp.TokensAfter)},
			{"briefing tokens", fmt.Sprint(st.BriefingTokens), fmt.Sprint(rp.BriefingTokens)},
			{"future recall", recallText(st, cp.Needed), recallText(rp, cp.Needed)},
			{"gate rejections", gate(st), gate(rp)},
			{"engine", cmp.Or(st.EngineVersion, "–"), cmp.Or(rp.EngineVersion, "–")},
		}
		switch {
		case len(cp.DiffLines) > 0:
			for _, l := range cp.DiffLines {
				switch l.Op {
				case DiffSame:
					sc.Left = append(sc.Left, lineView{"same", l.Text})
					sc.Right = append(sc.Right, lineView{"same", l.Text})
				case DiffRemoved:
					sc.Left = append(sc.Left, lineView{"removed", l.Text})
				case DiffAdded:
					sc.Right = append(sc.Right, lineView{"added", l.Text})
				}
			}
			sc.DiffNote = fmt.Sprintf("%d lines kept, %d only in the stored briefing, %d only in the re-run", cp.Diff.Same, cp.Diff.Removed, cp.Diff.Added)
		default:
			for _, l := range splitLines(st.Text) {
				sc.Left = append(sc.Left, lineView{"same", l})
			}
			for _, l := range splitLines(rp.Text) {
				sc.Right = append(sc.Right, lineView{"same", l})
			}
			if !st.HasText {
				sc.DiffNote = "the store no longer holds the stored briefing's text (expired or trimmed): tokens and tier come from the audit event"
			}
		}
		if first && (len(sc.Left) > 0 || len(sc.Right) > 0) {
			sc.Open, first = true, false
		}
		sv.Compactions = append(sv.Compactions, sc)
	}
	return sv
}

func model(s *Side) string {
	if s.Model == "" {
		return ""
	}
	return " (" + s.Model + " " + s.PromptVersion + ")"
}

func recallText(s *Side, needed []string) string {
	switch {
	case needed == nil:
		return "– (no later snapshot in the stream)"
	case len(needed) == 0:
		return "– (the future needed no identifier of the span)"
	case s.Recall < 0:
		return "– (text unknown)"
	}
	text := fmt.Sprintf("%s of %d", pct(s.Recall), len(needed))
	if len(s.Missed) > 0 {
		text += "; missed " + strings.Join(s.Missed[:min(len(s.Missed), 8)], ", ")
		if len(s.Missed) > 8 {
			text += ", …"
		}
	}
	return text
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>briefd replay report</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; margin: 0; background: #f9fafb; }
main { max-width: 1280px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 34px 0 8px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; }
p.meta, p.note { color: #4b5563; font-size: 13px; margin: 4px 0; }
.cards { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; margin-top: 16px; }
.card { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 10px 14px; }
.card .label { font-size: 12px; color: #6b7280; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 22px; font-weight: 600; margin: 2px 0; }
.card .note { font-size: 12px; color: #6b7280; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 10px; }
.panel { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 8px; overflow-x: auto; }
svg.plot { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; font-size: 12px; background: #fff; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; }
tr.changed td { background: #fff7ed; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
pre.brief { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11.5px; line-height: 1.35; white-space: pre-wrap; word-break: break-word; margin: 0; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px; max-height: 720px; overflow-y: auto; }
pre.brief span { display: block; }
pre.brief .removed { background: #fee2e2; }
pre.brief .added { background: #dcfce7; }
details { margin: 10px 0; }
summary { cursor: pointer; font-weight: 600; font-size: 14px; }
.legend { font-size: 12px; color: #4b5563; }
.err { color: #b91c1c; font-size: 12px; }
</style>
</head>
<body>
<main>
<h1>briefd replay report</h1>
<p class="meta">{{.R.Filter}} · re-run with {{.R.Replay}} · generated {{.Generated}}</p>

<section id="summary">
<div class="cards">
{{range .Cards}}<div class="card"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div><div class="note">{{.Note}}</div></div>
{{end}}</div>
</section>

<section id="tokens-over-turns">
<h2>Tokens over turns, compactions marked</h2>
<p class="note">Blue: the history's tokens at each snapshot in the stream. Red: a stored compaction, from the tokens before it down to the tokens after. Dashed: the trigger the workers reported.</p>
<div class="grid">
{{range .TokenPlots}}<div class="panel">{{.}}</div>
{{end}}</div>
{{if .MoreTokenPlots}}<p class="note">{{.MoreTokenPlots}} more conversations in the JSON report.</p>{{end}}
</section>

<section id="tokens-saved">
<h2>Tokens saved, stored and re-run</h2>
<div class="panel">{{.Saved}}</div>
{{if .MoreSaved}}<p class="note">{{.MoreSaved}} more conversations in the JSON report.</p>{{end}}
</section>

<section id="tiers">
<h2>Tier and fallback rates</h2>
<div class="panel">{{.Tiers}}</div>
</section>

<section id="gate">
<h2>Gate rejections per rule</h2>
<p class="note">Replies of the LLM tier that the acceptance gate rejected, by the rule that failed (stored: from the audit events; re-run: this replay's cascade).</p>
<div class="panel">{{.Gate}}</div>
</section>

<section id="latency">
<h2>Publish to briefing latency</h2>
<div class="panel">{{.Latency}}</div>
</section>

<section id="before-after">
<h2>Before and after{{if .Shown}}: {{.Shown.Key}}{{end}}</h2>
{{if .Shown}}<p class="legend">Left: the stored briefing (red: lines the re-run dropped). Right: the re-run (green: lines it added).</p>
{{range .Shown.Compactions}}<details{{if .Open}} open="open"{{end}}>
<summary>{{.Title}}</summary>
{{if .Error}}<p class="err">{{.Error}}</p>{{end}}
<table class="metrics"><tr><th></th><th>stored</th><th>re-run</th></tr>
{{range .Metrics}}<tr><td>{{.Label}}</td><td>{{.Stored}}</td><td>{{.Replayed}}</td></tr>
{{end}}</table>
{{if .DiffNote}}<p class="note">{{.DiffNote}}</p>{{end}}
<div class="sides">
<pre class="brief stored">{{range .Left}}<span class="{{.Class}}">{{.Text}}</span>{{end}}</pre>
<pre class="brief replayed">{{range .Right}}<span class="{{.Class}}">{{.Text}}</span>{{end}}</pre>
</div>
</details>
{{end}}{{else}}<p class="note">No compaction to show.</p>{{end}}
</section>

<section id="compactions">
<h2>Every compaction</h2>
<table>
<tr><th>conversation</th><th>snapshot</th><th>boundary</th><th>tier</th><th>tokens</th><th>saved</th><th>future recall</th><th>diff</th><th>note</th></tr>
{{range .Rows}}<tr{{if .Changed}} class="changed"{{end}}><td>{{.Conversation}}</td><td>{{.Snapshot}}</td><td>{{.Boundary}}</td><td>{{.Tier}}</td><td>{{.Tokens}}</td><td>{{.Saved}}</td><td>{{.Recall}}</td><td>{{.Diff}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
{{if .MoreRows}}<p class="note">{{.MoreRows}} more compactions in the JSON report.</p>{{end}}
</section>
</main>
</body>
</html>
`))
