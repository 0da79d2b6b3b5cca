package brief

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/briefd/briefd/internal/ident"
)

// What a tool call did, read from its name and arguments: the kind of step
// and the operations on files. Agents reach files through a shell (bash,
// execute_bash), an editor tool (str_replace_editor), a Python cell, or the
// commands of an agent framework (SWE-agent's open/edit/create); API tools
// (get_reservation_details, cancel_reservation) read or change records.

// kind is what a step did, most telling first when a call does several
// things (an edit piped into a view is an edit).
type kind uint8

const (
	kindOther   kind = iota
	kindList         // ls, tree, pwd
	kindInstall      // pip install
	kindView         // read a file or a diff
	kindSearch       // grep, find
	kindLookup       // a read-only API tool
	kindHTTP         // curl, wget
	kindRun          // run a script or program
	kindTest         // run tests
	kindThink        // a think tool
	kindWrite        // create or overwrite a file
	kindEdit         // change part of a file
	kindDelete       // remove a file
	kindRevert       // undo changes to a file
	kindMutate       // an API tool that changes a record
	kindFinish       // submit, finish
)

var kindNames = [...]string{"other", "list", "install", "view", "search", "lookup", "http", "run", "test", "think",
	"write", "edit", "delete", "revert", "mutate", "finish"}

func (k kind) String() string { return kindNames[k] }

// changes reports whether a step of this kind changes files or records.
func (k kind) changes() bool {
	return k == kindWrite || k == kindEdit || k == kindDelete || k == kindRevert || k == kindMutate
}

// fileOp is one operation on one file.
type fileOp struct {
	path string
	op   kind   // kindView, kindWrite, kindEdit, kindDelete, kindRevert, kindRun, kindSearch
	what string // the change: "line 917: `_default_manager` → `_base_manager`", a view's line range
	body string // the content written, for small writes
	// outline is what a larger written body defines (outline), read once
	// with the call.
	outline string
	// writes are the files a Python script written here opens for writing.
	writes []string
	// effect tells what the script writes into them (scriptEffect).
	effect string
	// dir is the directory a "cd" of the line went to before it, for a
	// relative path: the briefing names it beside the path as written
	// (identifiers stay verbatim).
	dir  string
	noop bool // a change that changes nothing (s/x/x/)
	// into is the directory a delete moved the file into (mv x dir/): it
	// is still present there. A rename (mv f.tmp f) deletes its source.
	into string
}

// call is one tool call, classified.
type call struct {
	tool   string
	kind   kind
	label  string // the command or arguments, one line, clipped
	short  string // an API call by its argument values, when label would be cut
	target string // what it acted on: a path, a URL, a record id, a script
	ops    []fileOp
	args   map[string]string // scalar arguments of an API tool
	// lastHead is the program and first operand of a shell line's last
	// command, whose exit the line's is ("sphinx-build html" of "sed -i
	// … && rm -rf _build && sphinx-build -b html src _build/html").
	lastHead string
	// grepped is the pattern of a line's only grep and the one file it
	// searched ("" for none, several, or a grep of a pipe's output).
	grepped, greppedIn string
	// oneFile reports a search of one file (grep without -r on a file):
	// its hits are lines of that file, not file names.
	oneFile bool
	// builds reports a shell line that runs a build or an interpreter
	// (buildProgs) among its commands: it checks what was changed.
	builds bool
	// searches counts the grep-like commands of a shell line, outputs the
	// commands whose output reaches the result (not piped into another):
	// with more than one, their outputs follow one another in one result.
	searches, outputs int
	// ranAfterChange reports a shell line that runs, tests or builds
	// after a command of it changed a file ("cat > x.py <<EOF … EOF;
	// python x.py", "sed -i … && pytest"): the line checked its change,
	// and its output is the run's.
	ranAfterChange bool
	// params are the short arguments of any tool but a shell, to tell what
	// a retry changed (view_range [100, -1], was [100, 150]).
	params  map[string]string
	url     string // an HTTP request's URL
	method  string
	thought string // a think tool's thought, a finish tool's message
	// editorOpen: a SWE-agent command that acts on the open file, whose
	// path the result's header names (edit, goto, scroll_down).
	editorOpen bool
}

var shellTools = map[string]bool{"bash": true, "execute_bash": true, "shell": true, "run": true, "run_command": true,
	"terminal": true, "cmd": true, "sh": true, "exec": true, "run_shell_command": true, "execute_command": true}

var editorTools = map[string]bool{"str_replace_editor": true, "file_editor": true, "edit_file": true, "view": true,
	"read_file": true, "write_file": true, "create_file": true, "str_replace_based_edit_tool": true, "editor": true}

// classifyCall reads one tool call.
func classifyCall(name, rawArgs string) call {
	args := parseArgs(rawArgs)
	c := classifyCallArgs(name, rawArgs, args)
	if name != "" && !shellTools[name] && c.kind != kindThink && c.kind != kindFinish {
		c.params = shortParams(args)
	}
	for i := range c.ops {
		op := &c.ops[i]
		if op.op != kindWrite {
			continue
		}
		if strings.Count(op.body, "\n") > smallFileLines {
			lines := strings.Split(op.body, "\n")
			op.outline = outline(lines)
			if !strings.Contains(op.outline, "defines ") && slices.ContainsFunc(scriptExts, func(x string) bool { return strings.HasSuffix(op.path, x) }) {
				// A script of statements (a reproduction): what it runs.
				if g := scriptGist(lines); g != "" {
					op.outline = strings.TrimPrefix(op.outline+"; "+g, "; ")
				}
			}
		}
		if strings.HasSuffix(op.path, ".py") {
			// A script that rewrites other files changes them when it runs;
			// one it also removes (a fixture cleaned up) is left as it was.
			removed := pythonRemoves(op.body)
			op.writes = slices.DeleteFunc(pythonWrites(op.body), func(p string) bool { return p == op.path || removed[p] })
			if len(op.writes) == 1 {
				// Told only for one file: a script's literals do not say
				// which of several files each goes to.
				op.effect = scriptEffect(op.body)
			}
		}
	}
	return c
}

// shortParams are a call's short arguments, each value on one line as
// JSON writes it; long ones (file text, code) are left out.
func shortParams(args map[string]any) map[string]string {
	var out map[string]string
	for k, v := range args {
		js, err := json.Marshal(v)
		if err != nil || len(js) > 80 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = strings.ReplaceAll(string(js), ",", ", ")
	}
	return out
}

func classifyCallArgs(name, rawArgs string, args map[string]any) call {
	switch {
	case shellTools[name]:
		cmd := argString(args, "command", "cmd", "script", "input")
		if cmd == "" && args == nil {
			cmd = rawArgs
		}
		c := classifyShell(cmd)
		c.tool = name
		return c
	case editorTools[name]:
		return classifyEditor(name, args)
	case name == "execute_ipython_cell" || name == "ipython" || name == "python" || name == "run_python":
		c := classifyPython(argString(args, "code", "source", "cell"))
		c.tool = name
		return c
	case name == "think":
		t := argString(args, "thought", "content", "text")
		return call{tool: name, kind: kindThink, label: clip(t, 160), thought: t}
	case name == "finish" || name == "submit" || name == "done" || name == "task_complete" || name == "attempt_completion":
		t := argString(args, "message", "summary", "answer", "result", "final_answer")
		return call{tool: name, kind: kindFinish, label: name, thought: t}
	}
	return classifyAPI(name, args, rawArgs)
}

