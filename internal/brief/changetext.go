package brief

import "strings"

// How a file's changes are told on its line: the changes that survive,
// grouped, and each cut for room so that what the text now reads stays.

// changeList tells a file's surviving changes, those that make the same
// change at several lines as one ("lines 2843, 2852: `a` → `b`"), the
// newest kept when there are too many.
func changeList(changes []change, level int) string {
	type grp struct {
		lines []string
		body  string
		ids   []string
		noop  bool
	}
	var groups []*grp
	byBody := map[string]*grp{}
	for _, c := range changes {
		line, body := "", c.what
		if rest, ok := strings.CutPrefix(c.what, "line "); ok {
			if i := strings.Index(rest, ": "); i > 0 && isNumber(rest[:i]) {
				line, body = rest[:i], rest[i+2:]
			}
		}
		g := byBody[body]
		if g == nil || line == "" {
			g = &grp{body: body, noop: c.noop}
			groups = append(groups, g)
			if line != "" {
				byBody[body] = g
			}
		}
		if line != "" {
			g.lines = appendNew(g.lines, line)
		}
		g.ids = appendNew(g.ids, c.id)
	}
	maxGroups := []int{8, 4, 2}[level]
	bodyMax := []int{160, 90, 50}[level]
	var out []string
	skipped := 0
	for k, g := range groups {
		if len(groups)-k > maxGroups {
			skipped++
			continue
		}
		room := bodyMax
		switch {
		case strings.HasPrefix(g.body, "rewritten by running "):
			// What a script wrote is the change itself, as a replacement's
			// text is; its name alone tells nothing of it.
			room = max(room, []int{300, 260, 250}[level])
		case strings.HasPrefix(g.body, "inserted "):
			// "inserted before line 351: " leaves a few words of the code
			// in 50 bytes: `if isinstance(data,…` is not the change.
			room = max(room, 100)
		}
		t := clipChange(g.body, room)
		switch len(g.lines) {
		case 0:
		case 1:
			t = "line " + g.lines[0] + ": " + t
		default:
			t = "lines " + strings.Join(headLines(g.lines, 8), ", ") + moreCount(len(g.lines), 8) + ": " + t
		}
		if g.noop {
			t = "no-op edit (" + t + ")"
		}
		out = append(out, t+" ["+strings.Join(headLines(g.ids, 3), ", ")+"]")
	}
	if skipped > 0 {
		out = append([]string{plural(skipped, "earlier change")}, out...)
	}
	return strings.Join(out, "; ")
}

// clipChange clips a change's description to max bytes. A replacement
// ("`old` → `new`") first leaves out what the two texts share at their
// start, then at their end, cut at a word's edge ("`…split(None, 1)` →
// `…rsplit(None, 1)`"): the difference is the change. What is still too
// long gives the room to what the text now reads, the old text cut first,
// where a plain cut at the end would keep the old text and lose the new.
func clipChange(body string, max int) string {
	if f, ok := strings.CutSuffix(body, "` → ``"); ok && strings.Count(f, "`") == 1 && strings.HasPrefix(f, "`") {
		body = "removed " + f + "`" // a deletion: s/strict=self.strict)//
	}
	if len(body) <= max {
		return body
	}
	if head, ok := strings.CutSuffix(body, rangeEnd); ok && max > 2*len(rangeEnd) {
		// A range that may run to the end of the file says so at every
		// level: its patterns are cut first.
		return clip(head, max-len(rangeEnd)) + rangeEnd
	}
	if t, ok := clipScriptRun(body, max); ok {
		return t
	}
	if strings.HasPrefix(body, "inserted ") || strings.HasPrefix(body, "replaced ") {
		return clipInsert(body, max)
	}
	// "every `a` → `b`", "line 209: `a` → `b`": the words before the
	// quotes stay whole.
	lead := ""
	if i := strings.IndexByte(body, '`'); i > 0 && i < max/2 {
		lead, body, max = body[:i], body[i:], max-i
	}
	from, to, ok := strings.Cut(body, "` → `")
	if !ok || !strings.HasPrefix(from, "`") || !strings.HasSuffix(to, "`") || strings.Contains(to, "` → `") {
		return lead + clip(body, max)
	}
	from, to = from[1:], to[:len(to)-1]
	if rest, ok := strings.CutPrefix(to, from); ok && from != "" {
		// A pure addition: what was added is the change, where second.
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, " "), "⏎ ")
		room := max - len("added `` after ``")
		keepRest := min(len(rest), room-min(len(from), 10))
		return lead + "added `" + clip(rest, keepRest) + "` after `" + clipNonEmpty(from, room-keepRest) + "`"
	}
	quote := func(f, t string) string { return lead + "`" + f + "` → `" + t + "`" }
	if p := sharedStart(from, to); p > 0 {
		from, to = "…"+from[p:], "…"+to[p:]
		if lead == "every " {
			// "every `…bool_option`" reads as every bool_option of the
			// file: with its context cut, the pattern is no longer what
			// "every" counts.
			lead = ""
		}
		if b := quote(from, to); len(b) <= max {
			return b
		}
	}
	if n := sharedEnd(from, to); n > 0 {
		from, to = from[:len(from)-n]+"…", to[:len(to)-n]+"…"
		if b := quote(from, to); len(b) <= max {
			return b
		}
	}
	const frame = len("`` → ``")
	room := max - frame
	if room < 8 {
		return lead + clip(body, max)
	}
	keepTo := min(len(to), room-min(len(from), 8)) // a few bytes of the old text say where
	keepFrom := room - keepTo
	return quote(clipNonEmpty(from, keepFrom), clip(to, keepTo))
}

