// Package cachetest is a conformance suite for briefing stores, in the style
// of testing/slogtest: any implementation of [Store] should pass [Run], and
// [RunExpiry] when it supports a configurable TTL.
package cachetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
)

// Store is the contract the suite checks; see the cache package
// documentation.
type Store interface {
	Put(ctx context.Context, b *briefd.Briefing) (latest bool, err error)
	Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error)
	Get(ctx context.Context, tenant, conv, boundaryID string) (*briefd.Briefing, error)
	Watch(ctx context.Context, tenant, conv string) (<-chan *briefd.Briefing, error)
	PutStatus(ctx context.Context, st *briefd.Status) error
	Status(ctx context.Context, tenant, conv string) (*briefd.Status, error)
}

// waitTimeout bounds every wait on a Watch channel or on expiry.
const waitTimeout = 10 * time.Second

// Run runs the suite. newStore is called once per subtest and must return an
// empty store (or one that no other subtest writes to).
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"PutGetLatest", testPutGetLatest},
		{"NotFound", testNotFound},
		{"InvalidBriefing", testInvalid},
		{"MonotonicOutOfOrder", testMonotonic},
		{"TieRule", testTieRule},
		{"NewestSnapshotWins", testNewestSnapshotWins},
		{"ConcurrentWriters", testConcurrentWriters},
		{"WatchInOrder", testWatch},
		{"WatchStartsWithLatest", testWatchStartsWithLatest},
		{"WatchMany", testWatchMany},
		{"WatchSameConversationTwice", testWatchTwice},
		{"Isolation", testIsolation},
		{"OddIDs", testOddIDs},
		{"Status", testStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

// RunExpiry checks that briefings expire: newStore must return a store whose
// TTL is ttl.
func RunExpiry(t *testing.T, newStore func(t *testing.T, ttl time.Duration) Store) {
	s := newStore(t, time.Second)
	ctx := t.Context()
	b := briefing("t", "expiring", "m5", 5)
	mustPut(t, s, b, true)
	mustEqual(t, mustLatest(t, s, "t", "expiring"), b)

	deadline := time.Now().Add(waitTimeout)
	for {
		_, errL := s.Latest(ctx, "t", "expiring")
		_, errG := s.Get(ctx, "t", "expiring", "m5")
		if errors.Is(errL, cache.ErrNotFound) && errors.Is(errG, cache.ErrNotFound) {
			return
		}
		for _, err := range []error{errL, errG} {
			if err != nil && !errors.Is(err, cache.ErrNotFound) {
				t.Fatalf("while waiting for expiry: %v", err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("briefing with a 1s TTL still there after %v (latest err %v, get err %v)", waitTimeout, errL, errG)
		}
		time.Sleep(50 * time.Millisecond) // polling external state with a deadline
	}
}

// RunRetention checks that a store keeps the newest boundaries of a
// conversation and deletes older ones: newStore must return a store that
// keeps 3 boundaries per conversation. Boundaries are ordered as the
// latest briefing is: by their snapshot's time, else by position. The
// latest briefing's boundary is always kept.
func RunRetention(t *testing.T, newStore func(t *testing.T, maxBoundaries int) Store) {
	s := newStore(t, 3)
	ctx := t.Context()
	at := func(i int) time.Time { return time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC) }
	for i := range 10 {
		b := briefing("acme", "kept", fmt.Sprintf("m%d", i), int64(10+i))
		b.SnapshotSeq, b.SnapshotTime = uint64(i+1), at(i)
		mustPut(t, s, b, true)
	}
	// A late briefing of an old snapshot is stored, and trimmed at once.
	late := briefing("acme", "kept", "late", 5)
	late.SnapshotSeq, late.SnapshotTime = 1, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mustPut(t, s, late, false)
	for i := range 10 {
		_, err := s.Get(ctx, "acme", "kept", fmt.Sprintf("m%d", i))
		if kept := i >= 7; kept != (err == nil) {
			t.Errorf("boundary m%d: err = %v, want kept = %v", i, err, kept)
		}
	}
	_, err := s.Get(ctx, "acme", "kept", "late")
	wantNotFound(t, err, "the late boundary")
	if b := mustLatest(t, s, "acme", "kept"); b.BoundaryID != "m9" {
		t.Fatalf("latest is %s, want m9", b.BoundaryID)
	}
	// A boundary stored again by a newer snapshot moves up.
	again := briefing("acme", "kept", "m7", 17)
	again.SnapshotSeq, again.SnapshotTime = 11, at(11)
	mustPut(t, s, again, true)
	next := briefing("acme", "kept", "m10", 20)
	next.SnapshotSeq, next.SnapshotTime = 12, at(12)
	mustPut(t, s, next, true)
	for id, kept := range map[string]bool{"m7": true, "m8": false, "m9": true, "m10": true} {
		if _, err := s.Get(ctx, "acme", "kept", id); kept != (err == nil) {
			t.Errorf("after a re-put: boundary %s: err = %v, want kept = %v", id, err, kept)
		}
	}
	// Other conversations are not trimmed by this one's boundaries.
	other := briefing("acme", "other", "x", 1)
	mustPut(t, s, other, true)
	mustGet(t, s, "acme", "other", "x")
}

// briefing returns a realistic briefing; fixed values keep JSON round trips
// exact.
func briefing(tenant, conv, boundary string, pos int64) *briefd.Briefing {
	return &briefd.Briefing{
		ConversationID: conv,
		Tenant:         tenant,
		BoundaryID:     boundary,
		Position:       pos,
		Text:           fmt.Sprintf("Briefing of %s up to %s (position %d): the user asked for X; done: A, B.", conv, boundary, pos),
		Structured:     []byte(`{"goal":"X","done":["A","B"]}`),
		Tier:           briefd.TierDeterministic,
		EngineVersion:  "test",
		InputHash:      "0f1e2d",
		CompactedIDs:   []string{"m0", "m1"},
		TokensBefore:   1000,
		TokensAfter:    300,
		SpanTokens:     800,
		BriefingTokens: 100,
		CreatedAt:      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func mustPut(t *testing.T, s Store, b *briefd.Briefing, wantLatest bool) {
	t.Helper()
	latest, err := s.Put(t.Context(), b)
	if err != nil {
		t.Fatalf("Put(%s@%s, position %d): %v", b.ConversationID, b.BoundaryID, b.Position, err)
	}
	if latest != wantLatest {
		t.Fatalf("Put(%s@%s, position %d) latest = %v, want %v", b.ConversationID, b.BoundaryID, b.Position, latest, wantLatest)
	}
}

func mustLatest(t *testing.T, s Store, tenant, conv string) *briefd.Briefing {
	t.Helper()
	b, err := s.Latest(t.Context(), tenant, conv)
	if err != nil {
		t.Fatalf("Latest(%q, %q): %v", tenant, conv, err)
	}
	return b
}

func mustGet(t *testing.T, s Store, tenant, conv, boundary string) *briefd.Briefing {
	t.Helper()
	b, err := s.Get(t.Context(), tenant, conv, boundary)
	if err != nil {
		t.Fatalf("Get(%q, %q, %q): %v", tenant, conv, boundary, err)
	}
	return b
}

func mustEqual(t *testing.T, got, want *briefd.Briefing) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("briefing mismatch:\ngot  %+v\nwant %+v", got, want)
	}
}

func wantNotFound(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("%s: err = %v, want cache.ErrNotFound", what, err)
	}
}

func testPutGetLatest(t *testing.T, s Store) {
	b := briefing("acme", "c1", "m10", 10)
	mustPut(t, s, b, true)
	mustEqual(t, mustGet(t, s, "acme", "c1", "m10"), b)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b)

	// Single-tenant use: the empty tenant is a tenant like any other.
	b0 := briefing("", "c1", "m3", 3)
	mustPut(t, s, b0, true)
	mustEqual(t, mustLatest(t, s, "", "c1"), b0)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b)
}

func testNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	_, err := s.Latest(ctx, "acme", "nope")
	wantNotFound(t, err, "Latest of an unknown conversation")
	_, err = s.Get(ctx, "acme", "nope", "m1")
	wantNotFound(t, err, "Get of an unknown conversation")
	mustPut(t, s, briefing("acme", "c1", "m10", 10), true)
	_, err = s.Get(ctx, "acme", "c1", "m11")
	wantNotFound(t, err, "Get of an unknown boundary")
}

func testInvalid(t *testing.T, s Store) {
	ctx := t.Context()
	for name, b := range map[string]*briefd.Briefing{
		"nil":             nil,
		"no conversation": briefing("acme", "", "m1", 1),
		"no boundary":     briefing("acme", "c1", "", 1),
		"negative":        briefing("acme", "c1", "m1", -1),
		"beyond 2^53 - 1": briefing("acme", "c1", "m1", 1<<53),
	} {
		if _, err := s.Put(ctx, b); err == nil {
			t.Errorf("Put(%s) succeeded, want an error", name)
		} else if errors.Is(err, cache.ErrNotFound) {
			t.Errorf("Put(%s) = %v, must not be ErrNotFound", name, err)
		}
	}
	_, err := s.Latest(ctx, "acme", "c1")
	wantNotFound(t, err, "Latest after rejected puts")
}