func parseArgs(raw string) map[string]any {
	var v map[string]any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
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

var readPrefixes = []string{"get_", "search_", "list_", "find_", "lookup_", "check_", "fetch_", "read_", "query_", "calculate", "retrieve_", "show_", "view_", "describe_"}

// classifyAPI reads a call to an API tool: read-only by its name's verb,
// else a change.
func classifyAPI(name string, args map[string]any, raw string) call {
	c := call{tool: name, kind: kindMutate, args: scalarArgs(args)}
	for _, p := range readPrefixes {
		if strings.HasPrefix(name, p) {
			c.kind = kindLookup
			break
		}
	}
	if strings.HasPrefix(name, "transfer_to") {
		c.kind = kindFinish
	}
	c.label = name + "(" + argLabel(args, raw) + ")"
	c.short = name + "(" + argValues(args, raw) + ")"
	c.target = primaryArg(args)
	return c
}

// scalarArgs keeps an API call's string and number arguments.
func scalarArgs(a map[string]any) map[string]string {
	if len(a) == 0 {
		return nil
	}
	out := make(map[string]string, len(a))
	for k, v := range a {
		if s := scalarString(v); s != "" {
			out[k] = s
		}
	}
	return out
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	}
	return ""
}

// argLabel renders API arguments as k=v pairs in the order the call wrote
// them (origin before destination), nested values condensed.
func argLabel(a map[string]any, raw string) string {
	if a == nil {
		return clip(raw, 160)
	}
	var b strings.Builder
	for _, k := range argKeys(a, raw) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(condenseValue(a[k], 1))
	}
	return clip(b.String(), 240)
}

// argValues renders API arguments by their values alone, in the call's
// order ("JFK, SFO, 2024-05-24"): the short form of a call when its k=v
// label would be cut.
func argValues(a map[string]any, raw string) string {
	vals := make([]string, 0, len(a))
	for _, k := range argKeys(a, raw) {
		vals = append(vals, condenseValue(a[k], 1))
	}
	return clip(strings.Join(vals, ", "), 160)
}

// argKeys are the keys of a call's arguments in the order its JSON wrote
// them, or sorted when that cannot be read.
func argKeys(a map[string]any, raw string) []string {
	keys := make([]string, 0, len(a))
	dec := json.NewDecoder(strings.NewReader(raw))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			t, err := dec.Token()
			k, ok := t.(string)
			if err != nil || !ok {
				break
			}
			if _, in := a[k]; in && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
		}
	}
	if len(keys) == len(a) {
		return keys
	}
	keys = keys[:0]
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// primaryArg is the argument that names the object a call acts on: an
// "*_id" or "id" argument, else the first string argument by key order.
func primaryArg(a map[string]any) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "id" || strings.HasSuffix(k, "_id") {
			if s, ok := a[k].(string); ok {
				return s
			}
		}
	}
	for _, k := range keys {
		if s, ok := a[k].(string); ok && len(s) <= 64 {
			return s
		}
	}
	return ""
}

// classifyEditor reads a call to a file editor tool (OpenHands and
// Anthropic's str_replace_editor, and the plain read/write tools).
func classifyEditor(name string, a map[string]any) call {
	path := argString(a, "path", "file", "file_path", "filename", "target_file")
	cmd := argString(a, "command")
	c := call{tool: name, target: path}
	switch {
	case cmd == "create" || name == "write_file" || name == "create_file":
		body := argString(a, "file_text", "content", "contents", "text")
		c.kind = kindWrite
		c.ops = []fileOp{{path: path, op: kindWrite, what: "written (" + lineCount(body) + ")", body: body}}
		c.label = "create " + path
	case cmd == "str_replace" || name == "edit_file" && argString(a, "old_str", "old_string") != "":
		old, nw := argString(a, "old_str", "old_string"), argString(a, "new_str", "new_string")
		c.kind = kindEdit
		c.ops = []fileOp{{path: path, op: kindEdit, what: replaceNote(old, nw), noop: old == nw}}
		c.label = "str_replace " + path
	case cmd == "insert":
		nw := argString(a, "new_str", "text")
		line := scalarString(a["insert_line"])
		c.kind = kindEdit
		c.ops = []fileOp{{path: path, op: kindEdit, what: "inserted after line " + line + ": " + quoteCode(firstCodeLine(nw), 90)}}
		c.label = "insert " + path + ":" + line
	case cmd == "undo_edit":
		c.kind = kindRevert
		c.ops = []fileOp{{path: path, op: kindRevert, what: "last edit undone"}}
		c.label = "undo_edit " + path
	default:
		c.kind = kindView
		what := ""
		if r, ok := a["view_range"].([]any); ok && len(r) == 2 {
			end := scalarString(r[1])
			if end == "-1" {
				end = "end"
			}
			what = "lines " + scalarString(r[0]) + "-" + end
		}
		c.ops = []fileOp{{path: path, op: kindView, what: what}}
		c.label = "view " + path
		if what != "" {
			c.label += " " + what
		}
	}
	return c
}

var (
	pyAssignString = regexp.MustCompile(`(?m)^\s*([A-Za-z_]\w*)\s*=\s*['"]([^'"\n]+)['"]\s*$`)
	pyOpenWriteVar = regexp.MustCompile(`open\(\s*([A-Za-z_]\w*)\s*,\s*['"][wa]`)
	pyOpenWrite    = regexp.MustCompile(`open\(\s*(?:r|f)?['"]([^'"\n]+)['"]\s*,\s*['"][wa]`)
	pyWriteText    = regexp.MustCompile(`(?:Path\(\s*['"]([^'"\n]+)['"]\s*\)|['"]([^'"\n]+)['"])\.write_text\(`)
	pyOpenRead     = regexp.MustCompile(`open(?:_file)?\(\s*(?:r|f)?['"]([^'"\n]+)['"]`)
	pyEditCall     = regexp.MustCompile(`(?:edit_file_by_replace|insert_content_at_line|append_file|edit_file)\(\s*(?:file_name=)?['"]([^'"]+)['"]`)
	pyCreate       = regexp.MustCompile(`create_file\(\s*['"]([^'"]+)['"]`)
)

// skillView and skillSearch are OpenHands' agent skills that only read:
// a cell made of them looks at files, it runs nothing (so it is not a
// check after a change).
var (
	skillView   = map[string]bool{"open_file": true, "goto_line": true, "scroll_down": true, "scroll_up": true}
	skillSearch = map[string]bool{"search_dir": true, "search_file": true, "find_file": true}
	pyStatement = regexp.MustCompile(`^(\w+)\(`)
)

// classifyPython reads Python code run by a tool: the files it writes
// (open(..., "w"), write_text, the OpenHands editing helpers) make it an
// edit; a cell of reading skills is a view or a search; otherwise it is a
// run.
func classifyPython(code string) call {
	c := call{kind: kindRun, label: "python: " + clip(firstCodeLine(code), 120)}
	for _, m := range pyEditCall.FindAllStringSubmatch(code, -1) {
		c.ops = append(c.ops, fileOp{path: m[1], op: kindEdit, what: skillEdit(code[strings.Index(code, m[0]):])})
	}
	for _, m := range pyCreate.FindAllStringSubmatch(code, -1) {
		c.ops = append(c.ops, fileOp{path: m[1], op: kindWrite, what: "created by a Python cell"})
	}
	for _, p := range pythonWrites(code) {
		c.ops = append(c.ops, fileOp{path: p, op: kindEdit, what: "rewritten by a Python script"})
	}
	if len(c.ops) > 0 {
		c.kind = kindEdit
		c.target = c.ops[0].path
		return c
	}
	if m := pyOpenRead.FindStringSubmatch(code); m != nil {
		c.ops = append(c.ops, fileOp{path: m[1], op: kindView})
		c.target = m[1]
	}
	if k := skillsKind(code); k != kindOther {
		c.kind = k
	}
	return c
}

