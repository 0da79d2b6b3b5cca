package redistest_test

import (
	"testing"

	"github.com/briefd/briefd/internal/redistest"
)

func TestStartRestartKill(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := t.Context()

	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	srv.Restart(t)
	// The restarted server is empty (no persistence) and on the same
	// address, so the old client reconnects on its own.
	n, err := rdb.Exists(ctx, "k").Result()
	if err != nil {
		t.Fatalf("EXISTS after restart: %v", err)
	}
	if n != 0 {
		t.Fatalf("EXISTS after restart = %d, want 0 (no persistence)", n)
	}

	srv.Kill()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after Kill succeeded")
	}
	srv.Start(t)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
	srv.Kill()
	srv.Kill() // idempotent
}

func TestParallelServers(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers share %s", a.Addr())
	}
}
