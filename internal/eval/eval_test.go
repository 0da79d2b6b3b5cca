package eval

import (
	"os"
	"strings"
	"testing"
)

const sharedHistories = "../../../shared/data/histories"

func TestRunShared(t *testing.T) {
	files, err := Files(sharedHistories)
	if err != nil {
		t.Skip("shared histories absent: ", err)
	}
	rep, err := Run(t.Context(), files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("EVAL_PRINT") != "" {
		t.Log("\n" + b.String())
	}
	s := rep.Summary
	if s.Compacted == 0 {
		t.Fatal("nothing compacted")
	}
	if s.Fabricated != 0 {
		for _, c := range rep.Conversations {
			if len(c.Fabricated) > 0 {
				t.Errorf("%s: fabricated %q", c.ID, c.Fabricated)
			}
		}
	}
	if s.ToolPairsIntact != 1 {
		t.Errorf("tool pairs intact %.3f", s.ToolPairsIntact)
	}
	if s.UserVerbatim+s.UserShortened != s.UserMessages {
		t.Errorf("user messages carried %d+%d of %d", s.UserVerbatim, s.UserShortened, s.UserMessages)
		for _, c := range rep.Conversations {
			if c.UserVerbatim+c.UserShortened != c.UserMessages {
				t.Logf("%s: users %d+%d of %d", c.ID, c.UserVerbatim, c.UserShortened, c.UserMessages)
			}
		}
	}
}

func TestFreezeAt(t *testing.T) {
	// covered through Run; freezeAt never stops on a tool result
}