// skillsKind is kindView or kindSearch for a cell whose every statement
// calls a reading skill, else kindOther.
func skillsKind(code string) kind {
	k := kindOther
	for _, line := range strings.Split(code, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := pyStatement.FindStringSubmatch(t)
		switch {
		case m == nil || !strings.HasSuffix(t, ")"):
			return kindOther
		case skillView[m[1]]:
			if k == kindOther {
				k = kindView
			}
		case skillSearch[m[1]]:
			k = kindSearch
		default:
			return kindOther
		}
	}
	return k
}

// skillEdit describes an editing skill's call from its arguments, as an
// editor tool's edit is described: edit_file_by_replace's to_replace and
// new_content, the content inserted or appended.
func skillEdit(call string) string {
	switch {
	case strings.HasPrefix(call, "edit_file_by_replace"):
		old, okOld := pyStringArg(call, "to_replace")
		nw, okNew := pyStringArg(call, "new_content")
		if okOld && okNew {
			return replaceNote(old, nw)
		}
	case strings.HasPrefix(call, "insert_content_at_line"), strings.HasPrefix(call, "append_file"):
		if body, ok := pyStringArg(call, "content"); ok {
			verb := "appended "
			if strings.HasPrefix(call, "insert") {
				verb = "inserted "
			}
			return verb + quoteCode(firstCodeLine(body), 90) + moreLines(body)
		}
	}
	return "edited by a Python cell"
}

// pyStringArg returns the value of a keyword argument given as a Python
// string literal (quoted or triple-quoted, with the common escapes).
func pyStringArg(call, name string) (string, bool) {
	i := strings.Index(call, name+"=")
	if i < 0 {
		return "", false
	}
	s := strings.TrimLeft(call[i+len(name)+1:], " ")
	raw := false
	if s != "" && (s[0] == 'r' || s[0] == 'R') {
		raw, s = true, s[1:]
	}
	if s == "" || s[0] != '"' && s[0] != '\'' {
		return "", false
	}
	quote := s[:1]
	if len(s) >= 3 && s[:3] == strings.Repeat(quote, 3) {
		quote = s[:3]
	}
	s = s[len(quote):]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], quote):
			return b.String(), true
		case s[i] == '\\' && !raw && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\n': // a line continuation
			default:
				b.WriteByte(s[i])
			}
		case s[i] == '\n' && len(quote) == 1:
			return "", false
		default:
			b.WriteByte(s[i])
		}
	}
	return "", false
}

var pyRemove = regexp.MustCompile(`(?:os\.remove|os\.unlink|shutil\.rmtree|\.unlink)\(\s*(?:Path\()?\s*['"]([^'"]+)['"]`)

// pythonRemoves are the paths a script deletes.
func pythonRemoves(code string) map[string]bool {
	out := map[string]bool{}
	for _, m := range pyRemove.FindAllStringSubmatch(code, -1) {
		out[m[1]] = true
	}
	return out
}

func pythonWrites(code string) []string {
	var out []string
	for _, m := range pyOpenWrite.FindAllStringSubmatch(code, -1) {
		out = appendNew(out, m[1])
	}
	// open(file_path, 'w') after file_path = 'requests/models.py'.
	if vars := pyOpenWriteVar.FindAllStringSubmatch(code, -1); len(vars) > 0 {
		assigned := map[string]string{}
		for _, a := range pyAssignString.FindAllStringSubmatch(code, -1) {
			if _, ok := assigned[a[1]]; !ok {
				assigned[a[1]] = a[2]
			}
		}
		for _, v := range vars {
			if p, ok := assigned[v[1]]; ok {
				out = appendNew(out, p)
			}
		}
	}
	for _, m := range pyWriteText.FindAllStringSubmatch(code, -1) {
		out = appendNew(out, m[1]+m[2])
	}
	return out
}

// ---- shell ----

var searchProgs = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "rg": true, "ag": true, "ack": true,
	"find": true, "fd": true, "locate": true, "search_dir": true, "search_file": true, "find_file": true}
var listProgs = map[string]bool{"ls": true, "tree": true, "pwd": true, "du": true, "stat": true, "file": true,
	"which": true, "type": true, "whoami": true, "id": true, "uname": true, "env": true, "printenv": true, "df": true}
var viewProgs = map[string]bool{"cat": true, "head": true, "tail": true, "nl": true, "less": true, "more": true,
	"bat": true, "wc": true, "od": true, "xxd": true, "hexdump": true, "strings": true, "readelf": true, "objdump": true}
var testProgs = map[string]bool{"pytest": true, "py.test": true, "tox": true, "nox": true, "runtests.py": true,
	"jest": true, "mocha": true, "vitest": true, "ctest": true, "phpunit": true, "rspec": true}
var runProgs = map[string]bool{"node": true, "ruby": true, "perl": true, "bash": true, "sh": true, "go": true,
	"cargo": true, "java": true, "make": true, "npm": true, "yarn": true, "npx": true, "ponyc": true, "gcc": true,
	"cc": true, "clang": true, "rustc": true, "javac": true, "cmake": true, "php": true, "Rscript": true, "deno": true,
	"gdb": true, "nc": true, "ncat": true, "ssh": true, "openssl": true, "sqlite3": true, "psql": true, "mysql": true,
	"docker": true, "checksec": true, "r2": true, "radare2": true, "decompile": true, "disassemble": true, "debug_start": true,
	"connect_start": true, "connect_sendline": true, "binwalk": true, "exiftool": true, "unzip": true, "tar": true, "tshark": true}

