package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/queue"
)

// poisonKind is one way a snapshot can be invalid, with the words its
// dead-letter reason must hold: a reason that names the input.
type poisonKind struct {
	name   string
	reason string
}

// The invalid snapshots a flood publishes, in turn. Each names its own
// conversation, so no newer snapshot supersedes it: every one must be
// dead-lettered, exactly once.
var poisonKinds = []poisonKind{
	{"tool result without its call", `"t1"`},        // invalid history: the reason names the message
	{"manifest that is not JSON", "not valid JSON"}, // malformed manifest
	{"body not in the stream", "is not in the stream"},
	{"body that does not match its hash", "hashes to"},
}

// poisonSnapshot is one invalid snapshot published by a flood.
type poisonSnapshot struct {
	conv string
	kind poisonKind
}

// flood publishes n invalid snapshots of tenant on js as fast as the
// server takes them (asynchronously, at most 256 in flight), with raw
// NATS publishes: a hostile or broken agent, not the Go client.
func flood(ctx context.Context, js jetstream.JetStream, prefix, tenant, runID string, n int) ([]poisonSnapshot, error) {
	subj := queue.Subjects{Prefix: prefix}
	var (
		sent    []poisonSnapshot
		futures []jetstream.PubAckFuture
	)
	send := func(subject, msgID string, data []byte) (jetstream.PubAckFuture, error) {
		m := nats.NewMsg(subject)
		m.Header.Set(queue.HeaderVersion, "1")
		m.Header.Set(queue.HeaderContentType, queue.ContentTypeJSON)
		m.Header.Set(queue.HeaderMsgID, msgID)
		m.Data = data
		return js.PublishMsgAsync(m)
	}
	publish := func(subject, msgID string, data []byte) error {
		_, err := send(subject, msgID, data)
		return err
	}
	body := func(conv string, msg map[string]any) (queue.Entry, error) {
		data, _ := json.Marshal(msg)
		h := queue.BodyHash(data)
		return queue.Entry{ID: msg["id"].(string), Hash: h}, publish(subj.Body(tenant, conv, h), tenant+"."+conv+"."+h, data)
	}
	// out keeps the snapshots whose manifest the stream acknowledged: the
	// checker expects a dead letter for each of those.
	out := func() []poisonSnapshot {
		var ok []poisonSnapshot
		for i, f := range futures {
			select {
			case <-f.Ok():
				ok = append(ok, sent[i])
			default:
			}
		}
		return ok
	}
	for i := range n {
		kind := poisonKinds[i%len(poisonKinds)]
		conv := runID + "-p" + strconv.Itoa(i)
		user := map[string]any{"id": "u1", "role": "user", "content": "poison " + conv}
		var entries []queue.Entry
		var manifest []byte
		switch i % len(poisonKinds) {
		case 0:
			e1, err := body(conv, user)
			if err != nil {
				return out(), err
			}
			e2, err := body(conv, map[string]any{"id": "t1", "role": "tool", "tool_call_id": "call_missing", "content": "no call made this"})
			if err != nil {
				return out(), err
			}
			entries = []queue.Entry{e1, e2}
		case 1:
			manifest = []byte(`{"v":1,"tenant":"` + tenant + `","conversation_id":"` + conv + `","seq":1,`)
		case 2:
			entries = []queue.Entry{{ID: "u1", Hash: queue.BodyHash([]byte("never published " + conv))}}
		case 3:
			data, _ := json.Marshal(user)
			h := queue.BodyHash([]byte("another body " + conv))
			if err := publish(subj.Body(tenant, conv, h), tenant+"."+conv+"."+h, data); err != nil {
				return out(), err
			}
			entries = []queue.Entry{{ID: "u1", Hash: h}}
		}
		if manifest == nil {
			manifest, _ = json.Marshal(queue.Manifest{V: queue.Version, Tenant: tenant, ConversationID: conv, Seq: 1,
				Append: entries, CreatedAt: time.Now().UTC()})
		}
		f, err := send(subj.Snapshot(tenant, conv), tenant+"."+conv+".1", manifest)
		if err != nil {
			return out(), err
		}
		sent, futures = append(sent, poisonSnapshot{conv: conv, kind: kind}), append(futures, f)
		if i%256 == 255 {
			if err := waitAsync(ctx, js); err != nil {
				return out(), err
			}
		}
	}
	err := waitAsync(ctx, js)
	return out(), err
}

func waitAsync(ctx context.Context, js jetstream.JetStream) error {
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("poison flood: publishes not acked: %w", ctx.Err())
	}
}
