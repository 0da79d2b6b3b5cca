package worker

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Pinger checks a dependency for /readyz (NATS connection, briefing store).
type Pinger interface {
	Ping(ctx context.Context) error
}

// PingerFunc adapts a function to Pinger.
type PingerFunc func(ctx context.Context) error

// Ping calls f(ctx).
func (f PingerFunc) Ping(ctx context.Context) error { return f(ctx) }

// Handler serves the operator endpoints:
//
//	/healthz  200 while the process runs
//	/readyz   200 when the worker consumes, its last health check of NATS and the store passed, its last
//	          pull succeeded and every extra dependency answers; 503 with the reason otherwise
//	/metrics  Prometheus metrics from gatherer
func Handler(w *Worker, gatherer prometheus.Gatherer, deps map[string]Pinger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, r *http.Request) {
		if err := w.Readiness(); err != nil {
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		for name, p := range deps {
			if err := p.Ping(ctx); err != nil {
				http.Error(rw, name+": "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		rw.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return mux
}