// classifyShell reads a shell line: the most telling command decides the
// kind, and every command contributes its file operations.
func classifyShell(line string) call {
	c := call{kind: kindOther, label: clip(shellLabel(line), 160)}
	cmds := parseShell(line)
	editorFile := ""
	// dir is where a relative "cd" of this line went ("mkdir r; cd r; cat
	// > conf.py" writes r/conf.py); an absolute cd goes back to the paths
	// as written.
	dir := ""
	deletes := map[int]int{} // op index -> command index of a deletion
	var patterns, searched []string
	for i := range cmds {
		c.builds = c.builds || buildProgs[cmds[i].prog()]
		if cmds[i].prog() == "cd" {
			dir = cdTarget(dir, cmds[i].operands())
			continue
		}
		k, ops := classifyCommand(&cmds[i], i > 0 && cmds[i-1].piped)
		if !cmds[i].piped && (k == kindSearch || k == kindList || k == kindView) {
			c.outputs++
		}
		if p := cmds[i].prog(); k == kindSearch && (p == "grep" || p == "egrep" || p == "fgrep" || p == "rg") && (i == 0 || !cmds[i-1].piped) {
			// A grep fed by a pipe filters the one before: not a search
			// of its own.
			pat, files := grepOperands(&cmds[i])
			patterns = append(patterns, "\""+pat+"\"")
			for _, f := range files {
				searched = appendNew(searched, f)
			}
		}
		if p := cmds[i].prog(); k == kindSearch && (p == "grep" || p == "egrep" || p == "fgrep") {
			// grep names the file of each hit only when it searches more
			// than one: with -r, a single operand that is a file (has an
			// extension) is still one file.
			_, files := grepOperands(&cmds[i])
			recursive := cmds[i].hasFlag('r', "") || cmds[i].hasFlag('R', "")
			c.oneFile = len(files) == 1 && !strings.HasSuffix(files[0], "/") && files[0] != "." && !strings.ContainsAny(files[0], "*?") &&
				(!recursive || strings.Contains(baseName(files[0]), ".")) && !cmds[i].hasFlag('H', "")
		}
		for j := range ops {
			if underDir(dir, ops[j].path) != ops[j].path {
				ops[j].dir = dir
			}
			if ops[j].op == kindDelete {
				deletes[len(c.ops)+j] = i
			}
		}
		if i > 0 && cmds[i-1].piped && len(c.ops) > 0 && c.ops[len(c.ops)-1].op == kindView && c.ops[len(c.ops)-1].what == "" {
			// "nl -ba f | sed -n '320,360p'" read lines 320-360 of f.
			c.ops[len(c.ops)-1].what = pipedRange(&cmds[i])
		}
		if k == kindEdit && len(ops) == 0 && cmds[i].prog() == "edit" {
			c.editorOpen = true
		}
		if (cmds[i].prog() == "goto" || strings.HasPrefix(cmds[i].prog(), "scroll_")) && len(ops) == 0 {
			c.editorOpen = true
		}
		if k < kindRun && buildProgs[cmds[i].prog()] {
			k = kindRun // sphinx-build, make: what the line is for
		}
		if p := cmds[i].prog(); i > 0 && cmds[i-1].piped && (p == "head" || p == "tail") && !slices.ContainsFunc(cmds[i].operands(), func(w string) bool { return !isNumber(w) }) {
			k = kindOther // "ls -R x | head -n 20" shows part of a listing: still a listing
		}
		if k > c.kind || c.kind == kindOther {
			c.kind = k
		}
		if slices.ContainsFunc(c.ops, func(op fileOp) bool { return op.op.changes() }) &&
			(k == kindRun || k == kindTest || k == kindHTTP || buildProgs[cmds[i].prog()]) {
			c.ranAfterChange = true
		}
		c.ops = append(c.ops, ops...)
		if cmds[i].prog() == "curl" || cmds[i].prog() == "wget" {
			c.url, c.method = httpRequest(&cmds[i])
			if c.target == "" {
				c.target = c.url
			}
		}
		if cmds[i].prog() == "open" && len(cmds[i].operands()) > 0 {
			editorFile = cmds[i].operands()[0]
		}
	}
	_ = editorFile
	if len(patterns) == 1 && len(searched) == 1 && c.kind == kindSearch {
		c.grepped, c.greppedIn = strings.Trim(patterns[0], `"`), searched[0]
	}
	if c.searches = len(patterns); c.searches > 1 && c.kind == kindSearch {
		// The label names every pattern: the line clipped would show only
		// the first, and its hits would read as that one's.
		c.label = "grep " + strings.Join(patterns, ", ")
		if len(searched) == 1 {
			c.label += " in " + searched[0]
		}
	}
	// "sed … f > f.tmp && mv f.tmp f" edits f through a copy: an edit of f,
	// not a rewrite that would replace what earlier edits did.
	for j := range c.ops {
		op := &c.ops[j]
		if op.op != kindWrite || !strings.HasPrefix(op.what, "moved from ") {
			continue
		}
		tmp := strings.TrimPrefix(op.what, "moved from ")
		for k := range cmds {
			if cmds[k].out == tmp && (slices.Contains(cmds[k].operands(), op.path) || cmds[k].in == op.path) {
				op.op, op.what = kindEdit, "edited through "+tmp+" ("+cmds[k].prog()+")"
				break
			}
		}
	}
	// A path removed and then used again by the same line ("rm -rf _build
	// && sphinx-build src _build/html") was rebuilt, not deleted.
	for at := len(c.ops) - 1; at >= 0; at-- {
		i, ok := deletes[at]
		if !ok {
			continue
		}
		p := underDir(c.ops[at].dir, c.ops[at].path)
		for _, later := range cmds[i+1:] {
			if slices.ContainsFunc(later.words, func(w string) bool {
				return underDir(dir, w) == p || strings.HasPrefix(w, p+"/") || strings.HasPrefix(underDir(dir, w), p+"/")
			}) {
				c.ops = slices.Delete(c.ops, at, at+1)
				break
			}
		}
	}
	if c.kind == kindWrite && strings.Contains(line, "<<") {
		// A here-document: name the file, not the first line of the text.
		for _, op := range c.ops {
			if op.op == kindWrite && op.body != "" {
				c.label = "write " + op.path + " (" + lineCount(op.body) + ", here-document)"
				break
			}
		}
	} else if strings.Contains(line, "<<") {
		// A here-document written, then a command run: the label names the
		// file and shows the command ("cat <<'EOF' > index.rst …(7 more
		// lines)" hid what ran).
		if l, short := heredocLineLabel(cmds); l != "" {
			c.label, c.short = clip(l, 160), clip(short, 90)
		}
	}
	if c.target == "" {
		for _, op := range c.ops {
			if op.op == c.kind || c.target == "" {
				c.target = op.path
			}
		}
	}
	if c.target == "" {
		c.target = commandHead(line)
	}
	for i := len(cmds) - 1; i >= 0; i-- {
		if p := cmds[i].prog(); p != "" && p != "cd" {
			c.lastHead = p
			if ops := cmds[i].operands(); len(ops) > 0 {
				c.lastHead += " " + ops[0]
			}
			break
		}
	}
	return c
}

// buildProgs run what the agent changed though a line running them is not
// classed as a run (a build, a task runner, an interpreter on a script).
var buildProgs = map[string]bool{"sphinx-build": true, "make": true, "cmake": true, "ninja": true, "npm": true, "yarn": true,
	"cargo": true, "go": true, "mvn": true, "gradle": true, "tox": true, "nox": true, "node": true, "bash": true, "sh": true,
	"ruby": true, "perl": true, "java": true, "dotnet": true, "php": true}

// cdTarget is the directory a cd leaves a line in, relative to where the
// line started; "" for the start or anywhere absolute.
func cdTarget(dir string, operands []string) string {
	if len(operands) == 0 {
		return ""
	}
	t := strings.TrimSuffix(operands[0], "/")
	switch {
	case t == "" || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") || strings.HasPrefix(t, "$") || t == "-":
		return ""
	case t == ".":
		return dir
	case t == "..":
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			return dir[:i]
		}
		return ""
	case strings.Contains(t, ".."):
		return "" // not worth resolving: paths stay as written
	}
	if dir == "" {
		return t
	}
	return dir + "/" + t
}

// underDir is a path as seen from where the line started (to compare
// paths; the briefing writes them as the line did).
func underDir(dir, p string) string {
	if dir == "" || p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") || strings.HasPrefix(p, "-") {
		return p
	}
	return dir + "/" + strings.TrimPrefix(p, "./")
}

var sedRangeRe = regexp.MustCompile(`^(\d+)(?:,(\d+))?p$`)

// pipedRange is the part of its input a command in a pipe prints:
// "lines 320-360" for sed -n '320,360p', "lines 1-40" for head -n 40.
func pipedRange(c *shellCmd) string {
	ops := c.operands()
	switch c.prog() {
	case "sed":
		if c.hasFlag('n', "") && len(ops) > 0 {
			if m := sedRangeRe.FindStringSubmatch(ops[0]); m != nil {
				if m[2] == "" {
					return "line " + m[1]
				}
				return "lines " + m[1] + "-" + m[2]
			}
			return "part (through sed -n)"
		}
	case "head", "tail":
		return headTailPart(c)
	case "grep", "egrep", "fgrep", "rg":
		// "cat utils.py | grep -A 10 'def is_duck_array'" read what
		// matched, not the file.
		if pat, _ := grepOperands(c); pat != "" {
			return "lines matching " + quoteCode(pat, 60)
		}
		return "lines matching a pattern"
	case "awk", "cut", "sort", "uniq", "wc", "jq":
		return "part (through " + c.prog() + ")"
	}
	return ""
}