func testMonotonic(t *testing.T, s Store) {
	b30 := briefing("acme", "c1", "m30", 30)
	mustPut(t, s, b30, true)
	mustPut(t, s, briefing("acme", "c1", "m10", 10), false)
	mustPut(t, s, briefing("acme", "c1", "m20", 20), false)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b30)
	// Older briefings are still stored by their boundary.
	mustEqual(t, mustGet(t, s, "acme", "c1", "m10"), briefing("acme", "c1", "m10", 10))
	mustEqual(t, mustGet(t, s, "acme", "c1", "m20"), briefing("acme", "c1", "m20", 20))

	// Positions compare as integers: 100 > 30 although "100" < "30" and
	// "m100" < "m30" as strings.
	b100 := briefing("acme", "c1", "m100", 100)
	mustPut(t, s, b100, true)
	mustPut(t, s, briefing("acme", "c1", "m9", 9), false)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b100)
}

// fromSnapshot is a briefing of the snapshot the stream stored at
// base + sec seconds.
func fromSnapshot(conv, boundary string, pos int64, seq uint64, sec int) *briefd.Briefing {
	b := briefing("acme", conv, boundary, pos)
	b.SnapshotSeq = seq
	b.SnapshotTime = time.Date(2026, 1, 2, 3, 0, sec, 0, time.UTC)
	return b
}

// The briefing of the newest snapshot is the latest, whatever its
// Position: a forged snapshot with a huge Position is replaced by the
// victim's next snapshot, and a history that shrank (undo) is briefed.
func testNewestSnapshotWins(t *testing.T, s Store) {
	mustPut(t, s, fromSnapshot("c1", "m30", 30, 10, 1), true)
	forged := fromSnapshot("c1", "evil", 378, 11, 2)
	mustPut(t, s, forged, true)
	next := fromSnapshot("c1", "m32", 32, 12, 3)
	mustPut(t, s, next, true)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), next)
	// An older snapshot's briefing, however far it reaches, stays behind.
	mustPut(t, s, fromSnapshot("c1", "m31", 500, 9, 0), false)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), next)
	// A briefing from the stream replaces one made outside it.
	mustPut(t, s, briefing("acme", "c2", "m90", 90), true)
	undo := fromSnapshot("c2", "m20", 20, 13, 4)
	mustPut(t, s, undo, true)
	mustEqual(t, mustLatest(t, s, "acme", "c2"), undo)
}

func testTieRule(t *testing.T, s Store) {
	b := briefing("acme", "c1", "m10", 10)
	mustPut(t, s, b, true)
	mustPut(t, s, b, true) // idempotent re-put
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b)

	// Same boundary, new content: the redelivered compaction replaces it.
	b2 := briefing("acme", "c1", "m10", 10)
	b2.Text = "a second opinion"
	mustPut(t, s, b2, true)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b2)
	mustEqual(t, mustGet(t, s, "acme", "c1", "m10"), b2)

	// Same position, another boundary: the first writer stays the latest.
	other := briefing("acme", "c1", "x10", 10)
	mustPut(t, s, other, false)
	mustEqual(t, mustLatest(t, s, "acme", "c1"), b2)
	mustEqual(t, mustGet(t, s, "acme", "c1", "x10"), other)
}

func testConcurrentWriters(t *testing.T, s Store) {
	const writers, puts, rounds = 8, 25, 3
	for round := range rounds {
		conv := "race" + strconv.Itoa(round)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			maxPos int64 = -1
			errs         = make(chan error, writers)
		)
		for w := range writers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for range puts {
					// Positions are unique per writer (pos%writers == w) so
					// that the maximum has exactly one boundary.
					pos := int64(rng.IntN(1000)*writers + w)
					if _, err := s.Put(t.Context(), briefing("acme", conv, "m"+strconv.FormatInt(pos, 10), pos)); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					maxPos = max(maxPos, pos)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent Put: %v", err)
		}
		got := mustLatest(t, s, "acme", conv)
		if got.Position != maxPos || got.BoundaryID != "m"+strconv.FormatInt(maxPos, 10) {
			t.Fatalf("round %d: latest = %s at %d, want m%d", round, got.BoundaryID, got.Position, maxPos)
		}
	}
}

