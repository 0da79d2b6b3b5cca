package tokenize

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/briefd/briefd/internal/tokenize/vocabfile"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// TestVocabFilesUpToDate checks that the embedded vocabularies are what go
// generate writes from tiktoken-go-loader's rank files.
func TestVocabFilesUpToDate(t *testing.T) {
	t.Parallel()
	for name, embedded := range map[string]string{CL100K: cl100kVocab, O200K: o200kVocab} {
		ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
		if err != nil {
			t.Fatal(err)
		}
		data, err := vocabfile.Marshal(ranks)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != embedded {
			t.Errorf("%s.vocab differs from what go generate writes (%d vs %d bytes): run go generate ./internal/tokenize", name, len(embedded), len(data))
		}
		e := get(t, name)
		for tok, r := range ranks {
			if got, ok := e.ranks.rank(tok); !ok || int(got) != r {
				t.Fatalf("%s: rank of %q is %d %v, want %d", name, tok, got, ok, r)
			}
		}
	}
}

func TestGetUnknownEncoding(t *testing.T) {
	if _, err := Get("p50k_base"); err == nil || !strings.Contains(err.Error(), "p50k_base") {
		t.Fatalf("err = %v", err)
	}
}

// TestClassify checks the pre-tokenizer's classes of every character
// against their definitions in Go's unicode tables (the ones regexp2 uses).
func TestClassify(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		var want class
		if unicode.Is(unicode.L, r) {
			want |= clLetter
		}
		if unicode.Is(unicode.N, r) {
			want |= clNumber
		}
		if unicode.IsSpace(r) {
			want |= clSpace
		}
		if r == '\r' || r == '\n' {
			want |= clNewline
		}
		if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
			want |= clUpper
		}
		if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
			want |= clLower
		}
		var buf [4]byte
		if got, _ := classAt(string(buf[:utf8.EncodeRune(buf[:], r)]), 0); got != want && !isSurrogate(r) {
			t.Fatalf("class of %U: %b, want %b", r, got, want)
		}
	}
}

func isSurrogate(r rune) bool { return r >= 0xD800 && r <= 0xDFFF }

func TestCountContextCancelled(t *testing.T) {
	t.Parallel()
	e := get(t, O200K)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("deadline of the worker")
	cancel(cause)
	for _, text := range []string{strings.Repeat("x", 1<<20), strings.Repeat("word ", 1<<18)} {
		if n, err := e.CountContext(ctx, text); !errors.Is(err, cause) {
			t.Errorf("CountContext on a cancelled context: %d, %v", n, err)
		}
	}
	// Short texts finish without looking at the context.
	if n, err := e.CountContext(ctx, "hello world"); err != nil || n != 2 {
		t.Errorf("short text: %d, %v", n, err)
	}
}
