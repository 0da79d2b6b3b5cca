package compact

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/tokenize"
)

// Token encodings the engine supports.
const (
	EncodingO200K  = tokenize.O200K
	EncodingCL100K = tokenize.CL100K
)

// Token costs that are not text.
const (
	// ImageTokens is what an image part costs: OpenAI's flat price of a
	// low-detail image. The URL itself is not counted.
	ImageTokens = 85
	// toolCallOverhead frames each tool call (id, type, braces).
	toolCallOverhead = 3
	// nameOverhead is the extra token OpenAI charges when a message has a name.
	nameOverhead = 1
)

// o200kPrefixes are the model families that use o200k_base.
var o200kPrefixes = []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "gpt-oss", "o1", "o3", "o4"}

// EncodingForModel returns the token encoding of a model: o200k_base for
// the gpt-4o, gpt-4.1, gpt-4.5, gpt-5, gpt-oss and o-series families,
// cl100k_base for anything else (the better guess for unknown models). A
// provider prefix such as "openai/" is ignored.
func EncodingForModel(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range o200kPrefixes {
		if m == p || strings.HasPrefix(m, p+"-") || strings.HasPrefix(m, p+".") {
			return EncodingO200K
		}
	}
	return EncodingCL100K
}

// Cache sizes of a TokenCounter, in entries (16 bytes each).
const (
	messageCacheSize = 1 << 16
	chunkCacheSize   = 1 << 17
)

// Chunking of long texts. A text is cut after a newline that is followed
// by an ASCII letter or digit or '-': the pre-tokenizer of both encodings
// always ends a piece there (the patterns that take a newline are runs of
// spaces and the newlines trailing punctuation, [\r\n]* in cl100k and
// [\r\n/]* in o200k, and none takes a letter, digit or '-' after it), so
// the sum of the chunks' counts is exactly the text's count, and an edited
// text only re-tokenizes the chunks that changed. '-' matters: a briefing's
// lines are list items, and with letters alone a section of 25 KB was one
// chunk, re-encoded whole when any of its lines changed. The target is a few lines of a
// briefing: a warm briefing writer counts texts of ~170 KB that differ from
// the last ones in scattered lines, and each changed line costs its whole
// chunk (at 1 KB, ~30 KB re-encoded per briefing at 1M tokens).
const (
	chunkTarget = 256 // cut at the first safe point after this many bytes
	chunkMin    = 32  // texts shorter than this are not cached
)

// TokenCounter counts tokens exactly as tiktoken does, with one encoding
// (see package tokenize). It caches counts by content hash, per message and
// per chunk of long text, in bounded caches, so a history that grew by one
// message costs one message of tokenization. It is safe for concurrent use.
type TokenCounter struct {
	enc      *tokenize.Encoding
	encName  string
	overhead int
	seed     maphash.Seed
	messages countCache
	chunks   countCache
}

// NewTokenCounter returns a counter for model (see [EncodingForModel]) or,
// when encoding is not empty, for that encoding. perMessageOverhead is added
// to every [TokenCounter.CountMessage]; negative means zero. It never
// touches the network: the encodings are embedded.
func NewTokenCounter(model, encoding string, perMessageOverhead int) (*TokenCounter, error) {
	if encoding == "" {
		encoding = EncodingForModel(model)
	}
	tk, err := tokenize.Get(encoding)
	if err != nil {
		return nil, fmt.Errorf("compact: token counter: %w", err)
	}
	return &TokenCounter{
		enc:      tk,
		encName:  encoding,
		overhead: max(perMessageOverhead, 0),
		seed:     maphash.MakeSeed(),
		messages: newCountCache(messageCacheSize),
		chunks:   newCountCache(chunkCacheSize),
	}, nil
}

// Encoding returns the name of the counter's encoding.
func (c *TokenCounter) Encoding() string { return c.encName }

// Count returns the number of tokens of text, with special tokens counted
// as ordinary text (as an API does with user content).
func (c *TokenCounter) Count(text string) int {
	n, _ := c.CountContext(context.Background(), text)
	return n
}

// CountContext is [TokenCounter.Count] that gives up when ctx ends,
// returning its cause; a long text stops within milliseconds.
func (c *TokenCounter) CountContext(ctx context.Context, text string) (int, error) {
	if len(text) < chunkMin {
		return c.enc.CountContext(ctx, text)
	}
	total := 0
	for len(text) > 0 {
		n := chunkEnd(text)
		k, err := c.countChunk(ctx, text[:n])
		if err != nil {
			return 0, err
		}
		total += k
		text = text[n:]
	}
	return total, nil
}

