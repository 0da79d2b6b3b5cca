package brief

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Reading a tool's output: strip what the harness and the transport add
// (exit-code tags, prompt footers, progress meters, HTML boilerplate),
// then pull out what the output showed: the exit status, the error and
// where it was raised, a test run's counts and failures, a search's hits,
// a short output whole, and the lines a long one is made of (the model
// later picks those the agent's next message refers to).

// output is what one tool result showed.
type output struct {
	hasExit bool
	exit    int
	timeout bool
	empty   bool
	// errLine is the error: an exception or error message line, with the
	// line after a bare "ERROR:"; errAt is where it was raised (the
	// innermost frame outside libraries).
	errLine string
	errAt   string
	// listed counts a listing's entries over the whole output (lines
	// keeps only its head and tail), and listCut says the harness cut it.
	listed  int
	listCut bool
	// raisedBy is the test's own raise statement the error comes from
	// (raisedByTest): a reproduction raising on purpose.
	raisedBy string
	// tests is a test run's outcome: counts, failing tests, first
	// assertion. testsOK reports a run with no failure.
	tests   string
	testsOK bool
	failed  []string
	// hits are a search's result lines; hitCount counts them all.
	hits     []string
	hitCount int
	// short is an output of a few lines, whole (one line each).
	short []string
	// lines are the cleaned output's lines (head and tail of long ones),
	// for picking the lines the agent reacted to.
	lines      []string
	totalLines int
	// file is the path an editor header names ("[File: /x.py (18 lines
	// total)]", "Here's the result of running `cat -n` on /x.py").
	file      string
	fileLines int
	// title and fields are an HTML page's title and its form's inputs.
	title  string
	fields []string
	links  []string // the page's link targets
	form   string   // the form's method and encoding: "POST multipart/form-data"
	// body is the cleaned output, bounded, for records (JSON) and HTTP
	// diffs.
	body string
	// missing is a path the tool said does not exist.
	missing []string
	// outline is what a file view showed: the definitions in its lines, or
	// that they hold no code.
	outline string
}

const (
	maxBodyBytes  = 64 << 10
	maxKeptLines  = 240
	shortMaxLines = 5
	shortMaxBytes = 400
)

var (
	returnCodeRe = regexp.MustCompile(`<returncode>\s*(-?\d+)\s*</returncode>`)
	exitCodeRe   = regexp.MustCompile(`(?i)\b(?:exit code|exit status|exited with code|returncode)[:= ]+(-?\d+)`)
	fileHeaderRe = regexp.MustCompile(`^\[File: ([^\s\]]+) \((\d+) lines total\)\]`)
	catNHeaderRe = regexp.MustCompile("^Here's the result of running `cat -n` on ([^\\s:]+):")
	editedRe     = regexp.MustCompile(`^The file (\S+) has been edited\.`)
	createdRe    = regexp.MustCompile(`^File created successfully at: (\S+)`)
	frameRe      = regexp.MustCompile(`^\s*File "([^"]+)", line (\d+)(?:, in (\S+))?`)
	// traceEndRe is the line that ends a traceback whatever the exception's
	// name (Django's ImproperlyConfigured): unindented, after a frame.
	traceEndRe  = regexp.MustCompile(`^(?:[A-Za-z_]\w*\.)*[A-Z][a-z]\w*(?::\s.*)?$`)
	exceptionRe = regexp.MustCompile(`^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure|NotFound|Denied)\b(?::.*)?$`)
	errorLineRe = regexp.MustCompile(`(?i)^(?:error|fatal|panic)\b[:\s].*|.*\b(?:No such file or directory|command not found|Permission denied|Segmentation fault|cannot access|not recognized|Traceback)\b.*|^E\s{2,}\S.*|.*:\s*(?:error|Error):.*`)
	missingRe   = regexp.MustCompile(`(?:cannot access|can't open|cannot open|No such file or directory:?|does not exist)[:\s]*'?"?([^'"\s:]+)?`)
	titleRe     = regexp.MustCompile(`(?is)<title>\s*(.*?)\s*</title>`)
	hrefRe      = regexp.MustCompile(`(?i)<a\b[^>]*\bhref=["']([^"'#>]+)["']`)
	inputRe     = regexp.MustCompile(`(?i)<(?:input|textarea|select)\b[^>]*\bname=(?:"([^"]+)"|'([^']+)'|([^\s>]+))[^>]*>`)
	formRe      = regexp.MustCompile(`(?i)<form\b[^>]*>`)
	tagRe       = regexp.MustCompile(`<[^>]{0,300}>`)
	progressRe  = regexp.MustCompile(`^\s*(?:% Total|Dload|\d+\s+[\d.]+[kMG]?\s+\d+\s+[\d.]+[kMG]?\s+\d+).*`)
	// buildLogRe is what build tools print before their result: a banner
	// ("Running Sphinx v3.2.0") and progress ("reading sources... [100%]
	// index", "pickling environment... done").
	buildLogRe = regexp.MustCompile(`^(?:Running \S+ v?\d[\w.+/-]*$|\w+(?: \S+){0,4}\.\.\. ?(?:done|none found|\[ *\d+%\].*|\d+ added.*)?$|\w+ \[\w+\]: targets for .*)`)
	warningRe  = regexp.MustCompile(`^\S+:\d+: [A-Z]\w*Warning: `)
	// shellPromptRe matches a shell's prompt left in an output
	// ("root@b365937733b2:/workspace #").
	shellPromptRe = regexp.MustCompile(`^[\w.-]+@[\w.-]+:\S* ?[#$]$`)
	elidedRe      = regexp.MustCompile(`<elided_chars>\s*(\d+) characters elided\s*</elided_chars>`)
)

