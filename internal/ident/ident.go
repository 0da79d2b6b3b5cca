// Package ident finds identifiers in text: the paths, URLs, ids, codes,
// versions and names that an agent must get back verbatim. The briefing
// writer ranks and carries them, the LLM tier's fidelity gate checks that a
// model invented none, and the quality report counts them, all with the
// same rules.
package ident

import (
	"strings"
	"unicode/utf8"
)

// Identifiers returns the identifiers found in text, verbatim and in order
// of first appearance, each once: URLs, e-mail addresses, file paths (with a
// slash or a known extension), ids (tokens mixing letters and digits such as
// olivia_gonzalez_2305, HAT188 or Z7GOZK), exception class names
// (ValueError), hex hashes and UUIDs, error codes
// (E501, auth.E003), versions (v1.2.3, 4.0.1), dates, numbers of note (four
// or more digits, decimals, numbers with a unit) and names quoted in
// backticks (`clear_cache`). Plain words are never identifiers.
//
// The result is deterministic: the fidelity gate of internal/cascade and the
// quality report compare identifier sets with it. Every value is a
// substring of text.
func Identifiers(text string) []string {
	var out []string
	seen := map[string]struct{}{}
	add := func(s string) {
		if _, ok := seen[s]; ok {
			return
		}
		seen[s] = struct{}{}
		out = append(out, s)
	}
	scanIdentifiers(text, add)
	return out
}

// Scan calls emit for every identifier occurrence of text, in order,
// duplicates included, without allocating beyond what emit keeps.
func Scan(text string, emit func(string)) { scanIdentifiers(text, emit) }

// IsPath reports whether an identifier names a file or directory: it has a
// slash, or ends in a known file extension; URLs and e-mail addresses are
// not paths.
func IsPath(id string) bool {
	if strings.HasPrefix(id, "http") || strings.Contains(id, "@") {
		return false
	}
	if strings.Contains(id, "/") {
		return true
	}
	i := strings.LastIndexByte(id, '.')
	return i > 0 && knownExtensions[id[i+1:]]
}

// IsNumeric reports whether an identifier is only digits and dots (a line
// number, a decimal, a version without letters): it names nothing by itself.
func IsNumeric(id string) bool {
	for i := 0; i < len(id); i++ {
		if (id[i] < '0' || id[i] > '9') && id[i] != '.' {
			return false
		}
	}
	return id != ""
}

// scanIdentifiers calls emit for every identifier occurrence of text, in
// order (duplicates included). It makes one pass and allocates nothing but
// what emit keeps.
func scanIdentifiers(text string, emit func(string)) {
	n := len(text)
	i := 0
	for i < n {
		c := text[i]
		switch {
		case c == '`':
			// A backtick-quoted single token: a name the author highlighted.
			j := i + 1
			for j < n && j-i <= 81 && isQuotedChar(text[j]) {
				j++
			}
			if j < n && text[j] == '`' && j-i-1 >= 3 {
				q := text[i+1 : j]
				if isCodeName(q) {
					emit(q)
				}
			}
			i++
			continue
		case c == 'h' && (strings.HasPrefix(text[i:], "https://") || strings.HasPrefix(text[i:], "http://")) && (i == 0 || !isTokenChar(text[i-1])):
			j := i
			for j < n && isURLChar(text[j]) {
				j++
			}
			u := trimURL(text[i:j])
			if len(u) > len("https://")+2 {
				emit(u)
			}
			i = j
			continue
		case isTokenChar(c):
			j := i
			for j < n && isTokenChar(text[j]) {
				j++
			}
			if i > 0 && text[i-1] == '<' && c == '/' {
				// a closing tag such as </output>
				i = j
				continue
			}
			if tok := trimToken(text[i:j]); tok != "" {
				if isIdentifier(tok) {
					emit(tok)
				}
			}
			i = j
			continue
		}
		if c >= utf8.RuneSelf {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		i++
	}
}

func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-' || c == '~' || c == '@' || c == '+' || c == '%'
}

