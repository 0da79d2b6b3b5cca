// Package vocabfile is the file format of the byte-pair vocabularies that
// package tokenize embeds: every token's bytes in rank order, with their
// lengths, and nothing to parse at start-up beyond a small header.
//
// Layout (integers little-endian):
//
//	magic   8 bytes   "BPEVOC01"
//	count   uint32    number of tokens n; ranks are 0..n-1
//	maxLen  uint32    length of the longest token
//	lens    n bytes   length of token r at lens[r] (1..255)
//	tokens  the bytes of tokens 0..n-1, concatenated
//
// The files are written by Marshal from the rank maps that
// tiktoken-go-loader reads from OpenAI's .tiktoken files, so both hold the
// same vocabulary; see package tokenize's go:generate step.
package vocabfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic starts every vocabulary file; the digits are the format version.
const Magic = "BPEVOC01"

const headerSize = len(Magic) + 8

// MaxTokenLen is the longest token the format can hold.
const MaxTokenLen = 255

// Vocab is a parsed vocabulary file. Its strings share the file's memory.
type Vocab struct {
	// Lens holds the length of each token, by rank.
	Lens string
	// Tokens holds the tokens' bytes, concatenated in rank order.
	Tokens string
	// MaxLen is the length of the longest token.
	MaxLen int
}

// Len returns the number of tokens.
func (v *Vocab) Len() int { return len(v.Lens) }

// Parse reads a vocabulary file without copying it.
func Parse(data string) (*Vocab, error) {
	if len(data) < headerSize || data[:len(Magic)] != Magic {
		return nil, errors.New("vocabfile: not a vocabulary file (bad magic)")
	}
	n := int(binary.LittleEndian.Uint32([]byte(data[len(Magic) : len(Magic)+4])))
	maxLen := int(binary.LittleEndian.Uint32([]byte(data[len(Magic)+4 : headerSize])))
	if len(data) < headerSize+n {
		return nil, fmt.Errorf("vocabfile: truncated: %d tokens announced, %d bytes", n, len(data))
	}
	v := &Vocab{Lens: data[headerSize : headerSize+n], Tokens: data[headerSize+n:], MaxLen: maxLen}
	total, longest := 0, 0
	for i := range len(v.Lens) {
		l := int(v.Lens[i])
		if l == 0 {
			return nil, fmt.Errorf("vocabfile: token %d is empty", i)
		}
		total += l
		longest = max(longest, l)
	}
	if total != len(v.Tokens) {
		return nil, fmt.Errorf("vocabfile: token lengths add up to %d bytes, the file holds %d", total, len(v.Tokens))
	}
	if longest != maxLen {
		return nil, fmt.Errorf("vocabfile: longest token is %d bytes, header says %d", longest, maxLen)
	}
	return v, nil
}

// Marshal writes ranks (token bytes to rank) as a vocabulary file. The
// ranks must be exactly 0..len(ranks)-1, each token 1..MaxTokenLen bytes.
func Marshal(ranks map[string]int) ([]byte, error) {
	byRank := make([]string, len(ranks))
	for tok, r := range ranks {
		if r < 0 || r >= len(ranks) {
			return nil, fmt.Errorf("vocabfile: rank %d of %q outside 0..%d", r, tok, len(ranks)-1)
		}
		if byRank[r] != "" {
			return nil, fmt.Errorf("vocabfile: rank %d given twice", r)
		}
		if len(tok) == 0 || len(tok) > MaxTokenLen {
			return nil, fmt.Errorf("vocabfile: token of rank %d is %d bytes (1..%d)", r, len(tok), MaxTokenLen)
		}
		byRank[r] = tok
	}
	var buf bytes.Buffer
	buf.WriteString(Magic)
	var n [8]byte
	binary.LittleEndian.PutUint32(n[:4], uint32(len(byRank)))
	maxLen := 0
	for _, t := range byRank {
		maxLen = max(maxLen, len(t))
	}
	binary.LittleEndian.PutUint32(n[4:], uint32(maxLen))
	buf.Write(n[:])
	for _, t := range byRank {
		buf.WriteByte(byte(len(t)))
	}
	for _, t := range byRank {
		buf.WriteString(t)
	}
	return buf.Bytes(), nil
}
