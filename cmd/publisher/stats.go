package main

import (
	"fmt"
	"slices"
	"time"
)

type quant struct {
	n             int
	p50, p99, max time.Duration
}

// quantiles returns nearest-rank quantiles of ds (sorted in place).
func quantiles(ds []time.Duration) quant {
	if len(ds) == 0 {
		return quant{}
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration {
		i := int(float64(len(ds))*p+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return quant{n: len(ds), p50: at(0.50), p99: at(0.99), max: ds[len(ds)-1]}
}

// fmtDur prints a duration with three significant digits in ms or µs.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}
