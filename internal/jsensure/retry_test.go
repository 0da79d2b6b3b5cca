package jsensure

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A round left without a reply is run again; any other error, or the
// caller's own deadline, ends it.
func TestRetryUnanswered(t *testing.T) {
	rounds := 0
	v, err := retryUnanswered(t.Context(), 20*time.Millisecond, func(ctx context.Context) (int, error) {
		rounds++
		if rounds < 3 {
			<-ctx.Done() // no reply
			return 0, ctx.Err()
		}
		return 7, nil
	})
	if err != nil || v != 7 || rounds != 3 {
		t.Fatalf("got %d, %v after %d rounds; want 7 after 3", v, err, rounds)
	}

	other := errors.New("stream name already in use")
	rounds = 0
	if _, err := retryUnanswered(t.Context(), 20*time.Millisecond, func(context.Context) (int, error) { rounds++; return 0, other }); !errors.Is(err, other) || rounds != 1 {
		t.Fatalf("got %v after %d rounds; want the error after 1", err, rounds)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := retryUnanswered(ctx, 20*time.Millisecond, func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want the caller's deadline", err)
	}
}
