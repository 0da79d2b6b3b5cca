package compact

import (
	"container/list"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/briefd/briefd"
)

// Per-message extraction: everything the briefing needs from one message,
// computed once per distinct message content and kept in an ExtractCache,
// so that re-compacting a history that grew by one turn only reads the new
// messages.

// msgFacts is what one message contributes, independent of its id and
// position (identical messages share one entry).
type msgFacts struct {
	idents []string    // identifiers of content and tool-call arguments, first appearance order
	spoken []bool      // idents[i] appears in text the agent or user wrote (not a tool output)
	text   string      // clipped content (external content and images as placeholders)
	calls  []callFacts // assistant tool calls
	res    resultFacts // tool result
}

// callFacts is one tool call, classified.
type callFacts struct {
	name  string
	kind  string   // read, edited, created, shell, searched, python, think, finish, submit, tool
	paths []string // files it touches
	label string   // clipped one-line description (command, query, args)
}

// resultFacts is what a tool result says about its call.
type resultFacts struct {
	hasExit bool
	exit    int
	timeout bool
	errText string // the error line, clipped; "" when none seen
	success bool   // explicit success wording ("successfully", "N passed")
	noMatch bool   // empty output
	gist    string // first meaningful line, clipped
	file    string // a "[File: /path ...]" header (SWE-agent, OpenHands)
}

// ExtractCache keeps per-message extraction and token counts of briefing
// pieces, keyed by content hash, bounded (least recently used entries are
// evicted), and safe for concurrent use. One cache must be used with one
// token counter (encoding): it remembers counts.
type ExtractCache struct {
	seed     maphash.Seed
	max      int
	maxBytes int
	used     int // approximate bytes held by the entries

	mu     sync.Mutex
	ll     *list.List
	facts  map[uint64]*list.Element
	counts map[uint64]int
}

type cacheEntry struct {
	key   uint64
	facts *msgFacts
	cost  int
}

// cost approximates the bytes an entry keeps alive: its texts and
// identifiers (the clipped text dominates for large tool outputs).
func (f *msgFacts) cost() int {
	n := 256 + len(f.text) + len(f.res.errText) + len(f.res.gist) + len(f.res.file)
	for _, id := range f.idents {
		n += 24 + len(id)
	}
	for _, c := range f.calls {
		n += 64 + len(c.name) + len(c.label)
		for _, p := range c.paths {
			n += 16 + len(p)
		}
	}
	return n
}

// DefaultExtractCacheSize is the number of messages an ExtractCache keeps
// when NewExtractCache is given 0.
const DefaultExtractCacheSize = 50_000

// DefaultExtractCacheBytes bounds the memory an ExtractCache keeps, so that
// large tool outputs cannot grow it without limit.
const DefaultExtractCacheBytes = 128 << 20

// NewExtractCache returns a cache of at most max messages' extractions
// (and as many token counts). max <= 0 means DefaultExtractCacheSize.
func NewExtractCache(max int) *ExtractCache {
	if max <= 0 {
		max = DefaultExtractCacheSize
	}
	return &ExtractCache{seed: maphash.MakeSeed(), max: max, maxBytes: DefaultExtractCacheBytes, ll: list.New(),
		facts: make(map[uint64]*list.Element), counts: make(map[uint64]int)}
}

