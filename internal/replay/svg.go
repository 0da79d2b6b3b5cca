package replay

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strings"
)

// The report's palette: stored briefings in blue, re-runs in orange,
// compactions in red.
const (
	colorStored   = "#4e79a7"
	colorReplayed = "#f28e2b"
	colorCompact  = "#e15759"
	colorGrid     = "#e5e7eb"
	colorAxis     = "#6b7280"
	colorText     = "#111827"
)

// svg builds one inline SVG drawing. Every text it writes is escaped, so
// ids and briefing text from the stream cannot inject markup.
type svg struct {
	b    strings.Builder
	w, h float64
}

func newSVG(w, h float64, label string) *svg {
	s := &svg{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg class="plot" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s" font-family="system-ui, sans-serif">`,
		w, h, w, h, html.EscapeString(label))
	return s
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`, x1, y1, x2, y2, stroke, width, d)
}

func (s *svg) rect(x, y, w, h float64, fill, title string) {
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">`, x, y, math.Max(w, 0), math.Max(h, 0), fill)
	if title != "" {
		fmt.Fprintf(&s.b, `<title>%s</title>`, html.EscapeString(title))
	}
	s.b.WriteString(`</rect>`)
}

func (s *svg) circle(cx, cy, r float64, fill, title string) {
	fmt.Fprintf(&s.b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s">`, cx, cy, r, fill)
	if title != "" {
		fmt.Fprintf(&s.b, `<title>%s</title>`, html.EscapeString(title))
	}
	s.b.WriteString(`</circle>`)
}

// text writes t at (x, y); anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor string, size float64, fill, t string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%g" fill="%s">%s</text>`, x, y, anchor, size, fill, html.EscapeString(t))
}

func (s *svg) polyline(xs, ys []float64, stroke string, width float64) {
	if len(xs) == 0 {
		return
	}
	var pts strings.Builder
	for i := range xs {
		fmt.Fprintf(&pts, "%.1f,%.1f ", xs[i], ys[i])
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round"/>`,
		strings.TrimSpace(pts.String()), stroke, width)
}

func (s *svg) html() template.HTML {
	s.b.WriteString(`</svg>`)
	// Safe: every attribute value and text above is a number, a constant
	// or escaped.
	return template.HTML(s.b.String()) //nolint:gosec
}

// niceTicks returns 3-6 round tick values from 0 to at least max.
func niceTicks(maxV float64) []float64 {
	if maxV <= 0 {
		return []float64{0, 1}
	}
	raw := maxV / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := 0.0; v < maxV+step; v += step {
		ticks = append(ticks, v)
		if v >= maxV {
			break
		}
	}
	return ticks
}

