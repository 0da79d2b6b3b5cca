package compact

import (
	"sort"
	"strconv"
	"strings"
)

// Timeline markers in Stagewise's one-line style: [read: path],
// [edited: path → ✓], [shell: cmd → exit 1 ✗ error], [searched: query],
// [tool-name: key args → result gist]. A marker never claims success
// without evidence: ✓ needs exit 0 or explicit success wording.

// markerOf renders one step; r is nil while the result is unknown.
func markerOf(c *callFacts, r *resultFacts) string {
	var b strings.Builder
	b.WriteByte('[')
	switch c.kind {
	case "read", "edited", "created":
		b.WriteString(c.kind)
		b.WriteString(": ")
		if len(c.paths) > 0 {
			b.WriteString(strings.Join(c.paths, ", "))
			if c.name == "bash" || c.name == "execute_bash" {
				if c.label != "" && !strings.HasSuffix(c.label, c.paths[len(c.paths)-1]) {
					b.WriteString(" via `" + oneLine(c.label, 70) + "`")
				}
			}
		} else {
			b.WriteString(c.label)
		}
	case "searched", "shell", "submit":
		b.WriteString(c.kind)
		b.WriteString(": ")
		b.WriteString(c.label)
	case "python":
		b.WriteString("python: ")
		b.WriteString(c.label)
	case "think":
		b.WriteString("think: ")
		b.WriteString(oneLine(c.label, 90))
	case "finish":
		b.WriteString("finish")
		if c.label != "" {
			b.WriteString(": " + oneLine(c.label, 90))
		}
	default:
		b.WriteString(c.name)
		if c.label != "" {
			b.WriteString(": ")
			b.WriteString(c.label)
		}
	}
	if r != nil {
		if st := statusOf(c, r); st != "" {
			b.WriteString(" → ")
			b.WriteString(st)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// statusOf is the outcome of a step, from evidence only.
func statusOf(c *callFacts, r *resultFacts) string {
	switch {
	case r.timeout:
		return "timed out"
	case r.hasExit && r.exit == 0:
		if r.noMatch && c.kind == "searched" {
			return "✓ no output"
		}
		return "✓"
	case r.hasExit:
		s := "exit " + strconv.Itoa(r.exit)
		if r.errText != "" {
			s += " ✗ " + oneLine(r.errText, 110)
		} else if c.kind == "searched" && r.exit == 1 {
			s += " (no match)"
		}
		return s
	case r.errText != "":
		return "✗ " + oneLine(r.errText, 110)
	case r.success:
		return "✓ reported success"
	case r.noMatch:
		if c.kind == "think" {
			return ""
		}
		return "no output"
	case c.kind == "read" || c.kind == "think":
		return ""
	}
	return `"` + oneLine(r.gist, 80) + `"`
}

// condensedSummary says what n condensed steps were: "[12 earlier steps
// condensed: 7 shell, 3 read, 2 edited; ids m0003–m0027]".
func condensedSummary(steps []TimelineEntry) string {
	if len(steps) == 0 {
		return ""
	}
	kinds := map[string]int{}
	for _, s := range steps {
		k := s.Kind
		if k == "" {
			k = "step"
		}
		if k == "tool" {
			// Name the tool: "5 get_reservation_details" says more than
			// "5 tool" in a dialogue whose every step is a tool call.
			if name := markerTool(s.Marker); name != "" {
				k = name
			}
		}
		kinds[k]++
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if kinds[names[i]] != kinds[names[j]] {
			return kinds[names[i]] > kinds[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, 0, len(names))
	other := 0
	for i, k := range names {
		if i >= maxCondensedKinds {
			other += kinds[k]
			continue
		}
		parts = append(parts, strconv.Itoa(kinds[k])+" "+k)
	}
	if other > 0 {
		parts = append(parts, strconv.Itoa(other)+" other")
	}
	first, last := steps[0].IDs, steps[len(steps)-1].IDs
	span := ""
	if len(first) > 0 && len(last) > 0 {
		span = "; " + first[0] + "–" + last[len(last)-1]
	}
	return "[" + fmtCount(len(steps)) + " earlier steps condensed: " + strings.Join(parts, ", ") + span + "]"
}

// maxCondensedKinds bounds the kinds a condensed line names.
const maxCondensedKinds = 6

// markerTool returns the tool name of a generic tool marker
// ("[get_user_details: user_id=… → …]"), or "".
func markerTool(marker string) string {
	if !strings.HasPrefix(marker, "[") {
		return ""
	}
	end := strings.IndexAny(marker, ":]")
	if end <= 1 || end > 64 {
		return ""
	}
	name := marker[1:end]
	if strings.ContainsAny(name, " \t\n") {
		return ""
	}
	return name
}

// tlLine is one rendered timeline line and the entries it stands for.
type tlLine struct {
	text       string
	ids        []string // the ids of its last entry
	start, end int      // entries[start:end]
}

// timelineLines renders entries, collapsing runs of identical markers into
// one line with a count ("m0011–m0015 [3× edited: App.tsx → ✗ …]").
func timelineLines(entries []TimelineEntry) []tlLine {
	var out []tlLine
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].Marker == entries[i].Marker {
			j++
		}
		e := entries[i]
		id := firstID(e.IDs)
		if j-i > 1 {
			last := entries[j-1]
			out = append(out, tlLine{id + "–" + firstID(last.IDs) + " " + strings.Replace(e.Marker, "[", "["+strconv.Itoa(j-i)+"× ", 1), last.IDs, i, j})
		} else {
			out = append(out, tlLine{id + " " + e.Marker, e.IDs, i, j})
		}
		i = j
	}
	return out
}

func firstID(ids []string) string {
	if len(ids) == 0 {
		return "?"
	}
	return ids[0]
}