// headTailPart is the part of a file head or tail prints: "lines 1-50",
// "the last 20 lines" (-n N, -N, or the default ten).
func headTailPart(c *shellCmd) string {
	n := "10"
	args := c.args()
	for k, a := range args {
		switch {
		case a == "-n" && k+1 < len(args):
			n = strings.TrimPrefix(args[k+1], "+")
		case strings.HasPrefix(a, "-n") && len(a) > 2:
			n = a[2:]
		case strings.HasPrefix(a, "--lines="):
			n = a[len("--lines="):]
		case len(a) > 1 && a[0] == '-' && isNumber(a[1:]):
			n = a[1:]
		}
	}
	if !isNumber(n) {
		return ""
	}
	if c.prog() == "tail" {
		return "the last " + n + " lines"
	}
	return "lines 1-" + n
}

// heredocLineLabel labels a line that writes here-documents into files
// and runs other commands: "write index.rst (2 lines); sphinx-build -b
// text . _build/text" (setup commands such as cd and rm left out), and a
// shorter form naming the writes and the last command; "" when the line
// does not.
func heredocLineLabel(cmds []shellCmd) (label, short string) {
	var writes, runs, progs []string
	for i := range cmds {
		c := &cmds[i]
		switch {
		case c.heredoc != "" && c.out != "":
			verb := "write "
			if c.appends {
				verb = "append to "
			}
			writes = append(writes, verb+c.out+" ("+lineCount(c.heredoc)+")")
		case c.heredoc == "" && len(c.words) > 0 && !setupProgs[c.prog()]:
			t := cmdText(c)
			if c.piped {
				t += " |"
			}
			runs = append(runs, t)
			progs = appendNew(progs, c.prog())
		}
	}
	if len(writes) == 0 || len(runs) == 0 {
		return "", ""
	}
	label = strings.ReplaceAll(strings.Join(append(writes, runs...), "; "), "|; ", "| ")
	// The short form names the programs run ("write index.rst (2 lines),
	// then sphinx-build, cat"): a cut command line says less.
	return label, strings.Join(writes, "; ") + ", then " + strings.Join(progs, ", ")
}

// setupProgs prepare a run without being what it is for.
var setupProgs = map[string]bool{"cd": true, "rm": true, "mkdir": true, "touch": true, "export": true, "set": true,
	"source": true, "true": true, "sleep": true}

// cmdText writes a parsed command back as a line: its words, quoted where
// they need it, and its redirection.
func cmdText(c *shellCmd) string {
	words := make([]string, len(c.words))
	for i, w := range c.words {
		if w == "" || strings.ContainsAny(w, " \t'\"$*?;&|<>()") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		words[i] = w
	}
	t := strings.Join(words, " ")
	switch {
	case c.out != "" && c.appends:
		t += " >> " + c.out
	case c.out != "":
		t += " > " + c.out
	}
	return t
}

// shellLabel is a command line for display: a leading "cd DIR &&" (or a
// first line "cd DIR") dropped; a script of a few short lines joined by
// "; "; a longer one, or a here-document, shown by its first line.
func shellLabel(line string) string {
	s := strings.TrimSpace(line)
	for strings.HasPrefix(s, "cd ") {
		i := strings.Index(s, "&&")
		if nl := strings.IndexByte(s, '\n'); nl >= 0 && (i < 0 || nl < i) && !strings.ContainsAny(s[:nl], ";|") {
			s = strings.TrimSpace(s[nl+1:])
			continue
		}
		if i < 0 {
			break
		}
		s = strings.TrimSpace(s[i+2:])
	}
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s
	}
	if !strings.Contains(s, "<<") {
		var b strings.Builder
		for l := range strings.SplitSeq(s, "\n") {
			if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			switch prev := b.String(); {
			case prev == "":
			case strings.HasSuffix(prev, "\\"):
				b.Reset()
				b.WriteString(strings.TrimRight(strings.TrimSuffix(prev, "\\"), " "))
				b.WriteByte(' ')
			case strings.HasSuffix(prev, "&&") || strings.HasSuffix(prev, "||") || strings.HasSuffix(prev, "|"):
				b.WriteByte(' ')
			default:
				b.WriteString("; ")
			}
			b.WriteString(l)
		}
		if b.Len() <= 160 {
			return b.String()
		}
	}
	rest := strings.Count(s[i:], "\n")
	return strings.TrimSpace(s[:i]) + " …(" + plural(rest, "more line") + ")"
}

// commandHead is the program and first operand of a line, to tell retries
// of the same command apart from other commands.
func commandHead(line string) string {
	cmds := parseShell(line)
	for i := range cmds {
		p := cmds[i].prog()
		if p == "cd" || p == "" {
			continue
		}
		ops := cmds[i].operands()
		if len(ops) > 0 {
			return p + " " + ops[0]
		}
		return p
	}
	return clip(line, 60)
}