// messageKey hashes every field extraction reads, each length-prefixed so
// that no two different messages feed the hash the same bytes.
func (c *ExtractCache) messageKey(m *briefd.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	str := func(tag byte, s string) {
		var n [9]byte
		n[0] = tag
		binary.LittleEndian.PutUint64(n[1:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	str('r', string(m.Role))
	str('t', m.Content.Text)
	for _, p := range m.Content.Parts {
		str('p', p.Type)
		str('q', p.Text)
		if p.ImageURL != nil {
			str('i', p.ImageURL.URL)
		}
	}
	for _, tc := range m.ToolCalls {
		str('n', tc.Function.Name)
		str('a', tc.Function.Arguments)
	}
	return h.Sum64()
}

// get returns the facts of m, extracting them on a miss.
func (c *ExtractCache) get(m *briefd.Message) *msgFacts {
	k := c.messageKey(m)
	c.mu.Lock()
	if e, ok := c.facts[k]; ok {
		c.ll.MoveToFront(e)
		f := e.Value.(*cacheEntry).facts
		c.mu.Unlock()
		return f
	}
	c.mu.Unlock()
	f := extractMessage(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.facts[k]; ok {
		return e.Value.(*cacheEntry).facts
	}
	e := &cacheEntry{key: k, facts: f, cost: f.cost()}
	c.facts[k] = c.ll.PushFront(e)
	c.used += e.cost
	for c.ll.Len() > 1 && (c.ll.Len() > c.max || c.used > c.maxBytes) {
		last := c.ll.Back()
		c.ll.Remove(last)
		old := last.Value.(*cacheEntry)
		delete(c.facts, old.key)
		c.used -= old.cost
	}
	return f
}

// count returns count(s), remembering it by the hash of s.
func (c *ExtractCache) count(s string, count func(string) int) int {
	k := maphash.String(c.seed, s)
	c.mu.Lock()
	n, ok := c.counts[k]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = count(s)
	c.mu.Lock()
	if len(c.counts) >= c.max*4 {
		// Counts are cheap to recompute; drop them all rather than track
		// recency for each.
		clear(c.counts)
	}
	c.counts[k] = n
	c.mu.Unlock()
	return n
}

// extractMessage reads one message.
func extractMessage(m *briefd.Message) *msgFacts {
	f := &msgFacts{text: messageText(m)}
	seen := map[string]int{}
	add := func(spoken bool) func(string) {
		return func(s string) {
			if i, ok := seen[s]; ok {
				f.spoken[i] = f.spoken[i] || spoken
				return
			}
			seen[s] = len(f.idents)
			f.idents = append(f.idents, s)
			f.spoken = append(f.spoken, spoken)
		}
	}
	scanIdentifiers(f.text, add(m.Role != briefd.RoleTool))
	for _, tc := range m.ToolCalls {
		scanIdentifiers(tc.Function.Arguments, add(true))
		f.calls = append(f.calls, classifyCall(tc.Function.Name, tc.Function.Arguments))
	}
	if m.Role == briefd.RoleTool {
		f.res = readResult(f.text)
	}
	return f
}

// ---- tool calls ----

func parseArgs(args string) map[string]any {
	var v map[string]any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return nil
	}
	return v
}

func argString(a map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := a[k].(string); ok {
			return s
		}
	}
	return ""
}

func classifyCall(name, args string) callFacts {
	a := parseArgs(args)
	switch name {
	case "bash", "execute_bash", "shell", "run", "run_command", "terminal", "cmd":
		cmd := argString(a, "command", "cmd", "script")
		if cmd == "" {
			cmd = args
		}
		return classifyShell(name, cmd)
	case "str_replace_editor", "file_editor", "edit_file", "view", "read_file", "write_file", "create_file":
		path := argString(a, "path", "file", "file_path", "filename")
		kind := "read"
		switch argString(a, "command") {
		case "create":
			kind = "created"
		case "str_replace", "insert", "undo_edit", "edit":
			kind = "edited"
		}
		if name == "write_file" || name == "create_file" {
			kind = "created"
		}
		if name == "edit_file" {
			kind = "edited"
		}
		c := callFacts{name: name, kind: kind, label: path}
		if path != "" {
			c.paths = []string{path}
		}
		return c
	case "execute_ipython_cell", "ipython", "python":
		return classifyPython(name, argString(a, "code", "source"))
	case "think":
		return callFacts{name: name, kind: "think", label: oneLine(argString(a, "thought", "content"), 100)}
	case "finish", "submit", "done":
		return callFacts{name: name, kind: "finish", label: oneLine(argString(a, "message", "summary", "answer"), 100)}
	}
	return callFacts{name: name, kind: "tool", label: compactArgs(a, args)}
}

// compactArgs renders a JSON argument object as k=v pairs, scalar leaves
// first, clipped.
func compactArgs(a map[string]any, raw string) string {
	if a == nil {
		return oneLine(raw, 120)
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(leafString(a[k]))
	}
	return oneLine(b.String(), 120)
}

func leafString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, leafString(e))
		}
		return "[" + strings.Join(parts, "; ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, leafString(x[k]))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

var (
	pyOpen   = regexp.MustCompile(`open_file\(\s*['"]([^'"]+)['"]`)
	pyEdit   = regexp.MustCompile(`(?:edit_file_by_replace|insert_content_at_line|append_file|edit_file)\(\s*(?:file_name=)?['"]([^'"]+)['"]`)
	pyCreate = regexp.MustCompile(`create_file\(\s*['"]([^'"]+)['"]`)
)

func classifyPython(name, code string) callFacts {
	if m := pyEdit.FindStringSubmatch(code); m != nil {
		return callFacts{name: name, kind: "edited", paths: []string{m[1]}, label: m[1]}
	}
	if m := pyCreate.FindStringSubmatch(code); m != nil {
		return callFacts{name: name, kind: "created", paths: []string{m[1]}, label: m[1]}
	}
	if m := pyOpen.FindStringSubmatch(code); m != nil {
		return callFacts{name: name, kind: "read", paths: []string{m[1]}, label: m[1]}
	}
	return callFacts{name: name, kind: "python", label: oneLine(code, 100)}
}

var readers = map[string]bool{"cat": true, "nl": true, "head": true, "tail": true, "less": true, "more": true, "open": true, "goto": true, "scroll_down": true, "scroll_up": true, "view": true}
var searchers = map[string]bool{"grep": true, "rg": true, "ag": true, "find": true, "find_file": true, "search_dir": true, "search_file": true, "ack": true, "git grep": true}

// classifyShell classifies a shell command by its first program, after
// any leading "cd DIR &&". The label is the command's first line, clipped.
func classifyShell(name, cmd string) callFacts {
	first := strings.TrimSpace(cmd)
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = strings.TrimSpace(first[:i])
	}
	for strings.HasPrefix(first, "cd ") {
		i := strings.Index(first, "&&")
		if i < 0 {
			break
		}
		first = strings.TrimSpace(first[i+2:])
	}
	c := callFacts{name: name, kind: "shell", label: oneLine(first, 110)}
	fields := strings.Fields(first)
	if len(fields) == 0 {
		return c
	}
	prog := fields[0]
	paths := pathsOf(first)
	switch {
	case (prog == "cat" || prog == "tee") && (strings.Contains(first, "<<") || strings.Contains(first, ">")) || prog == "create" || prog == "touch":
		c.kind = "created"
		c.paths = redirectTarget(first, paths)
	case prog == "sed" && (len(fields) > 1 && strings.HasPrefix(fields[1], "-i")) || prog == "edit" || prog == "patch" || prog == "insert":
		c.kind = "edited"
		c.paths = lastPath(paths)
	case prog == "sed" && strings.Contains(first, "-n") || readers[prog]:
		c.kind = "read"
		c.paths = paths
	case searchers[prog]:
		c.kind = "searched"
		c.paths = paths
	case prog == "submit":
		c.kind = "submit"
	}
	if strings.Contains(first, "| sed -n") || strings.Contains(first, "| head") {
		if c.kind == "shell" && (prog == "nl" || prog == "cat") {
			c.kind = "read"
		}
	}
	return c
}

