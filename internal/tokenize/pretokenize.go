package tokenize

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizers: hand-written scanners that cut text into exactly the
// pieces that tiktoken-go's regexp2 patterns match, in linear time. Each
// next* function returns the end of the piece that starts at i; s is valid
// UTF-8. The patterns, with regexp2's (backtracking, leftmost-first)
// semantics, where \s is unicode.IsSpace and \p{..} Go's unicode tables:
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// o200k_base (one line in the library):
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Every character starts some alternative, so the pieces cover the text.

// class is the set of pattern classes a character belongs to.
type class uint8

const (
	clLetter  class = 1 << iota // \p{L}
	clNumber                    // \p{N}
	clSpace                     // \s
	clNewline                   // \r or \n
	clUpper                     // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clLower                     // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

// latin1 holds the classes of U+0000..U+00FF, the common case.
var latin1 = func() (t [256]class) {
	for r := range t {
		t[r] = classify(rune(r))
	}
	return t
}()

// classify computes a character's classes from Go's unicode tables, as
// regexp2 does; the letter categories are tested most frequent first.
func classify(r rune) class {
	var c class
	switch {
	case unicode.Is(unicode.Lo, r), unicode.Is(unicode.Lm, r):
		c = clLetter | clUpper | clLower
	case unicode.Is(unicode.Ll, r):
		c = clLetter | clLower
	case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
		c = clLetter | clUpper
	case unicode.Is(unicode.M, r):
		c = clUpper | clLower
	case unicode.Is(unicode.N, r):
		c = clNumber
	}
	if unicode.IsSpace(r) {
		c |= clSpace
	}
	if r == '\r' || r == '\n' {
		c |= clNewline
	}
	return c
}

// classAt returns the classes and the width of the character at s[i].
func classAt(s string, i int) (class, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return latin1[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r < 256 {
		return latin1[r], w
	}
	return classify(r), w
}

// run returns the end of the run of characters of class cl from i.
func run(s string, i int, cl class) int {
	for i < len(s) {
		c, w := classAt(s, i)
		if c&cl == 0 {
			break
		}
		i += w
	}
	return i
}

// prefixable reports whether a character of class c matches
// [^\r\n\p{L}\p{N}], the optional first character of a word.
func prefixable(c class) bool { return c&(clNewline|clLetter|clNumber) == 0 }

// nextCL100K returns the end of the cl100k_base piece starting at i.
func nextCL100K(s string, i int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' {
		if n := contraction(s, i); n > 0 {
			return i + n
		}
	}
	c0, w0 := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0&clLetter != 0 {
		return run(s, i, clLetter)
	}
	if prefixable(c0) && i+w0 < len(s) {
		if c1, _ := classAt(s, i+w0); c1&clLetter != 0 {
			return run(s, i+w0, clLetter)
		}
	}
	// \p{N}{1,3}
	if c0&clNumber != 0 {
		return numbers(s, i)
	}
	// ' '?[^\s\p{L}\p{N}]+[\r\n]*
	if e := punctuation(s, i, false); e > i {
		return e
	}
	return spaces(s, i)
}

// nextO200K returns the end of the o200k_base piece starting at i.
func nextO200K(s string, i int) int {
	c0, w0 := classAt(s, i)
	// The optional [^\r\n\p{L}\p{N}] of the two word alternatives is tried
	// present first, then absent, before the next alternative.
	prefix := prefixable(c0) && i+w0 < len(s)
	if prefix {
		if e := wordLower(s, i+w0); e >= 0 {
			return e
		}
	}
	if e := wordLower(s, i); e >= 0 {
		return e
	}
	if prefix {
		if e := wordUpper(s, i+w0); e >= 0 {
			return e
		}
	}
	if e := wordUpper(s, i); e >= 0 {
		return e
	}
	// \p{N}{1,3}
	if c0&clNumber != 0 {
		return numbers(s, i)
	}
	// ' '?[^\s\p{L}\p{N}]+[\r\n/]*
	if e := punctuation(s, i, true); e > i {
		return e
	}
	return spaces(s, i)
}

// wordLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and an optional contraction at i, returning its end or -1. The first
// class is greedy, so the second begins at the last character of the
// first's run that is also in the second, or just after the run.
func wordLower(s string, i int) int {
	e, lastLower, lastWidth := i, -1, 0
	for e < len(s) {
		c, w := classAt(s, e)
		if c&clUpper == 0 {
			break
		}
		if c&clLower != 0 {
			lastLower, lastWidth = e, w
		}
		e += w
	}
	if e < len(s) {
		if c, _ := classAt(s, e); c&clLower != 0 {
			return contractionAfter(s, run(s, e, clLower))
		}
	}
	if lastLower < 0 {
		return -1
	}
	// Backtracked into the run: the next character is not in the second
	// class (an upper-case letter, or what ended the run), so the second
	// class matches this one character.
	return contractionAfter(s, lastLower+lastWidth)
}

// wordUpper matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and an optional contraction at i, returning its end or -1.
func wordUpper(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	if c, _ := classAt(s, i); c&clUpper == 0 {
		return -1
	}
	return contractionAfter(s, run(s, run(s, i, clUpper), clLower))
}

// contractionAfter extends a word ending at e by an optional contraction.
func contractionAfter(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		return e + contraction(s, e)
	}
	return e
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i
// (s[i] is the apostrophe), 0 when none matches. Case is folded as regexp2
// does: unicode.ToLower of the text's character.
func contraction(s string, i int) int {
	lower := func(j int) (rune, int) {
		if j >= len(s) {
			return 0, 0
		}
		if b := s[j]; b < utf8.RuneSelf {
			return unicode.ToLower(rune(b)), 1
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		return unicode.ToLower(r), w
	}
	r1, w1 := lower(i + 1)
	switch r1 {
	case 's', 't', 'm', 'd':
		return 1 + w1
	case 'r', 'v':
		if r2, w2 := lower(i + 1 + w1); r2 == 'e' {
			return 1 + w1 + w2
		}
	case 'l':
		if r2, w2 := lower(i + 1 + w1); r2 == 'l' {
			return 1 + w1 + w2
		}
	}
	return 0
}

// numbers matches \p{N}{1,3} at i (a number).
func numbers(s string, i int) int {
	for range 3 {
		if i >= len(s) {
			break
		}
		c, w := classAt(s, i)
		if c&clNumber == 0 {
			break
		}
		i += w
	}
	return i
}

// punctuation matches ' '?[^\s\p{L}\p{N}]+[\r\n]* at i ([\r\n/]* with
// slash), returning its end, or i when it does not match.
func punctuation(s string, i int, slash bool) int {
	j := i
	if s[j] == ' ' {
		j++
	}
	start := j
	for j < len(s) {
		c, w := classAt(s, j)
		if c&(clSpace|clLetter|clNumber) != 0 {
			break
		}
		j += w
	}
	if j == start {
		return i
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || slash && s[j] == '/') {
		j++
	}
	return j
}

// spaces matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, where s[i] is a space
// (every other character starts an earlier alternative). In a run of
// spaces that holds a line break, the piece ends after the last one; else
// it leaves the run's last space to the word that follows, unless that
// space is the whole run or the text ends.
func spaces(s string, i int) int {
	j, lastNewline, last, n := i, -1, i, 0
	for j < len(s) {
		c, w := classAt(s, j)
		if c&clSpace == 0 {
			break
		}
		if c&clNewline != 0 {
			lastNewline = j
		}
		last, n = j, n+1
		j += w
	}
	switch {
	case lastNewline >= 0:
		return lastNewline + 1
	case n == 0: // not a space: unreachable, but never stall
		_, w := classAt(s, i)
		return i + w
	case j == len(s) || n < 2:
		return j
	default:
		return last
	}
}
