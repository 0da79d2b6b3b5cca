package compact

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/briefd/briefd"
)

// smallConfig has a kept budget of 200 tokens, a trigger of 650 and a
// floor of 5 messages.
func smallConfig() Config {
	return Config{ContextWindow: 1000, MinKeepMessages: 5, MinMessages: -1, MinBriefingTokens: 10, MaxBriefingTokens: 100}.WithDefaults()
}

func TestBoundary(t *testing.T) {
	const tail6 = "a:30 a:30 a:30 a:30 a:30 a:30" // 180 tokens
	tests := []struct {
		name    string
		spec    string
		cfg     func(*Config)
		want    int    // index of the first kept message
		wantErr string // substring of an ErrNoBoundary error
		note    string // substring of a note
	}{
		{name: "budget walk", spec: "s u a:30 a:30 a:30 " + tail6, want: 5},
		{name: "floor wins over the budget", spec: "s u a a a:100 a:100 a:100 a:100 a:100", want: 4},
		{name: "last message over budget kept alone", spec: "s u a a a a a a a:300", want: 8, note: "alone"},
		{name: "last tool result over budget keeps its call", spec: "s u a a a a a c1 t:300", want: 7},
		{name: "a message over budget in the floor starts the tail", spec: "s u a a a a a c1 t:300 a a", want: 7, note: "the kept tail starts with it"},
		{name: "never starts with a tool result", spec: "s u a:100 a:100 c2:100 t:40 t:40 a:30 a:30 a:30", want: 4},
		{name: "parallel results stay with their call", spec: "s u a:100 c3:100 t:20 t:20 t:20 a:30 a:30 a:30 a:30 a:30", want: 3},
		{name: "newest user message pulled into the tail", spec: "s u a:30 a:30 u:30 a:30 a:30 " + tail6, want: 4},
		{name: "newest user message pinned stays in the head", spec: "s u a:30 a:30 U:30 a:30 a:30 " + tail6, want: 7},
		{name: "newest user message would leave nothing", spec: "s u u:30 a:30 a:30 a:30 " + tail6, want: 6, note: "leave nothing to compact"},
		{name: "newest user message would keep too much", spec: "s u a u a:400 a:400 " + tail6, want: 6, note: "not below the trigger of 650"},
		{name: "pinned message in the middle", spec: "s u a:100 A:10 a:100 " + tail6, want: 5},
		{name: "a briefing is folded", spec: "s u b a:100 a:100 " + tail6, want: 5},
		{name: "only the earlier briefing precedes", spec: "s:50 u:50 b:50 " + tail6, wantErr: "only the earlier briefing"},
		{name: "too short", spec: "s u a a a", wantErr: "kept tail starts at or before the first non-pinned message m02 (#2)"},
		{name: "all pinned", spec: "s U A", wantErr: "every message is pinned"},
		{name: "no system message", spec: "u a:100 a:100 " + tail6, want: 3},
		{name: "larger floor", spec: "s u a:30 a:30 a:30 " + tail6, cfg: func(c *Config) { c.MinKeepMessages = 8 }, want: 3},
		{name: "floor at least five", spec: "s u a:100 a:100 a:100 a:100 a:100 a:100 a:100", cfg: func(c *Config) { c.MinKeepMessages = 1 }, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := smallConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			msgs, counts := parseSpec(t, tt.spec)
			got, err := cfg.boundary(msgs, counts, defaultPinned(msgs), false)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNoBoundary) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrNoBoundary with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.index != tt.want {
				t.Fatalf("boundary = %d, want %d (notes %q)", got.index, tt.want, got.notes)
			}
			if tt.note != "" && !strings.Contains(strings.Join(got.notes, "\n"), tt.note) {
				t.Fatalf("notes %q, want one with %q", got.notes, tt.note)
			}
			sum := 0
			for _, n := range counts[got.index:] {
				sum += n
			}
			if got.keptTokens != sum {
				t.Fatalf("keptTokens = %d, want %d", got.keptTokens, sum)
			}
		})
	}
}

func TestPinnedFlagsMatchesPinned(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		msgs := genHistory(r, 1+r.IntN(40))
		flags := defaultPinned(msgs)
		for i := range msgs {
			if flags[i] != briefd.Pinned(msgs, i) {
				t.Fatalf("message %d (%s): pinnedFlags %v, Pinned %v", i, msgs[i].String(), flags[i], !flags[i])
			}
		}
	}
}

// defaultPinned is pinnedFlags without pins by id, which cannot fail.
func defaultPinned(msgs []briefd.Message) []bool {
	flags, err := pinnedFlags(msgs, nil)
	if err != nil {
		panic(err)
	}
	return flags
}