func pathsOf(s string) []string {
	var out []string
	for _, id := range Identifiers(s) {
		if looksLikePath(id) {
			out = append(out, id)
		}
	}
	return out
}

func looksLikePath(id string) bool {
	if strings.HasPrefix(id, "http") || strings.Contains(id, "@") {
		return false
	}
	if strings.Contains(id, "/") {
		return true
	}
	if i := strings.LastIndexByte(id, '.'); i > 0 && knownExtensions[id[i+1:]] {
		return true
	}
	return false
}

func redirectTarget(cmd string, paths []string) []string {
	if i := strings.LastIndexByte(cmd, '>'); i >= 0 {
		if f := strings.Fields(cmd[i+1:]); len(f) > 0 {
			t := strings.Trim(f[0], `'"`)
			if t != "" && t != "/dev/null" && t != "&1" && t != "&2" {
				return []string{t}
			}
		}
	}
	return lastPath(paths)
}

func lastPath(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	return paths[len(paths)-1:]
}

// ---- tool results ----

var (
	returnCode  = regexp.MustCompile(`<returncode>\s*(-?\d+)\s*</returncode>`)
	exitCode    = regexp.MustCompile(`(?i)\b(?:exit code|exit status|exited with code)[:= ]+(-?\d+)`)
	fileHeader  = regexp.MustCompile(`\[File: ([^\s\]]+)`)
	errLine     = regexp.MustCompile(`(?m)^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Failure)\b(?::.*)?|ERROR\b.*|Error:.*|error:.*|FAILED\b.*|fatal:.*|E\s{3}.*|.*: (?:error|Error):.*|.*\b(?:No such file or directory|command not found|Permission denied|Segmentation fault)\b.*|\[Your proposed edit has introduced new syntax error.*|Traceback \(most recent call last\):)\s*$`)
	successWord = regexp.MustCompile(`(?i)\bsuccessfully\b|\b\d+ passed\b|^OK\b|\bAll tests passed\b`)
	failedWord  = regexp.MustCompile(`(?i)\b\d+ failed\b|\bFAILED\b|\berrors? occurred\b`)
)