// shellPrompt reports a shell's prompt line; the regexp runs only on
// lines that end as one.
func shellPrompt(t string) bool {
	return (strings.HasSuffix(t, "#") || strings.HasSuffix(t, "$")) && strings.IndexByte(t, '@') > 0 && shellPromptRe.MatchString(t)
}

// readOutput reads a tool result's text. Warning lines are dropped unless
// keepWarnings (the task is about a warning): elsewhere a deprecation
// warning repeated by every run hides the output that matters. listing
// says the call lists files: its entries are counted before only the
// head and tail of a long output are kept.
func readOutput(text string, keepWarnings, listing bool) output {
	var o output
	if m := returnCodeRe.FindStringSubmatch(headOf(text, 200)); m != nil {
		o.hasExit = true
		o.exit, _ = strconv.Atoi(m[1])
	} else if m := exitCodeRe.FindStringSubmatch(tailOf(text, 300)); m != nil {
		o.hasExit = true
		o.exit, _ = strconv.Atoi(m[1])
	}
	head := headOf(text, 400)
	if strings.Contains(head, "timed out") || strings.Contains(head, "Timeout") && strings.Contains(head, "command") {
		o.timeout = true
	}
	if h := headOf(text, 3000); strings.Contains(h, "<title>") || strings.Contains(h, "<html") || strings.Contains(h, "<!DOCTYPE") {
		if m := titleRe.FindStringSubmatch(headOf(text, 4000)); m != nil {
			o.title = clip(m[1], 100)
		}
		for _, m := range hrefRe.FindAllStringSubmatch(headOf(text, 20000), 12) {
			o.links = appendNew(o.links, m[1])
		}
		if f := formRe.FindString(text); f != "" {
			o.form = formAttrs(f)
			for _, m := range inputRe.FindAllStringSubmatch(headOf(text, 20000), 20) {
				o.fields = appendNew(o.fields, m[1]+m[2]+m[3])
			}
		}
	}
	body := cleanOutput(text, keepWarnings)
	lines := splitLines(body)
	if len(lines) > 0 {
		first := lines[0]
		if m := fileHeaderRe.FindStringSubmatch(first); m != nil {
			o.file = m[1]
			o.fileLines, _ = strconv.Atoi(m[2])
			o.outline = outline(lines[1:])
		} else if m := catNHeaderRe.FindStringSubmatch(first); m != nil {
			o.file = m[1]
			o.outline = outline(lines[1:])
		} else if m := editedRe.FindStringSubmatch(first); m != nil {
			o.file = m[1]
		} else if m := createdRe.FindStringSubmatch(first); m != nil {
			o.file = m[1]
		}
	}
	o.totalLines = len(lines)
	o.empty = strings.TrimSpace(body) == ""
	o.body = headOf(body, maxBodyBytes)
	if o.title != "" || len(o.fields) > 0 {
		lines = htmlText(lines)
	}
	o.lines = keepLines(lines, maxKeptLines)
	if listing && len(lines) > maxKeptLines {
		_, o.listed, o.listCut = listEntries(lines) // counted before the cut
	}
	readErrors(&o, lines)
	readTests(&o, lines)
	if !o.empty && len(lines) <= shortMaxLines && len(body) <= shortMaxBytes {
		for _, l := range lines {
			if t := strings.TrimSpace(l); t != "" {
				o.short = append(o.short, clip(stripTags(t), 200))
			}
		}
	}
	return o
}

