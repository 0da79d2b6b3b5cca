// Package tokenize counts the tokens of text in OpenAI's cl100k_base and
// o200k_base byte-pair encodings, exactly as tiktoken-go's EncodeOrdinary
// does (special tokens such as <|endoftext|> are ordinary text), without
// building the tokens and in O(n log n) time on any input.
//
// It has three parts: a hand-written pre-tokenizer per encoding that cuts
// text into the pieces tiktoken's regular expression matches
// (pretokenize.go), a count-only byte-pair merge of each piece (bpe.go),
// and the rank tables, embedded pre-built and indexed on first use
// (ranks.go, the *.vocab files written by go generate). Nothing touches the
// network.
//
// Invalid UTF-8 counts as tiktoken-go counts it: each invalid byte as
// U+FFFD.
package tokenize

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/briefd/briefd/internal/tokenize/vocabfile"
)

//go:generate go run ./gen -dir .

// Names of the encodings.
const (
	CL100K = "cl100k_base"
	O200K  = "o200k_base"
)

var (
	//go:embed cl100k_base.vocab
	cl100kVocab string
	//go:embed o200k_base.vocab
	o200kVocab string
)

// Encoding counts tokens in one encoding. It is immutable and safe for
// concurrent use.
type Encoding struct {
	name  string
	next  func(s string, i int) int
	ranks *rankTable
}

// encodings are built on first use, once per process, like a compiled
// regexp: the index costs a few milliseconds.
var encodings = map[string]func() (*Encoding, error){
	CL100K: sync.OnceValues(func() (*Encoding, error) { return load(CL100K, cl100kVocab, nextCL100K) }),
	O200K:  sync.OnceValues(func() (*Encoding, error) { return load(O200K, o200kVocab, nextO200K) }),
}

func load(name, vocab string, next func(string, int) int) (*Encoding, error) {
	v, err := vocabfile.Parse(vocab)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", name, err)
	}
	t, err := newRankTable(v)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", name, err)
	}
	return &Encoding{name: name, next: next, ranks: t}, nil
}

// Get returns the encoding called name: [CL100K] or [O200K].
func Get(name string) (*Encoding, error) {
	get, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("tokenize: unknown encoding %q (want %s or %s)", name, CL100K, O200K)
	}
	return get()
}

// Name returns the encoding's name.
func (e *Encoding) Name() string { return e.name }

// Count returns the number of tokens of text.
func (e *Encoding) Count(text string) int {
	n, _ := e.CountContext(context.Background(), text)
	return n
}

// ctxCheckBytes is how much text is counted between two looks at the
// context.
const ctxCheckBytes = 1 << 16

// CountContext returns the number of tokens of text, or the context's
// error (its cause) when ctx ends first; a long text stops within
// milliseconds.
func (e *Encoding) CountContext(ctx context.Context, text string) (int, error) {
	text = asRunes(text)
	var sc scratch
	count, check := 0, ctxCheckBytes
	for i := 0; i < len(text); {
		if i >= check {
			if err := ctx.Err(); err != nil {
				return 0, context.Cause(ctx)
			}
			check = i + ctxCheckBytes
		}
		j := e.next(text, i)
		n, err := e.ranks.countPiece(ctx, text[i:j], &sc)
		if err != nil {
			return 0, err
		}
		count += n
		i = j
	}
	return count, nil
}

// asRunes returns text with each invalid UTF-8 byte replaced by U+FFFD, as
// Go's []rune conversion does (and so tiktoken-go, which cuts the pieces
// out of []rune(text)).
func asRunes(text string) string {
	if utf8.ValidString(text) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + len(text)/2)
	for _, r := range text {
		b.WriteRune(r)
	}
	return b.String()
}
