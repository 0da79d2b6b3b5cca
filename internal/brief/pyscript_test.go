package brief

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScriptEffect(t *testing.T) {
	for _, tc := range []struct {
		name, code, want string
	}{
		{
			name: "replacements: the first, and how many more",
			code: "content = open(p).read()\n" +
				"content = content.replace(\n    'def _sqlite_datetime_parse(dt, tzname=None):',\n    'def _sqlite_datetime_parse(dt, tzname=None, db_timezone=None):'\n)\n" +
				"content = content.replace('dt = parse(dt, tzname)', 'dt = parse(dt, tzname, db_timezone)')\n" +
				"open(p, 'w').write(content)\n",
			want: " (replaces `…dt, tzname=None):` → `…dt, tzname=None, db_timezone=None):` and 1 more)",
		},
		{
			name: "definitions written come first, once each",
			code: "if 'def _print_MatMul(self, expr):' in line:\n    start = i\n" +
				"new = [\n    \"    def _print_MatMul(self, expr):\\n\",\n    \"        c, m = expr.as_coeff_matrices()\\n\",\n" +
				"    \"    def _print_MatMul(self, expr):\\n\",\n]\n" +
				"print(\"Could not find functions\")\n",
			want: " (writes `def _print_MatMul(self, expr):`; 3 lines)",
		},
		{
			name: "a triple-quoted method, escapes and a comment with a quote",
			code: "# don't read this as a string\nnew_method = \"\"\"    def _discover(self, files: Sequence[str]) -> Iterator[str]:\n        \\\"\\\"\\\"Discover.\\\"\\\"\\\"\n        yield root\n\"\"\"\n",
			want: " (writes `def _discover(self, files: Sequence[str]) -> Iterator[str]:`; 2 lines)",
		},
		{
			name: "literals that are looked for, opened or printed say nothing",
			code: "with open('a.py', 'r') as f:\n    s = f.read()\nif s.startswith('import os'):\n    print('already done: nothing to change')\n",
		},
		{
			name: "a replacement that changes nothing is no replacement",
			code: "s = s.replace('a = 1', 'a = 1')\n",
		},
		{
			name: "a path the script opens through a name is not code it writes",
			code: "file_path = 'sphinx/ext/autodoc/__init__.py'\nwith open(file_path) as f:\n    s = f.read()\n" +
				"s = s + 'x = compute_value(a, b)\\n' + 'y = other_value(c)\\n'\nopen(file_path, 'w').write(s)\n",
			want: " (writes `x = compute_value(a, b) ⏎ y = other_value(c)`; 2 lines)",
		},
		{
			name: "a replace of one name's text by another's is a replacement",
			code: "old_code = '''result = compute_total(items)'''\nnew_code = '''result = compute_total(items, tax=True)'''\n" +
				"content = content.replace(old_code, new_code)\n",
			want: " (replaces `result = compute_total(items)` → `result = compute_total(items, tax=True)`)",
		},
		{
			name: "code that does not tokenize ends the scan",
			code: "x = 'unterminated\nnew = ['keep = a(1)', 'keep = b(2)']\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scriptEffect(tc.code); got != tc.want {
				t.Errorf("scriptEffect:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestClipScriptRun(t *testing.T) {
	body := "rewritten by running update_autodoc.py (writes `if self.options.private_members is None:`, `elif x:`; 13 lines)"
	for _, tc := range []struct {
		max  int
		want string
	}{
		{200, body},
		{100, "rewritten by running update_autodoc.py (writes `if self.options.private_members is None:`; 13 lines)"},
		{90, "rewritten by running update_autodoc.py (writes `if self.options…`; 13 lines)"},
		{70, "rewritten by running update_autodoc.py"},
	} {
		if got := clipChange(body, tc.max); got != tc.want {
			t.Errorf("clipChange(%d):\n got %q\nwant %q", tc.max, got, tc.want)
		}
	}
}

// A cut quote of code stays valid UTF-8.
func TestClipScriptRunUTF8(t *testing.T) {
	body := "rewritten by running fix.py (writes `raise ValueError(\"ééééééééééééééééééééééééééééé\")`; 3 lines)"
	for limit := 60; limit < 110; limit++ {
		if got := clipChange(body, limit); !utf8.ValidString(got) {
			t.Fatalf("clipChange(%d) = %q: not valid UTF-8", limit, got)
		}
	}
}

// A script that writes no definition is told by its first lines in order:
// a condition with its branches, cut at a line once past scriptLogicBytes.
func TestScriptEffectLogic(t *testing.T) {
	code := "new_lines.append('    if self.options.private_members is None:\\n')\n" +
		"new_lines.append('        keep = False\\n')\n" +
		"new_lines.append('    elif self.options.private_members is ALL:\\n')\n" +
		"new_lines.append('        keep = True\\n')\n" +
		"new_lines.append('    else:\\n')\n" +
		"new_lines.append('        keep = membername in self.options.private_members\\n')\n" +
		"new_lines.append('    if self.options.undoc_members and self.options.private_members is not None:\\n')\n" +
		"new_lines.append('        keep = keep or has_doc\\n')\n"
	want := " (writes `if self.options.private_members is None: ⏎ keep = False ⏎ elif self.options.private_members is ALL: ⏎ keep = True ⏎ else: ⏎ keep = membername in self.options.private_members ⏎ …`; 8 lines)"
	if got := scriptEffect(code); got != want {
		t.Errorf("scriptEffect:\n got %q\nwant %q", got, want)
	}
	// The file's line gives it room at every level.
	body := "rewritten by running update_autodoc.py" + want
	for level, limit := range []int{300, 260, 250} {
		got := changeList([]change{{id: "m0081", what: body}}, level)
		if !strings.Contains(got, "keep = membername in self.options.private_members") {
			t.Errorf("level %d (%d bytes): the else branch is cut: %q", level, limit, got)
		}
	}
}
