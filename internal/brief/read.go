package brief

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/briefd/briefd"
)

// Reading messages: each tool call with its result becomes stepFacts, and
// each assistant text its sentences. Reading is the costly part of a
// briefing and depends only on the message contents, so it is cached by
// content hash: re-briefing a history that grew by one turn reads one turn.

// stepFacts is what one call and its result say.
type stepFacts struct {
	call    call
	out     output
	records []record
	cost    int
}

// Cache keeps per-step reading results, bounded by entries and bytes, safe
// for concurrent use. Nil is valid: nothing is kept.
type Cache struct {
	seed     maphash.Seed
	max      int
	maxBytes int

	mu    sync.Mutex
	used  int
	ll    *list.List
	items map[uint64]*list.Element
}

type cacheEntry struct {
	key   uint64
	facts *stepFacts
}

// Default bounds of a Cache.
const (
	DefaultCacheEntries = 50_000
	DefaultCacheBytes   = 128 << 20
)

// NewCache returns a cache of at most entries steps and maxBytes bytes;
// zero values mean the defaults.
func NewCache(entries, maxBytes int) *Cache {
	if entries <= 0 {
		entries = DefaultCacheEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{seed: maphash.MakeSeed(), max: entries, maxBytes: maxBytes, ll: list.New(), items: map[uint64]*list.Element{}}
}

// Len returns the number of steps cached.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Bytes returns the approximate bytes the cached steps hold.
func (c *Cache) Bytes() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

func (c *Cache) key(tc *briefd.ToolCall, result *briefd.Message, keepWarnings bool) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	str := func(tag byte, s string) {
		var n [9]byte
		n[0] = tag
		binary.LittleEndian.PutUint64(n[1:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	if keepWarnings {
		str('w', "")
	}
	str('n', tc.Function.Name)
	str('a', tc.Function.Arguments)
	if result != nil {
		str('r', result.Content.String())
	} else {
		str('x', "")
	}
	return h.Sum64()
}

// step returns the facts of a call and its result (nil when the result is
// missing), reading them on a miss.
func (c *Cache) step(tc *briefd.ToolCall, result *briefd.Message, keepWarnings bool) *stepFacts {
	if c == nil {
		return readStep(tc, result, keepWarnings)
	}
	k := c.key(tc, result, keepWarnings)
	c.mu.Lock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		f := e.Value.(*cacheEntry).facts
		c.mu.Unlock()
		return f
	}
	c.mu.Unlock()
	f := readStep(tc, result, keepWarnings)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		return e.Value.(*cacheEntry).facts
	}
	c.items[k] = c.ll.PushFront(&cacheEntry{key: k, facts: f})
	c.used += f.cost
	for c.ll.Len() > 1 && (c.ll.Len() > c.max || c.used > c.maxBytes) {
		last := c.ll.Back()
		c.ll.Remove(last)
		old := last.Value.(*cacheEntry)
		delete(c.items, old.key)
		c.used -= old.facts.cost
	}
	return f
}

// readStep reads one call and its result.
func readStep(tc *briefd.ToolCall, result *briefd.Message, keepWarnings bool) *stepFacts {
	f := &stepFacts{call: classifyCall(tc.Function.Name, tc.Function.Arguments)}
	if result != nil {
		text := result.Content.String()
		f.out = readOutput(text, keepWarnings)
		if f.call.kind == kindLookup || f.call.kind == kindMutate || f.call.kind == kindOther && f.call.args != nil {
			f.records = parseRecords(f.out.body, f.call.target)
		}
		if f.call.editorOpen && f.out.file != "" {
			op := kindView
			if f.call.kind == kindEdit {
				op = kindEdit
			}
			f.call.ops = append(f.call.ops, fileOp{path: f.out.file, op: op, what: editWhat(f.call, f.out)})
			f.call.target = f.out.file
		}
		// An editor view names its file in the output when the call did
		// not (SWE-agent's scroll_down).
		if f.call.kind == kindView && len(f.call.ops) == 0 && f.out.file != "" {
			f.call.ops = append(f.call.ops, fileOp{path: f.out.file, op: kindView})
		}
	}
	f.cost = 512 + len(f.out.body) + len(f.call.label)
	for _, l := range f.out.lines {
		f.cost += 16 + len(l)
	}
	for _, op := range f.call.ops {
		f.cost += 64 + len(op.body) + len(op.what)
	}
	for _, r := range f.records {
		for _, fl := range r.fields {
			f.cost += 32 + len(fl.value)
		}
	}
	return f
}

// editWhat describes a SWE-agent "edit A:B" by its line range and first
// new line.
func editWhat(c call, o output) string {
	if c.kind != kindEdit {
		return ""
	}
	rng := ""
	if i := strings.Index(c.label, "edit "); i >= 0 {
		rest := strings.Fields(c.label[i+5:])
		if len(rest) > 0 {
			rng = "lines " + strings.ReplaceAll(rest[0], ":", "-") + " replaced"
		}
	}
	if rng == "" {
		rng = "edited"
	}
	return rng
}
