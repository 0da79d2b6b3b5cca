package tokenize

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/tokenize/vocabfile"
)

// BenchmarkCount measures counting real agent text (the three example
// histories, 160 KB) against tiktoken-go.
func BenchmarkCount(b *testing.B) {
	hs, err := examples.Histories()
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for _, h := range hs {
		for _, m := range h.Messages {
			sb.WriteString(m.Content.String())
			for _, tc := range m.ToolCalls {
				sb.WriteString(tc.Function.Arguments)
			}
		}
	}
	text := sb.String()
	for _, name := range encodingNames {
		e := get(b, name)
		tokens := e.Count(text)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				e.Count(text)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tokens), "ns/token")
		})
		ref := reference(b, name)
		b.Run(name+"/tiktoken-go", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				ref.EncodeOrdinary(text)
			}
		})
	}
}

// BenchmarkCountNoWhitespace counts 5 MiB without whitespace (goal: under
// 2 s): one letter repeated and random letters (each one 5 MiB piece for
// the byte-pair merge), a line of '=' (one piece of punctuation), and
// base64 without line breaks (many short pieces).
func BenchmarkCountNoWhitespace(b *testing.B) {
	const size = 5 << 20
	r := rand.New(rand.NewPCG(1, 1))
	random := func(alpha string) string {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = alpha[r.IntN(len(alpha))]
		}
		return string(buf)
	}
	raw := make([]byte, size*3/4)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	texts := []struct{ name, text string }{
		{"x", strings.Repeat("x", size)},
		{"letters", random("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")},
		{"equals", strings.Repeat("=", size)},
		{"base64", base64.StdEncoding.EncodeToString(raw)},
	}
	for _, tt := range texts {
		for _, name := range encodingNames {
			e := get(b, name)
			b.Run(tt.name+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(tt.text)))
				b.ReportAllocs()
				for b.Loop() {
					e.Count(tt.text)
				}
			})
		}
	}
}

// BenchmarkLoad measures what the first Get of an encoding costs a
// process: parsing the embedded vocabulary and indexing it.
func BenchmarkLoad(b *testing.B) {
	for _, tt := range []struct{ name, vocab string }{{CL100K, cl100kVocab}, {O200K, o200kVocab}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := vocabfile.Parse(tt.vocab)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := newRankTable(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
