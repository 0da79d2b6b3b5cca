package eval

import (
	"os"

	"github.com/briefd/briefd"
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
	// Regression guards at the figures measured on the shared data (see
	// docs/briefings.md): the size target, and recall not falling back.
	if s.MedianRatio > 0.10 {
		t.Errorf("median size ratio %.3f > 0.10", s.MedianRatio)
	}
	if s.MeanFutureRecall < 0.88 || s.PooledNamedRecall < 0.92 {
		t.Errorf("future recall fell: mean %.3f, pooled without bare numbers %.3f", s.MeanFutureRecall, s.PooledNamedRecall)
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
	msgs := []briefd.Message{
		{ID: "s", Role: briefd.RoleSystem}, {ID: "u", Role: briefd.RoleUser},
		{ID: "a", Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{{ID: "c1"}, {ID: "c2"}}},
		{ID: "t1", Role: briefd.RoleTool, ToolCallID: "c1"}, {ID: "t2", Role: briefd.RoleTool, ToolCallID: "c2"},
		{ID: "a2", Role: briefd.RoleAssistant},
	}
	tests := []struct {
		at   float64
		want int
	}{{0.5, 5}, {0.6, 5}, {0.7, 5}, {0.34, 2}, {0.9, 5}, {0.99, 6}}
	for _, tt := range tests {
		if got := freezeAt(msgs, tt.at); got != tt.want {
			t.Errorf("freezeAt(%v) = %d, want %d", tt.at, got, tt.want)
		}
	}
}

func TestBareNumber(t *testing.T) {
	for id, want := range map[string]bool{"12288": true, "0.004": true, "2024-05-19": false, "HAT174": false, "v1.2": false} {
		if got := bareNumber(id); got != want {
			t.Errorf("bareNumber(%q) = %v", id, got)
		}
	}
}
