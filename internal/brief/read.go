package brief

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
	"hash/maphash"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
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
	// argIDs and outIDs are the distinct identifiers of the call's
	// arguments and of its result.
	argIDs, outIDs []string
	cost           int
	// answer hashes the result's whole text (FNV-1a), to tell a call
	// repeated with the same answer; hasAnswer reports a result.
	answer    uint64
	hasAnswer bool

	// salient remembers the output lines a reaction referred to, by the
	// reaction's hash and the number asked for.
	salMu   sync.Mutex
	salient map[salientKey][]string
}

type salientKey struct {
	react uint64
	n     int
}

// textFacts is what one text of the assistant or the user says: its
// sentences sorted into intentions and decisions, its identifiers, and
// its distinctive words.
type textFacts struct {
	intents   []string
	decisions []string
	sentences []string
	idents    []string
	words     []string
	lineRefs  map[string]bool
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
	text  *textFacts
	cost  int
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
	return c.put(&cacheEntry{key: k, facts: f, cost: f.cost}).facts
}

// text returns the facts of an assistant's or a user's text.
func (c *Cache) text(t string) *textFacts {
	if c == nil {
		return readText(t)
	}
	k := maphash.String(c.seed, t) ^ 0x9e3779b97f4a7c15 // apart from step keys
	c.mu.Lock()
	if e, ok := c.items[k]; ok && e.Value.(*cacheEntry).text != nil {
		c.ll.MoveToFront(e)
		f := e.Value.(*cacheEntry).text
		c.mu.Unlock()
		return f
	}
	c.mu.Unlock()
	f := readText(t)
	return c.put(&cacheEntry{key: k, text: f, cost: 256 + len(t)}).text
}

// idents returns the distinct identifiers of a briefing line.
func (c *Cache) idents(t string) []string {
	if c == nil {
		return distinctIdents(t)
	}
	k := maphash.String(c.seed, t) ^ 0x517cc1b727220a95 // apart from other keys
	c.mu.Lock()
	if e, ok := c.items[k]; ok && e.Value.(*cacheEntry).text != nil {
		c.ll.MoveToFront(e)
		ids := e.Value.(*cacheEntry).text.idents
		c.mu.Unlock()
		return ids
	}
	c.mu.Unlock()
	f := &textFacts{idents: distinctIdents(t)}
	if f.idents == nil {
		f.idents = []string{}
	}
	return c.put(&cacheEntry{key: k, text: f, cost: 64 + len(t)}).text.idents
}

// put adds an entry (or returns the one another reader added first) and
// evicts the least recently used beyond the bounds.
func (c *Cache) put(e *cacheEntry) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[e.key]; ok {
		return old.Value.(*cacheEntry)
	}
	c.items[e.key] = c.ll.PushFront(e)
	c.used += e.cost
	for c.ll.Len() > 1 && (c.ll.Len() > c.max || c.used > c.maxBytes) {
		last := c.ll.Back()
		c.ll.Remove(last)
		old := last.Value.(*cacheEntry)
		delete(c.items, old.key)
		c.used -= old.cost
	}
	return e
}

// readText reads an assistant's or a user's text.
func readText(t string) *textFacts {
	f := &textFacts{idents: distinctIdents(t), words: keyWords(t), lineRefs: lineRefs(t)}
	for k, s := range sentences(t) {
		f.sentences = append(f.sentences, s)
		if retractRe.MatchString(s) {
			// "Ah, I see what happened": what the message reasoned before
			// it is what the agent took back, not a finding.
			f.decisions = f.decisions[:0]
		}
		switch {
		case isIntention(s):
			f.intents = append(f.intents, s)
		case isDecision(s):
			// "So I should revert lines 987 and 1671." decides on the
			// sentence before it: the reason goes with it.
			if k > 0 && (conclusionRe.MatchString(s) || anaphorRe.MatchString(s)) {
				// Only a sentence that ends as one: a label ("`x.py`:") or
				// another conclusion is not the reason.
				if prev := f.sentences[k-1]; len(prev) <= 240 && len(prev) >= 20 && !isDecision(prev) &&
					!conclusionRe.MatchString(prev) && strings.ContainsAny(prev[len(prev)-1:], ".!)") {
					s = prev + " " + s
				}
			}
			f.decisions = append(f.decisions, s)
		}
	}
	return f
}

