package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/envflag"
	"github.com/briefd/briefd/internal/worker"
)

// runRebuild recomputes the latest briefing of every conversation from the
// newest snapshot in the stream, after a store lost its data. It prints a
// JSON report and fails when a conversation could not be rebuilt.
func runRebuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.bind(fs)
	tenant := fs.String("tenant", "", "rebuild only this tenant's conversations")
	parallel := fs.Int("parallel", 4, "conversations rebuilt at once")
	var engineCfg compact.Config
	bindEngineFlags(fs, &engineCfg)
	llm := bindLLMFlags(fs)
	fs.Usage = envflag.Usage(fs, "BRIEFD_", summaryRebuild, "worker rebuild [--tenant T] [service, engine and llm flags]")
	if err := envflag.Parse(fs, args, "BRIEFD_", nil); err != nil {
		return err
	}
	logger, summarizer, err := f.logging(stderr, llm)
	if err != nil {
		return err
	}
	nc, err := connectNATS(&f, logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	// Briefings are written, but the bucket's settings are the service's.
	store, closeStore, err := openStore(ctx, &f, js, false)
	if err != nil {
		return err
	}
	defer closeStore()
	w, err := worker.New(js, store, worker.Config{Queue: f.queue, Engine: engineCfg, Summarizer: summarizer, Logger: logger})
	if err != nil {
		return err
	}
	rep, err := w.Rebuild(ctx, *tenant, *parallel)
	if werr := writeJSON(stdout, rep); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if rep.Failed > 0 {
		return fmt.Errorf("%d conversations not rebuilt (run again)", rep.Failed)
	}
	return nil
}