func isURLChar(c byte) bool {
	return c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '<' && c != '>' && c != '`' && c != '\\' && c != '{' && c != '}' && c != '|' && c != '^'
}

func isQuotedChar(c byte) bool {
	return isTokenChar(c) || c == ':' || c == '(' || c == ')'
}

// trimURL drops the punctuation a sentence puts after a URL.
func trimURL(u string) string {
	for len(u) > 0 {
		last := u[len(u)-1]
		if strings.IndexByte(".,;:!?*", last) >= 0 {
			u = u[:len(u)-1]
			continue
		}
		if last == ')' && strings.Count(u, "(") < strings.Count(u, ")") {
			u = u[:len(u)-1]
			continue
		}
		if last == ']' && strings.Count(u, "[") < strings.Count(u, "]") {
			u = u[:len(u)-1]
			continue
		}
		break
	}
	return u
}

// trimToken drops leading and trailing characters that belong to the
// sentence, not the token.
func trimToken(t string) string {
	for len(t) > 0 && strings.IndexByte(".-~@+%", t[0]) >= 0 && !strings.HasPrefix(t, "./") && !strings.HasPrefix(t, "../") && !strings.HasPrefix(t, "~/") {
		t = t[1:]
	}
	for len(t) > 0 && strings.IndexByte(".-/@+~", t[len(t)-1]) >= 0 {
		t = t[:len(t)-1]
	}
	return t
}

// isCodeName accepts a backtick-quoted text that names something (a
// function, a module, a flag), not a phrase or punctuation.
func isCodeName(q string) bool {
	letters := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			letters++
		}
	}
	if letters < 2 {
		return false
	}
	// A bare lowercase word (`grep`, `the`, `else:`, `run()`) is a word,
	// not an identifier, unless it is code-shaped.
	core := strings.TrimRight(q, ":()")
	for i := 0; i < len(core); i++ {
		c := core[i]
		if !(c >= 'a' && c <= 'z') {
			return true
		}
	}
	return false
}

var knownExtensions = map[string]bool{
	"py": true, "pyi": true, "pyx": true, "go": true, "js": true, "mjs": true, "cjs": true, "ts": true, "tsx": true, "jsx": true,
	"c": true, "h": true, "cc": true, "cpp": true, "hpp": true, "rs": true, "java": true, "kt": true, "rb": true, "php": true,
	"pony": true, "md": true, "rst": true, "txt": true, "json": true, "jsonl": true, "yaml": true, "yml": true, "toml": true,
	"cfg": true, "ini": true, "sh": true, "bash": true, "css": true, "scss": true, "html": true, "xml": true, "sql": true,
	"lock": true, "mod": true, "sum": true, "log": true, "csv": true, "ipynb": true, "svg": true, "png": true, "jpg": true,
	"jpeg": true, "gif": true, "pdf": true, "dcm": true, "pem": true, "zip": true, "gz": true, "tgz": true, "whl": true,
	"diff": true, "patch": true, "proto": true, "swift": true, "scala": true, "lua": true, "pl": true, "r": true, "ex": true,
	"exs": true, "erl": true, "hs": true, "ml": true, "vue": true, "svelte": true, "dart": true, "cs": true, "fs": true,
	"mk": true, "cmake": true, "bin": true, "so": true, "dll": true, "exe": true, "db": true, "sqlite": true, "env": true,
	"conf": true, "tex": true, "bib": true, "po": true, "mo": true, "traj": true, "elf": true, "pcap": true, "pyc": true,
}

var commonDirs = map[string]bool{
	"src": true, "lib": true, "libs": true, "test": true, "tests": true, "testing": true, "doc": true, "docs": true, "pkg": true,
	"cmd": true, "internal": true, "packages": true, "app": true, "apps": true, "bin": true, "usr": true, "etc": true,
	"var": true, "tmp": true, "home": true, "workspace": true, "build": true, "scripts": true, "examples": true,
	"testbed": true, "repo": true, "dist": true, "include": true, "vendor": true, "node_modules": true, "static": true,
	"templates": true, "config": true, "assets": true, "public": true,
}

