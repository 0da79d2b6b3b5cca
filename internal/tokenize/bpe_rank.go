package tokenize

import (
	"cmp"
	"context"
	"slices"
)

// rankMerge is the merge loop of long pieces by passes: all pairs of the
// lowest rank, left to right, then those of the next rank, and so on.
// That is tiktoken's order (lowest rank first, leftmost on a tie) while
// merges only create pairs of higher rank, as they almost always do in a
// trained vocabulary; a pair created with a rank not above the current
// pass goes to a small heap served first, in (rank, start) order, so the
// order is tiktoken's on any vocabulary (TestMergesAgree).
//
// Entries are never updated in place: when a pair changes, its entry stays
// filed and is skipped when its turn comes. The pair starting at a given
// byte only ever grows, so it never has the same rank twice: an entry is
// current exactly when its start still begins a part and the pair there
// still has its rank.
type rankMerge struct {
	startLen, endLen []uint8 // part length at its first and last byte; 0 at the first: not a part
	pairRank         []int32 // rank of the pair starting at each part, noRank if none
	buckets          []bucket
	bucketOf         map[int32]int32 // rank to index in buckets
	ranks            []int32         // min-heap of the ranks of non-empty buckets
	urgent           []uint64        // min-heap of rank<<32|start, ranks <= the current one
	blocks           [][]int32       // bucket storage, blockSize starts each
	free             []int32         // indices of unused blocks
	pass             []int32         // the current rank's starts, ascending
}

// A bucket holds the starts filed under one rank, in blocks: no copying
// as it grows, and the blocks go back to the pool when its pass begins.
type bucket struct{ blocks []int32 }

const blockSize = 128

func (m *rankMerge) reset(n int) {
	if cap(m.pairRank) < n {
		m.startLen, m.endLen, m.pairRank = make([]uint8, n), make([]uint8, n), make([]int32, n)
	}
	m.startLen, m.endLen, m.pairRank = m.startLen[:n], m.endLen[:n], m.pairRank[:n]
	if m.bucketOf == nil {
		m.bucketOf = make(map[int32]int32)
	}
	clear(m.bucketOf)
	m.free = m.free[:0]
	for i := range m.blocks {
		m.blocks[i] = m.blocks[i][:0]
		m.free = append(m.free, int32(i))
	}
	m.buckets, m.ranks, m.urgent, m.pass = m.buckets[:0], m.ranks[:0], m.urgent[:0], m.pass[:0]
}

// add files the pair at start under rank r, for the pass of rank r or,
// when that pass is current or over, in the urgent heap.
func (m *rankMerge) add(r int32, start int, current int32) {
	if r <= current {
		heapPush(&m.urgent, uint64(r)<<32|uint64(start))
		return
	}
	i, ok := m.bucketOf[r]
	if !ok {
		i = int32(len(m.buckets))
		m.bucketOf[r] = i
		m.buckets = append(m.buckets, bucket{})
		heapPush(&m.ranks, r)
	}
	b := &m.buckets[i]
	last := int32(-1)
	if k := len(b.blocks); k > 0 {
		last = b.blocks[k-1]
	}
	if last < 0 || len(m.blocks[last]) == blockSize {
		if k := len(m.free); k > 0 {
			last, m.free = m.free[k-1], m.free[:k-1]
		} else {
			last = int32(len(m.blocks))
			m.blocks = append(m.blocks, make([]int32, 0, blockSize))
		}
		b.blocks = append(b.blocks, last)
	}
	m.blocks[last] = append(m.blocks[last], int32(start))
}

// take makes bucket i the current pass, its starts sorted.
func (m *rankMerge) take(i int32) {
	need := 0
	for _, k := range m.buckets[i].blocks {
		need += len(m.blocks[k])
	}
	m.pass = slices.Grow(m.pass[:0], need)
	for _, k := range m.buckets[i].blocks {
		m.pass = append(m.pass, m.blocks[k]...)
		m.blocks[k] = m.blocks[k][:0]
		m.free = append(m.free, k)
	}
	m.buckets[i].blocks = nil
	// Pairs are mostly filed left to right; sort when not.
	if !slices.IsSorted(m.pass) {
		slices.Sort(m.pass)
	}
}

// mergeByRank counts the tokens of piece; see rankMerge. It looks at ctx
// every ctxCheckEvery steps.
func (t *rankTable) mergeByRank(ctx context.Context, piece string, m *rankMerge) (int, error) {
	n := len(piece)
	m.reset(n)
	current := int32(-1)
	for i := range n {
		m.startLen[i], m.endLen[i], m.pairRank[i] = 1, 1, noRank
	}
	for i := range n - 1 {
		if i%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return 0, context.Cause(ctx)
			}
		}
		if r, ok := t.rank(piece[i : i+2]); ok {
			m.pairRank[i] = r
			m.add(r, i, current)
		}
	}
	count := n
	next := 0 // index in m.pass
	for steps := 1; ; steps++ {
		if steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, context.Cause(ctx)
			}
		}
		var r int32
		var start int
		switch {
		case len(m.urgent) > 0 && (next == len(m.pass) || m.urgent[0] < uint64(current)<<32|uint64(m.pass[next])):
			key := heapPop(&m.urgent)
			r, start = int32(key>>32), int(uint32(key))
		case next < len(m.pass):
			r, start = current, int(m.pass[next])
			next++
		default:
			if len(m.ranks) == 0 {
				return count, nil
			}
			current = heapPop(&m.ranks)
			m.take(m.bucketOf[current])
			delete(m.bucketOf, current)
			next = 0
			continue
		}
		if m.startLen[start] == 0 || m.pairRank[start] != r {
			continue // merged away, or re-ranked since filed
		}
		// Merge the part at start with the next one.
		after := start + int(m.startLen[start])
		size := int(m.startLen[start]) + int(m.startLen[after])
		m.startLen[after], m.pairRank[after] = 0, noRank
		m.startLen[start], m.endLen[start+size-1] = uint8(size), uint8(size)
		count--
		// The merged part with its right neighbour...
		m.pairRank[start] = noRank
		if end := start + size; end < n {
			if r, ok := t.rank(piece[start : end+int(m.startLen[end])]); ok {
				m.pairRank[start] = r
				m.add(r, start, current)
			}
		}
		// ...and its left neighbour with it.
		if start > 0 {
			before := start - int(m.endLen[start-1])
			m.pairRank[before] = noRank
			if r, ok := t.rank(piece[before : start+size]); ok {
				m.pairRank[before] = r
				m.add(r, before, current)
			}
		}
	}
}

// heapPush and heapPop keep a binary min-heap in a slice.
func heapPush[T cmp.Ordered](h *[]T, k T) {
	*h = append(*h, k)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func heapPop[T cmp.Ordered](h *[]T) T {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(s) {
			break
		}
		if c+1 < len(s) && s[c+1] < s[c] {
			c++
		}
		if s[i] <= s[c] {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}
