package compact

import (
	"strings"

	"github.com/briefd/briefd"
)

// The pinned flags and the split of a remembered conversation, kept
// between its requests. pinnedFlags reads every message, and splitSpan
// copies the span's messages when the pinned ones are not all first (a
// message pinned later in the history): at a long history both cost more
// than the rest of the engine's own part, and each request adds a turn.
// Like the counts, they are kept in the conversation's memo for the
// unchanged prefix and grown by what a request adds. The arrays only grow
// in place: a request is handed them clipped, and a shorter prefix or
// other pins start new arrays, so no request's slice is written over.

// splitMemo is what the memo keeps of the flags and the split; its
// fields are guarded by the memo's mu.
type splitMemo struct {
	// pins are the control's pins the flags were made with, joined.
	pins string
	// flags are pinnedFlags of msgs[:len(flags)] with those pins; user
	// is one more than the index of the first user message among them
	// that is not a briefing (0: none), where pinnedFlags reads on from.
	flags []bool
	user  int
	// head and span are the pinned and the other messages of
	// msgs[:upto], when made by a copy (pinned messages not all first).
	upto       int
	head, span []briefd.Message
}

// cut keeps what s holds of the first n messages (those the memo still
// holds unchanged).
func (s *splitMemo) cut(n int) {
	if len(s.flags) > n {
		s.flags = s.flags[:n:n]
	}
	if s.user > n {
		s.user = 0
	}
	if s.upto > n {
		s.upto, s.head, s.span = 0, nil, nil
	}
}

// held is the messages s holds copies of, for the memo's bound.
func (s *splitMemo) held() int {
	return len(s.head) + len(s.span)
}

// pinnedFlags is pinnedFlags(msgs, pin), reading only the messages the
// conversation's memo has no flags for with the same pins.
func (k *known) pinnedFlags(msgs []briefd.Message, pin []string) ([]bool, error) {
	if k.m == nil {
		return pinnedFlags(msgs, pin)
	}
	m := k.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen != k.gen {
		// Another request of the conversation came in between.
		return pinnedFlags(msgs, pin)
	}
	s := &m.split
	if key := strings.Join(pin, "\x00"); key != s.pins {
		*s = splitMemo{pins: key}
	}
	flags, user, err := pinnedFlagsFrom(msgs, pin, s.flags, s.user)
	if err != nil {
		return nil, err
	}
	s.flags, s.user = flags, user
	return flags[:len(msgs):len(msgs)], nil
}

// splitSpan is splitSpan(msgs, counts, pinned, boundary), copying only
// the messages the conversation's memo has not split with the same pins
// when the pinned messages are not all first. pinned is the request's
// (k.pinnedFlags).
func (k *known) splitSpan(msgs []briefd.Message, counts []int, pinned []bool, boundary int) (head, span []briefd.Message, spanTokens, pinnedTokens int) {
	if k.m == nil {
		return splitSpan(msgs, counts, pinned, boundary)
	}
	nPinned, lead, spanTokens, pinnedTokens := splitCounts(counts, pinned, boundary)
	if nPinned == lead {
		return msgs[:lead:lead], msgs[lead:boundary:boundary], spanTokens, pinnedTokens
	}
	m := k.m
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &m.split
	if m.gen != k.gen || len(s.flags) < boundary {
		// Another request came in between, or its flags are not the
		// memo's.
		head, span = splitCopy(msgs, pinned, boundary, nPinned)
		return head, span, spanTokens, pinnedTokens
	}
	if s.upto > boundary {
		s.upto, s.head, s.span = 0, nil, nil // a new array: the old is handed out
	}
	for i := s.upto; i < boundary; i++ {
		if pinned[i] {
			s.head = append(s.head, msgs[i])
		} else {
			s.span = append(s.span, msgs[i])
		}
	}
	s.upto = boundary
	m.owner.resize(m, len(m.msgs)+s.held())
	return s.head[:len(s.head):len(s.head)], s.span[:len(s.span):len(s.span)], spanTokens, pinnedTokens
}
