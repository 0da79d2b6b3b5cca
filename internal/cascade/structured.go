package cascade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Structured is the hand-off of the structured prompt (seed 003): each item
// names the messages it comes from, so the gate can check it.
type Structured struct {
	TaskGoal         string            `json:"task_goal"`
	UserInstructions []Instruction     `json:"user_instructions"`
	Findings         []Finding         `json:"findings"`
	Objects          []Object          `json:"objects"`
	Decisions        []Decision        `json:"decisions"`
	Errors           []ErrorResolution `json:"errors"`
	Progress         []Step            `json:"progress"`
	PendingActions   []Action          `json:"pending_actions"`
	CurrentState     string            `json:"current_state"`
}

// Instruction is a user instruction, quoted verbatim.
type Instruction struct {
	Quote     string   `json:"quote"`
	SourceIDs []string `json:"source_ids"`
}

// Decision is a decision and its reason.
type Decision struct {
	Decision  string   `json:"decision"`
	Reason    string   `json:"reason"`
	SourceIDs []string `json:"source_ids"`
}

// Finding is something learned and the result that shows it.
type Finding struct {
	Finding   string   `json:"finding"`
	Result    string   `json:"result"`
	SourceIDs []string `json:"source_ids"`
}

// Object is a file, record or other object in play and its last known state.
type Object struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	SourceIDs []string `json:"source_ids"`
}

// ErrorResolution is an error met and how it was handled ("open" if not).
type ErrorResolution struct {
	Error      string   `json:"error"`
	Resolution string   `json:"resolution"`
	SourceIDs  []string `json:"source_ids"`
}

// Step is a step of the work and its status: completed, in_progress or failed.
type Step struct {
	Step      string   `json:"step"`
	Status    string   `json:"status"`
	SourceIDs []string `json:"source_ids"`
}

// Action is a pending action.
type Action struct {
	Action    string   `json:"action"`
	SourceIDs []string `json:"source_ids"`
}

// requiredFields are the keys every structured reply must have.
var requiredFields = []string{"task_goal", "user_instructions", "findings", "objects", "decisions", "errors", "progress", "pending_actions", "current_state"}

// schemaJSON is the JSON schema sent as response_format json_schema
// (strict: every property required, no others).
var schemaJSON = func() json.RawMessage {
	ids := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	str := map[string]any{"type": "string"}
	obj := func(fields ...string) map[string]any {
		props := map[string]any{"source_ids": ids}
		req := append([]string(nil), fields...)
		for _, f := range fields {
			props[f] = str
		}
		req = append(req, "source_ids")
		return map[string]any{"type": "array", "items": map[string]any{
			"type": "object", "properties": props, "required": req, "additionalProperties": false,
		}}
	}
	progress := obj("step", "status")
	progress["items"].(map[string]any)["properties"].(map[string]any)["status"] =
		map[string]any{"type": "string", "enum": []string{"completed", "in_progress", "failed"}}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"task_goal":         str,
			"user_instructions": obj("quote"),
			"findings":          obj("finding", "result"),
			"objects":           obj("name", "state"),
			"decisions":         obj("decision", "reason"),
			"errors":            obj("error", "resolution"),
			"progress":          progress,
			"pending_actions":   obj("action"),
			"current_state":     str,
		},
		"required":             requiredFields,
		"additionalProperties": false,
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(err) // a literal above; cannot fail
	}
	return b
}()

// extractJSON returns the JSON object in a reply, tolerating code fences
// and prose around it (endpoints without response_format add them).
func extractJSON(reply string) (string, bool) {
	i := strings.IndexByte(reply, '{')
	j := strings.LastIndexByte(reply, '}')
	if i < 0 || j < i {
		return "", false
	}
	return reply[i : j+1], true
}

// parseStructured decodes and validates a structured reply against the
// schema and the source: format (JSON, fields, types), cited ids
// (identifier) and user instructions (verbatim in a user message).
func parseStructured(reply string, src *source, j *judgement) *Structured {
	j.check(RuleFormat, RuleIdentifier, RuleUserInstruction)
	raw, ok := extractJSON(reply)
	if !ok {
		j.fail(RuleFormat, "the reply is not a JSON object")
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &keys); err != nil {
		j.fail(RuleFormat, "the reply is not valid JSON: %v", err)
		return nil
	}
	for _, f := range requiredFields {
		if k, ok := keys[f]; !ok || bytes.Equal(bytes.TrimSpace(k), []byte("null")) {
			j.fail(RuleFormat, "required field %q is missing", f)
		}
	}
	var s Structured
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		j.fail(RuleFormat, "a field has the wrong type: %v", err)
		return nil
	}
	if strings.TrimSpace(s.TaskGoal) == "" {
		j.fail(RuleFormat, "task_goal is empty")
	}
	if strings.TrimSpace(s.CurrentState) == "" {
		j.fail(RuleFormat, "current_state is empty")
	}
	item := func(field string, i int, text string, ids []string) {
		if strings.TrimSpace(text) == "" {
			j.fail(RuleFormat, "%s[%d] is empty", field, i)
		}
		if len(ids) == 0 {
			j.fail(RuleFormat, "%s[%d] has no source_ids", field, i)
		}
		for _, id := range ids {
			if !src.ids[id] {
				j.fail(RuleIdentifier, "%s[%d] cites %q, which is not a message id of the history", field, i, id)
			}
		}
	}
	for i, x := range s.UserInstructions {
		item("user_instructions", i, x.Quote, x.SourceIDs)
		if q := strings.TrimSpace(x.Quote); q != "" && !src.fromUser(q) {
			j.fail(RuleUserInstruction, "user_instructions[%d] %q is not in any user message: quote users exactly, and never present an assistant's, a tool's or an error message's words as the user's",
				i, clip(q, 200))
		}
	}
	for i, x := range s.Findings {
		item("findings", i, x.Finding, x.SourceIDs)
	}
	for i, x := range s.Objects {
		item("objects", i, x.Name, x.SourceIDs)
	}
	for i, x := range s.Decisions {
		item("decisions", i, x.Decision, x.SourceIDs)
	}
	for i, x := range s.Errors {
		item("errors", i, x.Error, x.SourceIDs)
	}
	for i, x := range s.Progress {
		item("progress", i, x.Step, x.SourceIDs)
		switch x.Status {
		case "completed", "in_progress", "failed":
		default:
			j.fail(RuleFormat, "progress[%d] has status %q; use completed, in_progress or failed", i, x.Status)
		}
	}
	for i, x := range s.PendingActions {
		item("pending_actions", i, x.Action, x.SourceIDs)
	}
	return &s
}

