package queue

import (
	"errors"
	"sync"
	"testing"
)

// A later snapshot adopts the bodies an earlier one failed to store, reading
// them once the earlier one's bodiesDone is closed. The earlier one's owner
// goes on after that: it appends the bodies it adopts itself and re-sends
// them. What the later one reads is what was stored or failed when
// bodiesDone closed, not those (a torn read of the growing slice crashed a
// publisher in the nemesis run), and reading it races with nothing (go test
// -race).
func TestFailedBodiesOfReadsWhatBodiesDoneClosedOn(t *testing.T) {
	failed := errors.New("no responders")
	mine := &sentBody{hash: "h1", subject: "b.h1", err: failed}
	p := &Pending{bodies: []*sentBody{mine}, bodiesDone: make(chan struct{})}
	p.stored = p.bodies[:len(p.bodies):len(p.bodies)]
	close(p.bodiesDone)

	list := []pubEntry{{Entry: Entry{Hash: "h1"}}, {Entry: Entry{Hash: "h2"}}}
	// The owner adopted h2 from its own dependency after closing.
	p.bodies = append(p.bodies, &sentBody{hash: "h2", subject: "b.h2", err: failed})
	if got := p.failedBodiesOf(list, nil, nil); len(got) != 1 || got[0].hash != "h1" {
		t.Fatalf("adopted %d bodies, want h1's alone: the owner's later ones are its own to send", len(got))
	}
	// The same while the owner appends (for go test -race).
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the owner, adopting h2 from its own dependency
		defer wg.Done()
		for i := 0; i < 100; i++ {
			p.bodies = append(p.bodies, &sentBody{hash: "h2", subject: "b.h2", err: failed})
		}
	}()
	var got []*sentBody
	for i := 0; i < 100; i++ {
		<-p.bodiesDone
		got = p.failedBodiesOf(list, nil, nil)
	}
	wg.Wait()
	if len(got) != 1 || got[0].hash != "h1" || !errors.Is(got[0].err, failed) {
		t.Fatalf("adopted %d bodies (%v), want h1's alone", len(got), got)
	}
}
