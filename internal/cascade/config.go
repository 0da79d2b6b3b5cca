package cascade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/briefd/briefd/internal/ident"
)

// Defaults applied by [Config.WithDefaults].
const (
	DefaultTimeout            = 30 * time.Second
	DefaultTemperature        = 0.1
	DefaultMaxOutputTokens    = 4000
	DefaultMaxRetries         = 2
	DefaultInitialBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff         = 10 * time.Second
	DefaultMaxRetryAfter      = 30 * time.Second
	DefaultBreakerFailures    = 3
	DefaultBreakerCoolDown    = 30 * time.Second
	DefaultSpendWindow        = 10 * time.Minute
	DefaultPerConversation    = 24
	DefaultPerTenant          = 2400
	DefaultMaxMessageChars    = 6000
	DefaultMaxInputChars      = 400_000
	DefaultMaxShrinks         = 3
	DefaultMinNarrativeTokens = 120
	DefaultCondenseDepth      = 4
	DefaultMaxDuration        = 2 * time.Minute
)

// APIKey is a secret that never prints: String, GoString and LogValue
// redact it, so a Config can be logged or formatted with %+v.
type APIKey string

// String returns a redacted form.
func (k APIKey) String() string {
	if k == "" {
		return ""
	}
	return "[redacted]"
}

// GoString returns a redacted form, for %#v.
func (k APIKey) GoString() string { return `cascade.APIKey("` + k.String() + `")` }

