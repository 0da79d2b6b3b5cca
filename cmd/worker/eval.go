package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/envflag"
	"github.com/briefd/briefd/internal/eval"
	"github.com/briefd/briefd/internal/progress"
)

const evalSynopsis = `worker eval [flags] DIR...                      identifier recall at equal size (eval_quality.py)
       worker eval --chain [flags] DIR...              chained compaction (eval_chain.py)
       worker eval --probes DIR --histories DIR --out DIR   reader packets of the probe set
       worker eval --round DIR [--readers N --graders N --graders-per-conversation N]
                                                       hand a round's packets to reader and grader agents
       worker eval --grade GRADES.json|DIR             the graders' verdicts, aggregated`

// runEval is `worker eval`: the project's quality yardsticks with the
// engine in process, and the probe set's packets and grades (see
// docs/probes.md).
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	frac := fs.Float64("frac", 0.7, "freeze each conversation at cut_index(messages, frac)")
	jsonOut := fs.String("json", "", "also write the per-conversation rows (with --probes the manifest, with --grade the aggregate) to this file")
	chain := fs.Bool("chain", false, "replay each conversation message by message in a small window (eval_chain.py)")
	cycles := fs.Int("cycles", 4, "chain: window = max(2000, prefix tokens / cycles)")
	minMessages := fs.Int("chain-min-messages", 60, "chain: skip conversations with fewer messages (eval_chain.py --min-messages)")
	noForce := fs.Bool("no-force", false, "chain: compact only when the trigger fires (--compactor 'worker compact' without --force)")
	probes := fs.String("probes", "", "write reader packets for the probe files of this directory")
	histories := fs.String("histories", "", "probes: the directory of the histories the probes were written for")
	out := fs.String("out", "", "probes: the directory to write the packets to")
	grade := fs.String("grade", "", "aggregate the graders' verdicts of this grades file, or of a packets directory's round/grades")
	round := fs.String("round", "", "write a round's assignment and each reader's and grader's instructions into this packets directory's round/")
	readers := fs.Int("readers", 6, "round: reader agents (none reads both packets of a conversation)")
	graders := fs.Int("graders", 6, "round: grader agents")
	perConv := fs.Int("graders-per-conversation", 3, "round: graders of each conversation")
	var cfg compact.Config
	bindEngineFlags(fs, &cfg)
	llm := bindLLMFlags(fs)
	fs.Lookup("context-window").Usage = "not used: each compaction gets the yardstick's window (chars/4+1, or the chain's)"
	fs.Usage = envflag.Usage(fs, "BRIEFD_", summaryEval, evalSynopsis)
	// The yardsticks pass --context-window on the command line, which
	// overrides the environment: a service's BRIEFD_CONTEXT_WINDOW is not
	// an error here, only the flag is.
	lookup := func(name string) (string, bool) {
		if name == envflag.Name("BRIEFD_", "context-window") {
			return "", false
		}
		return os.LookupEnv(name)
	}
	if err := envflag.Parse(fs, args, "BRIEFD_", lookup); err != nil {
		return err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if explicit["context-window"] {
		return usageErrorf("eval sizes the context window per conversation as the yardsticks do; --context-window does not apply")
	}
	modes := 0
	for _, on := range []bool{*chain, *probes != "", *grade != "", *round != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return usageErrorf("--chain, --probes, --round and --grade are separate modes; give one")
	}
	if *round == "" && (explicit["readers"] || explicit["graders"] || explicit["graders-per-conversation"]) {
		return usageErrorf("--readers, --graders and --graders-per-conversation apply to --round only")
	}
	prog := newEvalProgress(stderr)
	defer prog.done()
	// With --llm-models the cascade writes the briefings, one cascade per
	// compaction as `worker compact` builds one per process.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	summarizer := func() (compact.Summarizer, error) { return llm(logger) }
	if s, err := summarizer(); err != nil {
		return err
	} else if s == nil {
		summarizer = nil
	}
	opts := eval.Options{Frac: *frac, Engine: cfg, Summarizer: summarizer, Progress: prog.step}

	switch {
	case *grade != "":
		if fs.NArg() > 0 {
			return usageErrorf("--grade takes no DIR")
		}
		agg, err := aggregateGrades(*grade)
		if err != nil {
			return err
		}
		if err := writeJSONFile(*jsonOut, agg); err != nil {
			return err
		}
		return agg.WriteTable(stdout)

	case *round != "":
		if fs.NArg() > 0 {
			return usageErrorf("--round takes no other argument")
		}
		r, err := eval.WriteRound(*round, eval.RoundOptions{Readers: *readers, Graders: *graders, GradersPerConversation: *perConv})
		if err != nil {
			return err
		}
		dir := filepath.Join(*round, "round")
		fmt.Fprintf(stdout, "Instructions in %s: give reader-N.md to reader N (%d), then grader-N.md to grader N (%d).\n",
			dir, len(r.Readers), len(r.Graders))
		fmt.Fprintf(stdout, "Readers write under %s, graders into %s; then: worker eval --grade %s\n",
			filepath.Join(dir, "answers"), filepath.Join(dir, "grades"), *round)
		return nil

	case *probes != "":
		if *histories == "" || *out == "" || fs.NArg() > 0 {
			return usageErrorf("--probes DIR needs --histories DIR and --out DIR, and no other argument")
		}
		man, err := eval.WritePackets(ctx, eval.PacketOptions{Options: opts, Probes: *probes, Histories: *histories, Out: *out})
		if err != nil {
			return err
		}
		prog.done()
		if err := writeJSONFile(*jsonOut, man); err != nil {
			return err
		}
		return man.WriteTable(stdout)
	}

	if fs.NArg() == 0 {
		fs.Usage()
		return usageErrorf("want at least one DIR of histories")
	}
	files, err := eval.Files(fs.Args()...)
	if err != nil {
		return err
	}
	if *chain {
		rep, err := eval.RunChain(ctx, files, eval.ChainOptions{
			Options: eval.Options{Frac: *frac, Engine: cfg, NoForce: *noForce, Summarizer: summarizer, Progress: prog.step},
			Cycles:  *cycles, MinMessages: *minMessages,
		})
		if err != nil {
			return err
		}
		prog.done()
		if err := writeJSONFile(*jsonOut, rep); err != nil {
			return err
		}
		return rep.WriteTable(stdout)
	}
	if explicit["no-force"] || explicit["cycles"] || explicit["chain-min-messages"] {
		return usageErrorf("--no-force, --cycles and --chain-min-messages apply to --chain only")
	}
	rep, err := eval.Run(ctx, files, opts)
	if err != nil {
		return err
	}
	prog.done()
	if err := writeJSONFile(*jsonOut, rep); err != nil {
		return err
	}
	return rep.WriteTable(stdout)
}

