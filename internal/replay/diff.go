package replay

import "strings"

// DiffOp is what a line of a diff does.
type DiffOp string

// The operations of a DiffLine.
const (
	DiffSame    DiffOp = "="
	DiffRemoved DiffOp = "-"
	DiffAdded   DiffOp = "+"
)

// DiffLine is one line of a line diff: in both texts, only in the stored
// one (removed), or only in the re-run (added).
type DiffLine struct {
	Op   DiffOp `json:"op"`
	Text string `json:"text"`
}

// DiffStats counts a diff's lines.
type DiffStats struct {
	Same    int `json:"same"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// maxDiffLines bounds each side of a diff: a longest common subsequence
// over n x m lines costs n x m cells. Beyond it the remaining lines are
// reported as removed and added without alignment.
const maxDiffLines = 3000

// Diff returns a line diff of a and b: a longest common subsequence of
// their lines, the lines outside it removed (from a) or added (from b),
// removals first at each change.
func Diff(a, b string) []DiffLine {
	x, y := splitLines(a), splitLines(b)
	var tailX, tailY []string
	if len(x) > maxDiffLines {
		x, tailX = x[:maxDiffLines], x[maxDiffLines:]
	}
	if len(y) > maxDiffLines {
		y, tailY = y[:maxDiffLines], y[maxDiffLines:]
	}
	// Common prefix and suffix first: replays mostly differ in a few lines.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	out := make([]DiffLine, 0, len(x)+len(y))
	for _, l := range x[:pre] {
		out = append(out, DiffLine{DiffSame, l})
	}
	out = append(out, lcsDiff(x[pre:len(x)-suf], y[pre:len(y)-suf])...)
	for _, l := range x[len(x)-suf:] {
		out = append(out, DiffLine{DiffSame, l})
	}
	for _, l := range tailX {
		out = append(out, DiffLine{DiffRemoved, l})
	}
	for _, l := range tailY {
		out = append(out, DiffLine{DiffAdded, l})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lcsDiff aligns x and y on a longest common subsequence.
func lcsDiff(x, y []string) []DiffLine {
	n, m := len(x), len(y)
	// l[i][j] is the LCS length of x[i:] and y[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			out = append(out, DiffLine{DiffSame, x[i]})
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, DiffLine{DiffRemoved, x[i]})
			i++
		default:
			out = append(out, DiffLine{DiffAdded, y[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffLine{DiffRemoved, x[i]})
	}
	for ; j < m; j++ {
		out = append(out, DiffLine{DiffAdded, y[j]})
	}
	return out
}

func stats(lines []DiffLine) DiffStats {
	var s DiffStats
	for _, l := range lines {
		switch l.Op {
		case DiffSame:
			s.Same++
		case DiffAdded:
			s.Added++
		case DiffRemoved:
			s.Removed++
		}
	}
	return s
}