// retractRe starts a sentence by which the agent takes back what it
// reasoned before it in the same message.
var retractRe = regexp.MustCompile(`^(?:(?:Ah|Oh),? I see what(?:'s| is)? (?:happened|going on|wrong)|I see (?:now )?what (?:happened|went wrong)|I was wrong|My mistake|I made a mistake|(?:No|Wait|Actually),? (?:that(?:'s| is)|I was) (?:not right|wrong|incorrect))\b`)

// anaphorRe starts a sentence that names what the one before said ("This
// restores the previous behaviour …"): quoted alone it names nothing.
var anaphorRe = regexp.MustCompile(`^(?:This|That|These|Those|It)\s+(?:\w+s|is|was|are|were|means|will|would|should|must|can)\b`)

// conclusionRe starts a sentence that concludes from the one before.
var conclusionRe = regexp.MustCompile(`^(?:So|Therefore|Thus|Hence|That(?:'s| is) why|This is why|Consequently)\b`)

// distinctIdents returns the identifiers of a text once each, reading at
// most its first 200 KB.
func distinctIdents(t string) []string {
	var out []string
	seen := map[string]bool{}
	ident.Scan(headOf(t, 200_000), func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	})
	return out
}

// readStep reads one call and its result.
func readStep(tc *briefd.ToolCall, result *briefd.Message, keepWarnings bool) *stepFacts {
	f := &stepFacts{call: classifyCall(tc.Function.Name, tc.Function.Arguments)}
	f.argIDs = distinctIdents(argText(tc.Function.Arguments))
	if result != nil {
		text := result.Content.String()
		h := fnv.New64a()
		io.WriteString(h, text)
		f.answer, f.hasAnswer = h.Sum64(), true
		f.outIDs = distinctIdents(text)
		f.out = readOutput(text, keepWarnings, f.call.kind == kindList)
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
	for _, id := range f.argIDs {
		f.cost += 24 + len(id)
	}
	for _, id := range f.outIDs {
		f.cost += 24 + len(id)
	}
	for _, l := range f.out.lines {
		f.cost += 16 + len(l)
	}
	for _, op := range f.call.ops {
		f.cost += 64 + len(op.body) + len(op.what)
	}
	for _, r := range f.records {
		for _, fl := range r.fields {
			f.cost += 32 + len(fl.value) + len(fl.brief)
		}
	}
	return f
}

// argText is the text of a call's arguments: the JSON's string values
// decoded (so an escaped "\u003c" is not read as a word), or the raw
// arguments when they are not JSON.
func argText(raw string) string {
	a := parseArgs(raw)
	if a == nil {
		return raw
	}
	var b strings.Builder
	for _, k := range sortedKeysOf(a) {
		b.WriteString(condenseArg(a[k]))
		b.WriteByte('\n')
	}
	return b.String()
}

func condenseArg(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = condenseArg(e)
		}
		return strings.Join(parts, " ")
	case map[string]any:
		var parts []string
		for _, k := range sortedKeysOf(x) {
			parts = append(parts, condenseArg(x[k]))
		}
		return strings.Join(parts, " ")
	}
	return scalarString(v)
}

func sortedKeysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
			// "edit 1:1; #!/usr/bin/perl; …": a short script's label
			// joins its lines with "; " (shellLabel).
			rng = "lines " + strings.ReplaceAll(strings.TrimRight(rest[0], ";"), ":", "-") + " replaced"
		}
	}
	if rng == "" {
		rng = "edited"
	}
	return rng
}