var formAttrRe = regexp.MustCompile(`(?i)\b(method|enctype)=["']?([^"'\s>]+)`)

// formAttrs names a form tag's method and encoding.
func formAttrs(tag string) string {
	var parts []string
	for _, m := range formAttrRe.FindAllStringSubmatch(tag, 2) {
		if strings.EqualFold(m[1], "method") {
			parts = append(parts, strings.ToUpper(m[2]))
		} else {
			parts = append(parts, m[2])
		}
	}
	return strings.Join(parts, " ")
}

// closeQuote completes a line whose `quote` goes on over the next lines
// (an editor's "old_str `case X:\n    y` did not appear verbatim"), so the
// message is not cut inside the text it quotes; newlines become "⏎".
func closeQuote(line string, next []string) string {
	if strings.Count(line, "`")%2 == 0 {
		return line
	}
	var b strings.Builder
	b.WriteString(line)
	for _, n := range next {
		if b.Len() > 400 {
			break
		}
		b.WriteString(" ⏎ ")
		if lead := n[:len(n)-len(strings.TrimLeft(n, " \t"))]; strings.Contains(lead, "\t") {
			// A tab in the quoted text is often why it "did not appear
			// verbatim": shown, not trimmed away.
			b.WriteString(strings.Repeat("⇥", strings.Count(lead, "\t")) + " ")
		}
		b.WriteString(strings.TrimSpace(n))
		if strings.Count(n, "`")%2 == 1 {
			// The quote closes on this line: the rest of the message too.
			break
		}
	}
	return b.String()
}

// stripTags reads a line of markup as its text ("<ul
// class="errorlist"><li>article instance … does not exist.</li>" becomes
// "article instance … does not exist."); a line with fewer than two tags
// is kept as it is (a "<b>" in a message, a comparison).
func stripTags(line string) string {
	if strings.Count(line, "<") < 2 {
		return line
	}
	tags := tagRe.FindAllStringIndex(line, -1)
	if len(tags) < 2 {
		return line
	}
	t := strings.Join(strings.Fields(tagRe.ReplaceAllString(line, " ")), " ")
	if t == "" {
		return line
	}
	return t
}

var (
	definitionRe = regexp.MustCompile(`^\s*(?:(?:export|pub|public|private|protected|static|async|abstract|final|default|fun)\s+)*` +
		`(class|def|func|function|fun|actor|primitive|struct|interface|trait|enum|impl|object|module|be|new|type)\s+(?:\([^)]*\)\s*)?([A-Za-z_][\w.]*)`)
	docQuoteRe = regexp.MustCompile(`"""|\'\'\'`)
)

// outline tells what the lines of a file view hold: its definitions with
// their line numbers ("class CommandParser (l.8), fun parse (l.41)"), or
// that they are comments or a docstring only. Empty when neither says
// anything (a few lines of statements).
func outline(lines []string) string {
	var defs, consts []string
	code, shown := 0, 0
	inInit := false
	inDoc := false
	for _, l := range lines {
		num := ""
		if m := numberedLineRe.FindStringSubmatch(l); m != nil {
			num, l = m[1], m[2]
		}
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		shown++
		quotes := len(docQuoteRe.FindAllStringIndex(t, -1))
		if inDoc || quotes > 0 && docQuoteRe.FindStringIndex(t)[0] == 0 {
			if quotes%2 == 1 {
				inDoc = !inDoc
			}
			continue
		}
		if isCommentLine(t) {
			continue
		}
		code++
		// A module's constants and an object's settings; a function's
		// locals (failed = False) are its working, not its values.
		if m := constantRe.FindStringSubmatch(t); m != nil && len(consts) < 3 && len(m[2]) <= 24 &&
			(t == strings.TrimRight(l, " \t\r") || inInit && strings.HasPrefix(m[1], "self.")) &&
			!slices.ContainsFunc(consts, func(c string) bool { return strings.HasPrefix(c, m[1]+" = ") }) {
			consts = append(consts, m[1]+" = "+m[2])
			continue
		}
		m := definitionRe.FindStringSubmatch(l)
		if m != nil {
			inInit = m[2] == "__init__" // an object's settings are those its constructor makes
		}
		if m != nil && len(defs) < 8 {
			d := m[1] + " " + m[2]
			if num != "" {
				d += " (l." + num + ")"
			}
			defs = append(defs, d)
		}
	}
	var parts []string
	if len(consts) > 0 {
		// The values a file sets are what a reader of it learns
		// (bit_size = 1024, e = 5); its definitions say where to look.
		parts = append(parts, "sets "+strings.Join(consts, ", "))
	}
	switch {
	case shown >= 5 && code == 0:
		return "comments or docstrings only, no code"
	case len(defs) > 0:
		parts = append(parts, "defines "+strings.Join(defs, ", "))
	}
	return strings.Join(parts, "; ")
}