// classifyCommand reads one simple command.
func classifyCommand(c *shellCmd, fromPipe bool) (kind, []fileOp) {
	prog := c.prog()
	ops := c.operands()
	var out []fileOp
	if c.out != "" && c.out != "/dev/null" && !strings.HasPrefix(c.out, "&") {
		op := kindWrite
		what := "written"
		if c.appends {
			op, what = kindEdit, "appended"
		}
		body := c.heredoc
		if body == "" && (prog == "echo" || prog == "printf") {
			body = strings.Join(ops, " ") + "\n"
		}
		if body != "" {
			what += " (" + lineCount(body) + ")"
		}
		out = append(out, fileOp{path: c.out, op: op, what: what, body: body})
		if prog == "cat" || prog == "echo" || prog == "printf" || prog == "tee" || prog == "" {
			return op, out
		}
	}
	switch {
	case prog == "":
		return kindOther, out
	case prog == "cd" || prog == "export" || prog == "source" || prog == "set" || prog == "true" || prog == "sleep":
		return kindOther, out
	case prog == "echo" && len(ops) > 0 && strings.Contains(ops[0], "COMPLETE_TASK"):
		return kindFinish, out
	case prog == "submit":
		return kindFinish, out
	case prog == "sed":
		return classifySed(c, out)
	case prog == "tee":
		for _, p := range ops {
			out = append(out, fileOp{path: p, op: kindWrite, what: "written", body: c.heredoc})
		}
		return kindWrite, out
	case prog == "rm":
		for _, p := range ops {
			out = append(out, fileOp{path: p, op: kindDelete, what: "deleted"})
		}
		return kindDelete, out
	case prog == "mv" && len(ops) >= 2:
		dst := ops[len(ops)-1]
		for _, src := range ops[:len(ops)-1] {
			if intoDir(ops) {
				out = append(out, fileOp{path: src, op: kindDelete, what: "moved to " + dst, into: dst})
			} else {
				out = append(out, fileOp{path: src, op: kindDelete, what: "moved to " + dst},
					fileOp{path: dst, op: kindWrite, what: "moved from " + src})
			}
		}
		return kindWrite, out
	case prog == "cp" && len(ops) >= 2:
		if !intoDir(ops) {
			out = append(out, fileOp{path: ops[1], op: kindWrite, what: "copied from " + ops[0]})
		}
		return kindWrite, out
	case prog == "touch" || prog == "create":
		for _, p := range ops {
			out = append(out, fileOp{path: p, op: kindWrite, what: "created empty"})
		}
		return kindWrite, out
	case prog == "mkdir" || prog == "chmod":
		return kindOther, out
	case prog == "patch":
		// patch FILE [PATCHFILE] changes FILE; a patch file itself (patch
		// x.diff, git apply fix.patch) names no file it changes: the
		// step tells it, not a file's line.
		if p := firstPathLike(ops); p != "" && !patchFileRe.MatchString(p) {
			out = append(out, fileOp{path: p, op: kindEdit, what: "patched"})
		}
		return kindEdit, out
	case prog == "git" && len(ops) > 0 && (ops[0] == "apply" || ops[0] == "am"):
		return kindEdit, out
	case prog == "git":
		return classifyGit(c, out)
	case prog == "edit":
		// SWE-agent: edit A:B replaces lines of the open file; the file is
		// named by the result's header.
		return kindEdit, out
	case prog == "open" || prog == "goto" || strings.HasPrefix(prog, "scroll_"):
		if prog == "open" && len(ops) > 0 {
			what := ""
			if len(ops) > 1 {
				what = "around line " + ops[1]
			}
			out = append(out, fileOp{path: ops[0], op: kindView, what: what})
		}
		return kindView, out
	case (prog == "grep" || prog == "rg") && (c.hasFlag('A', "") || c.hasFlag('B', "") || c.hasFlag('C', "")) && !c.hasFlag('r', "") && !c.hasFlag('R', ""):
		// grep with context in one file shows parts of it: a view.
		if pattern, files := grepOperands(c); pattern != "" && len(files) > 0 {
			out = append(out, fileOp{path: files[len(files)-1], op: kindView, what: "around " + clip(pattern, 40)})
		}
		return kindView, out
	case prog == "find" && (slices.Contains(c.words, "-delete") || slices.Contains(c.words, "rm")):
		// find … -delete / -exec rm: a clean-up, not a search (no output is
		// not "no match").
		return kindOther, out
	case searchProgs[prog] || prog == "git" && len(ops) > 0 && ops[0] == "grep":
		return kindSearch, out
	case listProgs[prog]:
		return kindList, out
	case viewProgs[prog] || prog == "awk" && len(ops) > 1:
		if fromPipe {
			return kindView, out
		}
		part := ""
		if prog == "head" || prog == "tail" {
			part = headTailPart(c) // "head -n 50 f" did not read f whole
		}
		for _, p := range ops {
			if p != "" && !strings.HasPrefix(p, "+") && !isNumber(p) {
				out = append(out, fileOp{path: p, op: kindView, what: part})
			}
		}
		return kindView, out
	case prog == "python" || prog == "python3" || strings.HasPrefix(prog, "python3."):
		return classifyPythonCommand(c, out)
	case testProgs[prog] || prog == "go" && len(ops) > 0 && ops[0] == "test" ||
		prog == "test" && strings.Contains(c.words[0], "/") || // sympy's bin/test, not the shell's test
		(prog == "npm" || prog == "yarn" || prog == "cargo" || prog == "make") && len(ops) > 0 && ops[0] == "test":
		return kindTest, out
	case prog == "pip" || prog == "pip3" || prog == "apt-get" || prog == "apt" || prog == "conda" || prog == "poetry" ||
		prog == "npm" && len(ops) > 0 && (ops[0] == "install" || ops[0] == "i"):
		return kindInstall, out
	case prog == "curl" || prog == "wget" || prog == "http":
		return kindHTTP, out
	case runProgs[prog] || strings.HasPrefix(c.words[0], "./"):
		k := kindRun
		if len(ops) > 0 {
			out = append(out, fileOp{path: ops[0], op: kindRun})
		} else if strings.HasPrefix(c.words[0], "./") {
			out = append(out, fileOp{path: c.words[0], op: kindRun})
		}
		return k, out
	}
	return kindOther, out
}

// grepOperands returns grep's pattern and files: options that take a
// value (-A 5, -m 1) are skipped, -e names the pattern.
func grepOperands(c *shellCmd) (pattern string, files []string) {
	args := c.args()
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-e" || a == "--regexp":
			if i+1 < len(args) {
				pattern = args[i+1]
				i++
			}
		case a == "-A" || a == "-B" || a == "-C" || a == "-m" || a == "-f" || a == "--include" || a == "--exclude":
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		case pattern == "":
			pattern = a
		default:
			files = append(files, a)
		}
	}
	return pattern, files
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != ',' && s[i] != '-' {
			return false
		}
	}
	return true
}

// classifyPythonCommand reads python [-c CODE | - <<EOF | -m MOD | SCRIPT].
func classifyPythonCommand(c *shellCmd, out []fileOp) (kind, []fileOp) {
	args := c.args()
	code := ""
	for i := 0; i < len(args) && code == ""; i++ {
		switch {
		case args[i] == "-c" && i+1 < len(args):
			code = args[i+1] // the words after it are the script's arguments
		case args[i] == "-m" && i+1 < len(args):
			mod := args[i+1]
			if mod == "pytest" || mod == "unittest" || mod == "nose" || strings.HasSuffix(mod, "runtests") || strings.Contains(mod, "test") {
				return kindTest, out
			}
			return kindRun, out
		case args[i] == "-":
			code = c.heredoc
		case !strings.HasPrefix(args[i], "-"):
			script := args[i]
			if strings.Contains(script, "runtests") || strings.Contains(script, "manage.py") && slices.Contains(args, "test") ||
				strings.HasPrefix(baseName(script), "test_") || strings.HasSuffix(script, "_test.py") {
				return kindTest, append(out, fileOp{path: script, op: kindRun})
			}
			return kindRun, append(out, fileOp{path: script, op: kindRun})
		}
	}
	if code == "" {
		code = c.heredoc
	}
	if code == "" {
		return kindRun, out
	}
	py := classifyPython(code)
	return py.kind, append(out, py.ops...)
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// classifyGit reads git commands: checkout/restore/reset/stash of paths
// undo changes; diff/status/log/show read.
func classifyGit(c *shellCmd, out []fileOp) (kind, []fileOp) {
	ops := c.operands()
	if len(ops) == 0 {
		return kindOther, out
	}
	sub := ops[0]
	rest := ops[1:]
	switch sub {
	case "checkout", "restore":
		if c.hasFlag('b', "") || c.hasFlag(0, "--orphan") {
			return kindOther, out
		}
		paths := rest
		for _, p := range paths {
			if p == "HEAD" || p == "." && len(paths) == 1 {
				continue
			}
			out = append(out, fileOp{path: p, op: kindRevert, what: "reverted with git " + sub})
		}
		if len(out) == 0 {
			out = append(out, fileOp{path: ".", op: kindRevert, what: "reverted with git " + sub})
		}
		return kindRevert, out
	case "stash", "reset":
		if sub == "reset" && !c.hasFlag(0, "--hard") {
			return kindOther, out
		}
		if sub == "stash" && len(rest) > 0 && (rest[0] == "pop" || rest[0] == "apply") {
			return kindWrite, append(out, fileOp{path: ".", op: kindWrite, what: stashPopped})
		}
		if sub == "stash" && len(rest) > 0 && rest[0] != "push" && rest[0] != "save" {
			return kindView, out // list, show
		}
		return kindRevert, append(out, fileOp{path: ".", op: kindRevert, what: "reverted with git " + sub})
	case "diff", "status", "log", "show", "blame":
		return kindView, out
	}
	return kindOther, out
}

var sedSubst = regexp.MustCompile(`^\s*(\d+(?:,\d+)?|/[^/]*/)?\s*s(.)`)

// classifySed reads sed: -i edits files (a substitution whose pattern and
// replacement are equal is a no-op), -n 'A,Bp' reads lines.
func classifySed(c *shellCmd, out []fileOp) (kind, []fileOp) {
	args := c.args()
	inPlace := false
	var scripts, files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-i" || strings.HasPrefix(a, "-i") && !strings.HasPrefix(a, "-in") || a == "--in-place" || strings.HasPrefix(a, "--in-place="):
			inPlace = true
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case a == "-n" || a == "-E" || a == "-r" || a == "-z" || a == "-s" || a == "-u":
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.Contains(a, "i") {
				inPlace = true
			}
		case len(scripts) == 0:
			scripts = append(scripts, a)
		default:
			files = append(files, a)
		}
	}
	if !inPlace {
		what := ""
		if len(scripts) > 0 {
			what = sedRange(scripts[0])
		}
		for _, f := range files {
			out = append(out, fileOp{path: f, op: kindView, what: what})
		}
		return kindView, out
	}
	what, noop := sedChange(scripts)
	for _, f := range files {
		out = append(out, fileOp{path: f, op: kindEdit, what: what, noop: noop})
	}
	return kindEdit, out
}

