package cascade

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/openaitest"
)

// The fake endpoint refuses what real endpoints refuse; the cascade finds
// what each one takes and keeps it for the model's later calls.
func TestEndpointProfiles(t *testing.T) {
	type sent struct {
		format                      string
		maxTokens, completionTokens bool
	}
	tests := []struct {
		name    string
		profile openaitest.Profile
		mod     func(*Config)
		reply   string
		want    []sent // the requests of the first call
		after   sent   // the request of a second call
	}{
		{
			name:    "json_schema refused: json_object (Ollama before 0.5, vLLM without guided decoding)",
			profile: openaitest.Profile{NoJSONSchema: true},
			mod:     func(c *Config) { c.Structured, c.JSONSchema = true, true },
			reply:   goodJSON,
			want:    []sent{{"json_schema", true, false}, {"json_object", true, false}},
			after:   sent{"json_object", true, false},
		},
		{
			name:    "no response_format at all (llama.cpp without grammars, proxies)",
			profile: openaitest.Profile{NoResponseFormat: true},
			mod:     func(c *Config) { c.Structured, c.JSONSchema = true, true },
			reply:   "```json\n" + goodJSON + "\n```",
			want:    []sent{{"json_schema", true, false}, {"json_object", true, false}, {"", true, false}},
			after:   sent{"", true, false},
		},
		{
			name:    "max_tokens refused: max_completion_tokens (OpenAI's newer models)",
			profile: openaitest.Profile{NoMaxTokens: true},
			reply:   goodReply,
			want:    []sent{{"", true, false}, {"", false, true}},
			after:   sent{"", false, true},
		},
		{
			name:    "max_completion_tokens refused: max_tokens (older servers)",
			profile: openaitest.Profile{NoMaxCompletionTokens: true},
			mod:     func(c *Config) { c.Models[0].MaxCompletionTokens = true },
			reply:   goodReply,
			want:    []sent{{"", false, true}, {"", true, false}},
			after:   sent{"", true, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, func(c *Config) {
				c.Models = c.Models[:1]
				if tt.mod != nil {
					tt.mod(c)
				}
			})
			b.srv.SetProfile(tt.profile)
			b.srv.SetDefault(openaitest.Reply(tt.reply))
			for call := range 2 {
				sum, err := b.c.Summarize(t.Context(), testInput())
				if err != nil {
					t.Fatalf("call %d: %v", call, err)
				}
				if call == 0 && len(sum.Attempts) != len(tt.want) {
					t.Errorf("attempts %s, want %d requests", outcomes(sum.Attempts), len(tt.want))
				}
			}
			reqs := b.srv.Requests()
			var got []sent
			for _, r := range reqs {
				var f struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(r.ResponseFormat, &f)
				got = append(got, sent{f.Type, r.MaxTokens > 0, r.MaxCompletionTokens > 0})
			}
			want := append(append([]sent(nil), tt.want...), tt.after)
			if len(got) != len(want) {
				t.Fatalf("requests %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("request %d sent %+v, want %+v", i, got[i], want[i])
				}
			}
			if b.c.BreakerState("model-a") != "closed" {
				t.Errorf("a refused parameter opened the breaker")
			}
		})
	}
}

// A model that does not answer within its timeout is left for the next,
// and a slow but timely one is waited for.
func TestEndpointTimeouts(t *testing.T) {
	b := setup(t, func(c *Config) {
		c.Models[0].Timeout = 100 * time.Millisecond
		c.Models[1].Timeout = 5 * time.Second
	}, openaitest.Reply(goodReply).WithLatency(time.Second), openaitest.Reply(goodReply).WithLatency(200*time.Millisecond))
	sum, err := b.c.Summarize(t.Context(), testInput())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Model != "model-b" || outcomes(sum.Attempts) != "model-a/normal.v2=error model-b/normal.v2=accepted" {
		t.Errorf("model %s, attempts %s", sum.Model, outcomes(sum.Attempts))
	}
	if a := sum.Attempts[0]; a.Elapsed > time.Second || a.Error == "" {
		t.Errorf("the timed-out attempt took %v (%q)", a.Elapsed, a.Error)
	}
}