// constantRe matches a name given a literal value: a number, a short
// string or bytes, True, False or None ("self.e = 5", "FLAG = b'HTB{x}'",
// "MAX_RETRIES: int = 3").
// scriptGist tells a script written as a run of statements by the ones
// that do its work, its top-level assignments and calls: "runs `X =
// np.array([0, 0.5, 2]).reshape(-1, 1)`, `est = KBinsDiscretizer(n_bins=5)`".
// Imports, prints, control lines, definitions, the text of string
// literals and the constants outline names are left out; a call whose
// arguments go on below is closed with "…)"; "" when nothing is left.
func scriptGist(lines []string) string {
	var picked []string
	inString := false // inside a triple-quoted literal (a docstring, code as text)
	for _, l := range lines {
		if n := strings.Count(l, `"""`) + strings.Count(l, "'''"); n > 0 {
			if n%2 == 1 {
				inString = !inString
			}
			continue
		}
		t := strings.TrimRight(l, " \t\r")
		if inString || t == "" || t != strings.TrimLeft(t, " \t") || isCommentLine(t) || constantRe.MatchString(t) ||
			scriptNoiseRe.MatchString(t) || definitionRe.MatchString(t) || strings.ContainsRune(t, '`') {
			continue
		}
		if !strings.Contains(t, "(") {
			continue // a call or an assignment from one does the work
		}
		t = clip(t, 90)
		if closers := openBrackets(t); closers != "" {
			t = strings.TrimSuffix(t, "…") + "…" + closers // its arguments, below, are cut
		}
		picked = append(picked, "`"+t+"`")
		if len(picked) == 3 {
			break
		}
	}
	if len(picked) == 0 {
		return ""
	}
	return gistPrefix + strings.Join(picked, ", ")[1:]
}

// gistPrefix begins what scriptGist writes; withoutGist finds it by it.
const gistPrefix = "runs `"

// openBrackets returns what closes the brackets a line leaves open
// ("np.array([" → "])"), strings skipped; "" when it closes them all.
func openBrackets(t string) string {
	var stack []byte
	var quote byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			stack = append(stack, ')')
		case c == '[':
			stack = append(stack, ']')
		case c == '{':
			stack = append(stack, '}')
		case (c == ')' || c == ']' || c == '}') && len(stack) > 0 && stack[len(stack)-1] == c:
			stack = stack[:len(stack)-1]
		}
	}
	slices.Reverse(stack)
	return string(stack)
}

// scriptNoiseRe matches a top-level line that does no work of its own:
// imports (require() too), output, control flow, a function's or block's
// opening, the script's end, the setup every script of a project repeats
// (its path, its environment, django.setup()).
var scriptNoiseRe = regexp.MustCompile(`^(?:import |from \S+ import |(?:const|let|var) .*= require\(|print\(|console\.log\(|echo |printf |try:|except\b|else:|finally:|if __name__|with |for |while |if |elif |return\b|}|\)|EOF|sys\.exit\(|exit\(|main\(\)$|sys\.path\.|os\.environ|django\.setup\(\)$|\w+ = sys\.(?:argv|stdin)|[\w.]+\s*\(\)\s*\{|.*=>\s*\{$)`)

