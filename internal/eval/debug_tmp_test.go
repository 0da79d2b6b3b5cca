package eval

import (
	"os"
	"testing"
)

func TestDebugMissed(t *testing.T) {
	if os.Getenv("EVAL_MISSED") == "" {
		t.Skip()
	}
	files, err := Files(sharedHistories)
	if err != nil {
		t.Skip()
	}
	rep, err := Run(t.Context(), files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Conversations {
		if len(c.FutureMissed) > 0 {
			t.Logf("%s %.3f missed %d/%d: %q", c.ID, c.FutureRecall, len(c.FutureMissed), c.FutureIdentifiers, c.FutureMissed)
		}
	}
}

func TestDebugShow(t *testing.T) {
	name := os.Getenv("EVAL_SHOW")
	if name == "" {
		t.Skip()
	}
	rep, err := Run(t.Context(), []string{sharedHistories + "/" + name + ".json"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Conversations[0]
	t.Logf("span %d brief %d missed %q\n%s", c.SpanTokens, c.BriefingTokens, c.FutureMissed, c.Briefing)
}
