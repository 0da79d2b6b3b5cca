package worker

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the worker's Prometheus collectors. They are registered on a
// registry the caller owns (no global registry), so several workers can run
// in one process, as in tests and the demo.
type Metrics struct {
	Compactions    *prometheus.CounterVec   // by tier and outcome
	Duration       *prometheus.HistogramVec // compaction latency by tier
	TokensSaved    prometheus.Counter
	TokensIn       prometheus.Counter
	Redeliveries   prometheus.Counter
	Retries        prometheus.Counter
	Deferred       prometheus.Counter
	DeadLetters    prometheus.Counter
	Superseded     prometheus.Counter
	Rejected       prometheus.Counter
	InFlight       prometheus.Gauge
	LLMAttempts    *prometheus.CounterVec // by model and outcome
	LLMRejections  *prometheus.CounterVec // by model and gate rule
	LLMFallbacks   prometheus.Counter     // an LLM configured, the deterministic briefing kept
	Skipped        *prometheus.CounterVec // handled, not compacted, by reason
	PublishToStore prometheus.Histogram   // snapshot publish → briefing stored
}

// NewMetrics creates the collectors and registers them on reg, with lag
// reporting the consumer's pending count at scrape time and ready (if not
// nil) whether the worker is ready (briefd_worker_ready, 1 or 0).
func NewMetrics(reg prometheus.Registerer, lag func(context.Context) (uint64, error), ready ...func() bool) *Metrics {
	m := &Metrics{
		Compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "briefd", Name: "compactions_total",
			Help: "Snapshots handled, by tier (deterministic, llm:*; none when not compacted) and outcome (compacted, skipped, rejected, error).",
		}, []string{"tier", "outcome"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "briefd", Name: "compaction_duration_seconds",
			Help:    "Time to handle one snapshot: assemble, compact, store, audit.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"tier"}),
		TokensSaved: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "tokens_saved_total",
			Help: "Sum over compactions of tokens before minus tokens after.",
		}),
		TokensIn: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "tokens_compacted_total",
			Help: "Sum over compactions of the tokens of the compacted spans.",
		}),
		Redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "redeliveries_total",
			Help: "Snapshots received with a delivery count above 1.",
		}),
		Retries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "retries_total",
			Help: "Snapshots handed back with backoff after a transient error (store or NATS down, handler over time).",
		}),
		Deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "snapshots_deferred_total",
			Help: "Snapshots handed back because their tenant was at its cap while another tenant had work (not attempts).",
		}),
		DeadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "dead_letters_total",
			Help: "Snapshots given up on (rejected or out of attempts) and written to the dead-letter stream.",
		}),
		Superseded: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "snapshots_superseded_total",
			Help: "Snapshots acknowledged without work because a newer one of the same conversation was pending.",
		}),
		Rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "snapshots_rejected_total",
			Help: "Snapshots rejected as malformed or invalid.",
		}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "briefd", Name: "compactions_in_flight",
			Help: "Snapshots being handled now.",
		}),
		LLMAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "briefd", Name: "llm_attempts_total",
			Help: "Summarizer calls by model and outcome (accepted, error, rejected, skipped).",
		}, []string{"model", "outcome"}),
		LLMRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "briefd", Name: "llm_gate_rejections_total",
			Help: "Model replies the acceptance gate rejected, by model and by the rule they broke (a reply breaking two rules counts under both).",
		}, []string{"model", "rule"}),
		LLMFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "briefd", Name: "llm_fallbacks_total",
			Help: "Compactions for which an LLM tier was configured and the deterministic briefing was stored instead (every model failed, was rejected or out of time).",
		}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "briefd", Name: "snapshots_skipped_total",
			Help: "Snapshots handled and not compacted, by reason (below_trigger, nothing_to_compact, disabled).",
		}, []string{"reason"}),
		PublishToStore: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "briefd", Name: "publish_to_briefing_seconds",
			Help:    "Time from a snapshot's publication to its briefing being stored.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
	}
	reg.MustRegister(m.Compactions, m.Duration, m.TokensSaved, m.TokensIn, m.Redeliveries, m.Retries, m.Deferred, m.DeadLetters,
		m.Superseded, m.Rejected, m.InFlight, m.LLMAttempts, m.LLMRejections, m.LLMFallbacks, m.Skipped, m.PublishToStore)
	if lag != nil {
		reg.MustRegister(&lagCollector{lag: lag, desc: prometheus.NewDesc("briefd_consumer_pending",
			"Snapshots in the stream not yet delivered to any worker (consumer lag).", nil, nil)})
	}
	for _, r := range ready {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "briefd", Name: "worker_ready",
			Help: "1 while the worker consumes, NATS and its store answer and its last pull succeeded (what /readyz says), else 0.",
		}, func() float64 {
			if r() {
				return 1
			}
			return 0
		}))
	}
	return m
}

// lagCollector asks the consumer for its pending count at scrape time, so
// the figure is current and costs one request per scrape.
type lagCollector struct {
	lag  func(context.Context) (uint64, error)
	desc *prometheus.Desc
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := c.lag(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}
