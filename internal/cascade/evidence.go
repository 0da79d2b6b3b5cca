package cascade

import (
	"regexp"
	"strings"

	"github.com/briefd/briefd"
)

// What a span message shows, read from its calls and their results. The
// signals are anchored (an exit status, a test summary line, an editor's
// confirmation, a status field), never a word anywhere in the output: a
// file view that contains "passes" or a C macro DONE() proves nothing.

var (
	// listingLineRe matches the lines of a numbered file listing (cat -n,
	// nl -ba, editors' views): code, not output.
	listingLineRe = regexp.MustCompile(`(?m)^\s*\d+(?:\t|\||:|\s{2,}).*$`)
	failureRe     = regexp.MustCompile(`(?im)<returncode>\s*[1-9]\d*\s*</returncode>|\bexit (?:code|status):?\s*[1-9]\d*\b|PROCESS-DONE:[1-9]\d*:|Traceback \(most recent call last\)|^\s*(?:[A-Za-z_.]*(?:Error|Exception)|ERROR|FAILED|FAIL|FAILURE|fatal|error)\b[:!\s]|No such file or directory|command not found|cannot access|Permission denied|EXECUTION TIMED OUT|have NOT been applied|syntax error|Invalid .{0,60}parameter|\b[1-9]\d* (?:failed|errors?)\b|^\s*Error:`)
	exitZeroRe    = regexp.MustCompile(`(?i)<returncode>\s*0\s*</returncode>|\bexit (?:code|status):?\s*0\b|PROCESS-DONE:0:`)
	testPassRe    = regexp.MustCompile(`(?im)\b\d+ passed\b|^OK\b|^PASS(?:ED)?\b|\ball (?:\d+ )?tests? pass(?:ed)?\b|^ok\s+\S+|\bRan \d+ tests?\b`)
	successLineRe = regexp.MustCompile(`(?i)\bsuccess(?:ful(?:ly)?)?\b`)
	editedRe      = regexp.MustCompile(`(?i)\bFile updated\b|has been edited|File created successfully|edited at line|successfully (?:created|edited|updated|written|replaced)`)
	statusFieldRe = regexp.MustCompile(`"status":\s*"([a-z_]+)"`)
	testWordRe    = regexp.MustCompile(`(?i)\b(?:py)?tests?\b|\bspec\b|\bunittest\b|\bjest\b|\btox\b|\bcheck\b`)
)

// Shell commands that change files or state, and those that only look.
var (
	changeCmdRe = regexp.MustCompile(`(?m)\bsed\s+(?:-[a-zA-Z]*\s+)*-i|\bperl\s+-[a-z]*i|cat\s*<<|\bcat\s+>|(?:^|[^0-9&>=\-])>>?\s*[./\w~][^\s&|;]*|\btee\s|(?:^|[;&|]\s*)(?:cp|mv|rm|touch|mkdir|patch|ln|chmod|install)\s|\bgit\s+(?:checkout|apply|reset|restore|stash|revert|commit|am|cherry-pick|merge|rm|mv)\b|^\s*(?:create|edit|append|insert)\s|edit_file|insert_content|append_file|create_file|\.write\(|\bopen\([^)]*['"][wa]['"]`)
	viewCmdRe   = regexp.MustCompile(`^\s*(?:cat|nl|head|tail|less|more|grep|egrep|rg|ag|find|ls|tree|wc|file|pwd|stat|du|open|goto|scroll_up|scroll_down|search_file|search_dir|find_file|which|whereis|echo|printf|decompile|disassemble|objdump|strings|xxd|hexdump|readelf|nm|git\s+(?:diff|status|log|show|grep|blame)|sed\s+-n|awk|diff|open_file\(|search_\w+\(|find_file\()`)
	// Tool names that only read (tau-bench's get_*, search_*, an editor's view).
	viewToolRe   = regexp.MustCompile(`^(?:get|search|list|find|view|read|open|lookup|fetch|think|calculate)`)
	changeToolRe = regexp.MustCompile(`^(?:update|cancel|book|create|delete|remove|modify|send|transfer|edit|write|insert|replace|apply|patch|set|add|upload|submit|exchange|return)`)
)

