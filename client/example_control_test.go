package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// ExampleClient_AwaitStatus shows the agent learning why its history is
// not compacted yet, then asking for a compaction now, as a user's
// /compact would, with a focus and a pinned message.
func ExampleClient_AwaitStatus() {
	nc, stop := embeddedNATS()
	defer stop()
	ctx := context.Background()

	// A worker with the default 128k window (normally cmd/worker).
	js, _ := jetstream.New(nc)
	store, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(js, store, worker.Config{Engine: compact.Config{}, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	c, err := client.New(nc, client.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	hs, err := examples.Histories()
	if err != nil {
		log.Fatal(err)
	}
	history := hs[2].Messages // a customer-service run of about 8k tokens: far below 0.65 x 128k

	if err := c.Publish(ctx, "conv-1", history); err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := c.AwaitStatus(wctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Outcome, st.Reason, "trigger at", st.TriggerTokens, "tokens; below it:", st.Tokens < st.TriggerTokens)

	// Keep the user's second message verbatim whatever happens, and
	// compact now.
	second := history[3]
	if err := c.SetControl("conv-1", briefd.Control{Pin: []string{second.ID}}); err != nil {
		log.Fatal(err)
	}
	if err := c.Publish(ctx, "conv-1", history, client.CompactNow("the reservation and its flights")); err != nil {
		log.Fatal(err)
	}
	if st, err = c.AwaitStatus(wctx, "conv-1"); err != nil {
		log.Fatal(err)
	}
	b, err := c.Latest(ctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Outcome, "at the latest briefing's boundary:", st.BoundaryID == b.BoundaryID, "; pinned kept:", b.PinnedIDs[0] == second.ID, second.Role)
	// Output:
	// skipped below_trigger trigger at 83200 tokens; below it: true
	// compacted at the latest briefing's boundary: true ; pinned kept: true user
}
