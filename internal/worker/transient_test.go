package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/worker"
)

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("queue: ensure stream X: %w", nats.ErrNoResponders), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		// A cluster just formed, before it knows its peers (a nemesis run).
		{fmt.Errorf("queue: ensure bucket R: %w", &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement"}), true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}, false},
		{errors.New("queue: config: negative max age"), false},
	} {
		if got := worker.Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
