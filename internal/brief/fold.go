package brief

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/ident"
)

// Folding an earlier briefing into the next one (chained compaction): its
// entries come back as items of the same sections, older than anything in
// the new span. The user's messages stay verbatim; a file's or a record's
// newer state replaces its older one (a file's earlier surviving changes
// are kept in front of the new ones); earlier steps, errors and notes
// compete for room with lower priority, and the identifiers of those left
// out go to the index. The entries come from the stored record when the
// store still has it, otherwise from the text, which is printed so that it
// parses back.

// prior is an earlier briefing's entries.
type prior struct {
	entries [numSections][]Entry
	index   []string
	depth   int
	leftOut string
	// first is the first message the earlier briefing covered.
	first string
}

func (p *prior) section(s section) []Entry { return p.entries[s] }

// foldPrior reads the earlier briefing a span begins with.
func foldPrior(msg *briefd.Message, prev *briefd.Briefing) *prior {
	if prev != nil && len(prev.Structured) > 0 {
		var r Record
		if err := json.Unmarshal(prev.Structured, &r); err == nil && r.Format == RecordFormat {
			return fromRecord(&r) // its entries carry their results (layout.record)
		}
	}
	text, ok := briefd.UnwrapBriefing(msg.Content.String())
	if !ok {
		text = msg.Content.String()
	}
	p := parseText(text)
	if prev != nil {
		p.depth = prev.Depth
	}
	p.resolveInState()
	return p
}

// resolveInState gives the lines of a briefing's text that pointed at its
// state's last check ("→ the last check, in STATE") the result that state
// quoted: the new briefing's state tells another check, or none. (A stored
// record carries the results already.)
func (p *prior) resolveInState() {
	res := ""
	for _, e := range p.entries[secState] {
		t := strings.TrimPrefix(e.Text, "- ")
		if !strings.HasPrefix(t, checkPrefix) {
			continue
		}
		if _, r, ok := strings.Cut(t, " → "); ok {
			res, _, _ = strings.Cut(r, " — still failing")
		}
	}
	for _, sec := range []section{secFiles, secSteps, secErrors} {
		for k, e := range p.entries[sec] {
			if pointsToState(e.Text) {
				with := res
				if with == "" {
					with = "not known" // a state cut by hand: no result to give
				}
				p.entries[sec][k].Text = pointedTo(e.Text, with)
			}
		}
	}
}

func fromRecord(r *Record) *prior {
	p := &prior{depth: r.Depth, index: r.Index}
	if len(r.Covers) > 0 {
		p.first = r.Covers[0]
	}
	for _, s := range r.Sections {
		sec, ok := sectionByKey[s.Name]
		if !ok {
			continue
		}
		if sec == secOmitted {
			if len(s.Entries) > 0 {
				p.leftOut = s.Entries[0].Text
			}
			continue
		}
		p.entries[sec] = append(p.entries[sec], s.Entries...)
	}
	return p
}

var coversRe = regexp.MustCompile(`^(?:Covers|Briefing (?:on|replacing \d+ earlier messages \()) ?(m?[\w:.-]+?)–`)

var citeRe = regexp.MustCompile(`\[(m?[\w:.-]+(?:[,–][^\]]*)?)\]`)

// parseText reads a briefing's text back into entries by its section
// labels. A text in an unknown format (an older engine's) is kept line by
// line as earlier steps, its "[id] text" lines under a user heading as the
// user's messages.
func parseText(text string) *prior {
	p := &prior{}
	lines := strings.Split(text, "\n")
	cur := section(-1)
	known := false
	legacyUser := false
	var last *Entry
	for i, line := range lines {
		if i == 0 && (strings.HasPrefix(line, "Briefing") || strings.HasPrefix(line, "Covers ")) {
			if m := coversRe.FindStringSubmatch(line); m != nil {
				p.first = m[1]
			}
			continue
		}
		if strings.HasPrefix(line, "Compacted message") && strings.Contains(line, briefd.ExpandToolName) {
			continue // the footer
		}
		if sec, rest, ok := sectionLine(line); ok {
			known = true
			cur = sec
			last = nil
			if inline[sec] {
				switch sec {
				case secIndex:
					p.index = append(p.index, indexNames(rest)...)
				case secOmitted:
					p.leftOut = rest
				default:
					p.entries[sec] = append(p.entries[sec], Entry{Text: rest, IDs: cites(rest)})
					last = &p.entries[sec][len(p.entries[sec])-1]
				}
			}
			continue
		}
		t := strings.TrimRight(line, " ")
		if t == "" {
			continue
		}
		if !known {
			// An older format: "## User messages" heads the user's lines.
			if strings.HasPrefix(t, "## ") {
				legacyUser = strings.Contains(strings.ToLower(t), "user")
				continue
			}
			if legacyUser && strings.HasPrefix(t, "[") {
				p.entries[secUser] = append(p.entries[secUser], Entry{Text: t, IDs: cites(t)})
				last = &p.entries[secUser][len(p.entries[secUser])-1]
				continue
			}
			if legacyUser && last != nil {
				last.Text += "\n" + t
				continue
			}
			p.entries[secSteps] = append(p.entries[secSteps], Entry{Text: "- " + strings.TrimPrefix(t, "- "), IDs: cites(t)})
			continue
		}
		if cur < 0 {
			continue
		}
		startsItem := strings.HasPrefix(t, "- ") || (cur == secUser || cur == secHarness) && strings.HasPrefix(t, "[")
		if startsItem || last == nil {
			e := Entry{Text: t, IDs: cites(t)}
			if cur == secFiles || cur == secRecords {
				e.Key = entryKey(t)
			}
			p.entries[cur] = append(p.entries[cur], e)
			last = &p.entries[cur][len(p.entries[cur])-1]
			continue
		}
		last.Text += "\n" + t
	}
	return p
}

