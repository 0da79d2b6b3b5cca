package queue

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
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
			Replicas:    cfg.Replicas,
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
		// One more than MaxDeliver so that the last attempt's failure is
		// still seen by a worker, which dead-letters it with the reason.
		MaxDeliver:    cfg.MaxDeliver + 1,
		FilterSubject: cfg.Prefix + ".snap.>",
		MaxAckPending: cfg.MaxAckPending,
		Replicas:      cfg.Replicas,
	}
}

// EnsureStreams creates or updates the three streams and the shared
// consumer. It is idempotent and safe to call from every worker at start-up.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	var snaps jetstream.Stream
	for _, sc := range StreamConfigs(cfg) {
		s, err := js.CreateOrUpdateStream(ctx, sc)
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
