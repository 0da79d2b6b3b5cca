package brief

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestListText(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"ls -R of a small tree: each directory's names, every entry counted",
			"/workspace:\r\nREADME.md\t  package-lock.json  src\r\nindex.html\t  public\r\n\r\n/workspace/src:\r\nApp.css  App.tsx  main.tsx  assets\r\n\r\n/workspace/src/assets:\r\nreact.svg\r\n",
			"README.md package-lock.json src index.html public | src: App.css App.tsx main.tsx assets | src/assets: react.svg (10 entries)"},
		{"ls -R of a large tree: the top level's names, every entry counted",
			".:\nREADME.md src\n\n./src:\n" + strings.Repeat("a.py b.py c.py d.py e.py\n", 10),
			"README.md src (52 entries)"},
		{"build artifacts left out",
			"__init__.py __pycache__/ _utils.c _utils.cpython-39-x86_64-linux-gnu.so* card.py",
			"__init__.py _utils.c card.py (5 entries)"},
		{"one per line", "a.py\nb.py\n", "a.py b.py"},
		{"a shell prompt left at the end is no entry",
			"/workspace:\r\nREADME.md\t  src\r\nindex.html\t  public\r\n\r\nroot@b365937733b2:/workspace # ",
			"README.md src index.html public (4 entries)"},
		{"a listing the harness cut is counted as more than it shows",
			"<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n</warning><output_head>\n.:\nREADME.rst\nsetup.py\n</output_head>\n<elided_chars>\n67261 characters elided\n</elided_chars>\n<output_tail>\n./tests:\ntest_a.py\ntest_b.py\n</output_tail>",
			"README.rst setup.py (over 4 entries)"},
	} {
		o := readOutput(c.out, false, true)
		if got := listText(&o, levelFull); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A listing longer than the lines an output keeps is counted whole.
func TestListTextCountsTheWholeOutput(t *testing.T) {
	var b strings.Builder
	b.WriteString(".:\nsrc\ntests\n\n./src:\n")
	for i := range 400 {
		fmt.Fprintf(&b, "mod%03d.py\n", i)
	}
	o := readOutput(b.String(), false, true)
	if got, want := listText(&o, levelFull), "src tests (402 entries)"; got != want {
		t.Errorf("listText = %q, want %q", got, want)
	}
}

// The index lists its names by kind (files, other names, exceptions,
// links), best first within each kind; the record in the same order.
func TestGroupIndex(t *testing.T) {
	ids := []string{"ValueError", "django.conf", "https://code.djangoproject.com/ticket/33285", "tests/test_a.py",
		"Field.db_parameters", "settings.py", "django.core.exceptions.ValidationError", "get_dirs()", "varchar(22)"}
	want := "tests/test_a.py, settings.py, django.conf, Field.db_parameters, get_dirs(), varchar(22), " +
		"ValueError, django.core.exceptions.ValidationError, https://code.djangoproject.com/ticket/33285"
	if got := strings.Join(groupIndex(ids), ", "); got != want {
		t.Errorf("groupIndex:\n got %q\nwant %q", got, want)
	}
	if got := indexNames(want); len(got) != len(ids) {
		t.Errorf("indexNames read %d names back, want %d: %q", len(got), len(ids), got)
	}
}

// The record's index lists what the text's index line lists, in the same
// order, and nothing when the text has none: a later briefing folds an
// earlier one from either.
func TestRecordIndexMatchesText(t *testing.T) {
	count := counter(t)
	seen := 0
	for name, msgs := range histories(t) {
		head, span := headAndSpan(msgs)
		for _, budget := range []int{300, 500, 1500} {
			d, err := Write(context.Background(), Input{Head: head, Span: span, BudgetTokens: budget, CountTokens: count})
			if err != nil {
				t.Fatal(err)
			}
			var r Record
			if err := json.Unmarshal(d.Structured, &r); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var fromText []string
			for _, line := range strings.Split(d.Text, "\n") {
				if sec, rest, ok := sectionLine(line); ok && sec == secIndex {
					fromText = indexNames(rest)
				}
			}
			if !slices.Equal(r.Index, fromText) {
				t.Fatalf("%s at %d tokens: the record's index %q, the text's %q", name, budget, r.Index, fromText)
			}
			seen += len(fromText)
		}
	}
	if seen == 0 {
		t.Fatal("no briefing had an index")
	}
}

// Above the least detail a listing whose names fit in a few lines' room
// is told whole: a name cut off cannot be told from one not there (is
// there a build/?). At the least detail, and for a longer one, its first
// names and the count.
func TestListTextWhole(t *testing.T) {
	names := "BUILD.md CHANGELOG.md CMakeLists.txt CODE_OF_CONDUCT.md CONTRIBUTING.md EDITORS.md INSTALL.md INSTALL_DOCKER.md LICENSE Makefile README.md RELEASE_PROCESS.md STYLE_GUIDE.md SUPPORT.md VERSION benchmark examples lib make.ps1 minimal-cases packages src test"
	o := readOutput(strings.ReplaceAll(names, " ", "\n"), false, true)
	if got := listText(&o, levelShort); got != names+" (23 entries)" {
		t.Errorf("listText = %q, want every name", got)
	}
	if got := listText(&o, levelMin); !strings.HasSuffix(got, "(23 entries)") {
		t.Errorf("at the least detail: %q, want the first names and the count", got)
	}
	long := strings.Repeat("some_long_module_name.py ", 14)
	o = readOutput(strings.ReplaceAll(strings.TrimSpace(long), " ", "\n"), false, true)
	if got := listText(&o, levelShort); !strings.HasSuffix(got, "(14 entries)") {
		t.Errorf("a long listing: %q, want its count", got)
	}
}
