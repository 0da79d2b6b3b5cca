package cascade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/brief"
	"github.com/briefd/briefd/internal/compact"
)

// TestRealHistoriesSerialize serializes the shared real conversations: every
// message appears once, no content forges a tag, and the input bound holds.
func TestRealHistoriesSerialize(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/data/histories/*.json")
	if len(files) == 0 {
		t.Skip("../../../shared/data/histories is absent")
	}
	cfg := Config{Models: []ModelConfig{{Name: "m"}}, Identifiers: testIdentifiers}.WithDefaults()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := briefd.ParseHistory(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		in := compact.SummaryInput{Span: h.Messages, Draft: &brief.Draft{}}
		r := &run{c: &Cascade{cfg: cfg}, in: in}
		s := r.serialize(cfg.MaxMessageChars)
		if len(s) > cfg.MaxInputChars && !strings.Contains(s, "chars clipped") {
			t.Errorf("%s: %d chars, over the bound and unclipped", f, len(s))
		}
		if got := strings.Count(s, "</message>"); got != len(h.Messages) {
			t.Errorf("%s: %d </message> for %d messages (a content forged a tag)", f, got, len(h.Messages))
		}
		src := newSource(in, "")
		for i, m := range h.Messages {
			if !strings.Contains(s, `<message id="`+m.ID+`"`) {
				t.Errorf("%s: message %s missing", f, m.ID)
			}
			if sm := src.msgs[m.ID]; sm != nil && i%8 == 0 {
				src.evidence(sm) // must not panic on real content
			}
		}
	}
}
