package eval

import (
	"fmt"
	"math/big"
	"sort"
)

// Stat is the mean and median of one metric over the conversations that
// have it (Python's None left out), as summarize() prints it.
type Stat struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	N      int     `json:"n"`
}

// String mirrors summarize(rows, key):
//
//	vals = [r[key] for r in rows if r.get(key) is not None]
//	if not vals: return "n/a"
//	return f"mean {statistics.mean(vals):.3f} median {statistics.median(vals):.3f} (n={len(vals)})"
func (s Stat) String() string {
	if s.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("mean %.3f median %.3f (n=%d)", s.Mean, s.Median, s.N)
}

// stat computes Stat over vals.
func stat(vals []float64) Stat {
	return Stat{Mean: mean(vals), Median: median(vals), N: len(vals)}
}

// mean is statistics.mean: the exact sum of the values (as fractions)
// divided by their number, rounded once to the nearest float64, so that it
// prints the same digits as the Python.
func mean(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	sum := new(big.Rat)
	for _, v := range vals {
		sum.Add(sum, new(big.Rat).SetFloat64(v))
	}
	sum.Quo(sum, new(big.Rat).SetInt64(int64(len(vals))))
	f, _ := sum.Float64()
	return f
}

// median is statistics.median: the middle value, or the mean of the two
// middle ones computed as (a + b) / 2 in floating point.
func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// optional reads a metric that a row may lack (the yardsticks' None).
func optional(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// Metrics lists the metrics of eval_quality.py's summary, in its order.
var Metrics = []string{"future_recall", "future_recall_named", "span_survival", "user_coverage", "fabricated", "ratio"}

// metric returns a Score's value of a metric named as in Metrics, and
// whether it has one.
func (s Score) metric(name string) (float64, bool) {
	switch name {
	case "future_recall":
		return optional(s.FutureRecall)
	case "future_recall_named":
		return optional(s.FutureRecallNamed)
	case "span_survival":
		return optional(s.SpanSurvival)
	case "user_coverage":
		return optional(s.UserCoverage)
	case "fabricated":
		return float64(s.Fabricated), true
	case "ratio":
		return s.Ratio, true
	}
	panic("eval: unknown metric " + name)
}

// Summary is one method's summary: a Stat per metric, and the tool pairs.
type Summary struct {
	Stats map[string]Stat `json:"stats"`
	// PairsOK and PairsN count the spliced histories with every tool call
	// paired, of those measured (the compactor's rows only).
	PairsOK int `json:"pairs_ok"`
	PairsN  int `json:"pairs_n"`
}

// Summarize returns the summary of a method's rows.
func Summarize(rows []Score) Summary {
	s := Summary{Stats: map[string]Stat{}}
	for _, k := range Metrics {
		var vals []float64
		for _, r := range rows {
			if v, ok := r.metric(k); ok {
				vals = append(vals, v)
			}
		}
		s.Stats[k] = stat(vals)
	}
	for _, r := range rows {
		if r.PairsOK != nil {
			s.PairsN++
			if *r.PairsOK {
				s.PairsOK++
			}
		}
	}
	return s
}