// sedRange turns "10,20p" into "lines 10-20".
func sedRange(script string) string {
	s := strings.TrimSpace(script)
	s = strings.TrimSuffix(s, "p")
	if a, b, ok := strings.Cut(s, ","); ok && isNumber(a) && isNumber(b) {
		return "lines " + a + "-" + b
	}
	if isNumber(s) {
		return "line " + s
	}
	if strings.HasPrefix(s, "/") || strings.Contains(s, ",") {
		// An address by pattern ("/def run/,/^    def /p"): a part of the
		// file, not all of it.
		return "the part " + clip(s, 50)
	}
	return ""
}

// sedChange describes sed scripts' substitutions, and reports whether they
// all change nothing.
func sedChange(scripts []string) (string, bool) {
	var parts []string
	noop := len(scripts) > 0
	for _, sc := range scripts {
		if t, ok := sedLines(sc); ok {
			// Text to insert may hold ";": the whole script is one command.
			noop = false
			parts = append(parts, t)
			continue
		}
		for _, one := range strings.Split(sc, ";") {
			m := sedSubst.FindStringSubmatchIndex(one)
			if m == nil {
				noop = false
				if t := strings.TrimSpace(one); t != "" {
					parts = append(parts, "`"+clip(t, 80)+"`")
				}
				continue
			}
			addr := ""
			if m[2] >= 0 {
				addr = one[m[2]:m[3]]
			}
			delim := one[m[4]:m[5]]
			fields := splitUnescaped(one[m[5]:], delim)
			if len(fields) < 2 {
				noop = false
				parts = append(parts, "`"+clip(strings.TrimSpace(one), 80)+"`")
				continue
			}
			from, to := fields[0], fields[1]
			if from != to {
				noop = false
			}
			from, to = sedPattern.Replace(sedAnchors(from)), sedReplacement.Replace(to)
			// Kept long: the line tells it cut for room (clipChange), and a
			// later deletion of the lines it added is matched on it.
			p := "`" + clip(from, 200) + "` → `" + clip(to, 200) + "`"
			if anchors := "^$"; from != to && strings.Join(strings.Fields(strings.Trim(from, anchors)), " ") == strings.Join(strings.Fields(strings.Trim(to, anchors)), " ") {
				// Shown on one line the two read alike: say what differs.
				p += " (whitespace: indentation)"
			}
			switch {
			case addr != "" && isNumber(strings.ReplaceAll(addr, ",", "")):
				p = "line " + strings.ReplaceAll(addr, ",", "-") + ": " + p
			case addr != "":
				p = "where " + addr + ": " + p
			case len(fields) > 2 && strings.Contains(fields[2], "g"):
				p = "every " + p
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; "), noop
}

var (
	sedAddr    = `(?:\d+|\$|/(?:[^/\\]|\\.)*/)`
	sedTextCmd = regexp.MustCompile(`(?s)^\s*(` + sedAddr + `(?:,` + sedAddr + `)?)\s*([iac])\s*\\?\s*(.*?)\s*$`)
	sedDelete  = regexp.MustCompile(`^\s*(` + sedAddr + `(?:,` + sedAddr + `)?)\s*d\s*$`)
	// sedRangeAddr splits a two-address range.
	sedRangeAddr = regexp.MustCompile(`^(` + sedAddr + `),(` + sedAddr + `)$`)
	sedEscapes   = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\x27`, "'", `\x22`, `"`, `\\`, `\`)
)

// sedLines describes a sed script that inserts, appends, replaces or
// deletes whole lines ("/if x:/i \    if not name:\n        raise …",
// "351a …", "10,12d"), as an editor's change is described.
func sedLines(script string) (string, bool) {
	if m := sedDelete.FindStringSubmatch(script); m != nil {
		if t := sedRangeDeleted(m[1]); t != "" {
			return "deleted " + t, true
		}
		return "deleted " + sedWhere(m[1]), true
	}
	m := sedTextCmd.FindStringSubmatch(script)
	if m == nil || m[3] == "" {
		return "", false
	}
	text := strings.TrimSpace(sedEscapes.Replace(m[3]))
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", false
	}
	// Two lines say what an inserted block does (a check and its raise).
	body := quoteCode(strings.Join(headLines(lines, 2), " ⏎ "), 140)
	if n := len(lines) - 2; n > 0 {
		body += " (+" + plural(n, "line") + ")"
	}
	verb := map[string]string{"i": "inserted before ", "a": "inserted after ", "c": "replaced "}[m[2]]
	return verb + sedWhere(m[1]) + ": " + body, true
}

// intoDir reports an mv or cp whose last operand is a directory the
// others go into, as a trailing slash, "." or several sources say ("mv .a
// bar.py reproduction/"). Their new paths are not written: the directory
// joined with a name is a path the conversation never wrote.
func intoDir(ops []string) bool {
	dst := ops[len(ops)-1]
	return len(ops) > 2 || strings.HasSuffix(dst, "/") || dst == "." || dst == ".."
}

// sedRangeDeleted says what a range with a pattern or the last line in it
// covers, as sed reads it: a pattern starts a range at each line it
// matches, and a range whose end pattern matches no later line runs to
// the end of the file ("from each line matching `A` through the next
// matching `B` (or the file's end)", "from the first line matching `A`
// to the file's end"); "" for two line numbers, which sedWhere says.
func sedRangeDeleted(addr string) string {
	m := sedRangeAddr.FindStringSubmatch(addr)
	if m == nil || isNumber(m[1]) && isNumber(m[2]) {
		return ""
	}
	pattern := func(a string) (string, bool) {
		if len(a) >= 2 && a[0] == '/' && a[len(a)-1] == '/' {
			return quoteCode(a[1:len(a)-1], 50), true
		}
		return "", false
	}
	from := "line " + m[1]
	switch m[1] {
	case "0": // GNU sed: the end pattern may match the first line
		from = "the first line"
	case "$":
		from = "the last line"
	}
	if p, ok := pattern(m[1]); ok {
		from = "each line matching " + p
		if m[2] == "$" {
			from = "the first line matching " + p
		}
	}
	switch p, ok := pattern(m[2]); {
	case ok:
		return "from " + from + " through the next matching " + p + " (or the file's end)"
	case m[2] == "$":
		return "from " + from + " to the file's end"
	}
	return "from " + from + " through line " + m[2]
}

// sedWhere names a sed address: "line 351", "lines 10-12", "each line
// matching `if x:`" (sed applies a pattern's command to every line it
// matches: "/DEBUG/a …" adds a line after each).
func sedWhere(addr string) string {
	switch a := strings.ReplaceAll(addr, ",", ""); {
	case isNumber(a) && strings.Contains(addr, ","):
		return "lines " + strings.ReplaceAll(addr, ",", "-")
	case isNumber(a):
		return "line " + addr
	case addr == "$":
		return "the last line"
	case strings.HasPrefix(addr, "/") && strings.Count(addr, "/") == 2:
		return "each line matching " + quoteCode(strings.Trim(addr, "/"), 60)
	}
	return quoteCode(addr, 60)
}

// sedPattern and sedReplacement write a substitution's escaped
// characters as the text they match or put ("mpl.rcParams\['x'\]" is
// "mpl.rcParams['x']"): the description quotes code, not a regexp. The
// no-op check above compares them as written.
var (
	sedPattern = strings.NewReplacer(`\[`, "[", `\]`, "]", `\.`, ".", `\*`, "*", `\$`, "$", `\^`, "^", `\/`, "/",
		`\(`, "(", `\)`, ")", `\{`, "{", `\}`, "}", `\+`, "+", `\?`, "?", `\|`, "|", `\"`, `"`)
	// In a replacement `\\n` is a backslash and an n, which code often
	// wants ("f.write(f'…\\n')"), not a line break.
	sedReplacement = strings.NewReplacer(`\\`, `\`, `\/`, "/", `\&`, "&", `\"`, `"`, `\n`, " ⏎ ", `\t`, " ", `\[`, "[", `\]`, "]", `\.`, ".",
		`\*`, "*", `\$`, "$", `\^`, "^", `\(`, "(", `\)`, ")")
)

// sedAnchors drops a pattern's anchors (^ at its start, an unescaped $
// at its end): the line it matches is the code quoted.
func sedAnchors(p string) string {
	p = strings.TrimPrefix(p, "^")
	if strings.HasSuffix(p, "$") && !strings.HasSuffix(p, `\$`) {
		p = p[:len(p)-1]
	}
	return p
}

// splitUnescaped splits s on delim, honouring backslash escapes.
func splitUnescaped(s, delim string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if string(s[i+1]) == delim {
				cur.WriteByte(s[i+1])
			} else {
				cur.WriteByte(s[i])
				cur.WriteByte(s[i+1])
			}
			i++
			continue
		}
		if strings.HasPrefix(s[i:], delim) {
			out = append(out, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(s[i])
	}
	return append(out, cur.String())
}

// httpRequest reads a curl or wget command: URL and method (with its
// payload).
func httpRequest(c *shellCmd) (url, method string) {
	args := c.args()
	method = "GET"
	var data []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-X" || a == "--request":
			if i+1 < len(args) {
				method = args[i+1]
				i++
			}
		case a == "-d" || a == "--data" || a == "--data-raw" || a == "--data-binary" || a == "--data-urlencode" || a == "-F" || a == "--form":
			if i+1 < len(args) {
				data = append(data, args[i+1])
				if method == "GET" {
					method = "POST"
				}
				i++
			}
		case a == "-H" || a == "-o" || a == "-u" || a == "-A" || a == "-b" || a == "-e" || a == "--header" || a == "--cookie" || a == "-w":
			i++
		case strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") || url == "" && !strings.HasPrefix(a, "-") && strings.Contains(a, "."):
			if url == "" {
				url = a
			}
		}
	}
	if len(data) > 0 {
		method += " " + strings.Join(data, " ")
	}
	return url, method
}

// replaceNote describes a str_replace by the part that changed: the common
// prefix and suffix of old and new are dropped.
func replaceNote(old, nw string) string {
	if old == nw {
		return "no change (old and new text are equal)"
	}
	a, b := trimCommon(old, nw)
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if strings.Contains(a, "\n") || strings.Contains(b, "\n") {
		// Several lines: the lines only one side has say what changed
		// (a shared closing brace at either end is not the change).
		removed, added := lineDiff(a, b)
		switch {
		case len(removed) == 0 && len(added) > 0:
			// The file grew by the lines added, blank ones included.
			t := quoteLines(added)
			if n := strings.Count(nw, "\n") - strings.Count(old, "\n"); n > 1 {
				t = strings.TrimSuffix(t, " ("+strconv.Itoa(len(added))+" lines)") + " (+" + strconv.Itoa(n) + " lines)"
			}
			return "added " + t
		case len(added) == 0 && len(removed) > 0:
			return "removed " + quoteLines(removed)
		case len(added) > 0:
			return quoteLines(removed) + " → " + quoteLines(added)
		}
	}
	switch {
	case a == "":
		return "added " + quoteCode(firstCodeLine(b), 100) + moreLines(b)
	case b == "":
		return "removed " + quoteCode(firstCodeLine(a), 100) + moreLines(a)
	}
	return quoteCode(firstCodeLine(a), 80) + moreLines(a) + " → " + quoteCode(firstCodeLine(b), 100) + moreLines(b)
}

// lineDiff returns the non-blank lines of a that b lacks, and those of b
// that a lacks, compared trimmed and counted (a second "}" is a line
// added).
func lineDiff(a, b string) (onlyA, onlyB []string) {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[strings.TrimSpace(l)]++
		}
		return m
	}
	only := func(s string, other map[string]int) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			t := strings.TrimSpace(l)
			if t == "" {
				continue
			}
			if other[t] > 0 {
				other[t]--
				continue
			}
			out = append(out, t)
		}
		return out
	}
	return only(a, count(b)), only(b, count(a))
}

// quoteLines quotes some lines by what they open (`body.dark {`, `def
// f():`) when several blocks do, else by the first, and counts the rest.
func quoteLines(ls []string) string {
	var heads []string
	for _, l := range ls {
		if strings.HasSuffix(l, "{") || strings.HasSuffix(l, ":") && blockOpenerRe.MatchString(l) {
			heads = append(heads, l)
		}
	}
	shown := ls[:1]
	if len(heads) >= 2 {
		shown = headLines(heads, 3)
	}
	parts := make([]string, len(shown))
	for i, l := range shown {
		parts[i] = quoteCode(l, 80)
	}
	t := strings.Join(parts, ", ")
	if n := len(ls) - len(shown); n > 0 {
		t += " (" + strconv.Itoa(len(ls)) + " lines)"
	}
	return t
}

var blockOpenerRe = regexp.MustCompile(`^(?:async\s+)?(?:def|class|if|elif|else|for|while|try|except|with|function)\b`)

// trimCommon drops the common prefix and suffix of two texts, on line
// boundaries where possible so the change reads as whole lines.
func trimCommon(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if k := strings.LastIndexByte(a[:i], '\n'); k >= 0 {
		i = k + 1
	} else {
		i = 0
	}
	j := 0
	for j < len(a)-i && j < len(b)-i && a[len(a)-1-j] == b[len(b)-1-j] {
		j++
	}
	if k := strings.IndexByte(a[len(a)-j:], '\n'); k >= 0 {
		j -= k
	} else {
		j = 0
	}
	return a[i : len(a)-j], b[i : len(b)-j]
}

func moreLines(s string) string {
	n := strings.Count(strings.TrimSpace(s), "\n")
	if n == 0 {
		return ""
	}
	return " (+" + strconv.Itoa(n) + " lines)"
}

// stashPopped is what git stash pop or apply does (both told alike): it
// gives the stashed changes back ("restored" read as the file put back as
// committed).
const stashPopped = "the stashed changes re-applied"

// firstCodeLine is the first non-blank line of code, trimmed.
func firstCodeLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

func quoteCode(s string, max int) string {
	return "`" + clip(strings.ReplaceAll(s, "`", "'"), max) + "`"
}

// quoteCommand quotes a command to be run as written: its spaces kept
// (a sed that inserts "        if …" needs its indentation), cut at max
// bytes.
func quoteCommand(s string, max int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "`", "'")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return "`" + s + "`"
}

func lineCount(s string) string {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	if n == 1 {
		return "1 line"
	}
	return strconv.Itoa(n) + " lines"
}

// patchFileRe matches a patch file's name.
var patchFileRe = regexp.MustCompile(`\.(?:patch|diff)$`)

func firstPathLike(ops []string) string {
	for _, o := range ops {
		if ident.IsPath(o) {
			return o
		}
	}
	return ""
}

func appendNew(s []string, v string) []string {
	if v == "" || slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// plural writes a count and its noun: "1 step", "3 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
