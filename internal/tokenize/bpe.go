package tokenize

import (
	"context"
	"math"
)

// The byte-pair merge of one pre-token piece, counting the tokens without
// building them. It gives exactly the tokens of tiktoken's merge loop:
// repeatedly merge the adjacent pair whose bytes have the lowest rank, the
// leftmost on a tie, until no adjacent pair is a token.

// smallPiece is the longest piece merged by scanning all pairs for the
// minimum, tiktoken's own loop: quadratic, but with no allocation and the
// fastest below this size. Longer pieces use a heap, O(n log n), and from
// byRankPiece on, a pass per rank, O(n log n) at worst and close to
// linear on long runs.
const smallPiece = 64

const noRank = math.MaxInt32

// ctxCheckEvery is how many merges of one long piece run between two looks
// at the context.
const ctxCheckEvery = 1 << 15

// countPiece returns the number of tokens of piece.
func (t *rankTable) countPiece(ctx context.Context, piece string, sc *scratch) (int, error) {
	if len(piece) == 1 {
		return 1, nil // every byte is a token
	}
	if _, ok := t.rank(piece); ok {
		return 1, nil
	}
	if len(piece) <= smallPiece {
		return t.mergeSmall(piece), nil
	}
	if len(piece) >= byRankPiece {
		return t.mergeByRank(ctx, piece, &sc.byRank)
	}
	return t.mergeHeap(ctx, piece, sc)
}

// byRankPiece is the length from which mergeByRank is used: slower than
// the heap on short pieces of varied text, several times faster on long
// runs (see mergeByRank).
const byRankPiece = 1 << 12

// pairRank is the rank of s as one token, noRank when it is none.
func (t *rankTable) pairRank(s string) int32 {
	if r, ok := t.rank(s); ok {
		return r
	}
	return noRank
}

// mergeSmall is tiktoken's merge loop on a piece of at most smallPiece
// bytes. parts[i] is the start of part i (parts[m] the end); ranks[i] the
// rank of parts i and i+1 merged.
func (t *rankTable) mergeSmall(piece string) int {
	var parts [smallPiece + 1]int32
	var ranks [smallPiece]int32
	m := len(piece)
	for i := range m + 1 {
		parts[i] = int32(i)
	}
	for i := range m - 1 {
		ranks[i] = t.pairRank(piece[i : i+2])
	}
	ranks[m-1] = noRank
	for m > 1 {
		best, at := int32(noRank), -1
		for i, r := range ranks[:m-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		// Merge parts at and at+1: drop boundary at+1.
		copy(parts[at+1:m], parts[at+2:m+1])
		copy(ranks[at+1:m-1], ranks[at+2:m])
		m--
		ranks[m-1] = noRank
		if at+1 < m {
			ranks[at] = t.pairRank(piece[parts[at]:parts[at+2]])
		} else {
			ranks[at] = noRank
		}
		if at > 0 {
			ranks[at-1] = t.pairRank(piece[parts[at-1]:parts[at+1]])
		}
	}
	return m
}

// scratch holds the arrays of mergeHeap, reused across the pieces of one
// count.
type scratch struct {
	startLen, endLen []uint8  // part length at its first and last byte (parts are tokens: <= 255 bytes)
	heap             []uint64 // rank<<32 | part start, a min-heap
	at               []int32  // index in heap of the pair starting at a part, -1 if none
	byRank           rankMerge
}

func (sc *scratch) reset(n int) {
	if cap(sc.at) < n {
		sc.startLen, sc.endLen = make([]uint8, n), make([]uint8, n)
		sc.heap, sc.at = make([]uint64, 0, n), make([]int32, n)
	}
	sc.startLen, sc.endLen, sc.at = sc.startLen[:n], sc.endLen[:n], sc.at[:n]
	sc.heap = sc.heap[:0]
}

// mergeHeap is the merge loop with the pairs in a min-heap keyed by (rank,
// start), so that each merge costs O(log n) instead of a scan: the pair it
// pops is the one tiktoken's scan finds, the leftmost of the lowest rank.
// Parts are found through their lengths, kept at both ends of each part.
func (t *rankTable) mergeHeap(ctx context.Context, piece string, sc *scratch) (int, error) {
	n := len(piece)
	sc.reset(n)
	for i := range n {
		sc.startLen[i], sc.endLen[i], sc.at[i] = 1, 1, -1
	}
	for i := range n - 1 {
		if r, ok := t.rank(piece[i : i+2]); ok {
			sc.at[i] = int32(len(sc.heap))
			sc.heap = append(sc.heap, uint64(r)<<32|uint64(i))
		}
	}
	for i := (len(sc.heap) - 2) / heapArity; i >= 0; i-- {
		sc.down(i)
	}
	count := n
	for merges := 1; len(sc.heap) > 0; merges++ {
		if merges%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, context.Cause(ctx)
			}
		}
		start := int(uint32(sc.heap[0]))
		next := start + int(sc.startLen[start])
		sc.remove(int(sc.at[next])) // the pair of the part merged away, if any
		size := int(sc.startLen[start]) + int(sc.startLen[next])
		sc.startLen[start], sc.endLen[start+size-1] = uint8(size), uint8(size)
		count--
		// The merged part with its right neighbour...
		if after := start + size; after < n {
			sc.set(start, t.pairRank(piece[start:after+int(sc.startLen[after])]))
		} else {
			sc.set(start, noRank)
		}
		// ...and its left neighbour with it.
		if start > 0 {
			before := start - int(sc.endLen[start-1])
			sc.set(before, t.pairRank(piece[before:start+size]))
		}
	}
	return count, nil
}

