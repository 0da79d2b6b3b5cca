package brief

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// createAndRun writes path with body through the editor, then runs it:
// a scratch file gets a FILES line of its own when it has a last run.
func createAndRun(t *testing.T, path, body, run string) string {
	t.Helper()
	a, _ := json.Marshal(map[string]string{"command": "create", "path": path, "file_text": body})
	var b spanBuilder
	b.step("Write it.", "str_replace_editor", string(a), "File created successfully at: "+path)
	if run == "" {
		b.bash("Fix a word.", "sed -i 's/Fix notes/Fix log/' "+path, rc(0, "")) // a changed file has a line
	} else {
		b.bash("Run it.", run+" "+path, rc(1, "Error: boom"))
	}
	d := write(t, b.msgs, 900)
	for _, l := range strings.Split(d.Text, "\n") {
		if strings.HasPrefix(l, "- "+path+": ") {
			return l
		}
	}
	t.Fatalf("no FILES line of %s:\n%s", path, d.Text)
	return ""
}

const pad = "\n\n\n\n\n\n\n\n\n\n"

// A file of docstrings has no gist: its text is not what it runs.
func TestGistSkipsDocstrings(t *testing.T) {
	l := createAndRun(t, "/w/notes.py", "\"\"\"\nUsage: run repro(x) to see the bug.\nThen call fix(y).\nSee issue (#123).\nIt fails on 1.2.\n\"\"\""+pad, "python")
	mustNotContain(t, l, "runs `Usage: run repro(x)") // "comments or docstrings only, no code; runs `Usage: …`"
}

// Notes and other files that are not scripts have no gist.
func TestGistOnlyForScripts(t *testing.T) {
	l := createAndRun(t, "/w/NOTES.md", "# Fix notes\n\n- `KBinsDiscretizer(strategy='kmeans')` returns unsorted edges\n- fixed by sorting (see np.sort)"+pad, "")
	mustNotContain(t, l, "runs `- `KBins", "`- fixed by sorting (see np.sort)`")
}

// Code a script holds as text (a string literal it writes out) is not
// what it runs.
func TestGistSkipsStringLiterals(t *testing.T) {
	l := createAndRun(t, "/w/repro.py", "import subprocess\ncode = '''\nresult = compute(1)\nassert result == 2\n'''\nopen('t.py', 'w').write(code)\nsubprocess.run(['python', 't.py'])"+pad, "python")
	mustNotContain(t, l, "`result = compute(1)`")
}

// A call whose arguments go on below is closed where it is cut.
func TestGistClosesMultilineCalls(t *testing.T) {
	l := createAndRun(t, "/w/repro.py", "import numpy as np\nX = np.array([\n    [0, 1],\n])\ndf = pd.DataFrame({\n  'a': [1],\n})\nres = compute(X,\n              df)\nprint(res)"+pad, "python")
	mustNotContain(t, l, "`X = np.array([`", "`df = pd.DataFrame({`", "`res = compute(X,`")
}

// In JavaScript require() is an import, a statement with backticks is not
// quoted in backticks, and a shell function's opening is not what runs.
func TestGistOtherLanguages(t *testing.T) {
	js := createAndRun(t, "/w/repro.js", "const assert = require('assert');\nconst { parse } = require('./lib');\nconst out = parse(`x(${1})`);\nconsole.log(out);"+pad, "node")
	mustNotContain(t, js, "`const assert = require('assert');`", "`const out = parse(`x(${1})`);`")
	sh := createAndRun(t, "/w/repro.sh", "#!/bin/bash\nrun_case() {\n  python -c \"$1\"\n}\nrun_case 'import x'"+pad, "bash")
	mustNotContain(t, sh, "runs `run_case() {`")
}

// An edit may change the statements a gist quotes: it is dropped.
func TestGistDroppedByEdit(t *testing.T) {
	body := "import numpy as np\nX = np.array([0, 0.5, 2, 3, 9, 10]).reshape(-1, 1)\nest = KBinsDiscretizer(n_bins=5, strategy='kmeans')\nXt = est.fit_transform(X)\nprint(Xt)" + pad
	a, _ := json.Marshal(map[string]string{"command": "create", "path": "/w/repro.py", "file_text": body})
	var b spanBuilder
	b.step("Write it.", "str_replace_editor", string(a), "File created successfully at: /w/repro.py").
		bash("Fewer bins.", "sed -i 's/n_bins=5/n_bins=3/' /w/repro.py", rc(0, "")).
		bash("Run.", "python /w/repro.py", rc(0, "[[0.] [1.] [2.]]"))
	d := write(t, b.msgs, 900)
	mustNotContain(t, d.Text, "KBinsDiscretizer(n_bins=5")
}

