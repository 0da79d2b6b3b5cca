package tokenize

import (
	"fmt"
	"math/bits"

	"github.com/briefd/briefd/internal/tokenize/vocabfile"
)

// rankTable maps a token's bytes to its rank. It is an open-addressing
// hash index over the embedded vocabulary: building it costs a few
// milliseconds and one allocation per array, against the ~90 ms and
// ~20 MB of a Go map built from the .tiktoken text.
type rankTable struct {
	tokens string   // every token's bytes, in rank order
	off    []uint32 // token r is tokens[off[r]:off[r+1]]
	// slots holds rank+1 in its low rankBits bits (0 = empty) and the
	// top bits of the key's hash above, so most misses compare no bytes.
	slots    []uint32
	mask     uint64
	rankBits uint
	maxLen   int
}

func newRankTable(v *vocabfile.Vocab) (*rankTable, error) {
	n := v.Len()
	t := &rankTable{tokens: v.Tokens, off: make([]uint32, n+1), maxLen: v.MaxLen, rankBits: uint(bits.Len(uint(n)))}
	if t.rankBits > 24 {
		return nil, fmt.Errorf("%d tokens: too many for the index", n)
	}
	for r := range n {
		t.off[r+1] = t.off[r] + uint32(v.Lens[r])
	}
	// At most half full: linear probing stays short, misses included.
	size := 1 << bits.Len(uint(2*n))
	t.slots = make([]uint32, size)
	t.mask = uint64(size - 1)
	for r := range n {
		tok := t.token(r)
		h := hashString(tok)
		i := h & t.mask
		for t.slots[i] != 0 {
			if t.token(int(t.slots[i]&(1<<t.rankBits-1))-1) == tok {
				return nil, fmt.Errorf("token %q has ranks %d and %d", tok, int(t.slots[i]&(1<<t.rankBits-1))-1, r)
			}
			i = (i + 1) & t.mask
		}
		t.slots[i] = uint32(r+1) | t.tag(h)
	}
	// Every byte is a token, so that any text can be encoded; the BPE
	// relies on it.
	for b := range 256 {
		if _, ok := t.rank(string([]byte{byte(b)})); !ok {
			return nil, fmt.Errorf("byte %#x is not a token", b)
		}
	}
	return t, nil
}

func (t *rankTable) token(r int) string { return t.tokens[t.off[r]:t.off[r+1]] }

func (t *rankTable) tag(h uint64) uint32 { return uint32(h>>(32+t.rankBits)) << t.rankBits }

// rank returns the rank of the token whose bytes are s.
func (t *rankTable) rank(s string) (int32, bool) {
	if len(s) > t.maxLen {
		return 0, false
	}
	h := hashString(s)
	tag := t.tag(h)
	low := uint32(1)<<t.rankBits - 1
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i]
		if e == 0 {
			return 0, false
		}
		if e&^low == tag {
			r := e&low - 1
			if t.tokens[t.off[r]:t.off[r+1]] == s {
				return int32(r), true
			}
		}
	}
}

// hashString is a fast 64-bit hash of short strings (tokens are at most a
// few hundred bytes): eight bytes at a time, then the finalizer of
// MurmurHash3.
func hashString(s string) uint64 {
	const m1, m2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
	h := uint64(len(s)) * m1
	for len(s) > 8 {
		h = bits.RotateLeft64((h^load64(s))*m2, 31)
		s = s[8:]
	}
	var t uint64
	switch {
	case len(s) >= 4: // 4..8 bytes: two overlapping loads cover them all
		t = uint64(load32(s)) | uint64(load32(s[len(s)-4:]))<<32
	case len(s) > 0:
		t = uint64(s[0]) | uint64(s[len(s)/2])<<8 | uint64(s[len(s)-1])<<16
	}
	h = (h ^ t) * m1
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func load32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
