package worker

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/briefd/briefd/internal/compact"
)

// engineSet keeps one engine per (encoding, context window) that snapshots
// ask for, sharing one token counter (and its cache) per encoding. A
// snapshot may name the agent's model and window; without them the
// worker's configuration applies.
type engineSet struct {
	base       compact.Config
	summarizer compact.Summarizer
	log        *slog.Logger
	max        int
	memo       *compact.Memo // shared by the engines

	mu       sync.Mutex
	engines  map[engineKey]*compact.Engine
	counters map[string]*compact.TokenCounter
}

type engineKey struct {
	encoding string
	window   int
}

// memoBytesPerMessage converts the resolver's cache budget to the
// engines' memo of messages: the shared histories average 950 bytes of
// JSON per message.
const memoBytesPerMessage = 1 << 10

func newEngineSet(base compact.Config, s compact.Summarizer, log *slog.Logger, max int, memo *compact.Memo) *engineSet {
	return &engineSet{base: base, summarizer: s, log: log, max: max, memo: memo,
		engines: map[engineKey]*compact.Engine{}, counters: map[string]*compact.TokenCounter{}}
}

// get returns the engine for a snapshot's model and context window (zero
// values: the configured ones).
func (s *engineSet) get(model string, window int) (*compact.Engine, error) {
	cfg := s.base
	if model != "" && cfg.Encoding == "" {
		cfg.Model = model
	}
	if window > 0 {
		cfg.ContextWindow = window
		// A window smaller than the configured caps needs caps that keep
		// the kept budget below the trigger; the engine validates it.
	}
	enc := cfg.Encoding
	if enc == "" {
		enc = compact.EncodingForModel(cfg.Model)
	}
	key := engineKey{encoding: enc, window: cfg.ContextWindow}

	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.engines[key]; ok {
		return e, nil
	}
	if len(s.engines) >= s.max {
		// Rare: many distinct windows. Drop one engine; its counter, shared
		// by encoding, keeps its cache.
		for k := range s.engines {
			delete(s.engines, k)
			break
		}
	}
	counter, ok := s.counters[enc]
	if !ok {
		var err error
		counter, err = compact.NewTokenCounter(cfg.Model, enc, cfg.PerMessageOverhead)
		if err != nil {
			return nil, fmt.Errorf("token counter %s: %w", enc, err)
		}
		s.counters[enc] = counter
	}
	opts := []compact.Option{compact.WithTokenCounter(counter), compact.WithLogger(s.log), compact.WithMemo(s.memo)}
	if s.summarizer != nil {
		opts = append(opts, compact.WithSummarizer(s.summarizer))
	}
	e, err := compact.New(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("engine for model %q, context window %d: %w", model, window, err)
	}
	s.engines[key] = e
	return e, nil
}