// structuredClaims returns the completion claims of a structured reply:
// each "completed" step with its source_ids, and the prose claims of the
// findings, objects, errors and current state.
func (src *source) structuredClaims(s *Structured) []claim {
	var out []claim
	for _, x := range s.Progress {
		if x.Status == "completed" {
			out = append(out, src.newClaim(x.Step, src.knownIDs(x.SourceIDs), true))
		}
	}
	prose := func(text string, ids []string) {
		for _, cl := range clauseSpans(maskQuotes(text)) {
			for _, c := range src.proseClaims(maskQuotes(text)[cl[0]:cl[1]]) {
				// An item's source_ids cite the item, not each of its
				// clauses: the claim may rest on any message.
				c.cited, c.explicit = src.knownIDs(ids), false
				c.quotes = quotedOutputs(text[cl[0]:cl[1]])
				out = append(out, c)
			}
		}
	}
	for _, x := range s.Findings {
		prose(x.Finding+"; "+x.Result, x.SourceIDs)
	}
	for _, x := range s.Objects {
		prose(x.Name+" "+x.State, x.SourceIDs)
	}
	for _, x := range s.Errors {
		prose(x.Error+"; "+x.Resolution, x.SourceIDs)
	}
	prose(s.CurrentState, nil)
	return out
}

// knownIDs returns the ids of ids that name messages of the history.
func (src *source) knownIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if src.ids[id] {
			out = append(out, id)
		}
	}
	return out
}

// render writes the structured hand-off as the plain text the agent
// reads, in the order of the normal prompt. User instructions are quoted;
// every item cites its messages.
func (s *Structured) render() string {
	var b strings.Builder
	cite := func(ids []string) string {
		if len(ids) == 0 {
			return ""
		}
		return " [" + strings.Join(ids, ", ") + "]"
	}
	section := func(title string, n int, line func(i int) string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s:\n", title)
		for i := range n {
			b.WriteString("- " + line(i) + "\n")
		}
	}
	fmt.Fprintf(&b, "TASK: %s\n", strings.TrimSpace(s.TaskGoal))
	section("USER INSTRUCTIONS", len(s.UserInstructions), func(i int) string {
		x := s.UserInstructions[i]
		return fmt.Sprintf("\"%s\"%s", strings.TrimSpace(x.Quote), cite(x.SourceIDs))
	})
	section("FINDINGS", len(s.Findings), func(i int) string {
		x := s.Findings[i]
		return fmt.Sprintf("%s: %s%s", strings.TrimSpace(x.Finding), strings.TrimSpace(x.Result), cite(x.SourceIDs))
	})
	section("OBJECTS", len(s.Objects), func(i int) string {
		x := s.Objects[i]
		return fmt.Sprintf("%s: %s%s", strings.TrimSpace(x.Name), strings.TrimSpace(x.State), cite(x.SourceIDs))
	})
	section("DECISIONS", len(s.Decisions), func(i int) string {
		x := s.Decisions[i]
		return fmt.Sprintf("%s (because %s)%s", strings.TrimSpace(x.Decision), strings.TrimSpace(x.Reason), cite(x.SourceIDs))
	})
	section("ERRORS", len(s.Errors), func(i int) string {
		x := s.Errors[i]
		return fmt.Sprintf("%s -> %s%s", strings.TrimSpace(x.Error), strings.TrimSpace(x.Resolution), cite(x.SourceIDs))
	})
	section("PROGRESS", len(s.Progress), func(i int) string {
		x := s.Progress[i]
		status := map[string]string{"completed": "COMPLETED", "in_progress": "IN-PROGRESS", "failed": "FAILED"}[x.Status]
		return fmt.Sprintf("%s: %s%s", strings.TrimSpace(x.Step), status, cite(x.SourceIDs))
	})
	fmt.Fprintf(&b, "\nCURRENT STATE: %s\n", strings.TrimSpace(s.CurrentState))
	section("NEXT", len(s.PendingActions), func(i int) string {
		x := s.PendingActions[i]
		return strings.TrimSpace(x.Action) + cite(x.SourceIDs)
	})
	return strings.TrimSpace(b.String())
}
