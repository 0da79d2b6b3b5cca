package eval

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// identCases are edge cases of the Python patterns: backtracking around a
// failed \b, Unicode word characters and digits, Python's \s, overlapping
// neighbours. want is what eval_quality.identifiers returns (Python 3.11).
var identCases = []struct {
	text string
	want []string
}{
	{"see a/b.c/d.efghijkl and x/y.py", []string{"a/b.c", "x/y.py"}},
	{"a/b.py.c/d.txt", []string{"a/b.py.c/d.txt"}},
	{"foo/bar.pyé and foo/bar.py_x and foo/bar.py-x", []string{"foo/bar.py"}},
	{"FooError BarError_x ÉFooError FooErrorX 1FooError KeyError: ValueError.", []string{"FooError", "KeyError", "ValueError"}},
	{"HAT123 HAT1234567 ABC12é ZFA04Y_ xHAT123 HAT123x AAAAA 12345 A1B2C3D4E5F", []string{"12345", "HAT123", "HAT1234567"}},
	{"1.2.3a 1.2a 3.14159. v1.2.3 ١٢٣٤٥ 12345 ٣.٤٥ 2024-05-19 10.0.0.1", []string{"10.0.0.1", "12345", "14159", "2024", "3.14159", "١٢٣٤٥", "٣.٤٥"}},
	{"auth.E003 Xauth.E003 auth.E0034 auth.E003x", []string{"E0034", "auth.E003"}},
	{"https://example.com/a?b=1&c=2). http://x.y/z\u00a0tail https://q.r/s\u2003t", []string{"http://x.y/z", "https://example.com/a?b=1&c=2", "https://q.r/s"}},
	{"path/to/file.tar.gz src/módulo/x.py ./App.css ../a/b.tsx", []string{"../a/b.tsx", "./App.css", "dulo/x.py", "path/to/file.tar"}},
	{"²³⁴⁵ 1234² ½1234", nil},
	{"HAT001 HAT002", []string{"HAT001", "HAT002"}},
	{"", nil},
}

func sortedIDs(s idSet) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestIdentifiers(t *testing.T) {
	for _, c := range identCases {
		got := sortedIDs(identifiers(c.text))
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("identifiers(%q)\n got %q\nwant %q", c.text, got, c.want)
		}
	}
}

// sharedTools is ../shared/tools from the package directory.
const sharedTools = "../../../shared/tools"

// python returns the python3 to run the yardsticks with, or skips.
func python(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sharedTools, "eval_quality.py")); err != nil {
		t.Skip("../shared/tools absent: ", err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 absent")
	}
	return py
}

// TestIdentifiersAgreeWithPython runs eval_quality.identifiers on the edge
// cases and on every message of the shared histories, and compares.
func TestIdentifiersAgreeWithPython(t *testing.T) {
	py := python(t)
	files, err := Files(sharedHistories)
	if err != nil {
		t.Skip("shared histories absent: ", err)
	}
	if testing.Short() {
		files = files[:5]
	}
	var texts []string
	for _, c := range identCases {
		texts = append(texts, c.text)
	}
	for _, f := range files {
		h, err := readHistory(f)
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Messages {
			texts = append(texts, msgText(&h.Messages[i]))
		}
	}
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := filepath.Abs(sharedTools)
	cmd := exec.CommandContext(t.Context(), py, "-c", `import json, sys
sys.path.insert(0, sys.argv[1])
from eval_quality import identifiers
json.dump([sorted(identifiers(t)) for t in json.load(sys.stdin)], sys.stdout)`, tools)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want [][]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(texts) {
		t.Fatalf("python answered %d texts of %d", len(want), len(texts))
	}
	bad := 0
	for i, text := range texts {
		got := sortedIDs(identifiers(text))
		if !slices.Equal(got, want[i]) && !(len(got) == 0 && len(want[i]) == 0) {
			if bad++; bad <= 5 {
				t.Errorf("text %d (%.80q...):\n go     %q\n python %q", i, text, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d texts differ", bad, len(texts))
	}
	t.Logf("%d texts agree", len(texts))
}

func TestIsNumber(t *testing.T) {
	for id, want := range map[string]bool{"12288": true, "0.004": true, "١٢٣٤": true, "2024-05-19": false, "HAT174": false, "v1.2": false, "": false} {
		if got := isNumber(id); got != want {
			t.Errorf("isNumber(%q) = %v", id, got)
		}
	}
}

const sharedHistories = "../../../shared/data/histories"
