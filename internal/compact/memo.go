package compact

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
)

// DefaultMemoMessages bounds the messages an engine remembers of the
// conversations it compacted when it is given no Memo (see WithMemo).
const DefaultMemoMessages = 1 << 18

// Memo is what engines remember of the conversations they compacted, so
// that a history grown by a turn costs the turn: per conversation (and
// encoding), the messages seen (copies of their headers, which hold their
// strings), their token counts, a Validator that checked them, and
// checkpoints of the span hash, and the briefing writer's model of the
// span compacted last (brief.Warm), so that the next briefing of a grown
// span reads only what was added. It is an LRU bounded by the messages held
// (each costs about 250 bytes beside its strings, which the caller's
// history holds too) and, apart, by the bytes of the writer's models
// (WarmBytesPerMessage per message of the bound; the least recently used
// conversations' models go first). Engines may share one; it is safe for
// concurrent use.
type Memo struct {
	mu       sync.Mutex
	max      int
	used     int
	maxWarm  int
	warmUsed int
	ll       *list.List
	byKey    map[string]*list.Element
}

// WarmBytesPerMessage is the memory a Memo keeps for the briefing writer's
// models of the spans compacted last, per message of its bound.
const WarmBytesPerMessage = 512

// NewMemo returns a Memo holding at most messages messages, and at most
// messages × WarmBytesPerMessage bytes of the briefing writer's models.
func NewMemo(messages int) *Memo {
	messages = max(messages, 0)
	return &Memo{max: messages, maxWarm: messages * WarmBytesPerMessage, ll: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the memo of a conversation compacted by engines with the
// same encoding, overhead and limits (part of key), new if there is none;
// nil when there is no Memo.
func (c *Memo) get(engine, tenant, conv string) *memo {
	if c == nil || c.max == 0 || conv == "" {
		return nil
	}
	key := engine + "\x00" + tenant + "\x00" + conv
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*memo)
	}
	m := &memo{key: key, owner: c}
	c.byKey[key] = c.ll.PushFront(m)
	return m
}

// resize accounts for m holding n messages now, evicting the least
// recently used memos beyond the bound (m too, if it alone is larger).
func (c *Memo) resize(m *memo, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[m.key]
	if !ok || e.Value != m {
		return // evicted meanwhile: it lives on for its caller only
	}
	c.used += n - m.held
	m.held = n
	for c.used > c.max && c.ll.Len() > 0 {
		old := c.ll.Remove(c.ll.Back()).(*memo)
		delete(c.byKey, old.key)
		c.used -= old.held
		old.held = 0
		c.dropWarm(old)
	}
}

// setWarm makes w (nil: none) m's writer's model, dropping the least
// recently used conversations' models beyond the bound (w too, if it alone
// is larger). It reports whether m keeps w.
func (c *Memo) setWarm(m *memo, w *brief.Warm) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[m.key]; !ok || e.Value != m || w == nil || w.Bytes() > c.maxWarm {
		c.dropWarm(m)
		return false
	}
	m.warm.Store(w)
	c.warmUsed += w.Bytes() - m.warmHeld
	m.warmHeld = w.Bytes()
	for e := c.ll.Back(); c.warmUsed > c.maxWarm && e != nil; e = e.Prev() {
		if old := e.Value.(*memo); old != m {
			c.dropWarm(old)
		}
	}
	return true
}

// dropWarm lets go of m's writer's model; the caller holds c.mu.
func (c *Memo) dropWarm(m *memo) {
	m.warm.Store(nil)
	c.warmUsed -= m.warmHeld
	m.warmHeld = 0
}

// memo is what an engine remembers of one conversation. Its fields are
// guarded by mu; gen counts its changes, so that a caller that let go of
// mu can tell whether it still describes the request it prepared.
type memo struct {
	key   string
	owner *Memo
	held  int // messages accounted in owner

	mu     sync.Mutex
	gen    uint64
	msgs   []briefd.Message
	counts []int
	v      *briefd.Validator // validated msgs; nil after a failure
	marks  []hashMark        // increasing upto
	pins   string            // the control's pins the marks were made with
	// warm is the briefing writer's model of the span compacted last, the
	// non-pinned messages of msgs[:warmUpto]; it is dropped when msgs
	// change before warmUpto. A request takes it (Swap) for its Write and
	// puts it back after. warmHeld is its size accounted in owner (guarded
	// by owner.mu).
	warm     atomic.Pointer[brief.Warm]
	warmUpto int
	warmHeld int
	// split is the pinned flags of msgs and their split at the boundary
	// compacted last (split.go), for the unchanged prefix.
	split splitMemo
}