// rangeEnd ends a sed range deletion's description whose end is a
// pattern (sedRangeDeleted).
const rangeEnd = " (or the file's end)"

// clipInsert clips a sed insertion's description ("inserted after each
// line matching `anchor`: `text` (+2 lines)") giving the room to the text
// inserted: the anchor is cut first and the words "each line matching"
// dropped, where a cut at the end kept the anchor and lost what was
// inserted.
func clipInsert(body string, max int) string {
	i := strings.LastIndex(body, ": `")
	if i < 0 {
		return clip(body, max)
	}
	head, text, more := body[:i], body[i+2:], ""
	if j := strings.LastIndex(text, "` ("); j > 0 {
		text, more = text[:j+1], text[j+1:]
	}
	if len(text) < 2 || text[0] != '`' || text[len(text)-1] != '`' {
		return clip(body, max)
	}
	text = text[1 : len(text)-1]
	verb, anchor, quoted := strings.Cut(head, "each line matching `")
	if j := strings.IndexByte(head, '`'); !quoted && j > 0 && j < len(head)-1 && strings.HasSuffix(head, "`") {
		// "inserted after line 317 `return x;`": the line's text.
		verb, anchor, quoted = head[:j], head[j+1:], true
	}
	if quoted {
		anchor = strings.TrimSuffix(anchor, "`")
	} else {
		verb = head + " "
	}
	frame := len(verb) + len(": ``") + len(more)
	if quoted {
		frame += len("``")
	}
	room := max - frame
	if room < 8 {
		return clip(body, max)
	}
	keepText := min(len(text), room-min(len(anchor), 8))
	out := verb
	if quoted {
		out += "`" + clipNonEmpty(anchor, room-keepText) + "`"
	} else {
		out = strings.TrimSuffix(out, " ")
	}
	return out + ": `" + clip(text, keepText) + "`" + more
}

// clipNonEmpty is clip, but a text cut to nothing reads "…".
func clipNonEmpty(s string, max int) string {
	if max <= len("…") && s != "" {
		return "…"
	}
	return clip(s, max)
}

// wordEdge reports a byte after which a quote may start or before which
// it may end: a space or punctuation of code, never inside a name.
func wordEdge(c byte) bool {
	return strings.IndexByte(" \t.,;:()[]{}=<>/'\"", c) >= 0
}

// sharedStart is how many leading bytes a and b share, up to and with
// the last word edge among them (0 when none, or when one is all shared).
func sharedStart(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n == len(a) || n == len(b) {
		return 0
	}
	for n > 0 && !wordEdge(a[n-1]) {
		n--
	}
	return n
}

// sharedEnd is how many trailing bytes a and b share, from a word edge
// on, leaving each at least one byte (0 when none).
func sharedEnd(a, b string) int {
	n := 0
	for n < len(a)-1 && n < len(b)-1 && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	for n > 0 && !wordEdge(a[len(a)-n]) {
		n--
	}
	return n
}
