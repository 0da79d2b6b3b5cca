package briefd_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/briefd/briefd"
	"github.com/briefd/briefd/client"
	"github.com/briefd/briefd/internal/cache"
	"github.com/briefd/briefd/internal/natstest"
	"github.com/briefd/briefd/internal/queue"
	"github.com/briefd/briefd/internal/redistest"
)

// The permissions of deploy/nats.conf confine a tenant's agents: acme
// publishes its own snapshots and reads its own last snapshot, and is
// refused on another tenant's subjects, publishing or reading.
func TestNATSTenantPermissions(t *testing.T) {
	t.Setenv("BRIEFD_NATS_WORKER_PASSWORD", "w-secret")
	t.Setenv("BRIEFD_NATS_ACME_PASSWORD", "a-secret")
	opts, err := server.ProcessConfigFile("deploy/nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, t.TempDir(), true, true
	opts.SyncAlways = false // the test measures permissions, not disks
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	connect := func(user, pass string, o ...nats.Option) jetstream.JetStream {
		nc, err := nats.Connect(srv.ClientURL(), append(o, nats.UserInfo(user, pass))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, _ := jetstream.New(nc)
		return js
	}
	wjs := connect("worker", "w-secret")
	if err := queue.EnsureStreams(t.Context(), wjs, queue.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wjs.Publish(t.Context(), "briefd.snap.globex.c1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	ajs := connect("acme", "a-secret", nats.CustomInboxPrefix("_INBOX_acme"))
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(t.Context(), time.Second)
		t.Cleanup(cancel)
		return c
	}
	if _, err := ajs.Publish(ctx(), "briefd.snap.acme.c1", []byte(`{}`)); err != nil {
		t.Fatalf("acme publishing its own snapshot: %v", err)
	}
	if _, err := ajs.Publish(ctx(), "briefd.snap.globex.c1", []byte(`{}`)); err == nil {
		t.Fatal("acme published on globex's subject")
	}
	if _, err := ajs.Publish(ctx(), "briefd.body.globex.c1.h", []byte(`{}`)); err == nil {
		t.Fatal("acme published a body on globex's subject")
	}
	st, err := ajs.Stream(ctx(), "BRIEFD_SNAPSHOTS")
	if err != nil {
		t.Fatalf("acme reading the stream's info: %v", err)
	}
	if _, err := st.GetLastMsgForSubject(ctx(), "briefd.snap.acme.c1"); err != nil {
		t.Fatalf("acme reading its own last snapshot: %v", err)
	}
	if _, err := st.GetLastMsgForSubject(ctx(), "briefd.snap.globex.c1"); err == nil {
		t.Fatal("acme read globex's snapshot")
	}
	// The expand tool reads bodies by subject: its own only.
	for _, subj := range []string{"briefd.body.acme.c1.h", "briefd.body.globex.c1.h"} {
		if _, err := wjs.Publish(t.Context(), subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	bodies, err := ajs.Stream(ctx(), "BRIEFD_BODIES")
	if err != nil {
		t.Fatalf("acme reading the body stream's info: %v", err)
	}
	if _, err := bodies.GetLastMsgForSubject(ctx(), "briefd.body.acme.c1.h"); err != nil {
		t.Fatalf("acme reading its own body: %v", err)
	}
	if _, err := bodies.GetLastMsgForSubject(ctx(), "briefd.body.globex.c1.h"); err == nil {
		t.Fatal("acme read globex's body")
	}
}

// deploy/redis/users.acl, rendered by deploy/redis/acl.sh as the compose
// file renders it, confines a tenant's agents: through the client, acme
// reads and watches its own conversations' briefings and statuses, written
// by the workers' user; acme's credentials are refused (NOPERM) globex's
// keys and channels, any write (its own keys included: no forged
// briefing), PUBLISH and listing keys; a client that has not
// authenticated may only PING.
func TestRedisTenantACL(t *testing.T) {
	t.Setenv("BRIEFD_REDIS_WORKER_PASSWORD", "w0secret")
	t.Setenv("BRIEFD_REDIS_ACME_PASSWORD", "a0secret")
	rs := redistest.StartWithACL(t, "deploy/redis/acl.sh", "deploy/redis/users.acl")
	connect := func(user, pass string) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), Username: user, Password: pass})
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	ctx := t.Context()
	worker := cache.NewRedisStore(connect("worker", "w0secret"), cache.RedisConfig{})
	put := func(tenant, boundary string, pos int64) {
		t.Helper()
		b := &briefd.Briefing{Tenant: tenant, ConversationID: "c1", BoundaryID: boundary, Position: pos,
			SnapshotSeq: uint64(pos), SnapshotTime: time.Unix(pos, 0), Text: tenant + "'s briefing"}
		if _, err := worker.Put(ctx, b); err != nil {
			t.Fatalf("the worker user storing %s's briefing: %v", tenant, err)
		}
		st := &briefd.Status{Tenant: tenant, ConversationID: "c1", Seq: uint64(pos), Outcome: "compacted"}
		if err := worker.PutStatus(ctx, st); err != nil {
			t.Fatalf("the worker user storing %s's status: %v", tenant, err)
		}
	}
	put("acme", "m1", 1)
	put("globex", "g1", 1)

	nc, _ := natstest.Start(t).Connect(t)
	newClient := func(tenant string) *client.Client {
		c, err := client.New(nc, client.WithTenant(tenant), client.WithRedis(connect("acme", "a0secret")),
			client.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	acme := newClient("acme")
	if b, err := acme.Latest(ctx, "c1"); err != nil || b.BoundaryID != "m1" {
		t.Fatalf("acme reading its own latest briefing: %v, %v", b, err)
	}
	if _, err := acme.Status(ctx, "c1"); err != nil {
		t.Fatalf("acme reading its own status: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ch, err := acme.Watch(wctx, "c1")
	if err != nil {
		t.Fatalf("acme watching its own conversation: %v", err)
	}
	if b := <-ch; b == nil || b.BoundaryID != "m1" {
		t.Fatalf("acme's watch first delivered %v, want m1", b)
	}
	put("acme", "m2", 2)
	if b := <-ch; b == nil || b.BoundaryID != "m2" {
		t.Fatalf("acme's watch then delivered %v, want m2 (the worker's PUBLISH)", b)
	}

	// acme's credentials in a client of another tenant: Redis refuses.
	spy := newClient("globex")
	noperm := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s: %v, want NOPERM", what, err)
		}
	}
	_, err = spy.Latest(ctx, "c1")
	noperm("acme reading globex's latest briefing", err)
	_, err = spy.Status(ctx, "c1")
	noperm("acme reading globex's status", err)
	_, err = spy.Watch(ctx, "c1")
	noperm("acme watching globex's conversation", err)

	rdb := connect("acme", "a0secret")
	noperm("acme getting globex's boundary", rdb.Get(ctx, "briefd:{globex:c1}:b:g1").Err())
	noperm("acme writing globex's latest", rdb.HSet(ctx, "briefd:{globex:c1}:latest", "briefing", "{}").Err())
	noperm("acme deleting globex's boundaries", rdb.Del(ctx, "briefd:{globex:c1}:boundaries").Err())
	ps := rdb.PSubscribe(ctx, "briefd:*")
	_, err = ps.Receive(ctx)
	ps.Close()
	noperm("acme subscribing to every channel", err)
	noperm("acme publishing on globex's channel", rdb.Publish(ctx, "briefd:{globex:c1}:events", "{}").Err())
	noperm("acme publishing on its own channel", rdb.Publish(ctx, "briefd:{acme:c1}:events", "{}").Err())
	noperm("acme writing its own latest", rdb.HSet(ctx, "briefd:{acme:c1}:latest", "briefing", "{}").Err())
	_, err = cache.NewRedisStore(rdb, cache.RedisConfig{}).Put(ctx, &briefd.Briefing{Tenant: "acme",
		ConversationID: "c1", BoundaryID: "m9", Position: 9, SnapshotSeq: 9, SnapshotTime: time.Unix(9, 0)})
	noperm("acme storing a briefing of its own", err)
	noperm("acme listing keys (SCAN)", rdb.Scan(ctx, 0, "*", 100).Err())
	noperm("acme listing keys (KEYS)", rdb.Keys(ctx, "*").Err())

	anon := connect("", "")
	if err := anon.Ping(ctx).Err(); err != nil {
		t.Errorf("PING without a user (the health check): %v", err)
	}
	noperm("reading without a user", anon.HGet(ctx, "briefd:{acme:c1}:latest", "briefing").Err())

	if b, err := worker.Latest(ctx, "globex", "c1"); err != nil || b.BoundaryID != "g1" {
		t.Fatalf("globex's latest after acme's attempts: %v, %v", b, err)
	}
	if b, err := worker.Latest(ctx, "acme", "c1"); err != nil || b.BoundaryID != "m2" {
		t.Fatalf("acme's latest after its own attempts: %v, %v", b, err)
	}
}
