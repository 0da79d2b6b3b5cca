package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"regexp"
	"time"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/examples"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/compact"
	"github.com/briefd/briefd/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// scriptedModel stands in for the LLM: it replays a recorded run's
// assistant turns, and on its first turn after a compaction it calls the
// expand tool on the range the briefing names, as a model told by the
// briefing's last line would.
type scriptedModel struct {
	expanded bool
}

// footer finds the compacted range in a briefing: its last line (see
// briefd.ExpandFooter), or else the first and last message ids it cites.
var (
	footerRange = regexp.MustCompile(`Compacted messages? (\S+?)(?: to (\S+?))? verbatim:`)
	citedID     = regexp.MustCompile(`\[([A-Za-z_-]*[0-9][A-Za-z0-9_.:-]*)\]`)
)

// reply returns the model's answer to msgs: the recorded turn, or a call
// of the expand tool.
func (m *scriptedModel) reply(msgs []briefd.Message, recorded briefd.Message, turn int) briefd.Message {
	for _, msg := range msgs {
		if !msg.IsBriefing() || m.expanded {
			continue
		}
		text, _ := briefd.UnwrapBriefing(msg.Content.Text)
		from, to := "", ""
		if f := footerRange.FindStringSubmatch(text); f != nil {
			from, to = f[1], f[2]
		} else if ids := citedID.FindAllStringSubmatch(text, -1); len(ids) >= 2 {
			from, to = ids[0][1], ids[1][1]
		}
		if from == "" {
			continue
		}
		m.expanded = true
		args, _ := json.Marshal(client.ExpandToolArgs{FromID: from, ToID: to})
		return briefd.Message{ID: fmt.Sprintf("expand-%d", turn), Role: briefd.RoleAssistant, ToolCalls: []briefd.ToolCall{{
			ID: fmt.Sprintf("expand-call-%d", turn), Type: "function",
			Function: briefd.FunctionCall{Name: briefd.ExpandToolName, Arguments: string(args)}}}}
	}
	return recorded
}

// Example_expandTool is an agent loop with the expand tool: the agent
// publishes each turn and prepares the history before each model call;
// once the worker has compacted the conversation, the (scripted) model
// calls expand_history on the compacted range and gets the original
// messages back, verbatim.
func Example_expandTool() {
	nc, stop := embeddedNATS()
	defer stop()
	ctx := context.Background()

	// The worker (normally cmd/worker, elsewhere), with a small window so
	// that this short run compacts.
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

	c, err := client.New(nc, client.WithContextWindow(10000), client.WithWatch(), client.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	// The agent sends the model its tools with each call; ExpandTool is
	// one of them (here the model is scripted and needs no definition).
	_ = []client.ToolDefinition{client.ExpandTool()}

	hs, err := examples.Histories()
	if err != nil {
		log.Fatal(err)
	}
	recorded := hs[0].Messages
	original := map[string]briefd.Message{}
	for _, m := range recorded {
		original[m.ID] = m
	}
	model := &scriptedModel{}
	var answer string

	// turn runs one model call and its tools, then publishes.
	history := append([]briefd.Message(nil), recorded[:2]...) // system prompt and task
	next := 2
	turn := func(k int) {
		msgs, _, err := c.Prepare(ctx, "conv-expand", history)
		if err != nil {
			log.Fatal(err)
		}
		reply := model.reply(msgs, recorded[next], k)
		history = append(history, reply)
		if len(reply.ToolCalls) == 1 && reply.ToolCalls[0].Function.Name == briefd.ExpandToolName {
			out, err := c.HandleExpandTool(ctx, "conv-expand", reply.ToolCalls[0].Function.Arguments)
			if err != nil {
				log.Fatal(err)
			}
			answer = out
			history = append(history, briefd.Message{ID: reply.ID + "-result", Role: briefd.RoleTool,
				ToolCallID: reply.ToolCalls[0].ID, Content: briefd.Text(out)})
		} else {
			// The environment: the recorded tool results and user turns up
			// to the next assistant message.
			next++
			for next < len(recorded) && recorded[next].Role != briefd.RoleAssistant {
				history = append(history, recorded[next])
				next++
			}
		}
		if err := c.Publish(ctx, "conv-expand", history); err != nil {
			log.Fatal(err)
		}
	}
	for k := 0; next < len(recorded); k++ {
		turn(k)
	}
	// The worker compacts off the hot path: if the run ended before its
	// briefing arrived, wait for it and call the model once more.
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; !model.expanded; n++ {
		if time.Now().After(deadline) {
			log.Fatal("no briefing within 30s")
		}
		recorded = append(recorded, briefd.Message{ID: fmt.Sprintf("wait-%d", n), Role: briefd.RoleAssistant, Content: briefd.Text("Waiting for the tests.")})
		turn(len(recorded))
		time.Sleep(50 * time.Millisecond) // the worker's turn
	}

	var got struct {
		Messages []briefd.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(answer), &got); err != nil {
		log.Fatal(err)
	}
	verbatim := len(got.Messages) > 0
	for _, m := range got.Messages {
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(original[m.ID])
		verbatim = verbatim && string(a) == string(b)
	}
	fmt.Println("the model called", briefd.ExpandToolName+":", model.expanded)
	fmt.Println("it got the original messages back, verbatim:", verbatim)
	// Output:
	// the model called expand_history: true
	// it got the original messages back, verbatim: true
}