// readResult reads a tool result: exit status, the error line, success
// wording, and a one-line gist.
func readResult(text string) resultFacts {
	var r resultFacts
	if m := returnCode.FindStringSubmatch(text); m != nil {
		r.hasExit = true
		r.exit, _ = strconv.Atoi(m[1])
	} else if m := exitCode.FindStringSubmatch(tailOf(text, 400)); m != nil {
		r.hasExit = true
		r.exit, _ = strconv.Atoi(m[1])
	}
	low := headOf(text, 300)
	if strings.Contains(low, "timed out") || strings.Contains(low, "Timeout") && strings.Contains(low, "command") {
		r.timeout = true
	}
	if m := fileHeader.FindStringSubmatch(headOf(text, 300)); m != nil {
		r.file = m[1]
	}
	body := text
	if r.hasExit {
		if i := strings.Index(body, "<output>"); i >= 0 {
			body = body[i+len("<output>"):]
		}
		body = strings.TrimSuffix(strings.TrimSpace(body), "</output>")
	}
	if strings.TrimSpace(body) == "" {
		r.noMatch = true
	}
	r.gist = gistOf(body)
	if !r.hasExit || r.exit != 0 {
		r.errText = findError(body)
	}
	// Success wording counts as evidence only without a contrary sign.
	if r.errText == "" && (!r.hasExit || r.exit == 0) {
		probe := headOf(body, 2000) + tailOf(body, 2000)
		if mayHaveSuccess(probe) && successWord.MatchString(probe) && !failedWord.MatchString(probe) {
			r.success = true
		}
	}
	return r
}

// findError returns the most telling error line of a tool output: the
// last exception line of a traceback, or the first error line, searching
// the head and tail of long outputs only (the middle of a file dump is not
// an error report).
func findError(body string) string {
	probe := body
	if len(body) > 6000 {
		probe = headOf(body, 3000) + "\n" + tailOf(body, 3000)
	}
	if !mayHaveError(probe) {
		return ""
	}
	// Line by line, the regexp only on lines with a hint: matching the
	// whole probe at once was the slowest part of reading a message.
	pick, traceback, n := "", false, 0
	for rest := probe; rest != "" && n < 40; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if !mayHaveError(line) || !errLine.MatchString(line) {
			continue
		}
		n++
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Traceback"):
			traceback = true
			if pick == "" {
				pick = line
			}
		case traceback:
			// In a traceback the exception line (the last one) says it all.
			pick = line
		case pick == "" || strings.HasPrefix(pick, "Traceback"):
			pick = line
		}
	}
	return oneLine(pick, 180)
}

// mayHaveSuccess is a necessary condition of successWord, cheap to test:
// the case-insensitive regexp is slow on long outputs.
func mayHaveSuccess(s string) bool {
	low := strings.ToLower(s)
	return strings.Contains(low, "successfully") || strings.Contains(low, "passed") || strings.HasPrefix(s, "OK")
}

// errorHints are substrings every line errLine matches contains: a probe
// without any of them cannot match, and the regexp is skipped.
var errorHints = []string{"rror", "xception", "ailure", "ERROR", "FAILED", "fatal:", "No such file", "command not found", "Permission denied", "Segmentation fault", "Traceback"}

func mayHaveError(s string) bool {
	for _, h := range errorHints {
		if strings.Contains(s, h) {
			return true
		}
	}
	// errLine's E\s{3}: pytest's failure detail lines.
	for i := strings.IndexByte(s, 'E'); i >= 0 && i+3 < len(s); {
		if isSpace(s[i+1]) && isSpace(s[i+2]) && isSpace(s[i+3]) {
			return true
		}
		j := strings.IndexByte(s[i+1:], 'E')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func gistOf(body string) string {
	for _, line := range strings.SplitN(headOf(body, 1000), "\n", 12) {
		line = strings.TrimSpace(line)
		if line == "" || line == "<output>" || strings.HasPrefix(line, "<returncode>") {
			continue
		}
		return oneLine(line, 90)
	}
	return ""
}

func headOf(s string, n int) string { return clipHead(s, n) }

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return s[i:]
}
