package brief

import (
	"slices"
	"strings"
	"testing"
)

func TestParseShell(t *testing.T) {
	tests := []struct {
		line    string
		words   [][]string
		out     string
		heredoc string
	}{
		{`cd /testbed && python reproduce.py`, [][]string{{"cd", "/testbed"}, {"python", "reproduce.py"}}, "", ""},
		{`sed -i 's/a b/c/' x.py; nl -ba x.py | sed -n '10,20p'`, [][]string{{"sed", "-i", "s/a b/c/", "x.py"}, {"nl", "-ba", "x.py"}, {"sed", "-n", "10,20p"}}, "", ""},
		{"cat <<'EOF' > a.py\nprint(1)\nEOF\npython a.py", [][]string{{"cat"}, {"python", "a.py"}}, "a.py", "print(1)\n"},
		{`FOO=1 timeout 30 pytest -x tests/ 2>&1 | tail -5`, [][]string{{"pytest", "-x", "tests/"}, {"tail", "-5"}}, "", ""},
		{`echo "a \"quoted\" word" >> notes.txt`, [][]string{{"echo", `a "quoted" word`}}, "notes.txt", ""},
		{`grep -rn "x" src # a comment`, [][]string{{"grep", "-rn", "x", "src"}}, "", ""},
		{`ls missing 2>/dev/null || echo none`, [][]string{{"ls", "missing"}, {"echo", "none"}}, "", ""},
		{"unterminated 'quote", [][]string{{"unterminated", "quote"}}, "", ""},
	}
	for _, tt := range tests {
		cmds := parseShell(tt.line)
		var words [][]string
		out, heredoc := "", ""
		for _, c := range cmds {
			words = append(words, c.words)
			if c.out != "" && c.out != "/dev/null" && out == "" {
				out = c.out
			}
			if c.heredoc != "" {
				heredoc = c.heredoc
			}
		}
		if !slices.EqualFunc(words, tt.words, slices.Equal) || out != tt.out || heredoc != tt.heredoc {
			t.Errorf("parseShell(%q) = %q out %q heredoc %q, want %q out %q heredoc %q", tt.line, words, out, heredoc, tt.words, tt.out, tt.heredoc)
		}
	}
}

