package brief

import (
	"slices"
	"strings"

	"github.com/briefd/briefd"
)

// The fit counted by its sections. A briefing's text is its header, then
// each section that prints (its label, then its lines), then the footer;
// every section's label and the footer begin with a letter after a
// newline. A counter that cuts there exactly (Input.CountSplits) counts
// the wrapped text as the sum of its pieces, so a section's text and
// count are kept, keyed by the lines it prints, and each choice of the fit
// (and the mandatory part alone) renders and counts only the sections
// whose lines changed. A warm Write keeps them between calls (Warm.pieces):
// from one snapshot to the next most sections print the same lines.

// sectionPiece is one section as a choice printed it: its label and lines
// and the newline after them (the next section or the footer begins after
// it, where the count may cut), and what the wrapped text's length and
// count take for it.
type sectionPiece struct {
	// lines are the texts the section prints, in order (the index and the
	// left-out line: their one text): what the piece is made of, and its
	// key.
	lines  []string
	text   string
	escLen int // len(briefd.EscapeBriefing(text))
	tokens int // the counter's count of briefd.EscapeBriefing(text); -1 until counted
}

// pieceMemo keeps, per section, the pieces of the last pieceSlots texts
// that printed it, the most recent first: the mandatory part and each
// choice of a fit differ in a few sections, and a section may print
// differently in each (the user's messages carried whole in the mandatory
// part, the oldest shortened in a choice at one scale, more of them at
// another), the same ways at the next Write.
type pieceMemo struct {
	by    [numSections][pieceSlots]*sectionPiece
	bytes int
}

const pieceSlots = 4

// Bytes approximates the memory the pieces hold: their texts, and the
// lines they were made of, counted whole though most are shared with the
// lines' own memos (a line written for one layout alone is not).
func (pm *pieceMemo) Bytes() int {
	if pm == nil {
		return 0
	}
	return pm.bytes
}

func pieceBytes(p *sectionPiece) int {
	n := 64 + len(p.text) + 16*len(p.lines)
	for _, t := range p.lines {
		n += len(t)
	}
	return n
}

// piece returns the piece of section sec printing lines, made by write
// on a miss. lines is a scratch buffer: a new piece keeps a copy. A nil
// memo keeps nothing.
func (pm *pieceMemo) piece(sec section, lines []string, write func() *sectionPiece) *sectionPiece {
	if pm == nil {
		return write()
	}
	slot := &pm.by[sec]
	for i, p := range slot {
		if p != nil && slices.Equal(p.lines, lines) {
			copy(slot[1:i+1], slot[:i])
			slot[0] = p
			return p
		}
	}
	p := write()
	p.lines = slices.Clone(lines)
	if last := slot[pieceSlots-1]; last != nil {
		pm.bytes -= pieceBytes(last)
	}
	copy(slot[1:], slot[:pieceSlots-1])
	slot[0] = p
	pm.bytes += pieceBytes(p)
	return p
}

// wrapPrefix and wrapSuffix are what briefd.WrapBriefing puts around the
// escaped text.
var wrapPrefix, wrapSuffix = func() (string, string) {
	w := briefd.WrapBriefing("\x00")
	i := strings.IndexByte(w, 0)
	return w[:i], w[i+1:]
}()

// sectionLines appends to buf the lines section sec prints of items (its
// chosen items, in print order), or of x for the index and the left-out
// line.
func sectionLines(buf []string, sec section, items []*item, x *extras) []string {
	switch sec {
	case secIndex:
		if x != nil && x.index != "" {
			buf = append(buf, x.index)
		}
		return buf
	case secOmitted:
		if x != nil && x.omitted != "" {
			buf = append(buf, x.omitted)
		}
		return buf
	}
	for _, it := range items {
		buf = append(buf, it.text())
	}
	return buf
}

// sectionText writes section sec printing lines: its label, then its
// lines (inline sections on the label's line), then a newline.
func sectionText(sec section, lines []string) string {
	var b strings.Builder
	n := len(sectionNames[sec]) + len(indexNote) + 4
	for _, t := range lines {
		n += len(t) + 1
	}
	b.Grow(n)
	b.WriteString(sectionNames[sec])
	switch {
	case sec == secIndex:
		b.WriteString(indexNote + ": " + lines[0])
	case inline[sec]:
		b.WriteString(": ")
		for i, t := range lines {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t)
		}
	default:
		b.WriteByte(':')
		for _, t := range lines {
			b.WriteByte('\n')
			b.WriteString(t)
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// pieces returns the pieces of the sections the chosen items (and x) print,
// in order.
func (l *layout) pieces(x *extras) []*sectionPiece {
	var bySec [numSections][]*item
	for _, it := range l.printOrder() {
		if it.level >= 0 {
			bySec[it.sec] = append(bySec[it.sec], it)
		}
	}
	var out []*sectionPiece
	var buf []string
	for sec := secTask; sec < numSections; sec++ {
		buf = sectionLines(buf[:0], sec, bySec[sec], x)
		if len(buf) == 0 {
			continue
		}
		out = append(out, l.memo.piece(sec, buf, func() *sectionPiece {
			p := &sectionPiece{text: sectionText(sec, buf), tokens: -1}
			p.escLen = len(briefd.EscapeBriefing(p.text))
			return p
		}))
	}
	return out
}

// render prints the chosen items by section.
func (l *layout) render(x *extras) string {
	return l.join(l.pieces(x))
}

// join writes the text of the header, the pieces and the footer.
func (l *layout) join(ps []*sectionPiece) string {
	n := len(l.head) + 1 + len(l.foot)
	for _, p := range ps {
		n += len(p.text)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(l.head)
	if len(ps) > 0 || l.foot != "" {
		b.WriteByte('\n')
	}
	for _, p := range ps {
		b.WriteString(p.text)
	}
	if l.foot != "" {
		b.WriteString(l.foot)
	}
	s := b.String()
	if l.foot == "" && len(ps) > 0 {
		s = s[:len(s)-1] // the last section's newline
	}
	return s
}

// measure returns the exact count of the wrapped text of the chosen items
// (and x), and its length in bytes. With a counter that cuts before a
// letter after a newline, it is the sum of the pieces' counts and the
// ends' (the header with the wrapper's opening, the footer with its
// closing); the text is not written.
func (l *layout) measure(x *extras) (tokens, size int) {
	ps := l.pieces(x)
	if !l.countSplits || !startsLetter(l.foot) || slices.ContainsFunc(ps, func(p *sectionPiece) bool { return !startsLetter(p.text) }) {
		w := briefd.WrapBriefing(l.join(ps))
		return l.count(w), len(w)
	}
	head := wrapPrefix + briefd.EscapeBriefing(l.head) + "\n"
	foot := briefd.EscapeBriefing(l.foot) + wrapSuffix
	tokens, size = l.count(head)+l.count(foot), len(head)+len(foot)
	for _, p := range ps {
		if p.tokens < 0 {
			p.tokens = l.count(briefd.EscapeBriefing(p.text))
		}
		tokens += p.tokens
		size += p.escLen
	}
	return tokens, size
}

// startsLetter reports whether s begins with an ASCII letter: a counter
// with Input.CountSplits may cut before it after a newline. Every section
// label and the footer do (measure checks, and counts the whole text
// otherwise).
func startsLetter(s string) bool {
	return s != "" && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')
}
