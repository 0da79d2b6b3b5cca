// Package jsensure creates JetStream streams and key-value buckets at
// start-up without asking the server to update what is already right.
//
// nats.go's CreateOrUpdateStream sends an update request first, every time.
// Workers starting together then update a stream that another one is still
// creating, and nats-server 2.9.10 (the version Debian ships) panics in
// stream.updateWithAdvisory on that request, taking JetStream down with it
// (seen in a nemesis run). Reading first and updating only a configuration
// that differs keeps start-up to reads once the streams exist.
package jsensure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"
)

// Streams is what Stream needs of a JetStream context.
type Streams interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
	UpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
}

// Stream returns the stream cfg names, creating it when it does not exist
// and updating it only when a field cfg sets differs from the server's.
func Stream(ctx context.Context, js Streams, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return retryUnanswered(ctx, attemptTimeout, func(ctx context.Context) (jetstream.Stream, error) { return stream(ctx, js, cfg) })
}

func stream(ctx context.Context, js Streams, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		created, cerr := js.CreateStream(ctx, cfg)
		if cerr == nil {
			return created, nil
		}
		// Another worker may have created it meanwhile, maybe with another
		// configuration (the server says "already in use", or on 2.9
		// "subjects overlap"): read it and compare; else the create's
		// error stands.
		if s, err = js.Stream(ctx, cfg.Name); err != nil {
			return nil, cerr
		}
	}
	if err != nil {
		return nil, err
	}
	same, err := Matches(s.CachedInfo().Config, cfg)
	if err != nil || same {
		return s, err
	}
	return js.UpdateStream(ctx, cfg)
}

// Matches reports whether have, a stream's configuration as the server
// reports it, has every field want sets to something other than its zero
// value, so that the server's own defaults (replicas 1, a duplicate window,
// -1 for no limit) do not count as differences. The maximum age is always
// compared: 0 is a choice there (no limit).
func Matches(have, want jetstream.StreamConfig) (bool, error) {
	h, err := fields(have)
	if err != nil {
		return false, err
	}
	w, err := fields(want)
	if err != nil {
		return false, err
	}
	for k, v := range w {
		if k != "max_age" && isZero(v) {
			continue
		}
		if !reflect.DeepEqual(h[k], v) {
			return false, nil
		}
	}
	return true, nil
}

// isZero reports a JSON value that says nothing was set.
func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func fields(cfg jetstream.StreamConfig) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("jsensure: stream config %s: %w", cfg.Name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("jsensure: stream config %s: %w", cfg.Name, err)
	}
	return m, nil
}

// KeyValues is what KeyValue needs of a JetStream context.
type KeyValues interface {
	Streams
	KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error)
	CreateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error)
	UpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error)
}

// KeyValue returns the bucket cfg names, creating it when it does not
// exist and updating it only when its stream's configuration differs from
// what cfg asks for (description, history, TTL, storage, replicas). Like
// Stream it never sends an update to a bucket another worker is creating
// (nats.go's CreateOrUpdateKeyValue updates first).
func KeyValue(ctx context.Context, js KeyValues, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return retryUnanswered(ctx, attemptTimeout, func(ctx context.Context) (jetstream.KeyValue, error) { return keyValue(ctx, js, cfg) })
}

func keyValue(ctx context.Context, js KeyValues, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		created, cerr := js.CreateKeyValue(ctx, cfg)
		if cerr == nil {
			return created, nil
		}
		// Created meanwhile by another worker ("exists", or on 2.9
		// "subjects overlap"): read and compare as below.
		if kv, err = js.KeyValue(ctx, cfg.Bucket); err != nil {
			return nil, cerr
		}
	}
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, err
	}
	if bucketMatches(s.CachedInfo().Config, cfg) {
		return kv, nil
	}
	return js.UpdateKeyValue(ctx, cfg)
}

func bucketMatches(have jetstream.StreamConfig, want jetstream.KeyValueConfig) bool {
	history := int64(max(want.History, 1))
	replicas := max(want.Replicas, 1)
	return have.Description == want.Description && have.MaxMsgsPerSubject == history && have.MaxAge == want.TTL &&
		have.Storage == want.Storage && have.Replicas == replicas
}

// attemptTimeout bounds one round of Stream's or KeyValue's requests.
// nats-server 2.9 can leave a request that races another worker's create
// without a reply; without a bound of its own the round would wait out the
// caller's whole deadline (a worker's start-up). Each round is idempotent
// (read, create, read, compare, update), so an unanswered one is run again.
const attemptTimeout = 5 * time.Second

// retryUnanswered runs f, each round bounded by round, until it returns
// anything but its round's own deadline, with a short backoff between
// rounds; the caller's context bounds the whole.
func retryUnanswered[T any](ctx context.Context, round time.Duration, f func(context.Context) (T, error)) (T, error) {
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval, eb.MaxInterval, eb.MaxElapsedTime = 50*time.Millisecond, time.Second, 0
	return backoff.RetryWithData(func() (T, error) {
		actx, cancel := context.WithTimeout(ctx, round)
		defer cancel()
		v, err := f(actx)
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return v, backoff.Permanent(err)
		}
		return v, err
	}, backoff.WithContext(eb, ctx))
}
