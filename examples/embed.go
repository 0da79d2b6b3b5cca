// Package examples holds a few real agent histories, embedded in the
// binary, so that the demo (go run ./cmd/publisher demo) runs from a fresh
// clone with no other files. histories/README.md names each file's source
// and license.
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/briefd/briefd"
)

//go:embed histories/*.json
var files embed.FS

// Histories parses every embedded history, in file name order. Each is
// checked with briefd.Validate; an error names the file.
func Histories() ([]*briefd.History, error) {
	names, err := fs.Glob(files, "histories/*.json")
	if err != nil {
		return nil, fmt.Errorf("examples: list histories: %w", err)
	}
	sort.Strings(names)
	out := make([]*briefd.History, 0, len(names))
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("examples: read %s: %w", name, err)
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			return nil, fmt.Errorf("examples: %s: %w", path.Base(name), err)
		}
		if err := briefd.Validate(h.Messages, briefd.Limits{}); err != nil {
			return nil, fmt.Errorf("examples: %s: %w", path.Base(name), err)
		}
		out = append(out, h)
	}
	return out, nil
}