// scriptExts are the files a gist is told for: scripts, not notes or data.
var scriptExts = []string{".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".bash", ".rb", ".pl", ".php"}

// withoutGist is an outline without the part scriptGist wrote: an edit
// may have changed the statements it quotes.
func withoutGist(outline string) string {
	if strings.HasPrefix(outline, gistPrefix) {
		return ""
	}
	if i := strings.Index(outline, "; "+gistPrefix); i >= 0 {
		return outline[:i]
	}
	return outline
}

var constantRe = regexp.MustCompile(`^((?:self\.)?[A-Za-z_]\w*)(?:\s*:\s*\w+)?\s*=\s*(-?\d[\d_.xXa-fA-F]*|[bBrRuUfF]?(?:'[^'\\]{0,40}'|"[^"\\]{0,40}")|True|False|None)\s*(?:#.*)?$`)

func isCommentLine(t string) bool {
	for _, p := range []string{"#", "//", "/*", "*", "--", "<!--", ";;", "%"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// cleanOutput strips the harness's and the transport's additions.
var responseMarkRe = regexp.MustCompile(`^-{3,}\s*(?:SERVER RESPONSE|END OF RESPONSE)\s*-{3,}$`)

func cleanOutput(text string, keepWarnings bool) string {
	s := text
	if strings.Contains(s, "<returncode>") {
		s = returnCodeRe.ReplaceAllString(s, "")
	}
	for _, t := range []string{"<output>", "</output>", "<output_head>", "</output_head>", "<output_tail>", "</output_tail>"} {
		s = strings.ReplaceAll(s, t, "")
	}
	if strings.Contains(s, "<warning>") {
		if i, j := strings.Index(s, "<warning>"), strings.Index(s, "</warning>"); i >= 0 && j > i {
			s = s[:i] + s[j+len("</warning>"):]
		}
	}
	if strings.Contains(s, "<elided_chars>") {
		s = elidedRe.ReplaceAllString(s, "[… $1 characters elided …]")
	}
	s = strings.ReplaceAll(s, "///PROCESS-DONE:0:PROCESS-DONE///", "")
	var b strings.Builder
	b.Grow(len(s))
	skipIndented := false
	for _, l := range strings.SplitAfter(s, "\n") {
		t := strings.TrimSpace(l)
		if skipIndented {
			skipIndented = false
			if strings.HasPrefix(l, " ") && t != "" {
				continue // the source line a warning quotes
			}
		}
		if !keepWarnings && warningRe.MatchString(t) {
			skipIndented = true
			continue
		}
		switch {
		case strings.HasPrefix(t, "(Open file:") || strings.HasPrefix(t, "(Current directory:") || t == "bash-$" ||
			strings.HasPrefix(t, "[Python Interpreter:") || strings.HasPrefix(t, "[Command finished with exit code") ||
			strings.HasPrefix(t, "[Jupyter current working directory:") || strings.HasPrefix(t, "[Jupyter Python interpreter:") ||
			strings.HasPrefix(t, "[The command completed with exit code") || strings.HasPrefix(t, "[Current working directory:") ||
			strings.HasPrefix(t, "(Interactive session:") || shellPrompt(t):
			continue
		case strings.HasPrefix(t, "[x] ") || responseMarkRe.MatchString(t):
			continue // pwntools' progress lines; SWE-agent's marks around a server's answer

		case strings.HasPrefix(t, "File updated. Please review the changes"):
			continue
		case progressRe.MatchString(l) && (strings.Contains(l, "--:--:--") || strings.Contains(l, "% Total") || strings.Contains(l, "Dload")):
			continue
		}
		b.WriteString(l)
	}
	return strings.Trim(b.String(), "\n")
}

// htmlText reduces HTML lines to their visible text.
func htmlText(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "<!DOCTYPE") || strings.HasPrefix(t, "PUBLIC ") || strings.Contains(t, "xmlns") ||
			strings.HasPrefix(t, "<meta") || strings.HasPrefix(t, "\"http://www.w3.org") || t == ">" {
			continue
		}
		if v := strings.TrimSpace(tagRe.ReplaceAllString(t, " ")); v != "" {
			out = append(out, strings.Join(strings.Fields(v), " "))
		}
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// keepLines keeps the head and tail of long outputs, each line clipped.
func keepLines(lines []string, n int) []string {
	if len(lines) > n {
		head, tail := lines[:n*3/4], lines[len(lines)-n/4:]
		lines = append(append(append([]string{}, head...), "[…]"), tail...)
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = strings.TrimRight(l, " \r\t")
		if len(l) > keptLineBytes {
			l = shortHex(l) // a line that would be cut: its long values, not its end
		}
		out = append(out, clip(l, keptLineBytes))
	}
	return out
}

// errText is an error line as kept: 220 bytes, a long hex value in a
// longer line told by its ends first (shortHex), so that what follows it
// ("expected <digest> got <digest>") is not cut away.
func errText(t string) string {
	if len(t) > 220 {
		t = shortHex(t)
	}
	return clip(t, 220)
}

// keptLineBytes is the most of one output line kept.
const keptLineBytes = 240

// shortHex tells each long run of hex digits (a ciphertext, a modulus, a
// key: 80 digits or more, letters and digits) by its ends and its length,
// "A76EDD72…DCFAC323 (256 hex digits)", in a line too long to keep whole:
// cut there, the first hundred digits hid the rest of the line (the
// JSON's other fields, the public exponent). A line that fits is kept as
// it is (a file's content, a name in a listing, a hex dump asked for);
// the whole value stays in the compacted message, for expand_history.
func shortHex(t string) string {
	return longHexRe.ReplaceAllStringFunc(t, func(h string) string {
		if !strings.ContainsAny(h, "abcdefABCDEF") || !strings.ContainsAny(h, "0123456789") {
			return h // a long decimal number (100!), not an opaque value
		}
		return h[:8] + "…" + h[len(h)-8:] + " (" + strconv.Itoa(len(h)) + " hex digits)"
	})
}

var longHexRe = regexp.MustCompile(`\b[0-9A-Fa-f]{80,}\b`)

// libraryFrame reports whether a traceback frame's file belongs to an
// installed library or the runtime rather than the project.
func libraryFrame(file string) bool {
	return strings.Contains(file, "site-packages/") || strings.Contains(file, "dist-packages/") ||
		strings.HasPrefix(file, "/usr/lib/") || strings.HasPrefix(file, "/usr/local/lib/") ||
		strings.Contains(file, "/lib/python3") || strings.HasPrefix(file, "<") || strings.Contains(file, "/.pyenv/")
}

// readErrors finds the error of an output: in a traceback the exception
// line and the innermost project frame; otherwise the first error line
// (and the line after a bare "ERROR:").
func readErrors(o *output, lines []string) {
	probe := lines
	if len(lines) > 400 {
		probe = append(append([]string{}, lines[:200]...), lines[len(lines)-200:]...)
	}
	inTrace := false
	var lastFrame, projectFrame string
	// handled is the exception a chained traceback's next one was raised
	// while handling ("During handling of the above exception, another
	// exception occurred"): the last is the error, and the first may be
	// its cause (a TypeError that a crash in the error report hid).
	handled, handling := "", false
	for i, l := range probe {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "During handling of the above exception") {
			handling = o.errLine != ""
			if handling {
				handled = o.errLine
				if o.errAt != "" {
					handled += " at " + o.errAt
				}
			}
			continue
		}
		if strings.Contains(t, "Traceback (most recent call last)") {
			// Also after a progress line that did not end ("test_x.py s
			// [100%]Traceback (most recent call last):").
			inTrace = true
			lastFrame, projectFrame = "", ""
			continue
		}
		if m := frameRe.FindStringSubmatch(l); m != nil {
			f := m[1] + " line " + m[2]
			if m[3] != "" {
				f += " in " + m[3]
			}
			lastFrame = f
			if !libraryFrame(m[1]) {
				projectFrame = f
			}
			continue
		}
		if strings.Contains(t, "Warning:") && !strings.Contains(t, "Error") {
			continue // a warning is not the error
		}
		if inTrace && (exceptionRe.MatchString(t) || lastFrame != "" && l == t && traceEndRe.MatchString(t)) {
			o.errLine, o.raisedBy = errText(t), ""
			if handling {
				o.errLine += " (raised while handling " + clip(handled, 130) + ")"
				handling = false
			}
			o.errAt = projectFrame
			if o.errAt == "" {
				o.errAt = lastFrame
			}
			inTrace = false
			continue
		}
		if o.errLine != "" && !cleanupMissingRe.MatchString(o.errLine) || inTrace {
			continue // the first error stands; "rm: cannot remove" a missing file is not one
		}
		if strings.HasPrefix(t, "[Your proposed edit has introduced new syntax error") {
			// An editor's refusal: the reason, then where.
			where := ""
			for _, n := range probe[i+1:] {
				if n = strings.TrimSpace(n); n != "" {
					where = " " + n
					break
				}
			}
			o.errLine, o.raisedBy = clip("edit rejected: new syntax error(s)"+where, 200), ""
			continue
		}
		if t == "ERROR:" || t == "Error:" || t == "error:" {
			for k, n := range probe[i+1:] {
				if n = strings.TrimSpace(n); n != "" {
					o.errLine, o.raisedBy = clip(t+" "+closeQuote(n, probe[i+2+k:]), 240), ""
					break
				}
			}
			continue
		}
		if t == "Traceback:" {
			continue // pytest's heading of a collection error's frames: the "E " line after them is the error
		}
		if errorLineRe.MatchString(t) || exceptionRe.MatchString(t) && strings.Contains(t, ":") {
			o.errLine = errText(t)
			o.raisedBy = raisedByTest(probe, i)
		}
	}
	if o.errLine != "" {
		if m := missingRe.FindStringSubmatch(o.errLine); m != nil && m[1] != "" {
			o.missing = append(o.missing, strings.Trim(m[1], "'\":"))
		}
	}
}

// raisedByTest returns the raise statement of pytest's marked line right
// above the "E Type: message" line lines[i] when it raises that Type in
// a test file of the run (the "path:6: Type" line after the E block names
// a file the run reports tests of: "reproduce_issue.py F", "FAILED
// reproduce_issue.py::test_x"), else "". A library's raise, marked the
// same way in its own frame, is a fault of the code under test.
func raisedByTest(lines []string, i int) string {
	errLine := strings.TrimSpace(lines[i])
	name, _, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(errLine, "E ")), ":")
	if !ok || !strings.HasPrefix(errLine, "E ") {
		return ""
	}
	name = name[strings.LastIndexByte(name, '.')+1:]
	stmt := ""
	for k := i - 1; k >= 0; k-- {
		t := strings.TrimSpace(lines[k])
		if t == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(t, ">"); ok {
			s := strings.TrimSpace(rest)
			if r, ok := strings.CutPrefix(s, "raise "+name); ok && (r == "" || r[0] == '(' || r[0] == ' ') {
				stmt = s
			}
		}
		break
	}
	if stmt == "" {
		return ""
	}
	for _, l := range lines[i+1:] {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "E ") {
			continue
		}
		m := raisedAtRe.FindStringSubmatch(t)
		if m == nil || m[2] != name {
			return ""
		}
		for _, x := range lines {
			x = strings.TrimSpace(x)
			if strings.HasPrefix(x, m[1]+" ") && strings.Trim(strings.Fields(x)[1], ".FEsxX") == "" ||
				strings.HasPrefix(x, "FAILED "+m[1]+"::") || strings.HasPrefix(x, m[1]+"::") {
				return stmt
			}
		}
		return ""
	}
	return ""
}

