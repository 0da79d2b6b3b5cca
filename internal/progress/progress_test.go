package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBar(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	b := Forced(&buf, "replay", 4, clock)
	now = now.Add(2 * time.Second)
	b.Add(1)
	if got := buf.String(); !strings.Contains(got, "\rreplay [=======>") || !strings.Contains(got, "1/4 (25%) 2s, ~6s left") {
		t.Fatalf("after one of four: %q", got)
	}
	buf.Reset()
	b.Add(1) // within 100 ms of the last draw: not redrawn
	if buf.Len() != 0 {
		t.Fatalf("redrawn too soon: %q", buf.String())
	}
	now = now.Add(time.Second)
	b.Add(2)
	b.Finish()
	if got := buf.String(); !strings.Contains(got, "4/4 (100%) 3s") || !strings.HasSuffix(got, "\n") || strings.Contains(got, "left") {
		t.Fatalf("finished: %q", got)
	}
}

// A bar on something that is not a terminal (a log file, a pipe, a
// buffer) draws nothing.
func TestBarOffOutsideTerminal(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "eval", 3)
	b.Add(1)
	b.SetTotal(5)
	b.Finish()
	if b.On() || buf.Len() != 0 {
		t.Fatalf("a bar on a buffer drew %q", buf.String())
	}
}

// Set moves the bar to a given point, as eval reports "conversation i of n".
func TestBarSet(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := Forced(&buf, "eval", 0, func() time.Time { return now })
	b.SetNote(func() string { return "tau-bench-16" })
	now = now.Add(time.Second)
	b.Set(3, 6)
	if got := buf.String(); !strings.Contains(got, "3/6 (50%) 1s, ~1s left  tau-bench-16") {
		t.Fatalf("set: %q", got)
	}
}
