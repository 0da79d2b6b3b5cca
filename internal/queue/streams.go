package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/jsensure"
)

// StreamConfigs returns the explicit configuration of the three streams:
// bodies and snapshots are limits-retention streams (replay reads them
// without consuming, and a work-queue stream would refuse ordered
// consumers), dead letters likewise. Bodies keep one message per subject:
// a body is content-addressed, so a re-sent body replaces its old copy.
func StreamConfigs(cfg Config) []jetstream.StreamConfig {
	cfg = cfg.WithDefaults()
	names := cfg.Streams()
	return []jetstream.StreamConfig{
		{
			Name:              names.Bodies,
			Description:       "briefd message bodies, content-addressed",
			Subjects:          []string{cfg.Prefix + ".body.>"},
			Retention:         jetstream.LimitsPolicy,
			MaxAge:            cfg.MaxAge,
			MaxMsgsPerSubject: 1,
			Discard:           jetstream.DiscardOld,
			Storage:           cfg.Storage,
			Replicas:          cfg.Replicas,
			Duplicates:        cfg.DuplicateWindow,
			AllowDirect:       true,
		},
		{
			Name:        names.Snapshots,
			Description: "briefd snapshot manifests: the compaction queue and its audit trail",
			Subjects:    []string{cfg.Prefix + ".snap.>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      cfg.MaxAge,
			Discard:     jetstream.DiscardOld,
			Storage:     cfg.Storage,
			Replicas:    cfg.Replicas,
			Duplicates:  cfg.DuplicateWindow,
			AllowDirect: true,
		},
		{
			Name:        names.Dead,
			Description: "briefd dead-letter records",
			Subjects:    []string{cfg.Prefix + ".dead.>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      cfg.DeadMaxAge,
			Discard:     jetstream.DiscardOld,
			Storage:     cfg.Storage,
			Replicas:    cfg.DeadReplicas,
			Duplicates:  cfg.DuplicateWindow,
			AllowDirect: true,
		},
	}
}

// ConsumerConfig returns the durable pull consumer shared by all workers.
// It has no BackOff: the consumer naks with its own delays, so AckWait
// keeps bounding a silent worker.
func ConsumerConfig(cfg Config) jetstream.ConsumerConfig {
	cfg = cfg.WithDefaults()
	return jetstream.ConsumerConfig{
		Durable:       cfg.Consumer,
		Description:   "briefd compaction workers",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		// Attempts and requeues (shutdowns, deferrals) both count as
		// deliveries here; workers count attempts themselves and
		// dead-letter with the reason, so the server's bound is one more
		// than the most deliveries a worker lets through.
		MaxDeliver:    cfg.MaxDeliver + cfg.MaxRequeues + 1,
		FilterSubject: cfg.Prefix + ".snap.>",
		MaxAckPending: cfg.MaxAckPending,
		Replicas:      cfg.Replicas,
	}
}

// RequeueBucketConfig is the key-value bucket in which workers count, per
// snapshot stream sequence, the redeliveries that are not attempts.
func RequeueBucketConfig(cfg Config) jetstream.KeyValueConfig {
	cfg = cfg.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      cfg.Streams().Requeues,
		Description: "briefd: redeliveries of a snapshot that were not attempts (shutdowns, deferrals)",
		History:     1,
		TTL:         cfg.MaxAge,
		Storage:     cfg.Storage,
		Replicas:    cfg.DeadReplicas,
	}
}

// MinServerVersion is the oldest nats-server the queue supports: direct
// gets by subject, which the resolver and the coalescing check use, came
// with 2.9.0.
const MinServerVersion = "2.9.0"

// CheckServer returns an error naming the versions when the server nc is
// connected to is older than MinServerVersion.
func CheckServer(nc interface{ ConnectedServerVersion() string }) error {
	v := nc.ConnectedServerVersion()
	if v == "" {
		// Not connected (yet): nothing to check, and nothing wrong with
		// the server; the caller may wait for the connection.
		return fmt.Errorf("queue: not connected to a NATS server: %w", nats.ErrDisconnected)
	}
	if !versionAtLeast(v, 2, 9, 0) {
		return fmt.Errorf("queue: nats-server %q is older than the %s this worker needs", v, MinServerVersion)
	}
	return nil
}

// versionAtLeast reports whether a "major.minor.patch[-suffix]" version is
// at least the one given; an unparseable version is not.
func versionAtLeast(v string, major, minor, patch int) bool {
	var got [3]int
	v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "-")
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		got[i] = n
	}
	want := [3]int{major, minor, patch}
	for i := range got {
		if got[i] != want[i] {
			return got[i] > want[i]
		}
	}
	return true
}

// EnsureStreams creates or updates the three streams, the requeue bucket
// and the shared consumer. It is idempotent and safe to call from every
// worker at start-up: once they exist and match it only reads them
// (package jsensure says why). It refuses a server older than MinServerVersion.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if nc := js.Conn(); nc != nil {
		if err := CheckServer(nc); err != nil {
			return err
		}
	}
	if _, err := jsensure.KeyValue(ctx, js, RequeueBucketConfig(cfg)); err != nil {
		return fmt.Errorf("queue: ensure bucket %s: %w", cfg.Streams().Requeues, err)
	}
	var snaps jetstream.Stream
	for _, sc := range StreamConfigs(cfg) {
		s, err := jsensure.Stream(ctx, js, sc)
		if err != nil {
			return fmt.Errorf("queue: ensure stream %s: %w", sc.Name, err)
		}
		if sc.Name == cfg.Streams().Snapshots {
			snaps = s
		}
	}
	if _, err := snaps.CreateOrUpdateConsumer(ctx, ConsumerConfig(cfg)); err != nil {
		return fmt.Errorf("queue: ensure consumer %s: %w", cfg.Consumer, err)
	}
	return nil
}
