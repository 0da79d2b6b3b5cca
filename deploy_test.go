package briefd_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/briefd/briefd/internal/queue"
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