// raisedAtRe matches pytest's line after a failure's E block: where the
// exception was raised ("reproduce_issue.py:6: ValueError").
var raisedAtRe = regexp.MustCompile(`^(\S+\.py):\d+: (\w+)$`)

var (
	pytestSummaryRe = regexp.MustCompile(`^=+ (.*\b(?:passed|failed|error|errors|skipped|xfailed|deselected|no tests ran)\b.*?) (?:in [\d.]+s.*)?=+$`)
	unittestRanRe   = regexp.MustCompile(`^Ran (\d+) tests? in [\d.]+s`)
	unittestEndRe   = regexp.MustCompile(`^(OK|FAILED)\b(.*)$`)
	failNameRe      = regexp.MustCompile(`^(?:FAILED|ERROR) (\S+)(?: - (.*))?$|^(?:FAIL|ERROR): (\S+) \(([^)]+)\)|^--- FAIL: (\S+)`)
	goOKRe          = regexp.MustCompile(`^(ok|FAIL)\s+\S+`)
	finishedRe      = regexp.MustCompile(`^tests finished: (.*?)(?:, in [\d.]+ seconds)?\s*$`)
	assertRe        = regexp.MustCompile(`^(?:E\s+)?(?:AssertionError|assert)\b.*`)
)

// readTests reads a test run's summary: pytest, unittest/Django, go test.
func readTests(o *output, lines []string) {
	var summary, ran, end string
	var fails []string
	assertion, assertionRank := "", 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if m := pytestSummaryRe.FindStringSubmatch(t); m != nil {
			summary = m[1]
			continue
		}
		if m := finishedRe.FindStringSubmatch(t); m != nil {
			summary = m[1] // sympy's runner
			continue
		}
		if m := unittestRanRe.FindStringSubmatch(t); m != nil {
			ran = m[1]
			continue
		}
		if ran != "" {
			if m := unittestEndRe.FindStringSubmatch(t); m != nil {
				end = strings.TrimSpace(m[1] + m[2])
			}
		}
		if m := failNameRe.FindStringSubmatch(t); m != nil {
			name := m[1] + m[3] + m[5]
			if m[4] != "" {
				name += " (" + m[4] + ")"
			}
			if len(fails) < maxFailedListed {
				fails = appendNew(fails, clip(name, 140))
			}
			continue
		}
		// pytest prints the test's source around the failing line, which
		// it marks ">", then its "E" lines: the marked line is the failing
		// assertion, an "E" line the next best, a plain source line the
		// last resort (it may be one that passed).
		if rank := assertRank(l, t); rank > assertionRank {
			assertion, assertionRank = clip(strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, ">"), "E")), 160), rank
		}
		if m := goOKRe.FindStringSubmatch(t); m != nil && summary == "" {
			if m[1] == "FAIL" {
				end = "FAIL"
			} else if end == "" {
				end = "ok"
			}
		}
	}
	switch {
	case summary != "":
		o.tests = summary
		o.testsOK = !strings.Contains(summary, "failed") && !strings.Contains(summary, "error") &&
			!strings.Contains(summary, "exception") && !strings.Contains(summary, "no tests ran")
	case ran != "":
		o.tests = "ran " + ran + " tests: " + cmpOr(end, "no result line")
		o.testsOK = strings.HasPrefix(end, "OK")
	case end != "" && len(fails) > 0:
		o.tests = end
	}
	if o.tests != "" || len(fails) > 0 {
		o.failed = fails
		if assertion != "" && !o.testsOK {
			o.failed = append(o.failed, "first assertion: "+assertion)
		}
	}
}

