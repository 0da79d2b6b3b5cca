package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natsembed"
	"github.com/briefd/briefd/internal/queue"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// embeddedNATS starts a throwaway NATS server with JetStream and the
// briefd streams, as the workers would create them, and connects to it.
// In production the agent connects to its NATS cluster instead:
// nats.Connect(url).
func embeddedNATS() (nc *nats.Conn, stop func()) {
	dir, err := os.MkdirTemp("", "briefd-example-")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	srv, err := natsembed.Start(ctx, natsembed.Options{StoreDir: dir, Port: -1})
	if err != nil {
		log.Fatal(err)
	}
	nc, err = nats.Connect(srv.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if err := queue.EnsureStreams(ctx, js, queue.Config{}); err != nil {
		log.Fatal(err)
	}
	return nc, func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func msg(id string, role briefd.Role, text string) briefd.Message {
	return briefd.Message{ID: id, Role: role, Content: briefd.Text(text)}
}

func ExampleClient_Publish() {
	nc, stop := embeddedNATS()
	defer stop()
	ctx := context.Background()

	c, err := client.New(nc, client.WithTenant("acme"), client.WithModel("gpt-4o"), client.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	history := []briefd.Message{
		msg("m1", briefd.RoleSystem, "You are a helpful agent."),
		msg("m2", briefd.RoleUser, "Find the flaky test."),
	}
	for turn := 1; turn <= 3; turn++ {
		// The model's answer of this turn; then the snapshot is published.
		// Publish returns at once: the workers compact off the hot path.
		history = append(history, msg(fmt.Sprintf("a%d", turn), briefd.RoleAssistant, "Looking..."))
		if err := c.Publish(ctx, "conv-1", history); err != nil {
			log.Fatal(err)
		}
	}
	// Flush waits for the acks; an agent calls it before exiting.
	if err := c.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("published 3 snapshots; pending:", c.Pending())
	// Output:
	// published 3 snapshots; pending: 0
}

func ExampleClient_Stats() {
	nc, stop := embeddedNATS()
	defer stop()
	ctx := context.Background()

	c, err := client.New(nc, client.WithTenant("acme"), client.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	history := []briefd.Message{msg("m1", briefd.RoleSystem, "You are a helpful agent.")}
	for turn := 1; turn <= 3; turn++ {
		history = append(history, msg(fmt.Sprintf("u%d", turn), briefd.RoleUser, "Next step?"))
		if err := c.Publish(ctx, "conv-1", history); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Stored: acked with every body they name. A full buffer drops
	// superseded snapshots first (Superseded) and refuses a conversation's
	// newest only when every snapshot waiting is one (Refused).
	st := c.Stats()
	fmt.Printf("stored %d, superseded %d, refused %d, failed %d, pending %d\n", st.Stored, st.Superseded, st.Refused, st.Failed, st.Pending)
	// Output:
	// stored 3, superseded 0, refused 0, failed 0, pending 0
}

func ExampleClient_Latest() {
	nc, stop := embeddedNATS()
	defer stop()
	ctx := context.Background()

	// A worker would compute and store this briefing; here it is stored
	// directly in the key-value store of the embedded mode.
	js, _ := jetstream.New(nc)
	kv, err := cache.NewKVStore(ctx, js, cache.KVConfig{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = kv.Put(ctx, &briefd.Briefing{
		Tenant: "acme", ConversationID: "conv-1", BoundaryID: "a3", Position: 3,
		Text: "The user asked for the flaky test; TestRetry fails one run in ten.",
		Tier: briefd.TierDeterministic,
	})
	if err != nil {
		log.Fatal(err)
	}

	c, err := client.New(nc, client.WithTenant("acme"), client.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	b, err := c.Latest(ctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("boundary:", b.BoundaryID, "tier:", b.Tier)

	// Prepare splices it into the history the agent sends this turn.
	history := []briefd.Message{
		msg("m1", briefd.RoleSystem, "You are a helpful agent."),
		msg("m2", briefd.RoleUser, "Find the flaky test."),
		msg("a1", briefd.RoleAssistant, "Running the suite."),
		msg("u1", briefd.RoleUser, "Any luck?"),
		msg("a3", briefd.RoleAssistant, "TestRetry is flaky."),
	}
	spliced, _, err := c.Prepare(ctx, "conv-1", history)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range spliced {
		fmt.Println(m.ID, m.Role)
	}
	_, err = c.Latest(ctx, "conv-2")
	fmt.Println(err)
	// Output:
	// boundary: a3 tier: deterministic
	// m1 system
	// m2 user
	// briefing:a3 user
	// a3 assistant
	// client: latest conv-2: client: no briefing
}

func ExampleSplice() {
	history := []briefd.Message{
		msg("m1", briefd.RoleSystem, "You are a helpful agent."),
		msg("m2", briefd.RoleUser, "Fix the build."),
		msg("a1", briefd.RoleAssistant, "Reading the logs."),
		msg("u1", briefd.RoleUser, "It is the linker."),
		msg("a2", briefd.RoleAssistant, "Patched the flags."),
	}
	b := &briefd.Briefing{ConversationID: "conv-1", BoundaryID: "a2", Text: "The linker failed on -lfoo; a1 read the logs."}
	spliced, err := client.Splice(history, b)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range spliced {
		fmt.Printf("%s %s\n", m.ID, m.Role)
	}
	text, _ := briefd.UnwrapBriefing(spliced[2].Content.String())
	fmt.Println(text)
	// Output:
	// m1 system
	// m2 user
	// briefing:a2 user
	// a2 assistant
	// The linker failed on -lfoo; a1 read the logs.
}