// LogValue redacts the key in slog output.
func (k APIKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// ModelConfig is one step of the cascade.
type ModelConfig struct {
	// Name is the model name sent to the endpoint. Required.
	Name string
	// Timeout bounds one request to this model. Default 30s. A request
	// that times out is not retried on the same model: the cascade moves on.
	Timeout time.Duration
	// Temperature of the request. Default 0.1; -1 sends no temperature
	// (the endpoint's default). Reasoning models (o1/o3/o4, gpt-5, gpt-6)
	// never get one: they reject it.
	Temperature float32
	// MaxOutputTokens caps the reply. Default 4000, and never more than the
	// briefing budget leaves for the narrative. Sent as max_completion_tokens
	// to reasoning models and when MaxCompletionTokens is set, otherwise
	// as max_tokens (which vLLM, Ollama and llama.cpp understand).
	MaxOutputTokens     int
	MaxCompletionTokens bool
}

// BreakerConfig sets the circuit breaker every model has.
type BreakerConfig struct {
	// Failures is how many consecutive failed calls open the breaker.
	// Default 3; -1 disables the breaker.
	Failures int
	// CoolDown is how long an open breaker refuses calls before it lets one
	// probe through (half-open). Default 30s.
	CoolDown time.Duration
}

// SpendConfig bounds how many model requests (each retry and feedback
// round counts) the cascade makes in a sliding window.
type SpendConfig struct {
	// PerConversation is the most requests for one conversation per
	// Window. Default 24; -1 means unlimited.
	PerConversation int
	// PerTenant is the most requests for one tenant per Window (the empty
	// tenant included). Default 2400; -1 means unlimited.
	PerTenant int
	// Window is the sliding window. Default 10 minutes.
	Window time.Duration
}

// Config configures a [Cascade]. The zero value of every field except
// Models takes its default (see the field docs and [Config.WithDefaults]).
type Config struct {
	// BaseURL is the OpenAI-compatible endpoint, e.g.
	// https://api.openai.com/v1, http://localhost:8000/v1 (vLLM),
	// http://localhost:11434/v1 (Ollama), http://localhost:8080/v1
	// (llama.cpp server). Default https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none worth the name
	// (local servers accept anything).
	APIKey APIKey
	// Models are tried in order. At least one is required.
	Models []ModelConfig
	// Structured asks for the structured (JSON) briefing of seed 003 as the
	// first prompt, instead of the plain-text normal prompt.
	Structured bool
	// JSONSchema sends the structured prompt's schema as
	// response_format json_schema (strict). Otherwise, or after an endpoint
	// rejects json_schema, json_object is sent; after that is rejected too,
	// no response_format is sent and the reply is parsed as it comes.
	JSONSchema bool

	// MaxRetries is how many times a retryable failure (429, 5xx,
	// connection reset) is retried on the same model. Default 2; -1 means none.
	MaxRetries int
	// InitialBackoff and MaxBackoff shape the exponential backoff with
	// jitter between retries. Defaults 500ms and 10s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxRetryAfter is the longest Retry-After the cascade waits for; a
	// longer one moves on to the next model. Default 30s.
	MaxRetryAfter time.Duration

	Breaker BreakerConfig
	Spend   SpendConfig

	// MaxMessageChars clips each serialized message (head and tail kept).
	// Default 6000. A context-length error halves it, up to MaxShrinks times.
	MaxMessageChars int
	// MaxInputChars bounds the whole serialized span; messages are clipped
	// harder until it fits. Default 400,000.
	MaxInputChars int
	// MaxShrinks is how many times a context-length error shrinks the input
	// and retries. Default 3; -1 means never.
	MaxShrinks int
	// MinNarrativeTokens is the least budget the model's narrative must be
	// left after the evidence ledger; with less, the cascade skips the model.
	// Default 120.
	MinNarrativeTokens int
	// CondenseDepth is the depth of the previous briefing from which the
	// cascade asks for a condensed (deeper) briefing. Default 4.
	CondenseDepth int
	// MaxDuration bounds one Summarize call, every model, retry and
	// feedback round included. When it runs out the cascade gives up and
	// the engine stores the deterministic briefing. Keep it well under
	// the worker's --max-handle-time (the engine also stops the cascade a
	// reserve before the caller's deadline). Default 2 minutes.
	MaxDuration time.Duration

	// Identifiers extracts the identifiers the fidelity gate checks.
	// Default ident.Identifiers.
	Identifiers func(string) []string
	// HTTPClient sends the requests. Default: a client with no overall
	// timeout (each request has its model's) and connection reuse sized for
	// hundreds of concurrent compactions.
	HTTPClient *http.Client
	// Clock is the time source of backoff, breakers and spend windows.
	// Default: the real clock.
	Clock Clock
	// Logger receives one line per failed attempt. Default: discard.
	Logger *slog.Logger
}

// Clock is the cascade's time source, injected for tests.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, and returns ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.BaseURL = cmp.Or(c.BaseURL, "https://api.openai.com/v1")
	models := make([]ModelConfig, len(c.Models))
	for i, m := range c.Models {
		m.Timeout = cmp.Or(m.Timeout, DefaultTimeout)
		m.Temperature = cmp.Or(m.Temperature, DefaultTemperature)
		m.MaxOutputTokens = cmp.Or(m.MaxOutputTokens, DefaultMaxOutputTokens)
		models[i] = m
	}
	c.Models = models
	c.MaxRetries = cmp.Or(c.MaxRetries, DefaultMaxRetries)
	c.InitialBackoff = cmp.Or(c.InitialBackoff, DefaultInitialBackoff)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, DefaultMaxBackoff)
	c.MaxRetryAfter = cmp.Or(c.MaxRetryAfter, DefaultMaxRetryAfter)
	c.Breaker.Failures = cmp.Or(c.Breaker.Failures, DefaultBreakerFailures)
	c.Breaker.CoolDown = cmp.Or(c.Breaker.CoolDown, DefaultBreakerCoolDown)
	c.Spend.PerConversation = cmp.Or(c.Spend.PerConversation, DefaultPerConversation)
	c.Spend.PerTenant = cmp.Or(c.Spend.PerTenant, DefaultPerTenant)
	c.Spend.Window = cmp.Or(c.Spend.Window, DefaultSpendWindow)
	c.MaxMessageChars = cmp.Or(c.MaxMessageChars, DefaultMaxMessageChars)
	c.MaxInputChars = cmp.Or(c.MaxInputChars, DefaultMaxInputChars)
	c.MaxShrinks = cmp.Or(c.MaxShrinks, DefaultMaxShrinks)
	c.MinNarrativeTokens = cmp.Or(c.MinNarrativeTokens, DefaultMinNarrativeTokens)
	c.CondenseDepth = cmp.Or(c.CondenseDepth, DefaultCondenseDepth)
	c.MaxDuration = cmp.Or(c.MaxDuration, DefaultMaxDuration)
	if c.Identifiers == nil {
		c.Identifiers = ident.Identifiers
	}
	if c.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Hundreds of compactions share one endpoint: keep their
		// connections instead of churning through two idle slots.
		t.MaxIdleConns = 2048
		t.MaxIdleConnsPerHost = 1024
		c.HTTPClient = &http.Client{Transport: t}
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field string
	Value any
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("cascade: config %s=%v: %v", e.Field, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Validate reports the first invalid field of a defaulted Config.
func (c Config) Validate() error {
	if len(c.Models) == 0 {
		return &ConfigError{Field: "Models", Value: "[]", Err: errors.New("at least one model is required")}
	}
	for i, m := range c.Models {
		if strings.TrimSpace(m.Name) == "" {
			return &ConfigError{Field: fmt.Sprintf("Models[%d].Name", i), Value: `""`, Err: errors.New("empty model name")}
		}
		if m.Timeout < 0 {
			return &ConfigError{Field: fmt.Sprintf("Models[%d].Timeout", i), Value: m.Timeout, Err: errors.New("negative")}
		}
		if m.MaxOutputTokens < 0 {
			return &ConfigError{Field: fmt.Sprintf("Models[%d].MaxOutputTokens", i), Value: m.MaxOutputTokens, Err: errors.New("negative")}
		}
		if m.Temperature != -1 && (m.Temperature < 0 || m.Temperature > 2) {
			return &ConfigError{Field: fmt.Sprintf("Models[%d].Temperature", i), Value: m.Temperature, Err: errors.New("must be within [0, 2] or -1")}
		}
	}
	if c.MaxDuration < 0 {
		return &ConfigError{Field: "MaxDuration", Value: c.MaxDuration, Err: errors.New("negative")}
	}
	if c.Spend.Window < 0 {
		return &ConfigError{Field: "Spend.Window", Value: c.Spend.Window, Err: errors.New("negative")}
	}
	if c.MaxMessageChars < 200 {
		return &ConfigError{Field: "MaxMessageChars", Value: c.MaxMessageChars, Err: errors.New("below 200")}
	}
	return nil
}