// hashMark is the SHA-256 state after hashing the span messages among
// msgs[:upto] (the non-pinned ones): every markEvery span messages, and
// at the end of the span hashed last (end).
type hashMark struct {
	upto  int
	state []byte
	end   bool
}

// known is what Compact learned of a request's messages before cutting
// it: their token counts and, when the conversation is remembered, the
// Validator that checked them.
type known struct {
	counts []int
	total  int
	m      *memo
	gen    uint64
	same   int // leading messages the memo knew before this request
	v      *briefd.Validator
}

// prepare validates and counts msgs, checking and counting only what the
// conversation's memo does not hold already.
func (e *Engine) prepare(ctx context.Context, req Request) (*known, error) {
	msgs := req.Messages
	m := e.memo.get(e.memoKey, req.Tenant, req.ConversationID)
	if m == nil {
		if err := briefd.Validate(msgs, e.cfg.Limits); err != nil {
			return nil, err
		}
		counts, total, err := e.countMessages(ctx, msgs, nil)
		if err != nil {
			return nil, err
		}
		return &known{counts: counts, total: total}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	same := m.prefix(msgs)
	m.gen++
	m.marks = dropMarks(m.marks, same)
	m.split.cut(same)
	if same < m.warmUpto {
		m.warmUpto = 0
		m.owner.setWarm(m, nil)
	}
	if m.v == nil || same < len(m.msgs) || m.v.Len() != len(m.msgs) {
		// Changed before its end (an edit, an undo): the validator cannot
		// go back, so the history is validated whole; counts and hash
		// checkpoints of the unchanged prefix stay.
		m.v = briefd.NewValidator(e.cfg.Limits)
		if err := m.v.Add(msgs[:same]...); err != nil {
			m.forget()
			return nil, err
		}
	}
	if err := m.v.Add(msgs[same:]...); err != nil {
		m.forget()
		return nil, err
	}
	counts, total, err := e.countMessages(ctx, msgs, m.counts[:same])
	if err != nil {
		m.forget()
		return nil, err
	}
	m.msgs = append(m.msgs[:same], msgs[same:]...)
	m.counts = counts
	m.owner.resize(m, len(m.msgs)+m.split.held())
	// The request's own counts: the memo's grow in place under later
	// requests.
	return &known{counts: slices.Clone(counts), total: total, m: m, gen: m.gen, same: same, v: m.v}, nil
}

// forget empties the memo after a failure; the caller holds m.mu.
func (m *memo) forget() {
	m.gen++
	m.msgs, m.counts, m.v, m.marks = nil, nil, nil, nil
	m.split = splitMemo{}
	m.warmUpto = 0
	m.owner.resize(m, 0)
	m.owner.setWarm(m, nil)
}

// takeWarm returns the briefing writer's model of the conversation's span
// compacted last, for a Write of this request's span (which extends it
// when the history did not change before its end), or an empty one; nil
// without a memo.
func (k *known) takeWarm() *brief.Warm {
	if k.m == nil {
		return nil
	}
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	if w := k.m.warm.Swap(nil); w != nil && k.m.gen == k.gen {
		return w
	}
	return &brief.Warm{}
}

// putWarm keeps w, the model of the span msgs[:upto] without its pinned
// messages, unless another request of the conversation came in between.
func (k *known) putWarm(w *brief.Warm, upto int) {
	if k.m == nil || w == nil || w.Len() == 0 {
		return
	}
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	if k.m.gen != k.gen {
		return
	}
	k.m.warmUpto = upto
	if !k.m.owner.setWarm(k.m, w) {
		k.m.warmUpto = 0
	}
}

// prefix returns how many leading messages of msgs are, field for field,
// the very messages the memo holds (same strings: it reads no text).
func (m *memo) prefix(msgs []briefd.Message) int {
	n := 0
	for n < len(msgs) && n < len(m.msgs) && sameMessage(&m.msgs[n], &msgs[n]) {
		n++
	}
	return n
}

func sameString(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// sameMessage reports whether a and b hold the very same strings, field
// for field (tool calls, parts and metadata included): Go strings do not
// change, so the same strings are the same content.
func sameMessage(a, b *briefd.Message) bool {
	if !sameString(a.ID, b.ID) || !sameString(string(a.Role), string(b.Role)) || !sameString(a.Content.Text, b.Content.Text) ||
		!sameString(a.Name, b.Name) || !sameString(a.ToolCallID, b.ToolCallID) || a.Pinned != b.Pinned ||
		(a.Content.Parts == nil) != (b.Content.Parts == nil) || len(a.Content.Parts) != len(b.Content.Parts) ||
		len(a.ToolCalls) != len(b.ToolCalls) || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for i := range a.Content.Parts {
		p, q := &a.Content.Parts[i], &b.Content.Parts[i]
		if !sameString(p.Type, q.Type) || !sameString(p.Text, q.Text) || (p.ImageURL == nil) != (q.ImageURL == nil) ||
			p.ImageURL != nil && (!sameString(p.ImageURL.URL, q.ImageURL.URL) || !sameString(p.ImageURL.Detail, q.ImageURL.Detail)) {
			return false
		}
	}
	for i := range a.ToolCalls {
		p, q := &a.ToolCalls[i], &b.ToolCalls[i]
		if !sameString(p.ID, q.ID) || !sameString(p.Type, q.Type) || !sameString(p.Function.Name, q.Function.Name) ||
			!sameString(p.Function.Arguments, q.Function.Arguments) {
			return false
		}
	}
	for k, v := range a.Metadata {
		w, ok := b.Metadata[k]
		if !ok || !sameString(v, w) {
			return false
		}
	}
	return true
}

// markEvery is how many span messages apart the span hash is
// checkpointed.
const markEvery = 64

// spanHash returns SpanHash of the non-pinned messages of msgs before
// boundary (pinned as the control's pins say), hashing only what follows
// the latest checkpoint the memo holds for the unchanged prefix and the
// same pins, and checkpointing as it goes.
func (k *known) spanHash(msgs []briefd.Message, pinned []bool, pins []string, boundary int) string {
	if k.m == nil {
		return spanHashFrom(sha256.New(), msgs, pinned, 0, boundary, nil)
	}
	m := k.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen != k.gen {
		// Another request of the conversation came in between.
		return spanHashFrom(sha256.New(), msgs, pinned, 0, boundary, nil)
	}
	if key := strings.Join(pins, "\x00"); key != m.pins {
		// Other pins, another span.
		m.marks, m.pins = nil, key
	}
	h := sha256.New()
	from := 0
	for i := len(m.marks) - 1; i >= 0; i-- {
		if mk := m.marks[i]; mk.upto <= boundary {
			if h.(encoding.BinaryUnmarshaler).UnmarshalBinary(mk.state) == nil {
				from = mk.upto
			} else {
				h.Reset()
			}
			break
		}
	}
	return spanHashFrom(h, msgs, pinned, from, boundary, func(upto int, end bool, h hash.Hash) {
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return
		}
		if end {
			// One end mark: the next span starts where this one ended.
			m.marks = slices.DeleteFunc(m.marks, func(mk hashMark) bool { return mk.end })
		}
		i, found := slices.BinarySearchFunc(m.marks, upto, func(mk hashMark, upto int) int { return mk.upto - upto })
		if !found {
			m.marks = slices.Insert(m.marks, i, hashMark{upto: upto, state: state, end: end})
		}
	})
}

// spanHashFrom continues h over the non-pinned messages of msgs[from:to]
// and returns the hex digest; mark, when set, is called every markEvery
// span messages and at the end.
func spanHashFrom(h hash.Hash, msgs []briefd.Message, pinned []bool, from, to int, mark func(upto int, end bool, h hash.Hash)) string {
	n := 0
	for i := from; i < to; i++ {
		if pinned[i] {
			continue
		}
		writeMessage(h, &msgs[i])
		if n++; mark != nil && n%markEvery == 0 {
			mark(i+1, false, h)
		}
	}
	if mark != nil && to > from {
		mark(to, true, h)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// dropMarks keeps the checkpoints within the first n messages.
func dropMarks(marks []hashMark, n int) []hashMark {
	i, _ := slices.BinarySearchFunc(marks, n+1, func(mk hashMark, upto int) int { return mk.upto - upto })
	return marks[:i]
}

// splice is briefd.Splice of msgs, checking only the seam when the
// conversation's Validator still holds exactly msgs.
func (k *known) splice(msgs []briefd.Message, b *briefd.Briefing) ([]briefd.Message, error) {
	if k.m != nil {
		k.m.mu.Lock()
		defer k.m.mu.Unlock()
		if k.m.gen == k.gen && k.m.v == k.v && k.v != nil && k.v.Len() == len(msgs) {
			return k.v.Splice(msgs, b)
		}
	}
	return briefd.Splice(msgs, b)
}
