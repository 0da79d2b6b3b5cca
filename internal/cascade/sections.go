package cascade

import (
	"regexp"
	"strings"
)

// Sections of a hand-off. Models label them in many ways ("TASK:",
// "**Task:**", "## Task", "- Goal:", "State:"); the gate reads them all as
// the same section.
const (
	secNone         = ""
	secTask         = "TASK"
	secInstructions = "USER INSTRUCTIONS"
	secFindings     = "FINDINGS"
	secObjects      = "OBJECTS"
	secDecisions    = "DECISIONS"
	secErrors       = "ERRORS"
	secProgress     = "PROGRESS"
	secState        = "CURRENT STATE"
	secNext         = "NEXT"
)

// sectionNames maps a label, lowercased, to its section.
var sectionNames = map[string]string{
	"task": secTask, "tasks": secTask, "goal": secTask, "goals": secTask, "objective": secTask, "the task": secTask,
	"user's task": secTask, "task goal": secTask, "mission": secTask,
	"user instructions": secInstructions, "user instruction": secInstructions, "instructions": secInstructions,
	"user requirements": secInstructions, "requirements": secInstructions, "constraints": secInstructions,
	"user preferences": secInstructions, "user's instructions": secInstructions, "instructions from the user": secInstructions,
	"findings": secFindings, "finding": secFindings, "found": secFindings, "known": secFindings, "seen": secFindings,
	"learned": secFindings, "results": secFindings, "key findings": secFindings, "tried": secFindings, "so far": secFindings,
	"facts": secFindings, "what was learned": secFindings, "context": secFindings,
	"objects": secObjects, "state of objects": secObjects, "artifacts": secObjects, "files": secObjects, "records": secObjects,
	"decisions": secDecisions, "decision": secDecisions, "decisions made": secDecisions,
	"errors": secErrors, "error": secErrors, "blocked": secErrors, "blockers": secErrors, "issues": secErrors, "problems": secErrors,
	"progress": secProgress, "done": secProgress, "steps": secProgress, "completed": secProgress, "work done": secProgress,
	"what was done": secProgress,
	"current state": secState, "state": secState, "status": secState, "current status": secState, "now": secState,
	"where things stand": secState, "where it stands": secState,
	"next": secNext, "next steps": secNext, "next step": secNext, "pending": secNext, "todo": secNext, "to do": secNext,
	"remaining": secNext, "open": secNext, "open items": secNext, "what is left": secNext,
}

// labelRe reads a label line: optional markdown decoration (heading marks,
// bullets, numbering, bold), the label, then a colon, a dash or the end of
// the line. Group 1 is the label, group 2 the rest of the line.
var labelRe = regexp.MustCompile(`^\s*(?:#{1,6}\s*|[-*•+>]\s+|\d+[.)]\s+)*[*_]{0,3}\s*([A-Za-z][A-Za-z' ]{0,40}?)\s*[*_]{0,3}\s*(?::[*_]{0,3}|\s[-\x{2013}\x{2014}]\s|$)(.*)$`)

// section is one labelled part of a reply (or the text before any label).
type section struct {
	name string
	text string // the section's text, its label line's rest included
	line int    // index of its first line
}

// splitSections cuts a plain-text reply at its label lines. A line whose
// label is not a known section name stays in the current section.
func splitSections(reply string) []section {
	lines := strings.Split(reply, "\n")
	var out []section
	cur := section{name: secNone}
	var body []string
	flush := func() {
		cur.text = strings.Join(body, "\n")
		if strings.TrimSpace(cur.text) != "" || cur.name != secNone {
			out = append(out, cur)
		}
	}
	for i, line := range lines {
		if name, rest, ok := labelOf(line); ok {
			flush()
			cur, body = section{name: name, line: i}, []string{rest}
			continue
		}
		body = append(body, line)
	}
	flush()
	return out
}

// labelOf reports the section a line starts, and the rest of the line.
func labelOf(line string) (name, rest string, ok bool) {
	m := labelRe.FindStringSubmatch(line)
	if m == nil {
		return "", "", false
	}
	label := strings.ToLower(strings.Join(strings.Fields(m[1]), " "))
	name, ok = sectionNames[label]
	if !ok {
		return "", "", false
	}
	return name, strings.TrimSpace(m[2]), true
}

// sectionText returns the text of every section of the given names.
func sectionText(secs []section, names ...string) string {
	var b strings.Builder
	for _, s := range secs {
		for _, n := range names {
			if s.name == n {
				b.WriteString(s.text)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// hasSection reports whether a section of one of the names is present and
// not empty.
func hasSection(secs []section, names ...string) bool {
	return strings.TrimSpace(sectionText(secs, names...)) != ""
}
