package compact

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/examples"
)

// compactBoth compacts req with the remembering engine and a fresh one
// that remembers nothing, and fails unless both give the same result.
func compactBoth(t *testing.T, warm *Engine, req Request) *Result {
	t.Helper()
	cold, err := New(warm.cfg, WithMemo(nil), WithClock(warm.now))
	if err != nil {
		t.Fatal(err)
	}
	got, gerr := warm.Compact(t.Context(), req)
	want, werr := cold.Compact(t.Context(), req)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%d messages: remembering engine: %v; fresh engine: %v", len(req.Messages), gerr, werr)
	}
	if gerr != nil {
		return nil
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%d messages: the remembering engine's result differs from a fresh engine's:\n%.600s\n%.600s", len(req.Messages), g, w)
	}
	return got
}

// An engine that remembers a conversation (validation, token counts, span
// hash checkpoints) gives, turn after turn, exactly what a fresh engine
// gives; also when the history is edited, undone, changed in place in the
// caller's array, or goes bad.
func TestMemoMatchesFresh(t *testing.T) {
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	for _, h := range hs {
		t.Run(h.ID, func(t *testing.T) {
			e, err := New(Config{ContextWindow: 4000}, WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			msgs := h.Messages
			// The caller's array, grown in place as an agent's is.
			arr := make([]briefd.Message, 0, len(msgs))
			compacted := 0
			for n := 1; n <= len(msgs); n++ {
				arr = append(arr, msgs[n-1])
				if n < len(msgs) && msgs[n].Role == briefd.RoleTool {
					continue
				}
				if res := compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr}); res != nil && res.Compacted {
					compacted++
				}
			}
			if compacted == 0 {
				t.Fatal("nothing compacted: the test proves little")
			}
			// Pins change the span: the checkpoints of other pins are not
			// used.
			for i := len(arr) / 4; i < len(arr); i++ {
				if m := arr[i]; m.Role == briefd.RoleUser || m.Role == briefd.RoleAssistant && len(m.ToolCalls) == 0 {
					compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr, Control: briefd.Control{Pin: []string{m.ID}}})
					compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr})
					break
				}
			}
			// Changed in place in the caller's array.
			arr[len(arr)/3].Content = briefd.Text("rewritten in place: " + arr[len(arr)/3].Content.String())
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr})
			// An undo, then other turns.
			undone := slices.Clone(arr[:len(arr)*2/3])
			for undone[len(undone)-1].Role == briefd.RoleAssistant && len(undone[len(undone)-1].ToolCalls) > 0 {
				undone = undone[:len(undone)-1]
			}
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: undone})
			undone = append(undone, briefd.Message{ID: "new-user", Role: briefd.RoleUser, Content: briefd.Text("let us try another way")})
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: undone})
			// A bad turn, then a good one.
			bad := append(slices.Clip(undone), briefd.Message{ID: "new-user", Role: briefd.RoleUser, Content: briefd.Text("again")})
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: bad})
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: append(slices.Clip(undone), briefd.Message{ID: "u2", Role: briefd.RoleUser, Content: briefd.Text("again")})})
		})
	}
}

// Requests of one conversation at once (a redelivery beside a newer
// snapshot) each get their own result (run with -race).
func TestMemoConcurrentRequests(t *testing.T) {
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	msgs := hs[0].Messages
	e, err := New(Config{ContextWindow: 4000}, WithClock(func() time.Time { return time.Unix(0, 0) }))
	if err != nil {
		t.Fatal(err)
	}
	cold, err := New(e.cfg, WithMemo(nil), WithClock(e.now))
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int
	for n := len(msgs) / 2; n <= len(msgs); n++ {
		if n == len(msgs) || msgs[n].Role != briefd.RoleTool {
			cuts = append(cuts, n)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(cuts))
	for _, n := range cuts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := Request{ConversationID: "c", Messages: msgs[:n:n]}
			got, err := e.Compact(t.Context(), req)
			if err != nil {
				errs <- err
				return
			}
			want, _ := cold.Compact(t.Context(), req)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				errs <- fmt.Errorf("%d messages: results differ", n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The memo is bounded by the messages it holds, over all conversations.
func TestMemoBounded(t *testing.T) {
	e, err := New(Config{ContextWindow: 4000}, WithMemo(NewMemo(100)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		var msgs []briefd.Message
		for j := range 30 {
			msgs = append(msgs, briefd.Message{ID: fmt.Sprintf("m%d", j), Role: briefd.RoleUser, Content: briefd.Text(strings.Repeat("x", 10))})
		}
		if _, err := e.Compact(t.Context(), Request{ConversationID: fmt.Sprintf("c%d", i), Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		if e.memo.used > 100 || e.memo.ll.Len() > 3 {
			t.Fatalf("after %d conversations the memo holds %d messages of %d conversations, bound 100", i+1, e.memo.used, e.memo.ll.Len())
		}
	}
}

// Engines sharing a Memo (a worker's, one per context window and
// encoding) each get what a fresh engine gets, compacting one
// conversation in turn.
func TestMemoShared(t *testing.T) {
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemo(DefaultMemoMessages)
	var engines []*Engine
	for _, cfg := range []Config{{ContextWindow: 4000}, {ContextWindow: 6000}, {ContextWindow: 4000, Encoding: EncodingCL100K}} {
		e, err := New(cfg, WithMemo(m), WithClock(func() time.Time { return time.Unix(0, 0) }))
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	msgs := hs[1].Messages
	k := 0
	for n := 1; n <= len(msgs); n++ {
		if n < len(msgs) && msgs[n].Role == briefd.RoleTool {
			continue
		}
		compactBoth(t, engines[k%len(engines)], Request{ConversationID: "c", Messages: msgs[:n]})
		k++
	}
}
