package compact

import (
	"slices"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/examples"
)

// An engine that keeps a conversation's pinned flags and split (split.go)
// gives what a fresh engine gives when messages are pinned after others
// (so the span is a copy): grown turn by turn, forced and not (the
// boundary moves back and forth), with pins by id added and taken away,
// a pinned message and the task edited in place, an undo past the split,
// and a history whose first user message comes late.
func TestMemoSplitMatchesFresh(t *testing.T) {
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	kept := 0
	for _, h := range hs {
		t.Run(h.ID, func(t *testing.T) {
			e, err := New(Config{ContextWindow: 4000}, WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			msgs := slices.Clone(h.Messages)
			// Pinned later in the history: a user's message and an answer.
			var pinnable []int
			for i, m := range msgs {
				if i > 3 && (m.Role == briefd.RoleUser || m.Role == briefd.RoleAssistant && len(m.ToolCalls) == 0) {
					pinnable = append(pinnable, i)
				}
			}
			for k, i := range pinnable {
				if k%3 == 0 {
					msgs[i].Pinned = true
				}
			}
			arr := make([]briefd.Message, 0, len(msgs))
			for n := 1; n <= len(msgs); n++ {
				arr = append(arr, msgs[n-1])
				if n < len(msgs) && msgs[n].Role == briefd.RoleTool {
					continue
				}
				req := Request{ConversationID: h.ID, Messages: arr, Force: n%3 == 0}
				if n%5 == 0 && len(pinnable) > 1 && pinnable[1] < n {
					req.Control.Pin = []string{msgs[pinnable[1]].ID}
				}
				compactBoth(t, e, req)
				if m := e.memo.get(e.memoKey, "", h.ID); m.split.upto > 0 {
					kept++
				}
			}
			// A pinned message edited in place, before the boundary.
			if len(pinnable) > 0 {
				i := pinnable[0]
				arr[i].Content = briefd.Text("edited in place: " + arr[i].Content.String())
				compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr, Force: true})
				arr[i].Pinned = false
				compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr, Force: true})
			}
			// The task edited in place: the flags read on from before the
			// first user message.
			for i, m := range arr {
				if m.Role == briefd.RoleUser {
					arr[i].Content = briefd.Text("the task, edited: " + m.Content.String())
					compactBoth(t, e, Request{ConversationID: h.ID, Messages: arr, Force: true})
					break
				}
			}
			// An undo past the split, then another turn.
			undone := slices.Clone(arr[:len(arr)/2])
			for undone[len(undone)-1].Role == briefd.RoleAssistant && len(undone[len(undone)-1].ToolCalls) > 0 {
				undone = undone[:len(undone)-1]
			}
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: undone, Force: true})
			undone = append(undone, briefd.Message{ID: "late-pin", Role: briefd.RoleUser, Content: briefd.Text("keep this one"), Pinned: true},
				briefd.Message{ID: "late-user", Role: briefd.RoleUser, Content: briefd.Text("and go on")})
			compactBoth(t, e, Request{ConversationID: h.ID, Messages: undone, Force: true})
			// The first user message late: the flags read on from where no
			// user message was seen.
			var late []briefd.Message
			for _, m := range h.Messages {
				if m.Role == briefd.RoleSystem {
					late = append(late, m)
				}
			}
			for i, m := range msgs {
				if m.Role == briefd.RoleUser && i > 0 {
					late = append(late, briefd.Message{ID: "note", Role: briefd.RoleAssistant, Content: briefd.Text("a note before the task"), Pinned: true})
					late = append(late, msgs[i:]...)
					break
				}
			}
			for n := 2; n <= len(late); n++ {
				if n < len(late) && late[n].Role == briefd.RoleTool {
					continue
				}
				compactBoth(t, e, Request{ConversationID: h.ID + "-late", Messages: late[:n:n], Force: n%2 == 0})
			}
		})
	}
	if kept == 0 {
		t.Fatal("no split kept: the test proves little")
	}
}
