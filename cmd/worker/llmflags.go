package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/briefd/briefd/internal/cascade"
	"github.com/briefd/briefd/internal/compact"
)

// bindLLMFlags registers the model-cascade flags on fs and returns the
// function that builds the Summarizer once fs is parsed. It returns
// (nil, nil) when no model is configured: the engine stays deterministic.
//
// Flags (each also set by its BRIEFD_* variable through envflag, e.g.
// BRIEFD_LLM_MODELS; the API key falls back to OPENAI_API_KEY):
//
//	--llm-base-url            OpenAI-compatible endpoint (default https://api.openai.com/v1)
//	--llm-api-key             bearer token (never printed)
//	--llm-models m1,m2,m3     cascade order; empty disables the LLM tiers
//	--llm-timeouts 20s,30s    per model, or one value for all (default 30s)
//	--llm-max-output-tokens   per reply (default 4000)
//	--llm-max-completion-tokens  send max_completion_tokens instead of max_tokens
//	--llm-max-duration        one compaction's whole cascade (default 2m)
//	--llm-temperature         default 0.1; -1 sends none
//	--llm-structured          ask for the structured JSON briefing first
//	--llm-json-schema         send response_format json_schema (implies --llm-structured)
//	--llm-calls-per-conversation, --llm-calls-per-tenant  spend guard per 10 minutes
func bindLLMFlags(fs *flag.FlagSet) func(*slog.Logger) (compact.Summarizer, error) {
	return bindLLMFlagsEnv(fs, os.LookupEnv)
}

func bindLLMFlagsEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) func(*slog.Logger) (compact.Summarizer, error) {
	baseURL := fs.String("llm-base-url", "", "OpenAI-compatible endpoint of the summarizer models (default https://api.openai.com/v1)")
	apiKey := fs.String("llm-api-key", "", "API key of the endpoint (falls back to OPENAI_API_KEY; never printed)")
	models := fs.String("llm-models", "", "comma-separated summarizer models, tried in order; empty keeps compaction deterministic")
	timeouts := fs.String("llm-timeouts", "", "per-model request timeouts, comma-separated or one for all (default 30s)")
	maxOut := fs.Int("llm-max-output-tokens", 0, "most tokens per summarizer reply (default 4000)")
	completionTokens := fs.Bool("llm-max-completion-tokens", false, "send the reply limit as max_completion_tokens (OpenAI's current name) instead of max_tokens (what vLLM, Ollama and llama.cpp read); reasoning models (o1, o3, o4, gpt-5) always get max_completion_tokens")
	maxDuration := fs.Duration("llm-max-duration", 0, "most time one compaction spends in the cascade, every model and retry included; then the deterministic briefing is kept (default 2m)")
	temp := fs.Float64("llm-temperature", 0, "sampling temperature (default 0.1; -1 sends none)")
	structured := fs.Bool("llm-structured", false, "ask for the structured JSON briefing (seed 003) first")
	jsonSchema := fs.Bool("llm-json-schema", false, "send response_format json_schema with the structured prompt (implies --llm-structured)")
	perConv := fs.Int("llm-calls-per-conversation", 0, "most model requests per conversation per 10 minutes (default 24; -1 unlimited)")
	perTenant := fs.Int("llm-calls-per-tenant", 0, "most model requests per tenant per 10 minutes (default 2400; -1 unlimited)")

	return func(log *slog.Logger) (compact.Summarizer, error) {
		names := splitList(*models)
		if len(names) == 0 {
			return nil, nil
		}
		ts, err := parseTimeouts(*timeouts, len(names))
		if err != nil {
			return nil, usageErrorf("--llm-timeouts: %v", err)
		}
		key := *apiKey
		if key == "" {
			key, _ = lookup("OPENAI_API_KEY")
		}
		if *maxDuration < 0 {
			return nil, usageErrorf("--llm-max-duration: must not be negative")
		}
		cfg := cascade.Config{
			BaseURL:     *baseURL,
			APIKey:      cascade.APIKey(key),
			Structured:  *structured || *jsonSchema,
			JSONSchema:  *jsonSchema,
			Spend:       cascade.SpendConfig{PerConversation: *perConv, PerTenant: *perTenant},
			MaxDuration: *maxDuration,
			Logger:      log,
		}
		for i, n := range names {
			cfg.Models = append(cfg.Models, cascade.ModelConfig{
				Name: n, Timeout: ts[i], MaxOutputTokens: *maxOut, Temperature: float32(*temp),
				MaxCompletionTokens: *completionTokens,
			})
		}
		c, err := cascade.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("llm cascade: %w", err)
		}
		if log != nil {
			log.Info("llm cascade", "models", names, "base_url", cfg.WithDefaults().BaseURL, "api_key", cfg.APIKey, "structured", cfg.Structured)
		}
		return c, nil
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseTimeouts reads "20s,30s,60s" (one per model) or "30s" (all); empty
// means the default for every model. A bare number is seconds.
func parseTimeouts(s string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, n)
	parts := splitList(s)
	if len(parts) == 0 {
		return out, nil
	}
	if len(parts) != 1 && len(parts) != n {
		return nil, fmt.Errorf("%d timeouts for %d models", len(parts), n)
	}
	for i := range out {
		p := parts[min(i, len(parts)-1)]
		d, err := time.ParseDuration(p)
		if err != nil {
			secs, err2 := strconv.ParseFloat(p, 64)
			if err2 != nil {
				return nil, fmt.Errorf("%q: %v", p, err)
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d <= 0 {
			return nil, fmt.Errorf("%q: must be positive", p)
		}
		out[i] = d
	}
	return out, nil
}