// msgEvidence is what one message shows.
type msgEvidence struct {
	raw      string // tool output
	results  string // tool output, numbered listings removed
	failure  bool
	positive bool // an exit status 0, a test summary or a success line
	change   bool // a call that changes files or records
	view     bool // every call only looks
	run      bool // a call that runs something (neither change nor view)
	test     bool // a test run
	calls    string
}

func (s *source) evidence(m *srcMsg) msgEvidence {
	if m.ev != nil {
		return *m.ev
	}
	e := s.readEvidence(m)
	m.ev = &e
	return e
}

// readEvidence reads what m shows; evidence caches it, since every claim
// may look at every message.
func (s *source) readEvidence(m *srcMsg) msgEvidence {
	var e msgEvidence
	raw := strings.Join(m.results, "\n")
	e.raw = raw
	e.results = listingLineRe.ReplaceAllString(raw, "")
	e.failure = failureRe.MatchString(e.results)
	e.positive = exitZeroRe.MatchString(raw) || testPassRe.MatchString(e.results) || successLineRe.MatchString(e.results)
	if editedRe.MatchString(e.results) {
		e.change = true
	}
	views, n := 0, 0
	var calls strings.Builder
	for _, c := range m.calls {
		n++
		calls.WriteString(c.name + " " + c.args + "\n")
		switch kind := callKind(c); kind {
		case "change":
			e.change = true
		case "view":
			views++
		default:
			e.run = true
		}
		if testWordRe.MatchString(c.command) {
			e.test = true
		}
	}
	e.calls = calls.String()
	e.view = n > 0 && views == n
	if testPassRe.MatchString(e.results) {
		e.test = true
	}
	return e
}

// callKind classifies a call as "change", "view" or "run".
func callKind(c srcCall) string {
	name := strings.ToLower(c.name)
	if sub := subCommand(c.args); sub != "" && !strings.Contains(name, "bash") {
		if sub == "view" {
			return "view"
		}
		return "change"
	}
	if c.command == "" {
		// A tool without a command: its name says what it does.
		switch {
		case viewToolRe.MatchString(name):
			return "view"
		case changeToolRe.MatchString(name):
			return "change"
		}
		return "run"
	}
	cmd := devNullRe.ReplaceAllString(c.command, "")
	if changeCmdRe.MatchString(cmd) {
		return "change"
	}
	first := cmd
	for _, sep := range []string{"&&", "||", ";", "|", "\n"} {
		if i := strings.Index(first, sep); i >= 0 {
			first = first[:i]
		}
	}
	if viewCmdRe.MatchString(first) {
		return "view"
	}
	return "run"
}

var devNullRe = regexp.MustCompile(`\d?>>?\s*/dev/null`)

var subCommandRe = regexp.MustCompile(`"command"\s*:\s*"(view|create|str_replace|insert|undo_edit|write)"`)

// subCommand returns an editor tool's sub-command (str_replace_editor's
// "command": "view"), or "".
func subCommand(args string) string {
	if m := subCommandRe.FindStringSubmatch(args); m != nil {
		return m[1]
	}
	return ""
}

// hasAction reports whether a message's calls perform one of the actions
// (cancel_reservation, curl -F for an upload), or its result records the
// action's outcome as a status field ("status": "cancelled").
func hasAction(m *srcMsg, e msgEvidence, stems []string) bool {
	calls := strings.ToLower(e.calls)
	for _, st := range stems {
		if strings.Contains(calls, st) {
			return true
		}
	}
	for _, f := range statusFieldRe.FindAllStringSubmatch(e.results, -1) {
		for _, st := range stems {
			if strings.HasPrefix(f[1], st) {
				return true
			}
		}
	}
	return false
}

// isResultBearing reports a message that made or answered a tool call.
func (m *srcMsg) isResultBearing() bool {
	return m.role != briefd.RoleUser && (len(m.calls) > 0 || len(m.results) > 0)
}