// assertRank ranks a line as a test's failing assertion: 3 the line
// pytest marks failing ("> assert x"), 2 an "E" line, 1 any other assert
// line, 0 none.
func assertRank(l, t string) int {
	switch {
	case strings.HasPrefix(l, ">") && assertRe.MatchString(strings.TrimSpace(l[1:])):
		return 3
	case strings.HasPrefix(t, "E ") && assertRe.MatchString(t):
		return 2
	case assertRe.MatchString(t):
		return 1
	}
	return 0
}

// maxFailedListed is how many failing tests' names an output keeps.
const maxFailedListed = 8

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// searchHits reads a search's output as hit lines: "path:line:text",
// "path:text" or bare paths (find).
var binaryMatchRe = regexp.MustCompile(`^(?:grep: (\S+): binary file matches|Binary file (\S+) matches)$`)

// binaryMatches are the binary files a grep matched (it prints no line of
// them): a search that found only those did find something.
func binaryMatches(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := binaryMatchRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			out = append(out, m[1]+m[2])
		}
	}
	return out
}

func searchHits(lines []string) (hits []string, n int) {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if !isHit(t) {
			continue
		}
		n++
		if len(hits) < 40 {
			hits = append(hits, clip(t, 200))
		}
	}
	return hits, n
}