func TestClassifyCall(t *testing.T) {
	tests := []struct {
		name, tool, args string
		kind             kind
		path, what       string // the first file operation, when path is set
		noop             bool
	}{
		{"sed edit at a line", "bash", `{"command":"sed -i '917s/_default_manager/_base_manager/' django/db/models/fields/related.py"}`,
			kindEdit, "django/db/models/fields/related.py", "line 917: `_default_manager` → `_base_manager`", false},
		{"sed edit that puts lines", "bash", `{"command":"sed -i 's/^import collections$/import collections\\ntry:\\n    from collections.abc import Callable\\nexcept ImportError:\\n    pass/' requests/models.py"}`,
			kindEdit, "requests/models.py", "`import collections` → `import collections ⏎ try: ⏎ from collections.abc import Callable ⏎ except ImportError: ⏎ pass`", false},
		// mini-swe-agent-40: `\\n` in a replacement writes a backslash and an n.
		{"sed replacement with an escaped backslash", "bash", `{"command":"sed -i 's/name}\")/name}\\\\n\")/' a.py"}`,
			kindEdit, "a.py", "`name}\")` → `name}\\n\")`", false},
		{"sed no-op", "bash", `{"command":"sed -i 's/x/x/' a.py"}`, kindEdit, "a.py", "`x` → `x`", true},
		// mini-swe-agent-23: the pattern's escapes are a regexp's, not the code's.
		{"sed edit with escapes", "bash", `{"command":"sed -i \"209s/mpl.rcParams\\\\['text.antialiased'\\\\]/gc.get_antialiased()/\" lib/matplotlib/backends/backend_agg.py"}`,
			kindEdit, "lib/matplotlib/backends/backend_agg.py", "line 209: `mpl.rcParams['text.antialiased']` → `gc.get_antialiased()`", false},
		{"sed read", "bash", `{"command":"sed -n '10,20p' a.py"}`, kindView, "a.py", "lines 10-20", false},
		{"heredoc write", "bash", `{"command":"cat <<'EOF' > repro.py\nimport x\nprint(x)\nEOF"}`, kindWrite, "repro.py", "written (2 lines)", false},
		{"git checkout reverts", "bash", `{"command":"git checkout django/db/models/fields/related.py"}`, kindRevert, "django/db/models/fields/related.py", "reverted with git checkout", false},
		{"git stash pop restores", "bash", `{"command":"git stash pop"}`, kindWrite, ".", stashPopped, false},
		{"a listing cut by head is a listing", "bash", `{"command":"ls -R sphinx/ext/autodoc | head -n 20"}`, kindList, "", "", false},
		{"a file cut by head is a view", "bash", `{"command":"cat a.py | head -50"}`, kindView, "a.py", "lines 1-50", false},
		{"grep search", "bash", `{"command":"grep -rn \"CommandParser\" src"}`, kindSearch, "", "", false},
		{"grep with context views", "bash", `{"command":"grep -n -C 5 \"_i_over =\" lib/colors.py"}`, kindView, "lib/colors.py", "around _i_over =", false},
		{"python script run", "bash", `{"command":"cd /testbed && python reproduce_issue.py"}`, kindRun, "reproduce_issue.py", "", false},
		{"tests", "bash", `{"command":"python -m pytest tests/test_x.py -q"}`, kindTest, "", "", false},
		{"python writes a file", "bash", "{\"command\":\"python - <<'EOF'\\nopen('setup.cfg','w').write('x')\\nEOF\"}", kindEdit, "setup.cfg", "rewritten by a Python script", false},
		{"editor view", "str_replace_editor", `{"command":"view","path":"/w/a.pony","view_range":[100,150]}`, kindView, "/w/a.pony", "lines 100-150", false},
		{"editor replace", "str_replace_editor", `{"command":"str_replace","path":"/w/a.go","old_str":"x := 1\ny := 2","new_str":"x := 1\ny := 3"}`, kindEdit, "/w/a.go", "`y := 2` → `y := 3`", false},
		{"editor no-op replace", "str_replace_editor", `{"command":"str_replace","path":"/w/a.go","old_str":"a","new_str":"a"}`, kindEdit, "/w/a.go", "no change (old and new text are equal)", true},
		{"api read", "get_reservation_details", `{"reservation_id":"8C8K4E"}`, kindLookup, "", "", false},
		{"api change", "cancel_reservation", `{"reservation_id":"8C8K4E"}`, kindMutate, "", "", false},
		{"submit", "bash", `{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"}`, kindFinish, "", "", false},
		{"patch without operands", "bash", `{"command":"patch"}`, kindEdit, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := classifyCall(tt.tool, tt.args)
			if c.kind != tt.kind {
				t.Fatalf("kind %v, want %v (%+v)", c.kind, tt.kind, c)
			}
			if tt.path == "" {
				return
			}
			i := slices.IndexFunc(c.ops, func(op fileOp) bool { return op.path == tt.path })
			if i < 0 {
				t.Fatalf("no operation on %s: %+v", tt.path, c.ops)
			}
			if op := c.ops[i]; op.what != tt.what || op.noop != tt.noop {
				t.Fatalf("op %q noop %v, want %q noop %v", op.what, op.noop, tt.what, tt.noop)
			}
		})
	}
}