// chunkEnd returns the length of text's first chunk.
func chunkEnd(text string) int {
	i := chunkTarget
	for i < len(text) {
		j := strings.IndexByte(text[i-1:], '\n')
		if j < 0 {
			return len(text)
		}
		i += j // text[i-1] == '\n'
		if i < len(text) && startsPiece(text[i]) {
			return i
		}
		i++
	}
	return len(text)
}

// startsPiece reports whether a piece always starts at b after a newline
// (see the chunking above; TestChunkSplitsAreExact checks every cut).
func startsPiece(b byte) bool {
	return b|0x20 >= 'a' && b|0x20 <= 'z' || b >= '0' && b <= '9' || b == '-'
}

func (c *TokenCounter) countChunk(ctx context.Context, chunk string) (int, error) {
	if len(chunk) < chunkMin {
		return c.enc.CountContext(ctx, chunk)
	}
	key := maphash.String(c.seed, chunk)
	if n, ok := c.chunks.get(key); ok {
		return n, nil
	}
	n, err := c.enc.CountContext(ctx, chunk)
	if err != nil {
		return 0, err
	}
	c.chunks.put(key, n)
	return n, nil
}

// encode counts text uncached.
func (c *TokenCounter) encode(text string) int { return c.enc.Count(text) }

// CountMessage returns the tokens a message costs in a prompt: the
// per-message overhead, its content (each image part [ImageTokens]), its
// name, and each tool call's name and arguments plus a small framing cost.
// Counts are cached by a hash of the message's content (not its id).
func (c *TokenCounter) CountMessage(m *briefd.Message) int {
	n, _ := c.CountMessageContext(context.Background(), m)
	return n
}

// CountMessageContext is [TokenCounter.CountMessage] that gives up when ctx
// ends, returning its cause.
func (c *TokenCounter) CountMessageContext(ctx context.Context, m *briefd.Message) (int, error) {
	key := c.messageKey(m)
	if n, ok := c.messages.get(key); ok {
		return n, nil
	}
	n := c.overhead
	var err error
	add := func(text string) {
		if err == nil {
			var k int
			k, err = c.CountContext(ctx, text)
			n += k
		}
	}
	if m.Content.Parts == nil {
		add(m.Content.Text)
	}
	for _, p := range m.Content.Parts {
		if p.Type == "text" {
			add(p.Text)
		} else {
			n += ImageTokens
		}
	}
	if m.Name != "" {
		add(m.Name)
		n += nameOverhead
	}
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead
		add(tc.Function.Name)
		add(tc.Function.Arguments)
	}
	if err != nil {
		return 0, err
	}
	c.messages.put(key, n)
	return n, nil
}

// messageKey hashes every field CountMessage reads, each length-prefixed so
// that different messages cannot produce the same byte stream.
func (c *TokenCounter) messageKey(m *briefd.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var buf [binary.MaxVarintLen64]byte
	str := func(s string) {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(s)))])
		h.WriteString(s)
	}
	str(string(m.Role))
	str(m.Name)
	if m.Content.Parts == nil {
		str("s")
		str(m.Content.Text)
	} else {
		str("p")
		for _, p := range m.Content.Parts {
			str(p.Type)
			str(p.Text)
		}
	}
	for _, tc := range m.ToolCalls {
		str("c")
		str(tc.Function.Name)
		str(tc.Function.Arguments)
	}
	return h.Sum64()
}

// countCache is a bounded map from hash to count with two generations:
// when the current one is full it becomes the old one, and entries found
// in the old one move back. Recently used entries survive, at O(1) cost.
type countCache struct {
	mu       sync.Mutex
	cur, old map[uint64]int32
	half     int
}

func newCountCache(size int) countCache {
	return countCache{cur: make(map[uint64]int32), half: size / 2}
}

func (cc *countCache) get(k uint64) (int, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if v, ok := cc.cur[k]; ok {
		return int(v), true
	}
	if v, ok := cc.old[k]; ok {
		cc.putLocked(k, v)
		return int(v), true
	}
	return 0, false
}

func (cc *countCache) put(k uint64, n int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.putLocked(k, int32(min(n, 1<<31-1)))
}

func (cc *countCache) putLocked(k uint64, v int32) {
	if len(cc.cur) >= cc.half {
		cc.old, cc.cur = cc.cur, make(map[uint64]int32, cc.half)
	}
	cc.cur[k] = v
}
