package brief

import "strings"

// A shell line as agents write it: commands joined by &&, ||, ;, | and
// newlines, quoted words, redirections and here-documents. The briefing
// needs to know what a line did to which file (edited, wrote, reverted,
// read, searched, ran), so the parser keeps words, redirections and
// here-document bodies, and gives up gracefully on anything exotic: a word
// it cannot split is kept whole.

// shellCmd is one simple command.
type shellCmd struct {
	words   []string // argv after quote removal, environment assignments and wrappers dropped
	out     string   // target of > or >>
	appends bool     // out was >>
	in      string   // source of <
	heredoc string   // here-document body fed to the command
	piped   bool     // its output goes to the next command through |
}

// prog is the program name without a directory.
func (c *shellCmd) prog() string {
	if len(c.words) == 0 {
		return ""
	}
	p := c.words[0]
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		p = p[i+1:]
	}
	return p
}

// args are the words after the program.
func (c *shellCmd) args() []string {
	if len(c.words) < 2 {
		return nil
	}
	return c.words[1:]
}

// operands are the arguments that are not options.
func (c *shellCmd) operands() []string {
	var out []string
	for _, a := range c.args() {
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}

// hasFlag reports whether a short flag letter or a long flag is present.
func (c *shellCmd) hasFlag(short byte, long string) bool {
	for _, a := range c.args() {
		if long != "" && (a == long || strings.HasPrefix(a, long+"=")) {
			return true
		}
		if short != 0 && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], short) >= 0 {
			return true
		}
	}
	return false
}

// parseShell splits a shell line into simple commands.
func parseShell(line string) []shellCmd {
	p := shellParser{s: line}
	return p.parse()
}

type shellParser struct {
	s   string
	i   int
	out []shellCmd
	cur shellCmd
	// pending here-documents of the current line: the body starts after
	// the next newline.
	heredocs []heredocRef
}

type heredocRef struct {
	cmd   int // index in out, or -1 for cur
	delim string
	strip bool // <<- strips leading tabs
}

