// Package progress draws a progress bar for a person at a terminal, and
// nothing otherwise: a command run by a script, in a container or with its
// output in a log keeps that output free of redraws.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// redrawEvery bounds how often the bar is redrawn.
const redrawEvery = 100 * time.Millisecond

// width is the bar's width in cells.
const width = 30

// Bar is a one-line progress bar: label, bar, done/total, percent,
// elapsed time and an estimate of the time left. It is safe for
// concurrent use. A Bar that is off (see New) does nothing.
type Bar struct {
	w     io.Writer
	on    bool
	label string
	now   func() time.Time

	mu    sync.Mutex
	note  func() string
	total int
	done  int
	start time.Time
	last  time.Time
	drawn int // length of the last line drawn, to blank it out
}

// New returns a bar drawing on w when w is a terminal (an *os.File on a
// tty, TERM not "dumb"), and a bar that draws nothing otherwise. total is
// the work to do; 0 when not known yet (see SetTotal).
func New(w io.Writer, label string, total int) *Bar {
	return newBar(w, label, total, isTerminal(w))
}

// Forced returns a bar that draws on w whatever w is; tests use it.
func Forced(w io.Writer, label string, total int, now func() time.Time) *Bar {
	b := newBar(w, label, total, true)
	b.now = now
	b.start = now()
	return b
}

func newBar(w io.Writer, label string, total int, on bool) *Bar {
	return &Bar{w: w, on: on, label: label, total: total, now: time.Now, start: time.Now()}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// On reports whether the bar draws.
func (b *Bar) On() bool { return b.on }

// SetNote makes the bar end with note's text, asked at each redraw (a
// count of errors, say).
func (b *Bar) SetNote(note func() string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.note = note
}

// SetTotal sets the work to do.
func (b *Bar) SetTotal(n int) {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total = n
	b.drawLocked(false)
}

// Set records done units of total and redraws, at most every 100 ms.
func (b *Bar) Set(done, total int) {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done, b.total = done, total
	b.drawLocked(false)
}

// Add records n more units done and redraws, at most every 100 ms.
func (b *Bar) Add(n int) {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	b.drawLocked(false)
}

// Finish draws the final state and ends the line, so that what the
// command prints next starts on a line of its own.
func (b *Bar) Finish() {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drawLocked(true)
	fmt.Fprintln(b.w)
}

func (b *Bar) drawLocked(force bool) {
	now := b.now()
	if !force && now.Sub(b.last) < redrawEvery && b.done < b.total {
		return
	}
	b.last = now
	line := b.line(now)
	pad := ""
	if n := b.drawn - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(b.w, "\r%s%s", line, pad)
	b.drawn = len(line)
}

// line renders the bar's current state.
func (b *Bar) line(now time.Time) string {
	elapsed := now.Sub(b.start).Round(time.Second)
	if b.total <= 0 {
		s := fmt.Sprintf("%s %d done, %s", b.label, b.done, elapsed)
		if b.note != nil {
			s += "  " + b.note()
		}
		return s
	}
	frac := min(float64(b.done)/float64(b.total), 1)
	full := int(frac * width)
	bar := strings.Repeat("=", full)
	if full < width {
		bar += ">" + strings.Repeat(" ", width-full-1)
	}
	s := fmt.Sprintf("%s [%s] %d/%d (%.0f%%) %s", b.label, bar, b.done, b.total, 100*frac, elapsed)
	if b.done > 0 && b.done < b.total {
		left := time.Duration(float64(now.Sub(b.start)) / float64(b.done) * float64(b.total-b.done)).Round(time.Second)
		s += fmt.Sprintf(", ~%s left", left)
	}
	if b.note != nil {
		s += "  " + b.note()
	}
	return s
}