func receive(t *testing.T, ch <-chan *briefd.Briefing) *briefd.Briefing {
	t.Helper()
	select {
	case b, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed early")
		}
		return b
	case <-time.After(waitTimeout):
		t.Fatalf("no briefing from Watch within %v", waitTimeout)
	}
	return nil
}

func waitClosed(t *testing.T, ch <-chan *briefd.Briefing) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("watch channel not closed within %v of cancel", waitTimeout)
		}
	}
}

func testWatch(t *testing.T, s Store) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := s.Watch(ctx, "acme", "c1")
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	for _, pos := range []int64{1, 2, 5} {
		b := briefing("acme", "c1", "m"+strconv.FormatInt(pos, 10), pos)
		mustPut(t, s, b, true)
		mustEqual(t, receive(t, ch), b)
	}
	// An older boundary never reaches watchers: the next delivery is the
	// newer one put after it.
	mustPut(t, s, briefing("acme", "c1", "m3", 3), false)
	mustPut(t, s, briefing("other", "c1", "m9", 9), true)
	b8 := briefing("acme", "c1", "m8", 8)
	mustPut(t, s, b8, true)
	mustEqual(t, receive(t, ch), b8)

	// Without a reader, the watch keeps only the newest.
	for pos := int64(10); pos <= 20; pos++ {
		mustPut(t, s, briefing("acme", "c1", "m"+strconv.FormatInt(pos, 10), pos), true)
	}
	last := int64(8)
	for last < 20 {
		b := receive(t, ch)
		if b.Position <= last {
			t.Fatalf("watch delivered position %d after %d", b.Position, last)
		}
		last = b.Position
	}

	cancel()
	waitClosed(t, ch)
}