func (p *shellParser) parse() []shellCmd {
	var word strings.Builder
	inWord := false
	redirect := "" // ">", ">>", "<", "<<", "<<-" awaiting its word
	flushWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		switch redirect {
		case ">", ">>":
			p.cur.out, p.cur.appends = w, redirect == ">>"
		case "<":
			p.cur.in = w
		case "<<", "<<-":
			p.heredocs = append(p.heredocs, heredocRef{cmd: -1, delim: w, strip: redirect == "<<-"})
		default:
			p.cur.words = append(p.cur.words, w)
		}
		redirect = ""
	}
	endCmd := func(piped bool) {
		flushWord()
		p.cur.piped = piped
		p.cur.words = trimWrappers(p.cur.words)
		if len(p.cur.words) > 0 || p.cur.out != "" {
			for k := range p.heredocs {
				if p.heredocs[k].cmd == -1 {
					p.heredocs[k].cmd = len(p.out)
				}
			}
			p.out = append(p.out, p.cur)
		} else {
			// A command with no words cannot take a here-document.
			p.heredocs = slicesDeleteCur(p.heredocs)
		}
		p.cur = shellCmd{}
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s):
			if p.s[p.i+1] == '\n' {
				p.i += 2 // line continuation
				continue
			}
			word.WriteByte(p.s[p.i+1])
			inWord = true
			p.i += 2
		case c == '\'':
			j := strings.IndexByte(p.s[p.i+1:], '\'')
			if j < 0 {
				word.WriteString(p.s[p.i+1:])
				p.i = len(p.s)
			} else {
				word.WriteString(p.s[p.i+1 : p.i+1+j])
				p.i += j + 2
			}
			inWord = true
		case c == '"':
			p.i++
			for p.i < len(p.s) && p.s[p.i] != '"' {
				if p.s[p.i] == '\\' && p.i+1 < len(p.s) && strings.IndexByte("\"\\$`\n", p.s[p.i+1]) >= 0 {
					if p.s[p.i+1] != '\n' {
						word.WriteByte(p.s[p.i+1])
					}
					p.i += 2
					continue
				}
				word.WriteByte(p.s[p.i])
				p.i++
			}
			p.i++
			inWord = true
		case c == ' ' || c == '\t':
			flushWord()
			p.i++
		case c == '\n':
			endCmd(false)
			p.i++
			p.readHeredocs()
		case c == ';':
			endCmd(false)
			p.i++
		case c == '&':
			if strings.HasPrefix(p.s[p.i:], "&&") {
				endCmd(false)
				p.i += 2
			} else if strings.HasPrefix(p.s[p.i:], "&>") {
				flushWord()
				redirect = ">"
				p.i += 2
			} else {
				endCmd(false) // background
				p.i++
			}
		case c == '|':
			if strings.HasPrefix(p.s[p.i:], "||") {
				endCmd(false)
				p.i += 2
			} else {
				endCmd(true)
				p.i++
			}
		case c == '>':
			// 2>&1, 2>/dev/null: a digit right before belongs to the redirection.
			if inWord && word.Len() == 1 && word.String()[0] >= '0' && word.String()[0] <= '9' {
				word.Reset()
				inWord = false
			} else {
				flushWord()
			}
			if strings.HasPrefix(p.s[p.i:], ">>") {
				redirect = ">>"
				p.i += 2
			} else {
				redirect = ">"
				p.i++
			}
			if strings.HasPrefix(p.s[p.i:], "&") {
				// >&2: no file
				p.i++
				for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					p.i++
				}
				redirect = ""
			}
		case c == '<':
			flushWord()
			switch {
			case strings.HasPrefix(p.s[p.i:], "<<<"):
				redirect = "<<<" // here-string: its word is a plain argument
				p.i += 3
				redirect = ""
			case strings.HasPrefix(p.s[p.i:], "<<-"):
				redirect = "<<-"
				p.i += 3
			case strings.HasPrefix(p.s[p.i:], "<<"):
				redirect = "<<"
				p.i += 2
			default:
				redirect = "<"
				p.i++
			}
			for p.i < len(p.s) && p.s[p.i] == ' ' {
				p.i++
			}
		case c == '#' && !inWord:
			// a comment runs to the end of the line
			j := strings.IndexByte(p.s[p.i:], '\n')
			if j < 0 {
				p.i = len(p.s)
			} else {
				p.i += j
			}
		default:
			word.WriteByte(c)
			inWord = true
			p.i++
		}
	}
	endCmd(false)
	return p.out
}

// readHeredocs consumes the bodies of the here-documents opened on the
// line just ended, starting at p.i.
func (p *shellParser) readHeredocs() {
	for _, h := range p.heredocs {
		var body strings.Builder
		for p.i < len(p.s) {
			j := strings.IndexByte(p.s[p.i:], '\n')
			line := p.s[p.i:]
			if j >= 0 {
				line = p.s[p.i : p.i+j]
				p.i += j + 1
			} else {
				p.i = len(p.s)
			}
			check := line
			if h.strip {
				check = strings.TrimLeft(line, "\t")
			}
			if strings.TrimRight(check, " \r") == h.delim {
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		if h.cmd >= 0 && h.cmd < len(p.out) {
			p.out[h.cmd].heredoc = body.String()
		}
	}
	p.heredocs = p.heredocs[:0]
}

func slicesDeleteCur(h []heredocRef) []heredocRef {
	out := h[:0]
	for _, r := range h {
		if r.cmd != -1 {
			out = append(out, r)
		}
	}
	return out
}

// trimWrappers drops environment assignments and wrappers that do not
// change what a command does to files: FOO=1, sudo, time, timeout 10, env,
// nohup, xargs keeps its program.
func trimWrappers(w []string) []string {
	for len(w) > 0 {
		switch {
		case strings.Contains(w[0], "=") && !strings.HasPrefix(w[0], "-") && !strings.HasPrefix(w[0], "="):
			w = w[1:]
		case w[0] == "sudo" || w[0] == "time" || w[0] == "env" || w[0] == "nohup" || w[0] == "exec" || w[0] == "command":
			w = w[1:]
		case w[0] == "timeout" && len(w) > 1:
			w = w[2:]
		case w[0] == "(" || w[0] == "{" || w[0] == "then" || w[0] == "do" || w[0] == "!":
			w = w[1:]
		default:
			return w
		}
	}
	return w
}
