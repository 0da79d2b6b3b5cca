package tokenize

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/briefd/briefd/internal/tokenize/vocabfile"
)

// referenceMerge is tiktoken-go's bytePairMerge, counting: the loop that
// the three merges must reproduce on any piece and any vocabulary.
func referenceMerge(t *rankTable, piece string) int {
	type part struct{ start, rank int }
	none := int(noRank)
	parts := make([]part, len(piece)+1)
	for i := range parts {
		parts[i] = part{i, none}
	}
	rankOf := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := t.rank(piece[parts[i].start:parts[i+skip+2].start]); ok {
				return int(r)
			}
		}
		return none
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankOf(i, 0)
	}
	for len(parts) > 1 {
		best, at := none, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < best {
				best, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].rank = rankOf(at, 1)
		if at > 0 {
			parts[at-1].rank = rankOf(at-1, 1)
		}
		parts = append(parts[:at+1], parts[at+2:]...)
	}
	return len(parts) - 1
}

// randomVocab is a vocabulary over a small alphabet with ranks in random
// order: unlike a trained one, merges often create pairs of lower rank than
// the one merged, which mergeByRank serves from its urgent heap.
func randomVocab(t *testing.T, r *rand.Rand, alphabet string, size int) *rankTable {
	t.Helper()
	toks := map[string]bool{}
	for b := range 256 {
		toks[string([]byte{byte(b)})] = true
	}
	for len(toks) < 256+size {
		var b strings.Builder
		for range 2 + r.IntN(7) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		toks[b.String()] = true
	}
	ranks := map[string]int{}
	perm := r.Perm(len(toks))
	i := 0
	for tok := range toks {
		ranks[tok] = perm[i]
		i++
	}
	data, err := vocabfile.Marshal(ranks)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocabfile.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRankTable(v)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestMergesAgree checks mergeSmall, mergeHeap and mergeByRank against
// tiktoken's loop on random vocabularies and on the real ones.
func TestMergesAgree(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	type vocab struct {
		name     string
		table    *rankTable
		alphabet string
	}
	var vocabs []vocab
	for _, alphabet := range []string{"ab", "abc", "abcd"} {
		for _, size := range []int{10, 40, 200} {
			vocabs = append(vocabs, vocab{"random " + alphabet, randomVocab(t, r, alphabet, size), alphabet})
		}
	}
	for _, name := range encodingNames {
		vocabs = append(vocabs, vocab{name, get(t, name).ranks, "aeiostx =-_ABCé"})
	}
	var sc scratch
	ctx := context.Background()
	for _, v := range vocabs {
		for range 600 {
			n := 2 + r.IntN(smallPiece-1)
			if r.IntN(4) == 0 {
				n = 2 + r.IntN(1000)
			}
			var b strings.Builder
			for b.Len() < n {
				b.WriteString(string([]rune(v.alphabet)[r.IntN(len([]rune(v.alphabet)))]))
			}
			piece := b.String()
			want := referenceMerge(v.table, piece)
			if len(piece) <= smallPiece {
				if got := v.table.mergeSmall(piece); got != want {
					t.Fatalf("%s: mergeSmall %d, tiktoken's loop %d, piece %q", v.name, got, want, piece)
				}
			}
			if got, err := v.table.mergeHeap(ctx, piece, &sc); err != nil || got != want {
				t.Fatalf("%s: mergeHeap %d (%v), tiktoken's loop %d, piece %q", v.name, got, err, want, piece)
			}
			if got, err := v.table.mergeByRank(ctx, piece, &sc.byRank); err != nil || got != want {
				t.Fatalf("%s: mergeByRank %d (%v), tiktoken's loop %d, piece %q", v.name, got, err, want, piece)
			}
		}
	}
}
