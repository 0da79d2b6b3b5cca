package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// Example_agentLoop runs an agent against a worker in the same process: the
// agent publishes after each turn, the worker compacts off the hot path,
// and the agent's next turn sends the spliced history.
func Example_agentLoop() {
	nc, stop := embeddedNATS()
	defer stop()
	ctx := context.Background()

	// The worker side (normally cmd/worker, elsewhere), with a small
	// context window so that this short conversation compacts.
	js, _ := jetstream.New(nc)
	store, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(js, store, worker.Config{Engine: compact.Config{ContextWindow: 10000}, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	// The agent side.
	c, err := client.New(nc, client.WithContextWindow(10000), client.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	hs, err := examples.Histories()
	if err != nil {
		log.Fatal(err)
	}
	recorded := hs[0].Messages // a real run, replayed turn by turn
	updates, err := c.Watch(ctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	for k := 1; k <= len(recorded); k++ {
		if k < len(recorded) && recorded[k].Role != briefd.RoleAssistant {
			continue // publish after each complete turn
		}
		if err := c.Publish(ctx, "conv-1", recorded[:k]); err != nil {
			log.Fatal(err)
		}
	}
	b := <-updates // the first briefing the worker stores
	fmt.Println("briefing saves tokens:", b.TokensAfter < b.TokensBefore)

	// Next turn: send the spliced history to the model.
	next, used, err := c.Prepare(ctx, "conv-1", recorded)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("spliced:", used != nil, len(next) < len(recorded))
	fmt.Println("head kept:", next[0].Role, next[1].Role, "then", next[2].IsBriefing())
	// Output:
	// briefing saves tokens: true
	// spliced: true true
	// head kept: system user then true
}
