package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/briefd/briefd/internal/eval"
)

// runEval is `worker eval [--json] [--at 0.7] [--context-window N] [--model M] DIR`:
// the quality report of the briefing over a folder of histories.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	at := fs.Float64("at", 0.7, "freeze each conversation at this fraction of its messages")
	window := fs.Int("context-window", 0, "engine context window in tokens (0: the frozen history's tokens, so the kept tail is 20% of it)")
	model := fs.String("model", "gpt-4o", "model whose encoding counts tokens")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: worker eval [--json] [--at 0.7] [--context-window N] [--model M] DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("%w: want one DIR of histories", errUsage)
	}
	files, err := eval.Files(fs.Arg(0))
	if err != nil {
		return err
	}
	rep, err := eval.Run(ctx, files, eval.Options{At: *at, ContextWindow: *window, Model: *model})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(stdout)
}