// charCounts counts the classes of ASCII bytes of a token; the identifier
// scanner and the ranking both decide by them.
type charCounts struct {
	letters, digits, upper, under, dots, slashes, dashes, ats, other int
}

func countChars(t string) charCounts {
	var n charCounts
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'a' && c <= 'z':
			n.letters++
		case c >= 'A' && c <= 'Z':
			n.letters++
			n.upper++
		case c >= '0' && c <= '9':
			n.digits++
		case c == '_':
			n.under++
		case c == '.':
			n.dots++
		case c == '/':
			n.slashes++
		case c == '-':
			n.dashes++
		case c == '@':
			n.ats++
		default:
			n.other++
		}
	}
	return n
}

// isIdentifier classifies one trimmed token.
func isIdentifier(t string) bool {
	if len(t) < 3 || len(t) > 256 {
		return false
	}
	n := countChars(t)
	letters, digits, dots, slashes, dashes, ats, other := n.letters, n.digits, n.dots, n.slashes, n.dashes, n.ats, n.other
	if ats == 1 {
		return isEmail(t)
	}
	if ats > 0 {
		return false
	}
	if slashes > 0 {
		return isPath(t, letters)
	}
	if letters == 0 {
		return isNumberOfNote(t, digits, dots, dashes)
	}
	if other > 0 {
		return false
	}
	if dots == 0 && digits == 0 && dashes == 0 && isExceptionName(t) {
		return true
	}
	if dots > 0 {
		if ext := t[strings.LastIndexByte(t, '.')+1:]; knownExtensions[ext] && strings.LastIndexByte(t, '.') > 0 {
			return !strings.Contains(t, "..")
		}
		if isVersion(t) || isUnitNumber(t) {
			return true
		}
		// auth.E003: a dotted code whose last part is an error code.
		last := t[strings.LastIndexByte(t, '.')+1:]
		return isErrorCode(last) && !strings.Contains(t, "..")
	}
	if digits == 0 {
		return false
	}
	if isUUID(t) || isHex(t) {
		return true
	}
	if letters > 0 && digits > 0 && dashes == 0 {
		if isUnitNumber(t) {
			return true
		}
		// ids: snake or camel or upper-case tokens with digits, long enough
		// not to be a word like "h2" or "x86" by accident; an upper-case
		// code may start with a digit (8C8K4E, 4XGCCM).
		if t[0] >= '0' && t[0] <= '9' {
			return len(t) >= 5 && len(t) <= 12 && n.upper == letters && n.under == 0
		}
		return len(t) >= 4
	}
	if dashes > 0 && letters > 0 && digits > 0 {
		// issue and ticket keys (JIRA-123), instance names (django-11138).
		return len(t) >= 5 && (t[0] < '0' || t[0] > '9')
	}
	return false
}

