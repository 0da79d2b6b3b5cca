package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/compact"
)

// Options tune a run. The zero value takes the yardsticks' defaults.
type Options struct {
	// Frac is the share of each conversation's messages before the freeze
	// point (cut_index's frac). Default 0.7.
	Frac float64
	// Engine is the engine's configuration, as `worker compact` takes it
	// from its flags. Its ContextWindow is ignored: each compaction gets
	// the window the yardstick passes with --context-window.
	Engine compact.Config
	// NoForce compacts only when the engine's trigger fires, as
	// `--compactor 'worker compact'` without --force does. The single
	// compaction report always forces, as eval_quality.py is run.
	NoForce bool
	// Summarizer, when set, returns the model cascade of one compaction,
	// as `worker compact --llm-models ...` builds it: a new one per
	// compaction (the command is a new process each time, so its circuit
	// breakers and spend guard start afresh). Nil measures the
	// deterministic tier.
	Summarizer func() (compact.Summarizer, error)
	// Progress, when set, is called before each conversation with its
	// position (from 0), the number of files and the file.
	Progress func(i, n int, file string)
}

func (o Options) withDefaults() (Options, error) {
	if o.Frac == 0 {
		o.Frac = 0.7
	}
	if !(o.Frac > 0 && o.Frac < 1) {
		return o, fmt.Errorf("eval: frac %v must be in (0, 1)", o.Frac)
	}
	return o, nil
}

// compactor runs the engine in process as `worker compact [--force]
// --context-window N FILE` runs it: a fresh engine per call (the command
// is a new process each time), the configuration from the flags, the
// window per call. Only the token counter is shared: its counts are a pure
// function of the text and its caches make the chained replay affordable.
type compactor struct {
	cfg        compact.Config
	counter    *compact.TokenCounter
	force      bool
	summarizer func() (compact.Summarizer, error)
}

func newCompactor(opts Options, force bool) (*compactor, error) {
	d := opts.Engine.WithDefaults()
	counter, err := compact.NewTokenCounter(d.Model, d.Encoding, max(d.PerMessageOverhead, 0))
	if err != nil {
		return nil, fmt.Errorf("eval: token counter: %w", err)
	}
	return &compactor{cfg: opts.Engine, counter: counter, force: force, summarizer: opts.Summarizer}, nil
}

// compact returns the engine's result on msgs with the given window, or
// the error `worker compact` would exit with (an invalid history, or a
// configuration the window makes invalid).
func (c *compactor) compact(ctx context.Context, id string, msgs []briefd.Message, window int) (*compact.Result, error) {
	cfg := c.cfg
	cfg.ContextWindow = window
	engOpts := []compact.Option{compact.WithTokenCounter(c.counter)}
	if c.summarizer != nil {
		s, err := c.summarizer()
		if err != nil {
			return nil, err
		}
		if s != nil {
			engOpts = append(engOpts, compact.WithSummarizer(s))
		}
	}
	eng, err := compact.New(cfg, engOpts...)
	if err != nil {
		return nil, err
	}
	return eng.Compact(ctx, compact.Request{ConversationID: id, Messages: msgs, Force: c.force})
}

// Files lists the *.json histories of the directories (README and other
// files skipped), sorted by path as the yardsticks sort them.
func Files(dirs ...string) ([]string, error) {
	var files []string
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("eval: %s is not a directory", dir)
		}
		fs, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("eval: list %s: %w", dir, err)
		}
		for _, f := range fs {
			// Python's glob leaves out names that begin with a dot.
			if !strings.HasPrefix(filepath.Base(f), ".") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("eval: no *.json history in %s", strings.Join(dirs, ", "))
	}
	sort.Strings(files)
	return files, nil
}

// readHistory reads one history file. Its id is the file's "id", else
// the file name without .json. A file that is not a history is an error:
// the yardsticks stop there too (json.load or conv["messages"] raises).
func readHistory(file string) (*briefd.History, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", file, err)
	}
	if h.ID == "" {
		h.ID = strings.TrimSuffix(filepath.Base(file), ".json")
	}
	return h, nil
}

// Failure is a conversation the compactor failed on: it crashed (an
// invalid history), did not compact, or named a boundary not in the
// history. The yardsticks count and list these; they are not scored.
type Failure struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}
