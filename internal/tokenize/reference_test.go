package tokenize

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/examples"
	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// The reference is tiktoken-go's EncodeOrdinary with the offline loader:
// what briefd counted with before this package.

var setLoader = sync.OnceFunc(func() { tiktoken.SetBpeLoader(loader.NewOfflineLoader()) })

var references = map[string]func() (*tiktoken.Tiktoken, error){
	CL100K: sync.OnceValues(func() (*tiktoken.Tiktoken, error) { setLoader(); return tiktoken.GetEncoding(CL100K) }),
	O200K:  sync.OnceValues(func() (*tiktoken.Tiktoken, error) { setLoader(); return tiktoken.GetEncoding(O200K) }),
}

// patterns are tiktoken-go's pre-tokenizer patterns (encoding.go of
// pkoukk/tiktoken-go v0.1.8), to compare the pieces themselves.
var patterns = map[string]string{
	CL100K: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	O200K: strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
}

var compiledPatterns = map[string]func() *regexp2.Regexp{
	CL100K: sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(patterns[CL100K], regexp2.None) }),
	O200K:  sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(patterns[O200K], regexp2.None) }),
}

var encodingNames = []string{CL100K, O200K}

func get(t testing.TB, name string) *Encoding {
	t.Helper()
	e, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	r, err := references[name]()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// referencePieces cuts text with the reference's regexp, in runes as
// tiktoken-go does.
func referencePieces(t testing.TB, name, text string) []string {
	t.Helper()
	re := compiledPatterns[name]()
	runes := []rune(text)
	var out []string
	m, err := re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pieces(e *Encoding, text string) []string {
	text = asRunes(text)
	var out []string
	for i := 0; i < len(text); {
		j := e.next(text, i)
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// checkText compares the count of text, and its pieces when pieces is
// set, with the reference in both encodings.
func checkText(t *testing.T, text string, withPieces bool) {
	t.Helper()
	for _, name := range encodingNames {
		got, want := get(t, name).Count(text), len(reference(t, name).EncodeOrdinary(text))
		if got != want {
			t.Errorf("%s: count %d, tiktoken-go %d, text %q", name, got, want, clip(text))
		}
		if withPieces {
			got, want := pieces(get(t, name), text), referencePieces(t, name, text)
			if i := firstDiff(got, want); i >= 0 {
				t.Errorf("%s: piece %d is %q, regexp2's %q; text %q", name, i, at(got, i), at(want, i), clip(text))
			}
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

func firstDiff(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func TestCountKnownCases(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "a", " ", "\n", "hello world", "Hello, World!", "<|endoftext|>", "tiktoken is great!",
		"don't", "DON'T", "I'm you'RE we'Ve they'LL he'd 'sup", "'s", "' s", "x'", "''ll",
		"12345678", "1,234.5", "٣٤٥٦", "Ⅻ½", "3rd", "a1b2",
		"  leading", "trailing  ", "a  b", "a \n b", "\n\n\nx", "x\r\n\r\ny", " \t \n\t x", "\u00a0\u00a0x", "\u3000x",
		"\u0085x", "a\u2028b", "tab\tsep", "    indented code\n        more",
		"CamelCaseWord", "HTTPServer", "ÜBERgröße", "ǅungla", "ʰello", "日本語のテキスト", "한국어 텍스트", "مرحبا بالعالم",
		"e\u0301clair", "\u0301abc", "x\u0301\u0302", "ABC\u0301def", "Ａｂｃ", "ﬁne", "İstanbul", "ſtop 'ſ",
		"path/to/file.go", "a//b", "==> /usr/bin", "}\n\n/", "fn(x) -> y;\n", "<div class=\"x\">", "😀😀 ok 👍🏽",
		"\xff\xfe invalid \xc3", "\xe2\x82", "a\x00b", "\ufffd", strings.Repeat("=", 300), strings.Repeat(" ", 300),
		strings.Repeat("ab", 200), strings.Repeat("\n", 70) + "x",
	}
	for _, c := range cases {
		checkText(t, c, true)
	}
}

// checkHistories compares every string a history holds: each content (or
// text part), name, tool-call name and arguments.
func checkHistories(t *testing.T, hs []*briefd.History) {
	var texts []string
	for _, h := range hs {
		for _, m := range h.Messages {
			texts = append(texts, m.Content.Text, m.Name)
			for _, p := range m.Content.Parts {
				texts = append(texts, p.Text)
			}
			for _, tc := range m.ToolCalls {
				texts = append(texts, tc.Function.Name, tc.Function.Arguments)
			}
		}
	}
	n := 0
	for _, name := range encodingNames {
		e, ref := get(t, name), reference(t, name)
		for _, text := range texts {
			if text == "" {
				continue
			}
			n++
			if got, want := e.Count(text), len(ref.EncodeOrdinary(text)); got != want {
				t.Errorf("%s: count %d, tiktoken-go %d, text (%d bytes) %q", name, got, want, len(text), clip(text))
			}
		}
	}
	t.Logf("%d strings compared", n)
}

func TestCountExampleHistories(t *testing.T) {
	t.Parallel()
	hs, err := examples.Histories()
	if err != nil {
		t.Fatal(err)
	}
	checkHistories(t, hs)
}

// sharedDir is the shared data beside the repository; absent in a fresh
// clone, where the tests that read it skip.
const sharedDir = "../../../shared/data"

func loadShared(t *testing.T, dir string) []*briefd.History {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedDir, dir, "*.json"))
	if len(files) == 0 {
		t.Skipf("no shared histories in %s", filepath.Join(sharedDir, dir))
	}
	var out []*briefd.History
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, h)
	}
	return out
}

func TestCountSharedHistories(t *testing.T) {
	t.Parallel()
	checkHistories(t, loadShared(t, "histories"))
}

func TestCountSharedLongRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("long runs: -short")
	}
	t.Parallel()
	checkHistories(t, loadShared(t, "long"))
}

// randomText builds text from the pieces that matter to the patterns:
// letters of every case category, marks, numbers, every kind of space,
// apostrophes before contraction letters, punctuation, slashes, invalid
// bytes, and long runs without whitespace.
func randomText(r *rand.Rand, size int) string {
	alphabet := []string{
		"a", "e", "s", "t", "l", "d", "m", "r", "v", "x", "A", "S", "T", "L", "D", "M", "R", "V", "E",
		"é", "É", "ß", "ǅ", "ʰ", "ª", "日", "本", "ö", "Ω", "ω", "ﬁ", "İ", "ſ", "K",
		"\u0301", "\u0308", "\u20dd", "\u0903",
		"0", "7", "٣", "½", "Ⅻ", "²",
		" ", " ", " ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u2028", "\u3000", "\u200b",
		"'", "'", "’", ".", ",", "!", "?", "-", "_", "/", "//", "\\", "(", ")", "{", "}", "<", ">", "=", "\"", "#", "*", "😀", "\ufffd",
		"\xff", "\xc3", "\xe2\x82", "\x00",
	}
	var b strings.Builder
	for b.Len() < size {
		switch r.IntN(10) {
		case 0: // a run without whitespace
			tok := alphabet[r.IntN(len(alphabet))]
			b.WriteString(strings.Repeat(tok, 1+r.IntN(80)))
		case 1: // a word from the vocabulary's world
			words := []string{"the", "The", " don't", "I'M", "we're", "They'll", "func", "http://x.io/a/b", "0x7fff", "2024-01-02", "    ", "\n\n", "\r\n  "}
			b.WriteString(words[r.IntN(len(words))])
		default:
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
	}
	return b.String()
}

func TestCountRandomText(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		checkText(t, randomText(r, 1+r.IntN(200)), true)
		if t.Failed() {
			return
		}
	}
}

// TestCountLongRuns compares pieces far longer than smallPiece, which take
// the heap merge, with the reference (whose merge is quadratic: the sizes
// stay small enough for it).
func TestCountLongRuns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	letters := func(alpha string, n int) string {
		rs := []rune(alpha)
		var b strings.Builder
		for range n {
			b.WriteRune(rs[r.IntN(len(rs))])
		}
		return b.String()
	}
	texts := []string{
		strings.Repeat("x", 20000),
		strings.Repeat("ab", 5000),
		strings.Repeat("abc", 3000) + strings.Repeat("z", 3001),
		strings.Repeat("=", 10000) + "\n",
		strings.Repeat(" ", 10000) + "x",
		strings.Repeat("日本", 3000),
		letters("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 12000),
		letters("aeiouAEIOUbcdfgxyzéüß", 12000),
		letters("+-*/=<>!?.,;:|&^%$#@~", 12000),
		letters("ACGT", 12000),
	}
	for _, text := range texts {
		checkText(t, text, false)
	}
}

// TestMergeHeapMatchesSmall checks the heap merge against tiktoken's loop
// (mergeSmall) on random pieces of every size the latter takes.
func TestMergeHeapMatchesSmall(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for _, name := range encodingNames {
		e := get(t, name)
		var sc scratch
		for range 20000 {
			text := randomText(r, 2+r.IntN(smallPiece-1))
			if len(text) > smallPiece {
				text = text[:smallPiece]
			}
			want := e.ranks.mergeSmall(text)
			got, err := e.ranks.mergeHeap(context.Background(), text, &sc)
			if err != nil || got != want {
				t.Fatalf("%s: heap merge %d (%v), scan %d, piece %q", name, got, err, want, text)
			}
			got, err = e.ranks.mergeByRank(context.Background(), text, &sc.byRank)
			if err != nil || got != want {
				t.Fatalf("%s: merge by rank %d (%v), scan %d, piece %q", name, got, err, want, text)
			}
		}
	}
}

func TestPiecesCoverValidUTF8(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		text := randomText(r, 100)
		for _, name := range encodingNames {
			ps := pieces(get(t, name), text)
			if strings.Join(ps, "") != asRunes(text) {
				t.Fatalf("%s: pieces do not cover the text", name)
			}
			for _, p := range ps {
				if p == "" || !utf8.ValidString(p) {
					t.Fatalf("%s: bad piece %q", name, p)
				}
			}
		}
	}
}

// FuzzCount compares counts and pieces with tiktoken-go and regexp2 on
// random text: go test -fuzz FuzzCount ./internal/tokenize
func FuzzCount(f *testing.F) {
	for _, s := range []string{
		"hello world", "don't STOP'LL", "  \n\t x", "日本語 text 123456", "e\u0301\u0301A", "ABCdef'S",
		"a/b//c\r\n/", "\xff\xfe", strings.Repeat("x", 500), "$ ls -la\n", "\u00a0 \u2028\u0085", "ǅǅa", "1234½",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1024 {
			t.Skip("the reference's merge is quadratic; long runs are TestCountLongRuns's")
		}
		checkText(t, text, true)
	})
}
