package brief

import "testing"

func TestListText(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"ls -R: the top level's names, every entry counted",
			"/workspace:\r\nREADME.md\t  package-lock.json  src\r\nindex.html\t  public\r\n\r\n/workspace/src:\r\nApp.css  App.tsx  main.tsx\r\n",
			"README.md package-lock.json src index.html public (8 entries)"},
		{"build artifacts left out",
			"__init__.py __pycache__/ _utils.c _utils.cpython-39-x86_64-linux-gnu.so* card.py",
			"__init__.py _utils.c card.py (5 entries)"},
		{"one per line", "a.py\nb.py\n", "a.py b.py"},
	} {
		o := readOutput(c.out, false)
		if got := listText(&o, levelFull); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