func testWatchStartsWithLatest(t *testing.T, s Store) {
	b := briefing("acme", "c1", "m7", 7)
	mustPut(t, s, b, true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := s.Watch(ctx, "acme", "c1")
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	mustEqual(t, receive(t, ch), b)
	cancel()
	waitClosed(t, ch)
}

func testIsolation(t *testing.T, s Store) {
	ctx := t.Context()
	type conv struct{ tenant, conv string }
	convs := []conv{
		{"a", "c"}, {"b", "c"}, {"a", "d"}, {"", "c"},
		// Naive "tenant:conv" joins would collide on these.
		{"a:b", "c"}, {"a", "b:c"}, {"a.b", "c"}, {"a", "b.c"}, {"a}", "c"}, {"a", "}c"},
	}
	for i, c := range convs {
		pos := int64(i + 1)
		mustPut(t, s, briefing(c.tenant, c.conv, "m1", pos), true)
	}
	for i, c := range convs {
		got := mustLatest(t, s, c.tenant, c.conv)
		if got.Position != int64(i+1) {
			t.Errorf("Latest(%q, %q).Position = %d, want %d: conversations are not isolated", c.tenant, c.conv, got.Position, i+1)
		}
		if got := mustGet(t, s, c.tenant, c.conv, "m1"); got.Position != int64(i+1) {
			t.Errorf("Get(%q, %q, m1).Position = %d, want %d", c.tenant, c.conv, got.Position, i+1)
		}
	}
	_, err := s.Latest(ctx, "c", "a")
	wantNotFound(t, err, "Latest with tenant and conversation swapped")
}

func testOddIDs(t *testing.T, s Store) {
	ids := []string{
		"with space", "dots.in.id", "slash/and\\back", "ünïcödé-会话-🙂",
		"colon:brace{}", "wild*card>", "percent%3A", "tab\tnew\nline", "-_=.",
	}
	for i, id := range ids {
		b := briefing(id, id, id, int64(i+1))
		mustPut(t, s, b, true)
		mustEqual(t, mustGet(t, s, id, id, id), b)
		mustEqual(t, mustLatest(t, s, id, id), b)
	}
}

// testWatchMany watches many conversations at once (a store may share one
// subscription among them): each gets its own briefings and no other's,
// and ending some watches leaves the others working.
func testWatchMany(t *testing.T, s Store) {
	const n = 50
	chans := make([]<-chan *briefd.Briefing, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		ch, err := s.Watch(ctx, "acme", "many"+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
		chans[i], cancels[i] = ch, cancel
	}
	for i := range n {
		mustPut(t, s, briefing("acme", "many"+strconv.Itoa(i), "m1", int64(i+1)), true)
	}
	for i := range n {
		if b := receive(t, chans[i]); b.ConversationID != "many"+strconv.Itoa(i) || b.Position != int64(i+1) {
			t.Fatalf("watch of many%d delivered %s at %d", i, b.ConversationID, b.Position)
		}
	}
	// End every other watch; the rest still deliver.
	for i := 0; i < n; i += 2 {
		cancels[i]()
		waitClosed(t, chans[i])
	}
	for i := 1; i < n; i += 2 {
		mustPut(t, s, briefing("acme", "many"+strconv.Itoa(i), "m2", int64(100+i)), true)
	}
	for i := 1; i < n; i += 2 {
		if b := receive(t, chans[i]); b.ConversationID != "many"+strconv.Itoa(i) || b.Position != int64(100+i) {
			t.Fatalf("watch of many%d delivered %s at %d after others ended", i, b.ConversationID, b.Position)
		}
	}
}

// testWatchTwice watches one conversation twice: both watches deliver,
// and ending one leaves the other working; a watch started after every
// watch ended works too.
func testWatchTwice(t *testing.T, s Store) {
	ctx1, cancel1 := context.WithCancel(t.Context())
	defer cancel1()
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	ch1, err := s.Watch(ctx1, "acme", "twice")
	if err != nil {
		t.Fatal(err)
	}
	ch2, err := s.Watch(ctx2, "acme", "twice")
	if err != nil {
		t.Fatal(err)
	}
	b1 := briefing("acme", "twice", "m1", 1)
	mustPut(t, s, b1, true)
	mustEqual(t, receive(t, ch1), b1)
	mustEqual(t, receive(t, ch2), b1)
	cancel1()
	waitClosed(t, ch1)
	b2 := briefing("acme", "twice", "m2", 2)
	mustPut(t, s, b2, true)
	mustEqual(t, receive(t, ch2), b2)
	cancel2()
	waitClosed(t, ch2)

	ctx3, cancel3 := context.WithCancel(t.Context())
	defer cancel3()
	ch3, err := s.Watch(ctx3, "acme", "twice")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, receive(t, ch3), b2)
	b3 := briefing("acme", "twice", "m3", 3)
	mustPut(t, s, b3, true)
	mustEqual(t, receive(t, ch3), b3)
}

// testStatus: a conversation's status is the verdict of its highest seq;
// an older verdict never replaces a newer one, the same seq's does, and
// seqs compare as integers beyond 2^53.
func testStatus(t *testing.T, s Store) {
	ctx := t.Context()
	if _, err := s.Status(ctx, "t", "c"); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("status of an unknown conversation: %v", err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	put := func(seq uint64, outcome briefd.Outcome) *briefd.Status {
		t.Helper()
		st := &briefd.Status{Tenant: "t", ConversationID: "c", Seq: seq, Outcome: outcome, Reason: "below_trigger",
			Tokens: int(seq % 1000), TriggerTokens: 83200, At: at}
		if err := s.PutStatus(ctx, st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	want := func(st *briefd.Status) {
		t.Helper()
		got, err := s.Status(ctx, "t", "c")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("status %+v, want %+v", got, st)
		}
	}
	five := put(5, briefd.OutcomeSkipped)
	want(five)
	put(3, briefd.OutcomeCompacted)
	want(five)
	again := put(5, briefd.OutcomeCompacted)
	want(again)
	big := put(1<<60+1, briefd.OutcomeSkipped)
	put(1<<60, briefd.OutcomeCompacted)
	put(999999999999999999, briefd.OutcomeCompacted) // fewer digits, smaller
	want(big)
	if _, err := s.Status(ctx, "t", "other"); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("another conversation's status: %v", err)
	}
	if err := s.PutStatus(ctx, &briefd.Status{Tenant: "t", Seq: 1, Outcome: briefd.OutcomeSkipped}); err == nil {
		t.Fatal("a status without a conversation was stored")
	}
}
