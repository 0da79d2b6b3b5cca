package main

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/briefd/briefd/internal/cascade"
	"github.com/briefd/briefd/internal/envflag"
)

func TestLLMFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantNil bool
		wantErr bool
	}{
		{name: "no model stays deterministic", wantNil: true},
		{name: "flags", args: []string{"--llm-models", "a,b", "--llm-timeouts", "20s,45s", "--llm-base-url", "http://127.0.0.1:1/v1"}},
		{name: "env", env: map[string]string{"BRIEFD_LLM_MODELS": "a", "BRIEFD_LLM_TIMEOUTS": "10", "OPENAI_API_KEY": "sk-x"}},
		{name: "timeouts mismatch", args: []string{"--llm-models", "a,b,c", "--llm-timeouts", "1s,2s"}, wantErr: true},
		{name: "bad timeout", args: []string{"--llm-models", "a", "--llm-timeouts", "soon"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("worker", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			build := bindLLMFlagsEnv(fs, lookup)
			if err := envflag.Parse(fs, tt.args, "BRIEFD_", lookup); err != nil {
				t.Fatal(err)
			}
			s, err := build(nil)
			switch {
			case tt.wantErr:
				if err == nil || !errors.Is(err, errUsage) {
					t.Errorf("err = %v, want a usage error", err)
				}
			case err != nil:
				t.Fatal(err)
			case tt.wantNil != (s == nil):
				t.Errorf("summarizer %v, want nil=%v", s, tt.wantNil)
			case s != nil:
				if _, ok := s.(*cascade.Cascade); !ok {
					t.Errorf("summarizer is %T", s)
				}
			}
		})
	}
	ts, err := parseTimeouts("20s,30s,60s", 3)
	if err != nil || ts[0] != 20*time.Second || ts[2] != time.Minute {
		t.Errorf("parseTimeouts = %v, %v", ts, err)
	}
}
