package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/briefd/briefd/internal/compact"
)

// runHealthcheck probes a worker's readiness endpoint; container images
// without curl use it as their health check.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:9090/readyz", "endpoint to probe")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nusage: worker healthcheck [--url URL] [--timeout D]\n\nflags:\n", summaryHealthcheck)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return usageErrorf("--url: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", *url, resp.Status, body)
	}
	fmt.Fprintf(stdout, "%s", body)
	return nil
}

func runVersion(stdout io.Writer) error {
	_, err := fmt.Fprintf(stdout, "briefd engine %s\n", compact.EngineVersion)
	return err
}