// human formats a count compactly: 950, 12.3k, 4.1M.
func human(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e4:
		return trimZero(fmt.Sprintf("%.0f", v/1e3)) + "k"
	case a >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	default:
		return trimZero(fmt.Sprintf("%.1f", v))
	}
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// tokensPlot draws a conversation's tokens per snapshot (turn), the
// trigger when known, and each compaction: a red mark at the tokens
// before it and a drop to the tokens after.
func tokensPlot(c *Conversation) template.HTML {
	const w, h, left, right, top, bottom = 420.0, 200.0, 46.0, 12.0, 24.0, 28.0
	s := newSVG(w, h, "tokens over turns of "+c.Key())
	s.text(left, 14, "start", 12, colorText, clipLabel(c.Key(), 48))
	if len(c.Turns) == 0 {
		s.text(w/2, h/2, "middle", 12, colorAxis, "its snapshots are no longer in the stream")
		return s.html()
	}
	maxT := float64(c.TriggerTokens)
	for _, t := range c.Turns {
		maxT = math.Max(maxT, float64(t.Tokens))
	}
	for _, cp := range c.Compactions {
		maxT = math.Max(maxT, float64(cp.Stored.TokensBefore))
	}
	ticks := niceTicks(maxT)
	top2 := ticks[len(ticks)-1]
	pw, ph := w-left-right, h-top-bottom
	xAt := func(i int) float64 {
		if len(c.Turns) == 1 {
			return left + pw/2
		}
		return left + pw*float64(i)/float64(len(c.Turns)-1)
	}
	yAt := func(v float64) float64 { return top + ph*(1-v/top2) }
	for _, tv := range ticks {
		y := yAt(tv)
		s.line(left, y, w-right, y, colorGrid, 1, "")
		s.text(left-4, y+4, "end", 10, colorAxis, human(tv))
	}
	s.line(left, top+ph, w-right, top+ph, colorAxis, 1, "")
	s.text(left+pw/2, h-6, "middle", 10, colorAxis, fmt.Sprintf("turn (snapshot), %d in the stream", len(c.Turns)))
	if c.TriggerTokens > 0 && float64(c.TriggerTokens) <= top2 {
		y := yAt(float64(c.TriggerTokens))
		s.line(left, y, w-right, y, colorAxis, 1, "4 3")
		s.text(w-right, y-3, "end", 9, colorAxis, "trigger "+human(float64(c.TriggerTokens)))
	}
	xs, ys := make([]float64, len(c.Turns)), make([]float64, len(c.Turns))
	for i, t := range c.Turns {
		xs[i], ys[i] = xAt(i), yAt(float64(t.Tokens))
	}
	s.polyline(xs, ys, colorStored, 1.8)
	for _, cp := range c.Compactions {
		if cp.Turn < 0 {
			continue
		}
		x := xAt(cp.Turn)
		yb, ya := yAt(float64(cp.Stored.TokensBefore)), yAt(float64(cp.Stored.TokensAfter))
		s.line(x, yb, x, ya, colorCompact, 1.5, "")
		title := fmt.Sprintf("compaction at %s: %d -> %d tokens (%s)", cp.Stored.BoundaryID, cp.Stored.TokensBefore, cp.Stored.TokensAfter, cp.Stored.Tier)
		s.circle(x, yb, 3.5, colorCompact, title)
		s.circle(x, ya, 2.5, colorCompact, title)
	}
	return s.html()
}

// barRow is one row of a horizontal grouped bar chart.
type barRow struct {
	label  string
	values []float64
}

// barsPlot draws rows of horizontal bars, one bar per series.
func barsPlot(label string, rows []barRow, series []string, colors []string, unit string) template.HTML {
	const w, left, right, barH, gap = 900.0, 230.0, 70.0, 11.0, 8.0
	rowH := float64(len(series))*barH + gap
	h := 34 + rowH*float64(len(rows)) + 24
	s := newSVG(w, h, label)
	for i, name := range series {
		x := left + float64(i)*150
		s.rect(x, 8, 12, 12, colors[i], "")
		s.text(x+16, 18, "start", 11, colorText, name)
	}
	maxV := 0.0
	for _, r := range rows {
		for _, v := range r.values {
			maxV = math.Max(maxV, v)
		}
	}
	ticks := niceTicks(maxV)
	top := ticks[len(ticks)-1]
	pw := w - left - right
	y0 := 30.0
	for _, tv := range ticks {
		x := left + pw*tv/top
		s.line(x, y0, x, h-22, colorGrid, 1, "")
		s.text(x, h-8, "middle", 10, colorAxis, human(tv)+unit)
	}
	for i, r := range rows {
		y := y0 + float64(i)*rowH + gap/2
		s.text(left-8, y+float64(len(series))*barH/2+4, "end", 11, colorText, clipLabel(r.label, 34))
		for j, v := range r.values {
			bw := 0.0
			if top > 0 {
				bw = pw * v / top
			}
			s.rect(left, y+float64(j)*barH, bw, barH-1, colors[j], fmt.Sprintf("%s, %s: %s%s", r.label, series[j], human(v), unit))
			s.text(left+bw+4, y+float64(j)*barH+barH-2, "start", 9, colorAxis, human(v))
		}
	}
	return s.html()
}

