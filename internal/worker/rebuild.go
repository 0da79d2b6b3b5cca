package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/queue"
)

// RebuildReport counts what Rebuild did, by conversation.
type RebuildReport struct {
	Conversations int `json:"conversations"`
	// Rebuilt conversations got the briefing of their newest snapshot;
	// Current ones already had it; Skipped ones need no compaction or
	// their newest snapshot is invalid (its reason is on the audit
	// stream); Failed ones hit a transient error (run again).
	Rebuilt, Current, Skipped, Failed int
	Errors                            []string `json:"errors,omitempty"`
}

// latestReader is what Rebuild asks of the store besides Store.
type latestReader interface {
	Latest(ctx context.Context, tenant, conv string) (*briefd.Briefing, error)
}

// Rebuild recomputes the latest briefing of every conversation (of tenant,
// if not empty) from the newest snapshot in the stream, for a store that
// lost its data (a Redis restarted empty). A conversation whose stored
// latest already comes from that snapshot is left alone, so it is safe to
// run while workers consume, and again after an interruption. The streams
// and the audit stream must exist (Start creates them).
func (w *Worker) Rebuild(ctx context.Context, tenant string, parallel int) (RebuildReport, error) {
	var rep RebuildReport
	names := w.cfg.Queue.Streams()
	st, err := w.js.Stream(ctx, names.Snapshots)
	if err != nil {
		return rep, fmt.Errorf("worker: rebuild: %w", err)
	}
	filter := w.cfg.Queue.Prefix + ".snap.>"
	if tenant != "" {
		filter = w.cfg.Queue.Prefix + ".snap." + tenant + ".*"
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return rep, fmt.Errorf("worker: rebuild: list conversations: %w", err)
	}
	subjects := make([]string, 0, len(info.State.Subjects))
	for s := range info.State.Subjects {
		subjects = append(subjects, s)
	}
	sort.Strings(subjects)
	rep.Conversations = len(subjects)
	res := queue.NewResolver(w.js, w.cfg.Queue)
	lr, _ := w.store.(boundedStore).Store.(latestReader)
	var mu sync.Mutex
	count := func(f func()) { mu.Lock(); f(); mu.Unlock() }
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	for _, subject := range subjects {
		g.Go(func() error {
			raw, err := queue.LastMsg(gctx, w.js, st, subject)
			if err != nil {
				count(func() { rep.Failed++; rep.Errors = append(rep.Errors, subject+": "+err.Error()) })
				return nil
			}
			rest := strings.TrimPrefix(subject, w.cfg.Queue.Prefix+".snap.")
			t, c, _ := strings.Cut(rest, ".")
			if lr != nil {
				if b, err := lr.Latest(gctx, t, c); err == nil && b.SnapshotSeq >= raw.Sequence {
					count(func() { rep.Current++ })
					return nil
				} else if err != nil && !errors.Is(err, cache.ErrNotFound) {
					count(func() { rep.Failed++; rep.Errors = append(rep.Errors, subject+": "+err.Error()) })
					return nil
				}
			}
			snap, err := res.Resolve(gctx, raw.Subject, raw.Sequence, raw.Data)
			if err == nil {
				snap.Delivery = queue.Delivery{NumDelivered: 1, Attempt: 1, Timestamp: raw.Time}
				err = w.handle(gctx, snap)
			}
			var stored bool
			if err == nil && lr != nil {
				b, lerr := lr.Latest(gctx, t, c)
				stored = lerr == nil && b.SnapshotSeq == raw.Sequence
			}
			switch {
			case err == nil && stored:
				count(func() { rep.Rebuilt++ })
			case err == nil, errors.Is(err, queue.ErrPermanent), errors.Is(err, briefd.ErrInvalidHistory), errors.Is(err, queue.ErrMalformed):
				count(func() { rep.Skipped++ })
			default:
				count(func() { rep.Failed++; rep.Errors = append(rep.Errors, subject+": "+err.Error()) })
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	w.log.Info("rebuild done", "conversations", rep.Conversations, "rebuilt", rep.Rebuilt, "current", rep.Current,
		"skipped", rep.Skipped, "failed", rep.Failed)
	return rep, ctx.Err()
}