func TestReadOutput(t *testing.T) {
	t.Run("traceback names the exception and the project frame", func(t *testing.T) {
		o := readOutput("<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"reproduce_issue.py\", line 55, in <module>\n    x()\n  File \"/usr/lib/python3.9/site-packages/django/db/utils.py\", line 84, in _execute\n    return y\ndjango.db.utils.OperationalError: no such table: __main___article\n</output>", false, false)
		if !o.hasExit || o.exit != 1 || o.errLine != "django.db.utils.OperationalError: no such table: __main___article" || o.errAt != "reproduce_issue.py line 55 in <module>" {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("a bare ERROR line takes the next", func(t *testing.T) {
		o := readOutput("ERROR:\nInvalid `view_range` parameter: [100, 150]. Its second element `150` should be smaller than the number of lines in the file: `122`.", false, false)
		if !strings.HasPrefix(o.errLine, "ERROR: Invalid `view_range` parameter") {
			t.Fatalf("%q", o.errLine)
		}
	})
	t.Run("pytest summary and failures", func(t *testing.T) {
		o := readOutput("collected 3 items\n\nFAILED tests/test_a.py::test_x - AssertionError: 1 != 2\nE   assert 1 == 2\n===== 1 failed, 2 passed in 0.12s =====", false, false)
		if o.tests != "1 failed, 2 passed" || o.testsOK || len(o.failed) == 0 || o.failed[0] != "tests/test_a.py::test_x" {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("a pytest collection error is its E line, not its Traceback heading", func(t *testing.T) {
		o := readOutput("==== ERRORS ====\n____ ERROR collecting testing/test_junitxml.py ____\nImportError while importing test module '/testbed/testing/test_junitxml.py'.\nHint: make sure your test modules/packages have valid Python names.\nTraceback:\ntesting/test_junitxml.py:8: in <module>\n    import xmlschema\nE   ModuleNotFoundError: No module named 'xmlschema'\n==== 1 error in 0.3s ====", false, false)
		if o.errLine != "E ModuleNotFoundError: No module named 'xmlschema'" {
			t.Fatalf("%q", o.errLine)
		}
	})
	t.Run("unittest", func(t *testing.T) {
		o := readOutput("...\n----------------------------------------------------------------------\nRan 5 tests in 0.010s\n\nOK", false, false)
		if o.tests != "ran 5 tests: OK" || !o.testsOK {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("an interactive session's answer without the harness around it", func(t *testing.T) {
		o := readOutput("[x] Opening connection to crypto.chal.csaw.io on port 1337\n[+] Opening connection to crypto.chal.csaw.io on port 1337: Done\n\n-------SERVER RESPONSE-------\n\n Welcome to Qubit Enterprises. Would you like your own time capsule? (Y/n)\n\n-------END OF RESPONSE-------\n\n(Open file: /x/server.py)\n(Current directory: /x)\n(Interactive session: connect crypto.chal.csaw.io 1337)\nbash-$", false, false)
		want := []string{"[+] Opening connection to crypto.chal.csaw.io on port 1337: Done", "Welcome to Qubit Enterprises. Would you like your own time capsule? (Y/n)"}
		var got []string
		for _, l := range o.lines {
			if l = strings.TrimSpace(l); l != "" {
				got = append(got, l)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q", got)
		}
	})
	t.Run("curl progress and HTML boilerplate are stripped", func(t *testing.T) {
		o := readOutput("  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n                                 Dload  Upload   Total   Spent    Left  Speed\n100   293  100   293    0     0  12993      0 --:--:-- --:--:-- --:--:-- 15421\n<!DOCTYPE html>\n<html><head><title>Perl File Upload</title></head><body><form method=\"post\" enctype=\"multipart/form-data\"><input type=\"file\" name=\"file\"></form>\nYour name is test.</body></html>\n(Open file: n/a)\n(Current directory: /x)\nbash-$", false, false)
		if o.title != "Perl File Upload" || !slices.Equal(o.fields, []string{"file"}) {
			t.Fatalf("%+v", o)
		}
		for _, l := range o.lines {
			if strings.Contains(l, "Dload") || strings.Contains(l, "Open file") || strings.Contains(l, "<") {
				t.Fatalf("noise kept: %q", o.lines)
			}
		}
	})
	t.Run("warnings are noise unless the task is about them", func(t *testing.T) {
		text := "/testbed/sympy/core/basic.py:3: DeprecationWarning: Using or importing the ABCs\n  from collections import Mapping\nf == s: True"
		if o := readOutput(text, false, false); !slices.Equal(o.short, []string{"f == s: True"}) {
			t.Fatalf("%q", o.short)
		}
		if o := readOutput(text, true, false); len(o.short) != 3 {
			t.Fatalf("%q", o.short)
		}
	})
	t.Run("editor header", func(t *testing.T) {
		o := readOutput("[File: /repo/printenv.pl (5 lines total)]\n1:#!/usr/bin/perl\n2:print 1;\n", false, false)
		if o.file != "/repo/printenv.pl" || o.fileLines != 5 {
			t.Fatalf("%+v", o)
		}
	})
}

func TestParseRecords(t *testing.T) {
	rec := parseRecords(`{"reservation_id": "8C8K4E", "user_id": "amelia_davis_8890", "origin": "BOS", "cabin": "business", "flights": [{"origin": "BOS", "destination": "MIA", "flight_number": "HAT247", "date": "2024-05-24", "price": 904}, {"origin": "MIA", "destination": "DEN", "flight_number": "HAT193", "date": "2024-05-24", "price": 1906}], "passengers": [{"first_name": "Amelia", "last_name": "Davis", "dob": "1984-03-05"}], "payment_history": [{"payment_id": "gift_card_1647044", "amount": 5680}], "prices": {"economy": 163, "business": 235}, "insurance": "yes"}`, "")
	if len(rec) != 1 || rec[0].id != "8C8K4E" {
		t.Fatalf("%+v", rec)
	}
	// Each item keeps its route and price; the least detail, its id and
	// date.
	if got, _ := rec[0].briefValue("flights"); got != "HAT247, HAT193 2024-05-24" {
		t.Errorf("flights at the least detail = %q", got)
	}
	// A folded record's line keeps its items' ids with their dates.
	if got := idsOnly("HAT247 BOS-MIA 2024-05-24 904, HAT193 MIA-DEN 2024-05-24 1906"); got != "HAT247, HAT193 2024-05-24" {
		t.Errorf("idsOnly of the items = %q", got)
	}
	want := map[string]string{"origin": "BOS", "flights": "HAT247 BOS-MIA 2024-05-24 904, HAT193 MIA-DEN 2024-05-24 1906", "passengers": "Amelia Davis",
		"payment_history": "gift_card_1647044 5680", "prices": "economy 163, business 235", "insurance": "yes"}
	for k, v := range want {
		if got, _ := rec[0].value(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if got := rec[0].fields[0].name; got != "user_id" {
		t.Errorf("field order lost: first %q", got)
	}
	legs := parseRecords(`[[{"flight_number": "HAT069", "date": "2024-05-24"}, {"flight_number": "HAT011", "date": "2024-05-24"}]]`, "")
	if len(legs) != 1 || legs[0].id != "HAT069+HAT011" {
		t.Fatalf("%+v", legs)
	}
	if parseRecords("not json", "x") != nil || parseRecords(`{"a": 1} trailing`, "x") != nil {
		t.Fatal("non-JSON read as records")
	}
}

func TestClipNeverCutsAnIdentifier(t *testing.T) {
	got := clip("curl -X POST -d name=test http://web.chal.csaw.io:8000/cgi-bin/forms.pl", 50)
	if strings.Contains(got, "http://web") && !strings.Contains(got, "forms.pl") {
		t.Fatalf("a cut URL: %q", got)
	}
	if !strings.HasSuffix(got, "…") || len(got) > 50+len("…") {
		t.Fatalf("%q", got)
	}
}

func TestShellLabel(t *testing.T) {
	for in, want := range map[string]string{
		"cd /repo && pytest -q": "pytest -q",
		"cd reproduction\nsphinx-build -b text . _build/text\ncat _build/text/index.txt": "sphinx-build -b text . _build/text; cat _build/text/index.txt",
		"python -m pytest \\\n  tests/test_a.py &&\n  echo done":                         "python -m pytest tests/test_a.py && echo done",
		"cat <<'EOF' > x.py\nprint(1)\nEOF\npython x.py":                                 "cat <<'EOF' > x.py …(3 more lines)",
		"# comment\nls -la": "ls -la",
	} {
		if got := shellLabel(in); got != want {
			t.Errorf("shellLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPICallLabel(t *testing.T) {
	c := classifyCall("search_onestop_flight", `{"origin": "JFK", "destination": "SFO", "date": "2024-05-24"}`)
	if want := "search_onestop_flight(origin=JFK, destination=SFO, date=2024-05-24)"; c.label != want {
		t.Errorf("label %q, want %q (the call's own order)", c.label, want)
	}
	s := &step{f: &stepFacts{call: c}}
	if got, want := callText(s, 50), "search_onestop_flight(JFK, SFO, 2024-05-24)"; got != want {
		t.Errorf("callText at 50 = %q, want %q (values alone rather than cut)", got, want)
	}
}

// TestEditWhatOfAJoinedScript: a short script's label joins its lines with
// "; " (shellLabel), which must not end up in the edit's line range.
func TestEditWhatOfAJoinedScript(t *testing.T) {
	c := classifyCall("bash", `{"command": "edit 1:1\n#!/usr/bin/perl\nprint 1;\nend_of_edit\n"}`)
	if got := editWhat(c, output{}); got != "lines 1-1 replaced" {
		t.Fatalf("editWhat = %q (label %q)", got, c.label)
	}
}

// A definition picked as a key line carries the first line of its
// docstring, and that line is not picked again on its own.
func TestDocstringAfter(t *testing.T) {
	lines := []string{
		"def to_path(value):",
		`    """Convert value to a pathlib.Path instance, if not already a Path."""`,
		"    if isinstance(value, Path):",
		"   1148\t    def rel_db_type(self, connection):",
		`   1149	        """`,
		"   1150\t        Return the data type that a related field pointing to this field should",
		"   1151\t        use.",
		"def bare(x):",
		"    return x",
		"x = f(1)",
	}
	for _, tc := range []struct {
		i   int
		doc string
		at  int
	}{
		{0, ` """Convert value to a pathlib.Path instance, if not already a Path."""`, 1},
		{3, ` """Return the data type that a related field pointing to this field should…"""`, 5},
		{7, "", -1},
		{9, "", -1},
	} {
		if doc, at := docstringAfter(lines, tc.i); doc != tc.doc || at != tc.at {
			t.Errorf("docstringAfter(%d) = %q, %d; want %q, %d", tc.i, doc, at, tc.doc, tc.at)
		}
	}
	s := &step{f: &stepFacts{}, react: "So `to_path` converts a string; Path('') becomes Path('.'), a pathlib.Path instance."}
	s.f.out.lines = lines[:3]
	s.reactWords = readText(s.react).words
	got := findSalient(s, 2)
	want := []string{`def to_path(value): """Convert value to a pathlib.Path instance, if not already a Path."""`}
	if !slices.Equal(got, want) {
		t.Errorf("findSalient = %q, want %q", got, want)
	}
}