// heapArity is 4: shallower than a binary heap, and the four children
// share a cache line.
const heapArity = 4

func (sc *scratch) less(i, j int) bool { return sc.heap[i] < sc.heap[j] }

func (sc *scratch) swap(i, j int) {
	sc.heap[i], sc.heap[j] = sc.heap[j], sc.heap[i]
	sc.at[uint32(sc.heap[i])] = int32(i)
	sc.at[uint32(sc.heap[j])] = int32(j)
}

func (sc *scratch) up(i int) {
	for i > 0 {
		p := (i - 1) / heapArity
		if !sc.less(i, p) {
			return
		}
		sc.swap(i, p)
		i = p
	}
}

func (sc *scratch) down(i int) {
	n := len(sc.heap)
	for {
		first := i*heapArity + 1
		if first >= n {
			return
		}
		m := first
		for c := first + 1; c < min(first+heapArity, n); c++ {
			if sc.less(c, m) {
				m = c
			}
		}
		if !sc.less(m, i) {
			return
		}
		sc.swap(i, m)
		i = m
	}
}

// remove drops heap entry i; -1 is no entry.
func (sc *scratch) remove(i int) {
	if i < 0 {
		return
	}
	last := len(sc.heap) - 1
	sc.at[uint32(sc.heap[i])] = -1
	if i != last {
		sc.heap[i] = sc.heap[last]
		sc.at[uint32(sc.heap[i])] = int32(i)
	}
	sc.heap = sc.heap[:last]
	if i < last {
		sc.down(i)
		sc.up(i)
	}
}

// set gives the pair starting at part start the rank r (noRank: none).
func (sc *scratch) set(start int, r int32) {
	i := int(sc.at[start])
	if r == noRank {
		sc.remove(i)
		return
	}
	key := uint64(r)<<32 | uint64(start)
	if i < 0 {
		sc.at[start] = int32(len(sc.heap))
		sc.heap = append(sc.heap, key)
		sc.up(len(sc.heap) - 1)
		return
	}
	old := sc.heap[i]
	sc.heap[i] = key
	if key < old {
		sc.up(i)
	} else {
		sc.down(i)
	}
}