// stackPlot draws one 100% stacked bar per side, segments by category.
func stackPlot(label string, sides []string, counts []map[string]int) template.HTML {
	cats := map[string]bool{}
	for _, m := range counts {
		for k := range m {
			cats[k] = true
		}
	}
	names := make([]string, 0, len(cats))
	for k := range cats {
		names = append(names, k)
	}
	sort.Strings(names)
	palette := []string{"#59a14f", "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"}
	color := func(i int) string { return palette[i%len(palette)] }
	const w, left, right, barH = 900.0, 120.0, 20.0, 26.0
	h := 40 + float64(len(sides))*(barH+14) + 30
	s := newSVG(w, h, label)
	pw := w - left - right
	for i, side := range sides {
		y := 12 + float64(i)*(barH+14)
		s.text(left-8, y+barH/2+4, "end", 12, colorText, side)
		total := 0
		for _, n := range counts[i] {
			total += n
		}
		if total == 0 {
			s.rect(left, y, pw, barH, colorGrid, "")
			s.text(left+pw/2, y+barH/2+4, "middle", 11, colorAxis, "none")
			continue
		}
		x := left
		for j, name := range names {
			n := counts[i][name]
			if n == 0 {
				continue
			}
			bw := pw * float64(n) / float64(total)
			s.rect(x, y, bw, barH, color(j), fmt.Sprintf("%s: %s %d of %d", side, name, n, total))
			if bw > 60 {
				s.text(x+bw/2, y+barH/2+4, "middle", 11, "#ffffff", fmt.Sprintf("%s %.0f%%", name, 100*float64(n)/float64(total)))
			}
			x += bw
		}
	}
	ly := h - 16
	for j, name := range names {
		x := left + float64(j)*170
		s.rect(x, ly-10, 12, 12, color(j), "")
		s.text(x+16, ly, "start", 11, colorText, name)
	}
	return s.html()
}

// notePlot is a plot with nothing to draw but a sentence.
func notePlot(label, note string) template.HTML {
	s := newSVG(900, 60, label)
	s.text(450, 34, "middle", 13, colorAxis, note)
	return s.html()
}

// latencyEdges are the histogram's bucket upper bounds in milliseconds.
var latencyEdges = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, math.Inf(1)}

func fmtMS(ms float64) string {
	switch {
	case math.IsInf(ms, 1):
		return "more"
	case ms >= 1000:
		return trimZero(fmt.Sprintf("%.1f", ms/1000)) + " s"
	default:
		return trimZero(fmt.Sprintf("%.1f", ms)) + " ms"
	}
}

// latencyPlot draws a histogram of publish-to-briefing latencies on
// log-spaced buckets.
func latencyPlot(sum *Summary) template.HTML {
	const w, h, left, right, top, bottom = 900.0, 230.0, 50.0, 20.0, 30.0, 40.0
	s := newSVG(w, h, "publish to briefing latency")
	counts := make([]int, len(latencyEdges))
	for _, v := range sum.LatencyMS {
		for i, e := range latencyEdges {
			if v <= e {
				counts[i]++
				break
			}
		}
	}
	maxC := 0
	for _, c := range counts {
		maxC = max(maxC, c)
	}
	s.text(left, 16, "start", 12, colorText, fmt.Sprintf("%d compactions: p50 %s, p90 %s, p99 %s",
		len(sum.LatencyMS), fmtMS(sum.LatencyP50), fmtMS(sum.LatencyP90), fmtMS(sum.LatencyP99)))
	if maxC == 0 {
		s.text(w/2, h/2, "middle", 12, colorAxis, "no latency recorded")
		return s.html()
	}
	ticks := niceTicks(float64(maxC))
	topV := ticks[len(ticks)-1]
	pw, ph := w-left-right, h-top-bottom
	bw := pw / float64(len(counts))
	for _, tv := range ticks {
		y := top + ph*(1-tv/topV)
		s.line(left, y, w-right, y, colorGrid, 1, "")
		s.text(left-4, y+4, "end", 10, colorAxis, human(tv))
	}
	for i, c := range counts {
		x := left + float64(i)*bw
		bh := ph * float64(c) / topV
		lo := 0.0
		if i > 0 {
			lo = latencyEdges[i-1]
		}
		s.rect(x+2, top+ph-bh, bw-4, bh, colorStored, fmt.Sprintf("%d compactions between %s and %s", c, fmtMS(lo), fmtMS(latencyEdges[i])))
		s.text(x+bw/2, h-bottom+14, "middle", 9, colorAxis, "≤"+fmtMS(latencyEdges[i]))
	}
	s.text(left+pw/2, h-6, "middle", 10, colorAxis, "snapshot stored → briefing stored")
	return s.html()
}

func clipLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
