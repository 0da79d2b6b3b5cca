package brief

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/briefd/briefd/internal/ident"
)

// What a Python script an agent wrote does to the file it rewrites, read
// from its string literals. "rewritten by running update_autodoc.py" says
// that the file changed, not how; the receiving agent would have to read
// the file again. The literals of such scripts are the text they look for
// and the text they write: content.replace(old, new) pairs, and lines
// appended or assigned.

// pyLit is a string literal of Python code: its value and where its
// source text starts and ends.
type pyLit struct {
	val        string
	start, end int
}

// pyLiterals are the string literals of code, in order, comments skipped.
// It is a scanner, not a parser: code that does not tokenize ends the scan.
func pyLiterals(code string) []pyLit {
	var out []pyLit
	for i := 0; i < len(code); {
		switch c := code[i]; {
		case c == '#':
			nl := strings.IndexByte(code[i:], '\n')
			if nl < 0 {
				return out
			}
			i += nl
		case c == '\'' || c == '"':
			raw := false
			start := i
			for start > 0 && strings.IndexByte("rRbBuUfF", code[start-1]) >= 0 {
				start--
				raw = raw || code[start] == 'r' || code[start] == 'R'
			}
			if start > 0 && isIdentByte(code[start-1]) {
				start, raw = i, false // the end of a name, not a prefix
			}
			val, end, ok := pyString(code, i, raw)
			if !ok {
				return out
			}
			out = append(out, pyLit{val: val, start: start, end: end})
			i = end
		default:
			i++
		}
	}
	return out
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// pyString reads the literal whose quote is at code[i]: its value, and
// the index after its closing quote.
func pyString(code string, i int, raw bool) (val string, end int, ok bool) {
	q := code[i : i+1]
	if strings.HasPrefix(code[i:], q+q+q) {
		q = q + q + q
	}
	var b strings.Builder
	for j := i + len(q); j < len(code); j++ {
		c := code[j]
		switch {
		case strings.HasPrefix(code[j:], q):
			return b.String(), j + len(q), true
		case c == '\n' && len(q) == 1:
			return "", 0, false
		case c == '\\' && j+1 < len(code):
			j++
			if raw {
				b.WriteByte('\\')
				b.WriteByte(code[j])
				continue
			}
			switch code[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\n':
			default:
				b.WriteByte(code[j])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// Calls whose string argument is text looked for, a message or a path,
// not text written into the file.
var pyLookupCalls = []string{"startswith(", "endswith(", "find(", "rfind(", "index(", "count(", "split(",
	"compile(", "search(", "match(", "fullmatch(", "findall(", "sub(", "print(", "exit(", "open(", "join(",
	"strip(", "rstrip(", "lstrip(", "format(", "Path(", "get(", "raise ", "Exception(", "Error("}

// scriptEffect tells what a Python script writes into the file it
// rewrites, as a parenthesis for "rewritten by running S": its first
// replacement (" (replaces `…tzname=None):` → `…tzname=None,
// db_timezone=None):` and 4 more)"), else the code lines it writes,
// definitions first (" (writes `def _print_MatMul(self, expr):`; 22
// lines)"). "" when its literals show neither.
func scriptEffect(code string) string {
	lits := pyLiterals(code)
	// Literals assigned to a name (old_code = """…""") that a replace
	// takes as its arguments, content.replace(old_code, new_code), are
	// its pair; other assigned names are read as the literal is.
	byName := map[string]int{} // name -> its first literal
	for k, l := range lits {
		if m := pyAssignedRe.FindStringSubmatch(code[max(0, l.start-40):l.start]); m != nil {
			if _, ok := byName[m[1]]; !ok {
				byName[m[1]] = k
			}
		}
	}
	var pairs [][2]string
	paired := map[int]bool{}
	for _, m := range pyReplaceNamesRe.FindAllStringSubmatch(code, -1) {
		a, okA := byName[m[1]]
		b, okB := byName[m[2]]
		if okA && okB {
			paired[a], paired[b] = true, true
			if lits[a].val != lits[b].val {
				pairs = append(pairs, [2]string{lits[a].val, lits[b].val})
			}
		}
	}
	var written []string
	for k := 0; k < len(lits); k++ {
		l := lits[k]
		before := strings.TrimRight(code[max(0, l.start-24):l.start], " \t\n")
		after := strings.TrimLeft(code[l.end:min(len(code), l.end+12)], " \t")
		if strings.HasSuffix(before, ".replace(") && k+1 < len(lits) &&
			strings.Trim(code[l.end:lits[k+1].start], " \t\n") == "," {
			if l.val != lits[k+1].val {
				pairs = append(pairs, [2]string{l.val, lits[k+1].val})
			}
			k++
			continue
		}
		if paired[k] || pyLookup(before, after) || pathLike(l.val) {
			continue
		}
		written = append(written, l.val)
	}
	if len(pairs) > 0 {
		from, to := oneLine(pairs[0][0]), oneLine(pairs[0][1])
		// What the two share at their start goes, but for a word or two
		// of the old text to say where.
		if p := sharedStart(from, to); p > 0 && len(from)+len(to) > 80 {
			for p > 0 && len(from)-p < 16 {
				p = strings.LastIndexAny(from[:p-1], " (,.") + 1
			}
			if p > 0 {
				from, to = "…"+from[p:], "…"+to[p:]
			}
		}
		t := " (replaces " + quoteCode(from, 60) + " → " + quoteCode(to, 80)
		if len(pairs) > 1 {
			t += " and " + strconv.Itoa(len(pairs)-1) + " more"
		}
		return t + ")"
	}
	var lines, defs []string
	for _, w := range written {
		for _, ln := range strings.Split(w, "\n") {
			t := strings.TrimSpace(ln)
			if len(t) < 4 || t[0] == '#' || !codeLike(t) {
				continue
			}
			lines = append(lines, t)
			if strings.HasPrefix(t, "def ") || strings.HasPrefix(t, "class ") || strings.HasPrefix(t, "async def ") {
				defs = appendNew(defs, t)
			}
		}
	}
	if len(lines) < 2 {
		return "" // a literal or two is a message or a name, not a change
	}
	var q []string
	for _, t := range headLines(defs, 3) {
		q = append(q, quoteCode(t, 80))
	}
	if len(q) == 0 {
		// No definition: the logic it writes is its first lines, in
		// order (a condition without its branches says nothing), as far
		// as scriptLogicBytes go.
		code := clip(lines[0], 80)
		for _, t := range lines[1:] {
			if len(code)+len(" ⏎ ")+len(t) > scriptLogicBytes {
				code += " ⏎ …"
				break
			}
			code += " ⏎ " + t
		}
		q = append(q, quoteCode(code, scriptLogicBytes+8))
	}
	return " (writes " + strings.Join(q, ", ") + "; " + strconv.Itoa(len(lines)) + " lines)"
}

// scriptLogicBytes bounds the lines quoted from a script that writes no
// definition: a branch or two of the new logic.
const scriptLogicBytes = 200

// clipScriptRun clips "rewritten by running S (writes `a`, `b`; 15
// lines)" to limit bytes: the quotes after the first go first, then the
// whole parenthesis; a quote cut in its middle would read as the code.
func clipScriptRun(body string, limit int) (string, bool) {
	head, eff, ok := strings.Cut(body, " (")
	if !ok || !strings.HasPrefix(body, "rewritten by running ") || !strings.HasSuffix(eff, ")") {
		return "", false
	}
	if rest, ok := strings.CutPrefix(eff, "writes `"); ok {
		i, j := strings.Index(rest, "`"), strings.LastIndex(rest, "; ")
		if i > 0 && j > i {
			n := rest[j:]
			if room := limit - len(head+" (writes ``"+n); room >= 24 {
				code := rest[:i]
				if len(code) > room {
					// Cut after a word (a cut name reads as another name),
					// on a rune's start.
					p := room - len("…")
					for p > room/2 && (isIdentByte(code[p]) && isIdentByte(code[p-1]) || !utf8.RuneStart(code[p])) {
						p--
					}
					code = strings.TrimRight(code[:p], " .(,") + "…"
				}
				return head + " (writes `" + code + "`" + n, true
			}
		}
	}
	return clip(head, limit), true
}

var (
	// pyAssignedRe matches the end of "name = " before a literal.
	pyAssignedRe = regexp.MustCompile(`(?:^|\n)[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*[rRbBuUfF]*$`)
	// pyReplaceNamesRe matches a replace of one name's text by another's.
	pyReplaceNamesRe = regexp.MustCompile(`\.replace\(\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*[,)]`)
)

// pathLike: a literal that names a file (the one the script opens), not
// code it writes.
func pathLike(v string) bool {
	return v != "" && !strings.ContainsAny(v, " \n\t(=") && ident.IsPath(v)
}

// pyLookup: a literal in this place is looked for, printed or opened.
func pyLookup(before, after string) bool {
	for _, c := range pyLookupCalls {
		if strings.HasSuffix(before, c) {
			return true
		}
	}
	switch {
	case strings.HasPrefix(after, "in ") || strings.HasPrefix(after, "not in "),
		strings.HasPrefix(after, "==") || strings.HasPrefix(after, "!="),
		strings.HasSuffix(before, "==") || strings.HasSuffix(before, "!="),
		strings.HasSuffix(before, " in") || strings.HasSuffix(before, "if"):
		return true
	}
	return false
}

// codeLike: a line of code rather than prose: no sentence of words alone.
func codeLike(t string) bool {
	return strings.ContainsAny(t, "()=:[]{}.'\"")
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "⏎ ")
}