// isCut reports a (trimmed) line that marks where an output was cut:
// "[…]", or the harness's "[… 52000 characters elided …]".
func isCut(t string) bool { return strings.HasPrefix(t, "[…") }

// cutAt returns an output's first line that marks a cut, trimmed, or "".
func cutAt(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); isCut(t) {
			return t
		}
	}
	return ""
}

// isHit reports whether a search's output line (trimmed) is a hit, not
// a tool's message or an elision ("[…]", "[… 52000 characters elided …]").
func isHit(t string) bool {
	return !(t == "" || isCut(t) || strings.HasPrefix(t, "Binary file") || strings.HasPrefix(t, "grep:") ||
		strings.HasPrefix(t, "find:") || strings.HasPrefix(t, "Found ") || strings.HasPrefix(t, "End of matches") ||
		strings.HasPrefix(t, "No matches found"))
}

// headOf returns at most n bytes of s from its start, cut on a rune boundary.
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// tailOf returns at most n bytes of s from its end, cut on a rune boundary.
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

// clip folds whitespace runs into single spaces and cuts s to at most max
// bytes on a rune boundary, marking the cut with "…". A cut falls between
// words when one is near, so that no identifier is cut in two (a cut one
// would read as an identifier that never occurred).
func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\n\t\r") && !strings.Contains(s, "  ") && len(s) <= max {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), max+4))
	space := false
	for _, r := range s {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+len(string(r)) > max {
			out := b.String()
			if !space {
				if i := strings.LastIndexByte(out, ' '); i >= max*3/5 {
					out = out[:i]
				} else {
					out = trimPartialToken(out)
				}
			}
			return out + "…"
		}
		b.WriteRune(r)
	}
	return b.String()
}

// trimPartialToken drops the cut end of a token that looks like a path or
// URL (it would read as one that never occurred), keeping ordinary words.
func trimPartialToken(s string) string {
	i := strings.LastIndexAny(s, " ([{\"'`=,;")
	tok := s[i+1:]
	if i >= len(s)/3 && strings.ContainsAny(tok, "/:.@") && len(tok) > 3 {
		return s[:i+1]
	}
	return s
}
