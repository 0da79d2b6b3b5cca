package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// getRequest names one message of a stream: by sequence, or the last on
// a subject.
type getRequest struct {
	Seq           uint64 `json:"seq,omitempty"`
	LastBySubject string `json:"last_by_subj,omitempty"`
}

// getMsg reads a message with a direct get, which any replica of the
// stream answers, and confirms a miss with the stream's leader. A replica
// answers from what it has applied, which can lag what the stream has
// acknowledged: a follower catching up after a restart, or any follower a
// moment after a publish. On a 3-node cluster with a node restarted under
// load, direct gets missed bodies that the stream had acknowledged, and
// their snapshots were dead-lettered as malformed. The leader's answer is
// the stream's.
func getMsg(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, req getRequest) (*jetstream.RawStreamMsg, error) {
	var raw *jetstream.RawStreamMsg
	var err error
	if req.LastBySubject != "" {
		raw, err = st.GetLastMsgForSubject(ctx, req.LastBySubject)
	} else {
		raw, err = st.GetMsg(ctx, req.Seq)
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return raw, err
	}
	info := st.CachedInfo()
	if info == nil || info.Config.Replicas <= 1 {
		return nil, err // one copy: a direct get is the leader's answer
	}
	return leaderGet(ctx, js, info.Config.Name, req)
}

// LastMsg returns the last message on subject as the stream's leader has
// it: a replica may answer a direct get with an older one. Rebuild and
// replay, which must start from a conversation's newest snapshot, read it
// so.
func LastMsg(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, subject string) (*jetstream.RawStreamMsg, error) {
	if info := st.CachedInfo(); info != nil && info.Config.Replicas > 1 {
		return leaderGet(ctx, js, info.Config.Name, getRequest{LastBySubject: subject})
	}
	return st.GetLastMsgForSubject(ctx, subject)
}

// leaderGet reads a message through the JetStream API's STREAM.MSG.GET,
// which only the stream's leader answers.
func leaderGet(ctx context.Context, js jetstream.JetStream, stream string, req getRequest) (*jetstream.RawStreamMsg, error) {
	nc := js.Conn()
	if nc == nil {
		return nil, errors.New("queue: leader get: no connection")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	data, _ := json.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, apiPrefix(js)+"STREAM.MSG.GET."+stream, data)
	if err != nil {
		return nil, fmt.Errorf("queue: get from the leader of %s: %w", stream, err)
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error,omitempty"`
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs,omitempty"`
			Data     []byte    `json:"data,omitempty"`
			Time     time.Time `json:"time"`
		} `json:"message,omitempty"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("queue: get from the leader of %s: %w", stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, fmt.Errorf("queue: get from the leader of %s: %w", stream, resp.Error)
	case resp.Message == nil:
		return nil, fmt.Errorf("queue: get from the leader of %s: %w", stream, jetstream.ErrInvalidJetStreamResponse)
	}
	var hdr nats.Header
	if len(resp.Message.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("queue: get from the leader of %s: headers: %w", stream, err)
		}
	}
	m := resp.Message
	return &jetstream.RawStreamMsg{Subject: m.Subject, Sequence: m.Sequence, Header: hdr, Data: m.Data, Time: m.Time}, nil
}

// apiPrefix is the JetStream API prefix js sends requests to.
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		p := o.APIPrefix
		if p[len(p)-1] != '.' {
			p += "."
		}
		return p
	}
	return jetstream.DefaultAPIPrefix
}
