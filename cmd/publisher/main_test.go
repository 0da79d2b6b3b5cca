package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
)

// run calls Main and returns its status and outputs.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(t.Context(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; skipped with -short")
	}
	code, out, errOut := run(t, "demo", "--ephemeral")
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"tokens before", "openhands-2-", "swe-agent-8-", "tau-bench-2-", briefd.OpenTag, briefd.CloseTag} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(none)") {
		t.Errorf("a conversation got no briefing:\n%s", out)
	}
}

func TestDemoFailsWithoutBriefing(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; skipped with -short")
	}
	// A window so large that nothing compacts: a clear error, not success.
	code, out, errOut := run(t, "demo", "--ephemeral", "--context-window", "1000000")
	if code != 1 || !strings.Contains(errOut, "no briefing") {
		t.Fatalf("demo exited %d, want 1 with 'no briefing'\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestLoadEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; skipped with -short")
	}
	code, out, errOut := run(t, "load", "--embedded", "--agents", "3", "--workers", "1",
		"--turns-per-second", "0", "--dir", "../../examples/histories", "--drain", "60s")
	if code != 0 {
		t.Fatalf("load exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"snapshots published  87 of 87 (superseded in the buffer 0; errors 0: refused on a full buffer 0, not stored 0)", "publish latency", "briefings produced", "publish→briefing"} {
		if !strings.Contains(out, want) {
			t.Errorf("load summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "briefings produced   0") {
		t.Errorf("no briefing produced:\n%s", out)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no command", nil, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"help", []string{"help"}, 0},
		{"flag help", []string{"publish", "-h"}, 0},
		{"publish without file", []string{"publish", "--nats-url", "nats://127.0.0.1:1"}, 2},
		{"latest without conversation", []string{"latest"}, 2},
		{"expand without from", []string{"expand", "--conversation", "c"}, 2},
		{"search without query", []string{"search", "--conversation", "c"}, 2},
		{"tool without arguments", []string{"tool", "--conversation", "c"}, 2},
		{"tool definition", []string{"tool", "--definition"}, 0},
		{"bad flag", []string{"load", "--agents", "x"}, 2},
		{"no server", []string{"latest", "--conversation", "c", "--nats-url", "nats://127.0.0.1:1"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, out, errOut := run(t, tt.args...); code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
		})
	}
}

// Every command's -h says what it does in its first line; a bare
// publisher lists the commands.
func TestHelpSummaries(t *testing.T) {
	if code, _, errOut := run(t); code != 2 || !strings.Contains(errOut, "commands:") {
		t.Fatalf("bare publisher: exit %d, %q", code, errOut)
	}
	for _, c := range commands {
		code, _, errOut := run(t, c.name, "-h")
		if first, _, _ := strings.Cut(errOut, "\n"); code != 0 || first != c.make().Summary() {
			t.Errorf("publisher %s -h: exit %d, first line %q", c.name, code, first)
		}
	}
}

func TestEnvFlags(t *testing.T) {
	t.Setenv("BRIEFD_NATS_URL", "nats://127.0.0.1:1")
	code, _, errOut := run(t, "latest", "--conversation", "c")
	if code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("BRIEFD_NATS_URL not used: exit %d, stderr %s", code, errOut)
	}
}

// TestPublishLatestSplice publishes a file turn by turn against a test
// server, stores a briefing as a worker would, and reads it back with
// latest and splice.
func TestPublishLatestSplice(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t)
	if err := queue.EnsureStreams(t.Context(), js, queue.Config{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("..", "..", "examples", "histories", "tau-bench-2.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h, err := briefd.ParseHistory(data)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL()

	code, out, errOut := run(t, "publish", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", "--wait", "0", file)
	if code != 0 {
		t.Fatalf("publish exited %d: %s", code, errOut)
	}
	nsteps := len(steps(h.Messages))
	if !strings.Contains(out, "published "+strconv.Itoa(nsteps)+" snapshots of c1") {
		t.Errorf("publish output:\n%s", out)
	}
	s, err := js.Stream(t.Context(), queue.Config{}.Streams().Snapshots)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if int(info.State.Msgs) != nsteps {
		t.Errorf("%d snapshots stored, want %d", info.State.Msgs, nsteps)
	}

	code, _, errOut = run(t, "latest", "--nats-url", url, "--tenant", "t1", "--conversation", "c1")
	if code != 1 || !strings.Contains(errOut, "no briefing") {
		t.Errorf("latest before any briefing: exit %d, stderr %s", code, errOut)
	}

	store, err := cache.NewKVStore(t.Context(), js, cache.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b := &briefd.Briefing{Tenant: "t1", ConversationID: "c1", BoundaryID: h.Messages[20].ID, Position: 20,
		Text: "the user wants a refund", Tier: briefd.TierDeterministic, TokensBefore: 9000, TokensAfter: 3000}
	if _, err := store.Put(t.Context(), b); err != nil {
		t.Fatal(err)
	}

	code, out, errOut = run(t, "latest", "--nats-url", url, "--tenant", "t1", "--conversation", "c1")
	if code != 0 || !strings.Contains(out, "the user wants a refund") || !strings.Contains(out, "tokens 9000 -> 3000") {
		t.Errorf("latest: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "latest", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", "--format", "json")
	var got briefd.Briefing
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.BoundaryID != b.BoundaryID {
		t.Errorf("latest --format json: exit %d, %s", code, out)
	}

	code, out, errOut = run(t, "splice", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", file)
	if code != 0 {
		t.Fatalf("splice exited %d: %s", code, errOut)
	}
	sh, err := briefd.ParseHistory([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := briefd.Validate(sh.Messages, briefd.Limits{}); err != nil {
		t.Fatal(err)
	}
	if len(sh.Messages) >= len(h.Messages) || !sh.Messages[2].IsBriefing() {
		t.Errorf("spliced history: %d messages (from %d), third %q", len(sh.Messages), len(h.Messages), sh.Messages[2].ID)
	}
	// expand reads the originals back from the streams; search finds them.
	m5, m7 := h.Messages[5], h.Messages[7]
	code, out, errOut = run(t, "expand", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", "--from", m5.ID, "--to", m7.ID, "--format", "json")
	var msgs []briefd.Message
	if code != 0 || json.Unmarshal([]byte(out), &msgs) != nil || len(msgs) != 3 || msgs[0].ID != m5.ID || msgs[2].Content.String() != m7.Content.String() {
		t.Errorf("expand --format json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "expand", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", "--from", m5.ID, "--to", m7.ID, "--max-messages", "2")
	if code != 0 || !strings.Contains(out, "["+m5.ID+"] "+string(m5.Role)) || strings.Contains(out, "["+m7.ID+"]") || !strings.Contains(errOut, "go on with --from "+h.Messages[7].ID) {
		t.Errorf("expand --max-messages 2: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "expand", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", "--from", "no-such-id")
	if code != 1 || !strings.Contains(errOut, "not in the conversation's stored snapshots") {
		t.Errorf("expand of an unknown id: exit %d, stderr %s", code, errOut)
	}
	word := strings.Fields(m5.Content.String())[0]
	code, out, errOut = run(t, "search", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", "--format", "json", word)
	var matches []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &matches) != nil || len(matches) == 0 || !strings.Contains(errOut, "messages searched") {
		t.Errorf("search %q: exit %d\nstdout:\n%s\nstderr:\n%s", word, code, out, errOut)
	}
	code, out, errOut = run(t, "tool", "--nats-url", url, "--tenant", "t1", "--conversation", "c1", `{"from_id":"`+m5.ID+`"}`)
	if code != 0 || !strings.HasPrefix(out, `{"conversation_id":"c1","from_id":"`+m5.ID+`"`) {
		t.Errorf("tool: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, _ := run(t, "tool", "--definition"); code != 0 || !strings.Contains(out, `"name":"expand_history"`) {
		t.Errorf("tool --definition: exit %d: %s", code, out)
	}
	if code, _, _ := run(t, "search", "--nats-url", url, "--conversation", "c1"); code != 2 {
		t.Errorf("search without a query: exit %d, want 2", code)
	}
}

func TestSteps(t *testing.T) {
	msgs := []briefd.Message{
		{ID: "s", Role: briefd.RoleSystem}, {ID: "u", Role: briefd.RoleUser},
		{ID: "a1", Role: briefd.RoleAssistant}, {ID: "t1", Role: briefd.RoleTool},
		{ID: "a2", Role: briefd.RoleAssistant}, {ID: "u2", Role: briefd.RoleUser},
		{ID: "a3", Role: briefd.RoleAssistant},
	}
	got := steps(msgs)
	want := []int{2, 4, 6, 7}
	if len(got) != len(want) {
		t.Fatalf("steps = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps = %v, want %v", got, want)
		}
	}
}

func TestConvID(t *testing.T) {
	for in, want := range map[string]string{"tau-bench-2": "tau-bench-2", "a.b c": "a-b-c", "": "conversation"} {
		if got := convID(in); got != want {
			t.Errorf("convID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoadTally (issue 10, F6): turns refused on a full buffer, and
// snapshots not stored, are errors in load's summary and its exit status;
// superseded snapshots are not.
func TestLoadTally(t *testing.T) {
	tests := []struct {
		tally  loadTally
		errors int64
		want   string
	}{
		{loadTally{published: 87, total: 87, superseded: 5}, 0, "87 of 87 (superseded in the buffer 5; errors 0: refused on a full buffer 0, not stored 0)"},
		{loadTally{published: 80, total: 87, refused: 7}, 7, "80 of 87 (superseded in the buffer 0; errors 7: refused on a full buffer 7, not stored 0)"},
		{loadTally{published: 87, total: 87, failed: 2}, 2, "87 of 87 (superseded in the buffer 0; errors 2: refused on a full buffer 0, not stored 2)"},
	}
	for _, tt := range tests {
		if got := tt.tally.errors(); got != tt.errors {
			t.Errorf("%+v: errors %d, want %d", tt.tally, got, tt.errors)
		}
		if got := tt.tally.String(); got != tt.want {
			t.Errorf("summary %q, want %q", got, tt.want)
		}
	}
}