// The file's line cuts its gist between whole quotes.
func TestGistClippedBetweenQuotes(t *testing.T) {
	body := "import numpy as np\nX = np.array([0, 0.5, 2, 3, 9, 10, 11, 12, 15]).reshape(-1, 1)\nest = KBinsDiscretizer(n_bins=5, strategy='kmeans', encode='ordinal')\nXt = est.fit_transform(X)\nprint(Xt)" + pad
	a, _ := json.Marshal(map[string]string{"command": "create", "path": "/w/repro.py", "file_text": body})
	var b spanBuilder
	b.step("Write it.", "str_replace_editor", string(a), "File created successfully at: /w/repro.py").
		bash("Run.", "python /w/repro.py", rc(1, "Error: boom"))
	m, err := buildModel(context.Background(), nil, b.msgs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := fileText(m.file("/w/repro.py", false), levelShort, false)
	if strings.Count(l, "`")%2 != 0 {
		t.Errorf("unbalanced code quote: %s", l)
	}
}

// Whether a cut leaves a conclusion's first words alone is measured on
// the cut clip makes, which backs up to a space.
func TestClipNoteMeasuresTheCut(t *testing.T) {
	note := "The kmeans strategy computes bin edges from the cluster centers, which come back unsorted from KMeans. " +
		"So `sklearn.preprocessing._discretization.KBinsDiscretizer.fit` must sort the centers before it takes their midpoints."
	if got := clipNote(note, 140); strings.HasSuffix(got, "So…") {
		t.Errorf("clipNote(140) = %q", got)
	}
}

// A table row keeps every flight of a long list at full detail, by ids
// and days where the legs told whole do not fit, and every payment's id
// at the short level.
func TestTableRowKeepsIDs(t *testing.T) {
	resv := func(id string, stops []string, pays string) string {
		var legs []string
		for i := 0; i+1 < len(stops); i++ {
			legs = append(legs, fmt.Sprintf(`{"origin": "%s", "destination": "%s", "flight_number": "HAT%03d", "date": "2024-05-%02d", "price": %d}`, stops[i], stops[i+1], 30+i, 13+i, 160+i))
		}
		return `{"reservation_id": "` + id + `", "user_id": "james_lee_6136", "origin": "` + stops[0] + `", "destination": "` + stops[len(stops)-1] + `", "flight_type": "one_way", "cabin": "economy", "flights": [` + strings.Join(legs, ", ") + `], "payment_history": [` + pays + `], "insurance": "yes"}`
	}
	var b spanBuilder
	b.user("My user id is james_lee_6136. What did my reservations XEWRD9 and ABC123 cost?").
		step("", "get_reservation_details", `{"reservation_id": "XEWRD9"}`, resv("XEWRD9", []string{"LAX", "ORD", "ATL", "DFW", "DEN", "SEA", "PHX", "JFK"},
			`{"payment_id": "credit_card_4421307", "amount": 500}, {"payment_id": "gift_card_7091239", "amount": 187}, {"payment_id": "certificate_3311094", "amount": 100}`)).
		step("", "get_reservation_details", `{"reservation_id": "ABC123"}`, resv("ABC123", []string{"JFK", "ORD", "ATL", "DFW", "DEN", "SEA", "PHX", "LAX"},
			`{"payment_id": "credit_card_4421307", "amount": 900}`))
	mustContain(t, recordLine(t, write(t, b.msgs, 3000).Text, "XEWRD9"), "HAT036")
	mustContain(t, recordLine(t, write(t, b.msgs, 400).Text, "XEWRD9"), "gift_card_7091239", "certificate_3311094")
}

// A recursive listing's absolute directory keeps its leading "/".
func TestTreeAbsoluteHeader(t *testing.T) {
	o := readOutput("README.md\nsetup.py\n\n/w/proj/src:\na.py\nb.py\n\n/w/proj/tests:\nt.py\n", false, true)
	mustNotContain(t, listText(&o, levelFull), "| w/proj/src:")
}