// writeJSONFile writes v as indented JSON to path; nothing when path is "".
func writeJSONFile(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write rows: %w", err)
	}
	return nil
}

// evalProgress shows eval's progress and the conversation it is on, on a
// terminal; it writes nothing when stderr is not one.
type evalProgress struct {
	bar *progress.Bar
	cur string
}

func newEvalProgress(stderr io.Writer) *evalProgress {
	p := &evalProgress{bar: progress.New(stderr, "eval", 0)}
	p.bar.SetNote(func() string { return p.cur })
	return p
}

// step is called before conversation i of n.
func (p *evalProgress) step(i, n int, file string) {
	p.cur = strings.TrimSuffix(filepath.Base(file), ".json")
	p.bar.Set(i, n)
}

// done ends the progress line.
func (p *evalProgress) done() {
	p.cur = ""
	p.bar.Finish()
}

// aggregateGrades reads a grades file, or, given a packets directory, the
// graders' files of its round (eval.CollectGrades), which it also writes
// as one grades file, round/grades.json.
func aggregateGrades(path string) (*eval.Aggregate, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return eval.AggregateFile(path)
	}
	gf, err := eval.CollectGrades(path)
	if err != nil {
		return nil, err
	}
	agg, err := eval.AggregateGrades(gf) // checks the verdicts and scores before the file is written
	if err != nil {
		return nil, err
	}
	if err := writeJSONFile(filepath.Join(path, "round", "grades.json"), gf); err != nil {
		return nil, err
	}
	return agg, nil
}