// sectionLine reports whether a line starts a section, and the rest of
// the line.
func sectionLine(line string) (section, string, bool) {
	for sec := secTask; sec < numSections; sec++ {
		name := sectionNames[sec]
		if strings.HasPrefix(line, name+":") {
			return sec, strings.TrimSpace(line[len(name)+1:]), true
		}
		if sec == secIndex && strings.HasPrefix(line, name+indexNote+":") {
			return sec, strings.TrimSpace(line[len(name)+len(indexNote)+1:]), true
		}
	}
	for _, label := range legacyIndexLabels {
		if rest, ok := strings.CutPrefix(line, label+":"); ok {
			return secIndex, strings.TrimSpace(rest), true
		}
	}
	return 0, "", false
}

// entryKey is the object an entry is about: "- KEY: …" or "- KEY [m…]".
func entryKey(t string) string {
	t = strings.TrimPrefix(t, "- ")
	end := len(t)
	if i := strings.Index(t, ": "); i >= 0 && i < end {
		end = i
	}
	if i := strings.Index(t, " ["); i >= 0 && i < end {
		end = i
	}
	return strings.TrimSpace(t[:end])
}

// cites returns the message ids a line cites.
func cites(t string) []string {
	var out []string
	for _, m := range citeRe.FindAllStringSubmatch(t, 8) {
		for _, part := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == '–' || r == ' ' }) {
			if len(part) >= 2 && part[0] == 'm' && part[1] >= '0' && part[1] <= '9' {
				out = appendNew(out, part)
			}
		}
	}
	return out
}

// compactRecordLine shortens a record's line ("- ID [m…]: v; v; v" or
// "name value; …") cell by cell: short values and dates stay, long ones
// keep their ids.
func compactRecordLine(text string) string {
	head, body, ok := strings.Cut(text, ": ")
	if !ok {
		return text
	}
	cells := strings.Split(body, "; ")
	for i, c := range cells {
		v := c
		name := ""
		if n, rest, ok := strings.Cut(c, " "); ok && !strings.ContainsAny(n, ",") && len(cells) > 0 && strings.Contains(body, n+" ") && !holdsIDs(n) && !looksLikeDate(n) && len(n) < 30 && strings.ToLower(n) == n {
			name, v = n+" ", rest
		}
		if len(v) > minCell && !looksLikeDate(v) {
			v = idsOnly(v)
		}
		cells[i] = name + v
	}
	return head + ": " + strings.Join(cells, "; ")
}

// buildPrior adds the earlier briefing's entries to the layout.
func (l *layout) buildPrior() {
	p := l.m.prior
	if p == nil {
		return
	}
	byKey := map[string]*item{}
	for _, it := range l.items {
		if it.key != "" {
			byKey[it.key] = it
		}
	}
	for k, e := range p.entries[secFiles] {
		if it := byKey[e.Key]; e.Key != "" && it != nil {
			f := l.m.file(e.Key, false)
			old := strings.TrimPrefix(strings.TrimPrefix(e.Text, "- "), e.Key+": ")
			// An earlier change survives a later read, and a later change
			// that did not undo it.
			if f != nil && len(f.undone) == 0 && !strings.HasPrefix(old, "read ") && !strings.HasPrefix(old, "does not exist") {
				// Earlier surviving changes, then the new ones.
				earlier := "changed earlier"
				if len(e.IDs) > 0 {
					earlier += " [" + rangeOf(e.IDs) + "]"
				}
				for lv := range it.texts {
					if it.texts[lv] == "" {
						continue
					}
					was := earlier
					if lv == levelFull {
						was = old
					}
					it.texts[lv] = "- " + e.Key + ": " + was + "; then " + strings.TrimPrefix(it.texts[lv], "- "+e.Key+": ")
				}
				it.prio = max(it.prio, 9)
			}
			continue
		}
		l.priorItem(secFiles, e, 7.5, float64(k)-1e5)
	}
	for k, e := range p.entries[secRecords] {
		if e.Key != "" && byKey[e.Key] != nil {
			continue // the newer state replaces it
		}
		l.priorItem(secRecords, e, 7, float64(k)-1e5)
	}
	for k, e := range p.entries[secSteps] {
		// Older steps first; the newest of them rank a little higher.
		l.priorItem(secSteps, e, 2.5+float64(k)/float64(len(p.entries[secSteps])+1), float64(k)-1e5)
	}
	for k, e := range p.entries[secErrors] {
		pr := 3.0
		if strings.Contains(e.Text, "not resolved") {
			pr = 5
		}
		l.priorItem(secErrors, e, pr, float64(k)-1e5)
	}
	for k, e := range p.entries[secNotes] {
		l.priorItem(secNotes, e, 3.5, float64(k)-1e5)
	}
}

func (l *layout) priorItem(sec section, e Entry, prio, order float64) {
	it := &item{sec: sec, key: e.Key, ids: e.IDs, prio: prio, order: order}
	text := e.Text
	if !strings.HasPrefix(text, "- ") {
		text = "- " + text
	}
	it.texts[levelFull] = text
	if sec == secRecords && !strings.HasPrefix(text, recordsHeader) && !strings.HasPrefix(text, "- (columns)") {
		// A record keeps its short values and dates, and the ids of its
		// long ones, as when it was first written.
		if c := compactRecordLine(text); c != text {
			it.texts[levelMin] = c
		}
	} else {
		if len(text) > 170 {
			it.texts[levelShort] = clip(text, 160)
		}
		if len(text) > 90 {
			it.texts[levelMin] = clip(text, 80)
		}
	}
	it.idents = ident.Identifiers(text)
	l.items = append(l.items, it)
}