// isExceptionName accepts a CamelCase exception class name: ValueError,
// OperationalError, IntegrityException. The agent searches for it, catches
// it, and quotes it again, so it is an identifier although it has no digit.
func isExceptionName(t string) bool {
	if len(t) < 8 || t[0] < 'A' || t[0] > 'Z' {
		return false
	}
	if !strings.HasSuffix(t, "Error") && !strings.HasSuffix(t, "Exception") {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func isEmail(t string) bool {
	at := strings.IndexByte(t, '@')
	local, domain := t[:at], t[at+1:]
	if len(local) == 0 || !strings.Contains(domain, ".") || strings.ContainsAny(domain, "/_") {
		return false
	}
	tld := domain[strings.LastIndexByte(domain, '.')+1:]
	if len(tld) < 2 {
		return false
	}
	for i := 0; i < len(tld); i++ {
		if !(tld[i] >= 'a' && tld[i] <= 'z' || tld[i] >= 'A' && tld[i] <= 'Z') {
			return false
		}
	}
	return true
}

func isPath(t string, letters int) bool {
	if letters == 0 || strings.Contains(t, "//") || strings.ContainsAny(t, "@%+") {
		return false
	}
	segs := strings.Split(strings.Trim(t, "/"), "/")
	if len(segs) == 0 || segs[0] == "" {
		return false
	}
	last := segs[len(segs)-1]
	hasExt := false
	if i := strings.LastIndexByte(last, '.'); i > 0 && knownExtensions[last[i+1:]] {
		hasExt = true
	}
	if strings.HasPrefix(t, "/") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") || strings.HasPrefix(t, "~/") {
		return len(t) >= 4 && (len(segs) >= 2 || hasExt || commonDirs[segs[0]] || strings.HasPrefix(t, "."))
	}
	if hasExt {
		return true
	}
	if len(segs) >= 3 || commonDirs[segs[0]] {
		return true
	}
	for _, s := range segs {
		if strings.ContainsAny(s, "_.") {
			return true
		}
	}
	return false
}

func isNumberOfNote(t string, digits, dots, dashes int) bool {
	if t[0] < '0' || t[0] > '9' {
		return false
	}
	switch {
	case dots == 0 && dashes == 0:
		return digits >= 4
	case dashes == 0:
		return isVersion(t) || dots == 1 && digits >= 2
	case dots == 0 && dashes == 2:
		return isDate(t)
	}
	return false
}

// isDate accepts 2024-05-28.
func isDate(t string) bool {
	return len(t) == 10 && t[4] == '-' && t[7] == '-'
}

// isVersion accepts v1.2, 1.2.3 and 1.2.3.4 (a plain 1.2 is a decimal).
func isVersion(t string) bool {
	s := t
	prefixed := false
	if s[0] == 'v' || s[0] == 'V' {
		s, prefixed = s[1:], true
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 || !prefixed && len(parts) < 3 {
		return false
	}
	for k, p := range parts {
		if p == "" {
			return false
		}
		if k == len(parts)-1 && k >= 2 && isPreRelease(p) {
			break // 4.0.dev24590, 2.1.rc1
		}
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				// allow a pre-release suffix on the last part: 1.2.3rc1
				if i > 0 && p == parts[len(parts)-1] {
					break
				}
				return false
			}
		}
	}
	return true
}

// isPreRelease accepts a version's pre- or post-release part: dev24590,
// rc1, post2, a1, b3.
func isPreRelease(p string) bool {
	for _, pre := range []string{"dev", "rc", "post", "alpha", "beta", "a", "b"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			for i := 0; i < len(rest); i++ {
				if rest[i] < '0' || rest[i] > '9' {
					return false
				}
			}
			return true
		}
	}
	return false
}

var units = []string{"ms", "us", "ns", "s", "px", "em", "rem", "kb", "mb", "gb", "tb", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "k", "K", "M", "x", "min", "h"}

// isUnitNumber accepts a number with a unit: 300ms, 1280px, 1.5em, 64MiB.
func isUnitNumber(t string) bool {
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	if i == 0 || t[0] == '.' || strings.Count(t[:i], ".") > 1 {
		return false
	}
	unit := t[i:]
	for _, u := range units {
		if unit == u {
			return true
		}
	}
	return false
}

func isErrorCode(s string) bool {
	// E501, W0611, HTTP404-like: 1-4 upper-case letters then 2-5 digits.
	i := 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		i++
	}
	if i == 0 || i > 4 {
		return false
	}
	d := len(s) - i
	if d < 2 || d > 5 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(t string) bool {
	if len(t) < 7 || len(t) > 64 {
		return false
	}
	var letters, digits int
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f':
			letters++
		default:
			return false
		}
	}
	return letters > 0 && digits > 0
}

func isUUID(t string) bool {
	if len(t) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := t[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
