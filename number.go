package briefd

import (
	"fmt"
	"strconv"
)

// PositionID is the id [NumberMessages] gives the message at index i of a
// history: "m" and i+1 in at least four digits (m0001, m0002, ...,
// m9999, m10000). A message keeps its id as the history grows, since the
// agent appends; an edit that removes or inserts earlier messages shifts
// the later ids, and the workers then see those messages as new.
func PositionID(i int) string {
	n := strconv.Itoa(i + 1)
	if len(n) < 4 {
		n = "0000"[len(n):] + n
	}
	return "m" + n
}

// NumberMessages returns msgs with every empty id set to its [PositionID],
// and how many it set, for histories in plain OpenAI form, whose messages
// have no ids. msgs itself is not modified; when no id is empty it is
// returned as is. A position id that another message already holds is an
// error matching [ErrInvalidHistory]: number all messages or none.
func NumberMessages(msgs []Message) ([]Message, int, error) {
	return numberMessages(msgs, PositionID)
}

// numberMessages is NumberMessages with the id of each position from id,
// so that a caller can reuse the same strings turn after turn.
func numberMessages(msgs []Message, id func(int) string) ([]Message, int, error) {
	missing := 0
	for i := range msgs {
		if msgs[i].ID == "" {
			missing++
		}
	}
	if missing == 0 {
		return msgs, 0, nil
	}
	out := make([]Message, len(msgs))
	copy(out, msgs)
	seen := make(map[string]int, len(msgs))
	for i := range out {
		if out[i].ID != "" {
			seen[out[i].ID] = i
		}
	}
	for i := range out {
		if out[i].ID != "" {
			continue
		}
		out[i].ID = id(i)
		if j, dup := seen[out[i].ID]; dup {
			return msgs, 0, &ValidationError{MessageID: out[i].ID, Index: i,
				Reason: fmt.Sprintf("the position id %s of this message without an id is the id of message #%d: number all messages or none", out[i].ID, j)}
		}
	}
	return out, missing, nil
}

// Numberer numbers histories like [NumberMessages], reusing the same id
// strings for the same positions turn after turn: the Go publisher tells
// an unchanged message by the identity of its strings, so a fresh id
// string each turn would make it re-send every message. It is not safe
// for concurrent use.
type Numberer struct{ ids []string }

// Number is [NumberMessages] with the Numberer's ids.
func (n *Numberer) Number(msgs []Message) ([]Message, int, error) {
	return numberMessages(msgs, n.id)
}

func (n *Numberer) id(i int) string {
	for len(n.ids) <= i {
		n.ids = append(n.ids, PositionID(len(n.ids)))
	}
	return n.ids[i]
}
